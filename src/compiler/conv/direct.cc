/*
 * src/compiler/conv/direct.cc — the direct plan of the Conv strategy (conv.direct, DirectConv):
 * a Conv (1-D and 2-D; grouped, dilated, strided, padded, with bias) as an implicit GEMM on
 * the matrix engine.
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
 * cores. A depthwise Conv (Cg = Mg = 1) takes the depthwise plans instead (depthwise.cc).
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
 * Variants, chosen by the search (strategy_conv.cc), as DirectConv's flags: the weights
 * resident in L1, the input or the weights staged in L2, items pipelined, the weight blocks
 * on the DMA-out engine, several images an item.
 */
#include <algorithm>
#include <string>
#include <vector>

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

DirectConv::DirectConv(const OpCall& op_call, const ConvGeom& geometry, const Params& params)
    : call(op_call), g(geometry), p(params) {
  f32 = DataType::Float(32);
  mp = GetMatrixPrecision(call.attrs);
  q = mp.int8();
  ot = mp.operand;
  acc_t = mp.accum;
  inv_scale = q ? InverseScale(AttrFloat(call.attrs, "tc_x_scale", 1.0)) : 1.0;
  x_scale = AttrFloat(call.attrs, "tc_x_scale", 1.0);
  zp = AttrInt(call.attrs, "tc_x_zero_point", 0);
  // int8 activations in DDR (docs/precision.md, "int8 between ops"): an int8 X was
  // quantised by its producer (loaded as is; padding is the zero point); an int8 Y is
  // quantised in the epilogue as its consumers would on load, so the bits are the same.
  x_i8 = call.inputs[0]->dtype == DataType::Int(8);
  // tc_channel_scale of an int8 X (its code tc_channel_scale.tc_x_scale / .tc_x_zero_point):
  // the int8 patch is loaded into Xp8, dequantised into the f32 patch, scaled and quantised
  // with tc_x_scale like an f32 X's
  cs_i8 = x_i8 && AttrInt(call.attrs, "tc_channel_scale", 0) != 0;
  cs_x_scale = AttrFloat(call.attrs, "tc_channel_scale.tc_x_scale", 1.0);
  cs_x_zp = AttrInt(call.attrs, "tc_channel_scale.tc_x_zero_point", 0);
  qx = q && (!x_i8 || cs_i8);  // quantise X on load
  // (an int8 output in any precision: quantised from the f32 result)
  y_i8 = call.outputs[0]->dtype == DataType::Int(8);
  if (y_i8 && !HasAttr(call.attrs, "tc_y_scale"))
    TILECORE_THROW(ValueError) << "Conv: an int8 output needs tc_y_scale";
  y_inv = y_i8 ? InverseScale(AttrFloat(call.attrs, "tc_y_scale", 1.0)) : 1.0;
  y_zp = AttrInt(call.attrs, "tc_y_zero_point", 0);
  // A Conv with one kernel row, a row stride and no row padding reads only every sh-th
  // input row: the input is viewed as [N, C, OH, sh, W] and the Conv is a row-stride-1
  // one over the [.., OH, 0, W] part, so the DMA skips the other rows (never loaded nor
  // quantised). The column stride stays in the im2col (a DMA of every other element
  // would move one element per beat).
  skip = g.KH == 1 && g.sh > 1 && g.pt == 0 && g.pb == 0 && g.H == g.OH * g.sh;
  auto x_view = [&](const Buffer& b, const std::string& name) {
    return skip ? View(b, {g.N, g.C, g.OH, g.sh, g.W}, name + "s")
                : View(b, {g.N, g.C, g.H, g.W}, name);
  };
  X = x_view(p.in[0], "X");
  // staged: the input copied once into the shared L2 (a share by each core, then a
  // barrier) and read from there: the items of different output-channel blocks, on
  // different cores, each read all of it, and L2 has 4x DDR's bandwidth and a tenth
  // of its latency
  staged = false;
  x_rows = g.N * g.C;
  x_cols = g.H * g.W;
  Xsh = DeclBuffer({I32(x_rows * x_cols)}, call.inputs[0]->dtype, String("Xsh"), "shared");
  Xst = x_view(Xsh, "Xst");
  if (skip) {
    g.H = g.OH;
    g.sh = 1;
  }
  KK = g.KH * g.KW;
  Wdram = View(p.in[1], {g.G, g.Mg, g.Cg * KK}, "Wm");
  // w_staged: the weights copied once into L2 the same way, so that the items that each
  // read a block (one per row tile) read it at L2's bandwidth and latency, not the DDR's
  w_staged = false;
  w_rows = g.G * g.Mg;
  w_cols = g.Cg * KK;
  Wsh = DeclBuffer({I32(w_rows * w_cols)}, call.inputs[1]->dtype, String("Wsh"), "shared");
  Wl2 = View(Wsh, {g.G, g.Mg, g.Cg * KK}, "Wm");
  has_bias = call.inputs.size() > 2 && call.inputs[2].defined();
  Bv = has_bias ? View(p.in[2], {g.M, 1}, "Bias") : Buffer();
  Sv = q ? View(p.in[3], {g.M, 1}, "WScale") : Buffer();
  // an item's scales and bias are a few words each, and a DMA from the DDR pays its 200
  // cycles of latency whatever it moves (RegNetY's grouped 3x3 Convs of 8 channels an item:
  // two such DMAs an item, 4,800 of a core's 7,500 cycles): every channel's loaded into L1
  // once a core when they come from the DDR and take at most kResidentParamBytes, the
  // items copying theirs from L1
  params_resident = (q || has_bias) && g.M * 4 <= kResidentParamBytes &&
                    (q ? p.in[3] : p.in[2])->scope.view() == "global" &&
                    (!has_bias || p.in[2]->scope.view() == "global");
  Y = View(p.out[0], {g.N, g.M, g.OH, g.OW}, "Y");
  ep = GetFusedEpilogue(call.attrs, call.inputs.size());
  // tc_channel_scale: X times a per-channel tensor (a squeeze-excite's scale, the input
  // before the residual), applied to each loaded patch before it is quantised or unfolded
  cs = AttrInt(call.attrs, "tc_channel_scale", 0) != 0;
  ScaleX =
      cs ? View(p.in[call.inputs.size() - (ep.residual >= 0 ? 2 : 1)], {g.C, 1}, "ChannelScale")
         : Buffer();
  Rv = ep.residual >= 0 ? View(p.in[ep.residual], {g.N, g.M, g.OH, g.OW}, "Residual") : Buffer();
  r_i8 = ep.residual >= 0 && call.inputs[ep.residual]->dtype == DataType::Int(8);
  // an int8 residual: the epilogue works in its units and the output is scaled after
  ru = GetResidualUnits(call.attrs, ep, y_i8);
  s_factor = r_i8 ? ru.x_factor : static_cast<float>(x_scale);
  TW = std::min(g.OW, kMaxP);
  R = TW == g.OW ? std::max<int64_t>(1, std::min(g.OH, kMaxP / g.OW)) : 1;
  // chunks of kMaxK input channels' taps: each chunk's load, quantisation and mm follow one
  // another, overlapped with the next chunk's. Over a few positions (a squeeze-excite's
  // 1x1 Convs on a pooled vector) a chunk's mm is tens of cycles and the chain's latencies
  // are all there is: one chunk of every channel instead (up to the mm's K limit, and to
  // kFewPositionsWeightBytes of a block's two weight tiles: f32's 960 channels of 128 rows
  // took 983,040 bytes, more than L1 holds beside the rest)
  few_positions = g.N * g.OH * g.OW <= kFewPositions;
  TM = std::min(g.Mg, kMaxTM);
  few_k = std::min<int64_t>(tc1::kMaxMmDim,
                            kFewPositionsWeightBytes / (2 * TM * int64_t(mp.operand_bytes())));
  CC = std::max<int64_t>(1, std::min(g.Cg, (few_positions ? std::max(few_k, kMaxK) : kMaxK) / KK));
  // L1 per tile: the input patch, the column matrix, the weight and output tiles. A wide
  // strided window (a 1x1 stride-2 conv over 256 channels) can overflow L1 with the
  // largest CC and R: halve the channels per chunk (down to 16), then the rows.
  // resident: the whole weight matrix loaded into L1 once per core, not a block per chunk
  // and item (each DMA pays the DDR latency, and every item re-read the weights)
  resident = false;
  // pipelined: two sets of the per-item buffers (accumulators, residual, bias, scales)
  pipelined = false;
  // w_out: the weight blocks loaded on the DMA-out engine, each item's first one issued
  // before its first patch is waited for: the blocks from the DDR load beside the patches
  // from L2 instead of behind them (the out engine also carries the stores: a Conv whose
  // stores are long loses by it, so the cost model decides)
  w_out = false;
  // images per item: NB images of a batch share each loaded weight block, their positions
  // side by side in the matrix engine's columns (a late layer's 7 x 7 positions fill a
  // block of 32 columns poorly, and every image re-read the weights)
  NB = 1;
  // int8 with a bias: the accumulator starts at the int32 bias (i32 wraps in the matrix
  // engine; a vector-engine add would saturate), so every chunk accumulates
  preset = q && has_bias;
  budget = call.l1_bytes - (int64_t{32} << 10);  // DMA state and the planner's slack
  R0 = R;
  CC0 = CC;
  Fit(1, false);
}

