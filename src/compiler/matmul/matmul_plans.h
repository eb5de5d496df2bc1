/*
 * src/compiler/matmul/matmul_plans.h — the plans of the MatMul strategy (strategy_matmul.cc,
 * which chooses among them): the tiling of a product (gemm_plan.cc), the tiled, pipelined and
 * column plans, the Gemm with its row normalisation and the attention plan, a file each.
 */
#ifndef TILECORE_SRC_COMPILER_MATMUL_MATMUL_PLANS_H_
#define TILECORE_SRC_COMPILER_MATMUL_MATMUL_PLANS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/compiler/kernel_util.h"
#include "src/compiler/matrix_precision.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/strategy.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace matmul {

/*! \brief The tiled plan's C tile (kTM x kTN) and its K chunk (kTK). */
inline constexpr int64_t kTM = 128, kTN = 128, kTK = 256;

/*! \brief Flat batch index of an operand from the output batch index (broadcast dims give 0). */
PrimExpr BatchIndex(const PrimExpr& ob, const std::vector<int64_t>& out_batch,
                    const std::vector<int64_t>& in_batch);

/*! \brief One MatMul or Gemm call as its plans read it: sizes, operand views, batch
 * broadcasting, precision and the fused epilogue. */
struct GemmPlan {
  int64_t M, N, K;
  bool transA = false, transB = false;
  double alpha = 1.0, beta = 1.0;
  std::vector<int64_t> out_batch, a_batch, b_batch;
  Buffer A, B,
      C;  // views: A [nbA, M, K] (or [nbA, K, M]), B [nbB, K, N] (or [nbB, N, K]), C [nbC, M, N]
  Buffer bias;  // Gemm's C as a [bm, bn] view (bm in {1, M}, bn in {1, N}), or undefined
  int64_t bm = 0, bn = 0;
  // int8 (the quantised-node form): a [1, N] int32 bias and [1, N] w_scale, or a MatMul
  // of two activations whose B is quantised with b_scale
  MatrixPrecision mp;
  double x_scale = 1.0, b_scale = 1.0;
  int64_t zp = 0;
  bool b_act = false;
  Buffer qbias, wscale;
  // int8 A in the DDR (quantised by its producer: no quantisation on load); an int8 Y
  // (tc_y_scale): the epilogue requantises with y_scale and adds y_zp
  bool a_i8 = false, b_i8 = false, y_i8 = false;  // b_i8: B of two activations, int8
  double y_scale = 1.0;
  int64_t y_zp = 0;
  // tc_out_scale: a factor the result is multiplied by (a Div by a power of two folded in,
  // exact; or the scales of the operands, FuseEpilogue)
  double out_scale = 1.0;
  // tc_lut: the table an int8 Y goes through before it is stored (empty: none)
  std::vector<int8_t> lut;
  // tc_y_heads = D: Y [M, N] is stored as [N / D, M, D] (a Reshape to heads of D and the
  // Transpose of heads before rows, fused by the driver): CH views it so (0: plain)
  int64_t heads_d = 0;
  Buffer CH;
  // tc_y_rows_first: Y [B, M, N] (B the batch, flattened) is stored as [M, B, N] (the
  // Transpose that puts the rows before the heads, fused): CR views it so
  bool rows_first = false;
  Buffer CR;
  // tc_split: the columns go to several outputs (sibling Gemms of one A fused, the column
  // plan only): output k takes columns [col0, col0 + n), as [M, n] or, with heads, as
  // [n / heads, M, heads]
  struct SplitOut {
    int64_t col0 = 0, n = 0, heads = 0;
    Buffer Y;
  };
  std::vector<SplitOut> split;
  /*! \brief What w_scale[n] (or b_scale) is multiplied by in f32 for the epilogue's scale:
   * x_scale for an f32 Y, x_scale / y_scale (one requantisation) for an int8 Y; times
   * out_scale. */
  double ScaleFactor() const {
    return static_cast<float>((y_i8 ? x_scale / y_scale : x_scale) * out_scale);
  }
  /*! \brief The epilogue's zero point (an int8 Y's; 0 otherwise). */
  int64_t OutZeroPoint() const { return y_i8 ? y_zp : 0; }
};

