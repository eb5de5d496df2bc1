/*
 * src/compiler/strategy_matmul.cc — MatMul (batched, broadcast, 1-D operands) and Gemm
 * (transA/B, alpha, beta, C broadcast) on the matrix engine.
 *
 * Tiling: C tiles of TM x TN (128 x 128 f32) accumulate over K in steps of TK (256);
 * the A, B and C tiles (128 + 128 + 64 KiB) fit L1 for any shape. Edge tiles have
 * their own constant sizes (a full part and a remainder per dimension), so every DMA
 * and every tile.mm has constant extents. The output tiles (batch x M-tiles x
 * N-tiles) are spread over the cores round robin.
 *
 * Precisions (tc_precision, docs/precision.md): f16/bf16 keep the A and B tiles in the
 * narrow type (the DMA converts f32 data, nearest even) with f32 accumulation. int8
 * DMAs f32 activations into an f32 tile and quantises them in L1 (times f32(1 / scale),
 * plus the zero point, tcvt to i8); int8 weights are DMAed as they are; tile.mm
 * accumulates in i32 over K, then the int32 bias is added and the sum converted to f32
 * and multiplied by f32(x_scale * w_scale[n]) (or x_scale * b_scale for two activations):
 * in the mm's fused epilogue when K fits one mm (K <= 256), else the accumulator starts
 * at the bias and two vector commands dequantise after the last K step. An int8 A
 * (quantised by its producer) is DMAed as it is; with tc_y_scale the output is int8,
 * requantised with one multiplier per column, f32(w_scale[n] * f32(x_scale / y_scale)),
 * plus tc_y_zero_point (the epilogue's, or the same steps on the vector engine).
 * With tc_lut (a unary op with a lookup-table form that only read the int8 output, fused
 * by the driver: its attributes under "tc_lut.") the int8 result goes through the op's
 * table (tile.vec_lut) before it is stored. With tc_softmax (a Softmax over the last axis
 * that alone read the f32 output of an int8 MatMul of two activations: attention's
 * scores) the MatMul computes the probabilities itself, LowerMatMulSoftmax; with it,
 * tc_b_heads takes the keys' Transpose too: B is given as [.., N, H, K] (the keys' rows,
 * heads interleaved) and each item's [N, K] is turned in L1, and tc_context the MatMul
 * that read the int8 probabilities (V its input 2). When the heads divide the cores, each
 * core's items are rows of one head: its keys (turned) and V are loaded for its first two
 * items and kept. Two output layouts
 * take the Transposes of attention's heads (fused by the driver): tc_y_heads = D stores
 * Y [M, N] as [N / D, M, D], tc_y_rows_first stores Y [B, M, N] as [M, B, N].
 *
 * Two more plans compete with that tiling when they fit (int8 with constant weights, or a
 * 2-D B in the other precisions, Gemm's C a per-column bias added by the mm epilogue; K in
 * one mm): pipelined (weights staged once in L2, rows
 * in chunks per core) and column (few rows: A in L1 on every core, each core streaming
 * its columns of the weights; with an int8 Y, a variant requantises the middle blocks on
 * the vector engine, their sums started at the bias, the same bits as the epilogue). The cost model
 * (cost_model.h) ranks every candidate and the fastest estimate is lowered; docs/compiler.md
 * describes them. With tc_row_norm (an int8 Gemm of an int8 A and the LayerNormalization or
 * RMSNormalization that alone read its output, fused by the driver) the Gemm lowers to the
 * row-norm plan only: whole rows per core, all the weights in L1, the norm of one chunk of
 * rows on the vector engine beside the mms of the next.
 *
 * This file holds the checks, the choice among the plans and the registration; the plans are
 * under matmul/, a file each, declared in matmul/matmul_plans.h.
 */
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "kernel_util.h"
#include "lookup_table.h"
#include "matmul/matmul_plans.h"
#include "matrix_precision.h"
#include "plan_choice.h"
#include "plan_registry.h"
#include "rows_util.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/cost_model.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

using namespace matmul;  // NOLINT(build/namespaces): the plans of matmul/ are this strategy's

