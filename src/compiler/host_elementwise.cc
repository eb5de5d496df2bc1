/*
 * src/compiler/host_elementwise.cc — host kernels of the element-wise ops in any dtype
 * (int64, float64, bool, unsigned, ...), with numpy broadcasting: arithmetic,
 * comparisons, logic and bit operations, Mod, IsNaN/IsInf, Where, unary math (Shrink
 * included), Cast and
 * CastLike, the copies (Identity Reshape Flatten Squeeze Unsqueeze Expand), and Shape
 * and Size, whose values are known when compiling (the kernel writes constants).
 *
 * One scalar loop over the flat output; each input is read at the broadcast index of
 * the output element (or at the same flat index when it has the output's element
 * count, which also covers the reshaping copies).
 */
#include <cctype>
#include <cmath>
#include <functional>
#include <map>

#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

using Fn = std::function<PrimExpr(const std::vector<PrimExpr>& x, const OpCall& call)>;

enum Kinds : unsigned {
  kBool = 1,
  kInt = 2,
  kFloat = 4,
  kNum = kInt | kFloat,
  kAny = kBool | kNum
};

struct Op {
  Fn fn;
  size_t min_inputs, max_inputs;
  unsigned kinds;        // what the data inputs may be
  int data_inputs = -1;  // params (-1: all)
  bool same_dtype = true;
};

unsigned KindOf(DataType t) { return t.is_bool() ? kBool : t.is_float() ? kFloat : kInt; }

PrimExpr Zero(const PrimExpr& x) { return make_zero(x.dtype()); }
PrimExpr C(const PrimExpr& like, double v) {
  return like.dtype().is_float() ? make_const(like.dtype(), v)
                                 : make_const(like.dtype(), static_cast<int64_t>(v));
}
// unsigned operands of a comparison compared as int64 (comparisons of uint8/16/32 values
// were folded to false by the build pipeline)
PrimExpr W(const PrimExpr& x) {
  return x.dtype().is_uint() && x.dtype().bits() < 64 ? cast(DataType::Int(64), x) : x;
}
PrimExpr Truthy(const PrimExpr& x) { return x.dtype().is_bool() ? x : ne(x, Zero(x)); }
// floor and ceil through a conversion to int64 (rounds to nearest) and a correction
PrimExpr Floor(const PrimExpr& x) {
  PrimExpr r = cast(x.dtype(), cast(DataType::Int(64), x));
  return select(r > x, r - C(x, 1), r);
}
PrimExpr Ceil(const PrimExpr& x) {
  PrimExpr r = cast(x.dtype(), cast(DataType::Int(64), x));
  return select(r < x, r + C(x, 1), r);
}

// ONNX's Cast: to a narrow float with the saturate and round_mode attributes (float8_e8m0fnu
// rounds up by default), from one through float32 (every float8 value is a float32 one).
PrimExpr CastTo(DataType to, PrimExpr x, const OpCall& c) {
  if (x.dtype().is_narrow_float() && x.dtype() != to) x = cast(DataType::Float(32), x);
  if (!to.is_narrow_float() || x.dtype() == to) return Convert(to, x);
  std::string mode = AttrStr(c.attrs, "round_mode", "up");
  int64_t rm = mode == "nearest" ? 0 : mode == "up" ? 1 : mode == "down" ? 2 : -1;
  if (rm < 0)
    TILECORE_THROW(ValueError) << c.op_type << ": round_mode `" << mode
                               << "` (expected up, down or nearest)";
  if (to.code != kDLFloat8_e8m0fnu) rm = 0;
  int64_t saturate = AttrInt(c.attrs, "saturate", 1) != 0;
  return Call(to, "tir.narrow_float",
              {cast(DataType::Float(32), x), make_const(DataType::Int(32), saturate),
               make_const(DataType::Int(32), rm)});
}

