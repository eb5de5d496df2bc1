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
 * at the bias and two vector commands dequantise after the last K step.
 */
#include <algorithm>
#include <limits>

#include "kernel_util.h"
#include "matrix_precision.h"
#include "tilecore/codegen/lowering.h"
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
};

/*! \brief dst[i, k] = i8(src[i, k] * inv + zp) over [rows, cols]: quantise on load. */
Stmt Quantise(const Buffer& dst, const Buffer& src, int64_t rows, int64_t cols, double inv,
              int64_t zp) {
  auto over = [&](const std::function<Stmt(PrimExpr, PrimExpr)>& f) {
    return Loop("i", rows,
                [&](PrimExpr i) { return Loop("k", cols, [&](PrimExpr k) { return f(i, k); }); });
  };
  std::vector<Stmt> s;
  s.push_back(over([&](PrimExpr i, PrimExpr k) {
    return BufferStore(src, BufferLoad(src, {i, k}) * F32(inv), {i, k});
  }));
  if (zp != 0)
    s.push_back(over([&](PrimExpr i, PrimExpr k) {
      return BufferStore(src, BufferLoad(src, {i, k}) + F32(static_cast<double>(zp)), {i, k});
    }));
  s.push_back(over([&](PrimExpr i, PrimExpr k) {
    return BufferStore(dst, Cast(dst->dtype, BufferLoad(src, {i, k})), {i, k});
  }));
  return Seq(s);
}

Stmt LowerGemm(const OpCall& call, const GemmPlan& g) {
  DataType f32 = DataType::Float(32);
  const bool q = g.mp.int8();
  const DataType ot = g.mp.operand;
  int64_t nb = Numel(g.out_batch);
  int64_t rotation = 0;
  return OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> body;
    for (auto [mcount, tm] : Segments(g.M, kTM)) {
      for (auto [ncount, tn] : Segments(g.N, kTN)) {
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
          Buffer Cf = q ? Local({tm, tn}, f32, "Cf") : Cl;  // the f32 result
          // One set of A and B tiles for every K step: the engines order their accesses by
          // buffer, so the steps must not get fresh buffers at reused addresses.
          int64_t kmax = std::max<int64_t>(std::min(g.K, kTK), 1);
          Buffer Al = Local({tm, kmax}, ot, "Al");
          Buffer Bl = Local({kmax, tn}, ot, "Bl");
          Buffer At = Local({kmax, tm}, ot, "At");
          Buffer Bt = Local({tn, kmax}, ot, "Bt");
          Buffer Af =
              q ? Local({tm, kmax}, f32, "Af") : Buffer();  // int8: f32 tiles quantised on load
          Buffer Bf = q && g.b_act ? Local({kmax, tn}, f32, "Bf") : Buffer();
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
          auto load_scales = [&]() {  // Sl = f32(x_scale * w_scale[n])
            return Seq({DmaWait(Region(Sl, {I32(0), I32(0)}, {1, tn}),
                                Region(g.wscale, {I32(0), n0}, {1, tn}), 0),
                        Loop("j", tn, [&](PrimExpr j) {
                          return BufferStore(
                              Sl, BufferLoad(Sl, {I32(0), j}) * F32(static_cast<float>(g.x_scale)),
                              {I32(0), j});
                        })});
          };
          const double b_act_scale =
              static_cast<float>(static_cast<float>(g.x_scale) * static_cast<float>(g.b_scale));
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
              if (q) {  // transA is not in the int8 form
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
              if (q && g.b_act) {
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
              Stmt mm;
              if (fused) {
                const double big = std::numeric_limits<float>::max();
                PrimExpr bias =
                    g.qbias.defined() ? PrimExpr(Region(Ql, {I32(0), I32(0)}, {1, tn})) : I32(0);
                PrimExpr scale = channel_scale ? PrimExpr(Region(Sl, {I32(0), I32(0)}, {1, tn}))
                                               : F32(b_act_scale);
                mm = Intrin(
                    "tile.mm",
                    {Region(Cf, {I32(0), I32(0)}, {tm, tn}), Region(Al, {I32(0), I32(0)}, {tm, tk}),
                     Region(Bl, {I32(0), I32(0)}, {tk, tn}), IntImm(DataType::Bool(), 0), bias,
                     scale, I32(0), I32(0), StringImm("none"), F32(-big), F32(big)});
              } else {
                mm = Intrin("tile.mm", {Region(Cl, {I32(0), I32(0)}, {tm, tn}),
                                        Region(Al, {I32(0), I32(0)}, {tm, tk}),
                                        Region(Bl, {I32(0), I32(0)}, {tk, tn}),
                                        IntImm(DataType::Bool(), accumulate ? 1 : 0)});
              }
              return Seq({loadA, loadB, mm});
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
          s.push_back(DmaWait(Region(g.C, {ob, m0, n0}, {1, tm, tn}),
                              Region(Cf, {I32(0), I32(0)}, {tm, tn}), 1));
          Stmt r = Allocate(Cl, Allocate(Al, Allocate(Bl, Seq(s))));
          if (q) r = Allocate(Cf, Allocate(Af, r));
          if (preset || (fused && g.qbias.defined())) r = Allocate(Ql, r);
          if (channel_scale) r = Allocate(Sl, r);
          if (Bf.defined()) r = Allocate(Bf, r);
          if (g.transA) r = Allocate(At, r);
          if (g.transB) r = Allocate(Bt, r);
          return r;
        }));
      }
    }
    return Seq(body);
  });
}

