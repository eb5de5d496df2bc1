/*
 * src/compiler/host_resize.cc — the host kernel of Resize (opsets 10 to 19) and the
 * deprecated Upsample: every mode ONNX defines (nearest with its four nearest modes,
 * linear, cubic with cubic_coeff_a and exclude_outside, antialias for linear and cubic),
 * every coordinate transformation (half_pixel, half_pixel_symmetric, pytorch_half_pixel,
 * align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize with its
 * extrapolation value), `axes` and keep_aspect_ratio_policy, in any dtype.
 *
 * Roi, scales and sizes are compile-time attributes (the driver folds constant inputs
 * into the attributes of those names) or inputs the kernel reads when it runs (then they
 * are params, after X). The output shape is static: the kernel computes the output sizes
 * from the values as ONNX does (floor(in * scale); sizes, stretched or kept to the aspect
 * ratio, not_larger / not_smaller rounding half up) and fails the run naming the values
 * when they give another shape than the one it was compiled for, never a different one.
 * Rationale: scales or sizes computed while the model runs (a Shape -> Mul -> Resize chain
 * of a detector's neck) would otherwise keep the whole model from compiling.
 *
 * Nearest is one gather in the input's dtype: per resized axis a table of source indices
 * (and extrapolated flags) computed when the kernel runs, then every output element reads
 * its source element. Linear and cubic are separable: one pass per resized axis, in the
 * order of `axes`, in float64 (intermediates in ping-pong float64 buffers), each pass a
 * table of taps per output index (source indices clamped to the axis, which is ONNX's edge
 * padding, and weights) computed when the kernel runs, as ONNX's reference computes them
 * (onnx/reference/ops/op_resize.py). Antialias stretches the filter by 1 / scale when
 * downscaling, so its tap count depends on the scale: the tables have room for the most
 * taps a scale giving the compiled output length can ask for. The result is rounded once,
 * to the output dtype (integers half to even and saturated, as the reference does).
 *
 * Opsets up to 10 (Resize-10, Upsample) have no coordinate_transformation_mode or
 * nearest_mode: asymmetric coordinates, and nearest takes ceil(x) when downscaling and
 * floor(x) otherwise, x = y / scale divided in float32, as ONNX Runtime does (the rule is
 * its own: ONNX never gave one).
 */
#include <algorithm>
#include <cmath>
#include <set>
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
const DataType kI32 = DataType::Int(32);

PrimExpr D64(double v) { return FloatImm(kF64, v); }
PrimExpr L64(int64_t v) { return IntImm(kI64, v); }

/*! \brief floor(x) of a float64 as float64 (the c target converts to int rounding to nearest). */
PrimExpr FloorF(PrimExpr x) {
  PrimExpr r = cast(kF64, cast(kI64, x));
  return select(r > x, r - D64(1), r);
}
PrimExpr CeilF(PrimExpr x) {
  PrimExpr r = cast(kF64, cast(kI64, x));
  return select(r < x, r + D64(1), r);
}
PrimExpr AbsF(PrimExpr x) { return select(x < D64(0), D64(0) - x, x); }
PrimExpr ClampI(PrimExpr v, int64_t hi) {
  return select(v < I32(0), I32(0), select(v > I32(hi), I32(hi), v));
}

std::string FloatsFormat(int64_t k) {
  std::string f = "(";
  for (int64_t j = 0; j < k; ++j) f += j ? ", %g" : "%g";
  return f + ")";
}

/*! \brief What a Resize or Upsample node asks: its modes, and where each value comes from. */
struct Form {
  std::string op, mode, coord, nearest, policy;
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude = false, antialias = false, crop = false;
  int64_t rank = 0;
  /*! \brief The axes the values name, in their order (all axes when `axes` is absent). */
  std::vector<int64_t> axes;
  /*! \brief Compile-time values (attributes); empty when not given or read at run time. */
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  /*! \brief The input each value is read from when the kernel runs, or -1. */
  int scales_in = -1, sizes_in = -1, roi_in = -1;

  bool has_scales() const { return !scales.empty() || scales_in >= 0; }
  /*! \brief Inputs that are params: X and the inputs read when the kernel runs. */
  int64_t params() const { return 1 + std::max({0, scales_in, sizes_in, roi_in}); }
};

bool Given(const std::vector<TensorSpec>& in, int i) {
  return i >= 0 && static_cast<size_t>(i) < in.size() && in[i].defined() && in[i]->numel() > 0;
}

