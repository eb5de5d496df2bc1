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
#include "matrix_precision.h"
#include "plan_choice.h"
#include "rows_util.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/cost_model.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kTM = 128, kTN = 128, kTK = 256;

/*! \brief Segments of [0, n) in steps of t: (count, size) pairs — full ones then the rest. */
std::vector<std::pair<int64_t, int64_t>> Segments(int64_t n, int64_t t) {
  std::vector<std::pair<int64_t, int64_t>> s;
  if (n / t > 0) s.push_back({n / t, t});
  if (n % t > 0) s.push_back({1, n % t});
  return s;
}

/*! \brief Flat batch index of an operand from the output batch index (broadcast dims give 0). */
PrimExpr BatchIndex(const PrimExpr& ob, const std::vector<int64_t>& out_batch,
                    const std::vector<int64_t>& in_batch) {
  // in_batch is right-aligned against out_batch
  PrimExpr idx = I32(0);
  int64_t in_stride = 1, out_stride = 1;
  size_t off = out_batch.size() - in_batch.size();
  for (size_t d = out_batch.size(); d-- > 0;) {
    int64_t od = out_batch[d];
    if (d >= off) {
      int64_t id = in_batch[d - off];
      if (id != 1) idx = idx + floormod(floordiv(ob, I32(out_stride)), I32(od)) * I32(in_stride);
      in_stride *= id;
    }
    out_stride *= od;
  }
  return idx;
}

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
bool FloatBiasFits(const GemmPlan& g) {
  return g.alpha == 1.0 && (!g.bias.defined() || (g.bm == 1 && g.bn == g.N && g.beta == 1.0));
}

/*! \brief The [1, N] bias the pipelined and column plans add in the mm epilogue: int8's int32
 * bias, or Gemm's per-column C in the other precisions (undefined when there is none). */
Buffer ColumnBias(const GemmPlan& g) {
  if (g.mp.int8()) return g.qbias;
  return FloatBiasFits(g) ? g.bias : Buffer();
}

/*! \brief The fused epilogue operands of a tile.mm over columns [n0, n0 + tn) of the
 * pipelined and column plans, appended when there is a bias or int8's dequantisation: the
 * bias block of Qb (or none), the scale block of Sc (or 1), no activation, no clamp. */
void AppendColumnEpilogue(Array<PrimExpr>* mm, bool int8, bool has_bias, const Buffer& Qb,
                          const Buffer& Sc, int64_t n0, int64_t tn, int64_t zero_point) {
  if (!int8 && !has_bias) return;
  const double big = std::numeric_limits<float>::max();
  mm->push_back(has_bias ? PrimExpr(Region(Qb, {I32(0), I32(n0)}, {1, tn})) : I32(0));
  for (PrimExpr e : {int8 ? PrimExpr(Region(Sc, {I32(0), I32(n0)}, {1, tn})) : F32(1.0),
                     I32(zero_point), I32(0), PrimExpr(StringImm("none")), F32(-big), F32(big)})
    mm->push_back(e);
}

/*! \brief dst[i, k] = i8(src[i, k] * inv + zp) over [rows, cols]: quantise on load. */
Stmt Quantise(const Buffer& dst, const Buffer& src, int64_t rows, int64_t cols, double inv,
              int64_t zp) {
  return Seq(QuantiseSteps(dst, src, inv, zp, [&](const auto& body) {
    return Loop("i", rows, [&](PrimExpr i) {
      return Loop("k", cols, [&](PrimExpr k) { return body(Array<PrimExpr>{i, k}); });
    });
  }));
}

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

Stmt LowerGemm(const OpCall& call, const GemmPlan& g) {
  DataType f32 = DataType::Float(32);
  const bool q = g.mp.int8();
  const DataType ot = g.mp.operand;
  int64_t nb = Numel(g.out_batch);
  int64_t rotation = 0;
  // A has a zero point and B is an activation: B's column sums, made per K step, correct it
  const bool a_zp = q && g.b_act && g.zp != 0 && g.K > 0;
  return OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> body;
    Buffer lut_words = Local({64}, DataType::Int(32), "LutWords");
    if (!g.lut.empty()) body.push_back(FillLookupTable(lut_words, g.lut));
    Buffer zp_row = Local({1, std::max<int64_t>(std::min(g.K, kTK), 1)}, DataType::Int(8), "ZpRow");
    const ZeroPointRow zpr(g.zp);
    if (a_zp) body.push_back(zpr.Fill(zp_row, 0));
    for (const auto& tm_seg : Segments(g.M, kTM)) {
      const int64_t mcount = tm_seg.first, tm = tm_seg.second;
      for (const auto& tn_seg : Segments(g.N, kTN)) {
        const int64_t ncount = tn_seg.first, tn = tn_seg.second;
        int64_t mbase_seg = tm == kTM ? 0 : (g.M / kTM) * kTM;
        int64_t nbase_seg = tn == kTN ? 0 : (g.N / kTN) * kTN;
        int64_t items = nb * mcount * ncount;
        body.push_back(ForEachItem(core, call.cores, items, &rotation, "t", [&](PrimExpr t) {
          PrimExpr ob = floordiv(t, I32(mcount * ncount));
          PrimExpr mi = floormod(floordiv(t, I32(ncount)), I32(mcount));
          PrimExpr ni = floormod(t, I32(ncount));
          PrimExpr m0 = I32(mbase_seg) + mi * I32(kTM);
          PrimExpr n0 = I32(nbase_seg) + ni * I32(kTN);
          PrimExpr ab = BatchIndex(ob, g.out_batch, g.a_batch);
          PrimExpr bb = BatchIndex(ob, g.out_batch, g.b_batch);
          Buffer Cl = Local({tm, tn}, g.mp.accum, "Cl");
          Buffer Cf = q ? Local({tm, tn}, f32, "Cf") : Cl;                    // the f32 result
          Buffer Yq = g.y_i8 ? Local({tm, tn}, DataType::Int(8), "Yq") : Cf;  // what is stored
          // One set of A and B tiles for every K step: the engines order their accesses by
          // buffer, so the steps must not get fresh buffers at reused addresses.
          int64_t kmax = std::max<int64_t>(std::min(g.K, kTK), 1);
          Buffer Al = Local({tm, kmax}, ot, "Al");
          Buffer Bl = Local({kmax, tn}, ot, "Bl");
          Buffer At = Local({kmax, tm}, ot, "At");
          Buffer Bt = Local({tn, kmax}, ot, "Bt");
          Buffer Af = q && !g.a_i8 ? Local({tm, kmax}, f32, "Af")
                                   : Buffer();  // int8: f32 tiles quantised on load
          Buffer Bf = q && g.b_act && !g.b_i8 ? Local({kmax, tn}, f32, "Bf") : Buffer();
          Buffer Zs = Local({1, tn}, g.mp.accum, "ZpSums");  // a_zp: -zp * B's column sums
          std::vector<Stmt> s;
          // int8: the accumulator starts at the int32 bias (i32 wraps in the matrix engine;
          // a vector-engine add would saturate), so every K step accumulates
          // int8 with K in one mm: the dequantisation is the mm's fused epilogue (bias, then
          // f32 times the per-channel or scalar scale, f32 out)
          const bool fused = q && g.K > 0 && g.K <= kTK;
          const bool preset = q && !fused && g.qbias.defined();
          Buffer Ql = Local({1, tn}, g.mp.accum, "Ql");
          Buffer Sl = Local({1, tn}, f32, "Sl");
          const bool channel_scale = q && !g.b_act;
          auto load_scales = [&]() {  // Sl = f32(w_scale[n] * factor)
            return Seq({DmaWait(Region(Sl, {I32(0), I32(0)}, {1, tn}),
                                Region(g.wscale, {I32(0), n0}, {1, tn}), 0),
                        Loop("j", tn, [&](PrimExpr j) {
                          return BufferStore(Sl, BufferLoad(Sl, {I32(0), j}) * F32(g.ScaleFactor()),
                                             {I32(0), j});
                        })});
          };
          const double b_act_scale =
              static_cast<float>(g.ScaleFactor() * static_cast<float>(g.b_scale));
          if (fused && g.qbias.defined())
            s.push_back(DmaWait(Region(Ql, {I32(0), I32(0)}, {1, tn}),
                                Region(g.qbias, {I32(0), n0}, {1, tn}), 0));
          if (fused && channel_scale) s.push_back(load_scales());
          if (preset) {
            s.push_back(DmaWait(Region(Ql, {I32(0), I32(0)}, {1, tn}),
                                Region(g.qbias, {I32(0), n0}, {1, tn}), 0));
            s.push_back(Loop("i", tm, [&](PrimExpr i) {
              return Loop("j", tn, [&](PrimExpr j) {
                return BufferStore(Cl, BufferLoad(Ql, {I32(0), j}), {i, j});
              });
            }));
          }
          bool first = true;
          for (auto [kcount, tk] : Segments(g.K, kTK)) {
            int64_t kbase = tk == kTK ? 0 : (g.K / kTK) * kTK;
            auto step = [&, tk = tk, kbase = kbase](PrimExpr kk, bool accumulate) {
              PrimExpr k0 = I32(kbase) + kk * I32(kTK);
              std::vector<Stmt> st;
              Stmt loadA, loadB;
              if (q && g.a_i8) {  // int8 data as it is
                loadA = DmaWait(Region(Al, {I32(0), I32(0)}, {tm, tk}),
                                Region(g.A, {ab, m0, k0}, {1, tm, tk}), 0);
              } else if (q) {  // transA is not in the int8 form
                loadA = Seq({DmaWait(Region(Af, {I32(0), I32(0)}, {tm, tk}),
                                     Region(g.A, {ab, m0, k0}, {1, tm, tk}), 0),
                             Quantise(Al, Af, tm, tk, InverseScale(g.x_scale), g.zp)});
              } else if (!g.transA) {
                loadA = DmaWait(Region(Al, {I32(0), I32(0)}, {tm, tk}),
                                Region(g.A, {ab, m0, k0}, {1, tm, tk}), 0);
              } else {
                loadA = (Seq({DmaWait(Region(At, {I32(0), I32(0)}, {tk, tm}),
                                      Region(g.A, {ab, k0, m0}, {1, tk, tm}), 0),
                              Loop("i", tm, [&](PrimExpr i) {
                                return Loop("k", tk, [&](PrimExpr k) {
                                  return BufferStore(Al, BufferLoad(At, {k, i}), {i, k});
                                });
                              })}));
              }
              if (q && g.b_act && !g.b_i8) {
                loadB = Seq({DmaWait(Region(Bf, {I32(0), I32(0)}, {tk, tn}),
                                     Region(g.B, {bb, k0, n0}, {1, tk, tn}), 0),
                             Quantise(Bl, Bf, tk, tn, InverseScale(g.b_scale), 0)});
              } else if (!g.transB) {
                loadB = DmaWait(Region(Bl, {I32(0), I32(0)}, {tk, tn}),
                                Region(g.B, {bb, k0, n0}, {1, tk, tn}), 0);
              } else {
                loadB = (Seq({DmaWait(Region(Bt, {I32(0), I32(0)}, {tn, tk}),
                                      Region(g.B, {bb, n0, k0}, {1, tn, tk}), 0),
                              Loop("k", tk, [&](PrimExpr k) {
                                return Loop("j", tn, [&](PrimExpr j) {
                                  return BufferStore(Bl, BufferLoad(Bt, {j, k}), {k, j});
                                });
                              })}));
              }
              Stmt zp_sums;
              if (a_zp)
                zp_sums = zpr.Sums(Region(Zs, {I32(0), I32(0)}, {1, tn}), zp_row,
                                   Region(Bl, {I32(0), I32(0)}, {tk, tn}), tk, accumulate);
              Stmt mm;
              if (fused) {
                const double big = std::numeric_limits<float>::max();
                PrimExpr bias = g.qbias.defined() ? PrimExpr(Region(Ql, {I32(0), I32(0)}, {1, tn}))
                                : a_zp            ? PrimExpr(Region(Zs, {I32(0), I32(0)}, {1, tn}))
                                                  : I32(0);
                PrimExpr scale = channel_scale ? PrimExpr(Region(Sl, {I32(0), I32(0)}, {1, tn}))
                                               : F32(b_act_scale);
                mm = Intrin(
                    "tile.mm",
                    {Region(Yq, {I32(0), I32(0)}, {tm, tn}), Region(Al, {I32(0), I32(0)}, {tm, tk}),
                     Region(Bl, {I32(0), I32(0)}, {tk, tn}), IntImm(DataType::Bool(), 0), bias,
                     scale, I32(g.OutZeroPoint()), I32(0), StringImm("none"), F32(-big), F32(big)});
              } else {
                mm = Intrin("tile.mm", {Region(Cl, {I32(0), I32(0)}, {tm, tn}),
                                        Region(Al, {I32(0), I32(0)}, {tm, tk}),
                                        Region(Bl, {I32(0), I32(0)}, {tk, tn}),
                                        IntImm(DataType::Bool(), accumulate ? 1 : 0)});
              }
              return a_zp ? Seq({loadA, loadB, zp_sums, mm}) : Seq({loadA, loadB, mm});
            };
            if (first) {
              s.push_back(step(I32(0), preset));
              if (kcount > 1)
                s.push_back(
                    Loop("kk", kcount - 1, [&](PrimExpr kk) { return step(kk + I32(1), true); }));
              first = false;
            } else {
              s.push_back(Loop("kk", kcount, [&](PrimExpr kk) { return step(kk, true); }));
            }
          }
          if (g.K == 0) {  // an empty sum
            s.push_back(Loop("i", tm, [&](PrimExpr i) {
              return Loop("j", tn, [&](PrimExpr j) { return BufferStore(Cl, F32(0), {i, j}); });
            }));
          }
          auto over_c = [&](const std::function<PrimExpr(PrimExpr, PrimExpr)>& f) {
            return Loop("i", tm, [&](PrimExpr i) {
              return Loop("j", tn, [&](PrimExpr j) { return BufferStore(Cl, f(i, j), {i, j}); });
            });
          };
          if (a_zp && !fused)
            s.push_back(over_c([&](PrimExpr i, PrimExpr j) {
              return BufferLoad(Cl, {i, j}) + BufferLoad(Zs, {I32(0), j});
            }));
          if (q && !fused) {  // dequantise: f32(acc) * f32(x_scale * w_scale[n])
            s.push_back(Loop("i", tm, [&](PrimExpr i) {
              return Loop("j", tn, [&](PrimExpr j) {
                return BufferStore(Cf, Cast(f32, BufferLoad(Cl, {i, j})), {i, j});
              });
            }));
            auto over_f = [&](const std::function<PrimExpr(PrimExpr, PrimExpr)>& f) {
              return Loop("i", tm, [&](PrimExpr i) {
                return Loop("j", tn, [&](PrimExpr j) { return BufferStore(Cf, f(i, j), {i, j}); });
              });
            };
            if (g.b_act) {
              s.push_back(over_f([&](PrimExpr i, PrimExpr j) {
                return BufferLoad(Cf, {i, j}) * F32(b_act_scale);
              }));
            } else {
              s.push_back(load_scales());
              s.push_back(over_f([&](PrimExpr i, PrimExpr j) {
                return BufferLoad(Cf, {i, j}) * BufferLoad(Sl, {I32(0), j});
              }));
            }
            if (g.y_i8) {  // the epilogue's last steps: + zero point, nearest even, saturate
              if (g.y_zp != 0)
                s.push_back(over_f([&](PrimExpr i, PrimExpr j) {
                  return BufferLoad(Cf, {i, j}) + F32(static_cast<double>(g.y_zp));
                }));
              s.push_back(Loop("i", tm, [&](PrimExpr i) {
                return Loop("j", tn, [&](PrimExpr j) {
                  return BufferStore(Yq, Cast(Yq->dtype, BufferLoad(Cf, {i, j})), {i, j});
                });
              }));
            }
          }
          if (!q && g.alpha != 1.0)
            s.push_back(over_c([&](PrimExpr i, PrimExpr j) {
              return BufferLoad(Cl, {i, j}) * F32(g.alpha);
            }));
          if (!q && g.bias.defined() && g.beta != 0.0) {
            int64_t rm = g.bm == 1 ? 1 : tm, rn = g.bn == 1 ? 1 : tn;
            Buffer Tl = Local({rm, rn}, f32, "Tl");
            std::vector<Stmt> bs;
            bs.push_back(DmaWait(
                Region(Tl, {I32(0), I32(0)}, {rm, rn}),
                Region(g.bias, {g.bm == 1 ? I32(0) : m0, g.bn == 1 ? I32(0) : n0}, {rm, rn}), 0));
            if (g.beta != 1.0)
              bs.push_back(Loop("i", rm, [&](PrimExpr i) {
                return Loop("j", rn, [&](PrimExpr j) {
                  return BufferStore(Tl, BufferLoad(Tl, {i, j}) * F32(g.beta), {i, j});
                });
              }));
            bs.push_back(over_c([&](PrimExpr i, PrimExpr j) {
              return BufferLoad(Cl, {i, j}) +
                     BufferLoad(Tl, {rm == 1 ? I32(0) : i, rn == 1 ? I32(0) : j});
            }));
            s.push_back(Allocate(Tl, Seq(bs)));
          }
          if (!g.lut.empty()) {
            BufferRegion y = Region(Yq, {I32(0), I32(0)}, {tm, tn});
            s.push_back(Intrin("tile.vec_lut", {y, y, LookupTableRegion(lut_words)}));
          }
          if (g.heads_d > 0) {  // the tile's heads, each [tm, D] into its own [M, D] plane
            const int64_t D = g.heads_d;
            for (int64_t j = 0; j < tn / D; ++j)
              s.push_back(
                  Intrin("tile.dma_copy",
                         {Region(g.CH, {floordiv(n0, I32(D)) + I32(j), m0, I32(0)}, {1, tm, D}),
                          Region(Yq, {I32(0), I32(j * D)}, {tm, D}), I32(1)}));
            s.push_back(Intrin("tile.wait", {I32(1)}));
          } else if (g.rows_first) {  // rows of N, B * N apart
            s.push_back(DmaWait(Region(g.CR, {m0, ob, n0}, {tm, 1, tn}),
                                Region(Yq, {I32(0), I32(0)}, {tm, tn}), 1));
          } else {
            s.push_back(DmaWait(Region(g.C, {ob, m0, n0}, {1, tm, tn}),
                                Region(Yq, {I32(0), I32(0)}, {tm, tn}), 1));
          }
          Stmt r = Allocate(Cl, Allocate(Al, Allocate(Bl, Seq(s))));
          if (q && !(fused && g.y_i8)) r = Allocate(Cf, r);
          if (Af.defined()) r = Allocate(Af, r);
          if (g.y_i8) r = Allocate(Yq, r);
          if (preset || (fused && g.qbias.defined())) r = Allocate(Ql, r);
          if (channel_scale) r = Allocate(Sl, r);
          if (Bf.defined()) r = Allocate(Bf, r);
          if (a_zp) r = Allocate(Zs, r);
          if (g.transA) r = Allocate(At, r);
          if (g.transB) r = Allocate(Bt, r);
          return r;
        }));
      }
    }
    Stmt all = g.lut.empty() ? Seq(body) : Allocate(lut_words, Seq(body));
    return a_zp ? Allocate(zp_row, all) : all;
  });
}

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

