/*
 * include/tilecore/transform/fold_batch_norm.h — FoldBatchNorm: an inference
 * BatchNormalization whose input is the only use of a Conv's or Gemm's output is
 * folded into that Conv's or Gemm's weights and bias.
 *
 *   y = (conv(x, W) + b - mean) * s + beta,  s = scale / sqrt(var + eps)
 *     = conv(x, W * s[:, None, ...]) + ((b - mean) * s + beta)
 *
 * In:  a typed Graph with float32 constant weights and BatchNorm parameters.
 * Out: the Conv/Gemm with new constant weights and bias, its output the BatchNorm's
 *      (same name); the BatchNormalization node is gone. Gemm folds over its N axis
 *      (transB either way) when C is absent, [N] or [1, N].
 * Left alone: training-mode BatchNorm (more than one output), non-constant or
 * non-float32 parameters, a Conv/Gemm output used elsewhere.
 * Counter: stats["transform.FoldBatchNorm.folded"].
 */
#ifndef TILECORE_TRANSFORM_FOLD_BATCH_NORM_H_
#define TILECORE_TRANSFORM_FOLD_BATCH_NORM_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.FoldBatchNorm`. */
Pass FoldBatchNorm();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_FOLD_BATCH_NORM_H_
