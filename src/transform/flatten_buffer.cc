/*
 * src/transform/flatten_buffer.cc — the FlattenBuffer pass (flatten_buffer.h).
 */
#include "tilecore/transform/flatten_buffer.h"

#include <limits>
#include <unordered_map>

#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"
#include "tilecore/transform/analyzer.h"

namespace tilecore {
namespace transform {

using namespace ir;  // NOLINT(*)

namespace {

const DataType kIndex = DataType::Int(32);

PrimExpr AsIndex(const PrimExpr& e) {
  if (e.dtype().element_of() == kIndex) return e;
  return Cast(kIndex.with_lanes(e.dtype().lanes()), e);
}

/*! \brief `e * s` keeping a Ramp a Ramp and a Broadcast a Broadcast. */
PrimExpr Scale(const PrimExpr& e, const PrimExpr& s) {
  if (is_const_int(s, 1)) return e;
  if (const auto* r = e.as<RampNode>())
    return Ramp(AsIndex(r->base) * s, AsIndex(r->stride) * s, r->lanes);
  if (const auto* b = e.as<BroadcastNode>()) return Broadcast(AsIndex(b->value) * s, b->lanes);
  return e * s;
}

/*! \brief `a + b` where at most one is a vector: a Ramp or Broadcast absorbs the scalar. */
PrimExpr AddIndex(const PrimExpr& a, const PrimExpr& b) {
  if (a.dtype().is_vector() && b.dtype().is_vector()) return a + b;
  const PrimExpr& vec = a.dtype().is_vector() ? a : b;
  const PrimExpr& sc = a.dtype().is_vector() ? b : a;
  if (!vec.dtype().is_vector()) return is_const_int(a, 0) ? b : (is_const_int(b, 0) ? a : a + b);
  if (const auto* r = vec.as<RampNode>()) return Ramp(AsIndex(r->base) + sc, r->stride, r->lanes);
  if (const auto* bc = vec.as<BroadcastNode>())
    return Broadcast(AsIndex(bc->value) + sc, bc->lanes);
  return vec + sc;
}

class Flattener : public IRMutator {
 public:
  PrimExpr VisitExpr_(const BufferLoadNode* op) override {
    Array<PrimExpr> idx = VisitArray(op->indices);
    if (!NeedsFlattening(op->buffer)) {
      if (idx.same_as(op->indices)) return GetRef<PrimExpr>(op);
      return BufferLoad(op->buffer, idx, op->span);
    }
    return BufferLoad(FlatView(op->buffer, op->span), {FlatElementOffset(op->buffer, idx)},
                      op->span);
  }

  Stmt VisitStmt_(const BufferStoreNode* op) override {
    PrimExpr value = VisitExpr(op->value);
    PrimExpr pred = VisitExpr(op->predicate);
    Array<PrimExpr> idx = VisitArray(op->indices);
    if (!NeedsFlattening(op->buffer)) {
      if (value.same_as(op->value) && pred.same_as(op->predicate) && idx.same_as(op->indices)) {
        return GetRef<Stmt>(op);
      }
      return BufferStore(op->buffer, value, idx, pred, op->span);
    }
    return BufferStore(FlatView(op->buffer, op->span), value, {FlatElementOffset(op->buffer, idx)},
                       pred, op->span);
  }

 private:
  static bool NeedsFlattening(const Buffer& b) {
    return b->shape.size() != 1 || !b->strides.empty() || !is_const_int(b->elem_offset, 0);
  }

