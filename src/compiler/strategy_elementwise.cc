/*
 * src/compiler/strategy_elementwise.cc — element-wise ops with numpy broadcasting:
 * binary and variadic arithmetic (Add Sub Mul Div Max Min Pow Sum Mean PRelu), Where,
 * comparisons, unary activations and math (Relu ... Abs, Celu Mish Swish Shrink),
 * EyeLike (from the flat output index), rounding (Floor Ceil
 * Round), IsNaN/IsInf, the trigonometric and hyperbolic functions (Sin ... Atanh), logic
 * on bool (And Or Xor Not), bit operations and Mod on 8- to 32-bit integers, Cast and
 * CastLike, Expand, and the layout ops that are plain copies (Reshape Flatten Squeeze
 * Unsqueeze Identity).
 *
 * Tiling: the output is walked flat in tiles of up to 16384 elements (64 KiB of f32,
 * one L1 bank each), no fewer tiles than cores down to kMinCoreTile elements, or in equal
 * tiles that divide it when they are no slower (FlatTile); the tiles go to the cores round
 * robin and a last, shorter tile has its own constant size; a core's whole tiles run
 * pipelined in two slots when their buffers fit twice (the next tile's loads before this
 * tile's commands, its store left running). An input
 * of the output's element count is DMAed tile by tile; a broadcast input (fewer elements) is
 * loaded whole into L1 once per core (up to 256 KiB), on the DMA-out engine beside the first
 * tile's loads. The compute loop is one scalar loop per tile over L1
 * (Clip: two, max then min, each one vector command; Gelu: one per step of its formula, erf's
 * polynomial included); EmitTileIntrinsics turns what the vector engine has (add, mul,
 * max, exp, sigmoid, ...) into tile.vec_* commands, and the rest (erf, pow, select)
 * stays front-end code. With an input broadcast along some dimensions (per channel,
 * row, column, ...; at most 4 dimensions once those of one pattern are merged), the
 * tiles are boxes of the merged output and the loop a nest whose broadcast reads miss
 * the loop variables they are broadcast along: one vector command with a stride-0 view
 * (LowerBroadcastNest). Beyond 4 merged dimensions the flat walk reads a broadcast input
 * through its index (a division and a remainder per element: front-end code). Broadcast
 * inputs beyond 256 KiB in all are loaded by the nest as each tile's box of them (Swin's
 * attention mask over the heads); the flat walk refuses them.
 *
 * TC1 has no instruction for floor, sin, atan, ...: floor and ceil correct the
 * conversion to int32 (which rounds to nearest even), and the trigonometric functions
 * are polynomials after a range reduction (sin, cos: x = k pi/2 + y; atan: 1/x beyond
 * 1, then a half-angle step), the inverse hyperbolic ones logarithms (series near 0).
 */
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "activation_passes.h"
#include "kernel_util.h"
#include "lookup_table.h"
#include "matrix_precision.h"
#include "tilecore/arch/params.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/intrinsics.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kTile = 16384;
// the fewest elements a tile is cut to so that every core takes one (a DMA's latency and a
// vector command's fill are paid per tile)
constexpr int64_t kMinCoreTile = 1024;
// the DMA event of the broadcast inputs loaded whole (the tiles' loads and stores: 0 and 1)
constexpr int kWholeEvent = 2;
// a pipelined tile loop's events: slot k's loads on kSlotLoadEvent + k, its store on
// kSlotStoreEvent + k
constexpr int kSlotLoadEvent = 3, kSlotStoreEvent = 5;
constexpr int64_t kBroadcastBytes = 256 * 1024;

/*! \brief Elements of the flat walk's critical path: the most a core computes, each tile
 * counted kTileOverhead elements more (its DMA latency and its commands' fill), when N is
 * cut in tiles of T and a shorter last one, round robin over `cores`. */
int64_t FlatCriticalPath(int64_t N, int64_t T, int64_t cores) {
  constexpr int64_t kTileOverhead = 256;
  const int64_t full = N / T, rest = N % T;
  const int64_t most = (full + cores - 1) / cores;  // core 0's full tiles
  int64_t path = most * (T + kTileOverhead);
  // the shorter tile goes to the core after the last full one
  if (rest > 0) path = std::max(path, full / cores * (T + kTileOverhead) + rest + kTileOverhead);
  return path;
}

/*! \brief The flat walk's tile: up to kTile elements, no fewer tiles than cores down to
 * kMinCoreTile elements a tile, a multiple of 16 (one tile of a transformer's 8,320-element
 * Add ran on one core while three idled). A tile that divides N is taken when its critical
 * path is no longer: the walk then has one body, not a second for the shorter last tile
 * (each element-wise member of a layer group was lowered and scheduled twice). */
int64_t FlatTile(int64_t N, int64_t cores) {
  int64_t T = std::min(kTile, std::max<int64_t>(N, 1));
  if (N > kMinCoreTile)
    T = std::min(T, std::max(kMinCoreTile, ((N + cores - 1) / cores + 15) / 16 * 16));
  if (N % T == 0) return T;
  // the fewest tiles first, so a tie keeps the longer tile
  int64_t best = T, best_path = FlatCriticalPath(N, T, cores);
  bool divides = false;
  const int64_t first = (N + kTile - 1) / kTile, last = first + 4 * cores;
  for (int64_t k = first; k <= last && N / k >= 16; ++k) {
    const int64_t t = N / k;
    if (N % k != 0 || t % 16 != 0) continue;
    const int64_t path = FlatCriticalPath(N, t, cores);
    if (path < best_path || (!divides && path == best_path)) {
      best = t;
      best_path = path;
      divides = true;
    }
  }
  return best;
}

using Fn = std::function<PrimExpr(const std::vector<PrimExpr>& x, const OpCall& call)>;

struct EwOp {
  Fn fn;
  int min_inputs, max_inputs;
  std::vector<DataType> dtypes;  // accepted input dtypes (Where: of inputs 1, 2)
  bool uses_index = false;       // fn also gets the flat output index, after the inputs
};

PrimExpr Exp(PrimExpr x) { return call("tir.exp", {x}); }
PrimExpr Log(PrimExpr x) { return call("tir.log", {x}); }
PrimExpr Abs(PrimExpr x) { return max(x, x * make_const(x.dtype(), -1)); }
PrimExpr Zero(const PrimExpr& x) { return make_zero(x.dtype()); }
PrimExpr C(const PrimExpr& like, double v) { return make_const(like.dtype(), v); }

PrimExpr Erf(PrimExpr x) {
  // Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7)
  PrimExpr ax = Abs(x);
  PrimExpr t = call("tir.recip", {F32(1.0) + F32(0.3275911) * ax});
  PrimExpr poly = ((((F32(1.061405429) * t + F32(-1.453152027)) * t + F32(1.421413741)) * t +
                    F32(-0.284496736)) *
                       t +
                   F32(0.254829592)) *
                  t;
  PrimExpr y = F32(1.0) - poly * Exp(F32(0.0) - x * x);
  return select(x < F32(0.0), F32(0.0) - y, y);
}

PrimExpr Pow(PrimExpr a, PrimExpr b) {
  PrimExpr r = Exp(b * Log(Abs(a)));
  PrimExpr bi = cast(DataType::Int(32), b);
  PrimExpr is_int = eq(cast(DataType::Float(32), bi), b);
  PrimExpr odd = eq(floormod(bi, I32(2)), I32(1));
  PrimExpr neg = select(is_int, select(odd, F32(0.0) - r, r), F32(std::nan("")));
  return select(eq(b, F32(0.0)), F32(1.0), select(a < F32(0.0), neg, r));
}

// --- rounding: the conversion to int32 rounds to nearest even (TC1's rule); a float of
// magnitude 2^23 or more (or an infinity or NaN) is already integral and stays as is
PrimExpr Integral(PrimExpr x, PrimExpr r) { return select(Abs(x) < F32(8388608.0), r, x); }
PrimExpr RoundEven(PrimExpr x) {
  return Integral(x, cast(DataType::Float(32), cast(DataType::Int(32), x)));
}
PrimExpr Floor(PrimExpr x) {
  PrimExpr r = cast(DataType::Float(32), cast(DataType::Int(32), x));
  return Integral(x, select(r > x, r - F32(1.0), r));
}
PrimExpr Ceil(PrimExpr x) {
  PrimExpr r = cast(DataType::Float(32), cast(DataType::Int(32), x));
  return Integral(x, select(r < x, r + F32(1.0), r));
}
PrimExpr Trunc(PrimExpr x) { return select(x < F32(0.0), Ceil(x), Floor(x)); }

// --- trigonometric and hyperbolic functions: TC1 has no instruction for them, so they
// are polynomials after a range reduction (f32 error a few ulp for moderate arguments)
PrimExpr Poly(PrimExpr t, const std::vector<double>& c) {  // c[0] + c[1] t + ...
  PrimExpr r = F32(c.back());
  for (size_t i = c.size() - 1; i-- > 0;) r = r * t + F32(c[i]);
  return r;
}
struct SinCos {
  PrimExpr sin, cos;
};
SinCos SinCosOf(PrimExpr x) {
  // x = k pi/2 + y, |y| <= pi/4 (pi/2 in two parts, Cody and Waite)
  PrimExpr k = cast(DataType::Int(32), x * F32(2.0 / M_PI));
  PrimExpr kf = cast(DataType::Float(32), k);
  PrimExpr y = (x - kf * F32(1.5707963705062866)) - kf * F32(-4.371139000186241e-08);
  PrimExpr y2 = y * y;
  PrimExpr s = y + y * y2 * Poly(y2, {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880});
  PrimExpr c = Poly(y2, {1.0, -0.5, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800});
  PrimExpr q = floormod(k, I32(4));
  PrimExpr sn = select(eq(q, I32(0)), s,
                       select(eq(q, I32(1)), c, select(eq(q, I32(2)), F32(0.0) - s, F32(0.0) - c)));
  PrimExpr cs = select(eq(q, I32(0)), c,
                       select(eq(q, I32(1)), F32(0.0) - s, select(eq(q, I32(2)), F32(0.0) - c, s)));
  return {sn, cs};
}
PrimExpr Atan(PrimExpr x) {
  // |x| > 1 through atan(a) = pi/2 - atan(1/a); then the half-angle step
  // atan(t) = 2 atan(t / (1 + sqrt(1 + t^2))) leaves u <= tan(pi/8) for the odd series
  PrimExpr a = Abs(x);
  PrimExpr inv = a > F32(1.0);
  PrimExpr t = select(inv, call("tir.recip", {a}), a);
  PrimExpr u = t / (F32(1.0) + call("tir.sqrt", {F32(1.0) + t * t}));
  PrimExpr u2 = u * u;
  std::vector<double> c;
  for (int n = 0; n <= 9; ++n) c.push_back((n % 2 ? -1.0 : 1.0) / (2 * n + 1));
  PrimExpr r = F32(2.0) * u * Poly(u2, c);
  r = select(inv, F32(M_PI / 2) - r, r);
  return select(x < F32(0.0), F32(0.0) - r, r);
}
// log(a + sqrt(a^2 + s)) for a >= 0 (asinh: s = 1, acosh: s = -1), as log(2a) once a^2
// would overflow
PrimExpr LogHypot(PrimExpr a, double s) {
  PrimExpr big = a > F32(1e18);
  PrimExpr safe = select(big, F32(1.0), a);
  return select(big, Log(a) + F32(M_LN2), Log(safe + call("tir.sqrt", {safe * safe + F32(s)})));
}