/*! \brief f32/f16/bf16: no Gemm alpha, and C (if any) a per-column bias the mm epilogue adds. */
bool FloatBiasFits(const GemmPlan& g);

/*! \brief The [1, N] bias the pipelined and column plans add in the mm epilogue: int8's int32
 * bias, or Gemm's per-column C in the other precisions (undefined when there is none). */
Buffer ColumnBias(const GemmPlan& g);

/*! \brief The fused epilogue operands of a tile.mm over columns [n0, n0 + tn) of the
 * pipelined and column plans, appended when there is a bias or int8's dequantisation: the
 * bias block of Qb (or none), the scale block of Sc (or 1), no activation, no clamp. */
void AppendColumnEpilogue(Array<PrimExpr>* mm, bool int8, bool has_bias, const Buffer& Qb,
                          const Buffer& Sc, int64_t n0, int64_t tn, int64_t zero_point);

/*! \brief dst[i, k] = i8(src[i, k] * inv + zp) over [rows, cols]: quantise on load. */
Stmt Quantise(const Buffer& dst, const Buffer& src, int64_t rows, int64_t cols, double inv,
              int64_t zp);

/*! \brief The correction of A's zero point in an int8 MatMul of two activations:
 * sum_k (a - zp) b = sum_k a b + (-zp) sum_k b, B's column sums times -zp made by the matrix
 * engine from a [1, K] row. -zp = 128 is beyond int8: a row of 64s, multiplied twice. */
struct ZeroPointRow {
  int64_t value = 0;  // what the row holds
  int passes = 1;     // mm, then mma again
  explicit ZeroPointRow(int64_t zp) : value(-zp), passes(-zp > 127 ? 2 : 1) {
    if (passes == 2) value = -zp / 2;
  }
  Stmt Fill(const Buffer& row, int64_t event) const {
    const int64_t n = row->shape[1].as<IntImmNode>()->value;
    return Seq({Intrin("tile.dma_fill", {Region(row, {I32(0), I32(0)}, {1, n}),
                                         F32(static_cast<double>(value)), I32(event)}),
                Intrin("tile.wait", {I32(event)})});
  }
  /*! \brief sums = (or +=, with `accumulate`) -zp times the column sums of `b` ([k, n]). */
  Stmt Sums(const BufferRegion& sums, const Buffer& row, const BufferRegion& b, int64_t k,
            bool accumulate) const {
    std::vector<Stmt> s;
    for (int i = 0; i < passes; ++i)
      s.push_back(Intrin("tile.mm", {sums, Region(row, {I32(0), I32(0)}, {1, k}), b,
                                     IntImm(DataType::Bool(), accumulate || i > 0 ? 1 : 0)}));
    return Seq(s);
  }
};

Stmt LowerGemm(const OpCall& call, const GemmPlan& g);

/*!
 * \brief Pipelined (int8 with constant weights, or f32/f16/bf16 with a 2-D B): the cores stage
 * the weights once in the shared L2 in the operand type, block by block (a share of each
 * block's rows each; with K split evenly block j + 1 is staged during chunk 0's mm of block
 * j, behind a barrier_no_drain, else all of them first), so the DDR delivers them once.
 * Core c then owns rows [c M/P, (c+1) M/P) of A and Y. It walks them in chunks of `tm`
 * rows (quantised to int8, int8 as they are, or rounded to f16/bf16 by the DMA, in L1;
 * chunk 0's second half in a buffer of its own so block 0's mm starts on the first half)
 * and, per chunk, the weights in blocks of `tn` columns from L2: K in one mm (int8: its
 * fused epilogue adds the int32 bias and dequantises to f32, or requantises to int8). The
 * weight blocks and results are double-buffered and the next chunk of A is loaded in
 * pieces between the mms of the current one, so the DMA of block t + 1, the mm of block t
 * and the store of block t - 1 overlap.
 */
