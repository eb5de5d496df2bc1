/*
 * include/tilecore/codegen/tile_operand.h — decoding the region operands of tile
 * intrinsics (`tile.mm`, `tile.vec_*`, DMA) into constant shapes and strides.
 *
 * Every code generator that lowers tile commands needs the same facts about a
 * BufferRegion: its buffer, its element offset from the buffer's data pointer, and
 * its shape and strides in elements, which must be constants (TC1 descriptors hold
 * constants; the C runtime helpers take them as literals). Each generator words its
 * own diagnostics, so failures go through the caller's `fail`, which must throw.
 */
#ifndef TILECORE_CODEGEN_TILE_OPERAND_H_
#define TILECORE_CODEGEN_TILE_OPERAND_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tilecore/ir/expr.h"

namespace tilecore::codegen {

struct TileOperand {
  ir::Buffer buffer;
  ir::DataType dtype;
  ir::PrimExpr offset;  // elements from the buffer's data pointer, simplified
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

/*!
 * \brief Decodes argument `arg` of tile intrinsic `call`. Calls `fail(what)` (which
 * must throw) when the argument is not a buffer region or its shape or strides are not
 * constant.
 */
TileOperand DecodeTileOperand(const ir::PrimExpr& arg, const ir::CallNode* call,
                              const std::function<void(const std::string&)>& fail);

/*!
 * \brief The fused epilogue of a `tile.mm` call (its optional last seven arguments),
 * decoded and checked against the matrix (M x N): bias and per-channel scales are N
 * contiguous elements, the residual is M x N with contiguous rows. `present` is false
 * for a plain `tile.mm(c, a, b, accumulate)`.
 */
struct MatmulEpilogue {
  bool present = false;
  bool has_bias = false, channel_scale = false, has_residual = false, relu = false;
  TileOperand bias, scales, residual;
  int64_t ldr = 0;                  // residual row stride in elements
  ir::PrimExpr scale, zero_point;   // scalar scale (when !channel_scale) and zero point
  ir::PrimExpr clamp_lo, clamp_hi;  // float32 expressions
};

MatmulEpilogue DecodeMatmulEpilogue(const ir::CallNode* call, int64_t m, int64_t n,
                                    const std::function<void(const std::string&)>& fail);

}  // namespace tilecore::codegen
#endif  // TILECORE_CODEGEN_TILE_OPERAND_H_