const std::map<std::string, Op>& Ops() {
  static const std::map<std::string, Op> ops = [] {
    std::map<std::string, Op> m;
    auto fold = [](std::function<PrimExpr(PrimExpr, PrimExpr)> f) {
      return [f](const std::vector<PrimExpr>& x, const OpCall&) {
        PrimExpr r = x[0];
        for (size_t i = 1; i < x.size(); ++i) r = f(r, x[i]);
        return r;
      };
    };
    m["Add"] = {fold([](PrimExpr a, PrimExpr b) { return a + b; }), 2, 2, kNum};
    m["Sub"] = {fold([](PrimExpr a, PrimExpr b) { return a - b; }), 2, 2, kNum};
    m["Mul"] = {fold([](PrimExpr a, PrimExpr b) { return a * b; }), 2, 2, kNum};
    m["Div"] = {fold([](PrimExpr a, PrimExpr b) { return a / b; }), 2, 2, kNum};
    m["Max"] = {fold([](PrimExpr a, PrimExpr b) { return HMax(a, b); }), 1, 8, kNum};
    m["Min"] = {fold([](PrimExpr a, PrimExpr b) { return HMin(a, b); }), 1, 8, kNum};
    m["Sum"] = {fold([](PrimExpr a, PrimExpr b) { return a + b; }), 1, 8, kNum};
    m["Mean"] = {[](const std::vector<PrimExpr>& x, const OpCall&) {
                   PrimExpr r = x[0];
                   for (size_t i = 1; i < x.size(); ++i) r = r + x[i];
                   return r / C(r, static_cast<double>(x.size()));
                 },
                 1, 8, kFloat};
    m["Equal"] = {
        [](const std::vector<PrimExpr>& x, const OpCall&) { return eq(W(x[0]), W(x[1])); }, 2, 2,
        kAny};
    m["Less"] = {[](const std::vector<PrimExpr>& x, const OpCall&) { return W(x[0]) < W(x[1]); }, 2,
                 2, kNum};
    m["LessOrEqual"] = {
        [](const std::vector<PrimExpr>& x, const OpCall&) { return W(x[0]) <= W(x[1]); }, 2, 2,
        kNum};
    m["Greater"] = {[](const std::vector<PrimExpr>& x, const OpCall&) { return W(x[0]) > W(x[1]); },
                    2, 2, kNum};
    m["GreaterOrEqual"] = {
        [](const std::vector<PrimExpr>& x, const OpCall&) { return W(x[0]) >= W(x[1]); }, 2, 2,
        kNum};
    m["And"] = {
        [](const std::vector<PrimExpr>& x, const OpCall&) { return Truthy(x[0]) && Truthy(x[1]); },
        2, 2, kBool};
    m["Or"] = {
        [](const std::vector<PrimExpr>& x, const OpCall&) { return Truthy(x[0]) || Truthy(x[1]); },
        2, 2, kBool};
    m["Xor"] = {[](const std::vector<PrimExpr>& x, const OpCall&) {
                  return ne(Truthy(x[0]), Truthy(x[1]));
                },
                2, 2, kBool};
    m["Not"] = {[](const std::vector<PrimExpr>& x, const OpCall&) { return !Truthy(x[0]); }, 1, 1,
                kBool};
    auto bit = [](const char* f) {
      return [f](const std::vector<PrimExpr>& x, const OpCall&) {
        Array<PrimExpr> a;
        for (const PrimExpr& e : x) a.push_back(e);
        return PrimExpr(Call(x[0].dtype(), String(f), a));
      };
    };
    m["BitwiseAnd"] = {bit("tir.bitwise_and"), 2, 2, kInt};
    m["BitwiseOr"] = {bit("tir.bitwise_or"), 2, 2, kInt};
    m["BitwiseXor"] = {bit("tir.bitwise_xor"), 2, 2, kInt};
    m["BitwiseNot"] = {bit("tir.bitwise_not"), 1, 1, kInt};
    m["BitShift"] = {
        [](const std::vector<PrimExpr>& x, const OpCall& c) {
          bool left = AttrStr(c.attrs, "direction", "") == "LEFT";
          // a shift by the type's width or more gives 0, as numpy does for unsigned types
          // (compared in int64: a uint8 comparison folded to true in the simplifier)
          PrimExpr w = I64(x[0].dtype().bits());
          PrimExpr s =
              Call(x[0].dtype(), String(left ? "tir.shift_left" : "tir.shift_right"), {x[0], x[1]});
          PrimExpr big = Zero(x[0]);  // a signed right shift by the width or more keeps the sign
          if (!left && x[0].dtype().is_int())
            big = select(x[0] < Zero(x[0]), C(x[0], -1), Zero(x[0]));
          return select(cast(DataType::Int(64), x[1]) >= w, big, s);
        },
        2, 2, kInt};
    m["Mod"] = {[](const std::vector<PrimExpr>& x, const OpCall& c) {
                  bool fmod = AttrInt(c.attrs, "fmod", 0) != 0;
                  PrimExpr a = x[0], b = x[1];
                  if (a.dtype().is_float()) {
                    // C's fmod is exact (a - b * trunc(a / b) is not, and is NaN for a
                    // finite a over an infinite b); the floored mod moves a remainder whose
                    // sign differs from b's by b, and a zero takes b's sign (as numpy)
                    PrimExpr r = Call(a.dtype(), String("tir.fmod"), {a, b});
                    if (fmod) return r;
                    PrimExpr zero = select(b < Zero(b), C(r, -1) * (r * r), r * r);
                    return select(eq(r, Zero(r)), zero,
                                  select(select(r<Zero(r), b> Zero(b), b < Zero(b)), r + b, r));
                  }
                  if (fmod) return a % b;
                  return floormod(a, b);
                },
                2, 2, kNum};
    auto unary = [&](const std::string& name, std::function<PrimExpr(PrimExpr, const OpCall&)> f,
                     unsigned kinds) {
      m[name] = {[f](const std::vector<PrimExpr>& x, const OpCall& c) { return f(x[0], c); }, 1, 1,
                 kinds};
    };
    unary(
        "Neg", [](PrimExpr x, const OpCall&) { return Zero(x) - x; }, kNum);
    unary(
        "Abs", [](PrimExpr x, const OpCall&) { return select(x < Zero(x), Zero(x) - x, x); }, kNum);
    unary(
        "Relu", [](PrimExpr x, const OpCall&) { return HMax(x, Zero(x)); }, kNum);
    unary(
        "Sign",
        [](PrimExpr x, const OpCall&) {
          // NaN gives NaN (ne(x, x) holds only for it; an integer is never NaN)
          return select(x > Zero(x), C(x, 1),
                        select(x < Zero(x), C(x, -1),
                               x.dtype().is_float() ? select(ne(x, x), x, Zero(x)) : Zero(x)));
        },
        kNum);
    unary(
        "IsNaN", [](PrimExpr x, const OpCall&) { return ne(x, x); }, kFloat);
    unary(
        "ReplaceNaN",
        [](PrimExpr x, const OpCall& c) {
          return select(ne(x, x), C(x, AttrFloat(c.attrs, "value", 0.0)), x);
        },
        kFloat);
    unary(
        "IsInf",
        [](PrimExpr x, const OpCall& c) {
          // x - x is NaN exactly for the infinities (and NaN)
          PrimExpr inf = ne(x - x, x - x) && eq(x, x);
          bool pos = AttrInt(c.attrs, "detect_positive", 1) != 0,
               neg = AttrInt(c.attrs, "detect_negative", 1) != 0;
          if (pos && neg) return inf;
          if (pos) return inf && x > Zero(x);
          if (neg) return inf && x < Zero(x);
          return eq(x, x) && ne(x, x);
        },
        kFloat);
    unary(
        "Exp", [](PrimExpr x, const OpCall&) { return call("tir.exp", {x}); }, kFloat);
    unary(
        "Log", [](PrimExpr x, const OpCall&) { return call("tir.log", {x}); }, kFloat);
    unary(
        "Sqrt", [](PrimExpr x, const OpCall&) { return call("tir.sqrt", {x}); }, kFloat);
    unary(
        "Tanh", [](PrimExpr x, const OpCall&) { return call("tir.tanh", {x}); }, kFloat);
    unary(
        "Sigmoid", [](PrimExpr x, const OpCall&) { return call("tir.sigmoid", {x}); }, kFloat);
    for (const char* f :
         {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"}) {
      std::string intrinsic = "tir." + std::string(f);
      intrinsic[4] = static_cast<char>(std::tolower(intrinsic[4]));
      unary(
          f, [intrinsic](PrimExpr x, const OpCall&) { return call(intrinsic, {x}); }, kFloat);
    }
    unary(
        "Reciprocal", [](PrimExpr x, const OpCall&) { return C(x, 1) / x; }, kFloat);
    unary(
        "Floor", [](PrimExpr x, const OpCall&) { return Floor(x); }, kFloat);
    unary(
        "Ceil", [](PrimExpr x, const OpCall&) { return Ceil(x); }, kFloat);
    // ONNX rounds half to even, as the conversion to an integer does
    unary(
        "Round",
        [](PrimExpr x, const OpCall&) { return cast(x.dtype(), cast(DataType::Int(64), x)); },
        kFloat);
    // ai.onnx.ml Binarizer: 1 above threshold, else 0, in x's dtype
    unary(
        "ai.onnx.ml::Binarizer",
        [](PrimExpr x, const OpCall& c) {
          PrimExpr th = C(x, AttrFloat(c.attrs, "threshold", 0.0));
          return select(x > th, C(x, 1), Zero(x));
        },
        kNum);
    // Shrink: x + bias below -lambd, x - bias above lambd, 0 between
    unary(
        "Shrink",
        [](PrimExpr x, const OpCall& c) {
          double lambd = AttrFloat(c.attrs, "lambd", 0.5), bias = AttrFloat(c.attrs, "bias", 0.0);
          PrimExpr l = C(x, lambd), b = C(x, bias);
          if (x.dtype().is_float())
            return select(x < Zero(x) - l, x + b, select(x > l, x - b, Zero(x)));
          // integers compare in float64 (lambd and bias are floats)
          DataType f64 = DataType::Float(64);
          PrimExpr v = cast(f64, x), l64 = make_const(f64, lambd), b64 = make_const(f64, bias);
          PrimExpr r = select(v < make_const(f64, -lambd), v + b64,
                              select(v > l64, v - b64, make_const(f64, 0.0)));
          return cast(x.dtype(), r);
        },
        kNum);
    unary(
        "Celu",
        [](PrimExpr x, const OpCall& c) {
          PrimExpr a = C(x, AttrFloat(c.attrs, "alpha", 1.0));
          return HMax(x, Zero(x)) + HMin(Zero(x), a * (call("tir.exp", {x / a}) - C(x, 1)));
        },
        kFloat);
    m["Where"] = {[](const std::vector<PrimExpr>& x, const OpCall&) {
                    return select(Truthy(x[0]), x[1], x[2]);
                  },
                  3,
                  3,
                  kAny,
                  -1,
                  false};
    auto copy = [](const std::vector<PrimExpr>& x, const OpCall&) { return x[0]; };
    m["Identity"] = {copy, 1, 1, kAny};
    m["Flatten"] = {copy, 1, 1, kAny};
    for (const char* n : {"Reshape", "Squeeze", "Unsqueeze", "Expand"})
      m[n] = {copy, 1, 2, kAny, 1};
    m["Cast"] = {[](const std::vector<PrimExpr>& x, const OpCall& c) {
                   return CastTo(c.outputs[0]->dtype, x[0], c);
                 },
                 1, 1, kAny};
    m["CastLike"] = {[](const std::vector<PrimExpr>& x, const OpCall& c) {
                       return CastTo(c.outputs[0]->dtype, x[0], c);
                     },
                     2,
                     2,
                     kAny,
                     1,
                     false};
    return m;
  }();
  return ops;
}

std::vector<int64_t> Padded(const std::vector<int64_t>& s, size_t rank) {
  if (s.size() >= rank) return s;
  std::vector<int64_t> out(rank - s.size(), 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

size_t ParamCount(const Op& op, size_t n) {
  return op.data_inputs < 0 ? n : std::min<size_t>(n, op.data_inputs);
}

std::string Check(const std::string& op_type, const Map<String, Any>&,
                  const std::vector<TensorSpec>& in) {
  const Op& op = Ops().at(op_type);
  // the copies, Where and the casts move narrow floats (float8_*) through float
  std::string w = NeedInputs(op_type, in, op.min_inputs, op.max_inputs, op.kinds == kAny);
  if (!w.empty()) return w;
  size_t n = ParamCount(op, in.size());
  size_t first = op_type == "Where" ? 1 : 0;
  for (size_t i = first; i < n; ++i) {
    if (!in[i].defined()) continue;
    if (!(KindOf(in[i]->dtype) & op.kinds))
      return op_type + ": input " + std::to_string(i) + " has dtype " + in[i]->dtype.str() +
             ", which the op does not take";
    if (in[i]->dtype != in[first]->dtype && (op.same_dtype || op_type == "Where"))
      return op_type + ": inputs of different dtypes (" + in[first]->dtype.str() + ", " +
             in[i]->dtype.str() + ")";
  }
  // broadcasting
  size_t rank = 0;
  for (size_t i = 0; i < n; ++i)
    if (in[i].defined()) rank = std::max(rank, in[i]->shape.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t i = 0; i < n && op.data_inputs < 0; ++i) {
    auto s = Padded(Shape(in[i]), rank);
    for (size_t d = 0; d < rank; ++d) {
      if (s[d] != 1 && out[d] != 1 && s[d] != out[d])
        return op_type + ": input shapes do not broadcast";
      if (s[d] != 1) out[d] = s[d];
    }
  }
  return "";
}

PrimFunc Lower(const OpCall& call) {
  NeedOutputs(call, 1);
  const Op& op = Ops().at(call.op_type);
  Params p = MakeParams(call);
  std::vector<int64_t> oshape = Shape(call.outputs[0]);
  int64_t N = Numel(oshape);
  size_t rank = oshape.size();
  Buffer O = Flat(p.out[0], "Y");
  size_t n = ParamCount(op, call.inputs.size());
  std::vector<Buffer> X;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < n; ++i) {
    X.push_back(Flat(p.in[i], "X" + std::to_string(i)));
    std::vector<int64_t> s = Padded(Shape(call.inputs[i]), rank);
    int64_t ni = Numel(s);
    if (ni != N && s.size() != rank)
      TILECORE_THROW(ValueError) << "LowerHostOp(" << call.op_type << "): input " << i
                                 << " of shape rank " << s.size()
                                 << " does not broadcast to the output's rank " << rank;
    for (size_t d = 0; d < s.size() && ni != N; ++d)
      if (s[d] != 1 && s[d] != oshape[d])
        TILECORE_THROW(ValueError) << "LowerHostOp(" << call.op_type << "): input " << i
                                   << " does not broadcast to the output shape";
    shapes.push_back(s);
  }
  Stmt body = Loop("i", N, [&](PrimExpr g) {
    std::vector<PrimExpr> x;
    for (size_t k = 0; k < n; ++k) {
      if (!call.inputs[k].defined()) {
        x.push_back(make_zero(call.outputs[0]->dtype));
        continue;
      }
      int64_t nk = Numel(shapes[k]);
      PrimExpr idx = I32(0);
      if (nk == N) {
        idx = g;
      } else if (nk > 1) {
        int64_t ostride = 1, istride = 1;
        for (size_t d = rank; d-- > 0;) {
          if (shapes[k][d] != 1)
            idx = idx + floormod(floordiv(g, I32(ostride)), I32(oshape[d])) * I32(istride);
          ostride *= oshape[d];
          istride *= shapes[k][d];
        }
      }
      x.push_back(BufferLoad(X[k], {idx}));
    }
    PrimExpr v = op.fn(x, call);
    if (v.dtype() != O->dtype) v = Convert(O->dtype, v);
    return BufferStore(O, v, {g});
  });
  return MakeFunc(call, p, Seq({body}));
}

// Shape and Size: the values are known when compiling
std::string CheckShape(const std::string& op_type, const Map<String, Any>&,
                       const std::vector<TensorSpec>& in) {
  if (in.size() != 1 || !in[0].defined()) return op_type + ": expected one input";
  return "";
}

PrimFunc LowerShape(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> s = Shape(call.inputs[0]);
  std::vector<int64_t> values;
  if (call.op_type == "Size") {
    values.push_back(Numel(s));
  } else {
    int64_t r = static_cast<int64_t>(s.size());
    auto clampi = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
    int64_t b = clampi(AttrInt(call.attrs, "start", 0)), e = clampi(AttrInt(call.attrs, "end", r));
    for (int64_t d = b; d < e; ++d) values.push_back(s[d]);
  }
  Buffer O = Flat(p.out[0], "Y");
  if (call.outputs[0]->numel() != static_cast<int64_t>(values.size()))
    TILECORE_THROW(ValueError) << "LowerHostOp(" << call.op_type << "): the output has "
                               << call.outputs[0]->numel() << " elements, expected "
                               << values.size();
  std::vector<Stmt> st;
  for (size_t i = 0; i < values.size(); ++i)
    st.push_back(BufferStore(O, make_const(O->dtype, values[i]), {I32(static_cast<int64_t>(i))}));
  return MakeFunc(call, p, Seq({Seq(st)}));
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  for (const auto& [name, op] : host::Ops())
    RegisterHostKernel(name, HostKernel{host::Check, host::Lower, op.data_inputs});
  RegisterHostKernel("Shape", HostKernel{host::CheckShape, host::LowerShape, 0});
  RegisterHostKernel("Size", HostKernel{host::CheckShape, host::LowerShape, 0});
});

}  // namespace compiler
}  // namespace tilecore