/*! \brief Fills `f` from the node; "" or the reason the kernel cannot take it. */
std::string ReadForm(const std::string& op, const Map<String, Any>& attrs,
                     const std::vector<TensorSpec>& in, Form* f) {
  bool upsample = op == "Upsample";
  std::string w = NeedInputs(op, in, 1, upsample ? 2 : 4);
  if (!w.empty()) return w;
  f->op = op;
  f->rank = static_cast<int64_t>(in[0]->shape.size());
  if (f->rank == 0) return op + ": X is a scalar";
  int64_t opset = AttrInt(attrs, "_opset", upsample ? 9 : 19);
  bool old = upsample || opset <= 10;
  f->mode = AttrStr(attrs, "mode", "nearest");
  if (f->mode == "bilinear") f->mode = "linear";
  if (f->mode != "nearest" && f->mode != "linear" && f->mode != "cubic")
    return op + ": mode `" + f->mode + "` (expected nearest, linear or cubic)";
  if (f->mode != "nearest" && in[0]->dtype.is_bool())
    return op + ": " + f->mode + " interpolation of a bool tensor";
  f->coord = old ? "asymmetric" : AttrStr(attrs, "coordinate_transformation_mode", "half_pixel");
  static const std::set<std::string> kCoords = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
  if (!kCoords.count(f->coord)) return op + ": coordinate_transformation_mode `" + f->coord + "`";
  f->nearest = old ? "simple" : AttrStr(attrs, "nearest_mode", "round_prefer_floor");
  if (f->nearest != "simple" && f->nearest != "round_prefer_floor" &&
      f->nearest != "round_prefer_ceil" && f->nearest != "floor" && f->nearest != "ceil")
    return op + ": nearest_mode `" + f->nearest + "`";
  f->policy = AttrStr(attrs, "keep_aspect_ratio_policy", "stretch");
  if (f->policy != "stretch" && f->policy != "not_larger" && f->policy != "not_smaller")
    return op + ": keep_aspect_ratio_policy `" + f->policy + "`";
  f->cubic_a = AttrFloat(attrs, "cubic_coeff_a", -0.75);
  f->exclude = AttrInt(attrs, "exclude_outside", 0) != 0;
  f->antialias = AttrInt(attrs, "antialias", 0) != 0 && f->mode != "nearest";
  f->extrapolation = AttrFloat(attrs, "extrapolation_value", 0.0);
  f->crop = f->coord == "tf_crop_and_resize";

  std::vector<int64_t> axes = AttrInts(attrs, "axes", {});
  std::vector<bool> seen(f->rank, false);
  for (int64_t a : axes) {
    if (a < -f->rank || a >= f->rank)
      return op + ": axis " + std::to_string(a) + " is out of range for rank " +
             std::to_string(f->rank);
    int64_t n = a < 0 ? a + f->rank : a;
    if (seen[n]) return op + ": axis " + std::to_string(a) + " is named twice";
    seen[n] = true;
    f->axes.push_back(n);
  }
  if (axes.empty())
    for (int64_t d = 0; d < f->rank; ++d) f->axes.push_back(d);
  const int64_t k = static_cast<int64_t>(f->axes.size());

  // the inputs: Resize-11 on X, roi, scales, sizes; Resize-10 and Upsample-9 X, scales
  // (Upsample-7 has the attribute). The driver folds a constant input i into the attribute
  // Resize-11 gives input i, so Resize-10's constant scales arrive as `roi`.
  int roi_i = old ? -1 : 1, scales_i = old ? 1 : 2, sizes_i = old ? -1 : 3;
  auto need = [&](int i, bool floats, int64_t count, const char* what) -> std::string {
    DataType t = in[i]->dtype;
    if (floats ? !t.is_float() : !t.is_integer())
      return op + ": input " + std::to_string(i) + " (" + what + ") has dtype " + t.str();
    if (in[i]->numel() != count)
      return op + ": input " + std::to_string(i) + " (" + what + ") has " +
             std::to_string(in[i]->numel()) + " values, expected " + std::to_string(count);
    return "";
  };
  if (HasAttr(attrs, "scales")) {
    f->scales = AttrFloats(attrs, "scales");
  } else if (old && !upsample && HasAttr(attrs, "roi")) {
    f->scales = AttrFloats(attrs, "roi");
  } else if (Given(in, scales_i)) {
    f->scales_in = scales_i;
    if (std::string e = need(scales_i, true, k, "scales"); !e.empty()) return e;
  }
  if (HasAttr(attrs, "sizes")) {
    f->sizes = AttrInts(attrs, "sizes", {});
  } else if (Given(in, sizes_i)) {
    f->sizes_in = sizes_i;
    if (std::string e = need(sizes_i, false, k, "sizes"); !e.empty()) return e;
  }
  if (f->crop) {
    if (HasAttr(attrs, "roi")) {
      f->roi = AttrFloats(attrs, "roi");
    } else if (Given(in, roi_i)) {
      f->roi_in = roi_i;
      if (std::string e = need(roi_i, true, 2 * k, "roi"); !e.empty()) return e;
    } else {
      return op + ": tf_crop_and_resize needs roi";
    }
    if (f->roi_in < 0 && static_cast<int64_t>(f->roi.size()) != 2 * k)
      return op + ": roi has " + std::to_string(f->roi.size()) + " values, expected " +
             std::to_string(2 * k);
  }
  bool sc = f->has_scales(), sz = !f->sizes.empty() || f->sizes_in >= 0;
  if (sc && sz) return op + ": both scales and sizes are given (one of them, ONNX says)";
  if (!sc && !sz) return op + ": neither scales nor sizes is given";
  if (!f->scales.empty()) {
    if (static_cast<int64_t>(f->scales.size()) != k)
      return op + ": scales has " + std::to_string(f->scales.size()) + " values for " +
             std::to_string(k) + " axes";
    for (double v : f->scales)
      if (!(v > 0)) return op + ": scale " + std::to_string(v) + " is not positive";
  }
  if (!f->sizes.empty() && static_cast<int64_t>(f->sizes.size()) != k)
    return op + ": sizes has " + std::to_string(f->sizes.size()) + " values for " +
           std::to_string(k) + " axes";
  return "";
}

