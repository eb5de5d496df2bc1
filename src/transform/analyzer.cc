/*
 * src/transform/analyzer.cc — bounds, linear normal form and expression
 * simplification (analyzer.h).
 */
#include "tilecore/transform/analyzer.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "tilecore/ffi/function.h"
#include "tilecore/ffi/stack_guard.h"
#include "tilecore/ffi/structural.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"

namespace tilecore {
namespace transform {

using namespace ir;  // NOLINT(*)

namespace {

/*! \brief A folded float constant; beyond its dtype's range it is +-inf, as IEEE arithmetic
 *  gives (make_const rounds so; FloatImm itself refuses a finite value that does not fit). */
PrimExpr FoldedFloat(DataType t, double v) { return make_const(t, v); }

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

IntBound DTypeRange(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (!t.is_integer() || t.bits() >= 64) return {kMin, kMax};
  if (t.is_uint()) return {0, (int64_t(1) << t.bits()) - 1};
  return {-(int64_t(1) << (t.bits() - 1)), (int64_t(1) << (t.bits() - 1)) - 1};
}

int64_t Sat(__int128 v) {
  if (v < kMin) return kMin;
  if (v > kMax) return kMax;
  return static_cast<int64_t>(v);
}

bool IsInf(int64_t v) { return v == kMin || v == kMax; }

IntBound Add(IntBound a, IntBound b) {
  if (IsInf(a.lo) || IsInf(b.lo) || IsInf(a.hi) || IsInf(b.hi)) {
    return {IsInf(a.lo) || IsInf(b.lo) ? kMin : Sat(__int128(a.lo) + b.lo),
            IsInf(a.hi) || IsInf(b.hi) ? kMax : Sat(__int128(a.hi) + b.hi)};
  }
  return {Sat(__int128(a.lo) + b.lo), Sat(__int128(a.hi) + b.hi)};
}
IntBound Neg(IntBound a) { return {a.hi == kMax ? kMin : -a.hi, a.lo == kMin ? kMax : -a.lo}; }
IntBound Mul(IntBound a, IntBound b) {
  if (IsInf(a.lo) || IsInf(a.hi) || IsInf(b.lo) || IsInf(b.hi)) {
    if (a.is_const() && a.lo == 0) return {0, 0};
    if (b.is_const() && b.lo == 0) return {0, 0};
    return {kMin, kMax};
  }
  __int128 c[4] = {__int128(a.lo) * b.lo, __int128(a.lo) * b.hi, __int128(a.hi) * b.lo,
                   __int128(a.hi) * b.hi};
  return {Sat(*std::min_element(c, c + 4)), Sat(*std::max_element(c, c + 4))};
}
// Division as TC1 defines it, never trapping on the host: x / 0 = -1 and x % 0 = x;
// INT64_MIN / -1 wraps to INT64_MIN, with remainder 0.
int64_t TruncDivI(int64_t a, int64_t b) {
  if (b == 0) return -1;
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  return a / b;
}
int64_t TruncModI(int64_t a, int64_t b) {
  if (b == 0) return a;
  if (b == -1) return 0;
  return a % b;
}
int64_t FloorDivI(int64_t a, int64_t b) {
  int64_t q = TruncDivI(a, b);
  if (b != 0 && (TruncModI(a, b) != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t FloorModI(int64_t a, int64_t b) {
  if (b == 0) return a;
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(FloorDivI(a, b)) * static_cast<uint64_t>(b));
}

/*! \brief Wraps an int64 result to the dtype's width (two's complement), as the scalar unit does.
 */
int64_t Wrap(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (t.bits() >= 64) return v;
  uint64_t mask = (uint64_t(1) << t.bits()) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.is_int() && (u >> (t.bits() - 1))) return static_cast<int64_t>(u | ~mask);
  return static_cast<int64_t>(u);
}

// ---------------------------------------------------------------------------
// Linear normal form of scalar integer expressions: sum(coef * atom) + constant
// ---------------------------------------------------------------------------
struct Linear {
  std::vector<std::pair<PrimExpr, int64_t>> terms;
  int64_t constant{0};
  int64_t depth{0};  // Linearize's recursion (its StackGuard's own counter: no thread-local)

  void AddTerm(const PrimExpr& atom, int64_t coef) {
    for (auto& [a, c] : terms) {
      if (a.same_as(atom) || ffi::StructuralEqual(a, atom)) {
        c += coef;
        return;
      }
    }
    terms.emplace_back(atom, coef);
  }
  void Compact() {
    terms.erase(
        std::remove_if(terms.begin(), terms.end(), [](const auto& t) { return t.second == 0; }),
        terms.end());
  }
};

void Linearize(const PrimExpr& e, int64_t scale, Linear* out) {
  ffi::StackGuard guard("Analyzer", out->depth);
  if (const auto* i = e.as<IntImmNode>()) {
    out->constant += scale * i->value;
  } else if (const auto* a = e.as<AddNode>()) {
    Linearize(a->a, scale, out);
    Linearize(a->b, scale, out);
  } else if (const auto* s = e.as<SubNode>()) {
    Linearize(s->a, scale, out);
    Linearize(s->b, -scale, out);
  } else if (const auto* m = e.as<MulNode>()) {
    if (auto c = as_const_int(m->b)) {
      Linearize(m->a, scale * *c, out);
    } else if (auto c2 = as_const_int(m->a)) {
      Linearize(m->b, scale * *c2, out);
    } else {
      out->AddTerm(e, scale);
    }
  } else {
    out->AddTerm(e, scale);
  }
}

PrimExpr FromLinear(Linear lin, DataType t) {
  lin.Compact();
  PrimExpr acc;
  // Positive terms first keep `a - b` rather than `-b + a`.
  std::stable_partition(lin.terms.begin(), lin.terms.end(),
                        [](const auto& x) { return x.second > 0; });
  for (const auto& [atom, coef] : lin.terms) {
    int64_t mag = coef < 0 ? -coef : coef;
    PrimExpr term = mag == 1 ? atom : PrimExpr(ir::Mul(atom, IntImm(t, Wrap(t, mag))));
    if (!acc.defined()) {
      acc = coef > 0 ? term : PrimExpr(ir::Sub(IntImm(t, 0), term));
    } else {
      acc = coef > 0 ? PrimExpr(ir::Add(acc, term)) : PrimExpr(ir::Sub(acc, term));
    }
  }
  int64_t c = Wrap(t, lin.constant);
  if (!acc.defined()) return IntImm(t, c);
  if (c > 0) return ir::Add(acc, IntImm(t, c));
  if (c < 0 && c != kMin) return ir::Sub(acc, IntImm(t, Wrap(t, -c)));
  return acc;
}

bool IsScalarInt(const PrimExpr& e) { return e.dtype().is_integer() && e.dtype().is_scalar(); }

// ---------------------------------------------------------------------------
// The simplifier
// ---------------------------------------------------------------------------
class ExprSimplifier : public IRMutator {
 public:
  explicit ExprSimplifier(Analyzer* an) : an_(an) {}
  void Rebind(Analyzer* an) { an_ = an; }

  // A subexpression shared at many places (e = e + e) is simplified once per call (the
  // mutator's memo): the analyzer's bounds do not change during one Simplify.

  PrimExpr VisitExpr_(const AddNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (auto v = FoldVector(op, a, b)) return *v;
    if (IsScalarInt(a)) return CanonicalSum(a, 1, b, 1);
    if (auto fa = as_const_float(a), fb = as_const_float(b); fa && fb)
      return FoldedFloat(op->dtype, *fa + *fb);
    return Rebuild<ir::Add>(op, a, b);
  }
  PrimExpr VisitExpr_(const SubNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (auto v = FoldVector(op, a, b)) return *v;
    if (IsScalarInt(a)) return CanonicalSum(a, 1, b, -1);
    if (auto fa = as_const_float(a), fb = as_const_float(b); fa && fb)
      return FoldedFloat(op->dtype, *fa - *fb);
    return Rebuild<ir::Sub>(op, a, b);
  }
  PrimExpr VisitExpr_(const MulNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (auto v = FoldVector(op, a, b)) return *v;
    if (IsScalarInt(a)) {
      if (auto cb = as_const_int(b)) return CanonicalSum(a, *cb, PrimExpr(), 0);
      if (auto ca = as_const_int(a)) return CanonicalSum(b, *ca, PrimExpr(), 0);
      return Rebuild<ir::Mul>(op, a, b);
    }
    if (auto fa = as_const_float(a), fb = as_const_float(b); fa && fb)
      return FoldedFloat(op->dtype, *fa * *fb);
    if (auto fb = as_const_float(b); fb && *fb == 1.0) return a;
    if (auto fa = as_const_float(a); fa && *fa == 1.0) return b;
    return Rebuild<ir::Mul>(op, a, b);
  }
  PrimExpr VisitExpr_(const DivNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (IsScalarInt(a)) {
      auto cb = as_const_int(b);
      if (cb && *cb == 1) return a;
      if (auto ca = as_const_int(a); ca && cb && *cb != 0)
        return IntImm(op->dtype, Wrap(op->dtype, TruncDivI(*ca, *cb)));
      if (cb && *cb > 0 && an_->ConstIntBound(a).lo >= 0) return FloorDivide(a, *cb, op->dtype);
    }
    if (auto fa = as_const_float(a), fb = as_const_float(b); fa && fb && *fb != 0)
      return FoldedFloat(op->dtype, *fa / *fb);
    if (auto fb = as_const_float(b); fb && *fb == 1.0) return a;
    return Rebuild<ir::Div>(op, a, b);
  }
  PrimExpr VisitExpr_(const ModNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    auto cb = as_const_int(b);
    if (auto ca = as_const_int(a); ca && cb && *cb != 0)
      return IntImm(op->dtype, Wrap(op->dtype, TruncModI(*ca, *cb)));
    if (cb && *cb > 0 && an_->ConstIntBound(a).lo >= 0) return FloorModulo(a, *cb, op->dtype);
    return Rebuild<ir::Mod>(op, a, b);
  }
  PrimExpr VisitExpr_(const FloorDivNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    auto cb = as_const_int(b);
    if (auto ca = as_const_int(a); ca && cb && *cb != 0)
      return IntImm(op->dtype, Wrap(op->dtype, FloorDivI(*ca, *cb)));
    if (cb && *cb > 0 && op->dtype.is_scalar()) return FloorDivide(a, *cb, op->dtype);
    return Rebuild<ir::FloorDiv>(op, a, b);
  }
  PrimExpr VisitExpr_(const FloorModNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    auto cb = as_const_int(b);
    if (auto ca = as_const_int(a); ca && cb && *cb != 0)
      return IntImm(op->dtype, Wrap(op->dtype, FloorModI(*ca, *cb)));
    if (cb && *cb > 0 && op->dtype.is_scalar()) return FloorModulo(a, *cb, op->dtype);
    return Rebuild<ir::FloorMod>(op, a, b);
  }
  PrimExpr VisitExpr_(const MinNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (IsScalarInt(a)) {
      IntBound ba = an_->ConstIntBound(a), bb = an_->ConstIntBound(b);
      if (ba.hi <= bb.lo) return a;
      if (bb.hi <= ba.lo) return b;
    }
    if (a.same_as(b) || ffi::StructuralEqual(a, b)) return a;
    return Rebuild<ir::Min>(op, a, b);
  }
  PrimExpr VisitExpr_(const MaxNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (IsScalarInt(a)) {
      IntBound ba = an_->ConstIntBound(a), bb = an_->ConstIntBound(b);
      if (ba.lo >= bb.hi) return a;
      if (bb.lo >= ba.hi) return b;
    }
    if (a.same_as(b) || ffi::StructuralEqual(a, b)) return a;
    return Rebuild<ir::Max>(op, a, b);
  }

#define TILECORE_CMP(Name, Cmp)                                          \
  PrimExpr VisitExpr_(const Name##Node* op) override {                   \
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);                 \
    if (IsScalarInt(a)) {                                                \
      std::optional<bool> r = Cmp(DifferenceBound(a, b));                \
      if (r) return IntImm(DataType::Bool(), *r);                        \
    }                                                                    \
    if (auto fa = as_const_float(a), fb = as_const_float(b); fa && fb) { \
      return IntImm(DataType::Bool(), FloatCmp##Name(*fa, *fb));         \
    }                                                                    \
    return Rebuild<ir::Name>(op, a, b);                                  \
  }
  /*! \brief The exact range of a - b (not wrapped: a comparison of wrapping values is
   *  decided by it). From the linear forms when both equal their expressions (LinearFits),
   *  so common terms cancel; otherwise from the two bounds. */
  IntBound DifferenceBound(const PrimExpr& a, const PrimExpr& b) {
    Linear la, lb, ld;
    Linearize(a, 1, &la);
    Linearize(b, 1, &lb);
    if (LinearFits(la, a.dtype()) && LinearFits(lb, b.dtype())) {
      Linearize(a, 1, &ld);
      Linearize(b, -1, &ld);
      ld.Compact();
      __int128 lo = ld.constant, hi = ld.constant;
      bool ok = true;
      for (const auto& [atom, coef] : ld.terms) {
        IntBound t = an_->ConstIntBound(atom);
        if (IsInf(t.lo) || IsInf(t.hi)) ok = false;
        __int128 x = __int128(t.lo) * coef, y = __int128(t.hi) * coef;
        lo += std::min(x, y);
        hi += std::max(x, y);
      }
      if (ok && lo > kMin && hi < kMax) return IntBound{int64_t(lo), int64_t(hi)};
    }
    IntBound ba = an_->ConstIntBound(a), bb = an_->ConstIntBound(b);
    if (IsInf(ba.lo) || IsInf(ba.hi) || IsInf(bb.lo) || IsInf(bb.hi)) return IntBound{kMin, kMax};
    return IntBound{ba.lo - bb.hi, ba.hi - bb.lo};
  }

  static std::optional<bool> LtCmp(IntBound d) {
    if (d.hi < 0) return true;
    if (d.lo >= 0) return false;
    return std::nullopt;
  }
  static std::optional<bool> LeCmp(IntBound d) {
    if (d.hi <= 0) return true;
    if (d.lo > 0) return false;
    return std::nullopt;
  }
  static std::optional<bool> GtCmp(IntBound d) {
    return LeCmp(d).has_value() ? std::optional<bool>(!*LeCmp(d)) : std::nullopt;
  }
  static std::optional<bool> GeCmp(IntBound d) {
    return LtCmp(d).has_value() ? std::optional<bool>(!*LtCmp(d)) : std::nullopt;
  }
  static std::optional<bool> EqCmp(IntBound d) {
    if (d.is_const()) return d.lo == 0;
    if (d.lo > 0 || d.hi < 0) return false;
    return std::nullopt;
  }
  static std::optional<bool> NeCmp(IntBound d) {
    return EqCmp(d).has_value() ? std::optional<bool>(!*EqCmp(d)) : std::nullopt;
  }
  static bool FloatCmpLT(double a, double b) { return a < b; }
  static bool FloatCmpLE(double a, double b) { return a <= b; }
  static bool FloatCmpGT(double a, double b) { return a > b; }
  static bool FloatCmpGE(double a, double b) { return a >= b; }
  static bool FloatCmpEQ(double a, double b) { return a == b; }
  static bool FloatCmpNE(double a, double b) { return a != b; }
  TILECORE_CMP(LT, LtCmp)
  TILECORE_CMP(LE, LeCmp)
  TILECORE_CMP(GT, GtCmp)
  TILECORE_CMP(GE, GeCmp)
  TILECORE_CMP(EQ, EqCmp)
  TILECORE_CMP(NE, NeCmp)
#undef TILECORE_CMP

  PrimExpr VisitExpr_(const AndNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (auto ca = as_const_int(a)) return *ca ? b : a;
    if (auto cb = as_const_int(b)) return *cb ? a : b;
    return Rebuild<ir::And>(op, a, b);
  }
  PrimExpr VisitExpr_(const OrNode* op) override {
    PrimExpr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (auto ca = as_const_int(a)) return *ca ? a : b;
    if (auto cb = as_const_int(b)) return *cb ? b : a;
    return Rebuild<ir::Or>(op, a, b);
  }
  PrimExpr VisitExpr_(const NotNode* op) override {
    PrimExpr a = VisitExpr(op->a);
    if (auto c = as_const_int(a)) return IntImm(DataType::Bool(), !*c);
    if (const auto* n = a.as<NotNode>()) return n->a;
    return a.same_as(op->a) ? GetRef<PrimExpr>(op) : PrimExpr(ir::Not(a, op->span));
  }
  PrimExpr VisitExpr_(const SelectNode* op) override {
    PrimExpr c = VisitExpr(op->condition);
    if (auto cc = as_const_int(c)) return VisitExpr(*cc ? op->true_value : op->false_value);
    PrimExpr t = VisitExpr(op->true_value), f = VisitExpr(op->false_value);
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value))
      return GetRef<PrimExpr>(op);
    return ir::Select(c, t, f, op->span);
  }
  PrimExpr VisitExpr_(const CastNode* op) override {
    PrimExpr v = VisitExpr(op->value);
    if (v.dtype() == op->dtype) return v;
    if (auto c = as_const_int(v); c && op->dtype.is_scalar()) {
      if (op->dtype.is_float()) return FoldedFloat(op->dtype, static_cast<double>(*c));
      if (op->dtype.is_integer()) {  // int -> int saturates on TC1
        IntBound r = DTypeRange(op->dtype);
        return IntImm(op->dtype, std::clamp(*c, r.lo, r.hi));
      }
      if (op->dtype.is_bool()) return IntImm(op->dtype, *c != 0);
    }
    return v.same_as(op->value) ? GetRef<PrimExpr>(op) : PrimExpr(ir::Cast(op->dtype, v, op->span));
  }