struct PipelinePlan {
  int64_t mc = 0;  // rows per core (the batch folded into M: A rows share the weights)
  int64_t tm = 0;  // rows per chunk
  int64_t tn = 0;  // columns per weight block
  int64_t pr = 0;  // rows of A per quantisation piece
  int64_t t0 = 0;  // rows of the first and last chunks: the mms wait for the first
};

inline constexpr int64_t kMaxPipelineSteps = 1024;  // chunks x blocks per core, unrolled in the IR

// an L1 bank (the planner's unit for a large buffer; also the slack for DMA state), and the
// share of L2 the pipelined plans may stage weights in (the rest for the L2 arena of a group)
inline constexpr int64_t kBank = int64_t(arch::tc1::kL1BankBytes);

inline constexpr int64_t kL2Share = int64_t(arch::tc1::kL2Bytes) * 3 / 4;

Stmt LowerGemmPipelined(const OpCall& call, const GemmPlan& g, const PipelinePlan& pp);

/*! \brief The pipelined plans worth estimating (none when the op is not of that form). */
std::vector<PipelinePlan> PipelinePlans(const OpCall& call, const GemmPlan& g);

/*!
 * \brief Few rows, A resident (int8 with constant weights, or f32/f16/bf16 with a 2-D B): the
 * cores quantise (or the DMA rounds) a share of A's rows each into the shared L2 (A is read
 * from the DDR once) and, after a barrier, each loads all of A into L1; core c then streams its N /
 * P columns of the weights from the DDR in blocks of `tn` (each weight byte crosses the DDR once,
 * with no L2 staging before the first mm): all rows in one mm per block, blocks and results
 * double-buffered.
 *
 * With `kc` below K a block streams in pieces of kc rows (three in flight): the mms of its
 * pieces accumulate (int32 or f32) and the last one takes the fused epilogue from the sums
 * stored at its output (tile.mm with accumulate and an epilogue).
 * Each core's first mm then waits for one piece rather than a whole block: at M = 128 rows
 * a weight byte takes as long to arrive (a quarter of the DDR's 64 B/cycle) as the matrix
 * engine takes to use it, so with whole blocks the last core starts after all cores'
 * blocks have crossed the DDR.
 */
struct ColumnPlan {
  int64_t rows = 0;  // M with the batch folded in
  int64_t tn = 0;    // columns per weight block
  int64_t pr = 0;    // rows of A per quantisation piece
  int64_t kc = 0;    // rows of B per weight piece: K, or a divisor of it (streamed)
  // int8 to int8, streamed: the blocks but the first and the last requantise on the vector
  // engine (their sums start at the bias), which leaves the matrix engine the mms alone
  bool vec_epilogue = false;
};

inline constexpr int64_t kStreamSlots = 3;  // weight pieces in flight when a block streams

Stmt LowerGemmColumns(const OpCall& call, const GemmPlan& g, const ColumnPlan& cp);

/*! \brief The column plans worth estimating (none when the op is not of that form). */
std::vector<ColumnPlan> ColumnPlans(const OpCall& call, const GemmPlan& g);

/*!
 * \brief tc_row_norm (an int8 Gemm whose f32 output only a LayerNormalization or
 * RMSNormalization over its N columns read, fused by the driver): inputs 4-6 are the norm's
 * Scale, B (may be omitted) and skip (its residual Add's other operand, may be omitted);
 * output 0 the norm's Y, output 1 (with tc_norm_q_scale) Y quantised for an int8 reader.
 * Core c owns rows [c M/P, (c+1) M/P) of A and Y and holds all of B in L1 (staged once
 * through L2 when it is in the DDR, loaded block by block when a layer group has it in L2);
 * it walks its rows in chunks of `tm`: the mms of chunk i (the fused epilogue dequantises,
 * as the plans above) run while the vector engine normalises chunk i - 1 (LayerNormRows,
 * the norm strategy's passes: the same bits as the two ops apart) and the DMA stores chunk
 * i - 2. Nothing of the Gemm's output crosses L2, and the norm's vector work hides the mms.
 */
