/*
 * include/tilecore/transform/recognize_activations.h — RecognizeActivations: the
 * element-wise subgraphs exporters write for activations become one node each.
 *
 *   x * Sigmoid(x)                                 -> tilecore::SiLU(x)
 *   x * HardSigmoid(x; 1/6, 0.5)                   -> HardSwish(x)
 *   x * Clip(x + 3, 0, 6) / 6                      -> HardSwish(x)
 *   0.5 * x * (1 + Erf(x / sqrt(2)))               -> Gelu(x)
 *   0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  -> Gelu(x; approximate="tanh")
 *   Where(IsNaN(x), c, x), c a constant, x float32 -> tilecore::ReplaceNaN(x; value=c)
 *     (exporters' mask of attention rows that are all masked: one pass on 4-byte SIMD lanes
 *     instead of a bool tensor written and read back)
 *
 * The factor 0.5 may sit at any of the three positions exporters put it. Constants
 * match within a relative 1e-4. Inner values must have no other use; the root
 * keeps its output value and name. One node per activation lets later stages
 * fuse it into the preceding op's epilogue and use the vector engine's tables.
 * Counters: stats["transform.RecognizeActivations.{silu,hardswish,gelu_erf,gelu_tanh,nan_mask}"].
 */
#ifndef TILECORE_TRANSFORM_RECOGNIZE_ACTIVATIONS_H_
#define TILECORE_TRANSFORM_RECOGNIZE_ACTIVATIONS_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.RecognizeActivations`. */
Pass RecognizeActivations();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_RECOGNIZE_ACTIVATIONS_H_