const bool kGemmPlansRegistered =
    RegisterPlan("Gemm", "gemm.tiled",
                 "C tiles of 128 x 128 over chunks of K, every core a share of the tiles "
                 "(MatMul and Gemm)",
                 true) &&
    RegisterPlan("Gemm", "gemm.pipelined",
                 "each core a block of rows in chunks, the weight blocks streamed beside the "
                 "products, the next chunk's loads before this one's epilogue") &&
    RegisterPlan("Gemm", "gemm.columns",
                 "each core a block of columns (its weights read once), every row of A through "
                 "them; the plan of a split output (tc_split)") &&
    RegisterPlan("Gemm", "gemm.row_norm",
                 "a product with the LayerNormalization or RMSNormalization of its rows fused "
                 "(tc_row_norm): whole rows a core",
                 true) &&
    RegisterPlan("MatMul", "matmul.softmax",
                 "attention's scores, their Softmax (and the product with V) fused "
                 "(tc_softmax): whole rows a core",
                 true);

std::string PipelinedText(const PipelinePlan& pp) {
  return "gemm.pipelined rows-a-core=" + std::to_string(pp.mc) + " rows=" + std::to_string(pp.tm) +
         " columns=" + std::to_string(pp.tn);
}

std::string ColumnsText(const ColumnPlan& cp) {
  return "gemm.columns columns=" + std::to_string(cp.tn) + " weight-rows=" + std::to_string(cp.kc) +
         (cp.vec_epilogue ? " vector-epilogue" : "");
}

std::string RowNormText(const RowNormPlan& rp) {
  return "gemm.row_norm rows-a-core=" + std::to_string(rp.mc) + " rows=" + std::to_string(rp.tm) +
         " columns=" + std::to_string(rp.tn);
}

/*! \brief tc_row_norm's lowering: the row-norm plan the cost model estimates fastest. */
PrimFunc ChooseRowNorm(const OpCall& call, const Params& p, const GemmPlan& g) {
  const bool q_out = HasAttr(call.attrs, "tc_norm_q_scale");
  if (call.outputs.size() != (q_out ? 2u : 1u) || call.outputs[0]->dtype != DataType::Float(32) ||
      call.outputs[0]->numel() != g.M * g.N ||
      (q_out &&
       (call.outputs[1]->dtype != DataType::Int(8) || call.outputs[1]->numel() != g.M * g.N)))
    TILECORE_THROW(ValueError) << call.op_type << ": tc_row_norm writes Y (" << g.M << " x " << g.N
                               << " float32) and, with tc_norm_q_scale, Y in int8 beside it";
  RowNormArgs ra;
  ra.rms = AttrStr(call.attrs, "tc_row_norm", "LayerNormalization") == "RMSNormalization";
  ra.epsilon = AttrFloat(call.attrs, "tc_norm_epsilon", 1e-5);
  ra.gamma = View(p.in[4], {g.N}, "Gamma");
  if (call.inputs[5].defined()) ra.beta = View(p.in[5], {g.N}, "Beta");
  if (call.inputs[6].defined()) ra.skip = View(p.in[6], {g.M, g.N}, "Skip");
  if (q_out) {
    ra.yq = p.out[1];
    ra.q_inv = InverseScale(AttrFloat(call.attrs, "tc_norm_q_scale", 1.0));
    ra.q_zp = AttrInt(call.attrs, "tc_norm_q_zero_point", 0);
  }
  Fastest fastest{call, "no plan takes " + std::to_string(g.M) + " rows on " +
                            std::to_string(call.cores) +
                            " cores (the rows split evenly, and P K <= 8 M)"};
  const std::vector<RowNormPlan> plans = RowNormPlans(call, g);
  const std::string key = "row norm;" + PlanKey(call);
  auto row_norm = [&](size_t i) {
    return WithPlan(MakeFunc(call, p, LowerGemmRowNorm(call, g, ra, plans[i])),
                    RowNormText(plans[i]));
  };
  if (auto chosen = ChosenBefore(key); chosen && *chosen < plans.size()) return row_norm(*chosen);
  size_t best = 0;
  for (size_t i = 0; i < plans.size(); ++i)
    if (fastest.Offer(row_norm(i))) best = i;
  if (fastest.best.defined()) Choose(key, best);
  if (!fastest.best.defined())
    TILECORE_THROW(ValueError) << call.op_type << ": tc_row_norm with " << g.N
                               << " columns has no plan here: " << fastest.why;
  return fastest.best;
}

/*!
 * \brief The lowering of a Gemm plan: the tiled form, or a pipelined or column plan that fits,
 * whichever the cost model (cost_model.h) estimates fastest.
 */
