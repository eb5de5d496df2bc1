/*
 * src/compiler/conv/transposed.cc — the transposed plan of an int8 Conv (LowerConvTransposed): the
 * output channels as the mm's columns, so that its fused epilogue finishes the result.
 */
#include <algorithm>
#include <limits>
#include <string>
#include <tuple>

#include "src/compiler/conv/conv_plans.h"
#include "src/compiler/fused_epilogue.h"
#include "src/compiler/kernel_util.h"
#include "src/compiler/lookup_table.h"
#include "src/compiler/matrix_precision.h"
#include "tilecore/arch/params.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace conv {

bool TransposedUnfolds(const ConvGeom& g) {
  return g.KH * g.KW > 1 || g.pt > 0 || g.pb > 0 || g.pl > 0 || g.pr > 0 || g.H != g.OH * g.sh;
}

bool TransposedFits(const OpCall& call, const FusedEpilogue& ep) {
  ConvGeom g;
  std::string why;
  if (!Geometry(call.inputs, call.attrs, &g, &why)) return false;
  const int64_t K = g.C * g.KH * g.KW;
  return GetMatrixPrecision(call.attrs).int8() && g.G == 1 && K <= tc1::kMaxMmDim &&
         (!TransposedUnfolds(g) || K <= kTransposedUnfoldK) &&
         (ep.activation.empty() || ep.activation == "Relu" || ep.activation == "Clip") &&
         AttrInt(call.attrs, "tc_channel_scale", 0) == 0;
}

bool TransposedMixes(const OpCall& call, const ConvGeom& g, const FusedEpilogue& ep) {
  return !TransposedUnfolds(g) && g.sh == 1 && g.sw == 1 &&
         call.inputs[0]->dtype == DataType::Int(8) && !ep.residual_last;
}

bool XMajorSegment(int64_t tiles, int64_t mcount, int64_t cores) {
  return mcount > 2 && tiles >= cores && tiles % cores == 0;
}

bool XMajorApplies(const ConvGeom& g, const TransposedPlan& t, int64_t cores) {
  const int64_t HW = g.OH * g.OW;
  const bool rowwise = TransposedUnfolds(g) || g.sh > 1 || g.sw > 1;
  const int64_t tile = rowwise ? std::max<int64_t>(1, std::min(g.OH, t.tp / g.OW)) * g.OW : t.tp;
  if (t.weights_resident || tile <= 0 || t.tm <= 0 || t.nb <= 0) return false;
  return XMajorSegment(g.N / t.nb * (HW / tile), g.M / t.tm, cores);
}

std::vector<bool> ChannelMajorItems(const ConvGeom& g, const TransposedPlan& t, int64_t cores) {
  std::vector<bool> items_channel_major;
  if (t.implicit_num <= 0 || t.implicit_den <= 0 || t.tp <= 0 || t.tm <= 0 || t.nb <= 0)
    return items_channel_major;
  // (a plan with channel-major items is not rowwise: its tiles are tp positions)
  for (const auto& positions : Segments(g.OH * g.OW, t.tp))
    for (const auto& channels : Segments(g.M, t.tm)) {
      const int64_t items = g.N / t.nb * positions.first * channels.first;
      for (int64_t i = 0; i < items; ++i)
        items_channel_major.push_back((i / cores) % t.implicit_den < t.implicit_num &&
                                      i + cores < items);
    }
  return items_channel_major;
}

/*!
 * \brief An int8 Conv as the transposed product Y^T[p, m] = X^T[p, k] x W^T[k, m] over a
 * work item of tp positions x tm output channels (all of K in one mm; a 1x1 Conv's k is its
 * input channel, a wider one's (c, kh, kw), the weights' own order, unfolded from a patch). The
 * output channels are the mm's columns, so the matrix engine's fused epilogue adds the int32 bias,
 * multiplies by f32(x_scale * w_scale[m]), adds the residual and applies Relu or Clip (an
 * int8 residual: as is, in its units, with its zero point and the bounds as the clamp):
 * the same steps, rounded the same way, as LowerConv's vector epilogue, which this plan
 * replaces (no i32 preset, conversion, scale, residual add or activation pass). The X and W
 * tiles and the residual are transposed in L1 by strided copies; the output's conversion
 * (f32 copy, or int8 quantisation) writes channel-major again. Items run in three stages a
 * step apart (loads, transposes and mm, conversion and store).
 */
