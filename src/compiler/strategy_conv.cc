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
 * This file holds the implicit-GEMM plans and the search over every plan; conv/ holds the
 * geometry (conv/geometry.cc), the depthwise plans (conv/depthwise.cc) and the transposed plan
 * (conv/transposed.cc), declared in conv/conv_plans.h.
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

#include "conv/conv_plans.h"
#include "fused_epilogue.h"
#include "kernel_util.h"
#include "lookup_table.h"
#include "matrix_precision.h"
#include "plan_registry.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/cost_model.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/transform/pass.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

using namespace conv;  // NOLINT(build/namespaces): the plans of conv/ are this strategy's

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

const bool kConvPlansRegistered =
    RegisterPlan("Conv", "conv.direct",
                 "items of output rows x a block of output channels: the patch unfolded in "
                 "L1, the products in the matrix engine, the epilogue in the vector engine "
                 "(with its variants: weights resident, input or weights staged in L2, items "
                 "pipelined, weights on the DMA-out engine)",
                 true) &&
    RegisterPlan("Conv", "conv.transposed",
                 "int8: the transposed product Y^T = X^T W^T, its epilogue in the matrix "
                 "engine (with its variants: weights resident or in L2, on the DMA-out "
                 "engine, X-major items, a share of the items channel-major)") &&
    RegisterPlan("Conv", "conv.depthwise.vector", "a depthwise Conv's taps on the vector engine",
                 true) &&
    RegisterPlan("Conv", "conv.depthwise.matrix",
                 "int8, f16 or bf16: a depthwise Conv's taps as block-diagonal products in the "
                 "matrix engine");

/*! \brief The `plan` attribute of a direct plan: its family and sizes. */
std::string DirectPlanText(int64_t tm, int64_t mb, bool db, bool pipe, int64_t rows, int64_t cc,
                           int64_t nb, bool resident, bool staged, bool w_staged, bool w_out) {
  std::ostringstream o;
  o << "conv.direct tm=" << tm << " mb=" << mb << " rows=" << rows << " cc=" << cc;
  if (nb > 1) o << " images=" << nb;
  if (db) o << " double-buffered";
  if (pipe) o << " pipelined";
  if (resident) o << " weights-resident";
  if (staged) o << " input-in-l2";
  if (w_staged) o << " weights-in-l2";
  if (w_out) o << " weights-on-dma-out";
  return o.str();
}

/*! \brief The `plan` attribute of a transposed plan. */
std::string TransposedPlanText(const TransposedPlan& t) {
  std::ostringstream o;
  o << "conv.transposed tp=" << t.tp << " tm=" << t.tm;
  if (t.nb > 1) o << " images=" << t.nb;
  if (t.residual_on_vector) o << " residual-on-vector";
  if (t.weights_resident) o << " weights-resident";
  if (t.weights_in_l2) o << " weights-in-l2";
  if (t.weights_on_out) o << " weights-on-dma-out";
  if (t.x_major) o << " x-major";
  if (t.implicit_num > 0) o << " channel-major=" << t.implicit_num << "/" << t.implicit_den;
  return o.str();
}