PrimFunc ChooseGemm(const OpCall& call, const Params& p, const GemmPlan& g) {
  (void)kGemmPlansRegistered;
  const bool split = !g.split.empty();  // (only the column plan stores several outputs)
  std::vector<ColumnPlan> columns = ColumnPlans(call, g);
  if (split && columns.empty())
    TILECORE_THROW(ValueError) << call.op_type << ": tc_split needs the column plan, which does "
                               << "not take this shape on " << call.cores << " cores";
  if (split && !PlanEnabled("gemm.columns"))
    TILECORE_THROW(ValueError) << call.op_type << ": tc_split needs the column plan, which "
                               << "compiler.disabled_plans turns off";
  if (!PlanEnabled("gemm.columns") && !split) columns.clear();
  PrimFunc tiled =
      split ? PrimFunc() : WithPlan(MakeFunc(call, p, LowerGemm(call, g)), "gemm.tiled");
  std::vector<PipelinePlan> plans = split || !PlanEnabled("gemm.pipelined")
                                        ? std::vector<PipelinePlan>{}
                                        : PipelinePlans(call, g);
  if (plans.empty() && columns.empty()) return tiled;
  auto pipelined = [&](size_t i) {
    return WithPlan(MakeFunc(call, p, LowerGemmPipelined(call, g, plans[i])),
                    PipelinedText(plans[i]));
  };
  auto column = [&](size_t i) {
    return WithPlan(MakeFunc(call, p, LowerGemmColumns(call, g, columns[i])),
                    ColumnsText(columns[i]));
  };
  // (the plan chosen: 0 the tiled form, 1 + i pipelined plan i, 1 + plans + i column plan i;
  // the plans a search may offer are part of what it chose among)
  const std::string disabled = DisabledPlansKey();
  const std::string key =
      "gemm;" + PlanKey(call) + (disabled.empty() ? "" : ";disabled_plans=" + disabled);
  if (auto chosen = ChosenBefore(key); chosen && *chosen <= plans.size() + columns.size()) {
    const size_t c = *chosen;
    if (c == 0 && !split) return tiled;
    if (c >= 1 && c <= plans.size()) return pipelined(c - 1);
    if (c > plans.size()) return column(c - 1 - plans.size());
  }
  Fastest fastest{call, ""};
  size_t best = 0;
  if (!split) {  // (the tiled form fits any shape: an error estimating it is an error)
    fastest.best = tiled;
    fastest.cycles = EstimateStrategy(tiled, call.l1_bytes, static_cast<int>(call.cores)).cycles;
  }
  for (size_t i = 0; i < plans.size(); ++i)
    if (fastest.Offer(pipelined(i))) best = 1 + i;
  for (size_t i = 0; i < columns.size(); ++i)
    if (fastest.Offer(column(i))) best = 1 + plans.size() + i;
  if (fastest.best.defined()) Choose(key, best);
  if (!fastest.best.defined())
    TILECORE_THROW(ValueError) << call.op_type << ": tc_split needs the column plan, which does "
                               << "not fit L1 here";
  return fastest.best;
}

std::vector<int64_t> Broadcast(std::vector<int64_t> a, std::vector<int64_t> b) {
  if (a.size() < b.size()) std::swap(a, b);
  std::vector<int64_t> out = a;
  size_t off = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i) {
    int64_t x = a[off + i], y = b[i];
    out[off + i] = x == 1 ? y : x;
  }
  return out;
}

/*! \brief "" when tc_y_heads is absent or D (a divisor of N and of the 128 columns of a tile)
 * fits an output of M rows and N columns without batch (and tc_y_rows_first is alone), else
 * the reason. */
std::string CheckHeads(const std::string& op, const Map<String, Any>& attrs, int64_t batch,
                       int64_t N) {
  if (HasAttr(attrs, "tc_y_rows_first") &&
      (HasAttr(attrs, "tc_y_heads") || HasAttr(attrs, "tc_softmax") || HasAttr(attrs, "tc_lut")))
    return op + ": tc_y_rows_first goes with neither tc_y_heads, tc_softmax nor tc_lut";
  if (!HasAttr(attrs, "tc_y_heads")) return "";
  int64_t D = AttrInt(attrs, "tc_y_heads", 0);
  if (HasAttr(attrs, "tc_softmax")) return op + ": tc_y_heads does not go with tc_softmax";
  if (batch != 1) return op + ": tc_y_heads needs an output without batch";
  if (D <= 0 || N % D != 0 || 128 % D != 0)
    return op + ": tc_y_heads " + std::to_string(D) + " must divide N (" + std::to_string(N) +
           ") and 128";
  return "";
}