std::string CheckResize(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& in) {
  Form f;
  return ReadForm(op, attrs, in, &f);
}

/*! \brief Per axis, the scale and the output length ONNX computes from compile-time values. */
void ConstPlan(const Form& f, const std::vector<int64_t>& in, std::vector<double>* scale,
               std::vector<int64_t>* out) {
  scale->assign(in.size(), 1.0);
  *out = in;
  size_t k = f.axes.size();
  if (!f.scales.empty()) {
    for (size_t i = 0; i < k; ++i) {
      int64_t a = f.axes[i];
      (*scale)[a] = f.scales[i];
      (*out)[a] = static_cast<int64_t>(std::floor(f.scales[i] * static_cast<double>(in[a])));
    }
    return;
  }
  std::vector<double> ratio(k);
  for (size_t i = 0; i < k; ++i)
    ratio[i] = static_cast<double>(f.sizes[i]) / static_cast<double>(in[f.axes[i]]);
  double keep = f.policy == "not_larger" ? *std::min_element(ratio.begin(), ratio.end())
                                         : *std::max_element(ratio.begin(), ratio.end());
  for (size_t i = 0; i < k; ++i) {
    int64_t a = f.axes[i];
    if (f.policy == "stretch") {
      (*scale)[a] = ratio[i];
      (*out)[a] = f.sizes[i];
    } else {
      (*scale)[a] = keep;
      (*out)[a] = static_cast<int64_t>(keep * static_cast<double>(in[a]) + 0.5);
    }
  }
}

/*! \brief The kernel's locals and shapes, shared by its parts. */
struct Kernel {
  const Form& f;
  std::vector<int64_t> in, out;
  int64_t r;
  Buffer X, Y;
  Buffer scale, width, roi, osz, keep;  // per axis: scale, scale * in, roi, output length

  PrimExpr Scale(int64_t a) const { return BufferLoad(scale, {I32(a)}); }

  /*! \brief The source coordinate of output index `o` on axis `a` (float64). ONNX's
   * length_resized (align_corners, pytorch_half_pixel, tf_crop_and_resize) is the output's
   * length, as ONNX Runtime and PyTorch take it (ONNX's reference takes scale x length,
   * which differs when that is not a whole number); half_pixel_symmetric's output_width is
   * scale x length in both. */
  PrimExpr Coord(int64_t a, PrimExpr o) const {
    PrimExpr y = cast(kF64, o), s = Scale(a), ow = BufferLoad(width, {I32(a)});
    double len = static_cast<double>(in[a]), n = static_cast<double>(out[a]);
    const std::string& m = f.coord;
    if (m == "align_corners") return n == 1 ? D64(0) : y * D64(len - 1) / D64(n - 1);
    if (m == "asymmetric") return y / s;
    if (m == "tf_half_pixel_for_nn") return (y + D64(0.5)) / s;
    if (m == "pytorch_half_pixel") return n == 1 ? D64(-0.5) : (y + D64(0.5)) / s - D64(0.5);
    if (m == "half_pixel") return (y + D64(0.5)) / s - D64(0.5);
    if (m == "half_pixel_symmetric") {
      PrimExpr adjustment = D64(static_cast<double>(out[a])) / ow;
      PrimExpr offset = D64(len / 2) * (D64(1) - adjustment);
      return offset + (y + D64(0.5)) / s - D64(0.5);
    }
    // tf_crop_and_resize
    PrimExpr lo = BufferLoad(roi, {I32(a)}), hi = BufferLoad(roi, {I32(r + a)});
    PrimExpr x =
        n == 1 ? (hi - lo) * D64(len - 1) / D64(2) : y * (hi - lo) * D64(len - 1) / D64(n - 1);
    return x + lo * D64(len - 1);
  }

