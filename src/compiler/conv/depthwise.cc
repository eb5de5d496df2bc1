/*
 * src/compiler/conv/depthwise.cc — the depthwise plans of the Conv strategy (LowerDepthwise):
 * vector and matrix forms, plain and pipelined, and the search among them (ChooseDepthwise).
 */
#include <algorithm>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include "src/compiler/conv/conv_plans.h"
#include "src/compiler/fused_epilogue.h"
#include "src/compiler/kernel_util.h"
#include "src/compiler/lookup_table.h"
#include "src/compiler/matrix_precision.h"
#include "src/compiler/plan_registry.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/cost_model.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace conv {

/*!
 * \brief Depthwise Conv (one input and one output channel per group). Tiles of cc
 * channels x r rows x tw columns; per tile the input patch is DMAed in as for the implicit
 * GEMM. Two forms of the taps:
 *
 * - vector (`matrix` false): each kernel tap is a multiply of a strided view of the patch
 *   by the tap's weight per channel (a stride-0 view), accumulated with an add, in tap
 *   order (kh, then kw: the matrix engine's k order);
 * - matrix (int8 only): the taps of every channel unfolded into a column matrix
 *   [cc x taps, positions] and multiplied on the matrix engine by the block-diagonal
 *   weights [cc, cc x taps] (zero but W[c, k] at [c, c x taps + k]): 1/cc of the MACs it
 *   issues are useful, and still fewer cycles than the vector engine's two passes a tap.
 *   Blocks of at most 16 channels, an mm each: `blocks` of them in an item when its
 *   positions are few (one tap copy, one epilogue and one store serve them all: at 7x7 an
 *   item of one block was some twenty commands for 784 outputs, bound by the front end).
 *   `shifted` (unit strides): no column matrix; the patch of a channel is one run, so an mm a
 *   tap multiplies the tap's diagonal block of weights by the patch from the tap's offset,
 *   its columns running over whole patch rows (the last (KW - 1) x dw of each row are not
 *   outputs: the epilogue reads the accumulator through a view that skips them). The
 *   column-channels size the items as for the column matrix.
 *
 * `pipelined`: the items in two stages (ForEachItemPipelined) with two sets of the buffers
 * their loads fill, on DMA events of their own: the next item's patch, weights, bias,
 * scales and residual load while this item computes.
 *
 * Precisions (docs/precision.md): f32 as it is. f16/bf16: the patch and the weights are
 * rounded to the narrow type (the DMA converts) and widened to f32 in L1, so the products
 * are exact and the sums f32, as on the matrix engine; the matrix form multiplies the
 * narrow values there (its block-diagonal zeros add nothing: the same sums in the same
 * order) and adds the bias after them, as the vector form does. int8: the patch is int8 (DMAed so
 * from an int8 producer, padding the zero point, or quantised on load like the implicit
 * GEMM's), and the taps accumulate in i32 (exact: at most 256 taps of |255 x 128|) after
 * the int32 bias (it holds the zero point's correction; the matrix form presets its
 * accumulator with it), then the GEMM's epilogue follows: f32(acc), times f32(w_scale[c] *
 * x_scale), the residual (an int8 one in its units), the activation, and an int8 output
 * quantised as its readers would on load. The same operations in the same order as the
 * matrix engine's epilogue: the same bits.
 */
