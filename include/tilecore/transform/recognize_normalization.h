/*
 * include/tilecore/transform/recognize_normalization.h — RecognizeNormalization:
 * LayerNorm, RMSNorm and Softmax as exporters decompose them become one node each.
 *
 *   d = x - ReduceMean(x); d / Sqrt(ReduceMean(d^2) + eps) * gamma + beta
 *                                  -> LayerNormalization(x, gamma, beta; axis=-1, epsilon=eps)
 *   gamma * (x * Reciprocal(Sqrt(ReduceMean(x^2) + eps)))
 *                                  -> RMSNormalization(x, gamma; axis=-1, epsilon=eps)
 *   e = Exp(x [- ReduceMax(x)]); e / ReduceSum(e)  -> Softmax(x; axis)
 *
 * (RMSNorm: a 1-D gamma, either operand order of both Muls: Llama's torch.rsqrt as the
 * dynamo exporter writes it.)
 * The reductions must run over the last axis (the norms) or one axis (Softmax),
 * keep their dimensions, and agree with each other; axes may be attributes or (opset
 * 18 and later) a constant input. Inner values must have no other use. The root
 * keeps its output value and name.
 * Counters: stats["transform.RecognizeNormalization.{layer_norm,rms_norm,softmax}"].
 */
#ifndef TILECORE_TRANSFORM_RECOGNIZE_NORMALIZATION_H_
#define TILECORE_TRANSFORM_RECOGNIZE_NORMALIZATION_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.RecognizeNormalization`. */
Pass RecognizeNormalization();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_RECOGNIZE_NORMALIZATION_H_
