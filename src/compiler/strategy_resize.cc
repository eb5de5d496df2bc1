/*
 * src/compiler/strategy_resize.cc — Resize (nearest, linear) and the deprecated
 * Upsample.
 *
 * Nearest is a copy: per resized axis the source index of every output index is
 * computed when compiling (ONNX's coordinate transformation and nearest mode), and
 * the table is cut into segments of q blocks of R equal indices stepping by `st`
 * (an upsample by 2 is one segment: R = 2, st = 1). A segment is two box dims
 * (q with source stride st, R with source stride 0), and the product of the axes'
 * segments is a list of DMA boxes, DDR to DDR (see strategy_layout.cc).
 *
 * Linear resizes the last two axes (bilinear; one axis when the other keeps its
 * size): the source coordinate of each output row and column is affine in the
 * output index, x = a * o + b, evaluated by the front end in f32. When the two
 * interpolation matrices fit half of L1, each plane is two matrix products on the
 * matrix engine (LowerLinearMatrix: the columns' taps, then the rows'); otherwise the
 * column taps go once per core into tables in L1, and per output row the two input
 * rows it reads are DMAed to L1 and the row interpolated there by the front end. The
 * planes (or rows) go to the cores round robin. A plane of one element is the nearest
 * copy: every output is that element.
 *
 * Scales and sizes are compile-time values: the attributes `scales` (floats) or
 * `sizes` (ints), with `axes` (the partitioner folds the constant inputs there);
 * without either, the output shape gives the sizes.
 */
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "kernel_util.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/cost_model.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kMaxBoxes = 4096;
constexpr int64_t kMaxRow = 32768;  // elements of one input or output row in L1

bool IsUpsample(const std::string& op) { return op == "Upsample"; }

/*! \brief The scale of every axis (ONNX's rules; sizes from the output when not given). */
std::vector<double> Scales(const OpCall& c) {
  auto is = Shape(c.inputs[0]), os = Shape(c.outputs[0]);
  size_t r = is.size();
  std::vector<double> full(r, 1.0);
  auto sc = AttrFloats(c.attrs, "scales");
  std::vector<int64_t> dflt;
  if (!sc.empty() && sc.size() == r) {
    for (size_t i = 0; i < r; ++i) full[i] = static_cast<float>(sc[i]);
    return full;
  }
  for (size_t i = 0; i < r; ++i) dflt.push_back(static_cast<int64_t>(i));
  auto axes = AttrInts(c.attrs, "axes", dflt);
  for (int64_t& a : axes) a = a < 0 ? a + static_cast<int64_t>(r) : a;
  if (!sc.empty()) {
    for (size_t i = 0; i < axes.size() && i < sc.size(); ++i)
      full[axes[i]] = static_cast<float>(sc[i]);
    return full;
  }
  std::vector<int64_t> sizes = AttrInts(c.attrs, "sizes", {});
  if (sizes.empty()) {
    axes = dflt;
    sizes = os;
  }
  std::string policy = AttrStr(c.attrs, "keep_aspect_ratio_policy", "stretch");
  std::vector<double> ratios;
  for (size_t i = 0; i < axes.size(); ++i)
    ratios.push_back(static_cast<double>(sizes[i]) / static_cast<double>(is[axes[i]]));
  for (size_t i = 0; i < axes.size(); ++i) {
    double s = ratios[i];
    if (policy == "not_larger") s = *std::min_element(ratios.begin(), ratios.end());
    if (policy == "not_smaller") s = *std::max_element(ratios.begin(), ratios.end());
    full[axes[i]] = s;
  }
  return full;
}

std::string CoordMode(const OpCall& c) {
  return IsUpsample(c.op_type) ? "asymmetric"
                               : AttrStr(c.attrs, "coordinate_transformation_mode", "half_pixel");
}

/*! \brief x = a * o + b, the source coordinate of output index o on one axis. ONNX's
 * length_resized (align_corners, pytorch_half_pixel) is the output's length, as ONNX Runtime
 * and PyTorch take it. */