const std::map<std::string, EwOp>& Ops() {
  static const std::map<std::string, EwOp> ops = [] {
    std::map<std::string, EwOp> m;
    DataType f32 = DataType::Float(32), i32 = DataType::Int(32);
    auto attr = [](const OpCall& c, const char* n, double d) {
      return F32(AttrFloat(c.attrs, n, d));
    };
    auto fold = [](std::function<PrimExpr(PrimExpr, PrimExpr)> f) {
      return [f](const std::vector<PrimExpr>& x, const OpCall&) {
        PrimExpr r = x[0];
        for (size_t i = 1; i < x.size(); ++i) r = f(r, x[i]);
        return r;
      };
    };
    m["Add"] = {fold([](PrimExpr a, PrimExpr b) { return a + b; }), 2, 2, {f32, i32}};
    m["Sub"] = {fold([](PrimExpr a, PrimExpr b) { return a - b; }), 2, 2, {f32, i32}};
    m["Mul"] = {fold([](PrimExpr a, PrimExpr b) { return a * b; }), 2, 2, {f32, i32}};
    m["Div"] = {fold([](PrimExpr a, PrimExpr b) { return a / b; }), 2, 2, {f32}};
    m["Max"] = {fold([](PrimExpr a, PrimExpr b) { return max(a, b); }), 1, 8, {f32, i32}};
    m["Min"] = {fold([](PrimExpr a, PrimExpr b) { return min(a, b); }), 1, 8, {f32, i32}};
    m["Sum"] = {fold([](PrimExpr a, PrimExpr b) { return a + b; }), 1, 8, {f32}};
    m["Mean"] = {[](const std::vector<PrimExpr>& x, const OpCall&) {
                   PrimExpr r = x[0];
                   for (size_t i = 1; i < x.size(); ++i) r = r + x[i];
                   return r * F32(1.0 / static_cast<double>(x.size()));
                 },
                 1,
                 8,
                 {f32}};
    // a constant exponent of 2 (the driver's `tc_exponent`, from a one-element constant)
    // is x * x: one vector command, and exact where exp(2 log|x|) is not
    m["Pow"] = {
        [](const std::vector<PrimExpr>& x, const OpCall& c) {
          if (HasAttr(c.attrs, "tc_exponent") && AttrFloat(c.attrs, "tc_exponent", 0) == 2.0)
            return x[0] * x[0];
          return Pow(x[0], x[1]);
        },
        2,
        2,
        {f32}};
    m["PRelu"] = {[](const std::vector<PrimExpr>& x, const OpCall&) {
                    return select(x[0] < F32(0.0), x[0] * x[1], x[0]);
                  },
                  2,
                  2,
                  {f32}};
    m["Where"] = {[](const std::vector<PrimExpr>& x, const OpCall&) {
                    return select(ne(x[0], make_zero(x[0].dtype())), x[1], x[2]);
                  },
                  3,
                  3,
                  {f32, i32}};
    m["Equal"] = {[](const std::vector<PrimExpr>& x, const OpCall&) { return eq(x[0], x[1]); },
                  2,
                  2,
                  {f32, i32}};
    m["Less"] = {[](const std::vector<PrimExpr>& x, const OpCall&) { return x[0] < x[1]; },
                 2,
                 2,
                 {f32, i32}};
    m["LessOrEqual"] = {[](const std::vector<PrimExpr>& x, const OpCall&) { return x[0] <= x[1]; },
                        2,
                        2,
                        {f32, i32}};
    m["Greater"] = {[](const std::vector<PrimExpr>& x, const OpCall&) { return x[0] > x[1]; },
                    2,
                    2,
                    {f32, i32}};
    m["GreaterOrEqual"] = {
        [](const std::vector<PrimExpr>& x, const OpCall&) { return x[0] >= x[1]; },
        2,
        2,
        {f32, i32}};
    auto unary = [&](const std::string& name, std::function<PrimExpr(PrimExpr, const OpCall&)> f,
                     std::vector<DataType> dt) {
      m[name] = {[f](const std::vector<PrimExpr>& x, const OpCall& c) { return f(x[0], c); }, 1, 1,
                 dt};
    };
    unary("Relu", [](PrimExpr x, const OpCall&) { return max(x, Zero(x)); }, {f32, i32});
    unary("LeakyRelu",
          [attr](PrimExpr x, const OpCall& c) {
            return select(x < F32(0.0), x * attr(c, "alpha", 0.01), x);
          },
          {f32});
    unary("Sigmoid", [](PrimExpr x, const OpCall&) { return call("tir.sigmoid", {x}); }, {f32});
    unary("Tanh", [](PrimExpr x, const OpCall&) { return call("tir.tanh", {x}); }, {f32});
    unary("Exp", [](PrimExpr x, const OpCall&) { return Exp(x); }, {f32});
    unary("Log", [](PrimExpr x, const OpCall&) { return Log(x); }, {f32});
    unary("Sqrt", [](PrimExpr x, const OpCall&) { return call("tir.sqrt", {x}); }, {f32});
    unary("Reciprocal", [](PrimExpr x, const OpCall&) { return call("tir.recip", {x}); }, {f32});
    unary("Neg", [](PrimExpr x, const OpCall&) { return x * C(x, -1); }, {f32, i32});
    unary("Abs", [](PrimExpr x, const OpCall&) { return Abs(x); }, {f32, i32});
    unary("Erf", [](PrimExpr x, const OpCall&) { return Erf(x); }, {f32});
    unary("Gelu",
          [](PrimExpr x, const OpCall& c) {
            if (AttrStr(c.attrs, "approximate", "none") == "tanh") {
              PrimExpr in = F32(std::sqrt(2.0 / M_PI)) * (x + F32(0.044715) * x * x * x);
              return F32(0.5) * x * (F32(1.0) + call("tir.tanh", {in}));
            }
            return F32(0.5) * x * (F32(1.0) + Erf(x * F32(M_SQRT1_2)));
          },
          {f32});
    unary("HardSigmoid",
          [attr](PrimExpr x, const OpCall& c) {
            return min(max(x * attr(c, "alpha", 0.2) + attr(c, "beta", 0.5), F32(0.0)), F32(1.0));
          },
          {f32});
    unary("HardSwish",
          [](PrimExpr x, const OpCall&) {
            return x * min(max(x * F32(1.0 / 6.0) + F32(0.5), F32(0.0)), F32(1.0));
          },
          {f32});
    unary("Elu",
          [attr](PrimExpr x, const OpCall& c) {
            return select(x < F32(0.0), attr(c, "alpha", 1.0) * (Exp(x) - F32(1.0)), x);
          },
          {f32});
    unary("Selu",
          [attr](PrimExpr x, const OpCall& c) {
            PrimExpr a = attr(c, "alpha", 1.67326319217681884765625),
                     g = attr(c, "gamma", 1.05070102214813232421875);
            return g * select(x <= F32(0.0), a * (Exp(x) - F32(1.0)), x);
          },
          {f32});
    unary("Softplus",
          [](PrimExpr x, const OpCall&) {
            // log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|))
            return max(x, F32(0.0)) + Log(F32(1.0) + Exp(F32(0.0) - Abs(x)));
          },
          {f32});
    unary("Softsign", [](PrimExpr x, const OpCall&) { return x / (F32(1.0) + Abs(x)); }, {f32});
    unary("ThresholdedRelu",
          [attr](PrimExpr x, const OpCall& c) {
            return select(x > attr(c, "alpha", 1.0), x, F32(0.0));
          },
          {f32});
    unary("Sign",
          [](PrimExpr x, const OpCall&) {
            // NaN gives NaN (ne(x, x) holds only for it; an integer is never NaN)
            return select(x > Zero(x), C(x, 1),
                          select(x < Zero(x), C(x, -1),
                                 x.dtype().is_float() ? select(ne(x, x), x, Zero(x)) : Zero(x)));
          },
          {f32, i32});
    DataType b8 = DataType::Bool(), i8 = DataType::Int(8), i16 = DataType::Int(16),
             u8 = DataType::UInt(8), u16 = DataType::UInt(16), u32 = DataType::UInt(32);
    std::vector<DataType> ints = {i8, i16, i32, u8, u16, u32};
    unary("Floor", [](PrimExpr x, const OpCall&) { return Floor(x); }, {f32});
    unary("Ceil", [](PrimExpr x, const OpCall&) { return Ceil(x); }, {f32});
    unary("Round", [](PrimExpr x, const OpCall&) { return RoundEven(x); }, {f32});
    unary("IsNaN", [](PrimExpr x, const OpCall&) { return ne(x, x); }, {f32});
    // tilecore::ReplaceNaN (RecognizeActivations: Where(IsNaN(x), c, x))
    unary("ReplaceNaN",
          [](PrimExpr x, const OpCall& c) {
            return select(ne(x, x), F32(AttrFloat(c.attrs, "value", 0.0)), x);
          },
          {f32});
    unary("IsInf",
          [](PrimExpr x, const OpCall& c) {
            // x - x is NaN exactly for the infinities (and NaN)
            PrimExpr inf = ne(x - x, x - x) && eq(x, x);
            bool pos = AttrInt(c.attrs, "detect_positive", 1) != 0,
                 neg = AttrInt(c.attrs, "detect_negative", 1) != 0;
            if (pos && neg) return inf;
            if (pos) return inf && x > F32(0.0);
            if (neg) return inf && x < F32(0.0);
            return eq(x, x) && ne(x, x);
          },
          {f32});
    unary("Celu",
          [](PrimExpr x, const OpCall& c) {
            double a = AttrFloat(c.attrs, "alpha", 1.0);
            return max(x, F32(0.0)) + min(F32(0.0), F32(a) * (Exp(x * F32(1.0 / a)) - F32(1.0)));
          },
          {f32});
    unary("Sin", [](PrimExpr x, const OpCall&) { return SinCosOf(x).sin; }, {f32});
    unary("Cos", [](PrimExpr x, const OpCall&) { return SinCosOf(x).cos; }, {f32});
    unary("Tan",
          [](PrimExpr x, const OpCall&) {
            SinCos sc = SinCosOf(x);
            return sc.sin / sc.cos;
          },
          {f32});
    unary("Atan", [](PrimExpr x, const OpCall&) { return Atan(x); }, {f32});
    unary("Asin",
          [](PrimExpr x, const OpCall&) {
            // asin x = atan(x / sqrt(1 - x^2)); +-1 gives +-inf and atan(+-inf) = +-pi/2
            return Atan(x / call("tir.sqrt", {(F32(1.0) - x) * (F32(1.0) + x)}));
          },
          {f32});
    unary("Acos",
          [](PrimExpr x, const OpCall&) {
            // acos x = 2 atan(sqrt((1 - x) / (1 + x))), accurate near 1
            return F32(2.0) * Atan(call("tir.sqrt", {(F32(1.0) - x) / (F32(1.0) + x)}));
          },
          {f32});
    unary("Sinh",
          [](PrimExpr x, const OpCall&) {
            // the series near 0, where e^x - e^-x cancels
            PrimExpr x2 = x * x;
            PrimExpr series = x + x * x2 * Poly(x2, {1.0 / 6, 1.0 / 120, 1.0 / 5040, 1.0 / 362880});
            return select(Abs(x) < F32(0.5), series, F32(0.5) * (Exp(x) - Exp(F32(0.0) - x)));
          },
          {f32});
    unary("Cosh", [](PrimExpr x, const OpCall&) { return F32(0.5) * (Exp(x) + Exp(F32(0.0) - x)); },
          {f32});
    unary(
        "Asinh",
        [](PrimExpr x, const OpCall&) {
          PrimExpr a = Abs(x), a2 = a * a;
          PrimExpr series = a + a * a2 * Poly(a2, {-1.0 / 6, 3.0 / 40, -15.0 / 336, 105.0 / 3456});
          PrimExpr r = select(a < F32(0.125), series, LogHypot(a, 1.0));
          return select(x < F32(0.0), F32(0.0) - r, r);
        },
        {f32});
    unary("Acosh", [](PrimExpr x, const OpCall&) { return LogHypot(x, -1.0); }, {f32});
    unary("Atanh",
          [](PrimExpr x, const OpCall&) {
            PrimExpr x2 = x * x;
            PrimExpr series = x + x * x2 * Poly(x2, {1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9});
            return select(Abs(x) < F32(0.125), series,
                          F32(0.5) * Log((F32(1.0) + x) / (F32(1.0) - x)));
          },
          {f32});
    unary("Mish",
          [](PrimExpr x, const OpCall&) {
            PrimExpr sp = max(x, F32(0.0)) + Log(F32(1.0) + Exp(F32(0.0) - Abs(x)));
            return x * call("tir.tanh", {sp});
          },
          {f32});
    unary("Swish",
          [attr](PrimExpr x, const OpCall& c) {
            return x * call("tir.sigmoid", {x * attr(c, "alpha", 1.0)});
          },
          {f32});
    // tilecore::SiLU (RecognizeActivations: x * Sigmoid(x), as exporters write it)
    unary("SiLU", [](PrimExpr x, const OpCall&) { return x * call("tir.sigmoid", {x}); }, {f32});
    unary("Shrink",
          [attr](PrimExpr x, const OpCall& c) {
            PrimExpr l = attr(c, "lambd", 0.5), b = attr(c, "bias", 0.0);
            return select(x < F32(0.0) - l, x + b, select(x > l, x - b, F32(0.0)));
          },
          {f32});
    // EyeLike: only input 0's shape is read; ones where column - row == k
    m["EyeLike"] = {[](const std::vector<PrimExpr>& x, const OpCall& c) {
                      int64_t cols = c.outputs[0]->shape[1];
                      PrimExpr g = x.back();
                      PrimExpr on = eq(floormod(g, I32(cols)) - floordiv(g, I32(cols)),
                                       I32(AttrInt(c.attrs, "k", 0)));
                      DataType t = c.outputs[0]->dtype;
                      if (t.is_bool()) return on;
                      return select(on, make_const(t, 1), make_zero(t));
                    },
                    1,
                    1,
                    {},
                    true};
    // logic on bool
    m["And"] = {
        [](const std::vector<PrimExpr>& x, const OpCall&) { return x[0] && x[1]; }, 2, 2, {b8}};
    m["Or"] = {
        [](const std::vector<PrimExpr>& x, const OpCall&) { return x[0] || x[1]; }, 2, 2, {b8}};
    m["Xor"] = {
        [](const std::vector<PrimExpr>& x, const OpCall&) { return ne(x[0], x[1]); }, 2, 2, {b8}};
    unary("Not", [](PrimExpr x, const OpCall&) { return !x; }, {b8});
    // bit operations: narrow integers are widened to int32 (the front end's registers),
    // the result converted back exactly (masked to the width first)
    auto wide = [](const PrimExpr& x) {
      return x.dtype().bits() < 32 ? cast(DataType::Int(32), x) : x;
    };
    auto narrow = [](const PrimExpr& r, DataType t) {
      if (t.bits() == 32) return r;
      PrimExpr m = call("tir.bitwise_and", {r, I32((int64_t{1} << t.bits()) - 1)});
      if (t.is_int()) {  // sign-extend the low bits
        PrimExpr sign = I32(int64_t{1} << (t.bits() - 1));
        m = m - call("tir.bitwise_and", {m, sign}) * I32(2);
      }
      return cast(t, m);
    };
    auto bit = [wide, narrow](const char* f) {
      return [f, wide, narrow](const std::vector<PrimExpr>& x, const OpCall&) {
        Array<PrimExpr> a;
        for (const PrimExpr& e : x) a.push_back(wide(e));
        PrimExpr w = wide(x[0]);
        return narrow(PrimExpr(Call(w.dtype(), String(f), a)), x[0].dtype());
      };
    };
    m["BitwiseAnd"] = {bit("tir.bitwise_and"), 2, 2, ints};
    m["BitwiseOr"] = {bit("tir.bitwise_or"), 2, 2, ints};
    m["BitwiseXor"] = {bit("tir.bitwise_xor"), 2, 2, ints};
    m["BitwiseNot"] = {bit("tir.bitwise_not"), 1, 1, ints};
    m["BitShift"] = {
        [wide, narrow](const std::vector<PrimExpr>& x, const OpCall& c) {
          bool left = AttrStr(c.attrs, "direction", "") == "LEFT";
          DataType t = x[0].dtype();
          PrimExpr a = wide(x[0]), b = wide(x[1]);
          PrimExpr s = narrow(
              Call(a.dtype(), String(left ? "tir.shift_left" : "tir.shift_right"), {a, b}), t);
          // a shift by the type's width or more gives 0 (a signed right shift: the sign);
          // a negative amount counts as one (u32 amounts convert saturating, so stay large)
          PrimExpr amount = cast(DataType::Int(32), x[1]);
          PrimExpr ge = amount < I32(0) || amount >= I32(t.bits());
          PrimExpr big = make_zero(t);
          if (!left && t.is_int()) big = select(x[0] < make_zero(t), make_const(t, -1), big);
          return select(ge, big, s);
        },
        2, 2, ints};
    m["Mod"] = {[wide](const std::vector<PrimExpr>& x, const OpCall& c) {
                  bool fmod = AttrInt(c.attrs, "fmod", 0) != 0;
                  PrimExpr a = x[0], b = x[1];
                  if (a.dtype().is_float()) {
                    PrimExpr q = a / b;
                    PrimExpr r = a - b * (fmod ? Trunc(q) : Floor(q));
                    // a finite a over an infinite b (where b * 0 is NaN): a itself, or, for
                    // the floored mod with signs that differ, b (as numpy and Python)
                    PrimExpr finite_a = eq(a - a, a - a), inf_b = ne(b - b, b - b) && eq(b, b);
                    PrimExpr keep = fmod ? PrimExpr(eq(a, a))
                                         : (eq(a, F32(0.0)) || eq(a < F32(0.0), b < F32(0.0)));
                    return select(finite_a && inf_b, select(keep, a, b), r);
                  }
                  PrimExpr wa = wide(a), wb = wide(b);
                  PrimExpr r = fmod || a.dtype().is_uint() ? wa % wb : floormod(wa, wb);
                  return cast(a.dtype(), r);
                },
                2,
                2,
                {f32, i8, i16, i32, u8, u16, u32}};
    // Clip: min and max are optional scalar inputs (opset >= 11) or attributes (older)
    m["Clip"] = {[](const std::vector<PrimExpr>& x, const OpCall& c) {
                   PrimExpr r = x[0];
                   bool has_lo = c.inputs.size() > 1 && c.inputs[1].defined();
                   bool has_hi = c.inputs.size() > 2 && c.inputs[2].defined();
                   if (has_lo)
                     r = max(r, x[1]);
                   else if (HasAttr(c.attrs, "min"))
                     r = max(r, F32(AttrFloat(c.attrs, "min", 0)));
                   if (has_hi)
                     r = min(r, x[2]);
                   else if (HasAttr(c.attrs, "max"))
                     r = min(r, F32(AttrFloat(c.attrs, "max", 0)));
                   return r;
                 },
                 1,
                 3,
                 {f32}};
    auto copy = [](const std::vector<PrimExpr>& x, const OpCall&) { return x[0]; };
    for (const char* n : {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand"})
      m[n] = {copy, 1, 2, {}};
    m["Cast"] = m["CastLike"] = {[](const std::vector<PrimExpr>& x, const OpCall& c) {
                                   DataType to = c.outputs[0]->dtype;
                                   if (to.is_bool()) return ne(x[0], make_zero(x[0].dtype()));
                                   if (x[0].dtype() == to) return x[0];
                                   if (x[0].dtype().is_float() && !to.is_float()) {
                                     // ONNX truncates toward zero; TC1's conversion rounds to
                                     // nearest
                                     PrimExpr r = cast(to, x[0]);
                                     PrimExpr back = cast(x[0].dtype(), r);
                                     PrimExpr one = make_const(to, 1), zero = make_zero(to);
                                     return r - select(x[0] >= F32(0) && back > x[0], one, zero) +
                                            select(x[0] < F32(0) && back < x[0], one, zero);
                                   }
                                   return cast(to, x[0]);
                                 },
                                 1,
                                 1,
                                 {}};
    m["CastLike"].min_inputs = m["CastLike"].max_inputs = 2;
    return m;
  }();
  return ops;
}

}  // namespace

/*! \brief How many inputs take part in the element-wise computation (shape inputs do not). */
size_t DataInputs(const std::string& op, size_t n) {
  if (op == "Reshape" || op == "Expand" || op == "Squeeze" || op == "Unsqueeze" || op == "CastLike")
    return 1;
  return n;
}

namespace {

// --- int8 activations through a lookup table ----------------------------------------------
// A unary op between int8 tensors (int8 edges, docs/precision.md) has 256 possible inputs:
// its outputs, computed here in double and quantised, form the table of one tlut.

/*! \brief The op's value at x in double (the reference the table is built from). */
using LutFn = std::function<double(double x, const OpCall& call)>;

const std::map<std::string, LutFn>& LutOps() {
  static const std::map<std::string, LutFn> ops = [] {
    auto fa = [](const OpCall& c, const char* name, double dflt) {
      return double(float(AttrFloat(c.attrs, name, dflt)));
    };
    std::map<std::string, LutFn> m;
    m["Gelu"] = [](double x, const OpCall& c) {
      if (AttrStr(c.attrs, "approximate", "none") == "tanh")
        return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
      return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
    };
    m["Sigmoid"] = [](double x, const OpCall&) { return 1.0 / (1.0 + std::exp(-x)); };
    m["SiLU"] = [](double x, const OpCall&) { return x / (1.0 + std::exp(-x)); };
    m["Tanh"] = [](double x, const OpCall&) { return std::tanh(x); };
    m["Erf"] = [](double x, const OpCall&) { return std::erf(x); };
    m["Relu"] = [](double x, const OpCall&) { return x > 0 ? x : 0.0; };
    m["LeakyRelu"] = [fa](double x, const OpCall& c) {
      return x < 0 ? x * fa(c, "alpha", 0.01) : x;
    };
    m["HardSigmoid"] = [fa](double x, const OpCall& c) {
      return std::min(std::max(x * fa(c, "alpha", 0.2) + fa(c, "beta", 0.5), 0.0), 1.0);
    };
    m["HardSwish"] = [](double x, const OpCall&) {
      return x * std::min(std::max(x / 6.0 + 0.5, 0.0), 1.0);
    };
    m["Elu"] = [fa](double x, const OpCall& c) {
      return x < 0 ? fa(c, "alpha", 1.0) * (std::exp(x) - 1.0) : x;
    };
    m["Softplus"] = [](double x, const OpCall&) {
      return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
    };
    m["Softsign"] = [](double x, const OpCall&) { return x / (1.0 + std::abs(x)); };
    m["Abs"] = [](double x, const OpCall&) { return std::abs(x); };
    m["Neg"] = [](double x, const OpCall&) { return -x; };
    return m;
  }();
  return ops;
}

bool IsLutForm(const std::string& op, const Map<String, Any>& attrs, DataType in) {
  return in == DataType::Int(8) && LutOps().count(op) && HasAttr(attrs, "tc_y_scale");
}

/*! \brief table[i] = saturate(round_even(f(x_scale (int8(i) - x_zp)) / y_scale) + y_zp). */
std::vector<int8_t> LutTable(const OpCall& call) {
  const LutFn& f = LutOps().at(call.op_type);
  double xs = AttrFloat(call.attrs, "tc_x_scale", 1.0),
         ys = AttrFloat(call.attrs, "tc_y_scale", 1.0);
  int64_t xz = AttrInt(call.attrs, "tc_x_zero_point", 0),
          yz = AttrInt(call.attrs, "tc_y_zero_point", 0);
  std::vector<int8_t> table(256);
  for (int i = 0; i < 256; ++i) {
    double y = f(xs * double(int64_t(int8_t(uint8_t(i))) - xz), call) / ys;
    double q = std::isnan(y) ? 0.0 : std::nearbyint(std::clamp(y, -1e9, 1e9)) + double(yz);
    table[size_t(i)] = int8_t(std::clamp(q, -128.0, 127.0));
  }
  return table;
}

/*!
 * \brief The lookup-table form: the table is built in each core's L1 by 64 word stores,
 * then the int8 input streams through in tiles of up to 64 KiB, software-pipelined over
 * two slots (load of tile i + 1 while tile i is looked up in place and stored).
 */
PrimFunc LowerLut(const OpCall& call) {
  Params p = MakeParams(call);
  int64_t N = Numel(Shape(call.outputs[0]));
  Buffer X = View(p.in[0], {N}, "X"), Y = View(p.out[0], {N}, "Y");
  std::vector<int8_t> table = LookupTable(call);
  // tiles: at least four per core when the tensor allows, 64-byte multiples, one bank at most
  int64_t T = (N + call.cores * 4 - 1) / (call.cores * 4);
  T = std::clamp<int64_t>((T + 63) / 64 * 64, 4096, int64_t(arch::tc1::kL1BankBytes));
  T = std::min(T, std::max<int64_t>(N, 1));
  int64_t full = N / T, last = N % T;  // full tiles, and the shorter last one
  int64_t rotation = 0;
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    Buffer words = Local({64}, DataType::Int(32), "LutWords");
    Buffer L[2] = {Local({T}, DataType::Int(8), "L0"), Local({T}, DataType::Int(8), "L1")};
    BufferRegion table_region = LookupTableRegion(words);
    auto front = [&](PrimExpr t, int64_t slot) {
      return Seq({Intrin("tile.wait", {I32(2 + slot)}),  // the slot's last store has left
                  Intrin("tile.dma_copy", {Region(L[slot], {I32(0)}, {T}),
                                           Region(X, {t * I32(T)}, {T}), I32(slot)})});
    };
    auto back = [&](PrimExpr t, int64_t slot) {
      BufferRegion tile = Region(L[slot], {I32(0)}, {T});
      return Seq({Intrin("tile.wait", {I32(slot)}),
                  Intrin("tile.vec_lut", {tile, tile, table_region}),
                  Intrin("tile.dma_copy", {Region(Y, {t * I32(T)}, {T}), tile, I32(2 + slot)})});
    };
    Stmt work = ForEachItemPipelined(core, call.cores, full, &rotation, "t", front, back);
    Stmt rest = ForEachItem(core, call.cores, last ? 1 : 0, &rotation, "r", [&](PrimExpr) {
      BufferRegion tile = Region(L[0], {I32(0)}, {last});
      return Seq({Intrin("tile.wait", {I32(2)}),
                  DmaWait(tile, Region(X, {I32(full * T)}, {last}), 0),
                  Intrin("tile.vec_lut", {tile, tile, table_region}),
                  DmaWait(Region(Y, {I32(full * T)}, {last}), tile, 2)});
    });
    Stmt r = Seq({FillLookupTable(words, table), work, rest, Intrin("tile.wait", {I32(2)}),
                  Intrin("tile.wait", {I32(3)})});
    r = Allocate(L[1], Allocate(L[0], r));
    return Allocate(words, r);
  });
  return MakeFunc(call, p, body);
}