constexpr int64_t kMaxPipelineSteps = 1024;  // chunks x blocks per core, unrolled in the IR
// an L1 bank (the planner's unit for a large buffer; also the slack for DMA state), and the
// share of L2 the pipelined plans may stage weights in (the rest for the L2 arena of a group)
constexpr int64_t kBank = int64_t(arch::tc1::kL1BankBytes);
constexpr int64_t kL2Share = int64_t(arch::tc1::kL2Bytes) * 3 / 4;

Stmt LowerGemmPipelined(const OpCall& call, const GemmPlan& g, const PipelinePlan& pp) {
  DataType f32 = DataType::Float(32), i8 = DataType::Int(8), ot = g.mp.operand;
  const bool q = g.mp.int8();
  const int64_t P = call.cores, K = g.K, N = g.N, TM = pp.tm, TN = pp.tn, PR = pp.pr;
  const int64_t rows_total = pp.mc * P;
  Buffer A2 = View(g.A, {rows_total, K}, "A2");
  Buffer Y2 = View(g.C, {rows_total, N}, "Y2");
  Buffer B2 = View(g.B, {K, N}, "B2");
  std::vector<std::pair<int64_t, int64_t>> chunks, blocks;  // (first, size)
  // A short first chunk starts the mms early, and the chunks after it double up to TM so
  // that each one's rows load while the one before multiplies (chunk 0 also waits for the
  // weights to be staged); a short last one leaves the DDR (with no chunk left to load)
  // idle for less time.
  chunks.push_back({0, std::min(pp.t0, pp.mc)});
  int64_t last = std::min(pp.t0, pp.mc - chunks[0].second);
  for (int64_t r = chunks[0].second, size = 2 * chunks[0].second; r < pp.mc - last;
       r += chunks.back().second, size = std::min(TM, 2 * size))
    chunks.push_back({r, std::min(std::min(size, TM), pp.mc - last - r)});
  if (last > 0) chunks.push_back({pp.mc - last, last});
  for (int64_t n = 0; n < N; n += TN) blocks.push_back({n, std::min(TN, N - n)});
  // The weights in L2 block by block ([block, K, TN]): a block is one contiguous range,
  // so staging block j + 1 and reading block j touch disjoint bytes.
  const int64_t nb = static_cast<int64_t>(blocks.size()), steps = nb * int64_t(chunks.size());
  Buffer Bsh = DeclBuffer({I32(nb), I32(K), I32(TN)}, ot, String("Bsh"), "shared");
  Stmt body = OverCores(P, [&](PrimExpr c) {
    Buffer Bl = Local({2, K, TN}, ot, "Bl");
    Buffer Al = Local({2, TM, K}, ot, "Al");
    Buffer Cf = Local({2, TM, TN}, g.y_i8 ? i8 : f32, "Cf");  // the results as stored
    Buffer Af = Local({PR, K}, f32, "Af");        // int8: the f32 rows quantised on load
    Buffer Qb = Local({1, N}, g.mp.accum, "Qb");  // the int32 or f32 bias
    Buffer Sc = Local({1, N}, f32, "Sc");
    const Buffer bias = ColumnBias(g);
    PrimExpr row0 = c * I32(pp.mc);
    std::vector<Stmt> s;
    // Piece p of chunk i: rows from the DDR into where rows_of puts them (f32 ones quantised).
    auto pieces_of = [&](int64_t i) { return (chunks[size_t(i)].second + PR - 1) / PR; };
    // The first mm waits for all of chunk 0 but the weights' block 0, which comes first:
    // with several pieces, chunk 0's second half of rows has a buffer of its own (the
    // engines order accesses per buffer slab), so the mm of the first half of block 0
    // runs while the second half's rows load.
    const int64_t half = pieces_of(0) >= 2 ? pieces_of(0) / 2 : 0;
    const int64_t half_rows = std::min(half * PR, chunks[0].second);
    Buffer A0b = Local({1, std::max<int64_t>(1, chunks[0].second - half_rows), K}, ot, "A0b");
    struct Rows {
      Buffer buf;
      int64_t slab, row;
    };
    auto rows_of = [&](int64_t i, int64_t r) {  // where row r of chunk i is in L1
      if (i == 0 && half > 0 && r >= half_rows) return Rows{A0b, 0, r - half_rows};
      return Rows{Al, i % 2, r};
    };
    auto piece = [&](int64_t i, int64_t p) {
      const int64_t r0 = chunks[size_t(i)].first, rows = chunks[size_t(i)].second;
      int64_t pr0 = p * PR, n = std::min(PR, rows - pr0);
      Rows d = rows_of(i, pr0);
      if (!q || g.a_i8)  // the DMA copies (f16/bf16: and rounds) the rows into the chunk buffer
        return Seq(
            {Intrin("tile.dma_copy", {Region(d.buf, {I32(d.slab), I32(d.row), I32(0)}, {1, n, K}),
                                      Region(A2, {row0 + I32(r0 + pr0), I32(0)}, {n, K}), I32(3)}),
             Intrin("tile.wait", {I32(3)})});
      double inv = InverseScale(g.x_scale);
      auto over = [&](const std::function<Stmt(PrimExpr, PrimExpr)>& f) {
        return Loop("i", n,
                    [&](PrimExpr a) { return Loop("k", K, [&](PrimExpr k) { return f(a, k); }); });
      };
      std::vector<Stmt> st;
      st.push_back(
          Intrin("tile.dma_copy", {Region(Af, {I32(0), I32(0)}, {n, K}),
                                   Region(A2, {row0 + I32(r0 + pr0), I32(0)}, {n, K}), I32(3)}));
      st.push_back(Intrin("tile.wait", {I32(3)}));
      st.push_back(over([&](PrimExpr a, PrimExpr k) {
        return BufferStore(Af, BufferLoad(Af, {a, k}) * F32(inv), {a, k});
      }));
      if (g.zp != 0)
        st.push_back(over([&](PrimExpr a, PrimExpr k) {
          return BufferStore(Af, BufferLoad(Af, {a, k}) + F32(static_cast<double>(g.zp)), {a, k});
        }));
      st.push_back(over([&](PrimExpr a, PrimExpr k) {
        return BufferStore(d.buf, Cast(i8, BufferLoad(Af, {a, k})),
                           {I32(d.slab), I32(d.row) + a, k});
      }));
      return Seq(st);
    };
    auto load_block = [&](int64_t t) {
      int64_t j = t % nb, tn = blocks[size_t(j)].second, slot = t % 2;
      return Intrin("tile.dma_copy",
                    {Region(Bl, {I32(slot), I32(0), I32(0)}, {1, K, tn}),
                     Region(Bsh, {I32(j), I32(0), I32(0)}, {1, K, tn}), I32(1 + slot)});
    };
    auto store = [&](int64_t t) {
      const int64_t r0 = chunks[size_t(t / nb)].first, rows = chunks[size_t(t / nb)].second;
      const int64_t n0 = blocks[size_t(t % nb)].first, tn = blocks[size_t(t % nb)].second;
      int64_t slot = t % 2;
      return Intrin("tile.dma_copy",
                    {Region(Y2, {row0 + I32(r0), I32(n0)}, {rows, tn}),
                     Region(Cf, {I32(slot), I32(0), I32(0)}, {1, rows, tn}), I32(4 + slot)});
    };
    // Prologue: this core's share of the weights into L2, the bias and scales, chunk 0.
    // With K split evenly the weights are staged a block of columns at a time: the
    // prologue stages block 0, and during chunk 0 block j + 1 is staged while block j
    // multiplies (a barrier before its first load), so only one block's staging is exposed.
    const bool even = K % P == 0, by_block = even && nb > 1;
    const int64_t kr = even ? K / P : K;
    auto stage = [&](int64_t j, int event) {  // this core's rows of block j into L2
      const int64_t n0 = blocks[size_t(j)].first, tn = blocks[size_t(j)].second;
      PrimExpr k0 = even ? c * I32(kr) : I32(0);
      return Intrin("tile.dma_copy", {Region(Bsh, {I32(j), k0, I32(0)}, {1, kr, tn}),
                                      Region(B2, {k0, I32(n0)}, {kr, tn}), I32(event)});
    };
    std::vector<Stmt> staged;
    for (int64_t j = 0; j < (by_block ? 1 : nb); ++j) staged.push_back(stage(j, 0));
    Stmt to_l2 = Seq(staged);
    s.push_back(even ? to_l2 : IfThenElse(eq(c, I32(0)), to_l2, Stmt()));
    if (bias.defined())
      s.push_back(Intrin("tile.dma_copy", {Region(Qb, {I32(0), I32(0)}, {1, N}),
                                           Region(bias, {I32(0), I32(0)}, {1, N}), I32(0)}));
    if (q)
      s.push_back(Intrin("tile.dma_copy", {Region(Sc, {I32(0), I32(0)}, {1, N}),
                                           Region(g.wscale, {I32(0), I32(0)}, {1, N}), I32(0)}));
    s.push_back(Intrin("tile.wait", {I32(0)}));
    s.push_back(Intrin("tir.barrier", {}));  // block 0 (all the weights unless by_block) is in L2
    if (q)
      s.push_back(Loop("j", N, [&](PrimExpr j) {
        return BufferStore(Sc, BufferLoad(Sc, {I32(0), j}) * F32(g.ScaleFactor()), {I32(0), j});
      }));
    s.push_back(load_block(0));
    for (int64_t p = 0; p < (half > 0 ? half : pieces_of(0)); ++p) s.push_back(piece(0, p));
    for (int64_t t = 0; t < steps; ++t) {
      int64_t i = t / nb, j = t % nb, slot = t % 2;
      const int64_t rows = chunks[size_t(i)].second;
      const int64_t n0 = blocks[size_t(j)].first, tn = blocks[size_t(j)].second;
      const bool stage_next = by_block && i == 0 && j + 1 < nb;
      if (stage_next) s.push_back(stage(j + 1, 6));
      auto next_pieces = [&]() {  // the next chunk's pieces, spread over this chunk's blocks
        if (i + 1 >= int64_t(chunks.size())) return;
        int64_t np = pieces_of(i + 1);
        for (int64_t p = j * np / nb; p < (j + 1) * np / nb; ++p) s.push_back(piece(i + 1, p));
      };
      if (t > 0 || half == 0) next_pieces();
      s.push_back(Intrin("tile.wait", {I32(1 + slot)}));              // weight block t is in L1
      if (t >= 2) s.push_back(Intrin("tile.wait", {I32(4 + slot)}));  // Cf[slot] has drained
      auto mm_rows = [&](int64_t a0, int64_t m) {  // rows [a0, a0 + m) of the chunk
        Rows a = rows_of(i, a0);
        Array<PrimExpr> mm{Region(Cf, {I32(slot), I32(a0), I32(0)}, {1, m, tn}),
                           Region(a.buf, {I32(a.slab), I32(a.row), I32(0)}, {1, m, K}),
                           Region(Bl, {I32(slot), I32(0), I32(0)}, {1, K, tn}),
                           IntImm(DataType::Bool(), 0)};
        // the bias (and int8's dequantisation) in the fused epilogue
        AppendColumnEpilogue(&mm, q, bias.defined(), Qb, Sc, n0, tn, g.OutZeroPoint());
        s.push_back(Intrin("tile.mm", mm));
      };
      if (i == 0 && half > 0) {
        mm_rows(0, half_rows);
        for (int64_t p = half; t == 0 && p < pieces_of(0); ++p) s.push_back(piece(0, p));
        mm_rows(half_rows, rows - half_rows);
        if (t == 0) next_pieces();
      } else {
        mm_rows(0, rows);
      }
      // The store of block t - 1 goes after the mm of block t: the DMA-out queue is in
      // order and a store waits there for its mm.
      if (t >= 1) s.push_back(store(t - 1));
      // Block t + 1 replaces block t - 1, so its copy waits in the DMA-in queue for mm
      // t - 1: issued last, it holds up nothing the front end waits for.
      if (stage_next) {  // block j + 1 is in L2 (every core's share); the mms run on
        s.push_back(Intrin("tile.wait", {I32(6)}));
        s.push_back(Intrin("tir.barrier_no_drain", {}));
      }
      if (t + 1 < steps) s.push_back(load_block(t + 1));
    }
    s.push_back(store(steps - 1));
    s.push_back(Intrin("tile.wait", {I32(4)}));
    s.push_back(Intrin("tile.wait", {I32(5)}));
    Stmt r = Seq(s);
    // Outermost first: the large buffers take whole banks, the small ones are packed last.
    if (q && !g.a_i8) r = Allocate(Af, r);
    if (q) r = Allocate(Sc, r);
    if (bias.defined()) r = Allocate(Qb, r);
    if (half > 0) r = Allocate(A0b, r);
    for (const Buffer& b : {Cf, Al, Bl}) r = Allocate(b, r);
    return r;
  });
  return Allocate(Bsh, body);
}