  PrimExpr Outside(int64_t a, PrimExpr x) const {
    return x < D64(0) || x > D64(static_cast<double>(in[a] - 1));
  }
};

/*!
 * \brief The statements that set the per-axis locals from the values (constants, or read
 * from the params) and, for values read when the kernel runs, fail the run when they give
 * another output shape than `out` (or a scale that is not positive).
 */
std::vector<Stmt> ReadValues(const Kernel& K, const Params& p) {
  const Form& f = K.f;
  const int64_t r = K.r, k = static_cast<int64_t>(f.axes.size());
  std::vector<Stmt> s;
  for (int64_t d = 0; d < r; ++d) {
    s.push_back(BufferStore(K.scale, D64(1), {I32(d)}));
    s.push_back(BufferStore(K.osz, L64(K.in[d]), {I32(d)}));
    if (f.crop) {
      s.push_back(BufferStore(K.roi, D64(0), {I32(d)}));
      s.push_back(BufferStore(K.roi, D64(1), {I32(r + d)}));
    }
  }
  auto load = [&](int input, int64_t j, DataType t) {
    return cast(t, BufferLoad(Flat(p.in[input], "V" + std::to_string(input)), {I32(j)}));
  };
  std::vector<PrimExpr> shown;
  std::string what;
  if (f.has_scales()) {
    PrimExpr bad;
    for (int64_t i = 0; i < k; ++i) {
      int64_t a = f.axes[i];
      PrimExpr v = f.scales_in >= 0 ? load(f.scales_in, i, kF64) : D64(f.scales[i]);
      shown.push_back(v);
      s.push_back(BufferStore(K.scale, v, {I32(a)}));
      s.push_back(BufferStore(
          K.osz, cast(kI64, FloorF(K.Scale(a) * D64(static_cast<double>(K.in[a])))), {I32(a)}));
      PrimExpr b = !(K.Scale(a) > D64(0));
      bad = bad.defined() ? (bad || b) : b;
    }
    what = "scales " + FloatsFormat(k);
    if (f.scales_in >= 0)
      s.push_back(IfThenElse(
          bad, Fail(f.op + ": " + what + " when the model runs: every scale must be positive",
                    shown, true)));
  } else {
    std::vector<PrimExpr> ratio;
    for (int64_t i = 0; i < k; ++i) {
      int64_t a = f.axes[i];
      PrimExpr v = f.sizes_in >= 0 ? load(f.sizes_in, i, kI64) : L64(f.sizes[i]);
      shown.push_back(v);
      ratio.push_back(cast(kF64, v) / D64(static_cast<double>(K.in[a])));
      if (f.policy == "stretch") {
        s.push_back(BufferStore(K.scale, ratio.back(), {I32(a)}));
        s.push_back(BufferStore(K.osz, v, {I32(a)}));
      }
    }
    what = "sizes " + ValuesFormat(k);
    if (f.policy != "stretch") {
      // the one scale that keeps the aspect ratio: the least (not_larger) or the greatest
      what += " (keep_aspect_ratio_policy " + f.policy + ")";
      bool least = f.policy == "not_larger";
      PrimExpr cur = BufferLoad(K.keep, {I32(0)});
      s.push_back(BufferStore(K.keep, ratio[0], {I32(0)}));
      for (int64_t i = 1; i < k; ++i)
        s.push_back(BufferStore(
            K.keep, select(least ? ratio[i] < cur : ratio[i] > cur, ratio[i], cur), {I32(0)}));
      for (int64_t i = 0; i < k; ++i) {
        int64_t a = f.axes[i];
        s.push_back(BufferStore(K.scale, cur, {I32(a)}));
        // int(x + 0.5) of a positive x: the reference's round half up
        s.push_back(BufferStore(
            K.osz, Convert(kI64, cur * D64(static_cast<double>(K.in[a])) + D64(0.5)), {I32(a)}));
      }
    }
  }
  for (int64_t d = 0; d < r; ++d)
    s.push_back(BufferStore(K.width, K.Scale(d) * D64(static_cast<double>(K.in[d])), {I32(d)}));
  if (f.crop) {
    for (int64_t i = 0; i < k; ++i) {
      int64_t a = f.axes[i];
      PrimExpr lo = f.roi_in >= 0 ? load(f.roi_in, i, kF64) : D64(f.roi[i]);
      PrimExpr hi = f.roi_in >= 0 ? load(f.roi_in, k + i, kF64) : D64(f.roi[k + i]);
      s.push_back(BufferStore(K.roi, lo, {I32(a)}));
      s.push_back(BufferStore(K.roi, hi, {I32(r + a)}));
    }
  }
  if (f.scales_in >= 0 || f.sizes_in >= 0) {
    PrimExpr differ;
    std::vector<PrimExpr> args = shown;
    for (int64_t d = 0; d < r; ++d) args.push_back(BufferLoad(K.osz, {I32(d)}));
    for (int64_t a : f.axes) {
      PrimExpr c = ne(BufferLoad(K.osz, {I32(a)}), L64(K.out[a]));
      differ = differ.defined() ? (differ || c) : c;
    }
    s.push_back(
        IfThenElse(differ, Fail(f.op + ": " + what + " give the output shape " + ValuesFormat(r) +
                                    " when the model runs; the model declares " + ShapeText(K.out),
                                args, true)));
  }
  return s;
}