std::vector<int64_t> Padded(const std::vector<int64_t>& s, size_t rank) {
  if (s.size() >= rank) return s;  // a copy to another shape: read flat, never broadcast
  std::vector<int64_t> out(rank - s.size(), 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

/*!
 * \brief The output's dimensions merged where every input's broadcast pattern (whole or 1)
 * stays the same, and each input's extent over them (the output's, or 1 where it is
 * broadcast). Dimensions of extent 1 drop out.
 */
struct BroadcastDims {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> in;  // per input (empty when absent)
};

BroadcastDims MergeBroadcastDims(const std::vector<int64_t>& oshape,
                                 const std::vector<std::vector<int64_t>>& shapes) {
  BroadcastDims b;
  b.in.resize(shapes.size());
  std::vector<bool> last;
  for (size_t d = 0; d < oshape.size(); ++d) {
    if (oshape[d] == 1) continue;
    std::vector<bool> whole;
    for (const auto& sh : shapes) whole.push_back(!sh.empty() && sh[d] != 1);
    if (!b.dims.empty() && whole == last) {
      b.dims.back() *= oshape[d];
      for (size_t k = 0; k < shapes.size(); ++k)
        if (!shapes[k].empty()) b.in[k].back() *= whole[k] ? oshape[d] : 1;
      continue;
    }
    b.dims.push_back(oshape[d]);
    for (size_t k = 0; k < shapes.size(); ++k)
      if (!shapes[k].empty()) b.in[k].push_back(whole[k] ? oshape[d] : 1);
    last = whole;
  }
  return b;
}

/*!
 * \brief An element-wise op with an input broadcast along some dimensions (a per-channel
 * scale [1, C, 1, 1] over [1, C, H, W]: squeeze-excite's Mul, a norm's affine), as a loop
 * nest over the merged dimensions whose broadcast reads miss the loop variables of the
 * dimensions they are broadcast along — so EmitTileIntrinsics makes each tile one vector
 * command with a stride-0 view, where the flat walk's broadcast index (a division and a
 * remainder per element) stays front-end code. Tiles are boxes of the merged output: the
 * trailing dimensions whole up to kTile elements, then a chunk of the next (cut smaller,
 * down to kMinCoreTile elements, until there are as many boxes as cores); the leading
 * ones one index per tile. Broadcast inputs are loaded whole once per core, as the flat
 * walk does. Undefined when the op, the merged rank (at most 4: one command's nest) or
 * the inputs do not take this form.
 */
/*! \brief The merged dimensions when `op_type` with these input shapes (padded to the
 * output's rank; empty for an absent input) takes LowerBroadcastNest's form, else none. */
std::optional<BroadcastDims> NestForm(const std::string& op_type,
                                      const std::vector<int64_t>& oshape,
                                      const std::vector<std::vector<int64_t>>& shapes) {
  const EwOp& op = Ops().at(op_type);
  if (op.uses_index || op_type == "Clip" || op_type == "Gelu") return std::nullopt;
  const int64_t N = Numel(oshape);
  bool broadcast = false;
  for (const auto& sh : shapes) {
    if (sh.empty()) continue;
    if (sh.size() != oshape.size()) return std::nullopt;
    const int64_t n = Numel(sh);
    broadcast = broadcast || (n > 1 && n < N);
  }
  if (!broadcast || N == 0) return std::nullopt;
  BroadcastDims b = MergeBroadcastDims(oshape, shapes);
  if (b.dims.size() < 2 || b.dims.size() > 4) return std::nullopt;
  return b;
}

/*! \brief The bytes of the inputs smaller than the output (broadcast). */
int64_t BroadcastBytes(const std::vector<TensorSpec>& inputs, size_t nin, int64_t N) {
  int64_t bytes = 0;
  for (size_t i = 0; i < nin; ++i) {
    if (!inputs[i].defined() || inputs[i]->numel() == N) continue;
    bytes += inputs[i]->numel() * ((inputs[i]->dtype.bits() + 7) / 8);
  }
  return bytes;
}

std::optional<Stmt> LowerBroadcastNest(const OpCall& call, const Params& p, const EwOp& op,
                                       size_t nin) {
  std::vector<int64_t> oshape = Shape(call.outputs[0]);
  const int64_t N = Numel(oshape);
  std::vector<std::vector<int64_t>> shapes(nin);
  for (size_t i = 0; i < nin; ++i)
    if (call.inputs[i].defined()) shapes[i] = Padded(Shape(call.inputs[i]), oshape.size());
  std::optional<BroadcastDims> form = NestForm(call.op_type, oshape, shapes);
  if (!form) return std::nullopt;
  const BroadcastDims& b = *form;
  const int64_t k = static_cast<int64_t>(b.dims.size());
  // broadcast inputs beyond what L1 keeps whole: each tile loads its box of them
  const bool boxed = BroadcastBytes(call.inputs, nin, N) > kBroadcastBytes;
  // the box: dims after `s` whole (product P), a chunk of `cs` of dim s
  int64_t s = k - 1, P = 1;
  while (s > 0 && P * b.dims[s] <= kTile) P *= b.dims[s--];
  int64_t cs = std::max<int64_t>(1, std::min(b.dims[s], kTile / P));
  int64_t outer = 1;
  for (int64_t j = 0; j < s; ++j) outer *= b.dims[j];
  // no fewer tiles than cores where the chunks can be cut (down to kMinCoreTile elements a
  // tile), as the flat walk's: a transformer's [65, 128] plus a bias row was one tile
  if (outer < call.cores) {
    const int64_t chunks = (call.cores + outer - 1) / outer;
    cs = std::min(cs, std::max((b.dims[s] + chunks - 1) / chunks, (kMinCoreTile + P - 1) / P));
  }
  std::vector<int64_t> lead{outer, b.dims[s]};  // the DDR views: [outer, dim s, trailing..]
  for (int64_t j = s + 1; j < k; ++j) lead.push_back(b.dims[j]);
  DataType odt = call.outputs[0]->dtype;
  Buffer O = View(p.out[0], lead, "Yb");
  std::vector<Buffer> tiled_view(nin);
  for (size_t i = 0; i < nin; ++i)
    if (!shapes[i].empty() && Numel(shapes[i]) == N)
      tiled_view[i] = View(p.in[i], lead, "Xb" + std::to_string(i));
  int64_t rotation = 0;
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Buffer> whole(nin), whole_view(nin);
    std::vector<Stmt> pre;
    for (size_t i = 0; i < nin; ++i) {
      if (shapes[i].empty() || tiled_view[i].defined() || boxed) continue;
      const int64_t n = std::max<int64_t>(Numel(shapes[i]), 1);
      whole[i] = Local({n}, call.inputs[i]->dtype, "W" + std::to_string(i));
      whole_view[i] = View(whole[i], b.in[i], "Wb" + std::to_string(i));
      // (on the DMA-out engine beside the tiles' loads, as the flat walk's)
      pre.push_back(Intrin(
          "tile.dma_prefetch",
          {Region(whole[i], {I32(0)}, {n}),
           Region(View(p.in[i], {n}, "Xw" + std::to_string(i)), {I32(0)}, {n}), I32(kWholeEvent)}));
    }
    const bool wait_whole = !pre.empty();
    std::vector<Stmt> tiles;
    const int64_t full = b.dims[s] / cs, rest = b.dims[s] % cs;
    for (auto [chunks, c] :
         std::vector<std::pair<int64_t, int64_t>>{{full, cs}, {rest ? 1 : 0, rest}}) {
      if (chunks == 0) continue;
      const int64_t cbase = c == cs ? 0 : full * cs;
      tiles.push_back(ForEachItem(
          core, call.cores, outer * chunks, &rotation, "t",
          [&, chunks = chunks, c = c, cbase = cbase](PrimExpr t) {
            PrimExpr o = floordiv(t, I32(chunks));
            PrimExpr c0 = I32(cbase) + floormod(t, I32(chunks)) * I32(cs);
            std::vector<int64_t> box{c};  // the tile's shape: [c, trailing..]
            for (int64_t j = s + 1; j < k; ++j) box.push_back(b.dims[j]);
            std::vector<PrimExpr> at{o, c0};  // the tile's corner in the DDR views
            std::vector<int64_t> ext{1, c};
            for (int64_t j = s + 1; j < k; ++j) at.push_back(I32(0)), ext.push_back(b.dims[j]);
            std::vector<PrimExpr> zeros(box.size(), I32(0));
            // the leading dims' indices of this tile (in the merged output)
            std::vector<PrimExpr> lead_idx(s);
            PrimExpr rem = o;
            for (int64_t j = s - 1; j >= 0; --j) {
              lead_idx[j] = floormod(rem, I32(b.dims[j]));
              rem = floordiv(rem, I32(b.dims[j]));
            }
            std::vector<Buffer> tl(nin), bl(nin);
            std::vector<Stmt> st;
            for (size_t i = 0; i < nin; ++i) {
              if (tiled_view[i].defined()) {
                tl[i] = Local(box, call.inputs[i]->dtype, "L" + std::to_string(i));
                st.push_back(Intrin("tile.dma_copy", {Region(tl[i], zeros, box),
                                                      Region(tiled_view[i], at, ext), I32(0)}));
              } else if (boxed && !shapes[i].empty()) {  // its part of the tile's box
                std::vector<PrimExpr> from;
                std::vector<int64_t> n_from, n_box;
                for (int64_t j = 0; j < k; ++j) {
                  const bool along = b.in[i][j] != 1;
                  from.push_back(!along ? I32(0) : j < s ? lead_idx[j] : j == s ? c0 : I32(0));
                  const int64_t n = !along ? 1 : j < s ? 1 : j == s ? c : b.dims[j];
                  n_from.push_back(n);
                  if (j >= s) n_box.push_back(n);
                }
                bl[i] = Local(n_box, call.inputs[i]->dtype, "B" + std::to_string(i));
                st.push_back(
                    Intrin("tile.dma_copy",
                           {Region(bl[i], std::vector<PrimExpr>(n_box.size(), I32(0)), n_box),
                            Region(View(p.in[i], b.in[i], "Xv" + std::to_string(i)), from, n_from),
                            I32(0)}));
              }
            }
            // the tile's loads waited for once; the whole inputs with the first tile
            if (!st.empty()) st.push_back(Intrin("tile.wait", {I32(0)}));
            if (wait_whole) st.push_back(Intrin("tile.wait", {I32(kWholeEvent)}));
            Buffer Ol = Local(box, odt, "Ol");
            std::function<Stmt(size_t, std::vector<PrimExpr>)> nest =
                [&](size_t level, std::vector<PrimExpr> v) -> Stmt {
              if (level < box.size())
                return Loop("i" + std::to_string(level), box[level], [&](PrimExpr x) {
                  std::vector<PrimExpr> w = v;
                  w.push_back(x);
                  return nest(level + 1, w);
                });
              std::vector<PrimExpr> x;
              for (size_t i = 0; i < nin; ++i) {
                if (shapes[i].empty()) {
                  x.push_back(F32(0));
                } else if (tl[i].defined()) {
                  x.push_back(BufferLoad(tl[i], v));
                } else if (bl[i].defined()) {  // its box: the tile's indices where it is whole
                  std::vector<PrimExpr> idx;
                  for (int64_t j = s; j < k; ++j)
                    idx.push_back(b.in[i][j] != 1 ? v[j - s] : I32(0));
                  x.push_back(BufferLoad(bl[i], idx));
                } else {  // the merged dims it is whole along take the tile's indices
                  std::vector<PrimExpr> idx;
                  for (int64_t j = 0; j < k; ++j) {
                    const bool along = b.in[i][j] != 1;
                    PrimExpr here = j < s ? lead_idx[j] : j == s ? c0 + v[0] : v[j - s];
                    idx.push_back(along ? here : I32(0));
                  }
                  x.push_back(BufferLoad(whole_view[i], idx));
                }
              }
              PrimExpr y = op.fn(x, call);
              if (y.dtype() != odt) y = cast(odt, y);
              return BufferStore(Ol, y, v);
            };
            st.push_back(nest(0, {}));
            st.push_back(DmaWait(Region(O, at, ext), Region(Ol, zeros, box), 1));
            Stmt r = Allocate(Ol, Seq(st));
            for (size_t i = 0; i < nin; ++i) {
              if (tl[i].defined()) r = Allocate(tl[i], r);
              if (bl[i].defined()) r = Allocate(bl[i], r);
            }
            return r;
          }));
    }
    // (a core without a tile has its whole inputs' loads to wait for)
    if (wait_whole) tiles.push_back(Intrin("tile.wait", {I32(kWholeEvent)}));
    Stmt r = Seq({Seq(pre), Seq(tiles)});
    for (size_t i = 0; i < nin; ++i)
      if (whole[i].defined()) r = Allocate(whole[i], r);
    return r;
  });
  return body;
}