BufferRegion DirectConv::XRegion(PrimExpr n, PrimExpr c, PrimExpr ih, int64_t iw, int64_t cc,
                                 int64_t rows, int64_t cols) const {
  const Buffer& src = staged ? Xst : X;
  if (skip) return Region(src, {n, c, ih, I32(0), I32(iw)}, {1, cc, rows, 1, cols});
  return Region(src, {n, c, ih, I32(iw)}, {1, cc, rows, cols});
}

int64_t DirectConv::L1Bytes(int64_t rows, int64_t cc, int64_t mb, int64_t slots) const {
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
  if (q) sum += bank(acc);                                                         // the f32 result
  if (r_i8) {
    per_item += bank(acc / 4);  // int8 residual tiles
    sum += bank(acc / mb);      // one converted to f32
  } else if (ep.residual >= 0) {
    per_item += bank(acc);  // the residual tiles
  }
  if (ep.passes()) sum += bank(acc / mb);                        // the activation's scratch block
  if (y_i8) sum += bank(acc / 4);                                // the int8 result
  if (params_resident) sum += (preset ? 2 : 1) * bank(g.M * 4);  // every channel's
  return sum + (pipelined ? 2 : 1) * per_item;
}

bool DirectConv::Fit(int64_t mb, bool db, int64_t rows) {
  const int64_t slots = db ? 2 : 1;
  R = rows > 0 ? std::min(g.OH, rows) : R0;
  CC = CC0;
  while (L1Bytes(R, CC, mb, slots) > budget) {
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
  return L1Bytes(R, CC, mb, slots) <= budget;
}

int64_t DirectConv::BlocksPerItem(int64_t mblocks, int64_t tm, int64_t MB) const {
  return tm == TM && mblocks % MB == 0 ? MB : 1;
}

Stmt DirectConv::Build(int64_t MB, bool db, bool pipe) const {
  int64_t rotation = 0;
  // a buffer's shape with the NB axis at `at` when items take several images (one image:
  // the shapes as they were, so the code is the same)
  auto with_nb = [&](std::vector<int64_t> dims, size_t at) {
    if (NB > 1) dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(at), NB);
    return dims;
  };
  Buffer Wres = Local({g.Mg, g.Cg * KK}, ot, "Wres");
  // (params_resident) every channel's scales (or f32 bias) and int32 bias
  Buffer Spar = Local({g.M}, f32, "Spar"), Bpar = Local({g.M}, acc_t, "Bpar");
  // ... where the items are many, kMinItemsForParams a core or more (a few items' DDR
  // latencies overlap the patch loads; an extra copy an item is all they would save)
  const int64_t all_items = (g.N / NB) * g.G * ((g.OW + TW - 1) / TW) * ((g.OH + R - 1) / R) *
                            ((g.Mg + TM * MB - 1) / (TM * MB));
  const bool keep_params =
      params_resident && all_items >= kMinItemsForParams * static_cast<int64_t>(call.cores);
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
    // (keep_params) on the engines of the items' copies from them, which their queues
    // then run after them: no wait, their latency overlapping the first item's loads
    if (keep_params) {
      groups.push_back(Intrin("tile.dma_prefetch",
                              {Region(Spar, {I32(0)}, {g.M}),
                               Region(View(q ? Sv : Bv, {g.M}, "Run"), {I32(0)}, {g.M}), I32(4)}));
      if (preset)
        groups.push_back(
            Intrin("tile.dma_copy", {Region(Bpar, {I32(0)}, {g.M}),
                                     Region(View(Bv, {g.M}, "Run"), {I32(0)}, {g.M}), I32(5)}));
    }
    if (resident)
      groups.push_back(DmaWait(Region(Wres, {I32(0), I32(0)}, {g.Mg, g.Cg * KK}),
                               Region(Wt, {I32(0), I32(0), I32(0)}, {1, g.Mg, g.Cg * KK}), 0));
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += TW) {
      int64_t tw = std::min(TW, g.OW - ow0);
      int64_t win = (tw - 1) * g.sw + (g.KW - 1) * g.dw + 1;  // patch columns
      int64_t iw0 = ow0 * g.sw - g.pl;                        // input column of patch column 0
      int64_t vlo = std::max<int64_t>(0, iw0),
              vhi = std::min<int64_t>(g.W, iw0 + win);  // valid input columns
      for (const auto& r_seg : Segments(g.OH, R)) {
        const int64_t rcount = r_seg.first, r = r_seg.second;
        int64_t rbase = r == R ? 0 : (g.OH / R) * R;
        int64_t rin = (r - 1) * g.sh + (g.KH - 1) * g.dh + 1;
        for (const auto& tm_seg : Segments(g.Mg, TM)) {
          const int64_t mblocks = tm_seg.first, tm = tm_seg.second;
          int64_t mbase = tm == TM ? 0 : (g.Mg / TM) * TM;
          const int64_t mb = BlocksPerItem(mblocks, tm, MB);
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
          Buffer Xp8 = cs_i8
                           ? Local(with_nb({two ? 2 : 1, CC, rin, win}, 2), DataType::Int(8), "Xp8")
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
          auto item = [&, r = r, rbase = rbase, rin = rin, tm = tm, mbase = mbase, rcount = rcount,
                       mcount = mcount, mb = mb,
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
            auto m0_of = [&](int64_t j) { return I32(mbase) + (mi * I32(mb) + I32(j)) * I32(TM); };
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
            // (keep_params: from L1, each a run of one row)
            auto params_of = [&](const Buffer& dst, const Buffer& kept, const Buffer& ddr) {
              if (keep_params)
                return std::make_pair(Region(View(dst, {mb * tm}, "Run"), {I32(0)}, {mb * tm}),
                                      Region(kept, {mfirst}, {mb * tm}));
              return std::make_pair(Region(dst, {I32(0), I32(0)}, {mb * tm, 1}),
                                    Region(ddr, {mfirst, I32(0)}, {mb * tm, 1}));
            };
            if (q || has_bias) {  // (on the DMA-out engine: beside the patch's loads)
              auto [dst, src] = params_of(Sall, Spar, q ? Sv : Bv);
              s.push_back(Intrin("tile.dma_prefetch", {dst, src, I32(4)}));
            }
            if (preset) {
              auto [dst, src] = params_of(Bl, Bpar, Bv);
              s.push_back(Intrin("tile.dma_copy", {dst, src, I32(5)}));
            }
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
              auto xp_at = [&](int64_t img, PrimExpr row, int64_t col, int64_t rows, int64_t cols) {
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
                                     XRegion(ni, xc, ih0, vlo, cc, rin, vhi - vlo), I32(event)});
                Stmt rows = Loop("rr", rin, [&](PrimExpr rr) {
                  PrimExpr ih = ih0 + rr;
                  return IfThenElse(
                      ih >= I32(0) && ih < I32(g.H),
                      Intrin("tile.dma_copy",
                             {xp_at(img, rr, vlo - iw0, 1, vhi - vlo),
                              XRegion(ni, xc, ih, vlo, cc, 1, vhi - vlo), I32(event)}));
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
                       XRegion(ni, xc, I32(lo), vlo, cc, hi - lo, vhi - vlo), I32(event)});
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
                      return BufferStore(xv, BufferLoad(xv, i) - F32(static_cast<double>(cs_x_zp)),
                                         i);
                    }));
                  // the code's scale folded into the chunk's channel scales (cc values)
                  std::vector<int64_t> sd{cc, 1};
                  Buffer sv = StridedView(Sc, sd, {1, 1}, slot * CC, "Scs");
                  st.push_back(Nest(sd, [&](const Array<PrimExpr>& i) {
                    return BufferStore(sv, BufferLoad(sv, i) * F32(static_cast<float>(cs_x_scale)),
                                       i);
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
                  if (j == 0 && !acc)               // the first write of the accumulators: the last
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
              for (int64_t c = 0; c < g.Cg; c += CC) chunks.push_back({c, std::min(CC, g.Cg - c)});
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
                  next_first =
                      wload_at(I32(chunks[k + 1].first), chunks[k + 1].second, 0, (wbase + mb) % 2);
                push(compute(I32(chunks[k].first), chunks[k].second, (int64_t(k) + base) % 2,
                             k > 0 || preset, next, wbase, k > 0 || early, next_first));
              }
            } else {
              bool first = true;
              for (auto [ccount, cc] : Segments(g.Cg, CC)) {
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
                  for (const Stmt& x : compute(c0, cc, ib.slot, acc, {}, 0, early)) st.push_back(x);
                  return Seq(st);
                };
                SumChunks(
                    &s, "ci", ccount, &first, [&](PrimExpr ci) { return chunk(ci, preset, true); },
                    [&](PrimExpr ci, bool acc) { return chunk(ci, acc); });
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
    if (keep_params) all = Allocate(Spar, preset ? Allocate(Bpar, all) : all);
    return lut.empty() ? all : Allocate(lut_words, all);
  });
  if (w_staged) body = Allocate(Wsh, body);
  return staged ? Allocate(Xsh, body) : body;
}

}  // namespace conv
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