std::pair<double, double> Affine(const std::string& mode, int64_t out_len, int64_t in_len,
                                 double scale) {
  double out_f = scale * static_cast<double>(in_len);
  if (mode == "align_corners")
    return out_len == 1 ? std::pair{0.0, 0.0}
                        : std::pair{static_cast<double>(in_len - 1) / (out_len - 1), 0.0};
  if (mode == "asymmetric") return {1.0 / scale, 0.0};
  if (mode == "pytorch_half_pixel")
    return out_len == 1 ? std::pair{0.0, -0.5} : std::pair{1.0 / scale, 0.5 / scale - 0.5};
  if (mode == "half_pixel") return {1.0 / scale, 0.5 / scale - 0.5};
  // half_pixel_symmetric
  double offset = in_len / 2.0 * (1 - out_len / out_f);
  return {1.0 / scale, offset + 0.5 / scale - 0.5};
}

/*! \brief The source coordinate of output index o, as ONNX computes it (float64). */
double SourceCoord(const std::string& mode, int64_t o, int64_t out_len, int64_t in_len,
                   double scale) {
  double y = static_cast<double>(o), out_f = scale * static_cast<double>(in_len);
  if (mode == "align_corners")
    return out_len == 1 ? 0.0 : y * (in_len - 1) / static_cast<double>(out_len - 1);
  if (mode == "asymmetric") return y / scale;
  if (mode == "pytorch_half_pixel") return out_len == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (mode == "half_pixel") return (y + 0.5) / scale - 0.5;
  double offset = in_len / 2.0 * (1 - out_len / out_f);  // half_pixel_symmetric
  return offset + (y + 0.5) / scale - 0.5;
}

std::vector<int64_t> NearestTable(const OpCall& c, int64_t out_len, int64_t in_len, double scale) {
  std::string mode = CoordMode(c);
  std::string nm =
      IsUpsample(c.op_type) ? "simple" : AttrStr(c.attrs, "nearest_mode", "round_prefer_floor");
  std::vector<int64_t> t(out_len);
  for (int64_t o = 0; o < out_len; ++o) {
    double x = SourceCoord(mode, o, out_len, in_len, scale);
    bool whole = x == std::floor(x);
    double i;
    if (nm == "round_prefer_floor")
      i = whole ? x : std::ceil(x - 0.5);
    else if (nm == "round_prefer_ceil")
      i = whole ? x : std::floor(x + 0.5);
    else if (nm == "floor")
      i = std::floor(x);
    else if (nm == "ceil")
      i = std::ceil(x);
    else
      i = scale < 1 ? std::ceil(x) : std::trunc(x);  // "simple" (Upsample)
    t[o] = std::clamp<int64_t>(static_cast<int64_t>(i), 0, in_len - 1);
  }
  return t;
}

struct Segment {
  int64_t o, q, R, i0, st;
};

std::vector<Segment> Segments(const std::vector<int64_t>& m) {
  std::vector<Segment> out;
  int64_t L = static_cast<int64_t>(m.size()), o = 0;
  while (o < L) {
    int64_t R = 1;
    while (o + R < L && m[o + R] == m[o]) ++R;
    if (o + R >= L) {
      out.push_back({o, 1, R, m[o], 0});
      break;
    }
    int64_t st = m[o + R] - m[o], q = 1;
    while (o + (q + 1) * R <= L) {
      bool ok = true;
      for (int64_t k = 0; k < R && ok; ++k) ok = m[o + q * R + k] == m[o] + q * st;
      if (!ok) break;
      ++q;
    }
    out.push_back({o, q, R, m[o], st});
    o += q * R;
  }
  return out;
}