/*! \brief The pipelined plans worth estimating (none when the op is not of that form). */
std::vector<PipelinePlan> PipelinePlans(const OpCall& call, const GemmPlan& g) {
  if (!g.lut.empty() || g.heads_d > 0 || g.rows_first) return {};  // (tiled plan only)
  std::vector<PipelinePlan> out;
  const int64_t P = call.cores, lim = arch::tc1::kMaxMmDim;  // the mm's largest dimension
  const bool q = g.mp.int8(), plain = !q;                    // plain: f32, f16 or bf16 operands
  // int8 with constant weights, or f32/f16/bf16 without Gemm's alpha (C a per-column bias)
  if (!(q && !g.b_act) && !(plain && FloatBiasFits(g))) return out;
  if (g.transA || g.transB || !g.b_batch.empty() || g.K <= 0 || g.K > lim || g.N <= 0 ||
      g.N > lim || g.out_batch != g.a_batch || P < 1)
    return out;
  const int64_t ob = g.mp.operand_bytes();
  int64_t rows = Numel(g.a_batch) * g.M;
  if (rows % P != 0 || g.K * g.N * ob > kL2Share) return out;  // the weights fit L2
  PipelinePlan pp;
  pp.mc = rows / P;
  pp.pr = std::max<int64_t>(1, std::min<int64_t>(16384 / g.K, pp.mc));  // Af up to 64 KiB
  auto al = [](int64_t b) { return (b + kBank - 1) / kBank * kBank; };  // whole banks
  for (int64_t tm : {32, 64, 128, 256}) {
    for (int64_t tn : {64, 128, 256}) {
      // the first chunk: tm, 3 tm / 4, tm / 2, tm / 4 or tm / 8 rows (eighths of tm)
      for (int64_t eighths : {8, 6, 4, 2, 1}) {
        pp.tm = std::min(tm, pp.mc);
        pp.tn = std::min(tn, g.N);
        pp.t0 = std::max<int64_t>(1, pp.tm * eighths / 8);
        int64_t bytes = al(2 * g.K * pp.tn * ob) + al(2 * pp.tm * g.K * ob) + al(pp.t0 * g.K * ob) +
                        al(2 * pp.tm * pp.tn * (g.y_i8 ? 1 : 4)) +
                        (q ? (g.a_i8 ? 0 : al(pp.pr * g.K * 4)) + 2 * al(g.N * 4) : al(g.N * 4)) +
                        kBank;
        int64_t steps = (5 + (pp.mc + pp.tm - 1) / pp.tm) * ((g.N + pp.tn - 1) / pp.tn);
        const int64_t staged = (g.N + pp.tn - 1) / pp.tn * pp.tn * g.K * ob;  // whole blocks
        if (bytes > call.l1_bytes || steps > kMaxPipelineSteps || staged > kL2Share) continue;
        bool seen = false;
        for (const auto& o : out) seen = seen || (o.tm == pp.tm && o.tn == pp.tn && o.t0 == pp.t0);
        if (!seen) out.push_back(pp);
      }
    }
  }
  return out;
}

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