PrimFunc LowerDepthwise(const OpCall& call, const ConvGeom& g, const Params& p,
                        const DepthwiseForm& form) {
  const bool matrix = form.matrix, pipelined = form.stages > 1, three_stage = form.stages == 3;
  const bool shifted = form.shifted, mm_converts = form.converts_on_mm;
  const int64_t blocks = form.blocks, col_channels = form.col_channels;
  const int64_t tile_elems = form.tile_elems;
  DataType f32 = DataType::Float(32), i32 = DataType::Int(32), i8 = DataType::Int(8);
  const MatrixPrecision mp = GetMatrixPrecision(call.attrs);
  const bool q = mp.int8();
  const bool x_i8 = q && call.inputs[0]->dtype == i8, qx = q && !x_i8;
  // (an int8 output in any precision: quantised from the f32 result)
  const bool y_i8 = call.outputs[0]->dtype == i8;
  if (y_i8 && !HasAttr(call.attrs, "tc_y_scale"))
    TILECORE_THROW(ValueError) << "Conv: an int8 output needs tc_y_scale";
  // the matrix form's operands: int8, or the narrow type (f16/bf16: f32 sums)
  const DataType mat_t = q ? i8 : mp.operand;
  if (matrix && mat_t == f32)
    TILECORE_THROW(InternalError) << "LowerDepthwise: the matrix form is int8, f16 or bf16";
  if (three_stage && !(matrix && pipelined))
    TILECORE_THROW(InternalError) << "LowerDepthwise: three stages are the pipelined matrix form's";
  if (shifted && !(matrix && g.sh == 1 && g.sw == 1))
    TILECORE_THROW(InternalError) << "LowerDepthwise: the shifted taps are the matrix form's, "
                                     "unit strides";
  if (mm_converts && !(matrix && q))
    TILECORE_THROW(InternalError)
        << "LowerDepthwise: the mm's conversion is the int8 matrix form's";
  const double x_scale = AttrFloat(call.attrs, "tc_x_scale", 1.0);
  const double x_inv = q ? InverseScale(x_scale) : 1.0;
  const int64_t zp = AttrInt(call.attrs, "tc_x_zero_point", 0);
  const double y_inv = y_i8 ? InverseScale(AttrFloat(call.attrs, "tc_y_scale", 1.0)) : 1.0;
  const int64_t y_zp = AttrInt(call.attrs, "tc_y_zero_point", 0);
  const DataType acc_t = q ? i32 : f32;  // what the taps accumulate in
  int64_t KK = g.KH * g.KW;
  Buffer X = View(p.in[0], {g.N, g.C, g.H, g.W}, "X");
  Buffer Wv = View(p.in[1], {g.C, KK}, "Wdw");
  bool has_bias = call.inputs.size() > 2 && call.inputs[2].defined();
  Buffer Bv = has_bias ? View(p.in[2], {g.C, 1}, "Bias") : Buffer();
  Buffer Sv = q ? View(p.in[3], {g.C, 1}, "WScale") : Buffer();
  Buffer Y = View(p.out[0], {g.N, g.C, g.OH, g.OW}, "Y");
  const FusedEpilogue ep = GetFusedEpilogue(call.attrs, call.inputs.size());
  Buffer Rv =
      ep.residual >= 0 ? View(p.in[ep.residual], {g.N, g.C, g.OH, g.OW}, "Residual") : Buffer();
  const bool r_i8 = ep.residual >= 0 && call.inputs[ep.residual]->dtype == i8;
  const ResidualUnits ru = GetResidualUnits(call.attrs, ep, y_i8);
  const double s_factor = r_i8 ? ru.x_factor : static_cast<float>(x_scale);
  // an output tile of tile_elems sums; a patch of 192 KiB (f32), half that when two are
  // loaded at once
  if (tile_elems < 1) TILECORE_THROW(InternalError) << "LowerDepthwise: a tile of " << tile_elems;
  const int64_t kElems = tile_elems;
  const int64_t kPatch = pipelined ? 24576 : 49152;
  auto rin = [&](int64_t r) { return (r - 1) * g.sh + (g.KH - 1) * g.dh + 1; };
  auto win = [&](int64_t tw) { return (tw - 1) * g.sw + (g.KW - 1) * g.dw + 1; };
  // the matrix form: blocks of up to kDepthwiseBlock channels; the column matrix
  // [channels x taps, positions] within 256 KiB and the mm's limit on N, sized for items of
  // col_channels channels (fewer channels, more positions: the mm's cost an output is the
  // same, a 7x7 Conv's patch then loads 29 rows for 23, not 11 for 5)
  if (matrix && (col_channels < 1 || col_channels > kDepthwiseBlock ||
                 (col_channels < kDepthwiseBlock && blocks > 1)))
    TILECORE_THROW(InternalError) << "LowerDepthwise: column matrix of " << col_channels
                                  << " channels, " << blocks << " blocks";
  const int64_t col_elems = (int64_t{256} << 10) / (mat_t.bits() / 8);
  const int64_t max_p = std::min<int64_t>(tc1::kMaxMmDim, col_elems / (col_channels * KK));
  int64_t TW = std::min<int64_t>(g.OW, matrix ? std::min<int64_t>(256, max_p) : 256);
  int64_t R = std::max<int64_t>(1, std::min(g.OH, (matrix ? max_p : kElems) / TW));
  while (R > 1 && rin(R) * win(TW) > kPatch) R = (R + 1) / 2;
  // (shifted: an mm's columns run over whole patch rows, the mm's limit on N: the most rows
  // within it, not half of them)
  if (shifted && (R - 1) * win(TW) + TW > tc1::kMaxMmDim)
    R = std::max<int64_t>(1, (int64_t(tc1::kMaxMmDim) - TW) / win(TW) + 1);
  // as many row tiles, of equal rows where they divide the map (56 rows as 28 + 28, not
  // 32 + 24): one segment of items, not two, each ending with its stores drained before the
  // next may take its buffers' places
  R = (g.OH + (g.OH + R - 1) / R - 1) / ((g.OH + R - 1) / R);
  int64_t CC =
      std::max<int64_t>(1, std::min(g.C, std::min(kElems / (R * TW), kPatch / (rin(R) * win(TW)))));
  if (matrix) {  // whole blocks, their column matrix within 256 KiB
    CC = std::min({CC, col_channels * blocks, col_elems / (KK * R * TW)});
  }
  int64_t cols = (g.OW + TW - 1) / TW;
  auto items = [&]() { return g.N * cols * ((g.C + CC - 1) / CC) * ((g.OH + R - 1) / R); };
  while (items() < 2 * call.cores && (CC > 1 || R > 1)) {
    if (matrix && CC > kDepthwiseBlock)  // (halved to whole blocks)
      CC = std::max(kDepthwiseBlock,
                    ((CC + 1) / 2 + kDepthwiseBlock - 1) / kDepthwiseBlock * kDepthwiseBlock);
    else if (CC > 1)
      CC = (CC + 1) / 2;
    else
      R = (R + 1) / 2;
  }
  // the channels of an item down to half, so that the busiest core computes the fewest
  // (576 channels in 14 items of 42 gave two cores four items, 168 channels; 16 of 36 give
  // every core 144), the fewest items of those that do; in the matrix form only within one
  // block (72 channels: 8 items of 9, not 5 of 16), items of several being the search's
  if (!matrix || (blocks == 1 && CC <= kDepthwiseBlock)) {
    const int64_t others = items() / ((g.C + CC - 1) / CC);
    auto busiest = [&](int64_t cc) {
      const int64_t n = others * ((g.C + cc - 1) / cc);
      return (n + call.cores - 1) / call.cores * cc;
    };
    int64_t best = CC;
    for (int64_t cc = CC - 1; cc >= std::max<int64_t>(1, CC / 2); --cc)
      if (busiest(cc) < busiest(best)) best = cc;
    CC = best;
  }
  // the patch as loaded: f32, the narrow type (converted by the DMA) or int8
  const DataType load_t = q ? (x_i8 ? i8 : f32) : mp.operand;
  const DataType wload_t = q ? i8 : mp.operand;
  int64_t rotation = 0;
  // resident: the weights, bias and scales of every channel loaded into L1 once per core
  // when they are small and the items many; an item then copies its channels' from there
  // (L1's latency, not the DDR's: four DMAs an item made a 7x7 Conv over 1152 channels
  // latency-bound)
  const int64_t param_bytes = g.C * (KK * (wload_t.bits() / 8) + (has_bias ? 4 : 0) + (q ? 4 : 0));
  const bool resident = param_bytes <= int64_t(tc1::kL1BankBytes) && items() > 2 * call.cores;
  // ... only its own channels' when the items are blocks of channels alone, as many on every
  // core (a small map: one image, one tile of rows and columns): item t, on core t mod cores,
  // takes block t, the core's (t div cores)-th. The four cores read the DDR once, not four
  // times (MobileNetV3's 576-channel 5x5 weights: 918 cycles at each core's start).
  const int64_t blocks_per_core = g.C % CC == 0 ? g.C / CC / call.cores : 0;
  const bool own_params = resident && g.N == 1 && g.OW <= TW && g.OH <= R && blocks_per_core > 0 &&
                          g.C / CC % call.cores == 0;
  const int64_t held = own_params ? blocks_per_core * CC : g.C;  // the channels a core keeps
  Buffer Wall = resident ? Local({held, KK}, wload_t, "Wall") : Buffer();
  Buffer Ball = resident && has_bias ? Local({held, 1}, acc_t, "Ball") : Buffer();
  Buffer Sall = resident && q ? Local({held, 1}, f32, "Sall") : Buffer();
  // tc_lut: the int8 result's table (the fused activation's), filled once per core
  const std::vector<int8_t> lut = y_i8 ? FusedLookupTable(call.attrs) : std::vector<int8_t>();
  Buffer lut_words = Local({64}, i32, "LutWords");
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> groups;
    if (resident) {
      // each as one contiguous run (a DMA moves a row of its region in whole beats: as
      // [C, KK] and [C, 1] they took a beat a channel, 576 beats for MobileNetV3's 5x5
      // weights of 14 KiB against 225)
      auto whole = [&](const Buffer& dst, const Buffer& src, int64_t width) {
        if (own_params) {  // blocks core, core + cores, ...: [blocks_per_core, cores, CC * width]
          const int64_t run = CC * width;
          groups.push_back(Intrin("tile.dma_copy",
                                  {Region(View(dst, {blocks_per_core, 1, run}, "Own"),
                                          {I32(0), I32(0), I32(0)}, {blocks_per_core, 1, run}),
                                   Region(View(src, {blocks_per_core, call.cores, run}, "Blocks"),
                                          {I32(0), core, I32(0)}, {blocks_per_core, 1, run}),
                                   I32(0)}));
          return;
        }
        const int64_t n = g.C * width;
        groups.push_back(
            Intrin("tile.dma_copy", {Region(View(dst, {n}, "Run"), {I32(0)}, {n}),
                                     Region(View(src, {n}, "Run"), {I32(0)}, {n}), I32(0)}));
      };
      whole(Wall, p.in[1], KK);
      if (has_bias) whole(Ball, p.in[2], 1);
      if (q) whole(Sall, p.in[3], 1);
      groups.push_back(Intrin("tile.wait", {I32(0)}));
    }
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += TW) {
      int64_t tw = std::min(TW, g.OW - ow0);
      int64_t wn = win(tw), iw0 = ow0 * g.sw - g.pl;
      int64_t vlo = std::max<int64_t>(0, iw0), vhi = std::min<int64_t>(g.W, iw0 + wn);
      for (const auto& r_seg : Segments(g.OH, R)) {
        const int64_t rcount = r_seg.first, r = r_seg.second;
        int64_t rbase = r == R ? 0 : (g.OH / R) * R, rn = rin(r);
        for (const auto& cc_seg : Segments(g.C, CC)) {
          const int64_t ccount = cc_seg.first, cc = cc_seg.second;
          int64_t cbase = cc == CC ? 0 : (g.C / CC) * CC;
          const std::vector<int64_t> pdims{cc, rn, wn}, dims{cc, r, tw};
          const int64_t P = r * tw;
          // shifted: the accumulator's columns are the patch's positions from the first
          // output's to the last's, a patch row apart per output row (its last
          // (KW - 1) x dw columns of each row are not outputs)
          const int64_t Pw = shifted ? (r - 1) * wn + tw : P;
          // the patches' padding filled once a slot, by its first item (see front)
          const bool fill_once = vhi > vlo;
          const double pad_value = x_i8 ? static_cast<double>(zp) : 0.0;
          // (matrix) the item's blocks of channels, an mm each: block-diagonal weights of
          // a block's width, bk columns (a channel's taps at its place in the block)
          const int64_t bc = std::min(cc, kDepthwiseBlock), bk = bc * KK;
          const int64_t nblocks = (cc + bc - 1) / bc, nfull = cc / bc;
          auto over_patch = [&](const auto& f) { return Nest(pdims, f); };
          auto over = [&](const auto& f) { return Nest(dims, f); };
          // the int8 taps: |x| <= 128 and |w| <= 128, at most 256 taps, so |acc| <= 2^22;
          // the quantiser keeps the int32 bias within 2^31 - 2^23 (precision.py): no sum
          // leaves the i32 range, where the vector engine saturates and the IR wraps
          auto over_acc = [&](const auto& f) {
            return q ? BoundedNest(dims, f, "int8 depthwise taps: |acc + bias| < 2^31")
                     : Nest(dims, f);
          };
          // views indexed as the nests index them (unit dims dropped)
          auto pv = [&](const Buffer& b) {
            return StridedView(b, pdims, {rn * wn, wn, 1}, 0, b->name + "v");
          };
          auto ov = [&](const Buffer& b) {
            return StridedView(b, dims, {r * tw, tw, 1}, 0, b->name + "v");
          };
          // the accumulator's outputs (shifted: a patch row apart)
          auto oacc = [&](const Buffer& b) {
            return shifted ? StridedView(b, dims, {Pw, wn, 1}, 0, b->name + "v") : ov(b);
          };
          // what an item's loads fill: one set, or one per slot when pipelined
          struct Loaded {
            Buffer Xl, Wl, Bl, Sl, Rl;
          };
          std::vector<Loaded> slots;
          for (int64_t k = 0; k < (pipelined ? 2 : 1); ++k) {
            const std::string sfx = pipelined ? std::to_string(k) : "";
            Loaded l;
            l.Xl = Local(pdims, load_t, "Xl" + sfx);  // as loaded
            l.Wl = Local({cc, KK}, wload_t, "Wl" + sfx);
            if (has_bias) l.Bl = Local({cc, 1}, acc_t, "Bl" + sfx);
            if (q) l.Sl = Local({cc, 1}, f32, "Sl" + sfx);
            if (ep.residual >= 0) l.Rl = Local(dims, call.inputs[ep.residual]->dtype, "Rl" + sfx);
            slots.push_back(l);
          }
          // what an item computes in: one set (the engines run the items in order), or in
          // three stages one per slot (the matrix engine multiplies item i in one while the
          // vector engine fills the other for item i + 1 and converts item i - 1's)
          std::vector<Buffer> work;
          auto local = [&](const std::vector<int64_t>& shape, DataType t, const std::string& name) {
            work.push_back(Local(shape, t, name));
            return work.back();
          };
          struct Work {
            Buffer O, T, A, Col, S, Of, Rf, Act, Yq;
          };
          Buffer Xq = qx ? local(pdims, i8, "Xq") : Buffer();
          Buffer Xp = load_t != acc_t && !matrix ? local(pdims, acc_t, "Xp") : Buffer();  // widened
          Buffer Wp = wload_t != acc_t && !matrix ? local({cc, KK}, acc_t, "Wp") : Buffer();
          std::vector<Work> works;
          for (int64_t k = 0; k < (three_stage ? 2 : 1); ++k) {
            const std::string sfx = three_stage ? std::to_string(k) : "";
            Work w;
            w.O = shifted ? local({cc, Pw}, acc_t, "O" + sfx) : local(dims, acc_t, "O" + sfx);
            if (!matrix) w.T = local(dims, acc_t, "T" + sfx);
            if (matrix) w.A = local({cc, bk}, mat_t, "Abd" + sfx);
            if (matrix && !shifted) w.Col = local({cc * KK, P}, mat_t, "Col" + sfx);
            // (three stages: the scales, or a narrow form's bias, that post reads; slot k's
            // loads move on)
            if (three_stage && (q || has_bias)) w.S = local({cc, 1}, f32, "S" + sfx);
            // the f32 result (shifted: its outputs gathered from the accumulator's)
            w.Of = q || shifted ? local(dims, f32, "Of" + sfx) : w.O;
            if (r_i8) w.Rf = local(dims, f32, "Rf" + sfx);
            if (ep.passes()) w.Act = local(dims, f32, "Act" + sfx);  // (SiLU's sigmoid)
            if (y_i8) w.Yq = local(dims, i8, "Yq" + sfx);
            works.push_back(w);
          }
          // item t's coordinates: image, first channel, first output row and row tile
          auto at = [&, rcount = rcount, rbase = rbase, ccount = ccount,
                     cbase = cbase](PrimExpr t) {
            PrimExpr ci = floormod(t, I32(ccount));
            PrimExpr ri = floormod(floordiv(t, I32(ccount)), I32(rcount));
            PrimExpr n = floordiv(t, I32(ccount * rcount));
            return std::make_tuple(n, I32(cbase) + ci * I32(CC), I32(rbase) + ri * I32(R), ri);
          };
          // the loads of item t into slot k, signalling `event` (waited for by back)
          auto event = [&](int64_t k) { return pipelined ? int64_t{2} + k : int64_t{0}; };
          auto front = [&, rcount = rcount, rbase = rbase, rn = rn](PrimExpr t, int64_t k) {
            PrimExpr n, c0, oh0, ri;
            std::tie(n, c0, oh0, ri) = at(t);
            const Loaded& l = slots[size_t(k)];
            const int64_t ev = event(k);
            std::vector<Stmt> s;
            // padding: real zero, the zero point in an int8 patch (the fill and the copies
            // after it are one in-order DMA queue: they land on it with no wait between; a
            // wait stalled the front end behind the previous item's loads). Filled once
            // (fill_once) the padding columns keep it, the copies writing the same columns
            // every item; a row tile at the image's top or bottom fills its padding rows again.
            // the padding value over rows [r0, r1) and columns [c0, c1) of the patch
            auto fill = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) -> Stmt {
              if (r1 <= r0 || c1 <= c0) return Evaluate(I32(0));
              return Intrin("tile.dma_fill",
                            {Region(l.Xl, {I32(0), I32(r0), I32(c0)}, {cc, r1 - r0, c1 - c0}),
                             F32(pad_value), I32(ev)});
            };
            auto fill_rows = [&](int64_t from, int64_t to) { return fill(from, to, 0, wn); };
            // (fill_once: the slot's first item, item t being the core's (t div cores)-th,
            // fills its padding columns; the padding rows are filled by every item that has
            // them. A whole patch's fill held the DMA-in engine ahead of its first copy:
            // 230 cycles an item in MobileNetV3-Small's first depthwise Conv)
            const PrimExpr slot_first = eq(floordiv(t, I32(call.cores)), I32(k));
            auto fill_cols = [&](int64_t from, int64_t to) { return fill(0, rn, from, to); };
            // (a DMA moves each row of its region in whole beats: the columns alone only when
            // they take fewer, a wide patch's)
            const int64_t beat = tc1::kDmaBytesPerCycle, eb = load_t.bits() / 8;
            auto beats = [&](int64_t cols) { return cols > 0 ? (cols * eb + beat - 1) / beat : 0; };
            const bool cols_only = beats(vlo - iw0) + beats(wn - (vhi - iw0)) < beats(wn);
            if (fill_once)
              s.push_back(IfThenElse(
                  slot_first, cols_only ? Seq({fill_cols(0, vlo - iw0), fill_cols(vhi - iw0, wn)})
                                        : fill_rows(0, rn)));
            else
              s.push_back(fill_rows(0, rn));
            // the padding rows of an item that has them (not the slot's first when it filled
            // the whole patch)
            auto pad_rows = [&](Stmt fill) -> Stmt {
              return fill_once && !cols_only ? IfThenElse(!slot_first, fill) : fill;
            };
            if (vhi > vlo) {
              // one DMA of the whole block when no padding row is in it
              PrimExpr ih0 = oh0 * I32(g.sh) - I32(g.pt);
              Stmt block =
                  Intrin("tile.dma_copy",
                         {Region(l.Xl, {I32(0), I32(0), I32(vlo - iw0)}, {cc, rn, vhi - vlo}),
                          Region(X, {n, c0, ih0, I32(vlo)}, {1, cc, rn, vhi - vlo}), I32(ev)});
              Stmt rows = Loop("rr", rn, [&](PrimExpr rr) {
                PrimExpr ih = ih0 + rr;
                return IfThenElse(
                    ih >= I32(0) && ih < I32(g.H),
                    Intrin("tile.dma_copy",
                           {Region(l.Xl, {I32(0), rr, I32(vlo - iw0)}, {cc, 1, vhi - vlo}),
                            Region(X, {n, c0, ih, I32(vlo)}, {1, cc, 1, vhi - vlo}), I32(ev)}));
              });
              // the first and the last row tile: their valid rows are known here, so
              // one DMA each (a DMA per row paid the latency of the level per row:
              // MobileNetV2's stride-2 depthwise Conv spent 270 k cycles so)
              auto edge = [&](int64_t tile_row) -> Stmt {
                int64_t top = (rbase + tile_row * R) * g.sh - g.pt;
                int64_t lo = std::max<int64_t>(0, top), hi = std::min(g.H, top + rn);
                if (hi <= lo)
                  return fill_once ? pad_rows(fill_rows(0, rn)) : Stmt(Evaluate(I32(0)));
                Stmt copy = Intrin(
                    "tile.dma_copy",
                    {Region(l.Xl, {I32(0), I32(lo - top), I32(vlo - iw0)},
                            {cc, hi - lo, vhi - vlo}),
                     Region(X, {n, c0, I32(lo), I32(vlo)}, {1, cc, hi - lo, vhi - vlo}), I32(ev)});
                if (!fill_once) return copy;
                return Seq(
                    {pad_rows(Seq({fill_rows(0, lo - top), fill_rows(hi - top, rn)})), copy});
              };
              if (fill_once) rows = Seq({pad_rows(fill_rows(0, rn)), rows});
              Stmt load = block;
              if (g.pt != 0 || g.pb != 0) {
                load = IfThenElse(eq(ri, I32(rcount - 1)), edge(rcount - 1), rows);
                load = IfThenElse(eq(ri, I32(0)), edge(0), load);
                load = IfThenElse(ih0 >= I32(0) && ih0 + I32(rn) <= I32(g.H), block, load);
              }
              s.push_back(load);
            }
            auto copy = [&](const Buffer& dst, const BufferRegion& src, int64_t rows,
                            int64_t width) {
              s.push_back(Intrin("tile.dma_copy",
                                 {Region(dst, {I32(0), I32(0)}, {rows, width}), src, I32(ev)}));
            };
            // (own_params: the item's block is the core's (t div cores)-th)
            const PrimExpr h0 = own_params ? floordiv(t, I32(call.cores)) * I32(CC) : c0;
            copy(l.Wl,
                 resident ? Region(Wall, {h0, I32(0)}, {cc, KK})
                          : Region(Wv, {c0, I32(0)}, {cc, KK}),
                 cc, KK);
            if (has_bias)
              copy(l.Bl,
                   resident ? Region(Ball, {h0, I32(0)}, {cc, 1})
                            : Region(Bv, {c0, I32(0)}, {cc, 1}),
                   cc, 1);
            if (q)
              copy(l.Sl,
                   resident ? Region(Sall, {h0, I32(0)}, {cc, 1})
                            : Region(Sv, {c0, I32(0)}, {cc, 1}),
                   cc, 1);
            if (ep.residual >= 0)
              s.push_back(Intrin("tile.dma_copy",
                                 {Region(l.Rl, {I32(0), I32(0), I32(0)}, dims),
                                  Region(Rv, {n, c0, oh0, I32(ow0)}, {1, cc, r, tw}), I32(ev)}));
            return Seq(s);
          };
          // the taps of item t from slot k (in the matrix form, up to the mm)
          auto compute = [&, rn = rn](PrimExpr t, int64_t k) {
            const Loaded& l = slots[size_t(k)];
            const Work& w = works[three_stage ? size_t(k) : 0];
            const Buffer &O = w.O, &T = w.T, &A = w.A, &Col = w.Col;
            std::vector<Stmt> s;
            s.push_back(Intrin("tile.wait", {I32(event(k))}));
            if (qx)  // quantised as the implicit GEMM does on load (padding: 0 -> zp)
              for (const Stmt& x : QuantiseSteps(pv(Xq), pv(l.Xl), x_inv, zp, over_patch))
                s.push_back(x);
            const Buffer& xs = qx ? Xq : l.Xl;  // the patch in the load or the int8 type
            Buffer Ov = oacc(O);
            Buffer bv = has_bias ? StridedView(l.Bl, dims, {1, 0, 0}, 0, "Bb") : Buffer();
            if (matrix) {
              // per block of bc channels, O[c, p] = sum over (c', k) of A[c, c' KK + k]
              // Col[c' KK + k, p] (c' in c's block): the diagonal of A's blocks takes this
              // item's weights (the rest is zero), Col the taps of every channel; the
              // accumulator is preset to the int32 bias (i32 wraps there, as in the
              // implicit GEMM)
              // (shifted: A holds a [bc, bc] diagonal block a tap, tap k's at columns
              // k bc .. k bc + bc of the block's rows)
              const int64_t row_step = shifted ? bk + 1 : bk + KK, tap_step = shifted ? bc : 1;
              if (nfull > 1)
                s.push_back(CopyNest(
                    StridedView(A, {nfull, bc, KK}, {bc * bk, row_step, tap_step}, 0, "Adiag"),
                    StridedView(l.Wl, {nfull, bc, KK}, {bc * KK, KK, 1}, 0, "Wlv"),
                    {nfull, bc, KK}));
              for (int64_t b = nfull > 1 ? nfull : 0; b < nblocks; ++b) {
                const int64_t m = std::min(bc, cc - b * bc);
                s.push_back(
                    CopyNest(StridedView(A, {m, KK}, {row_step, tap_step}, b * bc * bk, "Adiag"),
                             StridedView(l.Wl, {m, KK}, {KK, 1}, b * bc * KK, "Wlv"), {m, KK}));
              }
              // a row of taps a copy (4-D: channel, kw, row, column), not a tap a copy:
              // 5 vector commands for a 5x5 kernel's taps, were 25
              const std::vector<int64_t> tdims{cc, g.KW, r, tw};
              for (int64_t kh = 0; kh < g.KH && !shifted; ++kh)
                s.push_back(CopyNest(
                    StridedView(Col, tdims, {KK * P, P, tw, 1}, kh * g.KW * P, "ColTap"),
                    StridedView(xs, tdims, {rn * wn, g.dw, g.sh * wn, g.sw}, kh * g.dh * wn, "Tap"),
                    tdims));
              // (f16/bf16: the f32 bias is added after the sums, as the vector form and the
              // implicit GEMM add it, so that every form rounds alike)
              const bool preset = has_bias && q;
              if (preset) s.push_back(CopyNest(Ov, bv, dims));
              Buffer O2 = Buffer(O->data, acc_t, {I32(cc), I32(Pw)}, Array<PrimExpr>(), I32(0),
                                 "local", "Omat");
              // (mm_converts) the block's last mm: its epilogue writes f32(acc) over the sums
              // (scale 1, no bias, zero point or clamp: the vector engine's conversion, bit
              // for bit), so the epilogue's first pass reads f32 and no conversion runs
              auto mm = [&](const BufferRegion& c, const BufferRegion& a, const BufferRegion& b,
                            bool accumulate, bool last) {
                Array<PrimExpr> args{c, a, b, IntImm(DataType::Bool(), accumulate ? 1 : 0)};
                if (mm_converts && last) {
                  const double big = std::numeric_limits<float>::max();
                  const BufferRegion out(Buffer(O->data, f32, {I32(cc), I32(Pw)}, Array<PrimExpr>(),
                                                I32(0), "local", "Omatf"),
                                         c->begin, c->extents);
                  args = {out,      a,      b,      args[3],           I32(0),
                          F32(1.0), I32(0), I32(0), StringImm("none"), F32(-big),
                          F32(big)};
                }
                return Intrin("tile.mm", args);
              };
              // (f16/bf16 in three stages, the taps unfolded: the result is the accumulator,
              // which the store of slot k's last item reads; int8 stores its own Of or Yq, and
              // the shifted form its own Of)
              if (three_stage && !q && !shifted) s.push_back(Intrin("tile.wait", {I32(4 + k)}));
              for (int64_t b = 0; b < nblocks; ++b) {
                const int64_t m = std::min(bc, cc - b * bc);
                if (!shifted) {
                  s.push_back(mm(Region(O2, {I32(b * bc), I32(0)}, {m, P}),
                                 Region(A, {I32(b * bc), I32(0)}, {m, m * KK}),
                                 Region(Col, {I32(b * bk), I32(0)}, {m * KK, P}), preset, true));
                  continue;
                }
                // shifted: an mm a tap, its columns the patch read from the tap's offset (the
                // taps' sums in tap order, the column matrix's k order: the same sums)
                Buffer Xflat = Buffer(xs->data, xs->dtype, {I32(cc), I32(rn * wn)},
                                      Array<PrimExpr>(), I32(0), "local", "Xflat");
                for (int64_t k = 0; k < KK; ++k) {
                  const int64_t shift = k / g.KW * g.dh * wn + k % g.KW * g.dw;
                  s.push_back(mm(Region(O2, {I32(b * bc), I32(0)}, {m, Pw}),
                                 Region(A, {I32(b * bc), I32(k * bc)}, {m, m}),
                                 Region(Xflat, {I32(b * bc), I32(shift)}, {m, Pw}), preset || k > 0,
                                 k == KK - 1));
                }
              }
            } else {
              const Buffer& xw = Xp.defined() ? Xp : xs;  // widened
              const Buffer& ww = Wp.defined() ? Wp : l.Wl;
              if (Xp.defined())
                s.push_back(over_patch([&](const Array<PrimExpr>& i) {
                  return BufferStore(pv(Xp), Cast(acc_t, BufferLoad(pv(xs), i)), i);
                }));
              if (Wp.defined()) {
                Buffer wpv = StridedView(Wp, {cc, KK}, {KK, 1}, 0, "Wpv");
                Buffer wlv = StridedView(l.Wl, {cc, KK}, {KK, 1}, 0, "Wlv");
                s.push_back(Nest({cc, KK}, [&](const Array<PrimExpr>& i) {
                  return BufferStore(wpv, Cast(acc_t, BufferLoad(wlv, i)), i);
                }));
              }
              Buffer Tv = ov(T);
              for (int64_t kh = 0; kh < g.KH; ++kh) {
                for (int64_t kw = 0; kw < g.KW; ++kw) {
                  Buffer tap = StridedView(xw, dims, {rn * wn, g.sh * wn, g.sw},
                                           kh * g.dh * wn + kw * g.dw, "Tap");
                  Buffer wt = StridedView(ww, dims, {KK, 0, 0}, kh * g.KW + kw, "Wtap");
                  bool first = kh == 0 && kw == 0;
                  const Buffer& dst = first ? Ov : Tv;
                  s.push_back(over_acc([&](const Array<PrimExpr>& i) {
                    return BufferStore(dst, BufferLoad(tap, i) * BufferLoad(wt, i), i);
                  }));
                  if (!first) {
                    s.push_back(over_acc([&](const Array<PrimExpr>& i) {
                      return BufferStore(Ov, BufferLoad(Ov, i) + BufferLoad(Tv, i), i);
                    }));
                  }
                }
              }
              if (has_bias)  // the f32 bias, or the int32 one (before the dequantisation)
                s.push_back(over_acc([&](const Array<PrimExpr>& i) {
                  return BufferStore(Ov, BufferLoad(Ov, i) + BufferLoad(bv, i), i);
                }));
            }
            if (three_stage && q) {  // what post reads of slot k, before its next loads
              Buffer sw = StridedView(w.S, {cc}, {1}, 0, "Sw"),
                     sl = StridedView(l.Sl, {cc}, {1}, 0, "Slv");
              s.push_back(Nest({cc}, [&](const Array<PrimExpr>& i) {
                return BufferStore(sw, BufferLoad(sl, i) * F32(s_factor), i);
              }));
            } else if (three_stage && has_bias) {
              s.push_back(CopyNest(StridedView(w.S, {cc}, {1}, 0, "Sw"),
                                   StridedView(l.Bl, {cc}, {1}, 0, "Blv"), {cc}));
            }
            return Seq(s);
          };
          // the epilogue and store of item t from slot k
          auto post = [&](PrimExpr t, int64_t k) {
            auto [n, c0, oh0, ri] = at(t);
            const Loaded& l = slots[size_t(k)];
            const Work& w = works[three_stage ? size_t(k) : 0];
            const Buffer &O = w.O, &Of = w.Of, &Rf = w.Rf, &Act = w.Act, &Yq = w.Yq;
            Buffer Ov = oacc(O);
            std::vector<Stmt> s;
            // (three stages) slot k's last store has drained before its buffers take this
            // item's result
            if (three_stage) s.push_back(Intrin("tile.wait", {I32(4 + k)}));
            Buffer Ofv = ov(Of);
            if (q) {               // dequantise: f32(acc) * f32(w_scale[c] * x_scale (or x_factor))
              if (!three_stage) {  // (three stages: compute scaled them into w.S)
                Buffer slv = StridedView(l.Sl, {cc}, {1}, 0, "Slv");
                s.push_back(Nest({cc}, [&](const Array<PrimExpr>& i) {
                  return BufferStore(slv, BufferLoad(slv, i) * F32(s_factor), i);
                }));
              }
              // (mm_converts: the sums are f32 already, scaled as they are gathered)
              Buffer sums = Ofv;
              if (mm_converts)
                sums = oacc(
                    Buffer(O->data, f32, O->shape, Array<PrimExpr>(), I32(0), "local", "Osum"));
              else
                s.push_back(over([&](const Array<PrimExpr>& i) {
                  return BufferStore(Ofv, Cast(f32, BufferLoad(Ov, i)), i);
                }));
              Buffer sv = StridedView(three_stage ? w.S : l.Sl, dims, {1, 0, 0}, 0, "Sb");
              s.push_back(over([&](const Array<PrimExpr>& i) {
                return BufferStore(Ofv, BufferLoad(sums, i) * BufferLoad(sv, i), i);
              }));
            } else if (shifted) {  // the narrow form's sums, gathered
              s.push_back(CopyNest(Ofv, Ov, dims));
            }
            if (!q && matrix && has_bias) {  // the narrow form's bias, after the sums
              Buffer bv = StridedView(three_stage ? w.S : l.Bl, dims, {1, 0, 0}, 0, "Bb");
              s.push_back(over([&](const Array<PrimExpr>& i) {
                return BufferStore(Ofv, BufferLoad(Ofv, i) + BufferLoad(bv, i), i);
              }));
            }
            auto add_residual = [&]() {  // (an int8 one in its units)
              if (r_i8) {
                for (const Stmt& x : AddResidualInUnits(ru, Ofv, ov(l.Rl), ov(Rf), over))
                  s.push_back(x);
              } else {
                s.push_back(over([&](const Array<PrimExpr>& i) {
                  return BufferStore(Ofv, BufferLoad(Ofv, i) + BufferLoad(ov(l.Rl), i), i);
                }));
              }
            };
            if (ep.residual >= 0 && !ep.residual_last) add_residual();
            if (!r_i8)
              s.push_back(ApplyActivation(y_i8 ? WithoutSaturatedBounds(ep, y_inv, y_zp) : ep, Ofv,
                                          over, ep.passes() ? ov(Act) : Buffer()));
            if (ep.residual_last) add_residual();
            if (r_i8 && !y_i8)  // from the residual's units
              s.push_back(over([&](const Array<PrimExpr>& i) {
                return BufferStore(Ofv, BufferLoad(Ofv, i) * F32(ru.out_scale), i);
              }));
            if (y_i8)  // quantised as the readers would on load
              for (const Stmt& x :
                   QuantiseSteps(ov(Yq), Ofv, r_i8 ? ru.out_scale : y_inv, y_zp, over))
                s.push_back(x);
            BufferRegion y_region = Region(Y, {n, c0, oh0, I32(ow0)}, {1, cc, r, tw});
            BufferRegion result = Region(y_i8 ? Yq : Of, {I32(0), I32(0), I32(0)}, dims);
            if (!lut.empty())  // the activation, one lookup per int8 element
              s.push_back(Intrin("tile.vec_lut", {result, result, LookupTableRegion(lut_words)}));
            if (three_stage)
              s.push_back(Intrin("tile.dma_copy", {y_region, result, I32(4 + k)}));
            else
              s.push_back(DmaWait(y_region, result, 1));
            return Seq(s);
          };
          auto back = [&](PrimExpr t, int64_t k) { return Seq({compute(t, k), post(t, k)}); };
          const int64_t count = g.N * rcount * ccount;
          Stmt tile =
              three_stage ? ForEachItemThreeStage(core, call.cores, count, &rotation, "t", front,
                                                  compute, post)
              : pipelined
                  ? ForEachItemPipelined(core, call.cores, count, &rotation, "t", front, back)
                  : ForEachItem(core, call.cores, count, &rotation, "t", [&](PrimExpr t) {
                      return Seq({front(t, 0), back(t, 0)});
                    });
          if (!tile.defined()) continue;
          if (three_stage)  // the next group's buffers may take these addresses
            tile = Seq({tile, Intrin("tile.wait", {I32(4)}), Intrin("tile.wait", {I32(5)})});
          if (matrix) {  // zero once: the items write only the diagonal blocks
            // int8: A - A on the vector engine, whose queue orders it before the items'
            // copies into the diagonal, while their first loads start on the DMA engines (a
            // fill held the DMA-in engine ahead of them, and the front end until it ended);
            // a narrow float's A - A may be NaN: those are filled
            std::vector<Stmt> zero;
            for (const Work& w : works) {
              BufferRegion a = Region(w.A, {I32(0), I32(0)}, {cc, bk});
              zero.push_back(q ? Intrin("tile.vec_sub", {a, a, a})
                               : Intrin("tile.dma_fill", {a, F32(0), I32(0)}));
            }
            if (!q) zero.push_back(Intrin("tile.wait", {I32(0)}));
            zero.push_back(tile);
            tile = Seq(zero);
          }
          for (const Loaded& l : slots)
            for (const Buffer& b : {l.Xl, l.Wl, l.Bl, l.Sl, l.Rl})
              if (b.defined()) tile = Allocate(b, tile);
          for (const Buffer& b : work) tile = Allocate(b, tile);
          groups.push_back(tile);
        }
      }
    }
    if (!lut.empty()) PlaceAfterFirstLoads(&groups, FillLookupTable(lut_words, lut));
    Stmt all = Seq(groups);
    for (const Buffer& b : {Wall, Ball, Sall})
      if (b.defined()) all = Allocate(b, all);
    return lut.empty() ? all : Allocate(lut_words, all);
  });
  return MakeFunc(call, p, body);
}

