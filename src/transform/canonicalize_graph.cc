/*
 * src/transform/canonicalize_graph.cc — CanonicalizeGraph (canonicalize_graph.h).
 */
#include "tilecore/transform/canonicalize_graph.h"

#include "tilecore/transform/eliminate_common_subexpr.h"
#include "tilecore/transform/eliminate_dead_code.h"
#include "tilecore/transform/fold_batch_norm.h"
#include "tilecore/transform/fold_channel_scale.h"
#include "tilecore/transform/fold_constants.h"
#include "tilecore/transform/gemm_to_matmul.h"
#include "tilecore/transform/infer_types.h"
#include "tilecore/transform/recognize_activations.h"
#include "tilecore/transform/recognize_normalization.h"

namespace tilecore {
namespace transform {

Pass CanonicalizeGraph() {
  return Sequential({EliminateCommonSubexpr(), FoldConstants(), FoldBatchNorm(), GemmToMatMul(),
                     FoldChannelScale(), RecognizeActivations(), RecognizeNormalization(),
                     EliminateDeadCode(), InferTypes()},
                    String("CanonicalizeGraph"));
}

TILECORE_REGISTER_GLOBAL("transform.CanonicalizeGraph").set_body_typed([]() {
  return CanonicalizeGraph();
});

}  // namespace transform
}  // namespace tilecore
