/*
 * include/tilecore/transform/plan_local_memory.h — PlanLocalMemory: addresses for
 * the buffers a kernel allocates in L1 (local) and L2 (shared).
 *
 * In:  Allocate statements whose shapes are constant (after Simplify); a symbolic
 *      shape is a ValueError naming the buffer.
 * Out: the same IR, and PrimFunc attrs
 *        "memory_plan":  Map[data Var, [offset_bytes, size_bytes, bank]]
 *                        (bank = offset / 64 KiB for local buffers, -1 for shared)
 *        "local_bytes":  peak L1 use per core,  "shared_bytes": peak L2 use.
 * Placement: allocations nest like a stack (a buffer's space is reused once its
 * Allocate's body ends). Local buffers of at most 4 KiB (a DMA state, a row of scales)
 * have a stack of their own at the bottom of L1; every larger one starts on a fresh
 * 64 KiB bank above them while banks remain, so the DMA target and the compute operands
 * of one step never share a bank (TC1 halves the stream rate of a vector or matrix
 * command whose sources start in one bank); when banks run out, buffers are packed at
 * 64-byte alignment, and when that placement overflows L1, every buffer is packed. A
 * packed buffer that one command reads beside a live buffer (an mm's A and B, a binary
 * vector command's two sources) moves up to the next bank's start when it would share a
 * bank with it and the room allows; only when that overflows are they packed regardless.
 * A PrimFunc attr kL1PinnedAttr, Map[data Var, [offset, area]], gives buffers fixed places:
 * `offset` bytes into an area of `area` bytes above the small buffers, which the other
 * buffers start above (a layer group's handoff, member_handoff.h: a member's first loads
 * land there while the member before it still runs). A small buffer that one command reads
 * beside a pinned buffer of the small stack's bank goes on top of the larger ones instead,
 * in another bank, when it fits there.
 * Sizes: PassContext options "tc1.l1_bytes" (default 1 MiB) and "tc1.l2_bytes"
 * (default 4 MiB).
 * Errors: overflowing L1 or L2 is a ValueError listing the live buffers and their
 * sizes.
 */
#ifndef TILECORE_TRANSFORM_PLAN_LOCAL_MEMORY_H_
#define TILECORE_TRANSFORM_PLAN_LOCAL_MEMORY_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The PrimFunc attr of buffers with fixed places in L1 (see above). */
inline constexpr const char* kL1PinnedAttr = "l1_pinned";

/*! \brief The pass `transform.PlanLocalMemory`. */
Pass PlanLocalMemory();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_PLAN_LOCAL_MEMORY_H_
