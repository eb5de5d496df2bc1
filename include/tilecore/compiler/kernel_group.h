/*
 * include/tilecore/compiler/kernel_group.h — GroupKernels: the kernels of consecutive ops
 * run as one kernel whose intermediates stay in the shared L2 (a layer group; the
 * driver chooses the groups, docs/compiler.md).
 *
 * `funcs` are strategy PrimFuncs (params: inputs, then outputs, as global buffers) in
 * the order they run; `args[i][k]` names, as an integer id, the tensor that param k of
 * funcs[i] is. `inputs` and `outputs` are the ids the group's caller passes (the group's
 * params, in that order); every other id is an intermediate, which the members read and
 * write in place of DDR: a place in one shared (L2) arena around the bodies, held from the
 * first member that takes it to the last (PlanMemory, memory_plan.h). The bodies run
 * one after another; each is a `cores` loop, which the code generator fences and
 * synchronises across the cores, so a member reads only what the previous ones wrote.
 * Each member's cores loops carry its index (ir::kGroupMemberAnnotation), by which the cost
 * model times the members one by one (EstimateKernel's `members`) and the code generator
 * records each member's instructions (what the profile measures per member). Attr
 * "l2_places" records, per intermediate (and prefetched input), [id, byte offset in the arena,
 * dtype, shape]: the whole tensor row-major, where the debuggers read it (the arena is the
 * kernel's outermost L2 allocation, so it starts at L2 byte 0).
 * `prefetch` (docs/compiler.md, "Weight prefetch"): bytes [begin, end) of an input (weights,
 * or an activation read twice) copied into the arena during member `member`, interleaved with
 * its work (weight_prefetch.h); from the first member fetching it on, the input has a place in
 * the arena, the members after the last one fetching it read that and the others the DDR. A
 * prefetch must come before the input's last reader, and a tensor's rows cover its bytes once.
 * Those that do not fit `l2_bytes` with the
 * largest member's own L2 buffers are dropped, the latest reader's first (it then reads the DDR, as
 * without one). With `handoff` (not kNone), each member's first loads of the inputs are
 * issued by the member before it with code (member_handoff.h; an in-place Concat has none); with
 * kEarly, early where the buffers they fill fit `l1_bytes` beside every member's own (attr
 * "early_handoffs" counts them). A member that is a Concat with kConcatOffsetsAttr, whose
 * inputs are intermediates (each a value its producer writes only there, or an earlier such
 * Concat's output) and whose output is an intermediate, copies nothing: its inputs take their
 * places inside its output's (64-byte aligned, the whole lives from the first input written to the
 * last reader), so their producers write the output's bytes (attr "in_place_concats" lists those
 * members; their cores loops stay, empty). When that arena does not fit `l2_bytes` beside the
 * members' own buffers, or `concat_in_place` is false, the Concats copy.
 * With `slices` S > 1 (a batch run in slices: docs/compiler.md, "Batch slices"), the members
 * were lowered for one slice of the batch and the kernel runs them S times in a loop: each
 * tensor of `sliced` (inputs and outputs; its param's first dimension is S times the members')
 * is S of a member's slices one after another, and the s-th run reads and writes the s-th (every
 * buffer a member makes on it, a view too, moved by a slice's bytes); the intermediates hold one
 * slice, in the same places each run (attr "slices"). Such a group
 * prefetches nothing. The FFI function is `compiler.GroupKernels(funcs, args, inputs, outputs,
 * name, prefetch, l2_bytes, l1_bytes, handoff, concat_in_place, slices, sliced)` (handoff 0, 1
 * or 2). Errors: a ValueError when the lists disagree (an id no kernel takes, one listed twice,
 * a prefetch of something not an input, after its reader, outside the tensor, or rows that do
 * not cover it once; fewer than one slice, a prefetch with slices, a sliced tensor that is no
 * param or whose first dimension is not a constant).
 */
#ifndef TILECORE_COMPILER_KERNEL_GROUP_H_
#define TILECORE_COMPILER_KERNEL_GROUP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tilecore/arch/params.h"
#include "tilecore/ir/function.h"

namespace tilecore {
namespace compiler {

/*! \brief A Concat kernel's attr when each input is one run of the output's bytes (every dim
 * before the axis 1): the element offset of each input in the output. In a group, the
 * producers of its inputs write them there (see GroupKernels). */
inline constexpr const char* kConcatOffsetsAttr = "concat_offsets";

/*! \brief Which handoffs GroupKernels makes (member_handoff.h): none, late only, or early
 * where it may. */
enum class Handoff : int64_t { kNone = 0, kLate = 1, kEarly = 2 };

/*! \brief Bytes [begin, end) of input `tensor` fetched into L2 during member `member`. */
struct GroupPrefetch {
  int64_t tensor, member, begin, end;
};

ir::PrimFunc GroupKernels(const std::vector<ir::PrimFunc>& funcs,
                          const std::vector<std::vector<int64_t>>& args,
                          const std::vector<int64_t>& inputs, const std::vector<int64_t>& outputs,
                          const std::string& name, const std::vector<GroupPrefetch>& prefetch = {},
                          int64_t l2_bytes = int64_t(arch::tc1::kL2Bytes),
                          int64_t l1_bytes = int64_t(arch::tc1::kL1Bytes),
                          Handoff handoff = Handoff::kEarly, bool concat_in_place = true,
                          int64_t slices = 1, const std::vector<int64_t>& sliced = {});

}  // namespace compiler
}  // namespace tilecore

#endif  // TILECORE_COMPILER_KERNEL_GROUP_H_
