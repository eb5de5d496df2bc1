/*
 * include/tilecore/compiler/member_handoff.h — the handoff between two members of a layer
 * group (docs/compiler.md, "Handoff"): the first loads of the next member that read the
 * group's read-only inputs (its weights, bias and scales) are issued by the member before
 * it, on each core as soon as that core's own work has drained, before the barrier between
 * them. The cores that finish first have the next member's first weights in L1 by the time
 * the last one arrives, and the DDR starts on them while the slowest core ends its work.
 *
 * A member qualifies when its body starts with a `cores` loop (shared allocations around
 * it) and the one before it ends with a `cores` loop over the same cores. Its first loads
 * are the DMAs at the start of its loop's body (inside its local allocations) from a read-only
 * input into one of its own local buffers, with addresses of constants and the core alone;
 * DMAs into its local buffers from other sources, and an activation table's constant stores,
 * may lie between them and stay. A single item's loads inside its `if core == k` are taken in
 * that guard (waits there, which hold nothing of the member's yet, do not stop them), and so,
 * without `keep_order` (an early handoff's scan), are those of items one a core inside
 * `if core < k`. The member
 * before gets them after a `tir.drain` at the end of its loop (late) or spread over its
 * work (early, HandOff); the loop is annotated kCoresHandoffAnnotation (the code generator
 * closes it with a barrier that does not drain, and opens the next loop without one). The
 * npu target only: a loaded buffer is named before the next member allocates it. The
 * member's waits on their events find them: a layer group keeps one DMA state for all its
 * cores loops (LowerAsyncDMA).
 */
#ifndef TILECORE_COMPILER_MEMBER_HANDOFF_H_
#define TILECORE_COMPILER_MEMBER_HANDOFF_H_

#include <cstdint>
#include <functional>
#include <unordered_set>
#include <vector>

#include "tilecore/ir/stmt.h"

namespace tilecore {
namespace compiler {

/*! \brief A member's first loads, over its cores loop's variable. */
struct FirstLoads {
  ir::Var core;
  int64_t min = 0, extent = 0;
  std::vector<ir::Stmt> loads;
  std::vector<ir::Buffer> buffers;  // the local buffers they fill
  int64_t event = -1;               // handed early: the DMA event they were issued on
};

/*! \brief Removes the first loads from `member` (reading one of the buffers whose data
 * variable is in `read_only`, or one `settled` says no member writes from the one before on:
 * a layer group's weights prefetched into L2 by then) and returns them; none (and `member` as it
 * was) when it does not qualify. With `keep_order`, none goes ahead of a load that stays on its DMA
 * engine (handed late, it would delay that load); an early handoff has them in L1 beforehand. */
FirstLoads TakeFirstLoads(ir::Stmt* member, const std::unordered_set<const ir::VarNode*>& read_only,
                          bool keep_order = true,
                          const std::function<bool(const ir::Buffer&)>& settled = nullptr);

/*! \brief Whether `member`'s last cores loop (or `member`, when it does not end with one)
 * reads one of `inputs`: the DDR has idle time for an early handoff when it does not. */
bool ReadsInputs(const ir::Stmt& member, const std::unordered_set<const ir::VarNode*>& inputs);

/*! \brief Whether `member` ends with a cores loop over the cores of `first`. */
bool CanHandOff(const ir::Stmt& member, const FirstLoads& first);

/*! \brief `member` (CanHandOff) issuing `first`, its last cores loop annotated
 * kCoresHandoffAnnotation. Without `early`: after its own work, its body then `tir.drain`
 * then the loads. With `early` (the data variables of the DDR's inputs; the loads' buffers
 * must then have places of their own in L1, kL1PinnedAttr): spread over its work after the
 * last statement at the top of its body that reads one of them (InterleaveLoads, which
 * sets first->event), the body ending with `tir.drain`; the next member then starts with
 * WaitHanded. */
ir::Stmt HandOff(const ir::Stmt& member, FirstLoads* first,
                 const std::unordered_set<const ir::VarNode*>* early = nullptr);

/*! \brief `member` first waiting for the loads handed early (HandOff) on `first.event`. */
ir::Stmt WaitHanded(const ir::Stmt& member, const FirstLoads& first);

/*! \brief An upper bound of the L1 `member`'s local buffers take, each of 4 KiB or more
 * from a bank's start (PlanLocalMemory), the smaller ones in banks of their own; nested
 * allocations stacked, a sequence's statements taking their largest. */
int64_t LocalBound(const ir::Stmt& member);

}  // namespace compiler
}  // namespace tilecore

#endif  // TILECORE_COMPILER_MEMBER_HANDOFF_H_