/*!
 * \brief int8 with constant weights, B resident: core c keeps its N / cores columns of
 * the int8 weights (and their bias and scales) in L1 for the whole op, and the rows of A
 * stream through in chunks of `tm`: each core quantises a quarter of the next chunk and
 * copies it to a shared L2 buffer (so A is read from the DDR once), a barrier, then every
 * core loads the whole int8 chunk from L2 while its matrix engine multiplies the previous
 * one (K in one mm, dequantisation in the fused epilogue) and its f32 result drains to the
 * DDR. Chunk buffers in L1 and L2 are double-buffered, so the DMA of chunk r + 1, the mm of
 * chunk r and the store of chunk r - 1 overlap.
 */
struct ResidentPlan {
  int64_t rows = 0;  // M with the batch folded in (A rows share one weight matrix)
  int64_t nc = 0;    // columns per core
  int64_t tm = 0;    // rows per chunk
};

/*! \brief L1 bytes per core of the plan (each buffer rounded to 64 bytes). */
int64_t ResidentL1Bytes(const GemmPlan& g, const ResidentPlan& r, int64_t cores) {
  auto al = [](int64_t b) { return (b + 63) / 64 * 64; };
  int64_t sr = (r.tm + cores - 1) / cores;
  return al(g.K * r.nc) + 2 * al(r.nc * 4) + al(sr * g.K * 4) + al(sr * g.K) + al(2 * r.tm * g.K) +
         al(2 * r.tm * r.nc * 4) + 256;
}