constexpr int64_t kStreamSlots = 3;  // weight pieces in flight when a block streams

Stmt LowerGemmColumns(const OpCall& call, const GemmPlan& g, const ColumnPlan& cp) {
  DataType f32 = DataType::Float(32), i8 = DataType::Int(8), ot = g.mp.operand;
  const bool q = g.mp.int8();
  const int64_t P = call.cores, K = g.K, N = g.N, M = cp.rows, NC = N / P, TN = cp.tn, PR = cp.pr;
  const int64_t KC = cp.kc > 0 && cp.kc < K ? cp.kc : K;
  const bool stream = KC < K;  // the blocks arrive in pieces of KC rows
  const int64_t slots = stream ? kStreamSlots : 2;
  Buffer A2 = View(g.A, {M, K}, "A2");
  Buffer Y2 = g.split.empty() ? View(g.C, {M, N}, "Y2") : Buffer();
  Buffer B2 = View(g.B, {K, N}, "B2");
  Buffer Ash = DeclBuffer({I32(M), I32(K)}, ot, String("Ash"), "shared");
  // A already in L2 that needs no quantisation is loaded as it is (the DMA converts to
  // f16/bf16): no staging, no barrier.
  const bool direct = !(q && !g.a_i8) && g.A->scope == "shared";
  // streamed, an f32 A in L2 that int8 quantises: each core loads and quantises the columns
  // of each piece itself (no staging through L2, no barrier), into a layout of its own
  // (piece-major: the quantisation of piece u + 1 writes beside the mm reading piece u)
  const bool own_quant = stream && q && !g.a_i8 && g.A->scope == "shared";
  const bool by_columns = stream && (direct || own_quant);  // A loads by the pieces' columns
  // (first row, rows) of the pieces A loads in on the direct path: four of 16 rows or more
  std::vector<std::pair<int64_t, int64_t>> pieces;
  const int64_t piece_rows = M >= 64 ? (M + 3) / 4 : M;
  for (int64_t r = 0; r < M; r += piece_rows) pieces.push_back({r, std::min(piece_rows, M - r)});
  std::vector<std::pair<int64_t, int64_t>> blocks;  // (first column within the core's, size)
  for (int64_t n = 0; n < NC; n += TN) blocks.push_back({n, std::min(TN, NC - n)});
  const int64_t steps = static_cast<int64_t>(blocks.size()), nk = K / KC;
  const int64_t loads = steps * nk;  // weight pieces: block t's piece u is load t * nk + u
  // the DMA event of a weight slot (3 stages A, 4-5 the stores, 6 the bias and scales, 8 on
  // A's pieces)
  auto slot_event = [](int64_t slot) { return slot < 2 ? 1 + slot : 7; };
  constexpr int64_t kAheadA = 4;
  const DataType yt = g.y_i8 ? i8 : f32;  // what is stored
  Stmt body = OverCores(P, [&](PrimExpr c) {
    Buffer Al = Local({M, K}, ot, "Al");
    Buffer Bl = Local({slots, KC, TN}, ot, "Bl");
    // streamed: a block's sums (int32 or f32, double-buffered) and, at the same place, the
    // result its last mm's epilogue writes over them (every block TN wide: ColumnPlans)
    Buffer Acc = Local({2, M, TN}, g.mp.accum, "Acc");
    const int64_t per = 4 / yt.lane_bytes();  // result rows per accumulator row's bytes
    Buffer Cf = stream ? Buffer(Acc->data, yt, {I32(2), I32(M * per), I32(TN)}, {}, I32(0),
                                String("local"), String("Cf"))
                       : Local({2, M, TN}, yt, "Cf");  // the results as stored
    Buffer Af = Local({PR, K}, f32, "Af");
    Buffer Aq = Local({PR, K}, i8, "Aq");
    Buffer Afc = Local({kAheadA, M, KC}, f32, "Afc");  // own_quant: A's f32 columns in flight
    Buffer Alc = Local({nk, M, KC}, i8, "Alc");        // and quantised, piece-major
    Buffer Qb = Local({1, NC}, g.mp.accum, "Qb");      // the int32 or f32 bias
    Buffer Sc = Local({1, NC}, f32, "Sc");
    Buffer lut_words = Local({64}, DataType::Int(32), "LutWords");
    const Buffer bias = ColumnBias(g);
    PrimExpr c0 = c * I32(NC);
    std::vector<Stmt> s;
    auto load_piece = [&](int64_t p) {
      const int64_t n0 = blocks[size_t(p / nk)].first, tn = blocks[size_t(p / nk)].second;
      const int64_t slot = p % slots, k0 = (p % nk) * KC;
      Array<PrimExpr> args{Region(Bl, {I32(slot), I32(0), I32(0)}, {1, KC, tn}),
                           Region(B2, {I32(k0), c0 + I32(n0)}, {KC, tn}), I32(slot_event(slot))};
      // on the DMA-out engine, idle until the first result (A loads on DMA-in meanwhile); a
      // streamed block's later pieces on DMA-in when A was loaded whole (idle by then: they
      // do not queue behind the stores), on DMA-out when A comes in column pieces between
      // them (DMA-in would carry both, one after the other)
      return Intrin(stream && p >= slots && !by_columns ? "tile.dma_copy" : "tile.dma_prefetch",
                    args);
    };
    // The last block, 8 KiB of results or more, in two halves of rows: streamed, its last
    // mm (the epilogue) runs per half and each half is stored as it is made, the first on
    // the DMA-out engine, the second on the DMA-in engine (idle once the last mm has its
    // operands); else its one result is stored so. The member ends about half an epilogue
    // and half a store sooner.
    auto halves_of = [&](int64_t t) {
      return t == steps - 1 && M >= 2 && M * blocks[size_t(t)].second * yt.lane_bytes() >= 8192;
    };
    // (the result of an epilogue over rows r0.. starts at Cf's row r0 * per when streamed:
    // the sums of row r0 are there)
    auto result_row = [&](int64_t r0) { return stream ? r0 * per : r0; };
    // rows [r0, r0 + rows) of block t's columns [col, col + tn) of output y (with `heads`,
    // rows of its plane), from Cf's row `from`
    auto store_to = [&](int64_t t, const Buffer& y, int64_t heads, PrimExpr col, int64_t r0,
                        int64_t rows, int64_t from, const char* op) -> Stmt {
      const int64_t tn = blocks[size_t(t)].second, slot = t % 2;
      BufferRegion src = Region(Cf, {I32(slot), I32(from), I32(0)}, {1, rows, tn});
      BufferRegion dst =
          heads > 0 ? Region(y, {floordiv(col, I32(heads)), I32(r0), floormod(col, I32(heads))},
                             {1, rows, tn})
                    : Region(y, {I32(r0), col}, {rows, tn});
      return Intrin(op, {dst, src, I32(4 + slot)});
    };
    auto store_rows = [&](int64_t t, int64_t r0, int64_t rows, int64_t from, const char* op) {
      PrimExpr col = c0 + I32(blocks[size_t(t)].first);
      if (!g.split.empty()) {  // the output the block's columns belong to (ColumnPlans)
        Stmt st;
        for (size_t k = g.split.size(); k-- > 0;) {
          const auto& o = g.split[k];
          Stmt here = store_to(t, o.Y, o.heads, col - I32(o.col0), r0, rows, from, op);
          st = st.defined() ? IfThenElse(col < I32(o.col0 + o.n), here, st) : here;
        }
        return st;
      }
      // (tc_y_heads: a block lies within one head, ColumnPlans)
      return g.heads_d > 0 ? store_to(t, g.CH, g.heads_d, col, r0, rows, from, op)
                           : store_to(t, Y2, 0, col, r0, rows, from, op);
    };
    auto store = [&](int64_t t) -> Stmt {
      // (a block dequantised on the vector engine: on the DMA-in engine, so that the weight
      // pieces on the DMA-out engine do not wait behind it for that work; a plan that loads A
      // whole puts its later pieces on the DMA-in engine too, and the cost model sees it)
      if (cp.vec_epilogue && t >= 1 && t + 1 < steps)
        return store_rows(t, 0, M, 0, "tile.dma_copy_in");
      if (!halves_of(t)) return store_rows(t, 0, M, 0, "tile.dma_copy");
      const int64_t h = M / 2;
      return Seq({store_rows(t, 0, h, 0, "tile.dma_copy"),
                  store_rows(t, h, M - h, h, "tile.dma_copy_in")});
    };
    // This core's share of A's rows, quantised piece by piece into L2.
    bool even = M % P == 0;
    int64_t share = even ? M / P : M;
    PrimExpr first = even ? PrimExpr(c * I32(share)) : PrimExpr(I32(0));
    std::vector<Stmt> stage;
    double inv = InverseScale(g.x_scale);
    const bool quantise = q && !g.a_i8;
    if (!quantise)  // the DMA copies (f16/bf16: and rounds) the rows straight into L2
      stage.push_back(Intrin("tile.dma_copy", {Region(Ash, {first, I32(0)}, {share, K}),
                                               Region(A2, {first, I32(0)}, {share, K}), I32(0)}));
    for (int64_t r = 0; quantise && r < share; r += PR) {
      int64_t n = std::min(PR, share - r);
      stage.push_back(
          Intrin("tile.dma_copy", {Region(Af, {I32(0), I32(0)}, {n, K}),
                                   Region(A2, {first + I32(r), I32(0)}, {n, K}), I32(3)}));
      stage.push_back(Intrin("tile.wait", {I32(3)}));
      // (Aq's last piece has left for L2: the DMA-out engine may hold weights before it)
      if (r > 0) stage.push_back(Intrin("tile.wait", {I32(0)}));
      stage.push_back(Quantise(Aq, Af, n, K, inv, g.zp));
      stage.push_back(Intrin("tile.dma_copy", {Region(Ash, {first + I32(r), I32(0)}, {n, K}),
                                               Region(Aq, {I32(0), I32(0)}, {n, K}), I32(0)}));
    }
    // streamed from L2: A's columns of weight piece u (events 8 to 11 in turn, kAheadA
    // ahead of the mms, on the DMA-in engine between the weight pieces), so that the first
    // mms do not wait for all of A
    auto load_a = [&](int64_t u) {
      BufferRegion dst = own_quant ? Region(Afc, {I32(u % kAheadA), I32(0), I32(0)}, {1, M, KC})
                                   : Region(Al, {I32(0), I32(u * KC)}, {M, KC});
      return Intrin("tile.dma_copy",
                    {dst, Region(A2, {I32(0), I32(u * KC)}, {M, KC}), I32(8 + u % kAheadA)});
    };
    // Alc[u] = i8(Afc[u % kAheadA] * f32(1 / x_scale) + zp): Quantise's steps, the same bits
    auto quantise_piece = [&](int64_t u) {
      const int64_t f = u % kAheadA;
      return Seq(QuantiseSteps(Alc, Afc, inv, g.zp, [&](const auto& step) {
        return Loop("i", M, [&](PrimExpr i) {
          return Loop("k", KC, [&](PrimExpr k) -> Stmt {
            Stmt st = step(Array<PrimExpr>{I32(f), i, k});
            // (the conversion's store goes to piece u of Alc)
            if (const auto* b = st.as<BufferStoreNode>(); b && b->buffer.same_as(Alc))
              return BufferStore(Alc, b->value, {I32(u), i, k});
            return st;
          });
        });
      }));
    };
    // the first weight pieces (a whole block each unless streamed)
    auto first_loads = [&]() {
      std::vector<Stmt> l;
      for (int64_t p = 0; p < std::min(loads, stream ? slots : 1); ++p) l.push_back(load_piece(p));
      return Seq(l);
    };
    // The bias and scales (event 6), A (the critical path) and the first weight block on the
    // DMA-out engine meanwhile. A staged share's first piece goes before the bias and scales
    // (each a DDR latency on the DMA-in engine), so its quantisation starts sooner; streamed
    // from L2, A's first columns go first (the first epilogue needs the bias and scales, the
    // first mms do not).
    // (A quantised here from L2: the bias and scales behind the weights on the DMA-out
    // engine, so that A's f32 columns, the longer loads, go first on DMA-in)
    const char* param_copy = own_quant ? "tile.dma_prefetch" : "tile.dma_copy";
    std::vector<Stmt> params;
    if (bias.defined())
      params.push_back(Intrin(param_copy, {Region(Qb, {I32(0), I32(0)}, {1, NC}),
                                           Region(bias, {I32(0), c0}, {1, NC}), I32(6)}));
    if (q)
      params.push_back(Intrin(param_copy, {Region(Sc, {I32(0), I32(0)}, {1, NC}),
                                           Region(g.wscale, {I32(0), c0}, {1, NC}), I32(6)}));
    if (by_columns) {
      // (the weights before A in the program, which is the order they start in)
      s.push_back(first_loads());
      if (own_quant) s.push_back(Seq(params));
      for (int64_t u = 0; u < std::min<int64_t>(nk, kAheadA); ++u) s.push_back(load_a(u));
      if (!own_quant) s.push_back(Seq(params));
    } else if (direct) {
      // A's rows in pieces (events 8, 9, ...): the first block's mm runs piece by piece as
      // they arrive
      s.push_back(Seq(params));
      for (size_t k = 0; k < pieces.size(); ++k)
        s.push_back(Intrin("tile.dma_copy",
                           {Region(Al, {I32(pieces[k].first), I32(0)}, {pieces[k].second, K}),
                            Region(A2, {I32(pieces[k].first), I32(0)}, {pieces[k].second, K}),
                            I32(8 + int64_t(k))}));
      s.push_back(first_loads());
    } else {
      // every core stages a share: the weights follow its first piece; core 0 stages all
      // (a few rows): the weights go first, the others wait at the barrier anyway
      const bool early = quantise && even && !stage.empty();
      if (early) {
        s.push_back(stage[0]);
        s.push_back(Seq(params));
        s.push_back(first_loads());
        stage.erase(stage.begin());
      } else {
        s.push_back(Seq(params));
        if (!even) s.push_back(first_loads());
      }
      s.push_back(even ? Seq(stage) : IfThenElse(eq(c, I32(0)), Seq(stage), Stmt()));
      if (!early && even) s.push_back(first_loads());
      s.push_back(Intrin("tile.wait", {I32(0)}));
      s.push_back(Intrin("tir.barrier", {}));  // A is in L2
      s.push_back(Intrin("tile.dma_copy", {Region(Al, {I32(0), I32(0)}, {M, K}),
                                           Region(Ash, {I32(0), I32(0)}, {M, K}), I32(0)}));
    }
    // the bias and scales, and the table: before the first epilogue (a streamed block's
    // first mms need neither)
    auto params_ready = [&]() {
      std::vector<Stmt> r{Intrin("tile.wait", {I32(6)})};
      if (!g.lut.empty() && !stream) r.push_back(FillLookupTable(lut_words, g.lut));
      if (q)
        r.push_back(Loop("j", NC, [&](PrimExpr j) {
          return BufferStore(Sc, BufferLoad(Sc, {I32(0), j}) * F32(g.ScaleFactor()), {I32(0), j});
        }));
      return Seq(r);
    };
    if (!stream) s.push_back(params_ready());
    // streamed, the table is filled while the first loads arrive (the front end's stores,
    // some 130 cycles: before the first epilogue, or between two mms, they would delay it)
    if (stream && !g.lut.empty()) s.push_back(FillLookupTable(lut_words, g.lut));
    if (!direct && !own_quant) s.push_back(Intrin("tile.wait", {I32(0)}));
    for (int64_t p = 0; p < loads; ++p) {
      const int64_t t = p / nk, u = p % nk, slot = t % 2, bslot = p % slots;
      const int64_t n0 = blocks[size_t(t)].first, tn = blocks[size_t(t)].second;
      const bool last = u + 1 == nk;  // the block's last mm: the epilogue
      s.push_back(Intrin("tile.wait", {I32(slot_event(bslot))}));  // the weights are in L1
      // the mm writes Cf[slot] (streamed: the sums at its place), which must have drained
      if (t >= 2 && u == 0) s.push_back(Intrin("tile.wait", {I32(4 + slot)}));
      // the sums of a block dequantised on the vector engine (not the first, whose epilogue
      // would wait for the bias and scales, nor the last, the member's tail) start at the
      // bias, set after the last mm of the block before (ahead of that block's
      // dequantisation on the vector engine, so that its mms need not wait)
      const bool on_vec = cp.vec_epilogue && t >= 1 && t + 1 < steps;
      auto preset = [&](int64_t tb) {
        const int64_t b0 = blocks[size_t(tb)].first, bn = blocks[size_t(tb)].second;
        return Loop("i", M, [&](PrimExpr i) {
          return Loop("j", bn, [&](PrimExpr j) {
            return BufferStore(Acc, bias.defined() ? BufferLoad(Qb, {I32(0), I32(b0) + j}) : I32(0),
                               {I32(tb % 2), i, j});
          });
        });
      };

      // (after this piece's quantisation, which does not need them)
      if (stream && t == 0 && last && !own_quant) s.push_back(params_ready());
      auto mm_rows = [&](int64_t r0, int64_t m) {
        BufferRegion a = own_quant ? Region(Alc, {I32(u), I32(r0), I32(0)}, {1, m, KC})
                                   : Region(Al, {I32(r0), I32(u * KC)}, {m, KC});
        BufferRegion b = Region(Bl, {I32(bslot), I32(0), I32(0)}, {1, KC, tn});
        if (!last || on_vec)  // a streamed block's sums so far (from the bias: on_vec)
          return Intrin("tile.mm", {Region(Acc, {I32(slot), I32(r0), I32(0)}, {1, m, tn}), a, b,
                                    IntImm(DataType::Bool(), u > 0 || on_vec)});
        // the bias (and int8's dequantisation) in the fused epilogue, from the sums so far
        Array<PrimExpr> mm{Region(Cf, {I32(slot), I32(result_row(r0)), I32(0)}, {1, m, tn}), a, b,
                           IntImm(DataType::Bool(), u > 0)};
        AppendColumnEpilogue(&mm, q, bias.defined(), Qb, Sc, n0, tn, g.OutZeroPoint());
        return Intrin("tile.mm", mm);
      };
      // the last block's epilogue and store per half of rows (halves_of)
      const bool split_last = stream && last && halves_of(t);
      auto epilogue_halves = [&]() {
        const int64_t h = M / 2;
        for (int64_t k = 0; k < 2; ++k) {
          const int64_t r0 = k * h, m = k ? M - h : h;
          const int64_t from = result_row(r0), quarter = m / 2;
          s.push_back(mm_rows(r0, m));
          if (!g.lut.empty()) {
            BufferRegion y = Region(Cf, {I32(slot), I32(from), I32(0)}, {1, m, tn});
            s.push_back(Intrin("tile.vec_lut", {y, y, LookupTableRegion(lut_words)}));
          }
          // (on both DMA engines)
          s.push_back(store_rows(t, r0, quarter, from, "tile.dma_copy"));
          s.push_back(store_rows(t, r0 + quarter, m - quarter, from + quarter, "tile.dma_copy_in"));
        }
      };
      if (by_columns && t == 0) {
        s.push_back(Intrin("tile.wait", {I32(8 + u % kAheadA)}));  // A's columns of the piece
        if (own_quant) s.push_back(quantise_piece(u));
        if (own_quant && last) s.push_back(params_ready());
        if (split_last) {
          epilogue_halves();
          continue;
        }
        s.push_back(mm_rows(0, M));
        if (u + kAheadA < nk) s.push_back(load_a(u + kAheadA));  // (its event's last is in)
      } else if (split_last) {
        epilogue_halves();
        continue;  // (the last block: no piece after it)
      } else if (direct && p == 0) {
        for (size_t k = 0; k < pieces.size(); ++k) {
          s.push_back(Intrin("tile.wait", {I32(8 + int64_t(k))}));
          s.push_back(mm_rows(pieces[k].first, pieces[k].second));
        }
      } else {
        s.push_back(mm_rows(0, M));
      }
      // the piece `slots` on replaces this one: after its mm (the code generator orders them)
      if (stream && p + slots < loads) s.push_back(load_piece(p + slots));

      if (!last) continue;                     // the block's sums are not complete
      if (cp.vec_epilogue && t + 2 < steps) {  // the next block's sums (dequantised there)
        if (t + 1 >= 2) s.push_back(Intrin("tile.wait", {I32(4 + (t + 1) % 2)}));
        s.push_back(preset(t + 1));
      }
      if (on_vec) {
        // the fused epilogue's steps, the same bits: f32(sums) * scale[n] + zero point, then
        // the result's type (nearest even, saturating), over the sums in place
        Buffer Af = Buffer(Acc->data, f32, Acc->shape, {}, I32(0), String("local"), String("Af"));
        auto over = [&](const Buffer& dst, const std::function<PrimExpr(PrimExpr, PrimExpr)>& f) {
          return Loop("i", M, [&](PrimExpr i) {
            return Loop("j", tn, [&](PrimExpr j) {
              return BufferStore(dst, f(i, j), {I32(slot), i, j});
            });
          });
        };
        s.push_back(over(Af, [&](PrimExpr i, PrimExpr j) {
          return Cast(f32, BufferLoad(Acc, {I32(slot), i, j}));
        }));
        s.push_back(over(Af, [&](PrimExpr i, PrimExpr j) {
          return BufferLoad(Af, {I32(slot), i, j}) * BufferLoad(Sc, {I32(0), I32(n0) + j});
        }));
        s.push_back(over(Af, [&](PrimExpr i, PrimExpr j) {
          return BufferLoad(Af, {I32(slot), i, j}) + F32(static_cast<double>(g.OutZeroPoint()));
        }));
        s.push_back(over(Cf, [&](PrimExpr i, PrimExpr j) {
          return Cast(i8, BufferLoad(Af, {I32(slot), i, j}));
        }));
      }
      if (!g.lut.empty()) {  // the vector engine, idle beside the mms
        BufferRegion y = Region(Cf, {I32(slot), I32(0), I32(0)}, {1, M, tn});
        s.push_back(Intrin("tile.vec_lut", {y, y, LookupTableRegion(lut_words)}));
      }
      if (stream) {
        s.push_back(store(t));  // after its last mm (the code generator orders them)
      } else {
        if (t >= 1) s.push_back(store(t - 1));
        if (t + 1 < steps) s.push_back(load_piece(t + 1));  // replaces block t - 1: after mm t
      }
    }
    if (!stream) s.push_back(store(steps - 1));
    s.push_back(Intrin("tile.wait", {I32(4)}));
    s.push_back(Intrin("tile.wait", {I32(5)}));
    Stmt r = Seq(s);
    if (!g.lut.empty()) r = Allocate(lut_words, r);
    if (quantise && !own_quant) r = Allocate(Aq, Allocate(Af, r));
    if (own_quant) r = Allocate(Alc, Allocate(Afc, r));
    if (q) r = Allocate(Sc, r);
    if (bias.defined()) r = Allocate(Qb, r);
    r = Allocate(stream ? Acc : Cf, Allocate(Bl, r));
    return own_quant ? r : Allocate(Al, r);
  });
  return direct || own_quant ? body : Allocate(Ash, body);
}