PrimFunc LowerElementwise(const OpCall& call) {
  if (IsLutForm(call.op_type, call.attrs, call.inputs[0]->dtype)) return LowerLut(call);
  Params p = MakeParams(call);
  const EwOp& op = Ops().at(call.op_type);
  std::vector<int64_t> oshape = Shape(call.outputs[0]);
  int64_t N = Numel(oshape);
  size_t rank = oshape.size();
  DataType odt = call.outputs[0]->dtype;
  size_t nin = DataInputs(call.op_type, call.inputs.size());
  Buffer O = View(p.out[0], {N}, "Yf");
  struct In {
    bool present, tiled;
    int64_t numel;
    Buffer view;
    std::vector<int64_t> shape;
  };
  std::vector<In> ins;
  for (size_t i = 0; i < nin; ++i) {
    In in{call.inputs[i].defined(), false, 0, Buffer(), {}};
    if (in.present) {
      in.shape = Padded(Shape(call.inputs[i]), rank);
      in.numel = Numel(in.shape);
      in.tiled = in.numel == N;
      in.view = View(p.in[i], {std::max<int64_t>(in.numel, 1)}, "X" + std::to_string(i));
    }
    ins.push_back(in);
  }
  // tiles of up to kTile elements; an op that reads or writes bool has no vector-engine
  // form (no tile command computes on bool), so its loop runs on the front end: in SIMD
  // below where it can, over no fewer tiles than cores, each of at least 256 elements (on
  // one core, in scalar code, four such loops of attention's NaN masks took 350 k cycles)
  bool has_bool = odt == DataType::Bool();
  for (size_t i = 0; i < nin; ++i)
    has_bool = has_bool || (call.inputs[i].defined() && call.inputs[i]->dtype == DataType::Bool());
  const int64_t per_core = (N + call.cores - 1) / call.cores;
  int64_t T = FlatTile(N, call.cores);
  // SIMD for it when every other operand and the result are 4 bytes wide (one lane count)
  // and each broadcast input is a single value; not for an op that reads the index
  // (a bool input only where the op tests it, not where it compares two bools as data)
  const bool tests_bools = call.op_type == "Where" || call.op_type == "Not" ||
                           call.op_type == "And" || call.op_type == "Or";
  // (ReplaceNaN selects on 4-byte lanes alone: no tile command selects, so it runs here too)
  bool simd_bool = (has_bool || call.op_type == "ReplaceNaN") && !op.uses_index;
  for (size_t i = 0; i < nin && simd_bool; ++i) {
    if (!call.inputs[i].defined()) continue;
    const DataType t = call.inputs[i]->dtype;
    simd_bool =
        (t != DataType::Bool() || tests_bools) && (t == DataType::Bool() || t.bits() == 32) &&
        (Numel(Padded(Shape(call.inputs[i]), rank)) == N || Numel(Shape(call.inputs[i])) == 1);
  }
  simd_bool = simd_bool && (odt == DataType::Bool() || odt.bits() == 32);
  if (simd_bool) T = std::min(T, std::max<int64_t>(per_core, 256));
  if (std::optional<Stmt> nest = LowerBroadcastNest(call, p, op, nin))
    return MakeFunc(call, p, *nest);
  bool is_copy =
      call.inputs[0]->dtype == odt &&
      (call.op_type == "Identity" || call.op_type == "Reshape" || call.op_type == "Flatten" ||
       call.op_type == "Squeeze" || call.op_type == "Unsqueeze" || call.op_type == "Expand");
  int64_t rotation = 0;
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    // broadcast inputs, whole, once per core, on the DMA-out engine (idle until the first
    // store) beside the first tile's loads on DMA-in (a constant from the DDR paid the DDR's
    // latency before them); waited for with a tile's loads, or here when no input is tiled
    std::vector<Buffer> whole(nin);
    std::vector<Stmt> pre;
    int64_t tiled_inputs = 0, whole_bytes = 0;
    for (size_t i = 0; i < nin; ++i) {
      if (ins[i].present && ins[i].tiled) ++tiled_inputs;
      if (!ins[i].present || ins[i].tiled) continue;
      whole_bytes += ins[i].numel * ins[i].view->dtype.lane_bytes();
      whole[i] =
          Local({std::max<int64_t>(ins[i].numel, 1)}, ins[i].view->dtype, "W" + std::to_string(i));
      pre.push_back(Intrin("tile.dma_prefetch",
                           {Region(whole[i], {I32(0)}, {ins[i].numel}),
                            Region(ins[i].view, {I32(0)}, {ins[i].numel}), I32(kWholeEvent)}));
    }
    const bool wait_whole = !pre.empty();
    if (wait_whole && tiled_inputs == 0) pre.push_back(Intrin("tile.wait", {I32(kWholeEvent)}));
    std::vector<Stmt> tiles;
    // Pipelined (the whole tiles of a core that has several, when their buffers twice over
    // fit L1): two slots of the loaded tiles and of the result, the next tile's loads
    // issued before this tile's compute and its store left running (ForEachItemPipelined),
    // so the DMA engines overlap the engine computing instead of taking turns with it. The
    // same commands on the same data: the same bits. A copy (no compute to overlap) and the
    // front end's SIMD loops stay one tile at a time.
    const int64_t temps = call.op_type == "Gelu" ? 4 : 1;  // (Gelu's four, the passes' one)
    // (each tile's buffer counted as 4-byte elements in whole L1 banks, as the planner places
    // one of over 4 KiB; a quarter of L1 left to the broadcast inputs' rounding and the DMA
    // state)
    const int64_t bank = int64_t(arch::tc1::kL1BankBytes);
    const int64_t tile_bytes = (T * 4 + bank - 1) / bank * bank;
    const bool pipelined =
        !is_copy && !simd_bool && tiled_inputs > 0 && N / T > call.cores &&
        (2 * (tiled_inputs + 1) + temps) * tile_bytes + whole_bytes <= call.l1_bytes * 3 / 4;
    // slot k's loaded tiles and result: allocated around the loop of whole tiles
    std::vector<std::vector<Buffer>> slot_in(2, std::vector<Buffer>(nin));
    std::vector<Buffer> slot_out(2);
    if (pipelined) {
      for (int k = 0; k < 2; ++k) {
        for (size_t i = 0; i < nin; ++i)
          if (ins[i].present && ins[i].tiled)
            slot_in[k][i] =
                Local({T}, ins[i].view->dtype, "L" + std::to_string(i) + "s" + std::to_string(k));
        slot_out[k] = Local({T}, odt, "Ols" + std::to_string(k));
      }
    }
    // slot -1: the tile's loads, compute and store, waited for; slot k >= 0: its loads only
    // (`front`), or its compute and store (the rest), on the slot's own DMA events
    for (auto [count, size] :
         std::vector<std::pair<int64_t, int64_t>>{{N / T, T}, {N % T ? 1 : 0, N % T}}) {
      int64_t base = size == T ? 0 : (N / T) * T;
      auto tile = [&, size = size, base = base](PrimExpr t, int slot, bool front) -> Stmt {
        PrimExpr start = I32(base) + t * I32(T);
        std::vector<Buffer> tl(nin);
        std::vector<Stmt> s;
        const int load_event = slot < 0 ? 0 : kSlotLoadEvent + slot;
        // the tile's loads issued together, then one wait (each waited for on its own
        // paid the level's latency once per input)
        for (size_t i = 0; i < nin; ++i) {
          if (!ins[i].present || !ins[i].tiled) continue;
          tl[i] = slot < 0 ? Local({size}, ins[i].view->dtype, "L" + std::to_string(i))
                           : slot_in[size_t(slot)][i];
          if (slot < 0 || front)
            s.push_back(
                Intrin("tile.dma_copy", {Region(tl[i], {I32(0)}, {size}),
                                         Region(ins[i].view, {start}, {size}), I32(load_event)}));
        }
        if (front) return Seq(s);
        if (tiled_inputs > 0) s.push_back(Intrin("tile.wait", {I32(load_event)}));
        if (tiled_inputs > 0 && wait_whole) s.push_back(Intrin("tile.wait", {I32(kWholeEvent)}));
        // (the slot's result tile is free once its store two tiles before has run)
        if (slot >= 0) s.push_back(Intrin("tile.wait", {I32(kSlotStoreEvent + slot)}));
        Buffer Ol;
        std::vector<Buffer> gelu_tmp;  // Gelu's and the passes' temporaries, one tile each
        if (is_copy && tl[0].defined()) {
          Ol = tl[0];
        } else {
          Ol = slot < 0 ? Local({size}, odt, "Ol") : slot_out[size_t(slot)];
          auto gather = [&](PrimExpr i) {
            std::vector<PrimExpr> x;
            for (size_t k = 0; k < nin; ++k) {
              if (!ins[k].present) {
                x.push_back(F32(0));
              } else if (ins[k].tiled) {
                x.push_back(BufferLoad(tl[k], {i}));
              } else {
                // broadcast index of the flat output index start + i
                PrimExpr g = start + i, idx = I32(0);
                int64_t ostride = 1, istride = 1;
                for (size_t d = rank; d-- > 0;) {
                  if (ins[k].shape[d] != 1)
                    idx = idx + floormod(floordiv(g, I32(ostride)), I32(oshape[d])) * I32(istride);
                  ostride *= oshape[d];
                  istride *= ins[k].shape[d];
                }
                x.push_back(BufferLoad(whole[k], {idx}));
              }
            }
            return x;
          };
          if (call.op_type == "Clip") {
            // two passes, max then min, so each is one vector command (a nested
            // min(max(x, lo), hi) is not one the engine has)
            bool has_lo = nin > 1 && ins[1].present, has_hi = nin > 2 && ins[2].present;
            auto bound = [&](const std::vector<PrimExpr>& x, bool from_input, size_t k,
                             const char* attr) -> std::optional<PrimExpr> {
              if (from_input) return x[k];
              if (HasAttr(call.attrs, attr)) return F32(AttrFloat(call.attrs, attr, 0));
              return std::nullopt;
            };
            s.push_back(Loop("i", size, [&](PrimExpr i) {
              std::vector<PrimExpr> x = gather(i);
              auto lo = bound(x, has_lo, 1, "min");
              return BufferStore(Ol, lo ? max(x[0], *lo) : x[0], {i});
            }));
            s.push_back(Loop("i", size, [&](PrimExpr i) {
              std::vector<PrimExpr> x = gather(i);
              auto hi = bound(x, has_hi, 2, "max");
              PrimExpr cur = BufferLoad(Ol, {i});
              return BufferStore(Ol, hi ? min(cur, *hi) : cur, {i});
            }));
          } else if (std::vector<ActivationPass> passes =
                         ActivationPasses(call.op_type, call.attrs);
                     !passes.empty() && tl[0].defined() && odt == DataType::Float(32)) {
            Buffer T = Local({size}, DataType::Float(32), "T");
            gelu_tmp.push_back(T);
            for (size_t k = 0; k < passes.size(); ++k) {
              const Buffer& dst = k + 1 == passes.size() ? Ol : T;
              s.push_back(Loop("i", size, [&](PrimExpr i) {
                return BufferStore(dst, passes[k](BufferLoad(tl[0], {i}), BufferLoad(T, {i})), {i});
              }));
            }
          } else if (call.op_type == "Gelu" && tl[0].defined()) {
            // one vector command per pass over the tile (the one-expression form is a
            // scalar loop: erf's polynomial and select have no single engine command)
            std::vector<Buffer> tmp;
            auto local = [&](const char* name) {
              tmp.push_back(Local({size}, DataType::Float(32), name));
              return tmp.back();
            };
            auto pass = [&](const Buffer& dst, const std::function<PrimExpr(PrimExpr)>& v) {
              s.push_back(Loop("i", size, [&](PrimExpr i) { return BufferStore(dst, v(i), {i}); }));
            };
            auto ld = [](const Buffer& b) {
              return [b](PrimExpr i) { return BufferLoad(b, {i}); };
            };
            // constants rounded to f32 first: the engine's scalar operands are f32
            auto F32f = [](double v) { return F32(static_cast<double>(static_cast<float>(v))); };
            const Buffer& X = tl[0];
            auto x = ld(X), o = ld(Ol);
            if (AttrStr(call.attrs, "approximate", "none") == "tanh") {
              // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
              Buffer T = local("T");
              auto t = ld(T);
              pass(T, [&](PrimExpr i) { return x(i) * x(i); });
              pass(T, [&](PrimExpr i) { return t(i) * x(i); });
              pass(T, [&](PrimExpr i) { return t(i) * F32f(0.044715); });
              pass(T, [&](PrimExpr i) { return t(i) + x(i); });
              pass(T, [&](PrimExpr i) { return t(i) * F32f(std::sqrt(2.0 / M_PI)); });
              pass(T, [&](PrimExpr i) {
                return ir::Call(DataType::Float(32), String("tir.tanh"), {t(i)});
              });
              pass(T, [&](PrimExpr i) { return t(i) + F32f(1.0); });
              pass(T, [&](PrimExpr i) { return t(i) * x(i); });
              pass(Ol, [&](PrimExpr i) { return t(i) * F32f(0.5); });
            } else {
              // 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x + a erf(a) / sqrt 2 with a = |x| / sqrt 2,
              // erf(a) = 1 - p(t) exp(-a^2) by Abramowitz and Stegun 7.1.26 as in Erf above.
              // Negation is exact in every rounding, so -a^2 is a times -a (before |a|)
              // and the polynomial is computed negated (its coefficients negated): the
              // same bits without the two passes that multiplied by -1.
              Buffer A = local("A"), T = local("T"), P = local("P"), E = local("E");
              auto a = ld(A), t = ld(T), q = ld(P), e = ld(E);
              pass(A, [&](PrimExpr i) { return x(i) * F32f(M_SQRT1_2); });
              pass(T, [&](PrimExpr i) { return a(i) * F32f(-1.0); });
              pass(E, [&](PrimExpr i) { return a(i) * t(i); });  // -a^2
              pass(A, [&](PrimExpr i) { return max(a(i), t(i)); });
              pass(T, [&](PrimExpr i) { return a(i) * F32f(0.3275911); });
              pass(T, [&](PrimExpr i) { return t(i) + F32f(1.0); });
              pass(T, [&](PrimExpr i) {
                return ir::Call(DataType::Float(32), String("tir.recip"), {t(i)});
              });
              pass(P, [&](PrimExpr i) { return t(i) * F32f(-1.061405429); });  // -p(t)
              for (double c : {-1.453152027, 1.421413741, -0.284496736, 0.254829592}) {
                pass(P, [&](PrimExpr i) { return q(i) + F32f(-c); });
                pass(P, [&](PrimExpr i) { return q(i) * t(i); });
              }
              pass(E, [&](PrimExpr i) { return Exp(e(i)); });
              pass(P, [&](PrimExpr i) { return q(i) * e(i); });
              pass(P, [&](PrimExpr i) { return q(i) + F32f(1.0); });
              pass(P, [&](PrimExpr i) { return q(i) * a(i); });
              pass(P, [&](PrimExpr i) { return q(i) * F32f(M_SQRT1_2); });
              pass(Ol, [&](PrimExpr i) { return x(i) * F32f(0.5); });
              pass(Ol, [&](PrimExpr i) { return o(i) + q(i); });
            }
            gelu_tmp = tmp;
          } else if (simd_bool) {
            // an op on bool: 4-byte lanes on the front end's SIMD (8 a register): the bool
            // tiles widened to i32 by the vector engine, the op's value computed lane-wise
            // (a bool input as `w != 0`), a bool result stored as 0/1 in i32 and narrowed
            std::vector<Buffer> wide(nin);
            const DataType i32 = DataType::Int(32);
            for (size_t k = 0; k < nin; ++k) {
              if (!tl[k].defined() || tl[k]->dtype != DataType::Bool()) continue;
              wide[k] = Local({size}, i32, "B" + std::to_string(k));
              gelu_tmp.push_back(wide[k]);
              s.push_back(Loop("i", size, [&](PrimExpr i) {
                return BufferStore(wide[k], Cast(i32, BufferLoad(tl[k], {i})), {i});
              }));
            }
            Buffer R = odt == DataType::Bool() ? Local({size}, i32, "R") : Ol;
            if (R.get() != Ol.get()) gelu_tmp.push_back(R);
            s.push_back(Loop(
                "i", I32(size),
                [&](PrimExpr i) {
                  std::vector<PrimExpr> x = gather(i);
                  for (size_t k = 0; k < nin; ++k) {
                    if (wide[k].defined()) {  // (Where's condition: compared with 0 by it)
                      x[k] = call.op_type == "Where" && k == 0
                                 ? PrimExpr(BufferLoad(wide[k], {i}))
                                 : ne(BufferLoad(wide[k], {i}), I32(0));
                    } else if (ins[k].present && !ins[k].tiled &&
                               whole[k]->dtype == DataType::Bool()) {
                      x[k] = ne(Cast(i32, x[k]), I32(0));
                    }
                  }
                  // each load bound once (the SIMD code evaluates every use of an
                  // expression again: ReplaceNaN's x three times)
                  std::vector<std::pair<Var, PrimExpr>> bound;
                  for (size_t k = 0; k < nin; ++k) {
                    if (!x[k].as<BufferLoadNode>()) continue;
                    Var xv("x" + std::to_string(k), x[k].dtype());
                    bound.emplace_back(xv, x[k]);
                    x[k] = xv;
                  }
                  PrimExpr v = op.fn(x, call);
                  Stmt store;
                  if (R.get() != Ol.get()) {
                    store = BufferStore(R, Select(v, I32(1), I32(0)), {i});
                  } else {
                    if (v.dtype() != odt) v = cast(odt, v);
                    store = BufferStore(Ol, v, {i});
                  }
                  for (auto it = bound.rbegin(); it != bound.rend(); ++it)
                    store = LetStmt(it->first, it->second, store);
                  return store;
                },
                ForKind::kVectorized));
            if (R.get() != Ol.get())
              s.push_back(Loop("i", size, [&](PrimExpr i) {
                return BufferStore(Ol, Cast(DataType::Bool(), BufferLoad(R, {i})), {i});
              }));
          } else {
            s.push_back(Loop("i", size, [&](PrimExpr i) {
              std::vector<PrimExpr> x = gather(i);
              if (op.uses_index) x.push_back(start + i);
              PrimExpr v = op.fn(x, call);
              if (v.dtype() != odt) v = cast(odt, v);
              return BufferStore(Ol, v, {i});
            }));
          }
        }
        if (slot < 0)
          s.push_back(DmaWait(Region(O, {start}, {size}), Region(Ol, {I32(0)}, {size}), 1));
        else
          s.push_back(
              Intrin("tile.dma_copy", {Region(O, {start}, {size}), Region(Ol, {I32(0)}, {size}),
                                       I32(kSlotStoreEvent + slot)}));
        Stmt r = Seq(s);
        for (const Buffer& b : gelu_tmp) r = Allocate(b, r);
        if (slot >= 0) return r;
        if (!(is_copy && tl[0].defined())) r = Allocate(Ol, r);
        for (size_t i = 0; i < nin; ++i) {
          if (tl[i].defined()) r = Allocate(tl[i], r);
        }
        return r;
      };
      if (pipelined && size == T) {
        Stmt loop = ForEachItemPipelined(
            core, call.cores, count, &rotation, "t",
            [&](PrimExpr t, int64_t k) { return tile(t, int(k), true); },
            [&](PrimExpr t, int64_t k) { return tile(t, int(k), false); });
        // (every store done before the kernel, or the group's next member, goes on)
        loop = Seq({loop, Intrin("tile.wait", {I32(kSlotStoreEvent)}),
                    Intrin("tile.wait", {I32(kSlotStoreEvent + 1)})});
        for (int k = 0; k < 2; ++k) {
          loop = Allocate(slot_out[size_t(k)], loop);
          for (size_t i = 0; i < nin; ++i)
            if (slot_in[size_t(k)][i].defined()) loop = Allocate(slot_in[size_t(k)][i], loop);
        }
        tiles.push_back(loop);
      } else {
        tiles.push_back(ForEachItem(core, call.cores, count, &rotation, "t",
                                    [&](PrimExpr t) { return tile(t, -1, false); }));
      }
    }
    // (a core without a tile has its broadcast loads to wait for)
    if (wait_whole && tiled_inputs > 0) tiles.push_back(Intrin("tile.wait", {I32(kWholeEvent)}));
    Stmt r = Seq({Seq(pre), Seq(tiles)});
    for (size_t i = 0; i < nin; ++i)
      if (whole[i].defined()) r = Allocate(whole[i], r);
    return r;
  });
  return MakeFunc(call, p, body);
}