/*! \brief The per-axis segments of a nearest resize (empty when the output is empty). */
std::vector<std::vector<Segment>> NearestSegments(const OpCall& c) {
  auto is = Shape(c.inputs[0]), os = Shape(c.outputs[0]);
  auto sc = Scales(c);
  size_t r = is.size();
  std::vector<std::vector<Segment>> segs(r);
  for (size_t d = 0; d < r; ++d) {
    if (os[d] == 0 || is[d] == 0) return {};
    if (os[d] == is[d] && sc[d] == 1.0)
      segs[d] = {{0, is[d], 1, 0, 1}};
    else
      segs[d] = Segments(NearestTable(c, os[d], is[d], sc[d]));
  }
  return segs;
}

int64_t NearestCopies(const OpCall& c) {
  int64_t total = 1;
  for (const auto& s : NearestSegments(c)) total *= static_cast<int64_t>(s.size());
  return total;
}

PrimFunc LowerNearest(const OpCall& c, const Params& p) {
  auto is = Shape(c.inputs[0]), os = Shape(c.outputs[0]);
  auto ist = RowMajorStrides(is), ost = RowMajorStrides(os);
  size_t r = is.size();
  std::vector<std::vector<Segment>> segs = NearestSegments(c);
  if (segs.empty()) return MakeFunc(c, p, Evaluate(I32(0)));
  int64_t total = 1;
  for (const auto& sg : segs) total *= static_cast<int64_t>(sg.size());
  if (total > kMaxBoxes)
    TILECORE_THROW(ValueError) << "LowerOp(" << c.op_type << "): the nearest index tables make "
                               << total << " copies (at most " << kMaxBoxes << ")";
  std::vector<Box> boxes;
  std::vector<size_t> idx(r, 0);
  while (true) {
    Box b;
    for (size_t d = 0; d < r; ++d) {
      const Segment& s = segs[d][idx[d]];
      b.dims.push_back({s.q, s.st * ist[d], s.R * ost[d]});
      b.dims.push_back({s.R, 0, ost[d]});
      b.src_base += s.i0 * ist[d];
      b.dst_base += s.o * ost[d];
    }
    boxes.push_back(b);
    size_t d = r;
    bool done = true;
    while (d > 0) {
      --d;
      if (++idx[d] < segs[d].size()) {
        done = false;
        break;
      }
      idx[d] = 0;
    }
    if (done) break;
  }
  return MakeFunc(c, p, EmitBoxes(c, p, boxes));
}

/*! \brief Linear taps of output index o: (i0, i1, w0, w1), as ONNX's table computes them. */
struct Taps {
  PrimExpr i0, i1, w0, w1;
};
/*! \brief body(taps of o), each intermediate bound once (the front end has no common
 * subexpression elimination). */
Stmt WithTaps(PrimExpr o, double a, double b, int64_t in_len,
              const std::function<Stmt(const Taps&)>& body) {
  DataType f32 = DataType::Float(32), i32 = DataType::Int(32);
  Var x("x", f32), r("r", i32), bs("bs", i32), rt("rt", f32), b2("b2", i32), r2("r2", f32);
  auto clip = [&](PrimExpr i) { return max(min(i, I32(in_len - 1)), I32(0)); };
  Stmt st = body(Taps{clip(b2), clip(b2 + I32(1)), F32(1) - r2, r2});
  st = LetStmt(r2, select(eq(rt, F32(0)), F32(1), rt), st);
  st = LetStmt(b2, select(eq(rt, F32(0)), bs - I32(1), bs), st);
  st = LetStmt(rt, x - cast(f32, bs), st);
  // floor(x): TC1 converts to int rounding to nearest
  st = LetStmt(bs, r - select(cast(f32, r) > x, I32(1), I32(0)), st);
  st = LetStmt(r, cast(i32, x), st);
  return LetStmt(x, F32(a) * cast(f32, o) + F32(b), st);
}