/*! \brief The column plans worth estimating (none when the op is not of that form). */
std::vector<ColumnPlan> ColumnPlans(const OpCall& call, const GemmPlan& g) {
  std::vector<ColumnPlan> out;
  const int64_t P = call.cores, lim = arch::tc1::kMaxMmDim;
  const bool q = g.mp.int8(), plain = !q;  // plain: f32, f16 or bf16 operands
  if (g.rows_first) return out;
  if (!(q && !g.b_act) && !(plain && FloatBiasFits(g))) return out;
  if (g.transA || g.transB || !g.b_batch.empty() || g.K <= 0 || g.K > lim || g.N <= 0 ||
      g.N % P != 0 || g.out_batch != g.a_batch || P < 1)
    return out;
  const int64_t ob = g.mp.operand_bytes();
  ColumnPlan cp;
  cp.rows = Numel(g.a_batch) * g.M;
  if (cp.rows <= 0 || cp.rows > lim || cp.rows * g.K * ob > kL2Share) return out;
  cp.pr = std::max<int64_t>(1, std::min<int64_t>(16384 / g.K, cp.rows));
  auto al = [](int64_t b) { return (b + kBank - 1) / kBank * kBank; };  // whole banks
  const int64_t nc = g.N / P;
  for (int64_t tn : {32, 64, 128, 256, 512}) {
    cp.tn = std::min(tn, nc);
    // tc_y_heads: every block within one head; tc_split: within one output (and head)
    if (g.heads_d > 0 && (g.heads_d % cp.tn != 0 || nc % cp.tn != 0)) continue;
    bool within = g.split.empty() || nc % cp.tn == 0;
    for (const auto& o : g.split)
      within = within && o.col0 % cp.tn == 0 && o.n % cp.tn == 0 && (o.heads % cp.tn == 0);
    if (!within) continue;
    if (!out.empty() && out.back().tn == cp.tn) continue;
    // whole blocks, or streamed in pieces of kc rows (a divisor of K, 64 or more)
    std::vector<int64_t> kcs{g.K};
    for (int64_t kc : {64, 128, 256})  // (whole blocks: each epilogue reads TN-wide sums)
      if (kc < g.K && g.K % kc == 0 && nc % cp.tn == 0) kcs.push_back(kc);
    for (int64_t kc : kcs) {
      cp.kc = kc;
      const bool stream = kc < g.K;
      const int64_t slots = stream ? kStreamSlots : 2;
      int64_t bytes =
          al(cp.rows * g.K * ob) + al(slots * kc * cp.tn * ob) +
          al(2 * cp.rows * cp.tn * (g.y_i8 ? 1 : 4)) +
          (stream ? al(2 * cp.rows * cp.tn * 4) - al(2 * cp.rows * cp.tn * (g.y_i8 ? 1 : 4)) : 0) +
          // (an f32 A in L2 quantised by each core: its columns in flight)
          (stream && q && !g.a_i8 && g.A->scope == "shared" ? al(4 * cp.rows * kc * 4) : 0) +
          (q ? (g.a_i8 ? 0 : al(cp.pr * g.K * 4) + al(cp.pr * g.K)) + 2 * al(nc * 4) : al(nc * 4)) +
          kBank;
      const int64_t loads = (nc + cp.tn - 1) / cp.tn * (g.K / kc);
      if (bytes > call.l1_bytes || loads > kMaxPipelineSteps) continue;
      cp.vec_epilogue = false;
      out.push_back(cp);
      // (an int8 Y, three blocks or more: the middle ones' epilogues on the vector engine; an
      // f32 Y's stores bound the plan)
      if (stream && q && g.y_i8 && !g.b_act && g.wscale.defined() && nc / cp.tn >= 3) {
        cp.vec_epilogue = true;
        out.push_back(cp);
      }
    }
  }
  return out;
}

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
                      const RowNormPlan& rp) {
  using namespace rows;  // NOLINT(build/namespaces)
  DataType f32 = DataType::Float(32), i8 = DataType::Int(8);
  const int64_t P = call.cores, K = g.K, N = g.N, MC = rp.mc, TM = rp.tm, TN = rp.tn;
  Buffer A2 = View(g.A, {MC * P, K}, "A2"), B2 = View(g.B, {K, N}, "B2");
  Buffer Y2 = View(g.C, {MC * P, N}, "Y2");
  Buffer Yq2 = ra.yq.defined() ? View(ra.yq, {MC * P, N}, "Yq2") : Buffer();
  Buffer S2 = ra.skip.defined() ? View(ra.skip, {MC * P, N}, "S2") : Buffer();
  // B in the DDR: each core stages K / P of its rows into L2 and all load it from there (the
  // DDR carries it once); in L2 already (a layer group's prefetch) it is loaded as it is
  const bool staged = g.B->scope != "shared" && K % P == 0;
  Buffer Bsh = DeclBuffer({I32(K), I32(N)}, i8, String("Bsh"), "shared");
  Buffer Bsrc = staged ? Bsh : B2;
  std::vector<std::pair<int64_t, int64_t>> chunks, blocks;  // (first, size)
  for (int64_t r = 0; r < MC; r += TM) chunks.push_back({r, std::min(TM, MC - r)});
  for (int64_t n = 0; n < N; n += TN) blocks.push_back({n, std::min(TN, N - n)});
  const int64_t nc = static_cast<int64_t>(chunks.size());
  // DMA events: 0 A, the bias and scales; 1 + j weight block j; then Scale and B, the skip's
  // two slots and the stores' two slots
  const int64_t nb = static_cast<int64_t>(blocks.size()), kParams = 1 + nb, kSkip = kParams + 1,
                kStore = kSkip + 2;
  Stmt body = OverCores(P, [&](PrimExpr c) {
    Buffer Bl = Local({K, N}, i8, "Bl");
    Buffer Al = Local({MC, K}, i8, "Al");
    Buffer Qb = Local({1, N}, g.mp.accum, "Qb"), Sc = Local({1, N}, f32, "Sc");
    Buffer Ga = Local({N}, f32, "Gamma"), Ba = Local({N}, f32, "Beta");
    Buffer Xs[2], Es[2], Ys[2], Qs[2], Ms[2], Vs[2];
    for (int s = 0; s < 2; ++s) {
      std::string k = std::to_string(s);
      Xs[s] = Local({TM, N}, f32, "Xt" + k), Es[s] = Local({TM, N}, f32, "Et" + k);
      Ys[s] = Local({TM, N}, f32, "Yt" + k), Qs[s] = Local({TM, N}, i8, "Qt" + k);
      Ms[s] = Local({TM}, f32, "Mean" + k), Vs[s] = Local({TM}, f32, "Inv" + k);
    }
    TileView Gv = MakeView(Ga, {N}, "Gv"), Bv = MakeView(Ba, {N}, "Bv");
    PrimExpr row0 = c * I32(MC);
    const Buffer bias = ColumnBias(g);
    std::vector<Stmt> s;
    if (staged) {  // this core's rows of B into L2; every core's are there after the barrier
      PrimExpr k0 = c * I32(K / P);
      s.push_back(Intrin("tile.dma_copy", {Region(Bsh, {k0, I32(0)}, {K / P, N}),
                                           Region(B2, {k0, I32(0)}, {K / P, N}), I32(0)}));
      s.push_back(Intrin("tile.wait", {I32(0)}));
      s.push_back(Intrin("tir.barrier", {}));
    }
    // the weights first (a layer group may hand them to the member before), block by block
    for (int64_t j = 0; j < nb; ++j) {
      const int64_t n0 = blocks[size_t(j)].first, tn = blocks[size_t(j)].second;
      s.push_back(Intrin("tile.dma_copy", {Region(Bl, {I32(0), I32(n0)}, {K, tn}),
                                           Region(Bsrc, {I32(0), I32(n0)}, {K, tn}), I32(1 + j)}));
    }
    // A, the bias and the scales on DMA-out, idle until the first store
    s.push_back(Intrin("tile.dma_prefetch", {Region(Al, {I32(0), I32(0)}, {MC, K}),
                                             Region(A2, {row0, I32(0)}, {MC, K}), I32(0)}));
    if (bias.defined())
      s.push_back(Intrin("tile.dma_prefetch", {Region(Qb, {I32(0), I32(0)}, {1, N}),
                                               Region(bias, {I32(0), I32(0)}, {1, N}), I32(0)}));
    s.push_back(Intrin("tile.dma_prefetch", {Region(Sc, {I32(0), I32(0)}, {1, N}),
                                             Region(g.wscale, {I32(0), I32(0)}, {1, N}), I32(0)}));
    s.push_back(
        Intrin("tile.dma_prefetch", {Gv.All(), Region(ra.gamma, {I32(0)}, {N}), I32(kParams)}));
    if (ra.beta.defined())
      s.push_back(
          Intrin("tile.dma_prefetch", {Bv.All(), Region(ra.beta, {I32(0)}, {N}), I32(kParams)}));
    auto load_skip = [&](int64_t i) {
      if (!S2.defined()) return Stmt();
      const int64_t r0 = chunks[size_t(i)].first, rows = chunks[size_t(i)].second;
      // (the DMA waits for the vector passes of chunk i - 2, which used the slot as scratch)
      return Intrin("tile.dma_copy",
                    {Region(Es[i % 2], {I32(0), I32(0)}, {rows, N}),
                     Region(S2, {row0 + I32(r0), I32(0)}, {rows, N}), I32(kSkip + i % 2)});
    };
    // both slots' skips at once: later, the next chunk's would queue behind whatever a layer
    // group hands this member to load for the next (the DMA-in engine is otherwise idle)
    for (int64_t i = 0; i < std::min<int64_t>(nc, 2); ++i) s.push_back(load_skip(i));
    s.push_back(Intrin("tile.wait", {I32(0)}));
    // (one vector command: a front-end loop over N would hold the first mm back)
    s.push_back(MapTile(
        MakeView(Sc, {1, N, 1}, "Sv"),
        [&](PrimExpr v, const std::vector<PrimExpr>&) { return v * F32(g.ScaleFactor()); }));
    auto mms = [&](int64_t i) {
      const int64_t r0 = chunks[size_t(i)].first, rows = chunks[size_t(i)].second;
      for (int64_t j = 0; j < nb; ++j) {
        const int64_t n0 = blocks[size_t(j)].first, tn = blocks[size_t(j)].second;
        if (i == 0) s.push_back(Intrin("tile.wait", {I32(1 + j)}));
        Array<PrimExpr> mm{Region(Xs[i % 2], {I32(0), I32(n0)}, {rows, tn}),
                           Region(Al, {I32(r0), I32(0)}, {rows, K}),
                           Region(Bl, {I32(0), I32(n0)}, {K, tn}), IntImm(DataType::Bool(), 0)};
        AppendColumnEpilogue(&mm, true, bias.defined(), Qb, Sc, n0, tn, 0);
        s.push_back(Intrin("tile.mm", mm));
      }
    };
    auto norm = [&](int64_t i) {  // chunk i's vector passes, then its stores
      const int64_t r0 = chunks[size_t(i)].first, rows = chunks[size_t(i)].second;
      const int64_t k = i % 2;
      TileView x = MakeView(Xs[k], {rows, N, 1}, "Xv"), e = MakeView(Es[k], {rows, N, 1}, "Ev");
      TileView y = MakeView(Ys[k], {rows, N, 1}, "Yv");
      TileView M = MakeView(Ms[k], {rows, 1}, "Mv"), V = MakeView(Vs[k], {rows, 1}, "Vv");
      std::vector<Stmt> before{Intrin("tile.wait", {I32(kParams)})};
      if (i >= 2) before.push_back(Intrin("tile.wait", {I32(kStore + k)}));  // chunk i - 2 stored
      if (S2.defined()) s.push_back(Intrin("tile.wait", {I32(kSkip + k)}));
      s.push_back(LayerNormRows(x, e, y, M, V, Gv, ra.beta.defined() ? Bv : TileView{}, ra.rms,
                                S2.defined(), ra.epsilon, Yq2.defined() ? Qs[k] : Buffer(),
                                ra.q_inv, ra.q_zp, Seq(before)));
      s.push_back(
          Intrin("tile.dma_copy", {Region(Y2, {row0 + I32(r0), I32(0)}, {rows, N}),
                                   Region(Ys[k], {I32(0), I32(0)}, {rows, N}), I32(kStore + k)}));
      if (Yq2.defined())
        s.push_back(
            Intrin("tile.dma_copy", {Region(Yq2, {row0 + I32(r0), I32(0)}, {rows, N}),
                                     Region(Qs[k], {I32(0), I32(0)}, {rows, N}), I32(kStore + k)}));
    };
    for (int64_t i = 0; i < nc; ++i) {
      mms(i);
      if (i >= 1) norm(i - 1);
      if (i + 1 < nc && i + 1 >= 2) s.push_back(load_skip(i + 1));
    }
    norm(nc - 1);
    s.push_back(Intrin("tile.wait", {I32(kStore)}));
    if (nc > 1) s.push_back(Intrin("tile.wait", {I32(kStore + 1)}));
    Stmt r = Seq(s);
    for (int k = 0; k < 2; ++k)
      r = Allocate(
          Xs[k],
          Allocate(Es[k], Allocate(Ys[k], Allocate(Qs[k], Allocate(Ms[k], Allocate(Vs[k], r))))));
    r = Allocate(Qb, Allocate(Sc, Allocate(Ga, Allocate(Ba, r))));
    return Allocate(Bl, Allocate(Al, r));
  });
  return staged ? Allocate(Bsh, body) : body;
}

