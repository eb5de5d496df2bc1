/*
 * src/transform/default_kernel_pipeline.cc — DefaultKernelPipeline
 * (default_kernel_pipeline.h).
 */
#include "tilecore/transform/default_kernel_pipeline.h"

#include "tilecore/transform/emit_tile_intrinsics.h"
#include "tilecore/transform/flatten_buffer.h"
#include "tilecore/transform/loop_partition.h"
#include "tilecore/transform/lower_async_dma.h"
#include "tilecore/transform/plan_local_memory.h"
#include "tilecore/transform/simplify.h"
#include "tilecore/transform/unroll_loop.h"
#include "tilecore/transform/vectorize_loop.h"

namespace tilecore {
namespace transform {

Pass DefaultKernelPipeline(int64_t opt_level) {
  if (opt_level < 0) {
    TILECORE_THROW(ValueError) << "DefaultKernelPipeline: opt_level must be >= 0, got "
                               << opt_level;
  }
  Array<Pass> passes;
  if (opt_level >= 1) {
    passes.push_back(Simplify());
    passes.push_back(LoopPartition());
  }
  passes.push_back(VectorizeLoop());
  if (opt_level >= 1) passes.push_back(EmitTileIntrinsics());
  passes.push_back(UnrollLoop());
  passes.push_back(LowerAsyncDMA());
  passes.push_back(FlattenBuffer());
  passes.push_back(Simplify());
  passes.push_back(PlanLocalMemory());
  return Sequential(passes, "DefaultKernelPipeline");
}

TILECORE_REGISTER_GLOBAL("transform.DefaultKernelPipeline").set_body_typed([](int64_t opt_level) {
  return DefaultKernelPipeline(opt_level);
});

}  // namespace transform
}  // namespace tilecore