  Buffer FlatView(const Buffer& b, const Span& span) {
    auto it = views_.find(b.get());
    if (it != views_.end()) return it->second;
    // The view spans one past the largest offset an in-bounds index reaches.
    Array<PrimExpr> strides = BufferStrides(b);
    PrimExpr extent = AsIndex(b->elem_offset) + 1;
    __int128 n = 1;
    bool all_const = true;
    for (size_t k = 0; k < b->shape.size(); ++k) {
      extent = extent + (AsIndex(b->shape[k]) - 1) * strides[k];
      auto s = as_const_int(an_.Simplify(b->shape[k]));
      auto st = as_const_int(an_.Simplify(strides[k]));
      if (s && st) n += static_cast<__int128>(*s - 1) * (*st < 0 ? -*st : *st);
      all_const = all_const && s && st;
    }
    auto off = as_const_int(an_.Simplify(b->elem_offset));
    if (all_const && off) {
      n += *off;
      if (n > std::numeric_limits<int32_t>::max()) {
        TILECORE_THROW(ValueError)
            << "FlattenBuffer: buffer `" << b->name.view() << "` spans " << static_cast<int64_t>(n)
            << " elements; element offsets must fit in int32 "
            << "(TC1 addresses are 32-bit)" << At(span.defined() ? span : b->span);
      }
      extent = IntImm(kIndex, static_cast<int64_t>(n));
    } else {
      extent = an_.Simplify(extent);
    }
    Buffer view(b->data, b->dtype, {extent}, {}, IntImm(kIndex, 0), b->scope, b->name, b->span);
    views_.emplace(b.get(), view);
    return view;
  }

  Analyzer an_;
  std::unordered_map<const BufferNode*, Buffer> views_;
};

}  // namespace

Array<PrimExpr> BufferStrides(const Buffer& buffer) {
  if (!buffer->strides.empty()) return buffer->strides;
  {
    // (a constant shape, most of them: the products folded here, as Simplify folds them
    // when they fit the index type)
    std::vector<PrimExpr> folded(buffer->shape.size());
    int64_t acc = 1;
    bool fits = true;
    for (size_t k = buffer->shape.size(); fits && k-- > 0;) {
      folded[k] = IntImm(kIndex, acc);
      const auto* dim = buffer->shape[k].as<IntImmNode>();
      fits = dim != nullptr && dim->dtype == kIndex && dim->value >= 0 &&
             (dim->value == 0 || acc <= std::numeric_limits<int32_t>::max() / dim->value);
      if (fits) acc *= dim->value;
    }
    if (fits) return Array<PrimExpr>(folded);
  }
  std::vector<PrimExpr> out(buffer->shape.size());
  PrimExpr acc = IntImm(kIndex, 1);
  for (size_t k = buffer->shape.size(); k-- > 0;) {
    out[k] = acc;
    acc = is_const_int(acc, 1) ? AsIndex(buffer->shape[k]) : acc * AsIndex(buffer->shape[k]);
  }
  Analyzer an;
  Array<PrimExpr> res;
  for (const PrimExpr& s : out) res.push_back(an.Simplify(s));
  return res;
}

PrimExpr FlatElementOffset(const Buffer& buffer, const Array<PrimExpr>& indices) {
  Array<PrimExpr> strides = BufferStrides(buffer);
  PrimExpr scalar = AsIndex(buffer->elem_offset);
  PrimExpr vec;
  for (size_t k = 0; k < indices.size(); ++k) {
    PrimExpr term = Scale(AsIndex(indices[k]), AsIndex(strides[k]));
    if (term.dtype().is_vector()) {
      vec = vec.defined() ? vec + term : term;
    } else {
      scalar = is_const_int(scalar, 0) ? term : scalar + term;
    }
  }
  return vec.defined() ? AddIndex(vec, scalar) : scalar;
}

Pass FlattenBuffer() {
  return CreatePrimFuncPass(
      [](PrimFunc f, IRModule, PassContext) {
        Stmt body = Flattener().VisitStmt(f->body);
        return body.same_as(f->body) ? f : f.WithBody(body);
      },
      0, "FlattenBuffer");
}

TILECORE_REGISTER_GLOBAL("transform.FlattenBuffer").set_body_typed([]() {
  return FlattenBuffer();
});

}  // namespace transform
}  // namespace tilecore
