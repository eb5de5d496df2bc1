/*
 * include/tilecore/transform/flatten_buffer.h — FlattenBuffer: multi-dimensional
 * loads and stores become one element offset from the buffer's data pointer.
 *
 * In:  BufferLoad / BufferStore on buffers of any rank, with or without explicit
 *      strides and elem_offset; at most one vector (Ramp, Broadcast or other
 *      vector) index per access.
 * Out: every BufferLoad and BufferStore has exactly one index, the element offset
 *      `elem_offset + sum(index[k] * stride[k])` (strides row-major when the
 *      buffer has none), on a flat view of the buffer: a Buffer with the same data
 *      Var, dtype, scope and name, shape (n,), no strides, elem_offset 0. One view
 *      per original buffer object. A Ramp index stays a Ramp
 *      (`A[i, ramp(j, 1, 8)]` -> `A[ramp(i * 64 + j, 1, 8)]` for a row of 64).
 *      Unchanged: BufferRegion operands of tile intrinsics (their buffers keep shape
 *      and strides — the codegen builds DMA / vector / matrix descriptors from
 *      them), Allocate's buffer and the PrimFunc's buffer_map (they declare the
 *      memory), and rank-1 buffers that already have no strides and offset 0.
 * Assumes: nothing beyond well-typed IR; runs after the passes that pattern-match
 *      multi-dimensional indices (VectorizeLoop, EmitTileIntrinsics).
 * Errors: a buffer of constant shape whose flat extent does not fit int32 (TC1
 *      addresses are 32-bit) is a ValueError naming the buffer.
 * Helps: the codegen computes every scalar / SIMD address as base + one index.
 * Hurts: nothing by itself; run Simplify afterwards to fold the index math.
 */
#ifndef TILECORE_TRANSFORM_FLATTEN_BUFFER_H_
#define TILECORE_TRANSFORM_FLATTEN_BUFFER_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The buffer's strides in elements: its own, or row-major from its shape. */
ir::Array<ir::PrimExpr> BufferStrides(const ir::Buffer& buffer);

/*! \brief `elem_offset + sum(indices[k] * strides[k])`; a vector index gives a vector (Ramp kept as
 * Ramp). */
ir::PrimExpr FlatElementOffset(const ir::Buffer& buffer, const ir::Array<ir::PrimExpr>& indices);

/*! \brief The pass `transform.FlattenBuffer`. */
Pass FlattenBuffer();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_FLATTEN_BUFFER_H_