std::string CheckElementwise(const std::string& op_type, const Map<String, Any>& attrs,
                             const std::vector<TensorSpec>& inputs) {
  const EwOp& op = Ops().at(op_type);
  if (static_cast<int>(inputs.size()) < op.min_inputs ||
      static_cast<int>(inputs.size()) > op.max_inputs)
    return op_type + ": unexpected number of inputs " + std::to_string(inputs.size());
  size_t nin = DataInputs(op_type, inputs.size());
  if (!inputs[0].defined()) return op_type + ": input 0 is missing";
  if (IsLutForm(op_type, attrs, inputs[0]->dtype)) {
    if (!(AttrFloat(attrs, "tc_x_scale", 0) > 0) || !(AttrFloat(attrs, "tc_y_scale", 0) > 0))
      return op_type + ": the int8 form needs positive tc_x_scale and tc_y_scale";
    return "";
  }
  std::vector<TensorSpec> typed;
  for (size_t i = op_type == "Where" ? 1 : 0; i < nin; ++i) typed.push_back(inputs[i]);
  if (!op.dtypes.empty()) {
    std::string why = CheckDTypes(typed, op.dtypes, op_type);
    if (!why.empty()) return why;
    for (const TensorSpec& t : typed)
      if (t.defined() && t->dtype != typed[0]->dtype)
        return op_type + ": inputs of different dtypes";
  } else {
    for (size_t i = 0; i < nin; ++i) {
      DataType t = inputs[i]->dtype;
      if (t.bits() > 32 || t.lanes() != 1) return op_type + ": input dtype " + t.str();
    }
  }
  for (const TensorSpec& t : inputs)
    if (t.defined() && t->dtype.is_narrow_float())
      return op_type + ": " + t->dtype.str() +
             " is a storage type TC1 has no form of (the host converts it)";
  if (op_type == "Where" && !inputs[0]->dtype.is_bool()) return "Where: condition must be bool";
  if (op_type == "Cast") {
    // the output dtype is the attribute `to` (ONNX TensorProto codes)
    int64_t to = AttrInt(attrs, "to", 1);
    if (to == 7 || to == 11 || to == 13) return "Cast: to a 64-bit type (TC1 has no 64-bit types)";
    if (to == 10 || to == 16 || inputs[0]->dtype.bits() == 16)
      return "Cast: float16 and bfloat16 are not taken by the npu strategy yet";
    if (to >= 17 && to <= 26)
      return "Cast: to the ONNX type " + std::to_string(to) +
             " (float8, float4, int4 or int2: storage types TC1 has no form of; the host "
             "converts them)";
    if (to != 1 && to != 2 && to != 3 && to != 4 && to != 5 && to != 6 && to != 9 && to != 12)
      return "Cast: to the ONNX type " + std::to_string(to) +
             ", which the npu strategy does not produce";
  }
  if (op_type == "EyeLike") {
    if (inputs[0]->shape.size() != 2) return "EyeLike: input must be 2-D";
    int64_t to = AttrInt(attrs, "dtype", 0);  // 0: the input's dtype
    if (to == 7 || to == 11 || to == 13)
      return "EyeLike: to a 64-bit type (TC1 has no 64-bit types)";
    if (to != 0 && to != 1 && to != 2 && to != 3 && to != 4 && to != 5 && to != 6 && to != 9 &&
        to != 12)
      return "EyeLike: to the ONNX type " + std::to_string(to) +
             ", which the npu strategy does not produce";
    if (to == 0 && inputs[0]->dtype.is_float() && inputs[0]->dtype.bits() != 32)
      return "EyeLike: input dtype " + inputs[0]->dtype.str();
  }
  if (op_type == "CastLike") {
    // the output dtype is input 1's (only its dtype is read)
    DataType to = inputs[1].defined() ? inputs[1]->dtype : DataType::Void();
    if (to.bits() == 64) return "CastLike: to a 64-bit type (TC1 has no 64-bit types)";
    if (to.bits() == 16 || inputs[0]->dtype.bits() == 16)
      return "CastLike: float16 and bfloat16 are not taken by the npu strategy yet";
    if (to.lanes() != 1 ||
        !(to.is_bool() || to.is_int() || to.is_uint() || (to.is_float() && to.bits() == 32)))
      return "CastLike: to " + to.str() + ", which the npu strategy does not produce";
  }
  // an input smaller than the output is broadcast from one whole copy in L1
  size_t rank = 0;
  for (size_t i = 0; i < nin; ++i)
    if (inputs[i].defined()) rank = std::max(rank, inputs[i]->shape.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t i = 0; i < nin; ++i) {
    if (!inputs[i].defined()) continue;
    auto s = Padded(Shape(inputs[i]), rank);
    if (s.size() != rank) continue;
    for (size_t d = 0; d < rank; ++d) {
      if (s[d] != 1 && out[d] != 1 && s[d] != out[d])
        return op_type + ": input shapes do not broadcast";
      if (s[d] != 1) out[d] = s[d];
    }
  }
  const int64_t bytes = BroadcastBytes(inputs, nin, Numel(out));
  if (bytes > kBroadcastBytes) {
    std::vector<std::vector<int64_t>> shapes(nin);
    for (size_t i = 0; i < nin; ++i)
      if (inputs[i].defined()) shapes[i] = Padded(Shape(inputs[i]), rank);
    if (!NestForm(op_type, out, shapes))  // (the nest loads each tile's box of them)
      return op_type + ": broadcast inputs of " + std::to_string(bytes) + " bytes exceed the " +
             std::to_string(kBroadcastBytes) + " bytes the strategy keeps in L1";
  }
  return "";
}

}  // namespace

