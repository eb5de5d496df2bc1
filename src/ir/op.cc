/*
 * src/ir/op.cc — operator overloads and constant helpers (op.h).
 */
#include "tilecore/ir/op.h"

#include <cmath>

#include "tilecore/ffi/function.h"
#include "tilecore/ir/intrinsics.h"

namespace tilecore {
namespace ir {

namespace {
/*! \brief `value` converted to the float type `e` as a cast does: beyond its range, +-inf
 *  (FloatImm itself refuses a finite value that does not fit: that is a user's literal). */
PrimExpr FloatConst(DataType e, double value, Span span) {
  try {
    return FloatImm(e, value, span);
  } catch (const ffi::Error& err) {
    if (err.kind() != "ValueError") throw;
    return FloatImm(e, value > 0 ? INFINITY : -INFINITY, span);
  }
}
}  // namespace

PrimExpr make_const(DataType t, int64_t value, Span span) {
  DataType e = t.element_of();
  PrimExpr c = e.is_float() ? FloatConst(e, static_cast<double>(value), span)
                            : PrimExpr(IntImm(e, value, span));
  return t.is_vector() ? PrimExpr(Broadcast(c, t.lanes(), span)) : c;
}

PrimExpr make_const(DataType t, double value, Span span) {
  DataType e = t.element_of();
  PrimExpr c = e.is_float() ? FloatConst(e, value, span)
                            : PrimExpr(IntImm(e, static_cast<int64_t>(value), span));
  return t.is_vector() ? PrimExpr(Broadcast(c, t.lanes(), span)) : c;
}

PrimExpr make_zero(DataType t, Span span) { return make_const(t, int64_t(0), span); }

std::optional<int64_t> as_const_int(const PrimExpr& e) {
  if (const auto* n = e.as<IntImmNode>()) return n->value;
  return std::nullopt;
}

std::optional<double> as_const_float(const PrimExpr& e) {
  if (const auto* n = e.as<FloatImmNode>()) return n->value;
  return std::nullopt;
}

namespace {
bool IsImm(const PrimExpr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); }

/*! \brief Re-types an immediate to `t`'s element type, if that loses nothing. */
std::optional<PrimExpr> Retype(const PrimExpr& imm, DataType t) {
  DataType e = t.element_of();
  if (const auto* i = imm.as<IntImmNode>()) {
    if (e.is_float()) return PrimExpr(FloatImm(e, static_cast<double>(i->value), i->span));
    if (e.is_integer() || e.is_bool()) {
      try {
        return PrimExpr(IntImm(e, i->value, i->span));
      } catch (const ffi::Error&) {
        return std::nullopt;  // does not fit: leave the mismatch to be reported
      }
    }
  }
  if (const auto* f = imm.as<FloatImmNode>()) {
    if (e.is_float()) return PrimExpr(FloatImm(e, f->value, f->span));
  }
  return std::nullopt;
}
}  // namespace

void BinaryOpMatchTypes(PrimExpr* a, PrimExpr* b) {
  if (!a->defined() || !b->defined()) return;
  if (a->dtype() == b->dtype()) return;
  // Constants take the other side's element type.
  if (IsImm(*a) && !IsImm(*b)) {
    if (auto r = Retype(*a, b->dtype())) *a = *r;
  } else if (IsImm(*b) && !IsImm(*a)) {
    if (auto r = Retype(*b, a->dtype())) *b = *r;
  } else if (IsImm(*a) && IsImm(*b)) {
    // Two literals: int meets float -> float.
    if (a->dtype().is_float() && !b->dtype().is_float()) {
      if (auto r = Retype(*b, a->dtype())) *b = *r;
    } else if (b->dtype().is_float() && !a->dtype().is_float()) {
      if (auto r = Retype(*a, b->dtype())) *a = *r;
    }
  }
  // A scalar next to a vector is broadcast.
  if (a->dtype().is_scalar() && b->dtype().is_vector() && a->dtype() == b->dtype().element_of()) {
    *a = Broadcast(*a, b->dtype().lanes());
  } else if (b->dtype().is_scalar() && a->dtype().is_vector() &&
             b->dtype() == a->dtype().element_of()) {
    *b = Broadcast(*b, a->dtype().lanes());
  }
}

#define TILECORE_IR_BINARY_OPERATOR(Fn, Node) \
  PrimExpr Fn(PrimExpr a, PrimExpr b) {       \
    BinaryOpMatchTypes(&a, &b);               \
    return Node(std::move(a), std::move(b));  \
  }
TILECORE_IR_BINARY_OPERATOR(operator+, Add)
TILECORE_IR_BINARY_OPERATOR(operator-, Sub)
TILECORE_IR_BINARY_OPERATOR(operator*, Mul)
TILECORE_IR_BINARY_OPERATOR(operator/, Div)
TILECORE_IR_BINARY_OPERATOR(operator%, Mod)
TILECORE_IR_BINARY_OPERATOR(operator<, LT)
TILECORE_IR_BINARY_OPERATOR(operator<=, LE)
TILECORE_IR_BINARY_OPERATOR(operator>, GT)
TILECORE_IR_BINARY_OPERATOR(operator>=, GE)
TILECORE_IR_BINARY_OPERATOR(operator&&, And)
TILECORE_IR_BINARY_OPERATOR(operator||, Or)
TILECORE_IR_BINARY_OPERATOR(eq, EQ)
TILECORE_IR_BINARY_OPERATOR(ne, NE)
TILECORE_IR_BINARY_OPERATOR(floordiv, FloorDiv)
TILECORE_IR_BINARY_OPERATOR(floormod, FloorMod)
TILECORE_IR_BINARY_OPERATOR(min, Min)
TILECORE_IR_BINARY_OPERATOR(max, Max)
#undef TILECORE_IR_BINARY_OPERATOR

PrimExpr operator-(PrimExpr a) { return make_zero(a.dtype()) - a; }
PrimExpr operator!(PrimExpr a) { return Not(std::move(a)); }

PrimExpr select(PrimExpr cond, PrimExpr t, PrimExpr f) {
  BinaryOpMatchTypes(&t, &f);
  return Select(std::move(cond), std::move(t), std::move(f));
}

PrimExpr cast(DataType t, PrimExpr value) {
  if (value.dtype() == t) return value;
  return Cast(t, std::move(value));
}

PrimExpr call(String op, Array<PrimExpr> args, Span span) {
  return Call(DataType::Void(), std::move(op), std::move(args), std::move(span));
}

PrimExpr core_id() { return call("tir.core_id", {}); }

// Python's operators go through the same type matching.
TILECORE_REGISTER_GLOBAL("ir._BinaryOpMatchTypes").set_body_typed([](PrimExpr a, PrimExpr b) {
  BinaryOpMatchTypes(&a, &b);
  return Array<PrimExpr>{a, b};
});
TILECORE_REGISTER_GLOBAL("ir.const").set_body_typed([](ffi::AnyView value, ffi::AnyView dtype) {
  DataType t = DataTypeFromAny(dtype, "const");
  if (value.type_index() == kTCFFIFloat) return make_const(t, value.cast<double>());
  return make_const(t, value.cast<int64_t>());
});

}  // namespace ir
}  // namespace tilecore