Stmt LowerGemmInt8Resident(const OpCall& call, const GemmPlan& g, const ResidentPlan& rp) {
  DataType f32 = DataType::Float(32), i8 = DataType::Int(8);
  const int64_t P = call.cores, K = g.K, NC = rp.nc, TM = rp.tm;
  Buffer A2 = View(g.A, {rp.rows, K}, "A2");
  Buffer Y2 = View(g.C, {rp.rows, g.N}, "Y2");
  Buffer B2 = View(g.B, {K, g.N}, "B2");
  Buffer Ash = DeclBuffer({I32(2), I32(TM), I32(K)}, i8, String("Ash"), "shared");
  // chunks: (count, rows) — the full ones, then the rest
  auto segs = Segments(rp.rows, TM);
  std::vector<std::pair<int64_t, int64_t>> chunks;  // (first row, rows) of each chunk
  for (int64_t r = 0; r < rp.rows; r += TM) chunks.push_back({r, std::min(TM, rp.rows - r)});
  const int64_t n_chunks = static_cast<int64_t>(chunks.size());
  const double big = std::numeric_limits<float>::max();
  Stmt body = OverCores(P, [&](PrimExpr c) {
    Buffer Bres = Local({K, NC}, i8, "Bres");
    Buffer Qb = Local({1, NC}, g.mp.accum, "Qb");
    Buffer Sc = Local({1, NC}, f32, "Sc");
    const int64_t sr_max = (TM + P - 1) / P;
    Buffer Af = Local({sr_max, K}, f32, "Af");
    Buffer Aq = Local({sr_max, K}, i8, "Aq");
    Buffer Al = Local({2, TM, K}, i8, "Al");
    Buffer Cf = Local({2, TM, NC}, f32, "Cf");
    PrimExpr n0 = c * I32(NC);
    std::vector<Stmt> s;
    // Chunk i (static) into Ash[i % 2]: each core quantises its share of the rows (all of
    // them on core 0 when the rows do not split evenly).
    auto stage = [&](int64_t i) {
      auto [r0, rows] = chunks[size_t(i)];
      int64_t slot = i % 2;
      bool even = rows % P == 0;
      int64_t sr = even ? rows / P : rows;
      PrimExpr first = even ? PrimExpr(I32(r0) + c * I32(sr)) : PrimExpr(I32(r0));
      PrimExpr dst_row = even ? PrimExpr(c * I32(sr)) : PrimExpr(I32(0));
      Stmt st = Seq({Intrin("tile.dma_copy",
                            {Region(Af, {I32(0), I32(0)}, {sr, K}), Region(A2, {first, I32(0)}, {sr, K}),
                             I32(2)}),
                     Intrin("tile.wait", {I32(2)}),
                     Quantise(Aq, Af, sr, K, InverseScale(g.x_scale), g.zp),
                     Intrin("tile.dma_copy", {Region(Ash, {I32(slot), dst_row, I32(0)}, {1, sr, K}),
                                              Region(Aq, {I32(0), I32(0)}, {sr, K}), I32(3)}),
                     Intrin("tile.wait", {I32(3)})});
      return even ? st : IfThenElse(c == I32(0), st, Stmt());
    };
    auto load_chunk = [&](int64_t i) {
      auto [r0, rows] = chunks[size_t(i)];
      int64_t slot = i % 2;
      return Intrin("tile.dma_copy", {Region(Al, {I32(slot), I32(0), I32(0)}, {1, rows, K}),
                                      Region(Ash, {I32(slot), I32(0), I32(0)}, {1, rows, K}), I32(1)});
    };
    // The weights, bias and scales of this core's columns; chunk 0 is staged meanwhile.
    s.push_back(Intrin("tile.dma_copy",
                       {Region(Bres, {I32(0), I32(0)}, {K, NC}), Region(B2, {I32(0), n0}, {K, NC}), I32(0)}));
    if (g.qbias.defined())
      s.push_back(Intrin("tile.dma_copy", {Region(Qb, {I32(0), I32(0)}, {1, NC}),
                                           Region(g.qbias, {I32(0), n0}, {1, NC}), I32(0)}));
    s.push_back(Intrin("tile.dma_copy", {Region(Sc, {I32(0), I32(0)}, {1, NC}),
                                         Region(g.wscale, {I32(0), n0}, {1, NC}), I32(0)}));
    s.push_back(stage(0));
    s.push_back(Intrin("tir.barrier", {}));
    s.push_back(load_chunk(0));
    s.push_back(Intrin("tile.wait", {I32(0)}));
    s.push_back(Loop("j", NC, [&](PrimExpr j) {
      return BufferStore(Sc, BufferLoad(Sc, {I32(0), j}) * F32(static_cast<float>(g.x_scale)), {I32(0), j});
    }));
    for (int64_t i = 0; i < n_chunks; ++i) {
      auto [r0, rows] = chunks[size_t(i)];
      int64_t slot = i % 2;
      if (i + 1 < n_chunks) s.push_back(stage(i + 1));
      s.push_back(Intrin("tile.wait", {I32(1)}));  // chunk i is in L1 on every core ...
      if (i + 1 < n_chunks) {
        s.push_back(Intrin("tir.barrier", {}));  // ... and chunk i + 1 in L2
        s.push_back(load_chunk(i + 1));
      }
      if (i >= 2) s.push_back(Intrin("tile.wait", {I32(4 + slot)}));  // Cf[slot] has drained
      PrimExpr bias = g.qbias.defined() ? PrimExpr(Region(Qb, {I32(0), I32(0)}, {1, NC})) : I32(0);
      s.push_back(Intrin("tile.mm", {Region(Cf, {I32(slot), I32(0), I32(0)}, {1, rows, NC}),
                                     Region(Al, {I32(slot), I32(0), I32(0)}, {1, rows, K}),
                                     Region(Bres, {I32(0), I32(0)}, {K, NC}), IntImm(DataType::Bool(), 0),
                                     bias, Region(Sc, {I32(0), I32(0)}, {1, NC}), I32(0), I32(0),
                                     StringImm("none"), F32(-big), F32(big)}));
      s.push_back(Intrin("tile.dma_copy", {Region(Y2, {I32(r0), n0}, {rows, NC}),
                                           Region(Cf, {I32(slot), I32(0), I32(0)}, {1, rows, NC}),
                                           I32(4 + slot)}));
    }
    s.push_back(Intrin("tile.wait", {I32(4)}));
    s.push_back(Intrin("tile.wait", {I32(5)}));
    Stmt r = Seq(s);
    // Outermost first: the large buffers take whole banks, the small ones are packed last.
    for (const Buffer& b : {Sc, Qb, Aq, Af, Cf, Al, Bres}) r = Allocate(b, r);
    return r;
  });
  (void)segs;
  return Allocate(Ash, body);
}