/*! \brief B's shape as the MatMul multiplies it: with tc_b_heads, [.., N, H, K] is read as
 * [.., H, K, N] (the Transpose the driver folded); {} when that form does not hold. */
std::vector<int64_t> LogicalB(const Map<String, Any>& attrs, std::vector<int64_t> bs) {
  if (!HasAttr(attrs, "tc_b_heads")) return bs;
  const size_t r = bs.size();
  if (r < 3) return {};
  for (size_t d = 0; d + 3 < r; ++d)
    if (bs[d] != 1) return {};
  const int64_t n = bs[r - 3], h = bs[r - 2], k = bs[r - 1];
  bs[r - 3] = h, bs[r - 2] = k, bs[r - 1] = n;
  return bs;
}

/*! \brief "" when tc_softmax is absent or its form holds (an int8 MatMul of two
 * activations, whole rows of the scores fitting L1, a positive tc_softmax.tc_y_scale when
 * given), else the reason. */
std::string CheckSoftmaxEpilogue(const std::string& op, const Map<String, Any>& attrs,
                                 const std::vector<TensorSpec>& ins) {
  if (!HasAttr(attrs, "tc_softmax")) {
    if (HasAttr(attrs, "tc_b_heads") || HasAttr(attrs, "tc_context"))
      return op + ": tc_b_heads and tc_context go with tc_softmax alone";
    return "";
  }
  const bool context = HasAttr(attrs, "tc_context");
  const bool mask = AttrInt(attrs, "tc_softmax.tc_mask", 0) != 0;
  const size_t v_at = mask ? 3 : 2;  // (V's input, after the mask's)
  if (ins.size() != v_at + (context ? 1 : 0))
    return op + ": tc_softmax takes A and B" + (mask ? ", the mask" : "") +
           (context ? ", and V with tc_context" : "");
  if (HasAttr(attrs, "tc_b_heads") && (!ins[1].defined() || ins[1]->dtype != DataType::Int(8) ||
                                       LogicalB(attrs, Shape(ins[1])).empty()))
    return op + ": tc_b_heads needs an int8 B of [.., N, H, K] with no other batch";
  if (HasAttr(attrs, "tc_lut") || HasAttr(attrs, "tc_y_scale"))
    return op + ": tc_softmax takes neither tc_lut nor tc_y_scale";
  if (!GetMatrixPrecision(attrs).int8() || !(AttrFloat(attrs, "tc_b_scale", 0) > 0))
    return op + ": tc_softmax needs an int8 MatMul of two activations (tc_b_scale)";
  if (AttrInt(attrs, "tc_x_zero_point", 0) != 0)
    return op + ": tc_softmax's scores take an A of zero point 0";
  auto as = Shape(ins[0]), bs = LogicalB(attrs, Shape(ins[1]));
  if (as.size() < 2 || bs.size() < 2 || as.back() < 1 || as.back() > 256 || bs.back() < 1 ||
      bs.back() > arch::tc1::kMaxMmDim || as[as.size() - 2] < 1)
    return op + ": tc_softmax needs 2-D or batched operands, 1 <= K <= 256 and 1 <= N <= " +
           std::to_string(arch::tc1::kMaxMmDim) + " (one mm per row block)";
  if (mask) {  // f32 [.., M, N], one matrix for every matrix of the scores
    auto ms = ins[2].defined() ? Shape(ins[2]) : std::vector<int64_t>{};
    bool one = ms.size() >= 2 && ms[ms.size() - 2] == as[as.size() - 2] && ms.back() == bs.back();
    for (size_t i = 0; one && i + 2 < ms.size(); ++i) one = ms[i] == 1;
    if (!one || ins[2]->dtype != DataType::Float(32))
      return op + ": tc_softmax.tc_mask needs an f32 mask of [.., M, N], one matrix for all";
  }
  int64_t D = 0;
  if (context) {
    // V: int8 [.., H, N, D], one matrix per matrix of the scores; P int8 with zero point 0
    auto vs = Shape(ins[v_at]);
    const int64_t batch = Numel(Broadcast(std::vector<int64_t>(as.begin(), as.end() - 2),
                                          std::vector<int64_t>(bs.begin(), bs.end() - 2)));
    int64_t vbatch = 1;
    for (size_t i = 0; i + 2 < vs.size(); ++i) vbatch *= vs[i];
    if (!ins[v_at].defined() || ins[v_at]->dtype != DataType::Int(8) || vs.size() < 2 ||
        vs[vs.size() - 2] != bs.back() || vs.back() < 1 || vs.back() > arch::tc1::kMaxMmDim ||
        vbatch != batch)
      return op + ": tc_context needs an int8 V of [.., N, D] with the scores' batch";
    const int64_t pzp = AttrInt(attrs, "tc_context.tc_x_zero_point", 0);
    if (pzp != AttrInt(attrs, "tc_softmax.tc_y_zero_point", 0) || pzp < -128 || pzp > 127)
      return op +
             ": tc_context.tc_x_zero_point must be the probabilities' "
             "(tc_softmax.tc_y_zero_point), in [-128, 127]";
    if (!HasAttr(attrs, "tc_softmax.tc_y_scale") ||
        !(AttrFloat(attrs, "tc_context.tc_x_scale", 0) > 0) ||
        !(AttrFloat(attrs, "tc_context.tc_b_scale", 0) > 0) ||
        (HasAttr(attrs, "tc_context.tc_y_scale") &&
         !(AttrFloat(attrs, "tc_context.tc_y_scale", 0) > 0)))
      return op + ": tc_context needs int8 probabilities and positive scales";
    int64_t yzp = AttrInt(attrs, "tc_context.tc_y_zero_point", 0);
    if (yzp < -128 || yzp > 127) return op + ": tc_context.tc_y_zero_point is outside int8";
    D = vs.back();
  }
  if (SoftmaxRows(as[as.size() - 2], bs.back(), as.back(), D, mask) == 0)
    return op + ": tc_softmax rows of " + std::to_string(bs.back()) + " scores do not fit L1";
  if (HasAttr(attrs, "tc_softmax.tc_y_scale") &&
      !(AttrFloat(attrs, "tc_softmax.tc_y_scale", 0) > 0))
    return op + ": tc_softmax.tc_y_scale must be positive";
  return "";
}