Stmt LowerConvTransposed(const OpCall& call, const Params& p, const TransposedPlan& tp) {
  DataType f32 = DataType::Float(32), i8 = DataType::Int(8), i32 = DataType::Int(32);
  ConvGeom g;
  std::string why;
  Geometry(call.inputs, call.attrs, &g, &why);
  const int64_t HW = g.OH * g.OW, C = g.C, KK = g.KH * g.KW, K = C * KK;
  // Unfolding (TransposedUnfolds): items of whole output rows; each loads the patch of input
  // rows they read (zeros, or the zero point, where the padding is) and copies each tap's
  // strided view of it into the column of K the weights have there.
  const bool unfold = TransposedUnfolds(g);
  if (unfold && tp.nb != 1)
    TILECORE_THROW(InternalError)
        << "LowerConvTransposed: an unfolding plan takes one image an item";
  // Strided (1x1): items of whole output rows; the DMA loads only the rows the Conv reads (X
  // viewed as [N, C, OH, sh, W]) and the transposing copy takes every sw-th column.
  const bool strided = !unfold && (g.sh > 1 || g.sw > 1);
  const bool rowwise = strided || unfold;
  const int64_t rows = rowwise ? std::max<int64_t>(1, std::min(g.OH, tp.tp / g.OW)) : 0;
  // (unfold) the patch of r output rows: rin(r) input rows of win columns from column -pl
  const int64_t win = (g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1;
  auto rin = [&](int64_t r) { return (r - 1) * g.sh + (g.KH - 1) * g.dh + 1; };
  const int64_t vlo = std::max<int64_t>(0, -g.pl), vhi = std::min<int64_t>(g.W, win - g.pl);
  const bool qx = call.inputs[0]->dtype != i8;
  const bool y_i8 = call.outputs[0]->dtype == i8;
  const double x_scale = AttrFloat(call.attrs, "tc_x_scale", 1.0);
  const double inv = InverseScale(x_scale);
  const int64_t zp = AttrInt(call.attrs, "tc_x_zero_point", 0);
  const double y_inv = y_i8 ? InverseScale(AttrFloat(call.attrs, "tc_y_scale", 1.0)) : 1.0;
  const int64_t y_zp = AttrInt(call.attrs, "tc_y_zero_point", 0);
  const FusedEpilogue ep = GetFusedEpilogue(call.attrs, call.inputs.size());
  const bool has_bias = call.inputs.size() > 2 && call.inputs[2].defined();
  const bool r_i8 = ep.residual >= 0 && call.inputs[ep.residual]->dtype == i8;
  const bool res_vec = tp.residual_on_vector && ep.residual >= 0 && !r_i8;
  // an int8 residual: the epilogue works in its units and the output is scaled after
  const ResidualUnits ru = GetResidualUnits(call.attrs, ep, y_i8);
  const double s_factor = r_i8 ? ru.x_factor : static_cast<float>(x_scale);
  Buffer X = View(p.in[0], {g.N, C, HW}, "X");
  Buffer Xs = View(p.in[0], {g.N, C, g.OH, g.sh, g.W}, "Xs");
  Buffer X4 = View(p.in[0], {g.N, C, g.H, g.W}, "X4");
  const bool w_l2 = tp.weights_in_l2 && !tp.weights_resident;
  Buffer Wsh = DeclBuffer({I32(g.M * K)}, i8, String("Wsh"), "shared");
  Buffer W = View(w_l2 ? Wsh : p.in[1], {g.M, K}, "W");
  Buffer Bias = has_bias ? View(p.in[2], {1, g.M}, "Bias") : Buffer();
  Buffer Sv = View(p.in[3], {1, g.M}, "WScale");
  Buffer Y = View(p.out[0], {g.N, g.M, HW}, "Y");
  Buffer Rv = ep.residual >= 0 ? View(p.in[ep.residual], {g.N, g.M, HW}, "Residual") : Buffer();
  const double big = std::numeric_limits<float>::max();
  // Per core, once: the bias and the scales f32(w_scale[m] * x_scale) of every channel (or
  // ResidualUnits' x_factor for x_scale), and the weights transposed ([C, M]) when the plan
  // keeps them (at most 256 KiB). Each DMA pays the DDR's latency, which per item would cost
  // more than the item's mm.
  const bool w_resident = tp.weights_resident && g.M * K <= kTransposedKeptWeightBytes;
  // (implicit_num) items computed channel-major: their product W x X accumulates onto the
  // bias in Cf's bytes as int32, and the vector engine's epilogue takes LowerConv's steps
  const bool mixed = tp.implicit_num > 0;
  // small resident weights loaded with the bias and scales, before their wait: their DDR
  // latency beside theirs, and among the first loads the member before may issue for
  // this one (member_handoff.h); Wall then stays allocated beside WTall
  const bool w_early = w_resident && !mixed && g.M * K <= kEarlyWeightBytes;
  if (mixed && (!TransposedMixes(call, g, ep) || tp.nb != 1))
    TILECORE_THROW(InternalError) << "LowerConvTransposed: channel-major items need a 1x1 Conv "
                                     "of an int8 X and one image an item";
  Buffer Ball = Local({1, g.M}, i32, "Ball"), Sall = Local({1, g.M}, f32, "Sall");
  // (mixed) copies of Ball and Sall the vector engine reads for the channel-major items: the
  // code orders its reads of a buffer after the matrix commands that read it (as an epilogue's
  // operands), which would stall each item's preset behind the mm before it
  Buffer Bvec = Local({1, g.M}, i32, "Bvec"), Svec = Local({1, g.M}, f32, "Svec");
  Buffer Wall = Local({g.M, K}, i8, "Wall"), WTall = Local({K, g.M}, i8, "WTall");
  const std::vector<int8_t> lut = y_i8 ? FusedLookupTable(call.attrs) : std::vector<int8_t>();
  Buffer lut_words = Local({64}, i32, "LutWords");
  // One image whose positions are all one item's: every item reads the same X tile, which
  // each core then loads (beside the bias's and scales' DDR latency) and transposes once,
  // before its items, when the tile is small (kResidentInputBytes) and the weights are not
  // kept as well.
  const int64_t tile = rowwise ? rows * g.OW : tp.tp;  // positions per full item
  const int64_t x_cols = strided ? g.OH * g.W : HW;    // its X tile: [C, x_cols]
  const bool x_resident = !unfold && !w_resident && g.N == 1 && tp.nb == 1 && tile >= HW &&
                          C * x_cols <= kResidentInputBytes;
  Buffer XLr = Local({C, x_cols}, call.inputs[0]->dtype, "XLr"), XTr = Local({HW, C}, i8, "XTr");
  // the constants' loads (the slots' loads take events 0 and 1, their stores 2 and 3, a
  // kept X tile 5, the weights' copy into L2 6)
  constexpr int kConstEvent = 4;
  // An unfolding plan's first two items load before the constants' wait, the constants on
  // the DMA-out engine: its patches are the largest loads (a stem's f32 image, the DDR
  // the bound), which the first mm waits for longest.
  const bool early_x = unfold && (!w_resident || w_early);
  const char* const const_dma = early_x ? "tile.dma_prefetch" : "tile.dma_copy";
  int64_t rotation = 0;
  Stmt kernel = OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> segs;
    Stmt first_load;  // the first segment's first loads, issued early (early_x)
    std::vector<Buffer> hoisted_allocs;
    size_t hoisted_body_at = 0;
    if (w_l2) {  // this core's share of the weight rows into L2
      segs.push_back(CopyShareOfRows(core, call.cores, p.in[1], Wsh, g.M, K, 6));
      segs.push_back(Intrin("tile.wait", {I32(6)}));
      segs.push_back(Intrin("tir.barrier", {}));
    }
    // (early_x: all on the DMA-out engine, the first patches on the DMA-in engine; else
    // the scales there, their DDR latency beside the bias's)
    if (has_bias)
      segs.push_back(
          Intrin(const_dma, {Region(Ball, {I32(0), I32(0)}, {1, g.M}),
                             Region(Bias, {I32(0), I32(0)}, {1, g.M}), I32(kConstEvent)}));
    segs.push_back(
        Intrin("tile.dma_prefetch", {Region(Sall, {I32(0), I32(0)}, {1, g.M}),
                                     Region(Sv, {I32(0), I32(0)}, {1, g.M}), I32(kConstEvent)}));
    if (w_early)
      segs.push_back(Intrin(const_dma, {Region(Wall, {I32(0), I32(0)}, {g.M, K}),
                                        Region(W, {I32(0), I32(0)}, {g.M, K}), I32(kConstEvent)}));
    // (after the bias and scales: loads of the group's inputs first, which the member before
    // may issue for this one, docs/compiler.md "Handoff")
    if (x_resident)
      segs.push_back(Intrin(
          "tile.dma_copy",
          {Region(XLr, {I32(0), I32(0)}, {C, x_cols}),
           strided ? Region(Xs, {I32(0), I32(0), I32(0), I32(0), I32(0)}, {1, C, g.OH, 1, g.W})
                   : Region(X, {I32(0), I32(0), I32(0)}, {1, C, HW}),
           I32(5)}));
    // (the first item's loads go here, ForEachItemThreeStage's first_load)
    const size_t first_load_at = segs.size();
    segs.push_back(Intrin("tile.wait", {I32(kConstEvent)}));
    segs.push_back(Loop("j", g.M, [&](PrimExpr j) {
      return BufferStore(Sall, BufferLoad(Sall, {I32(0), j}) * F32(s_factor), {I32(0), j});
    }));
    for (const auto& copy : {std::make_pair(Svec, Sall), std::make_pair(Bvec, Ball)}) {
      const Buffer to = copy.first, from = copy.second;  // (a lambda captures no binding)
      if (!mixed || (from.same_as(Ball) && !has_bias)) continue;
      segs.push_back(Loop("j", g.M, [&](PrimExpr j) {
        return BufferStore(to, BufferLoad(from, {I32(0), j}), {I32(0), j});
      }));
    }
    if (w_resident) {  // Wall's L1 is the items' once transposed (kept for channel-major items)
      Stmt turn = CopyNest(StridedView(WTall, {K, g.M}, {g.M, 1}, 0, "WTv"),
                           StridedView(Wall, {K, g.M}, {1, K}, 0, "Wtv"), {K, g.M});
      Stmt load = w_early ? turn
                          : Seq({Intrin("tile.dma_copy",
                                        {Region(Wall, {I32(0), I32(0)}, {g.M, K}),
                                         Region(W, {I32(0), I32(0)}, {g.M, K}), I32(kConstEvent)}),
                                 Intrin("tile.wait", {I32(kConstEvent)}), turn});
      segs.push_back(mixed || w_early ? load : Allocate(Wall, load));
    }
    const int64_t NB = tp.nb;  // images per item (then one item covers an image's positions)
    std::vector<bool> served(size_t(call.cores), false);  // the cores that ran an item
    for (const auto& P_seg : Segments(HW, tile)) {
      const int64_t pcount = P_seg.first, P = P_seg.second;
      const int64_t pbase = P == tile ? 0 : (HW / tile) * tile;
      const int64_t r = rowwise ? P / g.OW : 0;  // output rows of the item
      // X tile of an image: [C, xcols] (unfold: the patch [C, rin, win])
      const int64_t xcols = unfold ? rin(r) * win : strided ? r * g.W : P;
      const int64_t Pt = NB * P, Xt = NB * xcols;  // the item's positions, X tile columns
      for (const auto& TMc_seg : Segments(g.M, tp.tm)) {
        const int64_t mcount = TMc_seg.first, TMc = TMc_seg.second;
        const int64_t mbase = TMc == tp.tm ? 0 : (g.M / tp.tm) * tp.tm;
        const int64_t items = g.N / NB * pcount * mcount;
        // per slot (two: the items are pipelined)
        struct Slot {
          Buffer Xl, XT, Wl, WT, Cf, Rl, Rf, Yt;
          // (mixed) a channel-major item's scales (copied from Sall) and f32 residual,
          // filled with its product: the slot's loaded buffers take the next item's loads
          // before its epilogue
          Buffer Sm, Rs;
        };
        std::vector<Slot> slots(2);
        for (int k = 0; k < 2; ++k) {
          const std::string n = std::to_string(k);
          Slot& sl = slots[size_t(k)];
          sl.Xl = Local({C, Xt}, call.inputs[0]->dtype, "Xl" + n);
          sl.XT = Local({Pt, K}, i8, "XT" + n);
          sl.Wl = Local({TMc, K}, i8, "Wl" + n);
          sl.WT = Local({K, TMc}, i8, "WT" + n);
          sl.Cf = Local({Pt, TMc}, f32, "Cf" + n);
          if (ep.residual >= 0) {
            sl.Rl = Local({TMc, Pt}, call.inputs[ep.residual]->dtype, "Rl" + n);
            sl.Rf = Local({Pt, TMc}, r_i8 ? i8 : f32, "Rf" + n);
          }
          sl.Yt = Local({TMc, Pt}, y_i8 ? i8 : f32, "Yt" + n);
          sl.Sm = Local({1, TMc}, f32, "Sm" + n);
          sl.Rs = Local({TMc, Pt}, f32, "Rs" + n);
        }
        Buffer Xq = qx ? Local({C, Xt}, i8, "Xq") : Buffer();
        // (x_resident) the cores that ran an item in the segments before: they transposed X
        const std::vector<bool> served_before = served;
        const bool all_served = std::find(served.begin(), served.end(), false) == served.end();
        // x_major: a core's items (t = first + j * cores) take the blocks of one X tile in
        // turn, tile first + cores * (j / mcount), block j % mcount
        const bool by_tile =
            tp.x_major && !x_resident && XMajorSegment(items / mcount, mcount, call.cores);
        auto tile_and_block = [&](PrimExpr t) {
          if (!by_tile) return std::make_pair(floordiv(t, I32(mcount)), floormod(t, I32(mcount)));
          PrimExpr j = floordiv(t, I32(call.cores));
          return std::make_pair(
              floormod(t, I32(call.cores)) + I32(call.cores) * floordiv(j, I32(mcount)),
              floormod(j, I32(mcount)));
        };
        auto coords = [&](PrimExpr t) {  // (first image, first position, first channel)
          auto [ti, mi] = tile_and_block(t);
          PrimExpr n = floordiv(ti, I32(pcount));
          if (NB > 1) n = n * I32(NB);
          PrimExpr pi = floormod(ti, I32(pcount));
          return std::make_tuple(n, I32(pbase) + pi * I32(tile), I32(mbase) + mi * I32(tp.tm));
        };
        // the transposed view [rows, cols] of a [cols, rows] tile
        auto transposed = [](const Buffer& b, int64_t rows, int64_t cols, const char* name) {
          return StridedView(b, {rows, cols}, {1, rows}, 0, name);
        };
        auto plain = [](const Buffer& b, int64_t rows, int64_t cols, const char* name) {
          return StridedView(b, {rows, cols}, {cols, 1}, 0, name);
        };
        auto over = [&](int64_t rows, int64_t cols) {
          return [rows, cols](const auto& body) { return Nest({rows, cols}, body); };
        };
        // (mixed) whether item t is computed channel-major: the first implicit_num of every
        // implicit_den items of its core (item t is the core's (t div cores)-th), but not its
        // last, whose epilogue nothing follows to overlap
        auto implicit_at = [&](PrimExpr t) -> PrimExpr {
          return floormod(floordiv(t, I32(call.cores)), I32(tp.implicit_den)) <
                     I32(tp.implicit_num) &&
                 t + I32(call.cores) < I32(items);
        };
        // a [rows, cols] view of buf's bytes as dtype (dims of 1 dropped, as Nest drops them)
        auto as = [](const Buffer& buf, DataType dtype, int64_t rows, int64_t cols,
                     std::vector<int64_t> strides, PrimExpr offset, const char* name) {
          Array<PrimExpr> shape, st;
          const int64_t dims[2] = {rows, cols};
          for (int d = 0; d < 2; ++d) {
            if (dims[d] == 1) continue;
            shape.push_back(I32(dims[d]));
            st.push_back(I32(strides[size_t(d)]));
          }
          if (shape.empty()) {
            shape.push_back(I32(1));
            st.push_back(I32(1));
          }
          return Buffer(buf->data, dtype, shape, st, offset, "local", String(name));
        };
        // (mixed) the epilogue of a channel-major item, LowerConv's steps on its int32 sums
        // in cfb's bytes ([rows, cols]: channels, positions): f32, times the channel's scale
        // (sm), the residual (rs, its f32 conversion) and the activation, quantised
        // (or converted) into ytb, channel-major as the store reads it
        auto channel_major_epilogue = [&](const Buffer& cfb, const Buffer& rs, const Buffer& sm,
                                          const Buffer& ytb, int64_t rows, int64_t cols) {
          std::vector<Stmt> s;
          auto nest = over(rows, cols);
          const std::vector<int64_t> plain_st = {cols, 1};
          Buffer acc = as(cfb, i32, rows, cols, plain_st, I32(0), "Accv");
          Buffer cfv = as(cfb, f32, rows, cols, plain_st, I32(0), "Cfm");
          Buffer sb = as(sm, f32, rows, cols, {1, 0}, I32(0), "Sb");
          s.push_back(nest([&](const Array<PrimExpr>& i) {
            return BufferStore(cfv, Cast(f32, BufferLoad(acc, i)), i);
          }));
          s.push_back(nest([&](const Array<PrimExpr>& i) {
            return BufferStore(cfv, BufferLoad(cfv, i) * BufferLoad(sb, i), i);
          }));
          if (ep.residual >= 0) {
            Buffer rv = as(rs, f32, rows, cols, plain_st, I32(0), "Rsv");
            if (r_i8) {
              for (const Stmt& x : AddConvertedResidualInUnits(ru, cfv, rv, nest)) s.push_back(x);
            } else {
              s.push_back(nest([&](const Array<PrimExpr>& i) {
                return BufferStore(cfv, BufferLoad(cfv, i) + BufferLoad(rv, i), i);
              }));
            }
          }
          if (!r_i8)
            s.push_back(
                ApplyActivation(y_i8 ? WithoutSaturatedBounds(ep, y_inv, y_zp) : ep, cfv, nest));
          Buffer yv = as(ytb, ytb->dtype, rows, cols, plain_st, I32(0), "Ymv");
          if (y_i8) {
            for (const Stmt& x : QuantiseSteps(yv, cfv, r_i8 ? ru.out_scale : y_inv, y_zp, nest))
              s.push_back(x);
            if (!lut.empty()) {
              BufferRegion y = Region(ytb, {I32(0), I32(0)}, {rows, cols});
              s.push_back(Intrin("tile.vec_lut", {y, y, LookupTableRegion(lut_words)}));
            }
          } else if (r_i8) {
            s.push_back(nest([&](const Array<PrimExpr>& i) {
              return BufferStore(yv, BufferLoad(cfv, i) * F32(ru.out_scale), i);
            }));
          } else {
            s.push_back(CopyNest(yv, cfv, {rows, cols}));
          }
          return s;
        };
        // (unfold) the patch of the item's r output rows from oh0 into xl as [C, rin, win], on
        // event ev: zeros (an int8 X: its zero point) where the padding is, then the input
        // block, one DMA when its rows are all in the image (else one a row inside it)
        auto load_patch = [&](std::vector<Stmt>* s, const Buffer& xl, PrimExpr n, PrimExpr oh0,
                              PrimExpr ev) {
          const int64_t ri = rin(r);
          Buffer patch = Buffer(xl->data, xl->dtype, {I32(C), I32(ri), I32(win)}, Array<PrimExpr>(),
                                I32(0), "local", "Patch");
          PrimExpr ih0 = oh0 * I32(g.sh) - I32(g.pt);
          PrimExpr inside = ih0 >= I32(0) && ih0 + I32(ri) <= I32(g.H);
          const bool rows_inside = g.pt == 0 && g.pb == 0;  // every item's rows are
          // the padding value over rows [row, row + nrows) and columns [col, col + cols)
          auto fill = [&](int64_t row, int64_t nrows, int64_t col, int64_t cols) {
            return Intrin("tile.dma_fill",
                          {Region(patch, {I32(0), I32(row), I32(col)}, {C, nrows, cols}),
                           F32(qx ? 0.0 : static_cast<double>(zp)), ev});
          };
          const int64_t lcols = vlo + g.pl, rcols = win - (vhi + g.pl), cols = vhi - vlo;
          std::vector<Stmt> cols_only;  // the padding columns (the block writes the rest)
          if (lcols > 0) cols_only.push_back(fill(0, ri, 0, lcols));
          if (rcols > 0) cols_only.push_back(fill(0, ri, vhi + g.pl, rcols));
          Stmt block = Intrin("tile.dma_copy",
                              {Region(patch, {I32(0), I32(0), I32(lcols)}, {C, ri, cols}),
                               Region(X4, {n, I32(0), ih0, I32(vlo)}, {1, C, ri, cols}), ev});
          std::vector<Stmt> inner = cols_only;
          inner.push_back(block);
          if (rows_inside) {
            for (const Stmt& x : inner) s->push_back(x);
            return;
          }
          Stmt each =
              Seq({fill(0, ri, 0, win), Loop("rr", ri, [&](PrimExpr rr) {
                     PrimExpr ih = ih0 + rr;
                     return IfThenElse(
                         ih >= I32(0) && ih < I32(g.H),
                         Intrin("tile.dma_copy",
                                {Region(patch, {I32(0), rr, I32(lcols)}, {C, 1, cols}),
                                 Region(X4, {n, I32(0), ih, I32(vlo)}, {1, C, 1, cols}), ev}));
                   })});
          // the items at the borders (the segment's, known here) load their rows inside the
          // image as one block (a DMA a row paid the level's latency a row: MobileNetV2's
          // stem, 8 DMAs of 3 rows of 896 B from the DDR, 6,400 cycles on one core while the
          // others' loads held the DDR), and fill only the rows and columns outside it (the
          // whole patch: a stem's 35 KB of f32 held the DMA-in engine 550 cycles before its
          // first load)
          std::vector<std::pair<int64_t, Stmt>> edges;  // (the item's first output row, its load)
          for (int64_t k = 0; k < pcount; ++k) {
            const int64_t row0 = (pbase + k * P) / g.OW;
            const int64_t top = row0 * g.sh - g.pt;
            if (top >= 0 && top + ri <= g.H) continue;
            const int64_t lo = std::max<int64_t>(0, top), hi = std::min<int64_t>(g.H, top + ri);
            if (hi <= lo) {
              edges.emplace_back(row0, fill(0, ri, 0, win));
              continue;
            }
            std::vector<Stmt> e = cols_only;
            if (lo > top) e.push_back(fill(0, lo - top, lcols, cols));
            if (top + ri > hi) e.push_back(fill(hi - top, top + ri - hi, lcols, cols));
            e.push_back(
                Intrin("tile.dma_copy",
                       {Region(patch, {I32(0), I32(lo - top), I32(lcols)}, {C, hi - lo, cols}),
                        Region(X4, {n, I32(0), I32(lo), I32(vlo)}, {1, C, hi - lo, cols}), ev}));
            edges.emplace_back(row0, Seq(e));
          }
          constexpr size_t kMostEdgeItems = 4;  // (more: the row loop, not a chain of tests)
          Stmt border = each;
          if (edges.size() <= kMostEdgeItems)
            for (auto it = edges.rbegin(); it != edges.rend(); ++it)
              border = IfThenElse(eq(oh0, I32(it->first)), it->second, border);
          s->push_back(IfThenElse(inside, Seq(inner), border));
        };
        // the X tile of the item at (n, p0) into xl, on event ev
        auto load_x = [&](std::vector<Stmt>* s, const Buffer& xl, PrimExpr n, PrimExpr p0,
                          PrimExpr ev) {
          if (unfold) {
            load_patch(s, xl, n, floordiv(p0, I32(g.OW)), ev);
            return;
          }
          for (int64_t img = 0; img < NB; ++img) {
            PrimExpr ni = img == 0 ? n : n + I32(img);
            // (several images: the X tile as [C, image, rows, W], the source's shape)
            Buffer xl4 = Buffer(xl->data, xl->dtype, {I32(C), I32(NB), I32(r), I32(g.W)},
                                Array<PrimExpr>(), I32(0), "local", "Xl4");
            if (strided)  // rows [p0 / OW, + r) of the output: input rows sh apart
              s->push_back(
                  Intrin("tile.dma_copy",
                         {NB == 1 ? Region(xl, {I32(0), I32(0)}, {C, xcols})
                                  : Region(xl4, {I32(0), I32(img), I32(0), I32(0)}, {C, 1, r, g.W}),
                          Region(Xs, {ni, I32(0), floordiv(p0, I32(g.OW)), I32(0), I32(0)},
                                 {1, C, r, 1, g.W}),
                          ev}));
            else
              s->push_back(Intrin("tile.dma_copy", {Region(xl, {I32(0), I32(img * P)}, {C, P}),
                                                    Region(X, {ni, I32(0), p0}, {1, C, P}), ev}));
          }
        };
        // the loaded X tile xl quantised (an f32 X) and transposed into xt [positions, C]
        auto transpose_x = [&](std::vector<Stmt>* s, const Buffer& xl, const Buffer& xt) {
          Buffer xs = xl;
          if (qx) {  // quantise on load (the bits LowerConv makes), then transpose
            for (const Stmt& x : QuantiseSteps(Xq, xl, inv, zp, over(C, Xt))) s->push_back(x);
            xs = Xq;
          }
          if (unfold) {  // XT[(i, j), c * KK + tap] = patch[c, i * sh + ky * dh, j * sw + kx * dw]
            const int64_t ri = rin(r);
            for (int64_t ky = 0; ky < g.KH; ++ky)
              for (int64_t kx = 0; kx < g.KW; ++kx)
                s->push_back(CopyNest(
                    StridedView(xt, {r, g.OW, C}, {g.OW * K, K, KK}, ky * g.KW + kx, "XTv"),
                    StridedView(xs, {r, g.OW, C}, {g.sh * win, g.sw, ri * win},
                                ky * g.dh * win + kx * g.dw, "Xtv"),
                    {r, g.OW, C}));
          } else if (strided && NB > 1) {  // XT[(image, i, j), c] = X tile[c, image, i, j * sw]
            s->push_back(
                CopyNest(StridedView(xt, {NB, r, g.OW, C}, {P * C, g.OW * C, C, 1}, 0, "XTv"),
                         StridedView(xs, {NB, r, g.OW, C}, {xcols, g.W, g.sw, Xt}, 0, "Xtv"),
                         {NB, r, g.OW, C}));
          } else if (strided) {  // XT[(i, j), c] = X tile[c, i, j * sw]
            s->push_back(CopyNest(StridedView(xt, {r, g.OW, C}, {g.OW * C, C, 1}, 0, "XTv"),
                                  StridedView(xs, {r, g.OW, C}, {g.W, g.sw, xcols}, 0, "Xtv"),
                                  {r, g.OW, C}));
          } else {
            s->push_back(CopyNest(plain(xt, Pt, C, "XTv"), transposed(xs, Pt, C, "Xtv"), {Pt, C}));
          }
        };
        // front: item t's loads into slot k, on event k (no wait); compute: its transposes
        // and mm; post: its conversion and store
        // Items of one X tile run over the cores in turn, mcount of them: when a core runs
        // more than two, its first two (one in each slot) load and transpose the tile and
        // the others find it in their slot still.
        // (by_tile: a core's first two items of each tile load and transpose it)
        const bool x_reuse =
            by_tile || (!x_resident && mcount % call.cores == 0 && mcount > 2 * call.cores);
        auto loads_x = [&](PrimExpr t, std::vector<Stmt> steps) -> Stmt {
          if (!x_reuse) return Seq(steps);
          if (by_tile) return IfThenElse(tile_and_block(t).second < I32(2), Seq(steps));
          return IfThenElse(floormod(t, I32(mcount)) < I32(2 * call.cores), Seq(steps));
        };
        auto front = [&](PrimExpr t, int64_t k) {
          const Slot& sl = slots[size_t(k)];
          auto [n, p0, m0] = coords(t);
          std::vector<Stmt> s;
          PrimExpr ev = I32(k);
          if (!x_resident) {
            std::vector<Stmt> xs;
            load_x(&xs, sl.Xl, n, p0, ev);
            s.push_back(loads_x(t, xs));
          }
          if (!w_resident)
            s.push_back(Intrin(tp.weights_on_out ? "tile.dma_prefetch" : "tile.dma_copy",
                               {Region(sl.Wl, {I32(0), I32(0)}, {TMc, K}),
                                Region(W, {m0, I32(0)}, {TMc, K}), ev}));
          for (int64_t img = 0; ep.residual >= 0 && img < NB; ++img)
            s.push_back(
                Intrin("tile.dma_copy",
                       {Region(sl.Rl, {I32(0), I32(img * P)}, {TMc, P}),
                        Region(Rv, {img == 0 ? n : n + I32(img), m0, p0}, {1, TMc, P}), ev}));
          return Seq(s);
        };
        auto compute = [&](PrimExpr t, int64_t k) {
          const Slot& sl = slots[size_t(k)];
          PrimExpr m0 = std::get<2>(coords(t));
          std::vector<Stmt> s;
          if (x_resident && !all_served) {
            // the X tile transposed once, before the core's first item of all segments (its
            // weights' loads issued already), for every item after it
            std::vector<Stmt> once{Intrin("tile.wait", {I32(5)})};
            transpose_x(&once, XLr, XTr);
            PrimExpr first = t < I32(call.cores);  // (this segment's first item of the core)
            for (int64_t c = 0; c < call.cores; ++c)
              if (served_before[size_t(c)]) first = first && ne(core, I32(c));
            s.push_back(IfThenElse(first, Seq(once)));
          }
          s.push_back(Intrin("tile.wait", {I32(k)}));  // this item's loads
          std::vector<Stmt> tr;                        // the transposed form
          if (!x_resident) {
            // (a channel-major item reads the X tile as loaded; when the slot's later items
            // reuse the transposed tile, every item transposes it)
            std::vector<Stmt> xs;
            transpose_x(&xs, sl.Xl, sl.XT);
            (mixed && !x_reuse ? tr : s).push_back(loads_x(t, xs));
          }
          if (!w_resident)
            tr.push_back(
                CopyNest(plain(sl.WT, K, TMc, "WTv"), transposed(sl.Wl, K, TMc, "Wtv"), {K, TMc}));
          if (ep.residual >= 0)  // channel-major residual into the mm's [P, TMc]
            tr.push_back(CopyNest(plain(sl.Rf, Pt, TMc, "Rfv"), transposed(sl.Rl, Pt, TMc, "Rtv"),
                                  {Pt, TMc}));
          const bool relu = ep.activation == "Relu" && !res_vec && !r_i8;
          const bool clip = ep.activation == "Clip" && !res_vec && !r_i8;
          const double lo = r_i8 ? ru.lo : clip && std::isfinite(ep.lo) ? ep.lo : -big;
          const double hi = r_i8 ? ru.hi : clip && std::isfinite(ep.hi) ? ep.hi : big;
          tr.push_back(Intrin(
              "tile.mm",
              {Region(sl.Cf, {I32(0), I32(0)}, {Pt, TMc}),
               Region(x_resident ? XTr : sl.XT, {I32(0), I32(0)}, {Pt, K}),
               w_resident ? Region(WTall, {I32(0), m0}, {K, TMc})
                          : Region(sl.WT, {I32(0), I32(0)}, {K, TMc}),
               IntImm(DataType::Bool(), 0),
               has_bias ? PrimExpr(Region(Ball, {I32(0), m0}, {1, TMc})) : I32(0),
               Region(Sall, {I32(0), m0}, {1, TMc}), I32(r_i8 ? -ru.zero_point : 0),
               ep.residual >= 0 && !res_vec ? PrimExpr(Region(sl.Rf, {I32(0), I32(0)}, {Pt, TMc}))
                                            : I32(0),
               StringImm(relu ? "relu" : "none"), F32(std::isfinite(lo) ? lo : -big),
               F32(std::isfinite(hi) ? hi : big)}));
          if (!mixed) {
            for (const Stmt& x : tr) s.push_back(x);
            return Seq(s);
          }
          // channel-major: Acc[m, p] = bias[m0 + m] + (W block x X tile)[m, p]
          std::vector<Stmt> im;
          Buffer acc = Buffer(sl.Cf->data, i32, {I32(TMc), I32(Pt)}, {}, I32(0), "local", "Acc");
          if (has_bias) {  // (the int32 sums wrap in the matrix engine, as its epilogue's do)
            Buffer accv = as(sl.Cf, i32, TMc, Pt, {Pt, 1}, I32(0), "Accv");
            im.push_back(Loop("i0", TMc, [&](PrimExpr m) {
              return Loop("i1", Pt, [&](PrimExpr q) {
                return BufferStore(
                    accv, BufferLoad(Bvec, {I32(0), m0 + m}),
                    TMc > 1 && Pt > 1 ? Array<PrimExpr>{m, q} : Array<PrimExpr>{TMc > 1 ? m : q});
              });
            }));
          }
          im.push_back(Loop("i0", TMc, [&](PrimExpr m) {
            return BufferStore(sl.Sm, BufferLoad(Svec, {I32(0), m0 + m}), {I32(0), m});
          }));
          if (ep.residual >= 0) {  // (the first of AddResidualInUnits' steps, or a copy)
            Buffer rv = as(sl.Rl, sl.Rl->dtype, TMc, Pt, {Pt, 1}, I32(0), "Rlv");
            Buffer rf = as(sl.Rs, f32, TMc, Pt, {Pt, 1}, I32(0), "Rsv");
            im.push_back(over(TMc, Pt)([&](const Array<PrimExpr>& i) {
              return BufferStore(rf, Cast(f32, BufferLoad(rv, i)), i);
            }));
          }
          im.push_back(
              Intrin("tile.mm", {Region(acc, {I32(0), I32(0)}, {TMc, Pt}),
                                 w_resident ? Region(Wall, {m0, I32(0)}, {TMc, K})
                                            : Region(sl.Wl, {I32(0), I32(0)}, {TMc, K}),
                                 Region(x_resident ? XLr : sl.Xl, {I32(0), I32(0)}, {C, Pt}),
                                 IntImm(DataType::Bool(), has_bias ? 1 : 0)}));
          s.push_back(IfThenElse(implicit_at(t), Seq(im), Seq(tr)));
          return Seq(s);
        };
        auto post = [&](PrimExpr t, int64_t k) {
          const Slot& sl = slots[size_t(k)];
          auto [n, p0, m0] = coords(t);
          std::vector<Stmt> head, s;
          head.push_back(Intrin("tile.wait", {I32(2 + k)}));  // slot k's last store has drained
          Buffer yt = transposed(sl.Yt, Pt, TMc, "Ytv"), cf = plain(sl.Cf, Pt, TMc, "Cfv");
          if (res_vec) {  // the mm's epilogue stopped after the scale: the same f32 steps here
            Buffer rf = plain(sl.Rf, Pt, TMc, "ResidualSum");
            s.push_back(over(Pt, TMc)([&](const Array<PrimExpr>& i) {
              return BufferStore(cf, BufferLoad(cf, i) + BufferLoad(rf, i), i);
            }));
            s.push_back(ApplyActivation(y_i8 ? WithoutSaturatedBounds(ep, y_inv, y_zp) : ep, cf,
                                        over(Pt, TMc)));
          }
          if (y_i8) {  // quantise as the consumers would on load, written channel-major
            for (const Stmt& x :
                 QuantiseSteps(yt, cf, r_i8 ? ru.out_scale : y_inv, y_zp, over(Pt, TMc)))
              s.push_back(x);
            if (!lut.empty()) {  // the activation, one lookup per int8 element
              BufferRegion y = Region(sl.Yt, {I32(0), I32(0)}, {TMc, Pt});
              s.push_back(Intrin("tile.vec_lut", {y, y, LookupTableRegion(lut_words)}));
            }
          } else if (r_i8) {  // from the residual's units
            s.push_back(over(Pt, TMc)([&](const Array<PrimExpr>& i) {
              return BufferStore(yt, BufferLoad(cf, i) * F32(ru.out_scale), i);
            }));
          } else {
            s.push_back(CopyNest(yt, cf, {Pt, TMc}));
          }
          if (mixed) {
            std::vector<Stmt> im = channel_major_epilogue(sl.Cf, sl.Rs, sl.Sm, sl.Yt, TMc, Pt);
            Stmt tr = Seq(s);
            s.clear();
            s.push_back(IfThenElse(implicit_at(t), Seq(im), tr));
          }
          s.insert(s.begin(), head.begin(), head.end());
          for (int64_t img = 0; img < NB; ++img)
            s.push_back(Intrin("tile.dma_copy",
                               {Region(Y, {img == 0 ? n : n + I32(img), m0, p0}, {1, TMc, P}),
                                Region(sl.Yt, {I32(0), I32(img * P)}, {TMc, P}), I32(2 + k)}));
          return Seq(s);
        };
        // the vector engine converts item i - 1 and transposes item i + 1 while the matrix
        // engine multiplies item i
        // (x_resident) whether this core runs its first item in this segment: it ran none in
        // the segments before
        // (the kernel's first segment: its first loads before the constants' wait, its
        // buffers allocated from there)
        const bool hoist = early_x && !first_load.defined();
        Stmt body = ForEachItemThreeStage(core, call.cores, items, &rotation, "k", front, compute,
                                          post, hoist ? &first_load : nullptr);
        for (int64_t t = 0; t < std::min<int64_t>(items, call.cores); ++t)
          served[size_t((t + rotation - items) % call.cores)] = true;
        std::vector<Buffer> allocs;
        for (const Slot& sl : slots) {
          for (const Buffer& b : {sl.Xl, sl.XT, sl.Cf, sl.Yt})
            if (!x_resident || (!b.same_as(sl.Xl) && !b.same_as(sl.XT))) allocs.push_back(b);
          if (!w_resident) allocs.insert(allocs.end(), {sl.Wl, sl.WT});
          if (ep.residual >= 0) allocs.insert(allocs.end(), {sl.Rl, sl.Rf});
          if (mixed) allocs.push_back(sl.Sm);
          if (mixed && ep.residual >= 0) allocs.push_back(sl.Rs);
        }
        if (qx) allocs.push_back(Xq);
        if (hoist) {
          hoisted_allocs = allocs;
          hoisted_body_at = segs.size();
        } else {
          for (const Buffer& b : allocs) body = Allocate(b, body);
        }
        segs.push_back(body);
        // the next segment's buffers may take these addresses: its loads must not pass this
        // segment's compute and stores (the last stores end the chain)
        segs.push_back(Intrin("tile.wait", {I32(2)}));
        segs.push_back(Intrin("tile.wait", {I32(3)}));
      }
    }
    // (a core that ran no item has not waited for its X tile)
    if (x_resident) segs.push_back(Intrin("tile.wait", {I32(5)}));
    if (first_load.defined()) {
      // the first loads, then the table's fill (scalar stores the DMAs need not wait for),
      // in the first segment's buffers with the waits, the constants' use and its items
      std::vector<Stmt> scope = {first_load};
      if (!lut.empty()) scope.push_back(FillLookupTable(lut_words, lut));
      const auto from = segs.begin() + static_cast<std::ptrdiff_t>(first_load_at);
      const auto to = segs.begin() + static_cast<std::ptrdiff_t>(hoisted_body_at + 1);
      scope.insert(scope.end(), from, to);
      Stmt inner = Seq(scope);
      for (const Buffer& b : hoisted_allocs) inner = Allocate(b, inner);
      segs.insert(segs.erase(from, to), inner);
    } else if (!lut.empty()) {
      PlaceAfterFirstLoads(&segs, FillLookupTable(lut_words, lut));
    }
    Stmt r = Allocate(Sall, Seq(segs));
    if (has_bias) r = Allocate(Ball, r);
    if (mixed) r = Allocate(Svec, r);
    if (mixed && has_bias) r = Allocate(Bvec, r);
    if (w_resident) r = Allocate(WTall, r);
    if (w_resident && (mixed || w_early)) r = Allocate(Wall, r);
    if (x_resident) r = Allocate(XLr, Allocate(XTr, r));
    return lut.empty() ? r : Allocate(lut_words, r);
  });
  return w_l2 ? Allocate(Wsh, kernel) : kernel;
}

}  // namespace conv
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