/*! \brief The output element count is only known at lowering: broadcast inputs must fit L1 there.
 */
PrimFunc LowerElementwiseChecked(const OpCall& call) {
  std::vector<int64_t> oshape = Shape(call.outputs[0]);
  size_t nin = DataInputs(call.op_type, call.inputs.size());
  const int64_t bytes = BroadcastBytes(call.inputs, nin, Numel(oshape));
  std::vector<std::vector<int64_t>> shapes(nin);
  for (size_t i = 0; i < nin; ++i)
    if (call.inputs[i].defined()) shapes[i] = Padded(Shape(call.inputs[i]), oshape.size());
  if (bytes > kBroadcastBytes && !NestForm(call.op_type, oshape, shapes))
    TILECORE_THROW(ValueError) << "LowerOp(" << call.op_type << "): broadcast inputs of " << bytes
                               << " bytes exceed the " << kBroadcastBytes
                               << " bytes the strategy keeps in L1";
  return LowerElementwise(call);
}

bool HasLookupTable(const std::string& op) { return LutOps().count(op) != 0; }

std::vector<int8_t> LookupTable(const OpCall& call) { return LutTable(call); }

Stmt FillLookupTable(const Buffer& words, const std::vector<int8_t>& table) {
  std::vector<Stmt> fill;
  for (int w = 0; w < 64; ++w) {
    uint32_t v = 0;
    for (int b = 0; b < 4; ++b) v |= uint32_t(uint8_t(table[size_t(w * 4 + b)])) << (8 * b);
    fill.push_back(BufferStore(words, I32(int32_t(v)), {I32(w)}));
  }
  return Seq(fill);
}