PrimFunc ChooseDepthwise(const OpCall& call, const ConvGeom& g, const Params& p) {
  // the forms (vector, and in int8, f16 or bf16 matrix) plain and pipelined, the cost
  // model's pick (tc_depthwise_matrix and tc_pipeline override it: 0 one stage, 1 two, 2
  // three)
  const int64_t want_matrix = AttrInt(call.attrs, "tc_depthwise_matrix", -1);
  const int64_t want_pipe = AttrInt(call.attrs, "tc_pipeline", -1);
  const int64_t want_blocks = AttrInt(call.attrs, "tc_depthwise_blocks", -1);
  // (f32 stays on the vector engine: the matrix engine's f32 rate over the 1 in 16 useful
  // products of the block-diagonal weights is below the vector engine's)
  const bool matrix_form = GetMatrixPrecision(call.attrs).operand != DataType::Float(32);
  std::optional<PrimFunc> best;
  int64_t best_cycles = 0;
  std::string failed;
  // three stages (the matrix form: its mm beside the vector engine's taps and epilogue)
  // read nothing of an item's loads after its taps: not with a residual
  const bool residual = GetFusedEpilogue(call.attrs, call.inputs.size()).residual >= 0;
  const int64_t want_col = AttrInt(call.attrs, "tc_depthwise_col_channels", kDepthwiseBlock);
  // the matrix form's taps read in place, an mm a tap (unit strides only)
  const int64_t want_shifted = AttrInt(call.attrs, "tc_depthwise_shifted", -1);
  const bool can_shift = g.sh == 1 && g.sw == 1;
  if (want_shifted == 1 && !can_shift)
    TILECORE_THROW(ValueError) << "Conv: tc_depthwise_shifted 1 needs unit strides, got " << g.sh
                               << "x" << g.sw;
  DepthwiseForm best_form;
  // a candidate's estimate; none when it does not fit once its buffers are placed in banks
  // (`failed` says why, when no candidate fits)
  auto price = [&](const PrimFunc& f) -> std::optional<int64_t> {
    try {
      return EstimateStrategy(f, call.l1_bytes, static_cast<int>(call.cores)).cycles;
    } catch (const ffi::Error& e) {
      failed = e.what();
      return std::nullopt;
    }
  };
  const bool matrix_enabled = PlanEnabled("conv.depthwise.matrix");
  if (want_shifted == 1 && !matrix_enabled)
    TILECORE_THROW(ValueError) << "Conv: tc_depthwise_shifted 1 asks for conv.depthwise.matrix, "
                                  "which compiler.disabled_plans turns off";
  if (want_shifted == 1 && (!matrix_form || want_matrix == 0))
    TILECORE_THROW(ValueError)
        << "Conv: tc_depthwise_shifted 1 needs the matrix form (int8, f16 or bf16)";
  if (want_matrix == 1 && !matrix_enabled)
    TILECORE_THROW(ValueError) << "Conv: tc_depthwise_matrix 1 asks for conv.depthwise.matrix, "
                                  "which compiler.disabled_plans turns off";
  // the int8 matrix form's last mm converting its sums to f32 in its epilogue
  const int64_t want_mm_converts = AttrInt(call.attrs, "tc_depthwise_mm_converts", -1);
  const bool int8_matrix =
      GetMatrixPrecision(call.attrs).int8() && matrix_enabled && want_matrix != 0;
  if (want_mm_converts == 1 && !int8_matrix)
    TILECORE_THROW(ValueError)
        << "Conv: tc_depthwise_mm_converts 1 needs the int8 depthwise matrix form"
        << (matrix_enabled ? "" : " (compiler.disabled_plans turns it off)");
  auto depthwise_text = [](const DepthwiseForm& f) {
    std::ostringstream o;
    o << (f.matrix ? "conv.depthwise.matrix" : "conv.depthwise.vector") << " stages=" << f.stages;
    if (f.matrix) o << " blocks=" << f.blocks << " column-channels=" << f.col_channels;
    if (f.shifted) o << " shifted";
    if (f.tile_elems != kDepthwiseTileElems) o << " tile=" << f.tile_elems;
    if (f.converts_on_mm) o << " mm-converts";
    return o.str();
  };
  // (the forms below take the mm's conversion when it is asked for)
  const bool forced_converts = want_mm_converts == 1;
  auto lower = [&](DepthwiseForm f) {
    f.converts_on_mm = f.converts_on_mm || (forced_converts && f.matrix);
    return WithPlan(LowerDepthwise(call, g, p, f), depthwise_text(f));
  };
  // the fastest matrix form (and its cycles), which the shifted taps are priced for
  std::optional<std::pair<DepthwiseForm, int64_t>> best_matrix;
  for (bool matrix : {false, true}) {
    if ((matrix && (!matrix_form || !matrix_enabled)) ||
        (want_matrix >= 0 && matrix != (want_matrix == 1)) ||
        (!matrix && (want_shifted == 1 || forced_converts)))
      continue;
    for (int stages : {1, 2, 3}) {
      if (want_pipe >= 0 && stages != want_pipe + 1) continue;
      if (stages == 3 && (!matrix || residual)) continue;
      // (matrix) items of one block of channels, or of several when the positions are
      // few: fewer commands an output where the front end bounds the item
      for (int64_t blocks : {1, 2, 4, 16}) {
        if (want_blocks >= 0 ? blocks != want_blocks
                             : blocks > 1 && (!matrix || g.OH * g.OW > 512 ||  // (fill L1 so)
                                              want_col < kDepthwiseBlock))
          continue;
        DepthwiseForm form;
        form.matrix = matrix, form.stages = stages, form.blocks = blocks;
        form.col_channels = matrix && blocks == 1 ? want_col : kDepthwiseBlock;
        form.shifted = matrix && want_shifted == 1;
        PrimFunc f = lower(form);
        const std::optional<int64_t> cycles = price(f);
        if (!cycles) continue;
        if (matrix && (!best_matrix || *cycles < best_matrix->second))
          best_matrix = std::make_pair(form, *cycles);
        if (!best || *cycles < best_cycles) best = f, best_cycles = *cycles, best_form = form;
      }
    }
  }
  // the fastest matrix form again with its taps read in place (unit strides: an mm a tap,
  // no column matrix, so the vector engine does not unfold them), kept when faster than
  // every form (also where unfolding the taps made the matrix form lose to the vector one)
  if (best_matrix && can_shift && want_shifted < 0) {
    DepthwiseForm form = best_matrix->first;
    form.shifted = true;
    PrimFunc f = lower(form);
    const std::optional<int64_t> cycles = price(f);
    if (cycles && *cycles < best_cycles) best = f, best_cycles = *cycles, best_form = form;
  }
  // the fastest matrix form of one block an item, its column matrix sized for fewer
  // channels (more positions an item: fewer rows of its patch loaded twice); kept when
  // kFewerChannelsGain faster: its items are more, each a front end's commands, which a
  // layer group's prefetch pieces share (MNASNet's 5x5 stride-2 Conv over 288 channels,
  // estimated 1% faster with 8, was bound by its front end in its group)
  constexpr double kFewerChannelsGain = 0.015;
  if (best && best_form.matrix && best_form.blocks == 1 &&
      !HasAttr(call.attrs, "tc_depthwise_col_channels")) {
    const DepthwiseForm sixteen = best_form;
    for (int64_t col : {int64_t{8}, int64_t{4}}) {
      DepthwiseForm form = sixteen;
      form.col_channels = col;
      PrimFunc f = lower(form);
      const std::optional<int64_t> cycles = price(f);
      if (cycles && *cycles < best_cycles * (1 - kFewerChannelsGain))
        best = f, best_cycles = *cycles, best_form = form;
    }
  }
  // the fastest shifted form of one block an item again with items of more outputs: it
  // issues an mm a tap an item, each paying the matrix engine's pipeline fill, so more
  // positions an mm (or its channels down to 4 or 8, where the larger tile leaves room for
  // no more rows) take fewer of them (MobileNetV2's 3 x 3 over 144 channels at 56 x 56: 162
  // mms a core of 1,854 columns); kept when kFewerChannelsGain faster, its items being fewer
  // and larger
  if (best && best_form.shifted && best_form.blocks == 1 &&
      !HasAttr(call.attrs, "tc_depthwise_col_channels")) {
    std::optional<std::pair<PrimFunc, DepthwiseForm>> larger;
    int64_t larger_cycles = 0;
    for (int64_t col : {kDepthwiseBlock, int64_t{8}, int64_t{4}}) {
      DepthwiseForm form = best_form;
      form.col_channels = col, form.tile_elems = kDepthwiseShiftedTileElems;
      PrimFunc f = lower(form);
      const std::optional<int64_t> cycles = price(f);
      if (cycles && (!larger || *cycles < larger_cycles))
        larger = std::make_pair(f, form), larger_cycles = *cycles;
    }
    if (larger && larger_cycles < best_cycles * (1 - kFewerChannelsGain))
      best = larger->first, best_cycles = larger_cycles, best_form = larger->second;
  }
  // the fastest int8 matrix form again with its last mm converting the sums to f32 (the
  // matrix engine's epilogue: m x n / 64 cycles an mm more, one pass of the vector engine's
  // epilogue less), kept when faster: where the vector engine bounds the Conv
  if (best && best_form.matrix && int8_matrix && want_mm_converts < 0) {
    DepthwiseForm form = best_form;
    form.converts_on_mm = true;
    PrimFunc f = lower(form);
    const std::optional<int64_t> cycles = price(f);
    if (cycles && *cycles < best_cycles) best = f, best_cycles = *cycles, best_form = form;
  }
  if (!best && !failed.empty()) TILECORE_THROW(ValueError) << failed;
  const char* off = matrix_enabled ? "" : ", which compiler.disabled_plans turns off";
  if (!best && want_pipe == 2)
    TILECORE_THROW(ValueError)
        << "Conv: tc_pipeline 2 (three stages) needs the matrix form (int8, f16 or bf16) "
           "without a residual"
        << off;
  if (!best && want_blocks > 1)
    TILECORE_THROW(ValueError) << "Conv: tc_depthwise_blocks " << want_blocks
                               << " needs the matrix form (int8, f16 or bf16)" << off;
  if (!best) TILECORE_THROW(ValueError) << "Conv: tc_depthwise_matrix 1 needs int8, f16 or bf16";
  return *best;
}

}  // namespace conv
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
