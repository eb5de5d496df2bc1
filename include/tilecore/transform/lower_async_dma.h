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
 *      `dma_state: int32[32]` (allocated at the top of the `cores` loop body, or of
 *      the kernel when it has no cores loop or several that use events — a layer
 *      group, whose engine counters run on from one loop to the next; there a cores
 *      loop of its own zeroes the state first, since outside cores loops only core 0
 *      runs effects): after each copy, state[2e] (DMA-in) or state[2e + 1] (DMA-out)
 *      for its event e takes `tc1.dma_issued(engine)`, the commands issued to that
 *      engine so far (the codegen counts them in a register, as it counts the
 *      compute engines' commands). A wait on e waits for both engines' counters to
 *      reach state[2e], state[2e + 1] (TC1 counters are monotonic and queues are in
 *      order, so this is exactly "every copy signalling e issued so far has
 *      completed").
 * Engine choice: a copy into local memory uses DMA-in, a copy out of local memory
 * DMA-out, anything else (global <-> shared) DMA-in; `tile.dma_prefetch` always DMA-out
 * (a layer group's weights fetched into L2 without queueing behind the core's loads),
 * `tile.dma_copy_in` always DMA-in (half of a store beside the other half on DMA-out).
 * Assumes: one kernel launch starts with every counter at 0 (TC1 `load`).
 * Helps: correctness — the codegen sees only TC1's primitives. Hurts: one scalar store
 * per copy and a load per engine per wait (L1 accesses).
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
