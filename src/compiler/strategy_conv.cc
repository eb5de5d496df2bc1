/*
 * src/compiler/strategy_conv.cc — Conv (1-D and 2-D; grouped, depthwise, dilated,
 * strided, padded, with bias) as an implicit GEMM on the matrix engine.
 *
 * Per group g the output Y[n, g*Mg + m, oh, ow] = W_g[m, k] x col[k, (oh, ow)] with
 * k = (c, kh, kw): the ONNX weight layout is already the M x K matrix. The output of
 * one (n, g) is cut into tiles of R rows x TW columns (R * TW <= 256 positions; TW
 * = OW unless OW > 256) and TM output channels (<= 128); K is cut into chunks of CC
 * input channels (CC * KH * KW <= 256). For each chunk the input rows the tile needs
 * are DMAed row by row into a zero-filled L1 patch (padding = the zeros left; a tile whose
 * rows are all in the image fills only its padding columns when that is fewer DMA beats), the
 * patch is unfolded into col (im2col, in L1, one vector copy per tap from a strided view
 * of the patch; a 1x1 Conv with unit strides and no padding over whole rows skips it: its
 * patch is the column matrix), and tile.mm accumulates (CC, then R, shrink when they would overflow
 * L1). The input block is one DMA when the tile has no padding row (else one per row), and a Conv
 * with one kernel row and a row stride loads only the rows it uses. A work item computes MB blocks
 * of TM output channels from each unfolded chunk, so the input is read once per MB blocks; the cost
 * model (cost_model.h) picks MB among those whose accumulators fit L1 (fewer items for the cores
 * against less input traffic). Column tiles are placed at compile time (a loop in the generator),
 * so every DMA has constant extents; rows, output channels and images are loops, spread over the
 * cores. A depthwise Conv (Cg = Mg = 1) runs on the vector engine instead (LowerDepthwise).
 *
 * Precisions (tc_precision, docs/precision.md): in f16/bf16 the patch, col and weight
 * tiles hold the narrow type (the DMA converts f32 data, nearest even) and tile.mm
 * accumulates in f32. In int8 the patch is DMAed in f32 and quantised in L1 (multiply by
 * f32(1 / tc_x_scale), add the zero point, tcvt to i8: nearest even, saturating); the
 * int8 weights are DMAed as they are, tile.mm accumulates in i32 over the K chunks, then
 * the int32 bias is added, the sum converted to f32 and multiplied by the per-channel
 * f32(tc_x_scale * w_scale[m]). An int8 X (quantised by its producer) is DMAed as it is;
 * an int8 Y is quantised after the epilogue (docs/precision.md, "int8 between ops").
 *
 * Epilogue (fused_epilogue.h): the residual (loaded at the start of the item, event 3),
 * then Relu, Clip, SiLU or HardSwish, on the f32 result before it is stored; an int8
 * residual is added in its own units (ResidualUnits), the output scaled from them after.
 * With tc_lut (an int8 output) the activation is a 256-entry table instead (lookup_table.h):
 * the result quantised with tc_y_scale, then one tile.vec_lut per int8 tile.
 * Prologue: with tc_channel_scale (one group, f32 data) each loaded patch is multiplied by
 * its channels' values of the per-channel input (a squeeze-excite's scale, loaded with the
 * patch) before it is quantised or unfolded. An int8 X with a channel scale (stored so by
 * its producer, its code in tc_channel_scale.tc_x_scale / .tc_x_zero_point) is loaded as
 * it is and dequantised into the f32 patch first, (code - zero point) x scale.
 *
 * Further candidates: blocks of 64 channels when blocks of 128 leave the cores too few
 * items; items pipelined (ForEachItemPipelined: the next item's loads and mms before this
 * item's epilogue, two sets of accumulators); the input staged in L2 (each core copies a
 * share, a barrier, the items read their patches from L2); for an int8 Conv, the
 * transposed product whose epilogue runs in the matrix engine (LowerConvTransposed). A plan
 * chosen once is reused for Convs that differ only in scales (PlanKey).
 */
#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>

#include "fused_epilogue.h"
#include "kernel_util.h"
#include "lookup_table.h"
#include "matrix_precision.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/cost_model.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/transform/pass.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

namespace tc1 = arch::tc1;
constexpr int64_t kMaxP = 256, kMaxK = 256, kMaxTM = 128;
/*! \brief Output positions (all images) up to which a Conv's input channels are one
 * chunk (LowerConv). */
constexpr int64_t kFewPositions = 16;
/*! \brief The bytes of a block's two weight tiles up to which those few positions take
 * more than kMaxK channels' taps a chunk. */
constexpr int64_t kFewPositionsWeightBytes = int64_t{tc1::kL1Bytes} / 4;

struct ConvGeom {
  int64_t N, C, H, W, M, KH, KW, OH, OW, G, Cg, Mg;
  int64_t sh, sw, dh, dw, pt, pl, pb, pr;
};