 private:
  template <typename TCtor, typename TNode>
  PrimExpr Rebuild(const TNode* op, const PrimExpr& a, const PrimExpr& b) {
    if (a.same_as(op->a) && b.same_as(op->b)) return GetRef<PrimExpr>(op);
    return TCtor(a, b, op->span);
  }

  /*! \brief Broadcast(x) op Broadcast(y) -> Broadcast(x op y); Ramp +- Broadcast folds into the
   * base. */
  template <typename TNode>
  std::optional<PrimExpr> FoldVector(const TNode* op, const PrimExpr& a, const PrimExpr& b) {
    if (!op->dtype.is_vector()) return std::nullopt;
    const auto* ba = a.as<BroadcastNode>();
    const auto* bb = b.as<BroadcastNode>();
    constexpr bool kAdd = std::is_same_v<TNode, AddNode>;
    constexpr bool kSub = std::is_same_v<TNode, SubNode>;
    constexpr bool kMul = std::is_same_v<TNode, MulNode>;
    if (ba && bb) {
      PrimExpr s;
      if constexpr (kAdd) s = ir::Add(ba->value, bb->value);
      if constexpr (kSub) s = ir::Sub(ba->value, bb->value);
      if constexpr (kMul) s = ir::Mul(ba->value, bb->value);
      return PrimExpr(Broadcast(VisitExpr(s), ba->lanes));
    }
    const auto* ra = a.as<RampNode>();
    if (ra && bb && (kAdd || kSub)) {
      PrimExpr base =
          kAdd ? PrimExpr(ir::Add(ra->base, bb->value)) : PrimExpr(ir::Sub(ra->base, bb->value));
      return PrimExpr(Ramp(VisitExpr(base), ra->stride, ra->lanes));
    }
    const auto* rb = b.as<RampNode>();
    if (rb && ba && kAdd)
      return PrimExpr(Ramp(VisitExpr(ir::Add(ba->value, rb->base)), rb->stride, rb->lanes));
    if (ra && bb && kMul) {
      return PrimExpr(Ramp(VisitExpr(ir::Mul(ra->base, bb->value)),
                           VisitExpr(ir::Mul(ra->stride, bb->value)), ra->lanes));
    }
    return std::nullopt;
  }

