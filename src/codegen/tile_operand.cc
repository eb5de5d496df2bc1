// src/codegen/tile_operand.cc — decoding tile-intrinsic region operands (see the header).
#include "tilecore/codegen/tile_operand.h"

#include <limits>
#include <optional>

#include "tilecore/ffi/error.h"
#include "tilecore/ir/op.h"
#include "tilecore/transform/analyzer.h"
#include "tilecore/transform/flatten_buffer.h"

namespace tilecore::codegen {

using namespace ir;  // NOLINT

TileOperand DecodeTileOperand(const PrimExpr& arg, const CallNode* call,
                              const std::function<void(const std::string&)>& fail) {
  const auto* r = arg.as<BufferRegionNode>();
  if (r == nullptr) {
    fail("`" + std::string(call->op.view()) + "` expects buffer regions");
    TILECORE_ICHECK(false) << "fail() must throw";
  }
  TileOperand t;
  t.buffer = r->buffer;
  t.dtype = r->buffer->dtype;
  Array<PrimExpr> strides = transform::BufferStrides(r->buffer);
  transform::Analyzer an;
  PrimExpr off = r->buffer->elem_offset.defined() ? r->buffer->elem_offset : PrimExpr(0);
  // the offset as a constant when every part is one and it fits int32 (most regions once
  // the loops are unrolled); otherwise simplified
  const std::optional<int64_t> base = as_const_int(off);
  bool constant = base.has_value() && off.dtype() == DataType::Int(32);
  int64_t constant_offset = base.value_or(0);
  for (size_t k = 0; k < r->begin.size(); ++k) {
    // (a constant is its own simplest form: most extents and strides are)
    auto ext = as_const_int(r->extents[k]);
    if (!ext) ext = as_const_int(an.Simplify(r->extents[k]));
    auto st = as_const_int(strides[k]);
    if (!st) st = as_const_int(an.Simplify(strides[k]));
    if (!ext || !st) {
      fail("`" + std::string(call->op.view()) + "` on a region of `" +
           std::string(r->buffer->name.view()) + "` with a non-constant shape or stride");
      TILECORE_ICHECK(false) << "fail() must throw";
    }
    t.shape.push_back(*ext);
    t.strides.push_back(*st);
    const auto b = as_const_int(r->begin[k]);
    // the type of begin * stride: int32 when both are, else the product's (built to see)
    const bool int32_term =
        (r->begin[k].dtype() == DataType::Int(32) && strides[k].dtype() == DataType::Int(32)) ||
        (r->begin[k] * strides[k]).dtype() == DataType::Int(32);
    constant = constant && b && int32_term && strides[k].dtype() == DataType::Int(32);
    if (constant) {
      const __int128 v = __int128(constant_offset) + __int128(*b) * *st;
      constant =
          v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
      constant_offset = int64_t(v);
    }
  }
  if (constant) {  // (no expression built: the decoder runs on every command the cost model prices)
    t.offset = IntImm(DataType::Int(32), constant_offset);
    return t;
  }
  for (size_t k = 0; k < r->begin.size(); ++k) off = off + r->begin[k] * strides[k];
  t.offset = an.Simplify(off);
  return t;
}

MatmulEpilogue DecodeMatmulEpilogue(const CallNode* call, int64_t m, int64_t n,
                                    const std::function<void(const std::string&)>& fail) {
  MatmulEpilogue e;
  if (call->args.size() <= 4) return e;
  e.present = true;
  // A vector of n elements: one row of contiguous elements, in any rank.
  auto vector_of_n = [&](const TileOperand& t, const char* what) {
    int64_t count = 1;
    for (int64_t s : t.shape) count *= s;
    bool ok = count == n && (t.strides.empty() || t.strides.back() == 1 || t.shape.back() == 1);
    for (size_t k = 0; ok && k + 1 < t.shape.size(); ++k) ok = t.shape[k] == 1;
    if (!ok) {
      fail("`tile.mm` epilogue: " + std::string(what) + " must be " + std::to_string(n) +
           " contiguous elements (one per output column)");
      TILECORE_ICHECK(false) << "fail() must throw";
    }
  };
  if (call->args[4].as<BufferRegionNode>()) {
    e.has_bias = true;
    e.bias = DecodeTileOperand(call->args[4], call, fail);
    vector_of_n(e.bias, "bias");
  }
  if (call->args[5].as<BufferRegionNode>()) {
    e.channel_scale = true;
    e.scales = DecodeTileOperand(call->args[5], call, fail);
    vector_of_n(e.scales, "the per-channel scale");
  } else {
    e.scale = call->args[5];
  }
  e.zero_point = call->args[6];
  if (call->args[7].as<BufferRegionNode>()) {
    e.has_residual = true;
    e.residual = DecodeTileOperand(call->args[7], call, fail);
    const TileOperand& r = e.residual;
    size_t rk = r.shape.size();
    bool ok = rk >= 2 && r.shape[rk - 2] == m && r.shape[rk - 1] == n &&
              (r.strides[rk - 1] == 1 || n == 1) && (m == 1 || r.strides[rk - 2] >= n);
    for (size_t k = 0; ok && k + 2 < rk; ++k) ok = r.shape[k] == 1;
    if (!ok) {
      fail("`tile.mm` epilogue: the residual must be a " + std::to_string(m) + " x " +
           std::to_string(n) + " matrix with contiguous rows");
      TILECORE_ICHECK(false) << "fail() must throw";
    }
    e.ldr = m == 1 ? n : r.strides[rk - 2];
  }
  e.relu = call->args[8].as<StringImmNode>()->value.view() == "relu";
  e.clamp_lo = call->args[9];
  e.clamp_hi = call->args[10];
  return e;
}

}  // namespace tilecore::codegen