/*! \brief The row-norm plans worth estimating: rows per chunk (8, 16, 32 or 64, at most a
 * core's; tc_row_norm_rows asks for one), the weights in up to four blocks of columns; none when
 * the rows do not split evenly over the cores or the weights every core reads outweigh the
 * intermediate saved. */
std::vector<RowNormPlan> RowNormPlans(const OpCall& call, const GemmPlan& g) {
  std::vector<RowNormPlan> out;
  const int64_t P = call.cores, rows = g.M;
  // every core reads all of the weights: worth it while that (P K N bytes) is no more than
  // the f32 intermediate's round trip through L2 it saves (2 x 4 M N bytes)
  if (P < 1 || rows % P != 0 || P * g.K > 8 * rows) return out;
  RowNormPlan rp;
  rp.mc = rows / P;
  // at most four weight blocks (an event each: the kernel's events stay within 0..15) of a
  // multiple of 32 columns (the matrix engine's block)
  rp.tn = std::min(g.N, ((g.N + 3) / 4 + 31) / 32 * 32);
  const int64_t asked = AttrInt(call.attrs, "tc_row_norm_rows", 0);  // (a layer group's choice)
  for (int64_t tm : {8, 16, 32, 64}) {
    if (asked > 0 && tm != asked) continue;
    rp.tm = std::min(tm, rp.mc);
    bool seen = false;
    for (const auto& o : out) seen = seen || o.tm == rp.tm;
    const int64_t tile = rp.tm * g.N * 4;  // one f32 chunk
    const int64_t bytes = g.K * g.N + rp.mc * g.K + 2 * (3 * tile + tile / 4) + 8 * g.N * 4;
    if (!seen && bytes + kBank <= call.l1_bytes) out.push_back(rp);
  }
  return out;
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
  if (auto chosen = ChosenBefore(key); chosen && *chosen < plans.size())
    return MakeFunc(call, p, LowerGemmRowNorm(call, g, ra, plans[*chosen]));
  size_t best = 0;
  for (size_t i = 0; i < plans.size(); ++i)
    if (fastest.Offer(MakeFunc(call, p, LowerGemmRowNorm(call, g, ra, plans[i])))) best = i;
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
  const bool split = !g.split.empty();  // (only the column plan stores several outputs)
  std::vector<ColumnPlan> columns = ColumnPlans(call, g);
  if (split && columns.empty())
    TILECORE_THROW(ValueError) << call.op_type << ": tc_split needs the column plan, which does "
                               << "not take this shape on " << call.cores << " cores";
  PrimFunc tiled = split ? PrimFunc() : MakeFunc(call, p, LowerGemm(call, g));
  std::vector<PipelinePlan> plans = split ? std::vector<PipelinePlan>{} : PipelinePlans(call, g);
  if (plans.empty() && columns.empty()) return tiled;
  // (the plan chosen: 0 the tiled form, 1 + i pipelined plan i, 1 + plans + i column plan i)
  const std::string key = "gemm;" + PlanKey(call);
  if (auto chosen = ChosenBefore(key); chosen && *chosen <= plans.size() + columns.size()) {
    const size_t c = *chosen;
    if (c == 0 && !split) return tiled;
    if (c >= 1 && c <= plans.size())
      return MakeFunc(call, p, LowerGemmPipelined(call, g, plans[c - 1]));
    if (c > plans.size())
      return MakeFunc(call, p, LowerGemmColumns(call, g, columns[c - 1 - plans.size()]));
  }
  Fastest fastest{call, ""};
  size_t best = 0;
  if (!split) {  // (the tiled form fits any shape: an error estimating it is an error)
    fastest.best = tiled;
    fastest.cycles = EstimateStrategy(tiled, call.l1_bytes, static_cast<int>(call.cores)).cycles;
  }
  for (size_t i = 0; i < plans.size(); ++i)
    if (fastest.Offer(MakeFunc(call, p, LowerGemmPipelined(call, g, plans[i])))) best = 1 + i;
  for (size_t i = 0; i < columns.size(); ++i)
    if (fastest.Offer(MakeFunc(call, p, LowerGemmColumns(call, g, columns[i]))))
      best = 1 + plans.size() + i;
  if (fastest.best.defined()) Choose(key, best);
  if (!fastest.best.defined())
    TILECORE_THROW(ValueError) << call.op_type << ": tc_split needs the column plan, which does "
                               << "not fit L1 here";
  return fastest.best;
}