  PrimExpr Canonical(const PrimExpr& e) {
    Linear lin;
    Linearize(e, 1, &lin);
    return FromLinear(std::move(lin), e.dtype());
  }
  /*! \brief Canonical(a * ka + b * kb) without building that expression (`b` may be
   *  undefined). */
  static PrimExpr CanonicalSum(const PrimExpr& a, int64_t ka, const PrimExpr& b, int64_t kb) {
    Linear lin;
    Linearize(a, ka, &lin);
    if (b.defined()) Linearize(b, kb, &lin);
    return FromLinear(std::move(lin), a.dtype());
  }

  /*! \brief Splits lin into the multiples of c (divided by c) and the rest. */
  static void Split(const Linear& lin, int64_t c, Linear* q, Linear* r) {
    for (const auto& [atom, coef] : lin.terms) {
      if (coef % c == 0) {
        q->AddTerm(atom, coef / c);
      } else {
        r->AddTerm(atom, coef);
      }
    }
    q->constant = FloorDivI(lin.constant, c);
    r->constant = FloorModI(lin.constant, c);
  }

  /*! \brief Whether the linear form's exact value stays in t's range for every value of its
   *  atoms: then it equals the wrapping expression it came from (equal modulo 2^bits), so a
   *  division may be split term by term. Otherwise (e.g. INT32_MIN + x) it may not. */
  bool LinearFits(const Linear& lin, DataType t) {
    IntBound range = DTypeRange(t);
    __int128 lo = lin.constant, hi = lin.constant;
    for (const auto& [atom, coef] : lin.terms) {
      // Signed index arithmetic over variables is taken not to overflow (as the index
      // simplifications of every pass assume); loaded and computed values are not, and
      // neither is unsigned arithmetic, which wraps by definition (x + 1 > x is false at
      // the type's maximum).
      if (t.is_int() && atom.as<VarNode>() && an_->ConstIntBound(atom).lo <= range.lo) continue;
      IntBound b = an_->ConstIntBound(atom);
      if (IsInf(b.lo) || IsInf(b.hi)) return false;
      __int128 x = __int128(b.lo) * coef, y = __int128(b.hi) * coef;
      lo += std::min(x, y);
      hi += std::max(x, y);
    }
    return lo >= range.lo && hi <= range.hi;
  }