/*! \brief The int8 form's fields of `g` from the attributes and inputs 2, 3 (bias, w_scale). */
void SetQuant(const OpCall& call, const Params& p, int64_t N, GemmPlan* g) {
  g->mp = GetMatrixPrecision(call.attrs);
  if (!g->mp.int8()) return;
  g->x_scale = AttrFloat(call.attrs, "tc_x_scale", 1.0);
  g->zp = AttrInt(call.attrs, "tc_x_zero_point", 0);
  g->b_act = (AttrFloat(call.attrs, "tc_b_scale", 0) > 0);
  g->b_scale = AttrFloat(call.attrs, "tc_b_scale", 1.0);
  g->a_i8 = call.inputs[0]->dtype == DataType::Int(8);
  g->b_i8 = g->b_act && call.inputs[1]->dtype == DataType::Int(8);
  // tc_softmax: the int8 output is the fused Softmax's; the mm's own result is f32
  g->y_i8 = call.outputs[0]->dtype == DataType::Int(8) && !HasAttr(call.attrs, "tc_softmax");
  if (g->y_i8 != HasAttr(call.attrs, "tc_y_scale"))
    TILECORE_THROW(ValueError) << call.op_type << ": an int8 output needs tc_y_scale, and "
                               << "tc_y_scale an int8 output (the output is "
                               << call.outputs[0]->dtype.str() << ")";
  g->y_scale = AttrFloat(call.attrs, "tc_y_scale", 1.0);
  g->out_scale = AttrFloat(call.attrs, "tc_out_scale", 1.0);
  g->y_zp = AttrInt(call.attrs, "tc_y_zero_point", 0);
  g->lut = FusedLookupTable(call.attrs);
  if (g->b_act) return;
  if (call.inputs[2].defined()) g->qbias = View(p.in[2], {1, N}, "QBias");
  g->wscale = View(p.in[3], {1, N}, "WScale");
}

/*! \brief tc_y_heads: the [N / D, M, D] view of the output (CheckHeads has checked it). */
void SetHeads(const OpCall& call, const Params& p, GemmPlan* g) {
  g->heads_d = AttrInt(call.attrs, "tc_y_heads", 0);
  if (g->heads_d > 0) g->CH = View(p.out[0], {g->N / g->heads_d, g->M, g->heads_d}, "YH");
  g->rows_first = AttrInt(call.attrs, "tc_y_rows_first", 0) != 0;
  if (g->rows_first) g->CR = View(p.out[0], {g->M, Numel(g->out_batch), g->N}, "YR");
}