/*!
 * \brief The interpolation matrix of one axis, m[o * in_len + i] (the weight of input i in
 * output o), computed when compiling: WithTaps' operations in the same f32 steps (each
 * product, sum and difference rounded to f32, the conversion to int to nearest even), w0
 * stored at i0 and w1 added at i1. The front end took some hundred instructions an output
 * index to compute them (DeepLabV3's 256x256 head: a third of its cycles).
 */
std::vector<float> InterpolationMatrix(int64_t n, int64_t in_len, double a, double b) {
  std::vector<float> m(static_cast<size_t>(n * in_len), 0.0f);
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  auto clip = [&](int64_t i) { return std::max<int64_t>(std::min<int64_t>(i, in_len - 1), 0); };
  for (int64_t o = 0; o < n; ++o) {
    volatile float prod = fa * static_cast<float>(o);  // (two roundings, as the front end's)
    const float x = prod + fb;
    const auto r = static_cast<int64_t>(std::nearbyint(x));
    const int64_t bs = r - (static_cast<float>(r) > x ? 1 : 0);
    const float rt = x - static_cast<float>(bs);
    const int64_t b2 = rt == 0.0f ? bs - 1 : bs;
    const float r2 = rt == 0.0f ? 1.0f : rt;
    float* row = &m[static_cast<size_t>(o * in_len)];
    row[clip(b2)] = 1.0f - r2;
    row[clip(b2 + 1)] = row[clip(b2 + 1)] + r2;
  }
  return m;
}

PrimFunc LowerLinear(const OpCall& c, const Params& p) {
  auto is = Shape(c.inputs[0]), os = Shape(c.outputs[0]);
  auto sc = Scales(c);
  size_t r = is.size();
  int64_t H = r >= 2 ? is[r - 2] : 1, W = is[r - 1];
  int64_t OH = r >= 2 ? os[r - 2] : 1, OW = os[r - 1];
  double sh = r >= 2 ? sc[r - 2] : 1.0, sw = sc[r - 1];
  int64_t P = 1;
  for (size_t d = 0; d + 2 < r; ++d) P *= is[d];
  if (P == 0 || OH == 0 || OW == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  std::string mode = CoordMode(c);
  bool rows_kept = OH == H && sh == 1.0;
  const std::pair<double, double> row_map =
      rows_kept ? std::pair{1.0, 0.0} : Affine(mode, OH, H, sh);
  const std::pair<double, double> col_map = Affine(mode, OW, W, sw);
  const double ah = row_map.first, bh = row_map.second, aw = col_map.first, bw = col_map.second;
  Buffer X = View(p.in[0], {P * H, W}, "X"), Y = View(p.out[0], {P * OH, OW}, "Y");
  DataType f32 = DataType::Float(32);
  int64_t rotation = 0;
  DataType i32 = DataType::Int(32);
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer A = Local({W}, f32, "A"), B = Local({W}, f32, "B"), O = Local({OW}, f32, "O");
    // the column taps, once per core
    Buffer I0 = Local({OW}, i32, "I0"), I1 = Local({OW}, i32, "I1"), F0 = Local({OW}, f32, "F0"),
           F1 = Local({OW}, f32, "F1");
    Stmt tables = Loop("ow", OW, [&](PrimExpr ow) {
      return WithTaps(ow, aw, bw, W, [&](const Taps& tw) {
        return Seq({BufferStore(I0, tw.i0, {ow}), BufferStore(I1, tw.i1, {ow}),
                    BufferStore(F0, tw.w0, {ow}), BufferStore(F1, tw.w1, {ow})});
      });
    });
    Stmt rows = ForEachItem(core, c.cores, P * OH, &rotation, "t", [&](PrimExpr t) {
      PrimExpr plane = floordiv(t, I32(OH)), oh = floormod(t, I32(OH));
      auto row = [&](const Taps& th) -> Stmt {
        std::vector<Stmt> s;
        Var h0("h0", i32), h1("h1", i32), vh0("wh0", f32), vh1("wh1", f32);
        s.push_back(
            DmaWait(Region(A, {I32(0)}, {W}), Region(X, {plane * I32(H) + h0, I32(0)}, {1, W}), 0));
        if (!rows_kept)
          s.push_back(DmaWait(Region(B, {I32(0)}, {W}),
                              Region(X, {plane * I32(H) + h1, I32(0)}, {1, W}), 0));
        s.push_back(Loop("ow", OW, [&](PrimExpr ow) {
          Var w0("w0", i32), w1("w1", i32), f0("f0", f32), f1("f1", f32);
          PrimExpr ra = BufferLoad(A, {w0}) * f0 + BufferLoad(A, {w1}) * f1;
          PrimExpr v = rows_kept
                           ? ra
                           : vh0 * ra + vh1 * (BufferLoad(B, {w0}) * f0 + BufferLoad(B, {w1}) * f1);
          Stmt st = BufferStore(O, v, {ow});
          st = LetStmt(f1, BufferLoad(F1, {ow}), st);
          st = LetStmt(f0, BufferLoad(F0, {ow}), st);
          st = LetStmt(w1, BufferLoad(I1, {ow}), st);
          return Stmt(LetStmt(w0, BufferLoad(I0, {ow}), st));
        }));
        s.push_back(DmaWait(Region(Y, {plane * I32(OH) + oh, I32(0)}, {1, OW}),
                            Region(O, {I32(0)}, {OW}), 1));
        Stmt r = Seq(s);
        r = LetStmt(vh1, th.w1, r);
        r = LetStmt(vh0, th.w0, r);
        r = LetStmt(h1, th.i1, r);
        return LetStmt(h0, th.i0, r);
      };
      if (rows_kept) return row(Taps{oh, oh, F32(1), F32(0)});
      return WithTaps(oh, ah, bh, H, row);
    });
    return Allocate(
        A, Allocate(
               B, Allocate(
                      O, Allocate(I0,
                                  Allocate(I1, Allocate(F0, Allocate(F1, Seq({tables, rows}))))))));
  });
  return MakeFunc(c, p, body);
}

