/*
 * include/tilecore/transform/fold_channel_scale.h — FoldChannelScale: a constant
 * per-channel (or scalar) Mul after a Conv or a MatMul with constant weights, directly or
 * through its bias Add and a Transpose, folded into the weights and bias (ConvNeXt's and
 * CaiT's layer scale: Linear, to NCHW, times gamma).
 *
 *   y = transpose(x W + b) * g  =  transpose(x (W g) + b g)   (g along W's output axis)
 *
 * In:  a typed Graph after GemmToMatMul: Conv(x, W[, B]) or MatMul(x, W) (W a 2-D float32
 *      constant) whose output, each used once, runs through an optional Add of a float32
 *      constant bias along the output channels, an optional Transpose, then a Mul by a
 *      float32 constant `g` that varies along the output channel axis only (or not at
 *      all) and does not broadcast the result to a larger shape.
 * Out: the Conv/MatMul with W (and B, and the Add's bias) scaled per output channel in
 *      double and rounded to float32, then the Add and Transpose as they were, the last
 *      writing the Mul's output (same name); the Mul is gone. The products round once
 *      instead of twice: the result is the model's up to float32 rounding.
 * Left alone: non-constant or non-float32 weights, bias or scale; a value on the chain
 *      used elsewhere or a graph output; a scale along any other axis.
 * Counter: stats["transform.FoldChannelScale.folded"].
 */
#ifndef TILECORE_TRANSFORM_FOLD_CHANNEL_SCALE_H_
#define TILECORE_TRANSFORM_FOLD_CHANNEL_SCALE_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.FoldChannelScale`. */
Pass FoldChannelScale();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_FOLD_CHANNEL_SCALE_H_