/*! \brief Rows per item of LowerMatMulSoftmax, at most 32, whose two slots' tiles (A rows,
 * B, the f32 scores and exponentials, the int8 result) fit half of L1: a divisor of M of at
 * least 8 when one fits, else the fewest rows that still take as few items as the most that
 * fit (the last item then ends at row M and computes again a few rows of the one before:
 * the same rows, the same bits, but it stores only the rows after them, since another core
 * may store those at the same time); 0 when none does. */
int64_t SoftmaxRows(int64_t M, int64_t N, int64_t K, int64_t D = 0, bool mask = false) {
  // (with f32 operands loaded beside the int8 ones; tc_context: V and the context rows;
  // tc_softmax.tc_mask: the mask's rows)
  auto fits = [&](int64_t tm) {
    return 2 * (tm * K * 5 + K * N * 5 + tm * N * (mask ? 13 : 9) + N * D + tm * D * 4) <=
           (int64_t{1} << 19);
  };
  int64_t most = 0;
  for (int64_t tm = std::min<int64_t>(M, 32); tm >= 1; --tm) {
    if (!fits(tm)) continue;
    if (M % tm == 0 && (tm >= 8 || tm == M)) return tm;
    most = std::max(most, tm);
  }
  if (most == 0) return 0;
  // as few items as the most rows take, each as short as those items allow: less of the
  // last item's rows computed twice (M = 199: 7 items of 29 rows, not of 32)
  const int64_t items = (M + most - 1) / most;
  return (M + items - 1) / items;
}

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