/*! \brief The source index of nearest mode for coordinate x (float64) on axis a, clamped. */
PrimExpr NearestIndex(const Kernel& K, int64_t a, PrimExpr x, PrimExpr xi) {
  const std::string& m = K.f.nearest;
  PrimExpr whole = eq(x, xi), ratio = x - xi, i;
  if (m == "simple")  // ONNX Runtime's rule of the opsets before nearest_mode
    i = select(K.Scale(a) < D64(1), CeilF(x), xi);
  else if (m == "round_prefer_floor")
    i = select(whole || ratio <= D64(0.5), xi, xi + D64(1));
  else if (m == "round_prefer_ceil")
    i = select(whole || ratio < D64(0.5), xi, xi + D64(1));
  else if (m == "floor")
    i = xi;
  else
    i = select(whole, xi, xi + D64(1));
  return ClampI(cast(kI32, i), K.in[a] - 1);
}

/*! \brief Nearest: per resized axis a table of source indices, then one gather. */
Stmt LowerNearest(const Kernel& K, const std::vector<int64_t>& resized) {
  const Form& f = K.f;
  std::vector<Buffer> idx(K.r), ext(K.r);
  std::vector<Stmt> s;
  for (int64_t a : resized) {
    idx[a] = Local({K.out[a]}, kI32, "idx" + std::to_string(a));
    if (f.crop) ext[a] = Local({K.out[a]}, kI32, "ext" + std::to_string(a));
    s.push_back(Loop("o", K.out[a], [&](PrimExpr o) -> Stmt {
      Var x("x", kF64), xi("xi", kF64);
      std::vector<Stmt> t{BufferStore(idx[a], NearestIndex(K, a, x, xi), {o})};
      if (f.crop) t.push_back(BufferStore(ext[a], select(K.Outside(a, x), I32(1), I32(0)), {o}));
      // the rule of the opsets before nearest_mode is ONNX Runtime's, which divides in
      // float32 (8 / 1.6f is 5 there, 4.99999993 in float64): so does the kernel
      const DataType f32 = DataType::Float(32);
      PrimExpr xv =
          f.nearest == "simple" ? cast(kF64, cast(f32, o) / cast(f32, K.Scale(a))) : K.Coord(a, o);
      return LetStmt(x, xv, LetStmt(xi, FloorF(x), Seq(t)));
    }));
  }
  std::vector<int64_t> st = Strides(K.in);
  DataType yt = K.Y->dtype;
  PrimExpr ev = yt.is_bool() ? ne(D64(f.extrapolation), D64(0)) : cast(yt, D64(f.extrapolation));
  s.push_back(Loop("g", Numel(K.out), [&](PrimExpr g) -> Stmt {
    std::vector<PrimExpr> c = Unravel(g, K.out);
    PrimExpr src = I32(0), outside;
    for (int64_t d = 0; d < K.r; ++d) {
      PrimExpr i = idx[d].defined() ? BufferLoad(idx[d], {c[d]}) : c[d];
      src = src + i * I32(st[d]);
      if (ext[d].defined()) {
        PrimExpr e = ne(BufferLoad(ext[d], {c[d]}), I32(0));
        outside = outside.defined() ? (outside || e) : e;
      }
    }
    PrimExpr v = BufferLoad(K.X, {src});
    if (outside.defined()) v = select(outside, ev, v);
    return BufferStore(K.Y, v, {g});
  }));
  Stmt body = Seq(s);
  for (int64_t a : resized) {
    if (ext[a].defined()) body = Allocate(ext[a], body);
    body = Allocate(idx[a], body);
  }
  return body;
}

/*! \brief The most taps a pass over axis `a` can have (antialias: for any scale that gives
 * the compiled output length; `scale` is that scale when it is known when compiling). */
