/*
 * src/compiler/host_util.h — helpers of the host kernels (host_*.cc): scalar loops
 * straight over the global buffers, flat views, row-major strides, and the reading
 * of a flat index as coordinates.
 */
#ifndef TILECORE_SRC_COMPILER_HOST_UTIL_H_
#define TILECORE_SRC_COMPILER_HOST_UTIL_H_

#include <string>
#include <vector>

#include "kernel_util.h"
#include "tilecore/compiler/host_kernel.h"

namespace tilecore {
namespace compiler {
namespace host {

using namespace tilecore::ir;                // NOLINT(build/namespaces)
using namespace tilecore::compiler::detail;  // NOLINT(build/namespaces)

inline PrimExpr I64(int64_t v) { return IntImm(DataType::Int(64), v); }

/*! \brief A one-dimensional view of a param (at least one element). */
inline Buffer Flat(const Buffer& b, const std::string& name) {
  int64_t n = 1;
  for (const PrimExpr& d : b->shape) n *= static_cast<const IntImmNode*>(d.get())->value;
  return View(b, {std::max<int64_t>(n, 1)}, name);
}

inline std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

/*! \brief The coordinates of flat index `g` in `shape` (row major). */
inline std::vector<PrimExpr> Unravel(const PrimExpr& g, const std::vector<int64_t>& shape) {
  std::vector<int64_t> st = Strides(shape);
  std::vector<PrimExpr> c;
  for (size_t d = 0; d < shape.size(); ++d)
    c.push_back(floormod(floordiv(g, I32(st[d])), I32(shape[d])));
  return c;
}

/*! \brief The flat index of coordinates `c` in `shape`. */
inline PrimExpr Ravel(const std::vector<PrimExpr>& c, const std::vector<int64_t>& shape) {
  std::vector<int64_t> st = Strides(shape);
  PrimExpr r = I32(0);
  for (size_t d = 0; d < shape.size(); ++d) r = r + c[d] * I32(st[d]);
  return r;
}

/*! \brief An axis attribute in [0, rank) (negative counts from the end); ValueError otherwise. */
inline int64_t Axis(const std::string& op, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    TILECORE_THROW(ValueError) << op << ": axis " << axis << " is out of range for rank " << rank;
  return a;
}

/*! \brief "" when `t` is a scalar number or bool type the c target computes with; with
 * `narrow_ok` also the one-byte narrow floats (float8_*), which the c target converts to and
 * from float (copies and casts) but does no arithmetic on. */
inline std::string PlainDType(const std::string& op, size_t i, const TensorSpec& t,
                              bool narrow_ok = false) {
  if (!t.defined()) return "";
  DataType d = t->dtype;
  bool ok =
      d.lanes() == 1 && (d.is_integer() || d.is_bool() ||
                         (d.is_float() && (d.bits() == 16 || d.bits() == 32 || d.bits() == 64)) ||
                         (narrow_ok && d.is_narrow_float() && d.bits() == 8));
  return ok ? ""
            : op + ": input " + std::to_string(i) + " has dtype " + d.str() +
                  ", which no host kernel takes";
}

inline std::string NeedInputs(const std::string& op, const std::vector<TensorSpec>& in, size_t lo,
                              size_t hi, bool narrow_ok = false) {
  if (in.size() < lo || in.size() > hi)
    return op + ": expected " + std::to_string(lo) + (hi != lo ? ".." + std::to_string(hi) : "") +
           " inputs, got " + std::to_string(in.size());
  for (size_t i = 0; i < lo; ++i)
    if (!in[i].defined()) return op + ": input " + std::to_string(i) + " is missing";
  for (size_t i = 0; i < in.size(); ++i) {
    std::string w = PlainDType(op, i, in[i], narrow_ok);
    if (!w.empty()) return w;
  }
  return "";
}

/*! \brief ValueError unless the call has `n` outputs. */
inline void NeedOutputs(const OpCall& call, size_t n) {
  if (call.outputs.size() != n)
    TILECORE_THROW(ValueError) << "LowerHostOp(" << call.op_type << "): expected " << n
                               << " outputs, got " << call.outputs.size();
}

/*! \brief float -> integer truncating toward zero (the c target's conversion rounds to nearest). */
inline PrimExpr Convert(DataType to, PrimExpr x) {
  DataType from = x.dtype();
  if (from == to) return x;
  if (to.is_bool()) return ne(x, make_zero(from));
  if (from.is_float() && to.is_integer()) {
    DataType wide = DataType::Int(64);
    PrimExpr r = cast(wide, x);
    PrimExpr back = cast(from, r);
    PrimExpr one = make_const(wide, 1), zero = make_zero(wide);
    PrimExpr z = make_zero(from);
    r = r - select(x >= z && back > x, one, zero) + select(x < z && back < x, one, zero);
    return cast(to, r);
  }
  return cast(to, x);
}

/*! \brief max / min that keep float64 (the c target's float max/min go through float32)
 * and propagate NaN like numpy. */
inline PrimExpr HMax(PrimExpr a, PrimExpr b) {
  if (a.dtype().is_float() && a.dtype().bits() == 64) return select(ne(a, a) || a > b, a, b);
  return max(a, b);
}
inline PrimExpr HMin(PrimExpr a, PrimExpr b) {
  if (a.dtype().is_float() && a.dtype().bits() == 64) return select(ne(a, a) || a < b, a, b);
  return min(a, b);
}

/*! \brief An index value loaded from a tensor, as int32, negative values counted from `dim`. */
inline PrimExpr WrapIndex(PrimExpr v, int64_t dim) {
  PrimExpr i = cast(DataType::Int(32), v);
  return select(i < I32(0), i + I32(dim), i);
}

/*!
 * \brief Fails the kernel with a ValueError: `fmt` (a printf format) filled with the int
 * values `args` when it runs (the runtime's "tilecore.fail:" host call, runtime/kernel.cc).
 * For a value the kernel reads when it runs and was not compiled for. With `floats`, float
 * args are passed as float64 (for %g); otherwise every arg is converted to int64.
 */
inline Stmt Fail(const std::string& fmt, const std::vector<PrimExpr>& args, bool floats = false) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string name = "tilecore.fail:";
  for (unsigned char ch : fmt) {
    if (ch >= 32 && ch < 127 && ch != '"' && ch != '\\' && ch != '~') {
      name += static_cast<char>(ch);
    } else {
      name += '~';
      name += kHex[ch >> 4];
      name += kHex[ch & 15];
    }
  }
  Array<PrimExpr> call_args{StringImm(name)};
  for (const PrimExpr& a : args)
    call_args.push_back(
        cast(floats && a.dtype().is_float() ? DataType::Float(64) : DataType::Int(64), a));
  return Intrin("tir.call_packed", call_args);
}

/*!
 * \brief Reads the `k` axes in `A` (an integer tensor; negative ones count from `rank`) into
 * `seen` (an int32 local of `rank` elements: 1 for each axis named); the statements fail the
 * kernel on an axis out of range or named twice. `values` gets each axis as read (int64).
 */
inline std::vector<Stmt> ReadAxes(const std::string& what, const Buffer& A, int64_t k, int64_t rank,
                                  const Buffer& seen, std::vector<PrimExpr>* values) {
  std::vector<Stmt> s;
  for (int64_t d = 0; d < rank; ++d) s.push_back(BufferStore(seen, I32(0), {I32(d)}));
  for (int64_t j = 0; j < k; ++j)
    values->push_back(cast(DataType::Int(64), BufferLoad(A, {I32(j)})));
  for (int64_t j = 0; j < k; ++j) {
    PrimExpr v = (*values)[j];
    PrimExpr a = cast(DataType::Int(32), select(v < I64(0), v + I64(rank), v));
    s.push_back(IfThenElse(v < I64(-rank) || v >= I64(rank),
                           Fail(what + ": axis %d (element " + std::to_string(j) +
                                    ") is out of range for rank " + std::to_string(rank),
                                {v})));
    s.push_back(IfThenElse(eq(BufferLoad(seen, {a}), I32(1)),
                           Fail(what + ": axis %d is named twice", {v})));
    s.push_back(BufferStore(seen, I32(1), {a}));
  }
  return s;
}

/*! \brief Whether the axes read into `seen` (ReadAxes) are those of one of `masks`. */
inline PrimExpr AxesAre(const Buffer& seen, const std::vector<std::vector<bool>>& masks) {
  PrimExpr any;
  for (const std::vector<bool>& mask : masks) {
    PrimExpr all;
    for (size_t d = 0; d < mask.size(); ++d) {
      PrimExpr c = eq(BufferLoad(seen, {I32(static_cast<int64_t>(d))}), I32(mask[d] ? 1 : 0));
      all = all.defined() ? (all && c) : c;
    }
    if (!all.defined()) all = eq(I32(0), I32(0));
    any = any.defined() ? (any || all) : all;
  }
  return any.defined() ? any : ne(I32(0), I32(0));
}

/*! \brief A scalar variable: a one-element local buffer. */
struct Scalar {
  Buffer buf;
  Scalar(DataType t, const std::string& name) : buf(Local({1}, t, name)) {}
  PrimExpr get() const { return BufferLoad(buf, {I32(0)}); }
  Stmt set(PrimExpr v) const { return BufferStore(buf, cast(buf->dtype, v), {I32(0)}); }
  Stmt scope(Stmt body) const { return Allocate(buf, Seq({body})); }
};

/*! \brief "[d0, d1, ...]": a shape for a message. */
inline std::string ShapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

/*! \brief "(%d, %d, ...)": a printf format of `k` values. */
inline std::string ValuesFormat(int64_t k) {
  std::string f = "(";
  for (int64_t j = 0; j < k; ++j) f += j ? ", %d" : "%d";
  return f + ")";
}

}  // namespace host
}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_SRC_COMPILER_HOST_UTIL_H_