ContextPlan GetContextPlan(const Map<String, Any>& attrs, const std::vector<int64_t>& vs) {
  ContextPlan c;
  if (!HasAttr(attrs, "tc_context")) return c;
  c.D = vs.back();
  const double x = AttrFloat(attrs, "tc_context.tc_x_scale", 1.0);
  const double b = AttrFloat(attrs, "tc_context.tc_b_scale", 1.0);
  const double y = AttrFloat(attrs, "tc_context.tc_y_scale", 1.0);
  const double out = AttrFloat(attrs, "tc_context.tc_out_scale", 1.0);
  c.y_i8 = HasAttr(attrs, "tc_context.tc_y_scale");
  // GemmPlan::ScaleFactor times b_scale, both rounded to f32 as the MatMul's plans round them
  c.scale =
      static_cast<float>(static_cast<float>((c.y_i8 ? x / y : x) * out) * static_cast<float>(b));
  c.y_zp = c.y_i8 ? AttrInt(attrs, "tc_context.tc_y_zero_point", 0) : 0;
  c.x_zp = AttrInt(attrs, "tc_context.tc_x_zero_point", 0);
  c.rows_first = AttrInt(attrs, "tc_context.tc_y_rows_first", 0) != 0;
  return c;
}

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
PrimFunc LowerMatMulSoftmax(const OpCall& call, const Params& p, const GemmPlan& g) {
  using namespace rows;  // NOLINT(build/namespaces)
  DataType f32 = DataType::Float(32), i8 = DataType::Int(8);
  const int64_t M = g.M, N = g.N, K = g.K;
  const bool y_i8 = call.outputs[0]->dtype == i8;
  const double y_inv = InverseScale(AttrFloat(call.attrs, "tc_softmax.tc_y_scale", 1.0));
  const int64_t y_zp = AttrInt(call.attrs, "tc_softmax.tc_y_zero_point", 0);
  const double scale = static_cast<float>(g.ScaleFactor() * static_cast<float>(g.b_scale));
  const double big = std::numeric_limits<float>::max();
  const bool context = HasAttr(call.attrs, "tc_context");
  // tc_softmax.tc_mask: input 2 (V then input 3), [M, N] added to the scores before the
  // Softmax's passes, as the Add between them did
  const bool masked = AttrInt(call.attrs, "tc_softmax.tc_mask", 0) != 0;
  const size_t v_at = masked ? 3 : 2;
  const ContextPlan ctx =
      GetContextPlan(call.attrs, context ? Shape(call.inputs[v_at]) : std::vector<int64_t>{});
  const int64_t D = ctx.D;
  if (context && !HasAttr(call.attrs, "tc_softmax.tc_y_scale"))
    TILECORE_THROW(ValueError) << "MatMul: tc_context needs int8 probabilities";
  const bool p_i8 = y_i8 || context;  // the probabilities quantised (stored, or multiplied)
  const int64_t tm = SoftmaxRows(M, N, K, D, masked);
  const int64_t mcount = (M + tm - 1) / tm, nb = Numel(g.out_batch);
  Buffer V = context ? View(p.in[v_at], {nb, N, D}, "V") : Buffer();
  Buffer Mask = masked ? View(p.in[2], {M, N}, "Mask") : Buffer();
  Buffer Yc = !context         ? Buffer()
              : ctx.rows_first ? View(p.out[0], {M, nb, D}, "YR")
                               : View(p.out[0], {nb, M, D}, "Y");
  // tc_b_heads: B's rows are the keys, [N, H, K]; a matrix's [N, K] is loaded as it lies
  // and turned into [K, N] by the vector engine (what the Transpose's step did)
  const bool b_heads = HasAttr(call.attrs, "tc_b_heads");
  if (b_heads && !g.b_i8) TILECORE_THROW(ValueError) << "MatMul: tc_b_heads needs an int8 B";
  Buffer BH = b_heads ? View(p.in[1], {N, Numel(g.b_batch), K}, "BH") : Buffer();
  // With int8 B (and V) and a number of matrices that divides the cores, items go to the cores
  // matrix-minor, so a core's items are all of one matrix (attention: a head each): B (turned)
  // and V are loaded for its first two items, one per slot, and kept for the others.
  const int64_t P = call.cores;
  const bool reuse = g.b_i8 && nb > 1 && P % nb == 0 && Numel(g.b_batch) == nb;
  PrimExpr fresh_limit = I32(2 * P);  // item t is one of its core's first two: t < 2 P
  int64_t rotation = 0;
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    Buffer Al[2], Bl[2], Af[2], Bf[2], Bk[2], Cf[2], Es[2], Qs[2], Ms[2], Ss[2], Vl[2], Ys[2],
        Kl[2];
    // tc_b_heads: 1 once the next item's B is turned (by the item before it, between its
    // mm and its Softmax, so the vector engine turns it while the matrix engine waits for
    // nothing: turned before its own mm, the mm would wait behind the Softmax before it)
    Buffer turned = DeclBuffer({I32(1)}, DataType::Int(32), "Turned", "local");
    // the probabilities' zero point: -zp times V's column sums, the context mm's bias
    const bool v_sums = context && ctx.x_zp != 0;
    Buffer zp_row = Local({1, N}, i8, "ZpRow"), Zc[2];
    for (int s = 0; s < 2; ++s) {
      std::string k = std::to_string(s);
      Al[s] = Local({tm, K}, i8, "Al" + k), Bl[s] = Local({K, N}, i8, "Bl" + k);
      if (b_heads) Bk[s] = Local({N, K}, i8, "Bk" + k);
      if (context)
        Vl[s] = Local({N, D}, i8, "Vl" + k), Ys[s] = Local({tm, D}, ctx.y_i8 ? i8 : f32, "Yc" + k);
      if (v_sums) Zc[s] = Local({1, D}, DataType::Int(32), "ZpSums" + k);
      if (masked) Kl[s] = Local({tm * N}, f32, "MaskRows" + k);
      // f32 operands: loaded here and quantised on load into Al / Bl
      if (!g.a_i8) Af[s] = Local({tm, K}, f32, "Af" + k);
      if (!g.b_i8) Bf[s] = Local({K, N}, f32, "Bf" + k);
      Cf[s] = Local({tm * N}, f32, "Cf" + k), Es[s] = Local({tm * N}, f32, "Et" + k);
      Qs[s] = p_i8 ? Local({tm * N}, i8, "Qt" + k) : Es[s];
      Ms[s] = Local({tm}, f32, "M" + k), Ss[s] = Local({tm}, f32, "S" + k);
    }
    auto at = [&](PrimExpr t) {  // (batch index, first row) of item t; the last ends at M
      if (reuse)
        return std::make_pair(floormod(t, I32(nb)),
                              min(floordiv(t, I32(nb)) * I32(tm), I32(M - tm)));
      return std::make_pair(floordiv(t, I32(mcount)),
                            min(floormod(t, I32(mcount)) * I32(tm), I32(M - tm)));
    };
    // B and V of item t are loaded (else its slot holds them from two items before)
    auto when_fresh = [&](PrimExpr t, Stmt st) {
      return reuse ? IfThenElse(t < fresh_limit, st) : st;
    };
    auto load = [&](PrimExpr t, int64_t s) {  // (after the mm that read the slot: ordered)
      auto [ob, m0] = at(t);
      return Seq(
          {masked ? Intrin("tile.dma_copy", {Region(Kl[s], {I32(0)}, {tm * N}),
                                             Region(Mask, {m0, I32(0)}, {tm, N}), I32(s)})
                  : Evaluate(I32(0)),
           Intrin("tile.dma_copy",
                  {Region(g.a_i8 ? Al[s] : Af[s], {I32(0), I32(0)}, {tm, K}),
                   Region(g.A, {BatchIndex(ob, g.out_batch, g.a_batch), m0, I32(0)}, {1, tm, K}),
                   I32(s)}),
           when_fresh(
               t,
               b_heads
                   ? Intrin("tile.dma_copy",
                            {Region(Bk[s], {I32(0), I32(0)}, {N, K}),
                             Region(BH, {I32(0), BatchIndex(ob, g.out_batch, g.b_batch), I32(0)},
                                    {N, 1, K}),
                             I32(s)})
                   : Intrin("tile.dma_copy",
                            {Region(g.b_i8 ? Bl[s] : Bf[s], {I32(0), I32(0)}, {K, N}),
                             Region(g.B, {BatchIndex(ob, g.out_batch, g.b_batch), I32(0), I32(0)},
                                    {1, K, N}),
                             I32(s)}))});
    };
    auto compute = [&](PrimExpr t, int64_t s) {
      TileView x = MakeView(Cf[s], {tm, N, 1}, "Xv"), e = MakeView(Es[s], {tm, N, 1}, "Ev");
      TileView Mv = MakeView(Ms[s], {tm, 1}, "Mv"), Sv = MakeView(Ss[s], {tm, 1}, "Sv");
      Buffer C2 = View(Cf[s], {tm, N}, "C2");
      std::vector<Stmt> c{Intrin("tile.wait", {I32(s)})};
      if (!g.a_i8) c.push_back(Quantise(Al[s], Af[s], tm, K, InverseScale(g.x_scale), g.zp));
      if (!g.b_i8) c.push_back(Quantise(Bl[s], Bf[s], K, N, InverseScale(g.b_scale), 0));
      auto turn = [&](int64_t slot) {  // Bl[k, n] = Bk[n, k]
        return CopyNest(StridedView(Bl[slot], {K, N}, {N, 1}, 0, "BlT"),
                        StridedView(Bk[slot], {K, N}, {1, K}, 0, "BkT"), {K, N});
      };
      if (b_heads)  // (the core's first item: no item before it turned its B)
        c.push_back(IfThenElse(eq(BufferLoad(turned, {I32(0)}), I32(0)), turn(s)));
      c.push_back(
          Intrin("tile.mm",
                 {Region(C2, {I32(0), I32(0)}, {tm, N}), Region(Al[s], {I32(0), I32(0)}, {tm, K}),
                  Region(Bl[s], {I32(0), I32(0)}, {K, N}), IntImm(DataType::Bool(), 0), I32(0),
                  F32(scale), I32(0), I32(0), StringImm("none"), F32(-big), F32(big)}));
      if (b_heads) {  // the next item's (after the last item, its slot's keys again: unused)
        Stmt next = Seq({Intrin("tile.wait", {I32(1 - s)}), turn(1 - s),
                         BufferStore(turned, I32(1), {I32(0)})});
        // (reused: only the core's first item turns the second's; the others keep theirs)
        c.push_back(reuse ? IfThenElse(t < I32(P), next) : next);
      }
      if (masked) {  // the scores plus the mask's rows: the Add's f32 sums
        TileView k = MakeView(Kl[s], {tm, N, 1}, "Kv");
        c.push_back(
            MapTile(x, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v + k.Load(i); }));
      }
      // tc_context: this item's V, used in its store stage (a load stage's slot is loaded
      // again before then)
      if (context)
        c.push_back(when_fresh(
            t, Intrin("tile.dma_copy",
                      {Region(Vl[s], {I32(0), I32(0)}, {N, D}),
                       Region(V, {at(t).first, I32(0), I32(0)}, {1, N, D}), I32(4 + s)})));
      // the Softmax strategy's passes; what the store reads is written once the slot's
      // last store has left
      Stmt wait_store = Intrin("tile.wait", {I32(2 + s)});
      Buffer q = p_i8 ? MakeView(Qs[s], {tm, N, 1}, "Qv").buf : Buffer();
      c.push_back(SoftmaxRows(x, e, Mv, Sv, false, q, y_inv, y_zp, p_i8 ? Stmt() : wait_store,
                              context ? Stmt() : wait_store));
      return Seq(c);
    };
    // the last item's first `skip` rows are the item's before it, which another core may
    // compute and store at the same time: the last item stores only the rows after them
    const int64_t skip = mcount * tm - M;
    auto last_item = [&](PrimExpr t) {
      return eq(reuse ? floordiv(t, I32(nb)) : floormod(t, I32(mcount)), I32(mcount - 1));
    };
    // store(first row of the tile, rows, first row of the slot's result): item t's copy
    auto stored = [&](PrimExpr t, PrimExpr m0,
                      const std::function<Stmt(PrimExpr, int64_t, int64_t)>& store) {
      if (skip <= 0) return store(m0, tm, 0);
      return Stmt(
          IfThenElse(last_item(t), store(m0 + I32(skip), tm - skip, skip), store(m0, tm, 0)));
    };
    auto post = [&](PrimExpr t, int64_t s) {
      auto [ob, m0] = at(t);
      if (!context)
        return stored(t, m0, [&, ob = ob](PrimExpr r0, int64_t rows, int64_t from) {
          return Intrin("tile.dma_copy", {Region(g.C, {ob, r0, I32(0)}, {1, rows, N}),
                                          Region(Qs[s], {I32(from * N)}, {rows * N}), I32(2 + s)});
        });
      // the context's rows: the probabilities times V with the context MatMul's epilogue,
      // once V is in and the slot's last store has left
      Buffer Q2 = View(Qs[s], {tm, N}, "Q2");
      // (V's column sums, with V: kept for the slot's later items as V is)
      Stmt sums =
          v_sums ? ZeroPointRow(ctx.x_zp).Sums(Region(Zc[s], {I32(0), I32(0)}, {1, D}), zp_row,
                                               Region(Vl[s], {I32(0), I32(0)}, {N, D}), N, false)
                 : Stmt();
      return Seq(
          {when_fresh(t, v_sums ? Seq({Intrin("tile.wait", {I32(4 + s)}), sums})
                                : Intrin("tile.wait", {I32(4 + s)})),
           Intrin("tile.wait", {I32(2 + s)}),
           Intrin("tile.mm",
                  {Region(Ys[s], {I32(0), I32(0)}, {tm, D}), Region(Q2, {I32(0), I32(0)}, {tm, N}),
                   Region(Vl[s], {I32(0), I32(0)}, {N, D}), IntImm(DataType::Bool(), 0),
                   v_sums ? PrimExpr(Region(Zc[s], {I32(0), I32(0)}, {1, D})) : I32(0),
                   F32(ctx.scale), I32(ctx.y_zp), I32(0), StringImm("none"), F32(-big), F32(big)}),
           stored(t, m0, [&, ob = ob](PrimExpr r0, int64_t rows, int64_t from) {
             BufferRegion dst = ctx.rows_first ? Region(Yc, {r0, ob, I32(0)}, {rows, 1, D})
                                               : Region(Yc, {ob, r0, I32(0)}, {1, rows, D});
             return Intrin("tile.dma_copy",
                           {dst, Region(Ys[s], {I32(from), I32(0)}, {rows, D}), I32(2 + s)});
           })});
    };
    Stmt r = Seq(
        {v_sums ? ZeroPointRow(ctx.x_zp).Fill(zp_row, 6) : Evaluate(I32(0)),
         BufferStore(turned, I32(0), {I32(0)}),
         ForEachItemThreeStage(core, call.cores, nb * mcount, &rotation, "t", load, compute, post),
         Intrin("tile.wait", {I32(2)}), Intrin("tile.wait", {I32(3)})});
    for (int k = 0; k < 2; ++k) {
      r = Allocate(Al[k], Allocate(Bl[k], Allocate(Cf[k], Allocate(Es[k], r))));
      r = Allocate(Ms[k], Allocate(Ss[k], r));
      if (p_i8) r = Allocate(Qs[k], r);
      if (!g.a_i8) r = Allocate(Af[k], r);
      if (!g.b_i8) r = Allocate(Bf[k], r);
      if (b_heads) r = Allocate(Bk[k], r);
      if (context) r = Allocate(Vl[k], Allocate(Ys[k], r));
      if (v_sums) r = Allocate(Zc[k], r);
      if (masked) r = Allocate(Kl[k], r);
    }
    if (v_sums) r = Allocate(zp_row, r);
    return Allocate(turned, r);
  });
  return MakeFunc(call, p, body);
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
  if (HasAttr(call.attrs, "tc_softmax")) return LowerMatMulSoftmax(call, p, g);
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