/*!
 * \brief Linear as two matrix products per plane, when the matrices fit L1: the rows
 * interpolated by the columns' taps, T = X Cw ([H, W] x [W, OW]), then the output rows by
 * the rows' taps, Y = Ch T ([OH, H] x [H, OW], in blocks of output rows). Each row of Cw^T
 * and Ch holds an output index's two weights at its two taps (their sum where the taps
 * meet at an edge), computed when compiling as LowerLinear's front end computes its taps
 * (InterpolationMatrix) and stored once per core; the matrix engine multiplies by the zeros
 * exactly, so each output is the same two-term sums in f32 (at an edge, where the two taps meet,
 * one term of weight 1). A non-finite input spreads further than ONNX's: 0 * inf is NaN, so an inf
 * or NaN in a plane makes the plane's outputs NaN where ONNX keeps it to the outputs that
 * read it. Undefined when the dimensions exceed the matrix engine's or the matrices do
 * not fit half of L1 (LowerLinear then: a front-end gather per output element).
 */
std::optional<PrimFunc> LowerLinearMatrix(const OpCall& c, const Params& p) {
  auto is = Shape(c.inputs[0]), os = Shape(c.outputs[0]);
  auto sc = Scales(c);
  const size_t r = is.size();
  const int64_t H = r >= 2 ? is[r - 2] : 1, W = is[r - 1];
  const int64_t OH = r >= 2 ? os[r - 2] : 1, OW = os[r - 1];
  const double sh = r >= 2 ? sc[r - 2] : 1.0, sw = sc[r - 1];
  if (c.inputs[0]->dtype != DataType::Float(32)) return std::nullopt;
  const int64_t dim = arch::tc1::kMaxMmDim;
  if (H > dim || W > dim || OH > dim || OW > dim || H * W * OH * OW == 0) return std::nullopt;
  int64_t P = 1;
  for (size_t d = 0; d + 2 < r; ++d) P *= is[d];
  const bool rows_kept = OH == H && sh == 1.0;
  // f32 elements: Cw, Ch, the plane, T, and a block of `rows` output rows, in half of L1
  const int64_t budget = c.l1_bytes / 2 / 4;
  const int64_t fixed = W * OW + (rows_kept ? 0 : OH * H) + H * W + H * OW;
  const int64_t rows = rows_kept ? 0 : std::min<int64_t>(OH, (budget - fixed) / OW);
  if (fixed > budget || (!rows_kept && rows < 1)) return std::nullopt;
  const std::string mode = CoordMode(c);
  const std::pair<double, double> row_map =
      rows_kept ? std::pair{1.0, 0.0} : Affine(mode, OH, H, sh);
  const std::pair<double, double> col_map = Affine(mode, OW, W, sw);
  const double ah = row_map.first, bh = row_map.second, aw = col_map.first, bw = col_map.second;
  DataType f32 = DataType::Float(32);
  Buffer X = View(p.in[0], {P, H, W}, "X"), Y = View(p.out[0], {P, OH, OW}, "Y");
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer Cw = Local({W, OW}, f32, "Cw"), Xl = Local({H, W}, f32, "Xl");
    Buffer T = Local({H, OW}, f32, "T");
    Buffer Ch = rows_kept ? Buffer() : Local({OH, H}, f32, "Ch");
    Buffer Yl = rows_kept ? Buffer() : Local({rows, OW}, f32, "Yl");
    // the taps' weights (InterpolationMatrix): zeros, then a store of each nonzero
    auto fill = [&](const Buffer& m, int64_t n, int64_t in_len, double a, double b, bool by_row) {
      const int64_t rows_m = by_row ? n : in_len, cols_m = by_row ? in_len : n;
      std::vector<Stmt> s{
          Intrin("tile.dma_fill", {Region(m, {I32(0), I32(0)}, {rows_m, cols_m}), F32(0), I32(0)}),
          Intrin("tile.wait", {I32(0)})};
      const std::vector<float> w = InterpolationMatrix(n, in_len, a, b);
      for (int64_t o = 0; o < n; ++o)
        for (int64_t i = 0; i < in_len; ++i)
          if (float v = w[static_cast<size_t>(o * in_len + i)]; v != 0.0f)
            s.push_back(BufferStore(
                m, F32(v),
                by_row ? Array<PrimExpr>{I32(o), I32(i)} : Array<PrimExpr>{I32(i), I32(o)}));
      return Seq(s);
    };
    std::vector<Stmt> pre{fill(Cw, OW, W, aw, bw, false)};
    if (!rows_kept) pre.push_back(fill(Ch, OH, H, ah, bh, true));
    Stmt planes = ForEachItem(core, c.cores, P, &rotation, "t", [&](PrimExpr t) {
      std::vector<Stmt> s{
          DmaWait(Region(Xl, {I32(0), I32(0)}, {H, W}), Region(X, {t, I32(0), I32(0)}, {1, H, W}),
                  0),
          Intrin("tile.mm",
                 {Region(T, {I32(0), I32(0)}, {H, OW}), Region(Xl, {I32(0), I32(0)}, {H, W}),
                  Region(Cw, {I32(0), I32(0)}, {W, OW}), IntImm(DataType::Bool(), 0)})};
      if (rows_kept) {
        s.push_back(DmaWait(Region(Y, {t, I32(0), I32(0)}, {1, H, OW}),
                            Region(T, {I32(0), I32(0)}, {H, OW}), 1));
        return Seq(s);
      }
      auto block = [&](PrimExpr o0, int64_t n) {  // output rows [o0, o0 + n)
        return Seq({Intrin("tile.mm",
                           {Region(Yl, {I32(0), I32(0)}, {n, OW}), Region(Ch, {o0, I32(0)}, {n, H}),
                            Region(T, {I32(0), I32(0)}, {H, OW}), IntImm(DataType::Bool(), 0)}),
                    DmaWait(Region(Y, {t, o0, I32(0)}, {1, n, OW}),
                            Region(Yl, {I32(0), I32(0)}, {n, OW}), 1)});
      };
      s.push_back(Loop("b", OH / rows, [&](PrimExpr b) { return block(b * I32(rows), rows); }));
      if (OH % rows) s.push_back(block(I32(OH / rows * rows), OH % rows));
      return Seq(s);
    });
    Stmt all = Allocate(Cw, Allocate(Xl, Allocate(T, Seq({Seq(pre), planes}))));
    return rows_kept ? all : Allocate(Ch, Allocate(Yl, all));
  });
  return MakeFunc(c, p, body);
}

