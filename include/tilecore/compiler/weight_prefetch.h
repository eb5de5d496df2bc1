/*
 * include/tilecore/compiler/weight_prefetch.h — InterleavePrefetch: copies into L2 spread
 * through a layer group member's own work, so that a later member finds its weights in
 * L2 instead of the DDR (docs/compiler.md, "Weight prefetch").
 *
 * Each copy is cut into pieces handed to the cores round robin, a short last piece to the
 * last core (the fewest pieces, and items), issued at its start. A core issues its pieces
 * spread over its matrix commands (`tile.mm`; a member without any: its copies; as many as
 * the core that runs fewest issues, so that no core leaves its pieces to after its work) and
 * the rest after its work, all on the DMA engine whose copies in the member move fewer bytes
 * (DMA-out: `tile.dma_prefetch`; DMA-in: `tile.dma_copy` into L2): the member's busier
 * engine never queues behind a piece, and the DDR's bandwidth goes to the pieces between
 * the member's own transfers. The member waits
 * for its pieces once, after its work (on one core no fence ends the cores loop).
 * Errors: a ValueError when the member has no `cores` loop or uses every DMA event.
 */
#ifndef TILECORE_COMPILER_WEIGHT_PREFETCH_H_
#define TILECORE_COMPILER_WEIGHT_PREFETCH_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "tilecore/ir/expr.h"
#include "tilecore/ir/stmt.h"

namespace tilecore {
namespace compiler {

/*! \brief Bytes [src_begin, src_begin + bytes) of `src` to [dst_begin, ...) of `dst`
 * (both viewed as bytes: int8 buffers over the tensors' data). */
struct PrefetchCopy {
  ir::Buffer src, dst;
  int64_t src_begin = 0, dst_begin = 0, bytes = 0;
};

/*! \brief `member` (a strategy body: one or more `cores` loops) with `copies` issued
 * through its first cores loop. */
ir::Stmt InterleavePrefetch(const ir::Stmt& member, const std::vector<PrefetchCopy>& copies);

/*! \brief The bytes one core's DMA-in and DMA-out engines move in `s` (constant trip
 * counts multiplied, a loop of unknown count taken once; the larger branch of an if). */
std::pair<int64_t, int64_t> EngineBytes(const ir::Stmt& s);

/*! \brief The cycles one core's DMA-in and DMA-out engines are busy in `s`, as EngineBytes
 * counts its statements: each DMA (fills too, on the DMA-in engine) the latency of the
 * farther level it touches and a beat per 64 bytes of each row of its region. A member's
 * many small copies hold an engine longer than their bytes say. */
std::pair<int64_t, int64_t> EngineCycles(const ir::Stmt& s);

/*! \brief The statement a handed load `s` issues: inside its core guard (TakeFirstLoads takes a
 * single item's loads in their `if core == k`), else `s` itself. */
const ir::Stmt& Unguarded(const ir::Stmt& s);

/*! \brief `issue` in the core guard of the handed load `load` when it has one. */
ir::Stmt InGuardOf(const ir::Stmt& load, ir::Stmt issue);

/*! \brief The bytes the DMA statements `loads` move (EngineBytes; a load in its core guard
 * counts), split by what they read: (from elsewhere, from L2). */
std::pair<int64_t, int64_t> BytesBySource(const std::vector<ir::Stmt>& loads);

/*! \brief `body` (statements of a cores loop's body, in `member`) with `loads` (DMAs into
 * L1 of read-only data, over its core variable; one in its core guard stays in it) issued one at a
 * time after every few of its matrix commands (a body without any: its copies), n loads over about
 * (n - 1) / (n + 1) of its work, the rest after it; loads mostly from L2 from its third command on,
 * several at a time so that all are issued before its last: all on the DMA engine its own copies
 * use less and on one DMA event `member` does not use, `*event`. Errors: a ValueError when
 * it uses every DMA event. The slots are those of the core of `cores` that runs fewest. */
ir::Stmt InterleaveLoads(const ir::Stmt& body, const std::vector<ir::Stmt>& loads,
                         const ir::Stmt& member, const ir::Var& core, int64_t cores,
                         int64_t* event);

}  // namespace compiler
}  // namespace tilecore

#endif  // TILECORE_COMPILER_WEIGHT_PREFETCH_H_