PrimFunc LowerMatMul(const OpCall& call) {
  Params p = MakeParams(call);
  auto as = Shape(call.inputs[0]), bs = LogicalB(call.attrs, Shape(call.inputs[1]));
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  GemmPlan g;
  g.M = as[as.size() - 2];
  g.K = as.back();
  g.N = bs.back();
  g.a_batch.assign(as.begin(), as.end() - 2);
  g.b_batch.assign(bs.begin(), bs.end() - 2);
  g.out_batch = Broadcast(g.a_batch, g.b_batch);
  g.A = View(p.in[0], {Numel(g.a_batch), g.M, g.K}, "A");
  g.B = View(p.in[1], {Numel(g.b_batch), g.K, g.N}, "B");
  g.C = View(p.out[0], {Numel(g.out_batch), g.M, g.N}, "Y");
  SetQuant(call, p, g.N, &g);
  if (HasAttr(call.attrs, "tc_softmax"))
    return WithPlan(LowerMatMulSoftmax(call, p, g), "matmul.softmax");
  SetHeads(call, p, &g);
  return ChooseGemm(call, p, g);
}

std::string CheckMatMul(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& ins) {
  bool int8 = GetMatrixPrecision(attrs).int8() && !(AttrFloat(attrs, "tc_b_scale", 0) > 0);
  // (the mask and V appended: checked with tc_softmax)
  const size_t extra = (HasAttr(attrs, "tc_context") ? 1 : 0) +
                       (AttrInt(attrs, "tc_softmax.tc_mask", 0) != 0 ? 1 : 0);
  if (ins.size() != (int8 ? 4u : 2u + extra) || !ins[0].defined() || !ins[1].defined())
    return op + (int8    ? ": int8 expects inputs A, W, bias (may be omitted), w_scale"
                 : extra ? ": tc_softmax's mask and tc_context's V come after A and B"
                         : ": expects 2 inputs");
  std::string why = CheckMatrixInputs(
      op, attrs, extra ? std::vector<TensorSpec>(ins.begin(), ins.begin() + 2) : ins);
  if (why.empty()) why = CheckLut(op, attrs);
  if (why.empty()) why = CheckSoftmaxEpilogue(op, attrs, ins);
  if (!why.empty()) return why;
  const int64_t zp = AttrInt(attrs, "tc_x_zero_point", 0);
  if (!int8 && GetMatrixPrecision(attrs).int8() && (zp < -128 || zp > 127))
    return op + ": an int8 MatMul of two activations takes A's zero point in [-128, 127]";
  auto as = Shape(ins[0]), bs = LogicalB(attrs, Shape(ins[1]));
  // (longer, the correction would be an int32 add on the front end after the K steps)
  if (!int8 && GetMatrixPrecision(attrs).int8() && zp != 0 && !as.empty() && as.back() > kTK)
    return op +
           ": an int8 MatMul of two activations corrects A's zero point in the epilogue "
           "of its one K step: K at most " +
           std::to_string(kTK) + ", not " + std::to_string(as.back());
  if (int8 && (bs.size() != 2 || ins[3]->shape[0] != bs[1]))
    return op + ": int8 weights must be a 2-D [K, N] with one w_scale per column";
  if (as.empty() || bs.empty()) return op + ": scalar operands";
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  if (as.back() != bs[bs.size() - 2]) return op + ": inner dimensions differ";
  int64_t batch = 1;
  for (size_t i = 3; i <= std::max(as.size(), bs.size()); ++i) {
    int64_t x = i <= as.size() ? as[as.size() - i] : 1, y = i <= bs.size() ? bs[bs.size() - i] : 1;
    if (x != y && x != 1 && y != 1) return op + ": batch dimensions do not broadcast";
    batch *= std::max(x, y);
  }
  return CheckHeads(op, attrs, batch, bs.back());
}