PrimFunc LowerResize(const OpCall& call) {
  Params p = MakeParams(call);
  if (call.outputs[0]->dtype != call.inputs[0]->dtype)
    TILECORE_THROW(ValueError) << "LowerOp(" << call.op_type
                               << "): output dtype differs from the input's";
  std::string mode = AttrStr(call.attrs, "mode", "nearest");
  if (mode == "nearest") return LowerNearest(call, p);
  auto is = Shape(call.inputs[0]), os = Shape(call.outputs[0]);
  auto sc = Scales(call);
  for (size_t d = 0; d + 2 < is.size(); ++d)
    if (is[d] != os[d] || sc[d] != 1.0)
      TILECORE_THROW(ValueError) << "LowerOp(" << call.op_type << "): linear resize of axis " << d
                                 << " (only the last two axes)";
  if (is.back() > kMaxRow || os.back() > kMaxRow)
    TILECORE_THROW(ValueError) << "LowerOp(" << call.op_type << "): rows longer than " << kMaxRow
                               << " elements";
  // A plane of one element (a pooled branch's 1 x 1, upsampled): both taps of every output
  // clamp to it, so each output is that element; the nearest copy gives it exactly, where
  // x * (1 - w) + x * w may round off it, in DMA boxes instead of a product per plane.
  if (is.size() >= 2 && is[is.size() - 1] == 1 && is[is.size() - 2] == 1)
    return LowerNearest(call, p);
  // the matrix form when it fits and the cost model finds it faster (not for a
  // downsampling, whose rows it would all read)
  PrimFunc rows = LowerLinear(call, p);
  std::optional<PrimFunc> matrix = LowerLinearMatrix(call, p);
  if (!matrix) return rows;
  const int cores = static_cast<int>(call.cores);
  return EstimateStrategy(*matrix, call.l1_bytes, cores).cycles <
                 EstimateStrategy(rows, call.l1_bytes, cores).cycles
             ? *matrix
             : rows;
}