struct RowNormPlan {
  int64_t mc = 0;  // rows per core
  int64_t tm = 0;  // rows per chunk
  int64_t tn = 0;  // columns per weight block (its own DMA event, so chunk 0's mms start early)
};

struct RowNormArgs {
  bool rms = false;
  double epsilon = 1e-5;
  Buffer gamma, beta, skip, yq;  // beta, skip, yq may be undefined
  double q_inv = 1.0;
  int64_t q_zp = 0;
};

Stmt LowerGemmRowNorm(const OpCall& call, const GemmPlan& g, const RowNormArgs& ra,
                      const RowNormPlan& rp);

/*! \brief The row-norm plans worth estimating: rows per chunk (8, 16, 32 or 64, at most a
 * core's; tc_row_norm_rows asks for one), the weights in up to four blocks of columns; none when
 * the rows do not split evenly over the cores or the weights every core reads outweigh the
 * intermediate saved. */
std::vector<RowNormPlan> RowNormPlans(const OpCall& call, const GemmPlan& g);

/*! \brief Rows per item of LowerMatMulSoftmax, at most 32, whose two slots' tiles (A rows,
 * B, the f32 scores and exponentials, the int8 result) fit half of L1: a divisor of M of at
 * least 8 when one fits, else the fewest rows that still take as few items as the most that
 * fit (the last item then ends at row M and computes again a few rows of the one before:
 * the same rows, the same bits, but it stores only the rows after them, since another core
 * may store those at the same time); 0 when none does. */
int64_t SoftmaxRows(int64_t M, int64_t N, int64_t K, int64_t D = 0, bool mask = false);

/*! \brief tc_context: the int8 MatMul that read the probabilities (attention's context),
 * fused after the Softmax: its B (V, input 2, [H, N, D]), epilogue scale and zero point and
 * output layout. */
struct ContextPlan {
  int64_t D = 0;
  bool y_i8 = false;   // an int8 output (tc_context.tc_y_scale), else f32
  double scale = 1.0;  // the separate MatMul's epilogue scale, computed as it computes it
  int64_t y_zp = 0;
  int64_t x_zp = 0;  // the probabilities' zero point: B's column sums correct it
  bool rows_first = false;
};

ContextPlan GetContextPlan(const Map<String, Any>& attrs, const std::vector<int64_t>& vs);

/*!
 * \brief tc_softmax: Y = Softmax(A B * scale) over the last axis (A and B int8, or f32
 * quantised on load as the MatMul would), stored int8 as the
 * Softmax's readers would quantise it (tc_softmax.tc_y_scale / tc_y_zero_point), or f32.
 * With tc_context the int8 probabilities stay in L1 too: the MatMul that read them
 * (attention's context, V its input 2) multiplies each item's rows by its matrix of V
 * with that MatMul's epilogue, and Y is its output ([B, M, D], or [M, B, D] with its
 * tc_y_rows_first). That mm goes in the store stage of the item, after the next item's
 * scores, so the matrix engine never holds the next scores behind a Softmax.
 * Items of `tm` whole rows of one matrix of the batch, round robin over the cores, in
 * three stages over two slots: the loads of item i + 1, the mm of item i into an f32 tile
 * followed by the Softmax's vector passes on it, and the store of item i - 1 — so the
 * matrix engine multiplies the next rows while the vector engine takes the exponentials
 * of these, and the scores never leave L1. The mm's epilogue and the passes are those of
 * the MatMul and the Softmax apart, so the bits are the same.
 */
PrimFunc LowerMatMulSoftmax(const OpCall& call, const Params& p, const GemmPlan& g);

}  // namespace matmul
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_SRC_COMPILER_MATMUL_MATMUL_PLANS_H_