bool Geometry(const std::vector<TensorSpec>& ins, const Map<String, Any>& attrs, ConvGeom* g,
              std::string* why) {
  auto xs = Shape(ins[0]), ws = Shape(ins[1]);
  if (xs.size() != ws.size() || (xs.size() != 3 && xs.size() != 4)) {
    *why = "Conv: only 1-D and 2-D convolutions (X and W of rank 3 or 4)";
    return false;
  }
  bool one_d = xs.size() == 3;
  if (one_d) {
    xs.insert(xs.begin() + 2, 1);
    ws.insert(ws.begin() + 2, 1);
  }
  g->N = xs[0];
  g->C = xs[1];
  g->H = xs[2];
  g->W = xs[3];
  g->M = ws[0];
  g->KH = ws[2];
  g->KW = ws[3];
  g->G = AttrInt(attrs, "group", 1);
  if (g->G <= 0 || g->C % g->G != 0 || g->M % g->G != 0 || ws[1] * g->G != g->C) {
    *why = "Conv: channels do not match the group count";
    return false;
  }
  g->Cg = g->C / g->G;
  g->Mg = g->M / g->G;
  size_t nd = one_d ? 1 : 2;
  auto strides = AttrInts(attrs, "strides", std::vector<int64_t>(nd, 1));
  auto dil = AttrInts(attrs, "dilations", std::vector<int64_t>(nd, 1));
  auto pads = AttrInts(attrs, "pads", std::vector<int64_t>(2 * nd, 0));
  if (strides.size() != nd || dil.size() != nd || pads.size() != 2 * nd) {
    *why = "Conv: strides, dilations or pads of the wrong length";
    return false;
  }
  if (one_d) {
    strides.insert(strides.begin(), 1);
    dil.insert(dil.begin(), 1);
    pads = {0, pads[0], 0, pads[1]};
  }
  g->sh = strides[0];
  g->sw = strides[1];
  g->dh = dil[0];
  g->dw = dil[1];
  std::string ap = AttrStr(attrs, "auto_pad", "NOTSET");
  int64_t in[2] = {g->H, g->W}, k[2] = {g->KH, g->KW}, s[2] = {g->sh, g->sw}, d[2] = {g->dh, g->dw};
  int64_t pb[2] = {pads[0], pads[1]}, pe[2] = {pads[2], pads[3]}, out[2];
  for (int i = 0; i < 2; ++i) {
    int64_t ek = (k[i] - 1) * d[i] + 1;
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      out[i] = (in[i] + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>((out[i] - 1) * s[i] + ek - in[i], 0);
      pb[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (ap == "VALID") {
      pb[i] = pe[i] = 0;
    }
    out[i] = (in[i] + pb[i] + pe[i] - ek) / s[i] + 1;
  }
  if (one_d) pb[0] = pe[0] = 0;
  g->pt = pb[0];
  g->pl = pb[1];
  g->pb = pe[0];
  g->pr = pe[1];
  g->OH = out[0];
  g->OW = out[1];
  if (g->OH <= 0 || g->OW <= 0) {
    *why = "Conv: empty output";
    return false;
  }
  if (g->KH * g->KW > kMaxK) {
    *why = "Conv: kernel window larger than " + std::to_string(kMaxK) + " taps";
    return false;
  }
  return true;
}

std::vector<std::pair<int64_t, int64_t>> Segs(int64_t n, int64_t t) {
  std::vector<std::pair<int64_t, int64_t>> s;
  if (n / t > 0) s.push_back({n / t, t});
  if (n % t > 0) s.push_back({1, n % t});
  return s;
}

/*! \brief The most channels of a block of the depthwise matrix form (an mm's rows). */
constexpr int64_t kDepthwiseBlock = 16;

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
PrimFunc LowerDepthwise(const OpCall& call, const ConvGeom& g, const Params& p, bool matrix,
                        bool pipelined, bool three_stage, int64_t blocks, int64_t col_channels) {
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
  // a 32 KiB output tile; a patch of 192 KiB (f32), half that when two are loaded at once
  constexpr int64_t kElems = 8192;
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
      for (const auto& r_seg : Segs(g.OH, R)) {
        const int64_t rcount = r_seg.first, r = r_seg.second;
        int64_t rbase = r == R ? 0 : (g.OH / R) * R, rn = rin(r);
        for (const auto& cc_seg : Segs(g.C, CC)) {
          const int64_t ccount = cc_seg.first, cc = cc_seg.second;
          int64_t cbase = cc == CC ? 0 : (g.C / CC) * CC;
          const std::vector<int64_t> pdims{cc, rn, wn}, dims{cc, r, tw};
          const int64_t P = r * tw;
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
            w.O = local(dims, acc_t, "O" + sfx);
            if (!matrix) w.T = local(dims, acc_t, "T" + sfx);
            if (matrix) w.A = local({cc, bk}, mat_t, "Abd" + sfx);
            if (matrix) w.Col = local({cc * KK, P}, mat_t, "Col" + sfx);
            // (three stages: the scales, or a narrow form's bias, that post reads; slot k's
            // loads move on)
            if (three_stage && (q || has_bias)) w.S = local({cc, 1}, f32, "S" + sfx);
            w.Of = q ? local(dims, f32, "Of" + sfx) : w.O;  // the f32 result
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
            auto fill_rows = [&](int64_t from, int64_t to) -> Stmt {
              if (to <= from) return Evaluate(I32(0));
              return Intrin("tile.dma_fill",
                            {Region(l.Xl, {I32(0), I32(from), I32(0)}, {cc, to - from, wn}),
                             F32(pad_value), I32(ev)});
            };
            // (fill_once: the slot's first item fills it whole, item t being the core's
            // (t div cores)-th)
            const PrimExpr slot_first = eq(floordiv(t, I32(call.cores)), I32(k));
            s.push_back(fill_once ? IfThenElse(slot_first, fill_rows(0, rn)) : fill_rows(0, rn));
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
                  return fill_once ? Stmt(IfThenElse(!slot_first, fill_rows(0, rn)))
                                   : Stmt(Evaluate(I32(0)));
                Stmt copy = Intrin(
                    "tile.dma_copy",
                    {Region(l.Xl, {I32(0), I32(lo - top), I32(vlo - iw0)},
                            {cc, hi - lo, vhi - vlo}),
                     Region(X, {n, c0, I32(lo), I32(vlo)}, {1, cc, hi - lo, vhi - vlo}), I32(ev)});
                if (!fill_once) return copy;
                return Seq({IfThenElse(!slot_first,
                                       Seq({fill_rows(0, lo - top), fill_rows(hi - top, rn)})),
                            copy});
              };
              if (fill_once) rows = Seq({IfThenElse(!slot_first, fill_rows(0, rn)), rows});
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
            Buffer Ov = ov(O);
            Buffer bv = has_bias ? StridedView(l.Bl, dims, {1, 0, 0}, 0, "Bb") : Buffer();
            if (matrix) {
              // per block of bc channels, O[c, p] = sum over (c', k) of A[c, c' KK + k]
              // Col[c' KK + k, p] (c' in c's block): the diagonal of A's blocks takes this
              // item's weights (the rest is zero), Col the taps of every channel; the
              // accumulator is preset to the int32 bias (i32 wraps there, as in the
              // implicit GEMM)
              if (nfull > 1)
                s.push_back(
                    CopyNest(StridedView(A, {nfull, bc, KK}, {bc * bk, bk + KK, 1}, 0, "Adiag"),
                             StridedView(l.Wl, {nfull, bc, KK}, {bc * KK, KK, 1}, 0, "Wlv"),
                             {nfull, bc, KK}));
              for (int64_t b = nfull > 1 ? nfull : 0; b < nblocks; ++b) {
                const int64_t m = std::min(bc, cc - b * bc);
                s.push_back(CopyNest(StridedView(A, {m, KK}, {bk + KK, 1}, b * bc * bk, "Adiag"),
                                     StridedView(l.Wl, {m, KK}, {KK, 1}, b * bc * KK, "Wlv"),
                                     {m, KK}));
              }
              // a row of taps a copy (4-D: channel, kw, row, column), not a tap a copy:
              // 5 vector commands for a 5x5 kernel's taps, were 25
              const std::vector<int64_t> tdims{cc, g.KW, r, tw};
              for (int64_t kh = 0; kh < g.KH; ++kh)
                s.push_back(CopyNest(
                    StridedView(Col, tdims, {KK * P, P, tw, 1}, kh * g.KW * P, "ColTap"),
                    StridedView(xs, tdims, {rn * wn, g.dw, g.sh * wn, g.sw}, kh * g.dh * wn, "Tap"),
                    tdims));
              // (f16/bf16: the f32 bias is added after the sums, as the vector form and the
              // implicit GEMM add it, so that every form rounds alike)
              const bool preset = has_bias && q;
              if (preset) s.push_back(CopyNest(Ov, bv, dims));
              Buffer O2 = Buffer(O->data, acc_t, {I32(cc), I32(P)}, Array<PrimExpr>(), I32(0),
                                 "local", "Omat");
              // (f16/bf16 in three stages: the result is the accumulator, which the store of
              // slot k's last item reads; int8 stores its own Of or Yq)
              if (three_stage && !q) s.push_back(Intrin("tile.wait", {I32(4 + k)}));
              for (int64_t b = 0; b < nblocks; ++b) {
                const int64_t m = std::min(bc, cc - b * bc);
                s.push_back(Intrin("tile.mm", {Region(O2, {I32(b * bc), I32(0)}, {m, P}),
                                               Region(A, {I32(b * bc), I32(0)}, {m, m * KK}),
                                               Region(Col, {I32(b * bk), I32(0)}, {m * KK, P}),
                                               IntImm(DataType::Bool(), preset ? 1 : 0)}));
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
            Buffer Ov = ov(O);
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
              s.push_back(over([&](const Array<PrimExpr>& i) {
                return BufferStore(Ofv, Cast(f32, BufferLoad(Ov, i)), i);
              }));
              Buffer sv = StridedView(three_stage ? w.S : l.Sl, dims, {1, 0, 0}, 0, "Sb");
              s.push_back(over([&](const Array<PrimExpr>& i) {
                return BufferStore(Ofv, BufferLoad(Ofv, i) * BufferLoad(sv, i), i);
              }));
            } else if (matrix && has_bias) {  // the narrow form's bias, after the sums
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
            std::vector<Stmt> zero;
            for (const Work& w : works)
              zero.push_back(Intrin("tile.dma_fill",
                                    {Region(w.A, {I32(0), I32(0)}, {cc, bk}), F32(0), I32(0)}));
            zero.push_back(Intrin("tile.wait", {I32(0)}));
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

/*! \brief The largest X tile (bytes, int8) the transposed plan keeps for all its items:
 * its two copies live through the whole kernel, beside the weights a core may keep, and in a
 * layer group the members' plans fill L1 up to what the group's descriptors leave (ResNet-50
 * int8's 50 KiB tiles of layer3 split its group). */
constexpr int64_t kResidentInputBytes = int64_t{32} << 10;

/*! \brief The most weight bytes (int8) every core of the transposed plan keeps, transposed
 * once, for all its items. */
constexpr int64_t kTransposedKeptWeightBytes = int64_t{256} << 10;

/*! \brief Resident weights up to a bank of L1 load with the bias and scales, before
 * their first wait (LowerConvTransposed). */
constexpr int64_t kEarlyWeightBytes = int64_t{tc1::kL1BankBytes};

/*! \brief How many of the fastest transposed plans are priced again with their weight
 * blocks on the DMA-out engine. */
constexpr int kTransposedOnOutPlans = 3;

/*! \brief Tile sizes of the transposed plan (LowerConvTransposed). */
struct TransposedPlan {
  int64_t tp = 0;  // output positions per item (the mm's rows)
  int64_t tm = 0;  // output channels per item (the mm's columns)
  // the residual added (and the activation applied) by the vector engine, not in the mm's
  // epilogue: an f32 residual streams at 4 bytes an element through the matrix engine,
  // as long as the product itself when K is small
  bool residual_on_vector = false;
  // every core keeps all the weights, transposed once (else each item loads its block): M x C
  // from DDR per core, against M x C per block of positions
  bool weights_resident = false;
  // (not resident) the weights copied once into L2, a share by each core: the items read
  // their blocks there
  bool weights_in_l2 = false;
  // images per item, each whole (tp covers an image's positions): their positions are the
  // mm's rows one image after another, and the item's weight block serves all of them
  int64_t nb = 1;
  // (not resident) the items' weight blocks loaded on the DMA-out engine, beside their X
  // tiles and residuals on the DMA-in engine (and behind the stores of the items before)
  bool weights_on_out = false;
  // of every implicit_den items of a core, the first implicit_num computed channel-major
  // instead (TransposedMixes: W x X in the matrix engine, the epilogue in the vector
  // engine, LowerConv's steps), so that both engines carry a share of the epilogue
  int64_t implicit_num = 0, implicit_den = 1;
  // the items of one X tile (its blocks of output channels) all on one core, one after
  // another (else they go round the cores): the tile is loaded twice in all (once per slot)
  // rather than by every core, or by every item when a tile has at most two items a core
  // (an X in the DDR, read once per block: ResNet-50's layer3 downsample at batch 8). Where
  // the X tiles are a multiple of the cores, with more than two items each (XMajorApplies).
  bool x_major = false;
};

/*! \brief The shares of a core's items the transposed plan may compute channel-major, as
 * (num, den): a small K leaves the matrix engine's epilogue (and an int8 residual streaming
 * through it) as long as the product, while the vector engine idles. */
constexpr std::pair<int64_t, int64_t> kImplicitShares[] = {{1, 4}, {1, 3}, {1, 2},
                                                           {2, 3}, {3, 4}, {1, 1}};

/*! \brief How many of the fastest transposed plans are priced again with each X tile's
 * items on one core (TransposedPlan::x_major). */
constexpr int kTransposedXMajorPlans = 3;

/*! \brief How many of the fastest transposed plans are priced again with each share of
 * channel-major items. */
constexpr int kTransposedMixedPlans = 2;

/*! \brief The L1 a plan with channel-major items leaves beyond the 8 KiB any plan leaves, a
 * bank: a layer group's kernel holds the descriptors of all its members (SqueezeNet's 39:
 * 28 KiB), and a share's few percent is not worth a group that no longer builds. */
constexpr int64_t kMixedL1Headroom = int64_t(tc1::kL1BankBytes);

/*! \brief The widest K (input channels x taps) the transposed plan unfolds a Conv for: its
 * gain is the vector epilogue it saves, which a wide K's products outweigh (the plans priced
 * for a wider one only cost compile time). */
constexpr int64_t kTransposedUnfoldK = 640;
/*! \brief Taps beyond which an unfolding plan is priced only with its weights kept in every
 * core: each item's tap copies make every candidate's lowering long (ResNet's 7x7 stem, 49
 * an item: 18 candidates took a tenth of a second), and a stem's weights are small. */
constexpr int64_t kTransposedManyTaps = 9;

/*! \brief Whether the transposed plan unfolds the Conv's taps from a patch (a kernel wider
 * than 1x1, padding, or a row stride that skips rows unevenly) instead of transposing X. */
bool TransposedUnfolds(const ConvGeom& g) {
  return g.KH * g.KW > 1 || g.pt > 0 || g.pb > 0 || g.pl > 0 || g.pr > 0 || g.H != g.OH * g.sh;
}

/*! \brief Whether an int8 Conv can take the transposed plan: one group, K in one mm (a Conv
 * that unfolds its taps: at most kTransposedUnfoldK), an activation the mm epilogue has. */
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

/*! \brief Whether the transposed plan may compute some items channel-major (implicit_num):
 * a 1x1 Conv that reads every input position (its X tile, loaded as is, is the product's
 * right operand) of an int8 X, whose residual (if any) comes before its activation. The plan
 * must also take one image an item. */
bool TransposedMixes(const OpCall& call, const ConvGeom& g, const FusedEpilogue& ep) {
  return !TransposedUnfolds(g) && g.sh == 1 && g.sw == 1 &&
         call.inputs[0]->dtype == DataType::Int(8) && !ep.residual_last;
}

/*! \brief Whether a segment of `tiles` X tiles of `mcount` items each can give each tile's
 * items to one core (TransposedPlan::x_major): the tiles a multiple of the cores, and more
 * than two items a tile (two are loaded anyway, one per slot). */
bool XMajorSegment(int64_t tiles, int64_t mcount, int64_t cores) {
  return mcount > 2 && tiles >= cores && tiles % cores == 0;
}

/*! \brief Whether plan `t` has a segment of items XMajorSegment takes: its full tiles of
 * positions and of output channels (LowerConvTransposed's first segments). */
bool XMajorApplies(const ConvGeom& g, const TransposedPlan& t, int64_t cores) {
  const int64_t HW = g.OH * g.OW;
  const bool rowwise = TransposedUnfolds(g) || g.sh > 1 || g.sw > 1;
  const int64_t tile = rowwise ? std::max<int64_t>(1, std::min(g.OH, t.tp / g.OW)) * g.OW : t.tp;
  if (t.weights_resident || tile <= 0 || t.tm <= 0 || t.nb <= 0) return false;
  return XMajorSegment(g.N / t.nb * (HW / tile), g.M / t.tm, cores);
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
  int64_t rotation = 0;
  Stmt kernel = OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> segs;
    if (w_l2) {  // this core's share of the weight rows into L2
      segs.push_back(CopyShareOfRows(core, call.cores, p.in[1], Wsh, g.M, K, 6));
      segs.push_back(Intrin("tile.wait", {I32(6)}));
      segs.push_back(Intrin("tir.barrier", {}));
    }
    if (has_bias)
      segs.push_back(Intrin("tile.dma_copy", {Region(Ball, {I32(0), I32(0)}, {1, g.M}),
                                              Region(Bias, {I32(0), I32(0)}, {1, g.M}), I32(0)}));
    // (the scales on the DMA-out engine, idle here: their DDR latency beside the bias's)
    segs.push_back(Intrin("tile.dma_prefetch", {Region(Sall, {I32(0), I32(0)}, {1, g.M}),
                                                Region(Sv, {I32(0), I32(0)}, {1, g.M}), I32(0)}));
    if (w_early)
      segs.push_back(Intrin("tile.dma_copy", {Region(Wall, {I32(0), I32(0)}, {g.M, K}),
                                              Region(W, {I32(0), I32(0)}, {g.M, K}), I32(0)}));
    // (after the bias and scales: loads of the group's inputs first, which the member before
    // may issue for this one, docs/compiler.md "Handoff")
    if (x_resident)
      segs.push_back(Intrin(
          "tile.dma_copy",
          {Region(XLr, {I32(0), I32(0)}, {C, x_cols}),
           strided ? Region(Xs, {I32(0), I32(0), I32(0), I32(0), I32(0)}, {1, C, g.OH, 1, g.W})
                   : Region(X, {I32(0), I32(0), I32(0)}, {1, C, HW}),
           I32(5)}));
    segs.push_back(Intrin("tile.wait", {I32(0)}));
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
      Stmt load =
          w_early ? turn
                  : Seq({Intrin("tile.dma_copy", {Region(Wall, {I32(0), I32(0)}, {g.M, K}),
                                                  Region(W, {I32(0), I32(0)}, {g.M, K}), I32(0)}),
                         Intrin("tile.wait", {I32(0)}), turn});
      segs.push_back(mixed || w_early ? load : Allocate(Wall, load));
    }
    const int64_t NB = tp.nb;  // images per item (then one item covers an image's positions)
    std::vector<bool> served(size_t(call.cores), false);  // the cores that ran an item
    for (const auto& P_seg : Segs(HW, tile)) {
      const int64_t pcount = P_seg.first, P = P_seg.second;
      const int64_t pbase = P == tile ? 0 : (HW / tile) * tile;
      const int64_t r = rowwise ? P / g.OW : 0;  // output rows of the item
      // X tile of an image: [C, xcols] (unfold: the patch [C, rin, win])
      const int64_t xcols = unfold ? rin(r) * win : strided ? r * g.W : P;
      const int64_t Pt = NB * P, Xt = NB * xcols;  // the item's positions, X tile columns
      for (const auto& TMc_seg : Segs(g.M, tp.tm)) {
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
          auto fill = [&](int64_t col, int64_t cols) {
            return Intrin("tile.dma_fill",
                          {Region(patch, {I32(0), I32(0), I32(col)}, {C, ri, cols}),
                           F32(qx ? 0.0 : static_cast<double>(zp)), ev});
          };
          const int64_t lcols = vlo + g.pl, rcols = win - (vhi + g.pl), cols = vhi - vlo;
          std::vector<Stmt> cols_only;  // the padding columns (the block writes the rest)
          if (lcols > 0) cols_only.push_back(fill(0, lcols));
          if (rcols > 0) cols_only.push_back(fill(vhi + g.pl, rcols));
          if (rows_inside) {
            for (const Stmt& x : cols_only) s->push_back(x);
          } else if (cols_only.empty()) {
            s->push_back(IfThenElse(!inside, fill(0, win)));
          } else {
            s->push_back(IfThenElse(inside, Seq(cols_only), fill(0, win)));
          }
          Stmt block = Intrin("tile.dma_copy",
                              {Region(patch, {I32(0), I32(0), I32(lcols)}, {C, ri, cols}),
                               Region(X4, {n, I32(0), ih0, I32(vlo)}, {1, C, ri, cols}), ev});
          if (rows_inside) {
            s->push_back(block);
            return;
          }
          Stmt each = Loop("rr", ri, [&](PrimExpr rr) {
            PrimExpr ih = ih0 + rr;
            return IfThenElse(ih >= I32(0) && ih < I32(g.H),
                              Intrin("tile.dma_copy",
                                     {Region(patch, {I32(0), rr, I32(lcols)}, {C, 1, cols}),
                                      Region(X4, {n, I32(0), ih, I32(vlo)}, {1, C, 1, cols}), ev}));
          });
          s->push_back(IfThenElse(inside, block, each));
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
        Stmt body =
            ForEachItemThreeStage(core, call.cores, items, &rotation, "k", front, compute, post);
        for (int64_t t = 0; t < std::min<int64_t>(items, call.cores); ++t)
          served[size_t((t + rotation - items) % call.cores)] = true;
        for (const Slot& sl : slots) {
          for (const Buffer& b : {sl.Xl, sl.XT, sl.Cf, sl.Yt})
            if (!x_resident || (!b.same_as(sl.Xl) && !b.same_as(sl.XT))) body = Allocate(b, body);
          if (!w_resident) body = Allocate(sl.WT, Allocate(sl.Wl, body));
          if (ep.residual >= 0) body = Allocate(sl.Rf, Allocate(sl.Rl, body));
          if (mixed) body = Allocate(sl.Sm, body);
          if (mixed && ep.residual >= 0) body = Allocate(sl.Rs, body);
        }
        if (qx) body = Allocate(Xq, body);
        segs.push_back(body);
        // the next segment's buffers may take these addresses: its loads must not pass this
        // segment's compute and stores (the last stores end the chain)
        segs.push_back(Intrin("tile.wait", {I32(2)}));
        segs.push_back(Intrin("tile.wait", {I32(3)}));
      }
    }
    // (a core that ran no item has not waited for its X tile)
    if (x_resident) segs.push_back(Intrin("tile.wait", {I32(5)}));
    if (!lut.empty()) PlaceAfterFirstLoads(&segs, FillLookupTable(lut_words, lut));
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

/*! \brief A plan key without which tensors are in L2 (tc_in_l2), for a Conv that has one;
 * "" for one that has none (a plan for the DDR ranks its own). */
std::string SiblingPlanKey(const std::string& key) {
  const size_t at = key.find("tc_in_l2=");
  if (at == std::string::npos) return "";
  const size_t end = key.find(';', at);
  return key.substr(0, at) + "tc_in_l2=*" + (end == std::string::npos ? "" : key.substr(end));
}

/*! \brief The plans of the search before that a sibling prices again (its first ones). */
constexpr size_t kSiblingPlans = 8;

/*! \brief Bumped by ForgetConvPlanChoices: LowerConv's plans chosen and rankings are
 * dropped when it changes. */
std::atomic<uint64_t> conv_plan_generation{0};
/*! \brief Set while LowerConv searches again without its sibling's ranking. */
thread_local bool sibling_search_off = false;

/*! \brief The name a plan of LowerConv's search goes by in a ranking. */
template <typename Key>
std::string PlanName(const Key& k) {
  std::ostringstream o;
  o << "conv";
  std::apply([&](const auto&... v) { ((o << ' ' << v), ...); }, k);
  return o.str();
}

std::string TransposedPlanName(const TransposedPlan& t) {
  std::ostringstream o;
  o << "transposed " << t.tp << ' ' << t.tm << ' ' << t.residual_on_vector << ' '
    << t.weights_resident << ' ' << t.weights_in_l2 << ' ' << t.nb << ' ' << t.weights_on_out << ' '
    << t.x_major;
  // (not the share of channel-major items: a share is priced with its plan, and a sibling's
  // ranking lists plans, not their shares, which would crowd the plain ones out of its first)
  return o.str();
}

PrimFunc LowerConv(const OpCall& call) {
  ConvGeom g;
  std::string why;
  Geometry(call.inputs, call.attrs, &g, &why);
  Params p = MakeParams(call);
  if (g.G > 1 && g.Cg == 1 && g.Mg == 1) {
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
    std::tuple<bool, int, int64_t> best_form{false, 1, 1};  // matrix, stages, blocks
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
    for (bool matrix : {false, true}) {
      if ((matrix && !matrix_form) || (want_matrix >= 0 && matrix != (want_matrix == 1))) continue;
      for (int stages : {1, 2, 3}) {
        const bool pipe = stages > 1;
        if (want_pipe >= 0 && stages != want_pipe + 1) continue;
        if (stages == 3 && (!matrix || residual)) continue;
        // (matrix) items of one block of channels, or of several when the positions are
        // few: fewer commands an output where the front end bounds the item
        for (int64_t blocks : {1, 2, 4, 16}) {
          if (want_blocks >= 0 ? blocks != want_blocks
                               : blocks > 1 && (!matrix || g.OH * g.OW > 512 ||  // (fill L1 so)
                                                want_col < kDepthwiseBlock))
            continue;
          PrimFunc f = LowerDepthwise(call, g, p, matrix, pipe, stages == 3, blocks,
                                      matrix && blocks == 1 ? want_col : kDepthwiseBlock);
          const std::optional<int64_t> cycles = price(f);
          if (!cycles) continue;
          if (!best || *cycles < best_cycles) {
            best = f, best_cycles = *cycles;
            best_form = {matrix, stages, blocks};
          }
        }
      }
    }
    // the fastest matrix form of one block an item, its column matrix sized for fewer
    // channels (more positions an item: fewer rows of its patch loaded twice); kept when
    // kFewerChannelsGain faster: its items are more, each a front end's commands, which a
    // layer group's prefetch pieces share (MNASNet's 5x5 stride-2 Conv over 288 channels,
    // estimated 1% faster with 8, was bound by its front end in its group)
    constexpr double kFewerChannelsGain = 0.015;
    if (best && std::get<0>(best_form) && std::get<2>(best_form) == 1 &&
        !HasAttr(call.attrs, "tc_depthwise_col_channels")) {
      const int stages = std::get<1>(best_form);
      for (int64_t col : {int64_t{8}, int64_t{4}}) {
        PrimFunc f = LowerDepthwise(call, g, p, true, stages > 1, stages == 3, 1, col);
        const std::optional<int64_t> cycles = price(f);
        if (cycles && *cycles < best_cycles * (1 - kFewerChannelsGain))
          best = f, best_cycles = *cycles;
      }
    }
    if (!best && !failed.empty()) TILECORE_THROW(ValueError) << failed;
    if (!best && want_pipe == 2)
      TILECORE_THROW(ValueError)
          << "Conv: tc_pipeline 2 (three stages) needs the matrix form (int8, f16 or bf16) "
             "without a residual";
    if (!best && want_blocks > 1)
      TILECORE_THROW(ValueError) << "Conv: tc_depthwise_blocks " << want_blocks
                                 << " needs the matrix form (int8, f16 or bf16)";
    if (!best) TILECORE_THROW(ValueError) << "Conv: tc_depthwise_matrix 1 needs int8, f16 or bf16";
    return *best;
  }
  DataType f32 = DataType::Float(32);
  MatrixPrecision mp = GetMatrixPrecision(call.attrs);
  const bool q = mp.int8();
  const DataType ot = mp.operand, acc_t = mp.accum;
  const double inv_scale = q ? InverseScale(AttrFloat(call.attrs, "tc_x_scale", 1.0)) : 1.0;
  const double x_scale = AttrFloat(call.attrs, "tc_x_scale", 1.0);
  const int64_t zp = AttrInt(call.attrs, "tc_x_zero_point", 0);
  // int8 activations in DDR (docs/precision.md, "int8 between ops"): an int8 X was
  // quantised by its producer (loaded as is; padding is the zero point); an int8 Y is
  // quantised in the epilogue as its consumers would on load, so the bits are the same.
  const bool x_i8 = call.inputs[0]->dtype == DataType::Int(8);
  // tc_channel_scale of an int8 X (its code tc_channel_scale.tc_x_scale / .tc_x_zero_point):
  // the int8 patch is loaded into Xp8, dequantised into the f32 patch, scaled and quantised
  // with tc_x_scale like an f32 X's
  const bool cs_i8 = x_i8 && AttrInt(call.attrs, "tc_channel_scale", 0) != 0;
  const double cs_x_scale = AttrFloat(call.attrs, "tc_channel_scale.tc_x_scale", 1.0);
  const int64_t cs_x_zp = AttrInt(call.attrs, "tc_channel_scale.tc_x_zero_point", 0);
  const bool qx = q && (!x_i8 || cs_i8);  // quantise X on load
  // (an int8 output in any precision: quantised from the f32 result)
  const bool y_i8 = call.outputs[0]->dtype == DataType::Int(8);
  if (y_i8 && !HasAttr(call.attrs, "tc_y_scale"))
    TILECORE_THROW(ValueError) << "Conv: an int8 output needs tc_y_scale";
  const double y_inv = y_i8 ? InverseScale(AttrFloat(call.attrs, "tc_y_scale", 1.0)) : 1.0;
  const int64_t y_zp = AttrInt(call.attrs, "tc_y_zero_point", 0);
  // A Conv with one kernel row, a row stride and no row padding reads only every sh-th
  // input row: the input is viewed as [N, C, OH, sh, W] and the Conv is a row-stride-1
  // one over the [.., OH, 0, W] part, so the DMA skips the other rows (never loaded nor
  // quantised). The column stride stays in the im2col (a DMA of every other element
  // would move one element per beat).
  const bool skip = g.KH == 1 && g.sh > 1 && g.pt == 0 && g.pb == 0 && g.H == g.OH * g.sh;
  auto x_view = [&](const Buffer& b, const std::string& name) {
    return skip ? View(b, {g.N, g.C, g.OH, g.sh, g.W}, name + "s")
                : View(b, {g.N, g.C, g.H, g.W}, name);
  };
  Buffer X = x_view(p.in[0], "X");
  // staged: the input copied once into the shared L2 (a share by each core, then a
  // barrier) and read from there: the items of different output-channel blocks, on
  // different cores, each read all of it, and L2 has 4x DDR's bandwidth and a tenth
  // of its latency
  bool staged = false;
  const int64_t x_rows = g.N * g.C, x_cols = g.H * g.W;
  Buffer Xsh = DeclBuffer({I32(x_rows * x_cols)}, call.inputs[0]->dtype, String("Xsh"), "shared");
  Buffer Xst = x_view(Xsh, "Xst");
  if (skip) {
    g.H = g.OH;
    g.sh = 1;
  }
  // X[n, c .. c + cc, ih .. ih + rows, iw .. iw + cols]
  auto xregion = [&](PrimExpr n, PrimExpr c, PrimExpr ih, int64_t iw, int64_t cc, int64_t rows,
                     int64_t cols) {
    const Buffer& src = staged ? Xst : X;
    if (skip) return Region(src, {n, c, ih, I32(0), I32(iw)}, {1, cc, rows, 1, cols});
    return Region(src, {n, c, ih, I32(iw)}, {1, cc, rows, cols});
  };
  int64_t KK = g.KH * g.KW;
  Buffer Wdram = View(p.in[1], {g.G, g.Mg, g.Cg * KK}, "Wm");
  // w_staged: the weights copied once into L2 the same way, so that the items that each
  // read a block (one per row tile) read it at L2's bandwidth and latency, not the DDR's
  bool w_staged = false;
  const int64_t w_rows = g.G * g.Mg, w_cols = g.Cg * KK;
  Buffer Wsh = DeclBuffer({I32(w_rows * w_cols)}, call.inputs[1]->dtype, String("Wsh"), "shared");
  Buffer Wl2 = View(Wsh, {g.G, g.Mg, g.Cg * KK}, "Wm");
  bool has_bias = call.inputs.size() > 2 && call.inputs[2].defined();
  Buffer Bv = has_bias ? View(p.in[2], {g.M, 1}, "Bias") : Buffer();
  Buffer Sv = q ? View(p.in[3], {g.M, 1}, "WScale") : Buffer();
  Buffer Y = View(p.out[0], {g.N, g.M, g.OH, g.OW}, "Y");
  const FusedEpilogue ep = GetFusedEpilogue(call.attrs, call.inputs.size());
  // tc_channel_scale: X times a per-channel tensor (a squeeze-excite's scale, the input
  // before the residual), applied to each loaded patch before it is quantised or unfolded
  const bool cs = AttrInt(call.attrs, "tc_channel_scale", 0) != 0;
  Buffer ScaleX =
      cs ? View(p.in[call.inputs.size() - (ep.residual >= 0 ? 2 : 1)], {g.C, 1}, "ChannelScale")
         : Buffer();
  Buffer Rv =
      ep.residual >= 0 ? View(p.in[ep.residual], {g.N, g.M, g.OH, g.OW}, "Residual") : Buffer();
  const bool r_i8 = ep.residual >= 0 && call.inputs[ep.residual]->dtype == DataType::Int(8);
  // an int8 residual: the epilogue works in its units and the output is scaled after
  const ResidualUnits ru = GetResidualUnits(call.attrs, ep, y_i8);
  const double s_factor = r_i8 ? ru.x_factor : static_cast<float>(x_scale);
  int64_t TW = std::min(g.OW, kMaxP);
  int64_t R = TW == g.OW ? std::max<int64_t>(1, std::min(g.OH, kMaxP / g.OW)) : 1;
  // chunks of kMaxK input channels' taps: each chunk's load, quantisation and mm follow one
  // another, overlapped with the next chunk's. Over a few positions (a squeeze-excite's
  // 1x1 Convs on a pooled vector) a chunk's mm is tens of cycles and the chain's latencies
  // are all there is: one chunk of every channel instead (up to the mm's K limit, and to
  // kFewPositionsWeightBytes of a block's two weight tiles: f32's 960 channels of 128 rows
  // took 983,040 bytes, more than L1 holds beside the rest)
  const bool few_positions = g.N * g.OH * g.OW <= kFewPositions;
  int64_t TM = std::min(g.Mg, kMaxTM);
  const int64_t few_k = std::min<int64_t>(
      tc1::kMaxMmDim, kFewPositionsWeightBytes / (2 * TM * int64_t(mp.operand_bytes())));
  int64_t CC =
      std::max<int64_t>(1, std::min(g.Cg, (few_positions ? std::max(few_k, kMaxK) : kMaxK) / KK));
  // L1 per tile: the input patch, the column matrix, the weight and output tiles. A wide
  // strided window (a 1x1 stride-2 conv over 256 channels) can overflow L1 with the
  // largest CC and R: halve the channels per chunk (down to 16), then the rows.
  // resident: the whole weight matrix loaded into L1 once per core, not a block per chunk
  // and item (each DMA pays the DDR latency, and every item re-read the weights)
  bool resident = false;
  // pipelined: two sets of the per-item buffers (accumulators, residual, bias, scales)
  bool pipelined = false;
  // w_out: the weight blocks loaded on the DMA-out engine, each item's first one issued
  // before its first patch is waited for: the blocks from the DDR load beside the patches
  // from L2 instead of behind them (the out engine also carries the stores: a Conv whose
  // stores are long loses by it, so the cost model decides)
  bool w_out = false;
  // images per item: NB images of a batch share each loaded weight block, their positions
  // side by side in the matrix engine's columns (a late layer's 7 x 7 positions fill a
  // block of 32 columns poorly, and every image re-read the weights)
  int64_t NB = 1;
  // int8 with a bias: the accumulator starts at the int32 bias (i32 wraps in the matrix
  // engine; a vector-engine add would saturate), so every chunk accumulates
  const bool preset = q && has_bias;
  auto l1_bytes = [&](int64_t rows, int64_t cc, int64_t mb = 1, int64_t slots = 1) {
    int64_t rin = (rows - 1) * g.sh + (g.KH - 1) * g.dh + 1,
            win = (TW - 1) * g.sw + (g.KW - 1) * g.dw + 1;
    // the planner starts a buffer at a 64 KiB bank when it fits: count each rounded up
    // (a small one, up to 4 KiB, is packed: PlanLocalMemory)
    auto bank = [](int64_t bytes) {
      constexpr int64_t bank = tc1::kL1BankBytes;
      return bytes <= 4096 ? (bytes + 63) / 64 * 64 : (bytes + bank - 1) / bank * bank;
    };
    int64_t ob = mp.operand_bytes(), acc = mb * TM * NB * rows * TW * 4;
    // a 1x1 Conv with unit strides and no padding reads its patch in place: no column matrix
    const bool no_col = KK == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pb == 0 && g.pl == 0 &&
                        g.pr == 0 && TW == g.OW;
    // (pipelined items: a patch and a column matrix each, the next loaded and unfolded while
    // this one's mms run)
    const int64_t patches = slots == 1 && pipelined ? 2 : slots;
    int64_t sum = bank((qx ? 1 : patches) * cc * NB * rin * win * ob) +
                  (no_col ? 0 : patches * bank(ob * cc * KK * NB * rows * TW)) +
                  (resident ? bank(ob * g.Mg * g.Cg * KK) : bank(2 * ob * TM * cc * KK));
    if (qx) sum += bank(patches * cc * NB * rin * win * 4);  // the f32 patch
    if (cs_i8) sum += bank(patches * cc * NB * rin * win);   // the int8 one it is loaded as
    int64_t per_item = bank(acc) + (q ? 2 * bank(mb * TM * 4) : bank(mb * TM * 4));  // bias, scales
    if (q) sum += bank(acc);  // the f32 result
    if (r_i8) {
      per_item += bank(acc / 4);  // int8 residual tiles
      sum += bank(acc / mb);      // one converted to f32
    } else if (ep.residual >= 0) {
      per_item += bank(acc);  // the residual tiles
    }
    if (ep.passes()) sum += bank(acc / mb);  // the activation's scratch block
    if (y_i8) sum += bank(acc / 4);          // the int8 result
    return sum + (pipelined ? 2 : 1) * per_item;
  };
  const int64_t budget = call.l1_bytes - (int64_t{32} << 10);  // DMA state and the planner's slack
  const int64_t R0 = R, CC0 = CC;
  // R and CC for MB blocks per item; whether they fit L1
  auto fit = [&](int64_t mb, bool db, int64_t rows = 0) {
    const int64_t slots = db ? 2 : 1;
    R = rows > 0 ? std::min(g.OH, rows) : R0;
    CC = CC0;
    while (l1_bytes(R, CC, mb, slots) > budget) {
      if (CC > 16) {
        CC = (CC + 1) / 2;
      } else if (R > 1) {
        R = (R + 1) / 2;
      } else if (CC > 1) {
        CC = (CC + 1) / 2;
      } else {
        break;
      }
    }
    return l1_bytes(R, CC, mb, slots) <= budget;
  };
  fit(1, false);
  // blocks of output channels per item: MB where the blocks of TM split into groups of MB
  auto blocks_per_item = [&](int64_t mblocks, int64_t tm, int64_t MB) {
    return tm == TM && mblocks % MB == 0 ? MB : 1;
  };
  // MB blocks of TM output channels per work item share each loaded and unfolded input
  // chunk (the input is read once per MB blocks instead of once per block); a larger MB
  // means fewer items for the cores and larger accumulators in L1.
  auto build = [&](int64_t MB, bool db, bool pipe) {
    int64_t rotation = 0;
    // a buffer's shape with the NB axis at `at` when items take several images (one image:
    // the shapes as they were, so the code is the same)
    auto with_nb = [&](std::vector<int64_t> dims, size_t at) {
      if (NB > 1) dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(at), NB);
      return dims;
    };
    Buffer Wres = Local({g.Mg, g.Cg * KK}, ot, "Wres");
    const std::vector<int8_t> lut = y_i8 ? FusedLookupTable(call.attrs) : std::vector<int8_t>();
    Buffer lut_words = Local({64}, DataType::Int(32), "LutWords");
    Stmt body = OverCores(call.cores, [&](PrimExpr core) {
      std::vector<Stmt> groups;
      // this core's share of the rows of the input (and of the weights) into L2 (all of
      // it on core 0 when the rows do not split evenly), then every core waits for all
      if (staged)
        groups.push_back(CopyShareOfRows(core, call.cores, p.in[0], Xsh, x_rows, x_cols, 6));
      if (w_staged)
        groups.push_back(CopyShareOfRows(core, call.cores, p.in[1], Wsh, w_rows, w_cols, 6));
      if (staged || w_staged) {
        groups.push_back(Intrin("tile.wait", {I32(6)}));
        groups.push_back(Intrin("tir.barrier", {}));
      }
      const Buffer& Wt = w_staged ? Wl2 : Wdram;
      if (resident)
        groups.push_back(DmaWait(Region(Wres, {I32(0), I32(0)}, {g.Mg, g.Cg * KK}),
                                 Region(Wt, {I32(0), I32(0), I32(0)}, {1, g.Mg, g.Cg * KK}), 0));
      for (int64_t ow0 = 0; ow0 < g.OW; ow0 += TW) {
        int64_t tw = std::min(TW, g.OW - ow0);
        int64_t win = (tw - 1) * g.sw + (g.KW - 1) * g.dw + 1;  // patch columns
        int64_t iw0 = ow0 * g.sw - g.pl;                        // input column of patch column 0
        int64_t vlo = std::max<int64_t>(0, iw0),
                vhi = std::min<int64_t>(g.W, iw0 + win);  // valid input columns
        for (const auto& r_seg : Segs(g.OH, R)) {
          const int64_t rcount = r_seg.first, r = r_seg.second;
          int64_t rbase = r == R ? 0 : (g.OH / R) * R;
          int64_t rin = (r - 1) * g.sh + (g.KH - 1) * g.dh + 1;
          for (const auto& tm_seg : Segs(g.Mg, TM)) {
            const int64_t mblocks = tm_seg.first, tm = tm_seg.second;
            int64_t mbase = tm == TM ? 0 : (g.Mg / TM) * TM;
            const int64_t mb = blocks_per_item(mblocks, tm, MB);
            int64_t mcount = mblocks / mb;
            int64_t items = g.N / NB * g.G * rcount * mcount;
            const int64_t P = NB * r * tw, kcmax = CC * KK;
            // two patches and column matrices with double-buffered patches (chunk k + 1 is loaded
            // and unfolded into the others while the mms of chunk k read these) or pipelined
            // items (item t + 1's while item t's mms run); a buffer each: the engines are
            // ordered per buffer
            const bool two = db || pipe;
            // the patch [slot, channel, (image,) row, column]
            Buffer Xp = Local(with_nb({two ? 2 : 1, CC, rin, win}, 2), qx ? f32 : ot, "Xp");
            Buffer Sc = cs ? Local({two ? 2 : 1, CC, 1}, f32, "Sc") : Buffer();  // a chunk's scales
            // (an int8 X with a channel scale: the patch as loaded, Xp's layout)
            Buffer Xp8 =
                cs_i8 ? Local(with_nb({two ? 2 : 1, CC, rin, win}, 2), DataType::Int(8), "Xp8")
                      : Buffer();
            const Buffer& Xload = cs_i8 ? Xp8 : Xp;  // what the patch's DMAs write
            Buffer Xq = qx ? Local(with_nb({CC, rin, win}, 1), ot, "Xq") : Xp;  // what im2col reads
            // the column matrix
            std::vector<Buffer> Cols, Colms;
            for (int64_t k = 0; k < (two ? 2 : 1); ++k) {
              Cols.push_back(
                  Local(with_nb({kcmax, r, tw}, 1), ot, two ? "Col" + std::to_string(k) : "Col"));
              Colms.push_back(Buffer(Cols.back()->data, ot, {I32(kcmax), I32(P)}, Array<PrimExpr>(),
                                     I32(0), "local", "Colm"));
            }
            // the patch as a matrix [slots x CC, rin x win] (the quantised one in int8)
            Buffer XpMat = qx ? Buffer(Xq->data, ot, {I32(CC), I32(P)}, Array<PrimExpr>(), I32(0),
                                       "local", "XqMat")
                              : Buffer(Xp->data, ot, {I32((two ? 2 : 1) * CC), I32(P)},
                                       Array<PrimExpr>(), I32(0), "local", "XpMat");
            Buffer Al = Local({2, tm, kcmax}, ot, "Al");  // weight blocks, double-buffered
            Buffer Cf1 = q ? Local({mb * tm, P}, f32, "Cf") : Buffer();  // the f32 result
            Buffer Rf = Local({tm, P}, f32, "Rf");  // an int8 residual block in f32
            Buffer Yq = Local(with_nb({mb * tm, r, tw}, 1), DataType::Int(8), "Yq");
            // What one item's accumulation and epilogue use; two when items are pipelined
            // (the mms of item i + 1 run while the vector engine finishes item i).
            struct ItemBuffers {
              Buffer Cl, Cf, Cl3, Rl, Sall, Bl;
              int64_t slot = 0;  // pipelined: its patch and column matrix (db: its first chunk's)
            };
            auto item_buffers = [&](const std::string& sfx) {
              ItemBuffers b;
              b.Cl = Local({mb * tm, P}, acc_t, "Cl" + sfx);
              b.Cf = q ? Cf1 : b.Cl;
              Array<PrimExpr> cl3;
              for (int64_t d : with_nb({mb * tm, r, tw}, 1)) cl3.push_back(I32(d));
              b.Cl3 = Buffer(b.Cf->data, f32, cl3, Array<PrimExpr>(), I32(0), "local", "Cl3" + sfx);
              // the residual of every block (event 3), loading while the item computes
              b.Rl = Local(with_nb({mb * tm, r, tw}, 1), r_i8 ? DataType::Int(8) : f32, "Rl" + sfx);
              b.Sall = Local({mb * tm, 1}, f32, (q ? "Sl" : "Bf") + sfx);
              b.Bl = Local({mb * tm, 1}, acc_t, "Bl" + sfx);
              return b;
            };
            // a 1x1 Conv with unit strides and no padding over whole rows: the mm reads the
            // patch in place (no column matrix)
            const bool direct_group = KK == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pb == 0 &&
                                      vlo == iw0 && vhi - vlo == win && rin == r && win == tw;
            const int64_t nslots = pipe ? 2 : 1;
            std::vector<ItemBuffers> slots;
            for (int64_t k = 0; k < nslots; ++k) {
              slots.push_back(item_buffers(pipe ? std::to_string(k) : ""));
              slots.back().slot = pipe ? k : 0;
            }
            // part 0: the whole item; 1: its loads and mms; 2: its epilogue and stores
            auto item = [&, r = r, rbase = rbase, rin = rin, tm = tm, mbase = mbase,
                         rcount = rcount, mcount = mcount, mb = mb,
                         P = P](PrimExpr t, int part, const ItemBuffers& ib) -> Stmt {
              const Buffer &Cl = ib.Cl, &Cf = ib.Cf, &Cl3 = ib.Cl3, &Rl = ib.Rl, &Sall = ib.Sall,
                           &Bl = ib.Bl;
              PrimExpr mi = floormod(t, I32(mcount));
              PrimExpr ri = floormod(floordiv(t, I32(mcount)), I32(rcount));
              PrimExpr gi = floormod(floordiv(t, I32(mcount * rcount)), I32(g.G));
              PrimExpr n = floordiv(t, I32(mcount * rcount * g.G));
              if (NB > 1) n = n * I32(NB);  // its first image
              auto image = [&](int64_t img) { return img == 0 ? n : n + I32(img); };
              // [block rows, (image,) rows, columns] regions of an item's [.., NB, r, tw] buffer
              auto at_image = [&](const Buffer& b, int64_t row0, int64_t rows, int64_t img) {
                if (NB == 1) return Region(b, {I32(row0), I32(0), I32(0)}, {rows, r, tw});
                return Region(b, {I32(row0), I32(img), I32(0), I32(0)}, {rows, 1, r, tw});
              };
              // first output channel of block j of this item
              auto m0_of = [&](int64_t j) {
                return I32(mbase) + (mi * I32(mb) + I32(j)) * I32(TM);
              };
              PrimExpr oh0 = I32(rbase) + ri * I32(R);
              const bool direct = direct_group;
              std::vector<Stmt> s;
              for (int64_t j = 0; ep.residual >= 0 && j < mb; ++j)
                for (int64_t img = 0; img < NB; ++img)
                  s.push_back(
                      Intrin("tile.dma_copy",
                             {at_image(Rl, j * tm, tm, img),
                              Region(Rv, {image(img), gi * I32(g.Mg) + m0_of(j), oh0, I32(ow0)},
                                     {1, tm, r, tw}),
                              I32(3)}));
              // The scales (int8) or f32 bias of the MB blocks (consecutive channels: one
              // DMA, event 4, waited for in the epilogue) and the int32 bias (event 5),
              // issued first so their DDR latency overlaps the item's other work. One
              // buffer each, a slice per block (a buffer per block could share an address
              // the engines do not order by).
              PrimExpr mfirst = gi * I32(g.Mg) + m0_of(0);
              if (q || has_bias)  // (on the DMA-out engine: beside the patch's loads)
                s.push_back(Intrin("tile.dma_prefetch",
                                   {Region(Sall, {I32(0), I32(0)}, {mb * tm, 1}),
                                    Region(q ? Sv : Bv, {mfirst, I32(0)}, {mb * tm, 1}), I32(4)}));
              if (preset)
                s.push_back(
                    Intrin("tile.dma_copy", {Region(Bl, {I32(0), I32(0)}, {mb * tm, 1}),
                                             Region(Bv, {mfirst, I32(0)}, {mb * tm, 1}), I32(5)}));
              std::vector<int64_t> cd{tm, P};
              // the last item's stores: they read the accumulators, or (int8) Cf or Yq,
              // which pipelined items wait for before their epilogue instead (the
              // accumulators alternate; this wait would hold the next patch's load)
              if (preset && !(pipe && q)) s.push_back(Intrin("tile.wait", {I32(2)}));
              // The accumulators preset with the bias once it is in: issued after the item's
              // first patch load, which the front end would otherwise hold for the bias's
              // DDR latency and the preset's copy.
              std::vector<Stmt> preset_steps;
              if (preset) preset_steps.push_back(Intrin("tile.wait", {I32(5)}));
              for (int64_t j = 0; preset && j < mb; ++j) {
                Buffer bv = StridedView(Bl, cd, {1, 0}, j * tm, "Bb");
                Buffer clv = StridedView(Cl, cd, {P, 1}, j * tm * P, "Clv");
                preset_steps.push_back(Nest(cd, [&](const Array<PrimExpr>& i) {
                  return BufferStore(clv, BufferLoad(bv, i), i);
                }));
              }
              // The patch of chunk (c0, cc) into Xp[slot]: a zero fill where padding is,
              // then the input block, all signalling `event` (no wait).
              auto load_patch = [&](PrimExpr c0, int64_t cc, int64_t slot, int64_t event) {
                std::vector<Stmt> st;
                // Xp[slot, 0 .. cc, (img,) row .., col ..]
                auto xp_at = [&](int64_t img, PrimExpr row, int64_t col, int64_t rows,
                                 int64_t cols) {
                  if (NB == 1)
                    return Region(Xload, {I32(slot), I32(0), row, I32(col)}, {1, cc, rows, cols});
                  return Region(Xload, {I32(slot), I32(0), I32(img), row, I32(col)},
                                {1, cc, 1, rows, cols});
                };
                // no padding rows: every tile's rows are inside the image
                const bool always_inside = g.pt == 0 && g.pb == 0;
                const bool pad_cols = !(vlo == iw0 && vhi - vlo == win);
                if (!(always_inside && !pad_cols)) {  // zeros: padding
                  // columns [col, col + cols) of every row (and image) of the patch
                  auto fill = [&](int64_t col, int64_t cols) {
                    return Intrin(
                        "tile.dma_fill",
                        {NB == 1 ? Region(Xload, {I32(slot), I32(0), I32(0), I32(col)},
                                          {1, cc, rin, cols})
                                 : Region(Xload, {I32(slot), I32(0), I32(0), I32(0), I32(col)},
                                          {1, cc, NB, rin, cols}),
                         F32(cs_i8 ? static_cast<double>(cs_x_zp)
                             : qx  ? 0.0
                                   : static_cast<double>(zp)),
                         I32(event)});
                  };
                  Stmt all = fill(0, win);
                  // A tile whose rows are all in the image has zeros only in its padding
                  // columns (the block writes the rest): those filled alone when that takes
                  // fewer DMA beats (each row of a fill costs a beat at least: a wide f32
                  // patch's 15 a row against 2; a narrow int8 one's 1 against 2).
                  const int64_t lcols = vlo - iw0, rcols = win - (vhi - iw0);
                  const int64_t es = Xload->dtype.lane_bytes();
                  auto beats = [&](int64_t cols) {
                    return (cols * es + tc1::kDmaBytesPerCycle - 1) / tc1::kDmaBytesPerCycle;
                  };
                  std::vector<Stmt> cols_only;
                  if (pad_cols && beats(lcols) + beats(rcols) < beats(win)) {
                    if (lcols > 0) cols_only.push_back(fill(0, lcols));
                    if (rcols > 0) cols_only.push_back(fill(vhi - iw0, rcols));
                  }
                  const bool narrow = !cols_only.empty() || !pad_cols;  // less than all
                  if (!narrow) {
                    st.push_back(all);
                  } else if (always_inside) {
                    for (const Stmt& x : cols_only) st.push_back(x);
                  } else {
                    PrimExpr ih0 = oh0 * I32(g.sh) - I32(g.pt);
                    PrimExpr inside = ih0 >= I32(0) && ih0 + I32(rin) <= I32(g.H);
                    st.push_back(cols_only.empty() ? IfThenElse(!inside, all)
                                                   : IfThenElse(inside, Seq(cols_only), all));
                  }
                }
                for (int64_t img = 0; img < NB && vhi > vlo; ++img) {
                  const PrimExpr ni = image(img);
                  // All rin rows inside the image (no padding rows): one DMA of the
                  // whole [cc, rin, cols] block; at the borders one per valid row.
                  PrimExpr ih0 = oh0 * I32(g.sh) - I32(g.pt);
                  PrimExpr xc = gi * I32(g.Cg) + c0;
                  Stmt block = Intrin("tile.dma_copy",
                                      {xp_at(img, I32(0), vlo - iw0, rin, vhi - vlo),
                                       xregion(ni, xc, ih0, vlo, cc, rin, vhi - vlo), I32(event)});
                  Stmt rows = Loop("rr", rin, [&](PrimExpr rr) {
                    PrimExpr ih = ih0 + rr;
                    return IfThenElse(
                        ih >= I32(0) && ih < I32(g.H),
                        Intrin("tile.dma_copy",
                               {xp_at(img, rr, vlo - iw0, 1, vhi - vlo),
                                xregion(ni, xc, ih, vlo, cc, 1, vhi - vlo), I32(event)}));
                  });
                  // the valid rows of row tile `tile_row`, known here, as one block (each
                  // DMA pays the level's latency: a DMA per row cost more than the data in
                  // the small late layers)
                  auto edge = [&](int64_t tile_row) -> Stmt {
                    int64_t top = (rbase + tile_row * R) * g.sh - g.pt;
                    int64_t lo = std::max<int64_t>(0, top), hi = std::min(g.H, top + rin);
                    if (hi <= lo) return Evaluate(I32(0));
                    return Intrin(
                        "tile.dma_copy",
                        {xp_at(img, I32(lo - top), vlo - iw0, hi - lo, vhi - vlo),
                         xregion(ni, xc, I32(lo), vlo, cc, hi - lo, vhi - vlo), I32(event)});
                  };
                  if (always_inside) {
                    st.push_back(block);
                  } else if (rcount == 1) {
                    st.push_back(edge(0));
                  } else {  // the first and last row tiles as edges, the others whole
                    Stmt load = IfThenElse(eq(ri, I32(rcount - 1)), edge(rcount - 1), rows);
                    load = IfThenElse(eq(ri, I32(0)), edge(0), load);
                    st.push_back(
                        IfThenElse(ih0 >= I32(0) && ih0 + I32(rin) <= I32(g.H), block, load));
                  }
                }
                if (cs)
                  st.push_back(
                      Intrin("tile.dma_copy",
                             {Region(Sc, {I32(slot), I32(0), I32(0)}, {1, cc, 1}),
                              Region(ScaleX, {gi * I32(g.Cg) + c0, I32(0)}, {cc, 1}), I32(event)}));
                return st;
              };
              // Chunk (c0, cc) from Xp[slot] (loaded): quantise, im2col, the mms of the
              // MB blocks. `prefetch` (the next chunk's patch) is issued after the first
              // weight block, so it loads while this chunk is unfolded.
              // weight block j of chunk (c0, cc) into Al[wslot] (event 0): its DMA waits in
              // the queue for the mm that last read that slot
              auto wload_at = [&](PrimExpr c0, int64_t cc, int64_t j, int64_t wslot) -> Stmt {
                if (resident) return Evaluate(I32(0));  // in L1 already
                int64_t kc = cc * KK;
                return Intrin(w_out ? "tile.dma_prefetch" : "tile.dma_copy",
                              {Region(Al, {I32(wslot), I32(0), I32(0)}, {1, tm, kc}),
                               Region(Wt, {gi, m0_of(j), c0 * I32(KK)}, {1, tm, kc}), I32(0)});
              };
              // Weight block j of this chunk is in slot (wbase + j) % 2. `preloaded`: its
              // first block was issued already (by the previous chunk); `next_first`: the
              // next chunk's first block, issued after this chunk's last mm so it loads
              // while that mm runs (the DDR stays busy in weight-bound Convs).
              auto compute = [&](PrimExpr c0, int64_t cc, int64_t slot, bool acc,
                                 const std::vector<Stmt>& prefetch, int64_t wbase = 0,
                                 bool preloaded = false, Stmt next_first = Stmt()) {
                // the patch's rows: of every image of the item, one after another
                const int64_t prows = NB * rin;
                int64_t kc = cc * KK, xoff = slot * CC * prows * win;
                std::vector<Stmt> st;
                if (cs) {  // the f32 patch times its channels' scales (padding stays zero)
                  std::vector<int64_t> pd{cc, prows, win};
                  Buffer xv = StridedView(Xp, pd, {prows * win, win, 1}, xoff, "Xcs");
                  Buffer sb = StridedView(Sc, pd, {1, 0, 0}, slot * CC, "Scb");
                  if (cs_i8) {  // the int8 patch's values: (code - zero point) x scale x s[c]
                    Buffer x8 = StridedView(Xp8, pd, {prows * win, win, 1}, xoff, "X8cs");
                    st.push_back(Nest(pd, [&](const Array<PrimExpr>& i) {
                      return BufferStore(xv, Cast(f32, BufferLoad(x8, i)), i);
                    }));
                    if (cs_x_zp != 0)
                      st.push_back(Nest(pd, [&](const Array<PrimExpr>& i) {
                        return BufferStore(
                            xv, BufferLoad(xv, i) - F32(static_cast<double>(cs_x_zp)), i);
                      }));
                    // the code's scale folded into the chunk's channel scales (cc values)
                    std::vector<int64_t> sd{cc, 1};
                    Buffer sv = StridedView(Sc, sd, {1, 1}, slot * CC, "Scs");
                    st.push_back(Nest(sd, [&](const Array<PrimExpr>& i) {
                      return BufferStore(
                          sv, BufferLoad(sv, i) * F32(static_cast<float>(cs_x_scale)), i);
                    }));
                  }
                  st.push_back(Nest(pd, [&](const Array<PrimExpr>& i) {
                    return BufferStore(xv, BufferLoad(xv, i) * BufferLoad(sb, i), i);
                  }));
                }
                auto wload = [&](int64_t j) { return wload_at(c0, cc, j, (wbase + j) % 2); };
                // the mms of the MB blocks from the column matrix `col` ([kc, P])
                auto mms = [&](const BufferRegion& col) {
                  for (int64_t j = 0; j < mb; ++j) {  // every block from one unfolded chunk
                    if (j == 0 && !acc)  // the first write of the accumulators: the last
                      st.push_back(Intrin("tile.wait", {I32(2)}));  // item's stores are out
                    st.push_back(Intrin("tile.wait", {I32(0)}));    // weight block j is in L1
                    st.push_back(Intrin(
                        "tile.mm",
                        {Region(Cl, {I32(j * tm), I32(0)}, {tm, P}),
                         resident ? Region(Wres, {m0_of(j), c0 * I32(KK)}, {tm, kc})
                                  : Region(Al, {I32((wbase + j) % 2), I32(0), I32(0)}, {1, tm, kc}),
                         col, IntImm(DataType::Bool(), acc ? 1 : 0)}));
                    if (j + 1 < mb) st.push_back(wload(j + 1));  // loads during mm j
                  }
                  if (next_first.defined()) st.push_back(next_first);
                  return st;
                };
                if (!preloaded) st.push_back(wload(0));
                for (const Stmt& x : prefetch) st.push_back(x);
                if (qx) {  // quantise the patch on load
                  std::vector<int64_t> pd{cc, prows, win};
                  Buffer xf = StridedView(Xp, pd, {prows * win, win, 1}, xoff, "Xf");
                  Buffer xq = StridedView(Xq, pd, {prows * win, win, 1}, 0, "Xqv");
                  for (const Stmt& x : QuantiseSteps(
                           xq, xf, inv_scale, zp, [&](const auto& body) { return Nest(pd, body); }))
                    st.push_back(x);
                }
                // A 1x1 Conv with unit strides and no padding over whole rows: the patch
                // [cc, r, tw] is already the column matrix, which the mm reads in place
                if (direct) return mms(Region(XpMat, {I32(qx ? 0 : slot * CC), I32(0)}, {kc, P}));
                // im2col: Col[(c * KH + kh) * KW + kw, y, x] = Xp[c, y * sh + kh * dh, x * sw +
                // kw * dw], vector copies between strided views of Xp and Col (the engine reads
                // a strided source; a loop over x * sw it could not take as one command): of
                // one image, a kernel row's taps in one copy ([kw, cc, r, tw]: a command's fill
                // paid once, not per tap); of NB images, one per tap ([cc, image, r, tw])
                const size_t cs = size_t(slot);
                for (int64_t kh = 0; kh < g.KH; ++kh) {
                  const int64_t row_off = (qx ? 0 : xoff) + kh * g.dh * win;
                  if (NB == 1) {
                    const std::vector<int64_t> dims{g.KW, cc, r, tw};
                    Buffer src =
                        StridedView(Xq, dims, {g.dw, rin * win, g.sh * win, g.sw}, row_off, "Tap");
                    Buffer dst = StridedView(Cols[cs], dims, {r * tw, KK * r * tw, tw, 1},
                                             kh * g.KW * r * tw, "ColTap");
                    st.push_back(CopyNest(dst, src, dims));
                    continue;
                  }
                  for (int64_t kw = 0; kw < g.KW; ++kw) {
                    const std::vector<int64_t> dims{cc, NB, r, tw};
                    Buffer src = StridedView(Xq, dims, {prows * win, rin * win, g.sh * win, g.sw},
                                             row_off + kw * g.dw, "Tap");
                    Buffer dst = StridedView(Cols[cs], dims, {KK * P, r * tw, tw, 1},
                                             (kh * g.KW + kw) * P, "ColTap");
                    st.push_back(CopyNest(dst, src, dims));
                  }
                }
                return mms(Region(Colms[cs], {I32(0), I32(0)}, {kc, P}));
              };
              auto push = [&](const std::vector<Stmt>& v) {
                for (const Stmt& x : v) s.push_back(x);
              };
              // w_out: the first weight block of each chunk (db: of the item) issued before
              // its patch is waited for
              const bool early = w_out && !resident;
              if (db) {
                // Double-buffered patches, the chunks unrolled: chunk k + 1 loads into
                // Xp[(k + 1) % 2] (event 1) while chunk k is unfolded and multiplied.
                std::vector<std::pair<int64_t, int64_t>> chunks;  // (first channel, count)
                for (int64_t c = 0; c < g.Cg; c += CC)
                  chunks.push_back({c, std::min(CC, g.Cg - c)});
                // (an odd count of chunks: item t + 1's first goes to the other slot than item
                // t's last, loaded while its mms run)
                const int64_t base = chunks.size() % 2 ? ib.slot : 0;
                push(load_patch(I32(chunks[0].first), chunks[0].second, base, 1));
                if (early) s.push_back(wload_at(I32(chunks[0].first), chunks[0].second, 0, 0));
                push(preset_steps);
                for (size_t k = 0; k < chunks.size(); ++k) {
                  s.push_back(Intrin("tile.wait", {I32(1)}));  // patch k is in L1
                  std::vector<Stmt> next;
                  if (k + 1 < chunks.size())
                    next = load_patch(I32(chunks[k + 1].first), chunks[k + 1].second,
                                      (int64_t(k) + 1 + base) % 2, 1);
                  if (next.empty()) next.push_back(Evaluate(I32(0)));
                  int64_t wbase = static_cast<int64_t>(k) * mb;
                  Stmt next_first;
                  if (k + 1 < chunks.size())
                    next_first = wload_at(I32(chunks[k + 1].first), chunks[k + 1].second, 0,
                                          (wbase + mb) % 2);
                  push(compute(I32(chunks[k].first), chunks[k].second, (int64_t(k) + base) % 2,
                               k > 0 || preset, next, wbase, k > 0 || early, next_first));
                }
              } else {
                bool first = true;
                for (auto [ccount, cc] : Segs(g.Cg, CC)) {
                  int64_t cbase = cc == CC ? 0 : (g.Cg / CC) * CC;
                  auto chunk = [&, cc = cc, cbase = cbase](PrimExpr ci, bool acc,
                                                           bool first_chunk = false) {
                    PrimExpr c0 = I32(cbase) + ci * I32(CC);
                    std::vector<Stmt> st;
                    if (early) st.push_back(wload_at(c0, cc, 0, 0));
                    for (const Stmt& x : load_patch(c0, cc, ib.slot, 0)) st.push_back(x);
                    if (first_chunk)
                      for (const Stmt& x : preset_steps) st.push_back(x);
                    st.push_back(Intrin("tile.wait", {I32(0)}));
                    for (const Stmt& x : compute(c0, cc, ib.slot, acc, {}, 0, early))
                      st.push_back(x);
                    return Seq(st);
                  };
                  if (first) {
                    s.push_back(chunk(I32(0), preset, true));
                    if (ccount > 1)
                      s.push_back(Loop("ci", ccount - 1,
                                       [&](PrimExpr ci) { return chunk(ci + I32(1), true); }));
                    first = false;
                  } else {
                    s.push_back(Loop("ci", ccount, [&](PrimExpr ci) { return chunk(ci, true); }));
                  }
                }
              }
              // the epilogue: from here on the statements are part 2
              std::vector<Stmt> front = std::move(s);
              s.clear();
              // pipelined: the previous item's stores read Yq (or Cf) that this one writes
              if (pipe) s.push_back(Intrin("tile.wait", {I32(2)}));
              if (q || has_bias) s.push_back(Intrin("tile.wait", {I32(4)}));  // scales, bias
              for (int64_t j = 0; j < mb; ++j) {
                PrimExpr m0 = m0_of(j);
                if (q) {  // dequantise: f32(acc) * f32(w_scale[m] * x_scale (or x_factor))
                  std::vector<Stmt> dq;
                  Buffer clv = StridedView(Cl, cd, {P, 1}, j * tm * P, "Clv");
                  Buffer cfv = StridedView(Cf, cd, {P, 1}, j * tm * P, "Cfv");
                  dq.push_back(Nest(cd, [&](const Array<PrimExpr>& i) {
                    return BufferStore(cfv, Cast(f32, BufferLoad(clv, i)), i);
                  }));
                  Buffer slv = StridedView(Sall, {tm}, {1}, j * tm, "Slv");
                  dq.push_back(Nest({tm}, [&](const Array<PrimExpr>& i) {
                    return BufferStore(slv, BufferLoad(slv, i) * F32(s_factor), i);
                  }));
                  Buffer sv = StridedView(Sall, cd, {1, 0}, j * tm, "Sb");
                  dq.push_back(Nest(cd, [&](const Array<PrimExpr>& i) {
                    return BufferStore(cfv, BufferLoad(cfv, i) * BufferLoad(sv, i), i);
                  }));
                  s.push_back(Seq(dq));
                } else if (has_bias) {
                  s.push_back(Loop("i", tm, [&](PrimExpr i) {
                    return Loop("x", P, [&](PrimExpr x) {
                      PrimExpr row = I32(j * tm) + i;
                      return BufferStore(
                          Cl, BufferLoad(Cl, {row, x}) + BufferLoad(Sall, {row, I32(0)}), {row, x});
                    });
                  }));
                }
                if (ep.any()) {  // the fused residual and activation, on the f32 result
                  Buffer yv = StridedView(q ? Cf : Cl, cd, {P, 1}, j * tm * P, "Yv");
                  auto over = [&](const auto& body) { return Nest(cd, body); };
                  auto add_residual = [&]() {
                    if (j == 0) s.push_back(Intrin("tile.wait", {I32(3)}));
                    Buffer rv = StridedView(Rl, cd, {P, 1}, j * tm * P, "Rlv");
                    if (r_i8) {  // in the residual's units, with its activation
                      Buffer rf = StridedView(Rf, cd, {P, 1}, 0, "Rfv");
                      for (Stmt st : AddResidualInUnits(ru, yv, rv, rf, over)) s.push_back(st);
                    } else {
                      s.push_back(over([&](const Array<PrimExpr>& i) {
                        return BufferStore(yv, BufferLoad(yv, i) + BufferLoad(rv, i), i);
                      }));
                    }
                  };
                  if (ep.residual >= 0 && !ep.residual_last) add_residual();
                  if (!r_i8)  // (Rf, free without an int8 residual, holds SiLU's sigmoid)
                    s.push_back(ApplyActivation(y_i8 ? WithoutSaturatedBounds(ep, y_inv, y_zp) : ep,
                                                yv, over, StridedView(Rf, cd, {P, 1}, 0, "Actv")));
                  if (ep.residual_last) add_residual();
                  if (r_i8 && !y_i8)  // from the residual's units
                    s.push_back(over([&](const Array<PrimExpr>& i) {
                      return BufferStore(yv, BufferLoad(yv, i) * F32(ru.out_scale), i);
                    }));
                }
                if (y_i8) {  // quantise as the consumers would on load
                  Buffer yv = StridedView(Cf, cd, {P, 1}, j * tm * P, "Yv");
                  Buffer yq = StridedView(Yq, cd, {P, 1}, j * tm * P, "Yqv");
                  for (const Stmt& x :
                       QuantiseSteps(yq, yv, r_i8 ? ru.out_scale : y_inv, y_zp,
                                     [&](const auto& body) { return Nest(cd, body); }))
                    s.push_back(x);
                  for (int64_t img = 0; !lut.empty() && img < NB; ++img) {  // the activation
                    BufferRegion y = at_image(Yq, j * tm, tm, img);
                    s.push_back(Intrin("tile.vec_lut", {y, y, LookupTableRegion(lut_words)}));
                  }
                }
                // the store is asynchronous (event 2): the next item waits for it before
                // it writes the accumulators again
                for (int64_t img = 0; img < NB; ++img)
                  s.push_back(Intrin(
                      "tile.dma_copy",
                      {Region(Y, {image(img), gi * I32(g.Mg) + m0, oh0, I32(ow0)}, {1, tm, r, tw}),
                       at_image(y_i8 ? Yq : Cl3, j * tm, tm, img), I32(2)}));
              }
              if (part == 1) return Seq(front);
              if (part == 2) return Seq(s);
              for (const Stmt& x : s) front.push_back(x);
              return Seq(front);
            };
            Stmt items_stmt =
                pipe ? ForEachItemPipelined(
                           core, call.cores, items, &rotation, "t",
                           [&](PrimExpr t, int64_t k) { return item(t, 1, slots[size_t(k)]); },
                           [&](PrimExpr t, int64_t k) { return item(t, 2, slots[size_t(k)]); })
                     : ForEachItem(core, call.cores, items, &rotation, "t",
                                   [&](PrimExpr t) { return item(t, 0, slots[0]); });
            Stmt tile = items_stmt;
            for (const ItemBuffers& ib : slots) {
              tile = Allocate(ib.Cl, tile);
              if (preset) tile = Allocate(ib.Bl, tile);
              if (q || has_bias) tile = Allocate(ib.Sall, tile);
              if (ep.residual >= 0) tile = Allocate(ib.Rl, tile);
            }
            if (!resident) tile = Allocate(Al, tile);
            if (!direct_group)
              for (const Buffer& col : Cols) tile = Allocate(col, tile);
            tile = Allocate(Xp, tile);
            if (cs) tile = Allocate(Sc, tile);
            if (cs_i8) tile = Allocate(Xp8, tile);
            if (q) tile = Allocate(Cf1, tile);
            if (qx) tile = Allocate(Xq, tile);
            if (y_i8) tile = Allocate(Yq, tile);
            if (r_i8 || ep.passes()) tile = Allocate(Rf, tile);
            groups.push_back(tile);
            // the next group's buffers may take these addresses: its DMAs must not pass
            // this group's compute and stores (waited for by the front end)
            groups.push_back(Intrin("tile.wait", {I32(2)}));
          }
        }
      }
      groups.push_back(Intrin("tile.wait", {I32(2)}));  // the last stores
      if (!lut.empty()) PlaceAfterFirstLoads(&groups, FillLookupTable(lut_words, lut));
      Stmt all = resident ? Allocate(Wres, Seq(groups)) : Seq(groups);
      return lut.empty() ? all : Allocate(lut_words, all);
    });
    if (w_staged) body = Allocate(Wsh, body);
    return staged ? Allocate(Xsh, body) : body;
  };
  // Candidates: MB dividing the full blocks, with or without double-buffered patches (the
  // chunks unrolled: up to 64), each with the R and CC that fit L1 with its buffers; the
  // cost model (cost_model.h) picks the fastest.
  const int64_t TM0 = TM;
  struct Plan {
    int64_t tm, mb;
    bool db, pipe;
    int64_t rows = 0;  // output rows per item at most (0: as many as fit)
    int64_t nb = 1;    // images per item (NB)
  };
  // The plan chosen for this key before (the same layer shape with other scales: every
  // Conv of an int8 model has its own): built again without the search.
  struct Choice {
    Plan plan;
    bool resident, staged, w_staged, w_out;
    TransposedPlan transposed;  // tp > 0: the transposed plan won
  };
  static std::mutex memo_mu;
  static std::unordered_map<std::string, Choice> memo;
  // The same Conv with other tensors in L2 (a group member lowered again once weights are
  // prefetched: only tc_in_l2 differs) ranks its plans much as the search before did: the
  // plans that search priced below its first kSiblingPlans are not priced again (each
  // candidate's kernel pipeline is most of a compile's time). Sibling key -> (the first
  // plans, every plan it priced).
  static std::unordered_map<std::string, std::pair<std::set<std::string>, std::set<std::string>>>
      rankings;
  // (both kept for one compile: ForgetConvPlanChoices; a plan chosen after a ranking depends
  // on which Convs were searched before, so a compile must not see another's)
  static uint64_t generation = 0;
  const std::string key = PlanKey(call);
  {
    std::lock_guard<std::mutex> lock(memo_mu);
    if (const uint64_t now = conv_plan_generation.load(); now != generation) {
      memo.clear();
      rankings.clear();
      generation = now;
    }
    if (auto it = memo.find(key); it != memo.end()) {
      const Choice& c = it->second;
      if (c.transposed.tp > 0) return MakeFunc(call, p, LowerConvTransposed(call, p, c.transposed));
      TM = c.plan.tm;
      resident = c.resident;
      staged = c.staged;
      w_staged = c.w_staged;
      w_out = c.w_out;
      pipelined = c.plan.pipe;
      NB = c.plan.nb;
      fit(c.plan.mb, c.plan.db, c.plan.rows);
      return MakeFunc(call, p, build(c.plan.mb, c.plan.db, c.plan.pipe));
    }
  }
  const std::string sibling = SiblingPlanKey(key);
  std::set<std::string> first, priced_before;  // a sibling's ranking: empty, none
  if (!sibling.empty() && !sibling_search_off) {
    std::lock_guard<std::mutex> lock(memo_mu);
    if (auto it = rankings.find(sibling); it != rankings.end())
      std::tie(first, priced_before) = it->second;
  }
  // (a plan the sibling did not price, one of this variant's own, is priced)
  auto passed_over = [&](const std::string& name) {
    return !first.empty() && priced_before.count(name) && !first.count(name);
  };
  std::vector<std::pair<int64_t, std::string>> ranked;  // (cycles, plan) of each plan priced
  // A lower bound of the estimate of build(MB, ..) as fit() left R, CC and TM: its items' mms
  // (one per block of output channels per chunk of input channels; its loops, counted) on
  // the busiest core, which runs at least the largest item and the average of the cores that
  // have items (MatrixCommandCycles)
  // (the PassContext option compiler.price_every_plan prices them all: a search chooses the
  // same plan, which tests check; a sibling's ranking then lists them by their estimates)
  const bool price_every_plan =
      transform::PassContext::Current().GetConfig<bool>("compiler.price_every_plan", false);
  auto matrix_bound = [&](int64_t MB) {
    int64_t items = 0, total = 0, largest = 0;
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += TW) {
      const int64_t tw = std::min(TW, g.OW - ow0);
      for (auto [rcount, r] : Segs(g.OH, R))
        for (auto [mblocks, tm] : Segs(g.Mg, TM)) {
          const int64_t mb = blocks_per_item(mblocks, tm, MB);
          const int64_t n = g.N / NB * g.G * rcount * (mblocks / mb);
          int64_t item = 0;
          for (auto [ccount, cc] : Segs(g.Cg, CC))
            item += ccount * mb * MatrixCommandCycles(tm, NB * r * tw, cc * KK, ot);
          items += n;
          total += n * item;
          largest = std::max(largest, item);
        }
    }
    return std::max(largest, total / std::max<int64_t>(1, std::min(call.cores, items)));
  };
  PrimFunc best = MakeFunc(call, p, build(1, false, false));
  std::vector<Plan> cands;
  auto add_plans = [&](int64_t tm) {
    const int64_t full_blocks = g.Mg / tm;
    for (int64_t mb : {1, 2, 4, 8, 16}) {
      if (mb > 1 && full_blocks % mb != 0) continue;
      if (mb > 1) cands.push_back({tm, mb, false, false});
      cands.push_back({tm, mb, true, false});
    }
  };
  add_plans(TM0);
  // Too few items for the cores (a late layer: few rows, few blocks of 128 channels), or
  // items that do not split evenly over them (14 row tiles over 4 cores: one core does a
  // seventh more than its share): blocks of half the channels, then of a quarter (down to
  // 32). Two items a core also overlap one's loads and epilogue with the other's mm.
  auto items_of = [&](int64_t tm) {
    return g.N * g.G * ((g.OH + R0 - 1) / R0) * ((g.Mg + tm - 1) / tm);
  };
  auto uneven = [&](int64_t items) { return items < 2 * call.cores || items % call.cores != 0; };
  std::vector<int64_t> tms{TM0};
  for (int64_t tm = TM0; tm > 32 && tm < 2 * g.Mg && uneven(items_of(tm));) {
    tm /= 2;
    add_plans(tm);
    tms.push_back(tm);
  }
  // Halving cannot split some channel counts evenly: 160 channels over 4 cores are items of
  // 64 (three: a core idle) or of 32 (five: one core does two). Blocks of the cores' share
  // rounded up to the matrix engine's rows (48: four items, the last of 16) leave no core
  // more than one item. (Not below 32 channels: a block's weights and epilogue serve too few.)
  // Over a few positions (a squeeze-excite's fc2 to 672 channels) such a block may exceed
  // TM0, one a core instead of two on some, while its two weight tiles take at most
  // kFewPositionsWeightBytes: each item's chain of DDR latencies is what the member takes.
  if (uneven(items_of(tms.back()))) {
    const int64_t rows_mm = MatrixBlockRows(ot);
    const int64_t share = (g.Mg + call.cores - 1) / call.cores;
    const int64_t tm = (share + rows_mm - 1) / rows_mm * rows_mm;
    const bool few_block =
        few_positions && tm > TM0 && tm <= int64_t(tc1::kMaxMmDim) &&
        2 * tm * CC * KK * int64_t(mp.operand_bytes()) <= kFewPositionsWeightBytes;
    if (tm >= 32 && (tm < TM0 || few_block) && std::find(tms.begin(), tms.end(), tm) == tms.end()) {
      add_plans(tm);
      tms.push_back(tm);
    }
  }
  // Still fewer items than cores (a projection to 40 channels over 14 x 14 positions is one
  // or two items): fewer rows per item, so that every core takes a share of the positions
  // (each item then reads its rows of the input, not the whole of it).
  if (TW == g.OW && R0 > 1) {
    for (int64_t tm : tms) {
      const int64_t items = items_of(tm);
      if (items >= call.cores) continue;
      const int64_t splits = (call.cores + items - 1) / items;
      const int64_t rows = (R0 + splits - 1) / splits;
      if (rows >= R0) continue;
      cands.push_back({tm, 1, true, false, rows});
      cands.push_back({tm, 1, false, false, rows});
    }
  }
  // Rows per item that divide the output rows evenly: 28 rows as 9 + 9 + 9 + 1 leave a
  // core a ninth of the others' work, 4 x 7 none.
  if (R0 > 1 && R0 < g.OH && g.OH % R0 != 0) {
    int64_t even = R0;
    while (even > 1 && g.OH % even != 0) --even;
    if (even * 2 >= R0) {
      for (size_t i = 0, n = cands.size(); i < n; ++i) {
        Plan c = cands[i];
        c.rows = even;
        cands.push_back(c);
      }
    }
  }
  // Rows per item whose positions fill whole blocks of the matrix engine's 32 columns: 8
  // rows of 28 are 7 blocks, where 9 rows (252 positions) leave the eighth an eighth empty.
  if (TW == g.OW && R0 < g.OH) {
    const int64_t step = 32 / std::gcd<int64_t>(g.OW, 32);
    const int64_t whole = R0 / step * step;
    if (whole > 0 && whole != R0) {
      for (size_t i = 0, n = cands.size(); i < n; ++i) {
        Plan c = cands[i];
        c.rows = whole;
        cands.push_back(c);
      }
    }
  }
  // Twice the rows per item (up to 512 positions): a strided window re-reads fewer rows
  // per output row, and each im2col copy (one per tap) moves twice the data for its
  // latency (ResNet-50's stem: 7 x 7 taps, stride 2, 112 columns).
  if (TW == g.OW && R0 < g.OH && g.KH * g.KW > 1) {
    const int64_t twice = std::min(g.OH, 2 * R0);
    cands.push_back({TM0, 1, true, false, twice});
    cands.push_back({TM0, 1, false, false, twice});
  }
  // A batch: each plan also with several images per item, their positions side by side in
  // the matrix engine's columns (up to 512), when an image's positions are few (a late layer's
  // 7 x 7 leave most of a block of 32 columns empty; 2 x 49 or 4 x 49 fill them better, and the
  // items read each weight block once for all their images).
  // (tc_images_per_item K overrides the cost model: the plans of K images per item only)
  const int64_t want_nb = AttrInt(call.attrs, "tc_images_per_item", 0);
  if (want_nb > 1 || (want_nb == 0 && g.N > 1 && TW == g.OW && R0 == g.OH && g.OH * g.OW < 256)) {
    const std::vector<int64_t> nbs =
        want_nb > 1 ? std::vector<int64_t>{want_nb} : std::vector<int64_t>{2, 4, 8};
    for (size_t i = 0, n = cands.size(); i < n; ++i) {
      for (int64_t nb : nbs) {
        if (g.N % nb != 0 || (want_nb == 0 && nb * g.OH * g.OW > 512)) continue;
        Plan c = cands[i];
        c.nb = nb;
        cands.push_back(c);
      }
    }
  }
  // A plan whose buffers leave the code generator less than 8 KiB of L1 (its descriptors
  // and scratch) does not fit.
  const int64_t l1_for_buffers = call.l1_bytes - (int64_t{8} << 10);
  // (headroom: more L1 left free, a plan with channel-major items')
  auto estimate = [&](const PrimFunc& f, int64_t headroom = 0) {
    KernelCost k = EstimateStrategy(f, call.l1_bytes, static_cast<int>(call.cores));
    return k.local_bytes > l1_for_buffers - headroom ? -1 : k.cycles;
  };
  // (a plan whose nested buffers alone pass that does not fit: refused before its kernel
  // pipeline, which is most of a candidate's time)
  auto cannot_fit = [&](const PrimFunc& f) { return NestedLocalBytes(f->body) > l1_for_buffers; };
  int64_t best_cycles = estimate(best);
  if (best_cycles < 0 || want_nb > 1)
    best_cycles = std::numeric_limits<int64_t>::max();  // the plan of last resort
  Plan chosen{TM0, 1, false, false};
  bool chosen_resident = false;
  // then the best plan with the weights resident, when they take at most half of L1
  // (tc_resident 0 or 1 overrides the cost model: never, or whenever the variant fits)
  const int64_t reside = AttrInt(call.attrs, "tc_resident", -1);
  const bool may_reside = g.G == 1 && mp.operand_bytes() * g.Mg * g.Cg * KK <= call.l1_bytes / 2;
  if (may_reside && reside != 0) cands.push_back({0, 0, false, false});
  // (asked for: also with the rows that fit, when the chosen plan's do not leave it room)
  if (may_reside && reside == 1) cands.push_back({0, 1, false, false});
  // then the chosen plan pipelined across items, and one item of 128 channels pipelined
  // (the second set of accumulators may not fit the chosen plan's larger items)
  // (tc_pipeline 0 or 1 overrides the cost model: never, or whenever a pipelined plan fits)
  const int64_t pipeline = AttrInt(call.attrs, "tc_pipeline", -1);
  if (pipeline != 0) {
    cands.push_back({-1, 0, false, false});
    cands.push_back({TM0, 1, true, true});
  }
  // then the chosen plan reading its input from L2 (staged), when the input fits half of it
  // and several items read it (tc_stage_input 0 or 1 overrides the cost model)
  const int64_t stage_input = AttrInt(call.attrs, "tc_stage_input", -1);
  const int64_t x_bytes = x_rows * x_cols * call.inputs[0]->dtype.lane_bytes();
  if (stage_input == 1 || (stage_input != 0 && x_bytes <= int64_t(tc1::kL2Bytes / 2) && g.Mg > TM0))
    cands.push_back({-2, 0, false, false});
  // then the chosen plan with its weights staged in L2, when they take at most 256 KiB and
  // come from the DDR (tc_stage_weights 0 or 1 overrides the cost model)
  const int64_t stage_weights = AttrInt(call.attrs, "tc_stage_weights", -1);
  const int64_t w_bytes = w_rows * w_cols * call.inputs[1]->dtype.lane_bytes();
  if (stage_weights == 1 ||
      (stage_weights != 0 && w_bytes <= (int64_t{256} << 10) && p.in[1]->scope.view() == "global"))
    cands.push_back({-3, 0, false, false});
  // then the chosen plan with its weights on the DMA-out engine (tc_weights_on_out 0 or 1
  // overrides the cost model)
  const int64_t weights_on_out = AttrInt(call.attrs, "tc_weights_on_out", -1);
  if (weights_on_out != 0) cands.push_back({-4, 0, false, false});
  bool chosen_pipe = false, chosen_staged = false, chosen_w_staged = false, chosen_w_out = false;
  // plan -> whether pricing it got to the end of the loop (it fit)
  std::map<
      std::tuple<int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, bool, bool, bool, bool>,
      bool>
      priced;
  for (Plan c : cands) {
    const bool resident_variant = c.tm == 0;
    if (c.tm == 0) {  // the resident variant of the chosen plan
      resident = true;
      const bool default_rows = c.mb == 1;
      c = chosen;
      if (default_rows) c.rows = 0;
    } else if (c.tm == -1) {
      resident = chosen_resident;
      c = chosen;
      c.pipe = true;
    } else if (c.tm == -2) {
      resident = chosen_resident;
      c = chosen;
      staged = true;
    } else if (c.tm == -3) {
      resident = chosen_resident;
      c = chosen;
      staged = chosen_staged;
      w_staged = true;
    } else if (c.tm == -4) {
      resident = chosen_resident;
      c = chosen;
      staged = chosen_staged;
      w_staged = chosen_w_staged;
      w_out = true;
    }
    pipelined = c.pipe;
    TM = c.tm;
    NB = c.nb;
    if (want_nb > 0 && c.nb != want_nb) continue;
    if (!fit(c.mb, c.db, c.rows) || (c.db && (g.Cg + CC - 1) / CC > 64)) continue;
    const bool forced = (pipeline == 1 && c.pipe && !chosen_pipe) ||
                        (staged && !chosen_staged && stage_input == 1) ||
                        (w_staged && stage_weights == 1) || (resident_variant && reside == 1) ||
                        (w_out && weights_on_out == 1);
    // a plan already priced (two candidates the fitting made equal): the same code, the
    // same cycles, so it could not win now (each candidate's kernel pipeline is most of
    // a compile's time)
    // (its state left as pricing it left it: the staging flags stay set after a plan that
    // does not fit)
    const auto plan_key =
        std::make_tuple(TM, c.mb, c.db, c.pipe, R, CC, NB, resident, staged, w_staged, w_out);
    if (auto seen = priced.find(plan_key); !forced && seen != priced.end()) {
      if (seen->second) {
        staged = false;
        w_staged = false;
        w_out = false;
      }
      continue;
    }
    const std::string name = PlanName(plan_key);
    if (!forced &&
        (passed_over(name) || (!price_every_plan && matrix_bound(c.mb) >= best_cycles))) {
      // (a plan that cannot beat the fastest so far is not ranked for the siblings either:
      // one of them prices it again)
      staged = false;
      w_staged = false;
      w_out = false;
      continue;
    }
    PrimFunc f = MakeFunc(call, p, build(c.mb, c.db, c.pipe));
    int64_t cycles = 0;
    try {
      cycles = cannot_fit(f) ? -1 : estimate(f);
    } catch (const ffi::Error&) {
      priced.emplace(plan_key, false);
      continue;  // does not fit once the buffers are placed in banks
    }
    priced.emplace(plan_key, cycles >= 0);
    if (cycles < 0) continue;
    ranked.emplace_back(cycles, name);
    if (cycles < best_cycles || forced) {
      best = f;
      best_cycles = cycles;
      chosen = c;
      chosen_resident = resident;
      chosen_pipe = c.pipe;
      chosen_staged = staged;
      chosen_w_staged = w_staged;
      chosen_w_out = w_out;
    }
    staged = false;
    w_staged = false;
    w_out = false;
  }
  // then the transposed plan (its epilogue in the matrix engine), when it fits
  // (tc_transposed 0 or 1 overrides the cost model: never, or whenever it fits)
  TransposedPlan chosen_transposed;
  // (a plan forced by tc_pipeline or tc_stage_input = 1 stays unless tc_transposed = 1 too)
  const int64_t transposed = AttrInt(call.attrs, "tc_transposed", -1);
  const bool forced = (pipeline == 1 && chosen_pipe) || (stage_input == 1 && chosen_staged) ||
                      (stage_weights == 1 && chosen_w_staged) || (reside == 1 && chosen_resident);
  if (transposed == 1) best_cycles = std::numeric_limits<int64_t>::max();
  if (TransposedFits(call, ep) && (transposed == 1 || (transposed != 0 && !forced))) {
    const bool unfolds = TransposedUnfolds(g);  // (one image an item)
    const bool many_taps = unfolds && g.KH * g.KW > kTransposedManyTaps;
    const bool may_keep = g.M * g.C * g.KH * g.KW <= kTransposedKeptWeightBytes;
    std::vector<std::pair<int64_t, TransposedPlan>> priced_transposed;  // (cycles, plan)
    const std::vector<int64_t> want_share = AttrInts(call.attrs, "tc_implicit_items", {});
    if (!want_share.empty() && (want_share.size() != 2 || want_share[0] < 0 || want_share[1] < 1 ||
                                want_share[0] > want_share[1]))
      TILECORE_THROW(ValueError) << "Conv: tc_implicit_items is [num, den] with 0 <= num <= den";
    // (a share asked for: only plans of that share are chosen; the others are priced to
    // find the fastest sizes)
    const bool share_forced = !want_share.empty() && want_share[0] > 0;
    const int64_t x_major = AttrInt(call.attrs, "tc_x_major", -1);
    // (whether the plan fits)
    auto price = [&](const TransposedPlan& t) {
      const std::string name = TransposedPlanName(t);
      if (transposed != 1 && passed_over(name)) return false;
      int64_t cycles = -1;
      PrimFunc f;
      try {
        f = MakeFunc(call, p, LowerConvTransposed(call, p, t));
        cycles = cannot_fit(f) ? -1 : estimate(f, t.implicit_num > 0 ? kMixedL1Headroom : 0);
      } catch (const ffi::Error&) {
        return false;  // does not fit once the buffers are placed in banks
      }
      if (cycles < 0) return false;
      ranked.emplace_back(cycles, name);
      priced_transposed.emplace_back(cycles, t);
      if ((share_forced && t.implicit_num == 0) || (x_major == 1 && !t.x_major)) return true;
      if (cycles < best_cycles) {
        best = f;
        best_cycles = cycles;
        chosen_transposed = t;
      }
      return true;
    };
    for (int64_t tp : {128, 256, 384, 512, 1024}) {
      // (an unfolding plan: 384, three rows of a stem's 111 or 112 columns; not 1024, whose
      // patches and unfolded tiles leave L1 no room for two items)
      if ((tp == 384 && !unfolds) || (tp == 1024 && unfolds)) continue;
      // items of 32 output channels when those of 64 would leave cores idle or unevenly
      // loaded (a small map: its positions are one item's)
      const int64_t HWo = g.OH * g.OW;
      const int64_t items64 =
          g.N * ((HWo + std::min(tp, HWo) - 1) / std::min(tp, HWo)) * ((g.M + 63) / 64);
      const bool few = g.M > 32 && items64 < 2 * int64_t(call.cores);
      // Channels that no block of 32 divides leave every size above a last, narrower
      // segment of items, which runs after the others on one core (its loads behind their
      // stores): also blocks of a share of the channels, one or two per core (1000: 250, 125).
      std::vector<int64_t> tms = {32, 64, 128, 256};
      for (int64_t k = 1; g.M % 32 != 0 && k <= 2; ++k) {
        const int64_t share = (g.M + k * call.cores - 1) / (k * call.cores);
        if (share > 32 && share <= 256 && share % 32 != 0) tms.push_back(share);
      }
      for (int64_t tm : tms) {
        if (tm == 32 && !few) continue;
        for (int variant = 0; variant < 8; ++variant) {
          const bool rv = variant & 1, resident = variant & 2, in_l2 = variant & 4;
          if (resident && !may_keep) continue;
          if (many_taps && may_keep && !resident) continue;
          if (in_l2 && (resident || !may_keep || p.in[1]->scope.view() != "global")) continue;
          if ((stage_weights == 1 && !in_l2) || (stage_weights == 0 && in_l2)) continue;
          const bool r_i8 = ep.residual >= 0 && call.inputs[ep.residual]->dtype == DataType::Int(8);
          if (rv && (ep.residual < 0 || r_i8)) continue;  // an int8 residual streams at 1 byte
          const int64_t HW = g.OH * g.OW;
          // a batch: also NB whole images per item, up to tp positions (each size once)
          for (int64_t nb : {1, 2, 4, 8}) {
            if (nb > 1 &&
                (unfolds || g.N % nb != 0 || nb * HW > tp || (tp != 128 && tp / 2 >= nb * HW)))
              continue;
            if (want_nb > 0 && nb != want_nb) continue;
            TransposedPlan t{std::min(tp, HW),
                             std::min(tm, g.M),
                             rv,
                             resident,
                             in_l2,
                             nb,
                             weights_on_out == 1 && !resident};
            // each size once (196 positions: 128, then 196)
            if ((nb == 1 && tp != 128 && tp / 2 >= t.tp) || (tm != 64 && tm / 2 >= t.tm)) continue;
            price(t);
          }
        }
      }
    }
    // then the fastest few with their weight blocks on the DMA-out engine (the weights then
    // load beside the X tiles and residuals; a plan slower by a little may gain the most)
    // the plans priced so far, fastest first (a copy: pricing appends to the list)
    auto fastest_priced = [&]() {
      std::vector<std::pair<int64_t, TransposedPlan>> fastest = priced_transposed;
      std::stable_sort(fastest.begin(), fastest.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      return fastest;
    };
    if (weights_on_out == -1) {
      const std::vector<std::pair<int64_t, TransposedPlan>> fastest = fastest_priced();
      int tried = 0;
      for (const auto& [cycles, plan] : fastest) {
        if (tried == kTransposedOnOutPlans) break;
        if (plan.weights_resident) continue;
        TransposedPlan t = plan;
        t.weights_on_out = true;
        price(t);
        ++tried;
      }
    }
    // then the fastest few again with each X tile's items on one core (an X read from the
    // DDR once a block of output channels reads it once, not once per block; tc_x_major 1:
    // every plan it applies to, and only those chosen)
    if (x_major != 0) {
      const std::vector<std::pair<int64_t, TransposedPlan>> fastest = fastest_priced();
      int tried = 0;
      for (const auto& [cycles, plan] : fastest) {
        if (x_major == -1 && tried == kTransposedXMajorPlans) break;
        if (plan.x_major || !XMajorApplies(g, plan, call.cores)) continue;
        TransposedPlan t = plan;
        t.x_major = true;
        price(t);
        ++tried;
      }
    }
    // then the fastest few again with each share of their items channel-major (a 1x1
    // Conv's epilogue then runs on both engines; tc_implicit_items [num, den] prices that
    // share alone, tc_implicit_items [0, 1] none)
    if (TransposedMixes(call, g, ep) && (want_share.empty() || want_share[0] > 0)) {
      const std::vector<std::pair<int64_t, TransposedPlan>> fastest = fastest_priced();
      int tried = 0;
      for (const auto& [cycles, plan] : fastest) {
        if (tried == kTransposedMixedPlans) break;
        if (plan.nb != 1) continue;
        std::vector<std::pair<int64_t, int64_t>> shares(std::begin(kImplicitShares),
                                                        std::end(kImplicitShares));
        if (!want_share.empty()) shares = {{want_share[0], want_share[1]}};
        bool fits = false;  // (a plan whose mixed forms overflow L1 does not count)
        for (const auto& [num, den] : shares) {
          TransposedPlan t = plan;
          t.implicit_num = num;
          t.implicit_den = den;
          fits = price(t) || fits;
        }
        tried += fits ? 1 : 0;
      }
    }
  }
  const int64_t got_nb = chosen_transposed.tp > 0 ? chosen_transposed.nb : chosen.nb;
  if (want_nb > 1 && got_nb != want_nb)
    TILECORE_THROW(ValueError) << "Conv: no plan of tc_images_per_item " << want_nb
                               << " images per item fits L1";
  if (!first.empty() && ranked.empty()) {
    // nothing the ranking left fits here (the sibling's first plans were its own): the
    // whole search after all
    sibling_search_off = true;
    PrimFunc f;
    try {
      f = LowerConv(call);
    } catch (...) {
      sibling_search_off = false;
      throw;
    }
    sibling_search_off = false;
    return f;
  }
  std::lock_guard<std::mutex> lock(memo_mu);
  if (generation != conv_plan_generation.load()) return best;  // (forgotten meanwhile)
  memo.emplace(key, Choice{chosen, chosen_resident, chosen_staged, chosen_w_staged, chosen_w_out,
                           chosen_transposed});
  if (!sibling.empty() && first.empty()) {  // (a full search: its ranking, for the siblings)
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    std::set<std::string> top, all;
    for (const auto& [cycles, name] : ranked) {
      if (top.size() < kSiblingPlans) top.insert(name);
      all.insert(name);
    }
    if (!top.empty()) rankings.emplace(sibling, std::make_pair(std::move(top), std::move(all)));
  }
  return best;
}

void ForgetConvPlanChoices() { conv_plan_generation.fetch_add(1); }

std::string CheckConv(const std::string& op, const Map<String, Any>& attrs,
                      const std::vector<TensorSpec>& ins) {
  if (ins.size() < 2 || !ins[0].defined() || !ins[1].defined()) return "Conv: expects X and W";
  std::vector<TensorSpec> operands = ins;  // without a fused residual
  std::string why = CheckFusedEpilogue(op, attrs, &operands);
  if (!why.empty()) return why;
  TensorSpec channel_scale;  // tc_channel_scale: the input after the operands
  const bool cs = AttrInt(attrs, "tc_channel_scale", 0) != 0;
  if (cs) {
    const size_t n = GetMatrixPrecision(attrs).int8() ? 4 : 3;
    if (operands.size() != n + 1 || !operands.back().defined())
      return "Conv: tc_channel_scale needs the per-channel scale as input " + std::to_string(n) +
             ", after the operands (the bias may be omitted)";
    channel_scale = operands.back();
    operands.pop_back();
  }
  why = CheckMatrixInputs(op, attrs, operands);
  if (!why.empty()) return why;
  ConvGeom g;
  if (!Geometry(operands, attrs, &g, &why)) return why;
  std::vector<int64_t> out{g.N, g.M, g.OH, g.OW};
  if (Shape(ins[0]).size() == 3) out.erase(out.begin() + 2);
  why = CheckResidualShape(op, GetFusedEpilogue(attrs, ins.size()), ins, out);
  if (!why.empty()) return why;
  why = CheckLut(op, attrs);
  if (!why.empty()) return why;
  if (HasAttr(attrs, "tc_lut") && HasAttr(attrs, "tc_activation"))
    return "Conv: tc_lut is the activation: it goes without tc_activation";
  if (cs) {
    const MatrixPrecision mp = GetMatrixPrecision(attrs);
    if (g.G != 1) return "Conv: tc_channel_scale needs one group";
    const bool x_i8 = operands[0]->dtype == DataType::Int(8);
    if (mp.name != "f32" && !(mp.int8() && (operands[0]->dtype == DataType::Float(32) || x_i8)))
      return "Conv: tc_channel_scale needs f32 data, in f32 or int8 (quantised on load), or "
             "int8 data in int8";
    if (x_i8 != HasAttr(attrs, "tc_channel_scale.tc_x_scale"))
      return "Conv: tc_channel_scale of int8 data goes with tc_channel_scale.tc_x_scale (the "
             "data's code), of f32 data without";
    if (x_i8) {
      why = CheckInt8Code(attrs, "tc_channel_scale.tc_x_scale", "tc_channel_scale.tc_x_zero_point",
                          "Conv");
      if (!why.empty()) return why;
    }
    auto shape = Shape(channel_scale);
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    if (channel_scale->dtype != DataType::Float(32) || shape.empty() || shape[0] != 1 ||
        count != g.C)
      return "Conv: the channel scale must be float32 with one value per input channel, [1, C, "
             "...]";
  }
  for (const char* knob :
       {"tc_pipeline", "tc_stage_input", "tc_stage_weights", "tc_weights_on_out", "tc_transposed",
        "tc_resident", "tc_depthwise_matrix", "tc_channel_scale"}) {
    if (!HasAttr(attrs, knob)) continue;
    auto v = attrs.Get(String(knob))->try_cast<int64_t>();
    const bool pipeline = std::string(knob) == "tc_pipeline";
    const bool three = pipeline && v && *v == 2;  // (depthwise)
    if (!v || (*v != 0 && *v != 1 && !three))
      return std::string("Conv: ") + knob + " must be 0 or 1" +
             (pipeline ? " (2: three stages, a depthwise Conv's)" : "");
    if (three && !(g.G > 1 && g.Cg == 1 && g.Mg == 1))
      return "Conv: tc_pipeline 2 (three stages) is a depthwise Conv's";
    if (three &&
        (GetMatrixPrecision(attrs).operand == DataType::Float(32) ||
         AttrInt(attrs, "tc_residual", 0) != 0 || AttrInt(attrs, "tc_depthwise_matrix", 1) == 0))
      return "Conv: tc_pipeline 2 (three stages) needs the matrix form (int8, f16 or bf16) "
             "without a residual";
  }
  // (a depthwise Conv that may take the matrix form: int8, f16 or bf16, not forced off it)
  const bool depthwise_matrix = g.G > 1 && g.Cg == 1 && g.Mg == 1 &&
                                GetMatrixPrecision(attrs).operand != DataType::Float(32) &&
                                AttrInt(attrs, "tc_depthwise_matrix", 1) != 0;
  if (HasAttr(attrs, "tc_depthwise_blocks")) {
    auto v = attrs.Get(String("tc_depthwise_blocks"))->try_cast<int64_t>();
    if (!v || (*v != 1 && *v != 2 && *v != 4 && *v != 16))
      return "Conv: tc_depthwise_blocks must be 1, 2, 4 or 16";
    if (*v > 1 && !depthwise_matrix)
      return "Conv: tc_depthwise_blocks above 1 is the depthwise matrix form's (int8, f16 or "
             "bf16)";
  }
  if (HasAttr(attrs, "tc_depthwise_col_channels")) {
    auto v = attrs.Get(String("tc_depthwise_col_channels"))->try_cast<int64_t>();
    if (!v || (*v != 4 && *v != 8 && *v != 16))
      return "Conv: tc_depthwise_col_channels must be 4, 8 or 16";
    if (!depthwise_matrix)
      return "Conv: tc_depthwise_col_channels is the depthwise matrix form's (int8, f16 or bf16)";
    if (*v < 16 && AttrInt(attrs, "tc_depthwise_blocks", 1) > 1)
      return "Conv: tc_depthwise_col_channels below 16 is for items of one block "
             "(tc_depthwise_blocks 1)";
  }
  if (HasAttr(attrs, "tc_images_per_item")) {
    auto v = attrs.Get(String("tc_images_per_item"))->try_cast<int64_t>();
    if (!v || *v < 1 || g.N % *v != 0 || (*v > 1 && g.G > 1 && g.Cg == 1 && g.Mg == 1))
      return "Conv: tc_images_per_item must be a divisor of the batch (" + std::to_string(g.N) +
             "), 1 for a depthwise Conv";
  }
  return "";
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterStrategy("Conv", Strategy{detail::CheckConv, detail::LowerConv,
                                    [](const OpCall&, int) { return std::string("onnx"); }});
});

// (a compile starts with it: its Conv plans depend on its own searches only)
TILECORE_REGISTER_GLOBAL("compiler.ForgetPlanChoices").set_body_typed([]() {
  detail::ForgetConvPlanChoices();
});

}  // namespace compiler
}  // namespace tilecore