PrimFunc LowerGemmOp(const OpCall& call) {
  Params p = MakeParams(call);
  GemmPlan g;
  g.transA = AttrInt(call.attrs, "transA", 0) != 0;
  g.transB = AttrInt(call.attrs, "transB", 0) != 0;
  g.alpha = AttrFloat(call.attrs, "alpha", 1.0);
  g.beta = AttrFloat(call.attrs, "beta", 1.0);
  auto as = Shape(call.inputs[0]), bs = Shape(call.inputs[1]);
  g.M = g.transA ? as[1] : as[0];
  g.K = g.transA ? as[0] : as[1];
  g.N = g.transB ? bs[0] : bs[1];
  g.A = View(p.in[0], {1, as[0], as[1]}, "A");
  g.B = View(p.in[1], {1, bs[0], bs[1]}, "B");
  g.C = View(p.out[0], {1, g.M, g.N}, "Y");
  if (call.inputs.size() > 2 && call.inputs[2].defined()) {
    auto cs = Shape(call.inputs[2]);
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
    g.bm = cs[0];
    g.bn = cs[1];
    g.bias = View(p.in[2], {g.bm, g.bn}, "Cb");
  }
  SetQuant(call, p, g.N, &g);
  if (HasAttr(call.attrs, "tc_row_norm")) return ChooseRowNorm(call, p, g);
  SetHeads(call, p, &g);
  if (HasAttr(call.attrs, "tc_split")) {  // CheckGemm has checked the form
    auto ns = AttrInts(call.attrs, "tc_split", {});
    auto hs = AttrInts(call.attrs, "tc_split_heads", std::vector<int64_t>(ns.size(), 0));
    if (p.out.size() != ns.size())
      TILECORE_THROW(ValueError) << call.op_type << ": tc_split gives " << ns.size()
                                 << " outputs, the node has " << p.out.size();
    for (size_t k = 0; k < ns.size(); ++k)
      if (call.outputs[k]->dtype != DataType::Int(8) || call.outputs[k]->numel() != g.M * ns[k])
        TILECORE_THROW(ValueError) << call.op_type << ": tc_split output " << k << " must be "
                                   << g.M << " x " << ns[k] << " int8 values";
    int64_t col = 0;
    for (size_t k = 0; k < ns.size(); ++k) {
      GemmPlan::SplitOut o{col, ns[k], hs[k], Buffer()};
      o.Y = o.heads > 0 ? View(p.out[k], {o.n / o.heads, g.M, o.heads}, "YH" + std::to_string(k))
                        : View(p.out[k], {g.M, o.n}, "Y" + std::to_string(k));
      g.split.push_back(o);
      col += ns[k];
    }
  }
  return ChooseGemm(call, p, g);
}

/*! \brief tc_row_norm's form: an int8 Gemm of an int8 A, then the norm's Scale, B, skip. */
std::string CheckRowNorm(const std::string& op, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& ins) {
  const std::string norm = AttrStr(attrs, "tc_row_norm", "");
  if (norm != "LayerNormalization" && norm != "RMSNormalization")
    return op + ": tc_row_norm must be LayerNormalization or RMSNormalization, not '" + norm + "'";
  if (ins.size() != 7 || !ins[4].defined())
    return op +
           ": tc_row_norm expects inputs A, W, bias (may be omitted), w_scale, Scale, B "
           "(may be omitted), skip (may be omitted)";
  const MatrixPrecision mp = GetMatrixPrecision(attrs);
  if (!mp.int8() || !ins[0].defined() || ins[0]->dtype != DataType::Int(8))
    return op + ": tc_row_norm is for an int8 Gemm of an int8 A";
  for (const char* a : {"transA", "transB"})
    if (AttrInt(attrs, a, 0) != 0) return op + ": tc_row_norm takes " + a + " = 0";
  for (const char* a : {"tc_split", "tc_y_heads", "tc_y_rows_first", "tc_lut", "tc_y_scale",
                        "tc_b_scale", "tc_softmax", "tc_context", "tc_b_heads"})
    if (HasAttr(attrs, a)) return op + ": tc_row_norm does not combine with " + a;
  if (AttrFloat(attrs, "alpha", 1.0) != 1.0 || AttrFloat(attrs, "beta", 1.0) != 1.0)
    return op + ": tc_row_norm takes alpha = beta = 1 (fold them into w_scale and the bias)";
  std::string why = CheckMatrixInputs(op, attrs, {ins.begin(), ins.begin() + 4});
  if (!why.empty()) return why;
  auto as = Shape(ins[0]), bs = Shape(ins[1]);
  if (as.size() != 2 || bs.size() != 2 || as[1] != bs[0])
    return op + ": A [M, K] and W [K, N] must be 2-D with equal K";
  const int64_t M = as[0], N = bs[1];
  if (ins[3]->shape[0] != N) return op + ": w_scale must have N values";
  for (size_t i : {size_t{4}, size_t{5}, size_t{6}}) {
    if (!ins[i].defined()) continue;
    const int64_t want = i == 6 ? M * N : N;
    if (ins[i]->dtype != DataType::Float(32) || ins[i]->numel() != want)
      return op + ": tc_row_norm input " + std::to_string(i) + " (" +
             (i == 4   ? "Scale"
              : i == 5 ? "B"
                       : "skip") +
             ") must be " + std::to_string(want) + " float32 values";
  }
  if (HasAttr(attrs, "tc_norm_q_scale") && !(AttrFloat(attrs, "tc_norm_q_scale", 0) > 0))
    return op + ": tc_norm_q_scale must be positive";
  const int64_t qzp = AttrInt(attrs, "tc_norm_q_zero_point", 0);
  if (qzp < -128 || qzp > 127) return op + ": tc_norm_q_zero_point out of the int8 range";
  return "";
}