int64_t MaxTaps(const Kernel& K, int64_t a, double scale) {
  const Form& f = K.f;
  bool linear = f.mode == "linear";
  if (!f.antialias) return linear ? 2 : 4;
  double inv;  // an upper bound of 1 / scale
  double in = static_cast<double>(K.in[a]),
         out = static_cast<double>(std::max<int64_t>(K.out[a], 1));
  if (f.scales_in < 0 && f.sizes_in < 0)
    inv = 1.0 / scale;
  else if (f.has_scales() || f.policy == "stretch")  // out <= scale * in
    inv = in / out * (1 + 1e-9) + 1e-9;
  else  // out = floor(scale * in + 0.5), so scale * in >= out - 0.5
    inv = in / (out - 0.5) * (1 + 1e-9) + 1e-9;
  inv = std::max(inv, 1.0);
  return 2 * static_cast<int64_t>(std::ceil(linear ? inv : 2 * inv));
}

/*! \brief The weight of tap t (int32, of n) at fraction `ratio`, before normalisation. */
PrimExpr TapWeight(const Form& f, PrimExpr t, PrimExpr n, PrimExpr ratio, PrimExpr s1) {
  const double A = f.cubic_a;
  if (f.antialias) {
    // the filter stretched by 1 / s1 (s1 = min(scale, 1)); taps at 1 - n/2 + t - ratio
    PrimExpr x = cast(kF64, I32(1) - floordiv(n, I32(2)) + t) - ratio;
    if (f.mode == "linear") {
      PrimExpr v = D64(1) - AbsF(x * s1);
      return select(v < D64(0), D64(0), select(v > D64(1), D64(1), v));
    }
    PrimExpr z = AbsF(s1 * x), z2 = z * z, z3 = z * z2;
    return select(
        z <= D64(1), D64(A + 2) * z3 - D64(A + 3) * z2 + D64(1),
        select(z < D64(2), D64(A) * z3 - D64(5 * A) * z2 + D64(8 * A) * z - D64(4 * A), D64(0)));
  }
  if (f.mode == "linear") return select(eq(t, I32(0)), D64(1) - ratio, ratio);
  PrimExpr r1 = ratio + D64(1), q = D64(1) - ratio, q1 = q + D64(1);
  PrimExpr c0 = ((D64(A) * r1 - D64(5 * A)) * r1 + D64(8 * A)) * r1 - D64(4 * A);
  PrimExpr c1 = ((D64(A + 2) * ratio - D64(A + 3)) * ratio * ratio) + D64(1);
  PrimExpr c2 = ((D64(A + 2) * q - D64(A + 3)) * q * q) + D64(1);
  PrimExpr c3 = ((D64(A) * q1 - D64(5 * A)) * q1 + D64(8 * A)) * q1 - D64(4 * A);
  return select(eq(t, I32(0)), c0, select(eq(t, I32(1)), c1, select(eq(t, I32(2)), c2, c3)));
}

/*!
 * \brief One linear or cubic pass over axis `a`: `src` (shape `shape`) to `dst` (shape
 * `shape` with out[a] on axis a); `last` converts to the output dtype.
 */
