/*
 * include/tilecore/transform/lower_async_dma.h — LowerAsyncDMA: events become
 * TC1 completion-counter waits.
 *
 * In:  `tile.dma_copy(dst, src, event)`, `tile.dma_prefetch(dst, src, event)`,
 *      `tile.dma_copy_in(dst, src, event)`,
 *      `tile.dma_fill(dst, value, event)` and
 *      `tile.wait(event)` (events are int32 ids in [0, 16); a constant event
 *      outside that range is a ValueError naming the call).
 * Out: `tc1.dma_in` / `tc1.dma_out` / `tc1.dma_fill_in` and `tc1.wait("sc", engine,
 *      count)`, with the bookkeeping made explicit in a per-core local buffer
 *      `dma_state: int32[34]` (allocated at the top of the `cores` loop body, or of
 *      the kernel when it has no cores loop or several that use events — a layer
 *      group, whose engine counters run on from one loop to the next; there a cores
 *      loop of its own zeroes the state first, since outside cores loops only core 0
 *      runs effects): state[0], state[1] count the commands issued to DMA-in and
 *      DMA-out; state[2 + 2e], state[3 + 2e] hold those counts as of the last copy
 *      that signalled event e. A wait on e waits for both engines' counters to reach
 *      them (TC1 counters are monotonic and queues are in order, so this is exactly
 *      "every copy signalling e issued so far has completed").
 * Engine choice: a copy into local memory uses DMA-in, a copy out of local memory
 * DMA-out, anything else (global <-> shared) DMA-in; `tile.dma_prefetch` always DMA-out
 * (a layer group's weights fetched into L2 without queueing behind the core's loads),
 * `tile.dma_copy_in` always DMA-in (half of a store beside the other half on DMA-out).
 * Assumes: one kernel launch starts with every counter at 0 (TC1 `load`).
 * Helps: correctness — the codegen sees only TC1's primitives. Hurts: a few scalar
 * L1 accesses per copy (2-cycle latency), negligible next to a DMA.
 */
#ifndef TILECORE_TRANSFORM_LOWER_ASYNC_DMA_H_
#define TILECORE_TRANSFORM_LOWER_ASYNC_DMA_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief Number of DMA event ids (0 .. kNumDmaEvents - 1). */
constexpr int kNumDmaEvents = 16;

/*! \brief The pass `transform.LowerAsyncDMA`. */
Pass LowerAsyncDMA();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_LOWER_ASYNC_DMA_H_