  PrimExpr FloorDivide(const PrimExpr& a, int64_t c, DataType t) {
    if (c == 1) return a;
    Linear lin, q, r;
    Linearize(a, 1, &lin);
    if (!LinearFits(lin, t)) return ir::FloorDiv(a, IntImm(t, c));
    Split(lin, c, &q, &r);
    PrimExpr rest = FromLinear(r, t);
    IntBound br = an_->ConstIntBound(rest);
    if (br.lo >= 0 && br.hi < c) return FromLinear(q, t);
    PrimExpr qd = FromLinear(q, t);
    PrimExpr rd = ir::FloorDiv(rest, IntImm(t, c));
    if (is_const_int(qd, 0)) return rd;
    return Canonical(ir::Add(qd, rd));
  }

  PrimExpr FloorModulo(const PrimExpr& a, int64_t c, DataType t) {
    if (c == 1) return IntImm(t, 0);
    Linear lin, q, r;
    Linearize(a, 1, &lin);
    if (!LinearFits(lin, t)) return ir::FloorMod(a, IntImm(t, c));
    Split(lin, c, &q, &r);
    PrimExpr rest = FromLinear(r, t);
    IntBound br = an_->ConstIntBound(rest);
    if (br.lo >= 0 && br.hi < c) return rest;
    return ir::FloorMod(rest, IntImm(t, c));
  }

