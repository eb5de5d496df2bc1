/*
 * src/compiler/host_grid_sample.cc — the host kernel of GridSample (float dtypes, 1 to 3
 * spatial dims): each output point reads the grid's normalised coordinates (last dim in
 * reverse order, x first), maps them to input coordinates (align_corners), rounds them
 * (nearest, half to even) and moves them inside the borders (padding_mode border or
 * reflection), then sums the taps of the mode (1 nearest, 2 linear, 4 cubic per dim; the
 * weights of a separable filter multiply), each tap index padded (zeros: out of range reads
 * 0; border: clamped; reflection: reflected), in float64 — as ONNX's reference does.
 */
#include <cmath>
#include <string>
#include <vector>

#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

const DataType kF64 = DataType::Float(64);
const DataType kI64 = DataType::Int(64);

PrimExpr D64(double v) { return FloatImm(kF64, v); }
PrimExpr L64(int64_t v) { return IntImm(kI64, v); }

/*! \brief floor(x) as int64 (x float64). */
PrimExpr FloorI(PrimExpr x) {
  PrimExpr t = Convert(kI64, x);
  return t - select(cast(kF64, t) > x, L64(1), L64(0));
}

/*! \brief x reflected by the near border until within [lo, hi] (float64). */
PrimExpr Reflect(PrimExpr x, double lo, double hi) {
  double rng = hi - lo;
  auto side = [&](PrimExpr dx, PrimExpr near, PrimExpr far, double sign) {
    PrimExpr n = Convert(kI64, dx / D64(rng));
    PrimExpr r = dx - cast(kF64, n) * D64(rng);
    PrimExpr even = eq(floormod(n, L64(2)), L64(0));
    return select(even, near + D64(sign) * r, far - D64(sign) * r);
  };
  PrimExpr below = side(D64(lo) - x, D64(lo), D64(hi), 1.0);
  PrimExpr above = side(x - D64(hi), D64(hi), D64(lo), -1.0);
  return select(x < D64(lo), below, select(x > D64(hi), above, x));
}

PrimExpr Clamp(PrimExpr v, PrimExpr lo, PrimExpr hi) {
  return select(v < lo, lo, select(v > hi, hi, v));
}

/*! \brief The cubic convolution weight of tap t (0..3, at -1, 0, 1, 2) for the fraction f. */
PrimExpr CubicWeight(int t, PrimExpr f) {
  const double a = -0.75;
  PrimExpr x = t == 0 ? f + D64(1) : t == 1 ? f : t == 2 ? D64(1) - f : D64(2) - f;
  if (t == 1 || t == 2) return ((D64(a + 2) * x - D64(a + 3)) * x * x) + D64(1);
  return ((D64(a) * x - D64(5 * a)) * x + D64(8 * a)) * x - D64(4 * a);
}

std::string CheckGridSample(const std::string& op, const Map<String, Any>& attrs,
                            const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 2, 2);
  if (!w.empty()) return w;
  if (!in[0]->dtype.is_float() || !in[1]->dtype.is_float())
    return op + ": X and grid must be float tensors, got " + in[0]->dtype.str() + " and " +
           in[1]->dtype.str();
  size_t r = in[0]->shape.size();
  if (r < 3 || r > 5 || in[1]->shape.size() != r)
    return op + ": X and grid must both have rank 3, 4 or 5";
  std::string mode = AttrStr(attrs, "mode", "linear"),
              pad = AttrStr(attrs, "padding_mode", "zeros");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "nearest" && mode != "linear" && mode != "cubic") return op + ": mode " + mode;
  if (pad != "zeros" && pad != "border" && pad != "reflection") return op + ": padding_mode " + pad;
  return "";
}

