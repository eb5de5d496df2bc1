/*
 * include/tilecore/transform/fold_matmul_bias.h — FoldMatMulBias: a constant per-column
 * bias added to a MatMul with constant weights becomes Gemm's C, so the matrix engine
 * adds it (int8: the int32 bias the accumulator starts at; f32/f16/bf16: the mm
 * epilogue's bias) instead of a broadcast Add over the whole product.
 *
 *   Y = Add(MatMul(A, W), b)   (or Add(b, MatMul(A, W)))
 *     -> Y = Gemm(A, W, b')                                        A of rank 2
 *     -> Y = Reshape(Gemm(Reshape(A, [-1, K]), W, b'), [..., M, N])  A of rank > 2
 * W: a float32 constant [K, N]; b: a float32 constant of N values broadcast along the
 * last axis only (shape [N] or [1, ..., 1, N], rank <= the product's); b' is b as [N].
 * The MatMul's product must be used by that Add only, and A's shape static. The
 * Reshapes are views (no copy). The model compiler runs it after CanonicalizeGraph
 * (whose form keeps MatMul + Add).
 * In: a typed Graph. Out: the Gemm nodes (types of the new values not set: run InferTypes).
 * Counter: stats["transform.FoldMatMulBias.folded"].
 */
#ifndef TILECORE_TRANSFORM_FOLD_MATMUL_BIAS_H_
#define TILECORE_TRANSFORM_FOLD_MATMUL_BIAS_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.FoldMatMulBias`. */
Pass FoldMatMulBias();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_FOLD_MATMUL_BIAS_H_
