// src/codegen/tile_operand.cc — decoding tile-intrinsic region operands (see the header).
#include "tilecore/codegen/tile_operand.h"

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
  for (size_t k = 0; k < r->begin.size(); ++k) {
    auto ext = as_const_int(an.Simplify(r->extents[k]));
    auto st = as_const_int(an.Simplify(strides[k]));
    if (!ext || !st) {
      fail("`" + std::string(call->op.view()) + "` on a region of `" + std::string(r->buffer->name.view()) +
           "` with a non-constant shape or stride");
      TILECORE_ICHECK(false) << "fail() must throw";
    }
    t.shape.push_back(*ext);
    t.strides.push_back(*st);
    off = off + r->begin[k] * strides[k];
  }
  t.offset = an.Simplify(off);
  return t;
}

}  // namespace tilecore::codegen
