/*
 * include/tilecore/transform/recognize_normalization.h — RecognizeNormalization:
 * LayerNorm and Softmax as older exporters decompose them become one node each.
 *
 *   d = x - ReduceMean(x); d / Sqrt(ReduceMean(d^2) + eps) * gamma + beta
 *                                  -> LayerNormalization(x, gamma, beta; axis=-1, epsilon=eps)
 *   e = Exp(x [- ReduceMax(x)]); e / ReduceSum(e)  -> Softmax(x; axis)
 *
 * The reductions must run over the last axis (LayerNorm) or one axis (Softmax),
 * keep their dimensions, and agree with each other; axes may be attributes or (opset
 * 18 and later) a constant input. Inner values must have no other use. The root
 * keeps its output value and name.
 * Counters: stats["transform.RecognizeNormalization.{layer_norm,softmax}"].
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