Stmt Pass(const Kernel& K, int64_t a, double known_scale, const std::vector<int64_t>& shape,
          const Buffer& src, const Buffer& dst, bool last) {
  const Form& f = K.f;
  const int64_t I = K.in[a], O = K.out[a], T = MaxTaps(K, a, known_scale);
  int64_t inner = 1, outer = 1;
  for (int64_t d = a + 1; d < K.r; ++d) inner *= shape[d];
  for (int64_t d = 0; d < a; ++d) outer *= shape[d];
  Buffer idx = Local({O * T}, kI32, "taps"), w = Local({O * T}, kF64, "weights");
  Buffer ext = Local({O}, kI32, "ext"), n_buf = Local({1}, kI32, "n"),
         sum = Local({1}, kF64, "sum");
  std::vector<Stmt> s;
  // the tap count: fixed, or (antialias) 2 * ceil(1 / s1) linear, 2 * ceil(2 / s1) cubic,
  // s1 = min(scale, 1)
  Var s1("s1", kF64);
  PrimExpr n = f.antialias ? BufferLoad(n_buf, {I32(0)}) : I32(T);
  if (f.antialias) {
    PrimExpr span = (f.mode == "linear" ? D64(1) : D64(2)) / s1;
    s.push_back(BufferStore(n_buf, cast(kI32, D64(2) * CeilF(span)), {I32(0)}));
    s.push_back(IfThenElse(
        n > I32(T), Fail(f.op + ": antialias needs %d taps on axis " + std::to_string(a) +
                             " when the model runs; the kernel has room for " + std::to_string(T),
                         {n})));
  }
  // the taps of each output index
  PrimExpr sum_v = BufferLoad(sum, {I32(0)});
  s.push_back(Loop("o", O, [&](PrimExpr o) -> Stmt {
    Var x("x", kF64), xi("xi", kF64), ratio("ratio", kF64), start("start", kI32);
    PrimExpr half = floordiv(n, I32(2));
    auto at = [&](PrimExpr t) { return o * I32(T) + t; };
    std::vector<Stmt> b{BufferStore(sum, D64(0), {I32(0)})};
    b.push_back(Loop("t", n, [&](PrimExpr t) -> Stmt {
      PrimExpr c = TapWeight(f, t, n, ratio, s1);
      return Seq({BufferStore(w, c, {at(t)}),
                  BufferStore(sum, sum_v + BufferLoad(w, {at(t)}), {I32(0)}),
                  BufferStore(idx, ClampI(start + t, I - 1), {at(t)})});
    }));
    if (f.antialias)
      b.push_back(Loop("t", n, [&](PrimExpr t) -> Stmt {
        return BufferStore(w, BufferLoad(w, {at(t)}) / sum_v, {at(t)});
      }));
    if (f.exclude) {  // taps outside the input weigh 0, the others renormalised
      b.push_back(BufferStore(sum, D64(0), {I32(0)}));
      b.push_back(Loop("t", n, [&](PrimExpr t) -> Stmt {
        PrimExpr i = start + t;
        return Seq(
            {BufferStore(w, select(i < I32(0) || i >= I32(I), D64(0), BufferLoad(w, {at(t)})),
                         {at(t)}),
             BufferStore(sum, sum_v + BufferLoad(w, {at(t)}), {I32(0)})});
      }));
      b.push_back(Loop("t", n, [&](PrimExpr t) -> Stmt {
        return BufferStore(w, BufferLoad(w, {at(t)}) / select(eq(sum_v, D64(0)), D64(1), sum_v),
                           {at(t)});
      }));
    }
    if (f.crop) b.push_back(BufferStore(ext, select(K.Outside(a, x), I32(1), I32(0)), {o}));
    // the n taps nearest x, the smaller first on a tie: from floor(x) - n/2 + 1, or from
    // x - n/2 when x is whole (its fraction is then 1); the edge padding of the reference is
    // the clamping of the indices. Rationale: the window follows floor(x), the one the weights'
    // fraction comes from; the reference places it from x + n/2 in float64, which rounds onto
    // a whole number when x is within an ulp above one and shifts its window by one tap
    // against its weights.
    Stmt body = Seq(b);
    body = LetStmt(start, cast(kI32, xi) - half + select(eq(x, xi), I32(0), I32(1)), body);
    body = LetStmt(ratio, select(eq(x, xi), D64(1), x - xi), body);
    body = LetStmt(xi, FloorF(x), body);
    return LetStmt(x, K.Coord(a, o), body);
  }));
  // the pass: every element of dst sums its taps along axis a
  DataType yt = dst->dtype;
  s.push_back(Loop("g", outer * O * inner, [&](PrimExpr g) -> Stmt {
    Var oi("oi", kI32), base("base", kI32);
    auto value = [&](PrimExpr t) {
      PrimExpr at = oi * I32(T) + t;
      return BufferLoad(w, {at}) *
             cast(kF64, BufferLoad(src, {base + BufferLoad(idx, {at}) * I32(inner)}));
    };
    Stmt st;
    PrimExpr v;
    if (f.antialias) {  // n known only when running: a loop
      st = Seq({BufferStore(sum, D64(0), {I32(0)}), Loop("t", n, [&](PrimExpr t) -> Stmt {
                  return BufferStore(sum, sum_v + value(t), {I32(0)});
                })});
      v = sum_v;
    } else {
      v = D64(0);
      for (int64_t t = 0; t < T; ++t) v = v + value(I32(t));
    }
    if (f.crop) v = select(ne(BufferLoad(ext, {oi}), I32(0)), D64(f.extrapolation), v);
    if (last) v = yt.is_bool() ? ne(v, D64(0)) : cast(yt, v);
    Stmt store = BufferStore(dst, v, {g});
    Stmt body = st.defined() ? Seq({st, store}) : store;
    body =
        LetStmt(base, floordiv(g, I32(O * inner)) * I32(I * inner) + floormod(g, I32(inner)), body);
    return LetStmt(oi, floormod(floordiv(g, I32(inner)), I32(O)), body);
  }));
  Stmt body = Seq(s);
  if (f.antialias) body = LetStmt(s1, select(K.Scale(a) < D64(1), K.Scale(a), D64(1)), body);
  for (const Buffer& b : {idx, w, sum}) body = Allocate(b, body);
  if (f.crop) body = Allocate(ext, body);
  if (f.antialias) body = Allocate(n_buf, body);
  return body;
}

