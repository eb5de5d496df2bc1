/*
 * include/tilecore/ir/op.h — building expressions conveniently in C++.
 *
 *   Var i("i");
 *   PrimExpr e = (i * 4 + 1) / 2;            // int32 throughout
 *   PrimExpr f = Cast(DataType::Float(32), i) * 0.5f;
 *
 * Binary operators accept a C++ number on either side and turn it into an
 * immediate of the other operand's dtype (a scalar operand next to a vector is
 * broadcast); any other dtype mismatch is a TypeError naming the node and the
 * dtypes. `==` on ObjectRefs stays identity: use eq()/ne() to build comparisons.
 */
#ifndef TILECORE_IR_OP_H_
#define TILECORE_IR_OP_H_

#include <optional>

#include "tilecore/ir/expr.h"

namespace tilecore {
namespace ir {

/*! \brief An immediate of `t` (IntImm for integers and bool, FloatImm for floats;
 * broadcast when t has lanes). */
PrimExpr make_const(DataType t, double value, Span span = Span());
PrimExpr make_const(DataType t, int64_t value, Span span = Span());
inline PrimExpr make_const(DataType t, int value, Span span = Span()) {
  return make_const(t, static_cast<int64_t>(value), span);
}
PrimExpr make_zero(DataType t, Span span = Span());

/*! \brief The value of an integer immediate (scalar IntImm), if it is one. */
std::optional<int64_t> as_const_int(const PrimExpr& e);
/*! \brief The value of a float immediate, if it is one. */
std::optional<double> as_const_float(const PrimExpr& e);
inline bool is_const_int(const PrimExpr& e, int64_t v) {
  auto c = as_const_int(e);
  return c.has_value() && *c == v;
}

/*!
 * \brief Makes the operands of a binary operator agree: a constant takes the other
 * side's dtype, a scalar next to a vector is broadcast. Leaves real mismatches for
 * the node's constructor to report.
 */
void BinaryOpMatchTypes(PrimExpr* a, PrimExpr* b);

PrimExpr operator+(PrimExpr a, PrimExpr b);
PrimExpr operator-(PrimExpr a, PrimExpr b);
PrimExpr operator-(PrimExpr a);
PrimExpr operator*(PrimExpr a, PrimExpr b);
/*! \brief Div: truncating for integers. */
PrimExpr operator/(PrimExpr a, PrimExpr b);
/*! \brief Mod: remainder of truncating division. */
PrimExpr operator%(PrimExpr a, PrimExpr b);
PrimExpr operator<(PrimExpr a, PrimExpr b);
PrimExpr operator<=(PrimExpr a, PrimExpr b);
PrimExpr operator>(PrimExpr a, PrimExpr b);
PrimExpr operator>=(PrimExpr a, PrimExpr b);
PrimExpr operator&&(PrimExpr a, PrimExpr b);
PrimExpr operator||(PrimExpr a, PrimExpr b);
PrimExpr operator!(PrimExpr a);
PrimExpr eq(PrimExpr a, PrimExpr b);
PrimExpr ne(PrimExpr a, PrimExpr b);
PrimExpr floordiv(PrimExpr a, PrimExpr b);
PrimExpr floormod(PrimExpr a, PrimExpr b);
PrimExpr min(PrimExpr a, PrimExpr b);
PrimExpr max(PrimExpr a, PrimExpr b);
PrimExpr select(PrimExpr cond, PrimExpr t, PrimExpr f);
/*! \brief Cast unless already of dtype t. */
PrimExpr cast(DataType t, PrimExpr value);

/*! \brief Intrinsic calls with their result dtype taken from the table. */
PrimExpr call(String op, Array<PrimExpr> args, Span span = Span());
/*! \brief `tir.core_id()`: this core's index (int32). */
PrimExpr core_id();

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_IR_OP_H_