std::string CheckResize(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& inputs) {
  if (inputs.empty() || !inputs[0].defined()) return op + ": input 0 is missing";
  if (inputs[0]->shape.empty()) return op + ": a scalar input";
  bool given = HasAttr(attrs, "scales") || HasAttr(attrs, "sizes");
  for (size_t i = 1; i < inputs.size(); ++i) {
    bool roi = op == "Resize" && inputs.size() > 2 && i == 1;
    if (!roi && inputs[i].defined() && inputs[i]->numel() > 0 && !given)
      return op +
             ": scales or sizes must be known when compiling (constant inputs, given as "
             "attributes)";
  }
  {
    int64_t r = static_cast<int64_t>(inputs[0]->shape.size());
    auto axes = AttrInts(attrs, "axes", {});
    for (int64_t a : axes)
      if (a < -r || a >= r) return op + ": axes out of range";
    size_t want = axes.empty() ? static_cast<size_t>(r) : axes.size();
    auto sc = AttrFloats(attrs, "scales");
    auto sizes = AttrInts(attrs, "sizes", {});
    if (!sc.empty() && sc.size() != want) return op + ": scales need one value per axis";
    if (!sizes.empty() && sizes.size() != want) return op + ": sizes need one value per axis";
    for (double v : sc)
      if (!(v > 0)) return op + ": scales must be positive";
  }
  std::string mode = AttrStr(attrs, "mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear")
    return op + ": mode " + mode + " (nearest and linear run on the npu)";
  if (mode == "nearest") {
    std::string why = CheckDTypes(
        {inputs[0]},
        {DataType::Float(32), DataType::Int(32), DataType::UInt(32), DataType::Float(16),
         DataType::Int(16), DataType::Int(8), DataType::UInt(8), DataType::Bool()},
        op);
    if (!why.empty()) return why;
    // with the scales or sizes known, the copy count is known too
    auto is = Shape(inputs[0]);
    std::vector<int64_t> os = is;
    size_t r = is.size();
    std::vector<int64_t> dflt;
    for (size_t i = 0; i < r; ++i) dflt.push_back(static_cast<int64_t>(i));
    auto axes = AttrInts(attrs, "axes", dflt);
    auto sc = AttrFloats(attrs, "scales");
    auto sizes = AttrInts(attrs, "sizes", {});
    bool known = false;
    if (!sc.empty() && (sc.size() == axes.size() || sc.size() == r)) {
      const auto& ax = sc.size() == r ? dflt : axes;
      for (size_t i = 0; i < ax.size(); ++i) {
        int64_t a = ax[i] < 0 ? ax[i] + static_cast<int64_t>(r) : ax[i];
        if (a < 0 || a >= static_cast<int64_t>(r)) return op + ": axes out of range";
        os[a] = static_cast<int64_t>(
            std::floor(static_cast<float>(sc[i]) * static_cast<double>(is[a])));
      }
      known = true;
    } else if (!sizes.empty() && sizes.size() == axes.size() &&
               AttrStr(attrs, "keep_aspect_ratio_policy", "stretch") == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(r) : axes[i];
        if (a < 0 || a >= static_cast<int64_t>(r)) return op + ": axes out of range";
        os[a] = sizes[i];
      }
      known = true;
    }
    if (known) {
      Array<int64_t> oshape;
      for (int64_t d : os) oshape.push_back(std::max<int64_t>(d, 0));
      OpCall call{op,     attrs,
                  inputs, {TensorSpec(oshape, inputs[0]->dtype)},
                  4,      int64_t(arch::tc1::kL1Bytes),
                  1};
      int64_t n = NearestCopies(call);
      if (n > kMaxBoxes)
        return op + ": the nearest index tables make " + std::to_string(n) + " copies (at most " +
               std::to_string(kMaxBoxes) + ")";
    }
  } else {
    std::string why = CheckDTypes({inputs[0]}, {DataType::Float(32)}, op);
    if (!why.empty()) return why;
    if (AttrInt(attrs, "antialias", 0) != 0) return op + ": antialias";
    if (AttrInt(attrs, "exclude_outside", 0) != 0) return op + ": exclude_outside";
    if (inputs[0]->shape.back() > kMaxRow)
      return op + ": rows longer than " + std::to_string(kMaxRow) + " elements";
  }
  if (!IsUpsample(op)) {
    std::string ct = AttrStr(attrs, "coordinate_transformation_mode", "half_pixel");
    if (ct != "half_pixel" && ct != "asymmetric" && ct != "align_corners" &&
        ct != "pytorch_half_pixel" && ct != "half_pixel_symmetric")
      return op + ": coordinate_transformation_mode " + ct;
    std::string nm = AttrStr(attrs, "nearest_mode", "round_prefer_floor");
    if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
      return op + ": nearest_mode " + nm;
  }
  return "";
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  auto onnx = [](const OpCall&, int) { return std::string("onnx"); };
  RegisterStrategy("Resize", Strategy{detail::CheckResize, detail::LowerResize, onnx, 1});
  RegisterStrategy("Upsample", Strategy{detail::CheckResize, detail::LowerResize, onnx, 1});
});

}  // namespace compiler
}  // namespace tilecore