  Analyzer* an_;
};

}  // namespace

void Analyzer::Bind(const Var& var, int64_t min, int64_t extent) {
  bounds_[var.get()] = IntBound{min, extent > 0 ? min + extent - 1 : min};
}

void Analyzer::BindRange(const Var& var, const PrimExpr& min, const PrimExpr& extent) {
  auto m = as_const_int(Simplify(min));
  auto e = as_const_int(Simplify(extent));
  if (m && e) {
    Bind(var, *m, *e);
    return;
  }
  if (m) {  // a symbolic extent still gives a lower bound
    IntBound b = ConstIntBound(Simplify(min + extent - 1));
    bounds_[var.get()] = IntBound{*m, b.hi};
  }
}

void Analyzer::Unbind(const Var& var) { bounds_.erase(var.get()); }

IntBound Analyzer::ConstIntBound(const PrimExpr& e) {
  ffi::StackGuard guard("Analyzer", bound_depth_);
  const Object* n = e.get();
  DataType t = e.dtype();
  IntBound full = DTypeRange(t);
  auto clip = [&](IntBound b) {
    return IntBound{std::max(b.lo, full.lo), std::min(b.hi, full.hi)};
  };
  switch (NodeKindOf(n)) {
    case NodeKind::kIntImm: {
      int64_t v = static_cast<const IntImmNode*>(n)->value;
      return {v, v};
    }
    case NodeKind::kVar: {
      auto it = bounds_.find(n);
      return it == bounds_.end() ? full : clip(it->second);
    }
    case NodeKind::kAdd: {
      const auto* op = static_cast<const BinaryOpNode*>(n);
      IntBound r = Add(ConstIntBound(op->a), ConstIntBound(op->b));
      return (r.lo < full.lo || r.hi > full.hi) ? full : r;  // may wrap
    }
    case NodeKind::kSub: {
      const auto* op = static_cast<const BinaryOpNode*>(n);
      IntBound r = Add(ConstIntBound(op->a), Neg(ConstIntBound(op->b)));
      return (r.lo < full.lo || r.hi > full.hi) ? full : r;
    }
    case NodeKind::kMul: {
      const auto* op = static_cast<const BinaryOpNode*>(n);
      IntBound r = Mul(ConstIntBound(op->a), ConstIntBound(op->b));
      return (r.lo < full.lo || r.hi > full.hi) ? full : r;
    }
    case NodeKind::kFloorDiv:
    case NodeKind::kDiv: {
      const auto* op = static_cast<const BinaryOpNode*>(n);
      auto c = as_const_int(op->b);
      IntBound a = ConstIntBound(op->a);
      if (!c || *c <= 0 || IsInf(a.lo) || IsInf(a.hi)) return full;
      if (NodeKindOf(n) == NodeKind::kDiv && a.lo < 0) return full;
      return {FloorDivI(a.lo, *c), FloorDivI(a.hi, *c)};
    }
    case NodeKind::kFloorMod:
    case NodeKind::kMod: {
      const auto* op = static_cast<const BinaryOpNode*>(n);
      auto c = as_const_int(op->b);
      if (!c || *c <= 0) return full;
      IntBound a = ConstIntBound(op->a);
      if (a.lo >= 0 && a.hi < *c) return a;
      if (NodeKindOf(n) == NodeKind::kMod && a.lo < 0) return {-(*c - 1), *c - 1};
      return {0, *c - 1};
    }
    case NodeKind::kMin: {
      const auto* op = static_cast<const BinaryOpNode*>(n);
      IntBound a = ConstIntBound(op->a), b = ConstIntBound(op->b);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case NodeKind::kMax: {
      const auto* op = static_cast<const BinaryOpNode*>(n);
      IntBound a = ConstIntBound(op->a), b = ConstIntBound(op->b);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case NodeKind::kSelect: {
      const auto* op = static_cast<const SelectNode*>(n);
      IntBound a = ConstIntBound(op->true_value), b = ConstIntBound(op->false_value);
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case NodeKind::kCast: {
      const auto* op = static_cast<const CastNode*>(n);
      if (!op->value.dtype().is_integer() && !op->value.dtype().is_bool()) return full;
      return clip(ConstIntBound(op->value));
    }
    case NodeKind::kCall: {
      const auto* op = static_cast<const CallNode*>(n);
      if (op->op == "tir.core_id") return {0, 15};
      if (op->op == "tir.num_cores") return {1, 16};
      return full;
    }
    default:
      return full;
  }
}

bool Analyzer::CanProve(const PrimExpr& cond) {
  auto c = as_const_int(Simplify(cond));
  return c.has_value() && *c != 0;
}

PrimExpr Analyzer::Simplify(const PrimExpr& e) {
  if (!e.defined()) return e;
  switch (ir::NodeKindOf(e.get())) {  // (already as simple as they get)
    case ir::NodeKind::kIntImm:
    case ir::NodeKind::kFloatImm:
    case ir::NodeKind::kStringImm:
    case ir::NodeKind::kVar:
      return e;
    default:
      break;
  }
  if (simplifying_) return ExprSimplifier(this).VisitExpr(e);  // (a nested call)
  if (!simplifier_) simplifier_ = std::make_shared<ExprSimplifier>(this);
  auto* s = static_cast<ExprSimplifier*>(simplifier_.get());
  s->Rebind(this);  // (a copy of this Analyzer shares it)
  simplifying_ = true;
  struct Done {
    bool* flag;
    ~Done() { *flag = false; }
  } done{&simplifying_};
  return s->VisitExpr(e);
}

TILECORE_REGISTER_GLOBAL("transform.SimplifyExpr").set_body_typed([](PrimExpr e) {
  Analyzer an;
  return an.Simplify(e);
});
TILECORE_REGISTER_GLOBAL("transform.ConstIntBound")
    .set_body_typed([](PrimExpr e, ffi::AnyView ranges) {
      Analyzer an;
      if (!ranges.is_none()) {
        for (const auto& [v, r] : ranges.cast<Map<Var, Array<int64_t>>>().items()) {
          // A range the caller gives is (min, extent) of values the variable takes: never empty.
          if (r.size() != 2) {
            TILECORE_THROW(ValueError) << "const_int_bound: the range of `" << v->name.view()
                                       << "` must be (min, extent), got " << r.size() << " numbers";
          }
          int64_t last;
          if (r[1] <= 0 || __builtin_add_overflow(r[0], r[1] - 1, &last)) {
            TILECORE_THROW(ValueError)
                << "const_int_bound: the range of `" << v->name.view() << "` (min " << r[0]
                << ", extent " << r[1] << ") holds no value or leaves int64";
          }
          an.Bind(v, r[0], r[1]);
        }
      }
      IntBound b = an.ConstIntBound(e);
      return Array<int64_t>{b.lo, b.hi};
    });

}  // namespace transform
}  // namespace tilecore