/*! \brief The resident-B plans that fit L1 and L2 (none when the op is not of that form). */
std::vector<ResidentPlan> ResidentPlans(const OpCall& call, const GemmPlan& g) {
  std::vector<ResidentPlan> out;
  const int64_t P = call.cores;
  if (!g.mp.int8() || g.b_act || g.transA || g.transB || !g.b_batch.empty() || g.K <= 0 ||
      g.N % P != 0 || g.out_batch != g.a_batch)
    return out;
  const int64_t lim = 4096;  // the matrix engine's largest dimension
  ResidentPlan r;
  r.rows = Numel(g.a_batch) * g.M;
  r.nc = g.N / P;
  if (g.K > lim || r.nc > lim || r.rows <= 0) return out;
  for (int64_t tm : {16, 32, 64, 128, 256, 512}) {
    if (tm > lim) break;
    r.tm = std::min(tm, r.rows);
    if (ResidentL1Bytes(g, r, P) > call.l1_bytes - 4096) continue;
    if (2 * r.tm * g.K > (int64_t{4} << 20)) continue;  // Ash in L2
    if (!out.empty() && out.back().tm == r.tm) continue;
    out.push_back(r);
  }
  return out;
}

/*!
 * \brief The lowering of a Gemm plan: the tiled form, or a resident-B plan when one fits,
 * whichever the cost model (cost_model.h) estimates fastest.
 */