void PlaceAfterFirstLoads(std::vector<Stmt>* items, const Stmt& fill) {
  size_t at = 0;
  for (; at < items->size(); ++at) {
    const auto* e = (*items)[at].as<EvaluateNode>();
    const auto* c = e ? e->value.as<CallNode>() : nullptr;
    if (!c || !IsDmaCommand(c->op.view())) break;
  }
  items->insert(items->begin() + static_cast<std::ptrdiff_t>(at), fill);
}

OpCall LutCall(const Map<String, Any>& attrs) {
  OpCall c;
  c.op_type = AttrStr(attrs, "tc_lut", "");
  const std::string prefix = "tc_lut.";
  for (const auto& [k, v] : attrs.items()) {
    std::string key = k;
    if (key.rfind(prefix, 0) == 0) c.attrs.Set(String(key.substr(prefix.size())), v);
  }
  return c;
}

std::vector<int8_t> FusedLookupTable(const Map<String, Any>& attrs) {
  if (!HasAttr(attrs, "tc_lut")) return {};
  return LookupTable(LutCall(attrs));
}

std::string CheckLut(const std::string& op, const Map<String, Any>& attrs) {
  if (!HasAttr(attrs, "tc_lut")) return "";
  OpCall c = LutCall(attrs);
  if (!HasLookupTable(c.op_type))
    return op + ": tc_lut `" + c.op_type + "` has no lookup-table form";
  if (!GetMatrixPrecision(attrs).int8() || !HasAttr(attrs, "tc_y_scale"))
    return op + ": tc_lut needs an int8 output (tc_y_scale)";
  double xs = AttrFloat(c.attrs, "tc_x_scale", 0), ys = AttrFloat(c.attrs, "tc_y_scale", 0);
  if (!(xs > 0) || !(ys > 0) || !std::isfinite(xs) || !std::isfinite(ys))
    return op + ": tc_lut needs positive finite tc_lut.tc_x_scale and tc_lut.tc_y_scale";
  return "";
}

BufferRegion LookupTableRegion(const Buffer& words) {
  Buffer lut(words->data, DataType::Int(8), {I32(256)}, Array<PrimExpr>(), I32(0), words->scope,
             String("Lut"));
  return Region(lut, {I32(0)}, {256});
}

}  // namespace detail

// The ops with a lookup-table form, for the driver's int8 edges (compiler/int8_edges.py).
TILECORE_REGISTER_GLOBAL("compiler.LookupTableOps").set_body_typed([]() {
  Array<String> names;
  for (const auto& [name, fn] : detail::LutOps()) names.push_back(String(name));
  return names;
});

TILECORE_FFI_STATIC_INIT_BLOCK({
  for (const auto& [name, op] : detail::Ops()) {
    int data = static_cast<int>(detail::DataInputs(name, 8));
    RegisterStrategy(name, Strategy{detail::CheckElementwise, detail::LowerElementwiseChecked,
                                    [](const OpCall&, int) { return std::string("onnx"); },
                                    data == 8 ? -1 : data});
  }
});

}  // namespace compiler
}  // namespace tilecore
