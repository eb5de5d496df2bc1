/*
 * include/tilecore/transform/default_kernel_pipeline.h — the kernel passes in the
 * order the codegen runs them.
 *
 *   opt_level >= 1:  Simplify, LoopPartition, VectorizeLoop, EmitTileIntrinsics,
 *                    UnrollLoop, LowerAsyncDMA, FlattenBuffer, Simplify, PlanLocalMemory
 *   opt_level 0:     VectorizeLoop, UnrollLoop, LowerAsyncDMA, FlattenBuffer,
 *                    Simplify, PlanLocalMemory (what the codegen cannot do without:
 *                    no partitioning and no tile-command emission)
 *
 * Why this order:
 *   - Simplify first: constant extents and canonical `base + v` indices are what
 *     LoopPartition, VectorizeLoop and EmitTileIntrinsics match.
 *   - LoopPartition before both: they need branch-free bodies.
 *   - VectorizeLoop before EmitTileIntrinsics: a loop the kernel marks
 *     `vectorized` asks for SIMD; the emitter matches the remaining serial nests
 *     (including the serial tails VectorizeLoop leaves).
 *   - UnrollLoop after emission, so an unrolled loop around a tile command repeats
 *     the command with constant operands.
 *   - LowerAsyncDMA after unrolling, so unrolled copies address constant event
 *     slots of its dma_state buffer.
 *   - FlattenBuffer after everything that reads multi-dimensional indices; the
 *     second Simplify folds the flattened index math; PlanLocalMemory last,
 *     once every allocation (including LowerAsyncDMA's dma_state) exists.
 * The output contract (which nodes and intrinsics remain) is in docs/passes.md.
 */
#ifndef TILECORE_TRANSFORM_DEFAULT_KERNEL_PIPELINE_H_
#define TILECORE_TRANSFORM_DEFAULT_KERNEL_PIPELINE_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief A Sequential named "DefaultKernelPipeline"; ValueError if opt_level < 0. */
Pass DefaultKernelPipeline(int64_t opt_level = 2);

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_DEFAULT_KERNEL_PIPELINE_H_