PrimFunc ChooseGemm(const OpCall& call, const Params& p, const GemmPlan& g) {
  PrimFunc best = MakeFunc(call, p, LowerGemm(call, g));
  std::vector<ResidentPlan> plans = ResidentPlans(call, g);
  if (plans.empty()) return best;
  auto estimate = [&](const PrimFunc& f) {
    IRModule m = codegen::LowerKernels(IRModule::FromFunction(f),
                                       codegen::LowerOptions{call.l1_bytes, std::nullopt, true, "npu"});
    int64_t cycles = 0;
    for (const auto& [name, fn] : m->functions.items())
      cycles += EstimateKernel(fn, static_cast<int>(call.cores)).cycles;
    return cycles;
  };
  int64_t best_cycles = estimate(best);
  for (const ResidentPlan& r : plans) {
    PrimFunc f = MakeFunc(call, p, LowerGemmInt8Resident(call, g, r));
    int64_t cycles = 0;
    try {
      cycles = estimate(f);
    } catch (const ffi::Error&) {
      continue;  // does not fit once the buffers are placed in banks
    }
    if (cycles < best_cycles) {
      best = f;
      best_cycles = cycles;
    }
  }
  return best;
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

/*! \brief The int8 form's fields of `g` from the attributes and inputs 2, 3 (bias, w_scale). */
void SetQuant(const OpCall& call, const Params& p, int64_t N, GemmPlan* g) {
  g->mp = GetMatrixPrecision(call.attrs);
  if (!g->mp.int8()) return;
  g->x_scale = AttrFloat(call.attrs, "tc_x_scale", 1.0);
  g->zp = AttrInt(call.attrs, "tc_x_zero_point", 0);
  g->b_act = (AttrFloat(call.attrs, "tc_b_scale", 0) > 0);
  g->b_scale = AttrFloat(call.attrs, "tc_b_scale", 1.0);
  if (g->b_act) return;
  if (call.inputs[2].defined()) g->qbias = View(p.in[2], {1, N}, "QBias");
  g->wscale = View(p.in[3], {1, N}, "WScale");
}

PrimFunc LowerMatMul(const OpCall& call) {
  Params p = MakeParams(call);
  auto as = Shape(call.inputs[0]), bs = Shape(call.inputs[1]);
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
  return ChooseGemm(call, p, g);
}

std::string CheckMatMul(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& ins) {
  bool int8 = GetMatrixPrecision(attrs).int8() && !(AttrFloat(attrs, "tc_b_scale", 0) > 0);
  if (ins.size() != (int8 ? 4u : 2u) || !ins[0].defined() || !ins[1].defined())
    return op + (int8 ? ": int8 expects inputs A, W, bias (may be omitted), w_scale"
                      : ": expects 2 inputs");
  std::string why = CheckMatrixInputs(op, attrs, ins);
  if (!why.empty()) return why;
  auto as = Shape(ins[0]), bs = Shape(ins[1]);
  if (int8 && (bs.size() != 2 || ins[3]->shape[0] != bs[1]))
    return op + ": int8 weights must be a 2-D [K, N] with one w_scale per column";
  if (as.empty() || bs.empty()) return op + ": scalar operands";
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  if (as.back() != bs[bs.size() - 2]) return op + ": inner dimensions differ";
  for (size_t i = 3; i <= std::min(as.size(), bs.size()); ++i) {
    int64_t x = as[as.size() - i], y = bs[bs.size() - i];
    if (x != y && x != 1 && y != 1) return op + ": batch dimensions do not broadcast";
  }
  return "";
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
  return ChooseGemm(call, p, g);
}

std::string CheckGemm(const std::string& op, const Map<String, Any>& attrs,
                      const std::vector<TensorSpec>& ins) {
  if (ins.size() < 2 || !ins[0].defined() || !ins[1].defined()) return op + ": expects A and B";
  std::string why = CheckMatrixInputs(op, attrs, ins);
  if (!why.empty()) return why;
  auto as = Shape(ins[0]), bs = Shape(ins[1]);
  if (as.size() != 2 || bs.size() != 2) return op + ": A and B must be 2-D";
  bool ta = AttrInt(attrs, "transA", 0) != 0, tb = AttrInt(attrs, "transB", 0) != 0;
  int64_t M = ta ? as[1] : as[0], K = ta ? as[0] : as[1], K2 = tb ? bs[1] : bs[0],
          N = tb ? bs[0] : bs[1];
  if (K != K2) return op + ": inner dimensions differ";
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
