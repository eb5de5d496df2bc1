/*
 * include/tilecore/transform/gemm_to_matmul.h — GemmToMatMul: Gemm becomes MatMul
 * followed by Add, so later stages see one matrix-product op.
 *
 *   Gemm(A, B, C; alpha, beta, transA, transB)
 *     -> Y = MatMul(A', B') [* alpha] [+ beta * C]
 * A transposed constant B (or alpha) is folded into a new constant; a non-constant
 * operand gets a Transpose node (Mul for alpha/beta). The final node keeps the
 * Gemm's output value and name.
 * In: a Graph (types not needed). Out: no Gemm nodes.
 * Counter: stats["transform.GemmToMatMul.rewritten"].
 */
#ifndef TILECORE_TRANSFORM_GEMM_TO_MATMUL_H_
#define TILECORE_TRANSFORM_GEMM_TO_MATMUL_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.GemmToMatMul`. */
Pass GemmToMatMul();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_GEMM_TO_MATMUL_H_