PrimFunc LowerConv(const OpCall& call) {
  (void)kConvPlansRegistered;
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
    // the matrix form's taps read in place, an mm a tap (unit strides only)
    const int64_t want_shifted = AttrInt(call.attrs, "tc_depthwise_shifted", -1);
    const bool can_shift = g.sh == 1 && g.sw == 1;
    if (want_shifted == 1 && !can_shift)
      TILECORE_THROW(ValueError) << "Conv: tc_depthwise_shifted 1 needs unit strides, got " << g.sh
                                 << "x" << g.sw;
    std::tuple<bool, int, int64_t, bool> best_form{false, 1, 1, false};  // matrix, stages,
                                                                         // blocks, shifted
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
    if (want_shifted == 1 && (!matrix_form || !matrix_enabled || want_matrix == 0))
      TILECORE_THROW(ValueError)
          << "Conv: tc_depthwise_shifted 1 needs the matrix form (int8, f16 or bf16)"
          << (matrix_enabled ? "" : ", which compiler.disabled_plans turns off");
    if (want_matrix == 1 && !matrix_enabled)
      TILECORE_THROW(ValueError) << "Conv: tc_depthwise_matrix 1 asks for conv.depthwise.matrix, "
                                    "which compiler.disabled_plans turns off";
    auto depthwise_text = [](bool matrix, int stages, int64_t blocks, int64_t col, bool shifted) {
      std::ostringstream o;
      o << (matrix ? "conv.depthwise.matrix" : "conv.depthwise.vector") << " stages=" << stages;
      if (matrix) o << " blocks=" << blocks << " column-channels=" << col;
      if (shifted) o << " shifted";
      return o.str();
    };
    for (bool matrix : {false, true}) {
      if ((matrix && (!matrix_form || !matrix_enabled)) ||
          (want_matrix >= 0 && matrix != (want_matrix == 1)))
        continue;
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
          const int64_t col = matrix && blocks == 1 ? want_col : kDepthwiseBlock;
          const bool shifted = matrix && want_shifted == 1;
          PrimFunc f =
              WithPlan(LowerDepthwise(call, g, p, matrix, pipe, stages == 3, blocks, col, shifted),
                       depthwise_text(matrix, stages, blocks, col, shifted));
          const std::optional<int64_t> cycles = price(f);
          if (!cycles) continue;
          if (!best || *cycles < best_cycles) {
            best = f, best_cycles = *cycles;
            best_form = {matrix, stages, blocks, shifted};
          }
        }
      }
    }
    // the fastest matrix form again with its taps read in place (unit strides: an mm a tap,
    // no column matrix, so the vector engine does not unfold them), kept when faster
    if (best && std::get<0>(best_form) && can_shift && want_shifted < 0) {
      const auto [matrix, stages, blocks, shifted] = best_form;
      const int64_t col = blocks == 1 ? want_col : kDepthwiseBlock;
      PrimFunc f =
          WithPlan(LowerDepthwise(call, g, p, true, stages > 1, stages == 3, blocks, col, true),
                   depthwise_text(true, stages, blocks, col, true));
      const std::optional<int64_t> cycles = price(f);
      if (cycles && *cycles < best_cycles) {
        best = f, best_cycles = *cycles;
        std::get<3>(best_form) = true;
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
      const bool shifted = std::get<3>(best_form);
      for (int64_t col : {int64_t{8}, int64_t{4}}) {
        PrimFunc f =
            WithPlan(LowerDepthwise(call, g, p, true, stages > 1, stages == 3, 1, col, shifted),
                     depthwise_text(true, stages, 1, col, shifted));
        const std::optional<int64_t> cycles = price(f);
        if (cycles && *cycles < best_cycles * (1 - kFewerChannelsGain))
          best = f, best_cycles = *cycles;
      }
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
        for (const auto& r_seg : Segments(g.OH, R)) {
          const int64_t rcount = r_seg.first, r = r_seg.second;
          int64_t rbase = r == R ? 0 : (g.OH / R) * R;
          int64_t rin = (r - 1) * g.sh + (g.KH - 1) * g.dh + 1;
          for (const auto& tm_seg : Segments(g.Mg, TM)) {
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
  // (the plans a search may offer are part of what it chose among)
  const std::string disabled = DisabledPlansKey();
  const std::string key = PlanKey(call) + (disabled.empty() ? "" : ";disabled_plans=" + disabled);
  const bool transposed_enabled = PlanEnabled("conv.transposed");
  // the `plan` attribute of build(MB, db, pipe) as the fitting left its sizes
  auto direct_plan = [&](int64_t MB, bool db, bool pipe) {
    return WithPlan(MakeFunc(call, p, build(MB, db, pipe)),
                    DirectPlanText(TM, MB, db, pipe, R, CC, NB, resident, staged, w_staged, w_out));
  };
  auto transposed_plan = [&](const TransposedPlan& t) {
    return WithPlan(MakeFunc(call, p, LowerConvTransposed(call, p, t)), TransposedPlanText(t));
  };
  {
    std::lock_guard<std::mutex> lock(memo_mu);
    if (const uint64_t now = conv_plan_generation.load(); now != generation) {
      memo.clear();
      rankings.clear();
      generation = now;
    }
    if (auto it = memo.find(key); it != memo.end()) {
      const Choice& c = it->second;
      if (c.transposed.tp > 0) return transposed_plan(c.transposed);
      TM = c.plan.tm;
      resident = c.resident;
      staged = c.staged;
      w_staged = c.w_staged;
      w_out = c.w_out;
      pipelined = c.plan.pipe;
      NB = c.plan.nb;
      fit(c.plan.mb, c.plan.db, c.plan.rows);
      return direct_plan(c.plan.mb, c.plan.db, c.plan.pipe);
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
      for (auto [rcount, r] : Segments(g.OH, R))
        for (auto [mblocks, tm] : Segments(g.Mg, TM)) {
          const int64_t mb = blocks_per_item(mblocks, tm, MB);
          const int64_t n = g.N / NB * g.G * rcount * (mblocks / mb);
          int64_t item = 0;
          for (auto [ccount, cc] : Segments(g.Cg, CC))
            item += ccount * mb * MatrixCommandCycles(tm, NB * r * tw, cc * KK, ot);
          items += n;
          total += n * item;
          largest = std::max(largest, item);
        }
    }
    return std::max(largest, total / std::max<int64_t>(1, std::min(call.cores, items)));
  };
  PrimFunc best = direct_plan(1, false, false);
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
    PrimFunc f = direct_plan(c.mb, c.db, c.pipe);
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
  const std::vector<int64_t> share_asked = AttrInts(call.attrs, "tc_implicit_items", {});
  if (!transposed_enabled && (transposed == 1 || AttrInt(call.attrs, "tc_x_major", -1) == 1 ||
                              (!share_asked.empty() && share_asked[0] > 0)))
    TILECORE_THROW(ValueError) << "Conv: tc_transposed 1, tc_x_major 1 and a share in "
                                  "tc_implicit_items ask for conv.transposed, which "
                                  "compiler.disabled_plans turns off";
  if (transposed == 1) best_cycles = std::numeric_limits<int64_t>::max();
  if (transposed_enabled && TransposedFits(call, ep) &&
      (transposed == 1 || (transposed != 0 && !forced))) {
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
        f = transposed_plan(t);
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
        // Shares that compute the same items channel-major (few items a core make many) run
        // the same commands but for the test of an item's share, whose arithmetic is least
        // for the smallest denominator: only that share of them is priced.
        std::map<std::vector<bool>, std::pair<int64_t, int64_t>> cheapest;  // items -> share
        for (const auto& [num, den] : shares) {
          TransposedPlan t = plan;
          t.implicit_num = num;
          t.implicit_den = den;
          auto [it, fresh] =
              cheapest.emplace(ChannelMajorItems(g, t, call.cores), std::make_pair(num, den));
          if (!fresh && den < it->second.second) it->second = {num, den};
        }
        for (const auto& [num, den] : shares) {
          TransposedPlan t = plan;
          t.implicit_num = num;
          t.implicit_den = den;
          if (cheapest.at(ChannelMajorItems(g, t, call.cores)) != std::make_pair(num, den))
            continue;
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
  if (HasAttr(attrs, "tc_depthwise_shifted")) {
    auto v = attrs.Get(String("tc_depthwise_shifted"))->try_cast<int64_t>();
    if (!v || (*v != 0 && *v != 1)) return "Conv: tc_depthwise_shifted must be 0 or 1";
    if (*v == 1 && !depthwise_matrix)
      return "Conv: tc_depthwise_shifted is the depthwise matrix form's (int8, f16 or bf16)";
    if (*v == 1 && (g.sh != 1 || g.sw != 1))
      return "Conv: tc_depthwise_shifted 1 needs unit strides";
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