PrimFunc LowerGridSample(const OpCall& call) {
  NeedOutputs(call, 1);
  std::vector<int64_t> xs = Shape(call.inputs[0]), gs = Shape(call.inputs[1]),
                       ys = Shape(call.outputs[0]);
  int64_t D = static_cast<int64_t>(xs.size()) - 2;
  if (gs.back() != D || ys.size() != xs.size())
    TILECORE_THROW(ValueError) << "LowerHostOp(GridSample): the grid's last dim must be " << D;
  std::string mode = AttrStr(call.attrs, "mode", "linear"),
              pad = AttrStr(call.attrs, "padding_mode", "zeros");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  bool align = AttrInt(call.attrs, "align_corners", 0) != 0;
  int64_t N = xs[0], C = xs[1], OS = 1, IS = 1;
  for (int64_t d = 0; d < D; ++d) OS *= ys[2 + d], IS *= xs[2 + d];

  Params p = MakeParams(call);
  Buffer X = Flat(p.in[0], "X"), G = Flat(p.in[1], "G"), Y = Flat(p.out[0], "Y");
  Buffer pos = Local({D}, kF64, "pos");
  std::vector<double> lo(D), hi(D);
  for (int64_t d = 0; d < D; ++d) {
    double len = static_cast<double>(xs[2 + d]);
    lo[d] = align ? 0.0 : -0.5;
    hi[d] = align ? len - 1.0 : len - 0.5;
  }
  int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  Buffer tap_index = Local({D * taps}, DataType::Int(32), "tap_index");
  Buffer tap_weight = Local({D * taps}, kF64, "tap_weight");
  int64_t combos = 1;
  for (int64_t d = 0; d < D; ++d) combos *= taps;

  Stmt body = Loop("g", N * C * OS, [&](PrimExpr g) {
    PrimExpr n = floordiv(g, I32(C * OS)), c = floormod(floordiv(g, I32(OS)), I32(C)),
             o = floormod(g, I32(OS));
    std::vector<Stmt> s;
    for (int64_t d = 0; d < D; ++d) {
      double len = static_cast<double>(xs[2 + d]);
      PrimExpr v = cast(kF64, BufferLoad(G, {(n * I32(OS) + o) * I32(D) + I32(D - 1 - d)}));
      PrimExpr x = align ? (v + D64(1)) / D64(2) * D64(len - 1)
                         : ((v + D64(1)) * D64(len) - D64(1)) / D64(2);
      if (mode == "nearest") x = cast(kF64, cast(kI64, x));  // the c target converts half to even
      if (pad == "border")
        x = select(x < D64(lo[d]) || x > D64(hi[d]), Clamp(x, D64(0), D64(len - 1)), x);
      s.push_back(BufferStore(pos, x, {I32(d)}));
      // (reflected from the stored value: the expression would repeat x a dozen times)
      if (pad == "reflection")
        s.push_back(BufferStore(pos, Reflect(BufferLoad(pos, {I32(d)}), lo[d], hi[d]), {I32(d)}));
    }
    // each dim's taps first (index, weight, in range), so the sum over the combinations
    // of taps is loads and products only
    for (int64_t d = 0; d < D; ++d) {
      int64_t len = xs[2 + d];
      PrimExpr x = BufferLoad(pos, {I32(d)});
      for (int t = 0; t < taps; ++t) {
        PrimExpr i, weight = D64(1);
        if (mode == "nearest") {
          i = Convert(kI64, x);
        } else {
          PrimExpr i0 = FloorI(x), f = x - cast(kF64, i0);
          i = i0 + L64(mode == "linear" ? t : t - 1);
          weight = mode == "linear" ? (t == 0 ? D64(1) - f : f) : CubicWeight(t, f);
        }
        PrimExpr ok = D64(1);
        if (pad == "zeros") ok = select(i >= L64(0) && i < L64(len), D64(1), D64(0));
        PrimExpr at = I32(d * taps + t);
        if (pad == "reflection") {
          s.push_back(BufferStore(tap_index, cast(DataType::Int(32), i), {at}));
          i = Convert(kI64, Reflect(cast(kF64, BufferLoad(tap_index, {at})), lo[d], hi[d]));
        }
        s.push_back(
            BufferStore(tap_index, cast(DataType::Int(32), Clamp(i, L64(0), L64(len - 1))), {at}));
        s.push_back(BufferStore(tap_weight, weight * ok, {at}));
      }
    }
    PrimExpr sum = D64(0);
    for (int64_t k = 0; k < combos; ++k) {
      PrimExpr weight = D64(1), flat = I32(0);
      int64_t rest = k, stride = 1;
      for (int64_t d = D - 1; d >= 0; --d) {
        int t = static_cast<int>(rest % taps);
        rest /= taps;
        PrimExpr at = I32(d * taps + t);
        weight = weight * BufferLoad(tap_weight, {at});
        flat = flat + BufferLoad(tap_index, {at}) * I32(stride);
        stride *= xs[2 + d];
      }
      sum = sum + weight * cast(kF64, BufferLoad(X, {(n * I32(C) + c) * I32(IS) + flat}));
    }
    s.push_back(BufferStore(Y, cast(Y->dtype, sum), {g}));
    return Seq(s);
  });
  return MakeFunc(
      call, p, Allocate(pos, Seq({Allocate(tap_index, Seq({Allocate(tap_weight, Seq({body}))}))})));
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("GridSample", HostKernel{host::CheckGridSample, host::LowerGridSample, -1});
});

}  // namespace compiler
}  // namespace tilecore