std::string CheckGemm(const std::string& op, const Map<String, Any>& attrs,
                      const std::vector<TensorSpec>& ins) {
  if (HasAttr(attrs, "tc_row_norm")) return CheckRowNorm(op, attrs, ins);
  if (ins.size() < 2 || !ins[0].defined() || !ins[1].defined()) return op + ": expects A and B";
  std::string why = CheckMatrixInputs(op, attrs, ins);
  if (why.empty()) why = CheckLut(op, attrs);
  if (!why.empty()) return why;
  auto as = Shape(ins[0]), bs = Shape(ins[1]);
  if (as.size() != 2 || bs.size() != 2) return op + ": A and B must be 2-D";
  bool ta = AttrInt(attrs, "transA", 0) != 0, tb = AttrInt(attrs, "transB", 0) != 0;
  int64_t M = ta ? as[1] : as[0], K = ta ? as[0] : as[1], K2 = tb ? bs[1] : bs[0],
          N = tb ? bs[0] : bs[1];
  if (K != K2) return op + ": inner dimensions differ";
  why = CheckHeads(op, attrs, 1, N);
  if (!why.empty()) return why;
  if (HasAttr(attrs, "tc_split")) {
    auto ns = AttrInts(attrs, "tc_split", {});
    auto hs = AttrInts(attrs, "tc_split_heads", std::vector<int64_t>(ns.size(), 0));
    int64_t sum = 0;
    for (int64_t n : ns) sum += n > 0 ? n : -(int64_t{1} << 40);
    if (ns.size() < 2 || hs.size() != ns.size() || sum != N)
      return op + ": tc_split must give two or more output widths that add up to N (" +
             std::to_string(N) + "), and tc_split_heads one head width (or 0) per output";
    for (size_t k = 0; k < ns.size(); ++k)
      if (hs[k] < 0 || (hs[k] > 0 && (ns[k] % hs[k] != 0 || 128 % hs[k] != 0)))
        return op + ": tc_split_heads " + std::to_string(hs[k]) + " must divide its output's " +
               std::to_string(ns[k]) + " columns and 128";
    if (!GetMatrixPrecision(attrs).int8() || HasAttr(attrs, "tc_y_heads") ||
        HasAttr(attrs, "tc_y_rows_first") || HasAttr(attrs, "tc_lut") || tb)
      return op +
             ": tc_split is for an int8 Gemm with B as it is, without tc_y_heads, "
             "tc_y_rows_first or tc_lut";
  }
  if (GetMatrixPrecision(attrs).int8()) {
    if (ta) return op + ": int8 takes transA = 0";
    if (AttrFloat(attrs, "alpha", 1.0) != 1.0 || AttrFloat(attrs, "beta", 1.0) != 1.0)
      return op + ": int8 takes alpha = beta = 1 (fold them into w_scale and the bias)";
    if (ins[3]->shape[0] != N) return op + ": w_scale must have N values";
    return "";
  }
  if (ins.size() > 2 && ins[2].defined()) {
    auto cs = Shape(ins[2]);
    if (cs.size() > 2) return op + ": C has more than 2 dimensions";
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
    if ((cs[0] != 1 && cs[0] != M) || (cs[1] != 1 && cs[1] != N))
      return op + ": C does not broadcast to (M, N)";
  }
  return "";
}

std::string OnnxLayout(const OpCall&, int) { return "onnx"; }

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterStrategy("MatMul",
                   Strategy{detail::CheckMatMul, detail::LowerMatMul, detail::OnnxLayout});
  RegisterStrategy("Gemm", Strategy{detail::CheckGemm, detail::LowerGemmOp, detail::OnnxLayout});
});

}  // namespace compiler
}  // namespace tilecore