/*! \brief Linear and cubic: one pass per resized axis, float64 in between. */
Stmt LowerInterpolate(const Kernel& K, const std::vector<int64_t>& resized,
                      const std::vector<double>& known) {
  if (resized.empty())  // every axis kept: a copy
    return Loop("g", Numel(K.out),
                [&](PrimExpr g) -> Stmt { return BufferStore(K.Y, BufferLoad(K.X, {g}), {g}); });
  std::vector<std::vector<int64_t>> shapes{K.in};
  int64_t most = 1;
  for (size_t j = 0; j < resized.size(); ++j) {
    std::vector<int64_t> next = shapes.back();
    next[resized[j]] = K.out[resized[j]];
    shapes.push_back(next);
    if (j + 1 < resized.size()) most = std::max(most, Numel(next));
  }
  Buffer ping = Local({most}, kF64, "ping"), pong = Local({most}, kF64, "pong");
  std::vector<Stmt> s;
  for (size_t j = 0; j < resized.size(); ++j) {
    bool last = j + 1 == resized.size();
    const Buffer& src = j == 0 ? K.X : (j % 2 ? ping : pong);
    const Buffer& dst = last ? K.Y : (j % 2 ? pong : ping);
    s.push_back(Pass(K, resized[j], known[resized[j]], shapes[j], src, dst, last));
  }
  Stmt body = Seq(s);
  if (resized.size() > 1) body = Allocate(ping, body);
  if (resized.size() > 2) body = Allocate(pong, body);
  return body;
}

PrimFunc LowerResize(const OpCall& call0) {
  NeedOutputs(call0, 1);
  const std::string& op = call0.op_type;
  Form f;
  std::string why = ReadForm(op, call0.attrs, call0.inputs, &f);
  if (!why.empty()) TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): " << why;
  OpCall call = call0;
  call.data_inputs = f.params();
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  const int64_t r = f.rank;
  if (static_cast<int64_t>(out.size()) != r || call.outputs[0]->dtype != call.inputs[0]->dtype)
    TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): the output is "
                               << call.outputs[0]->dtype.str() << ShapeText(out) << " for an input "
                               << call.inputs[0]->dtype.str() << ShapeText(in);
  std::vector<bool> named(r, false);
  for (int64_t a : f.axes) named[a] = true;
  for (int64_t d = 0; d < r; ++d)
    if (!named[d] && out[d] != in[d])
      TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): axis " << d
                                 << " is not resized, yet the output shape " << ShapeText(out)
                                 << " differs there from the input's " << ShapeText(in);
  if (Numel(out) > 0 && Numel(in) == 0)
    TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): resizes an empty input "
                               << ShapeText(in) << " to " << ShapeText(out);
  // values known when compiling: the output shape they give is checked now
  std::vector<double> known(r, 0.0);
  if (f.scales_in < 0 && f.sizes_in < 0) {
    std::vector<int64_t> expect;
    ConstPlan(f, in, &known, &expect);
    if (expect != out) {
      std::string values;
      if (!f.scales.empty())
        for (double v : f.scales) values += (values.empty() ? "" : ", ") + std::to_string(v);
      else
        for (int64_t v : f.sizes) values += (values.empty() ? "" : ", ") + std::to_string(v);
      TILECORE_THROW(ValueError) << "LowerHostOp(" << op
                                 << "): " << (f.scales.empty() ? "sizes (" : "scales (") << values
                                 << ") give the output shape " << ShapeText(expect)
                                 << ", not the node's " << ShapeText(out);
    }
  }
  Kernel K{f,
           in,
           out,
           r,
           Flat(p.in[0], "X"),
           Flat(p.out[0], "Y"),
           Local({r}, kF64, "scale"),
           Local({r}, kF64, "width"),
           Local({2 * r}, kF64, "roi"),
           Local({r}, kI64, "osz"),
           Local({1}, kF64, "keep")};
  std::vector<Stmt> s = ReadValues(K, p);
  if (Numel(out) > 0) {
    // the axes a pass or a table reads: those named, less those known to keep their
    // length at scale 1 (and, with tf_crop_and_resize, every named axis)
    std::vector<int64_t> resized;
    for (int64_t a : f.axes)
      if (f.scales_in >= 0 || f.sizes_in >= 0 || f.crop || known[a] != 1.0 || in[a] != out[a])
        resized.push_back(a);
    s.push_back(f.mode == "nearest" ? LowerNearest(K, resized)
                                    : LowerInterpolate(K, resized, known));
  }
  Stmt body = Seq(s);
  for (const Buffer& b : {K.scale, K.width, K.roi, K.osz, K.keep}) body = Allocate(b, body);
  return MakeFunc(call, p, body);
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  for (const char* op : {"Resize", "Upsample"})
    RegisterHostKernel(op, HostKernel{host::CheckResize, host::LowerResize, 1});
});

}  // namespace compiler
}  // namespace tilecore
