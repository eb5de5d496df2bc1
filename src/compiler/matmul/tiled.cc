/*
 * src/compiler/matmul/tiled.cc — the tiled plan of the MatMul strategy (LowerGemm): C tiles over
 * the cores, K chunks accumulated.
 */
#include <algorithm>
#include <limits>

#include "src/compiler/kernel_util.h"
#include "src/compiler/lookup_table.h"
#include "src/compiler/matmul/matmul_plans.h"
#include "src/compiler/matrix_precision.h"
#include "src/compiler/rows_util.h"
#include "tilecore/arch/params.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace matmul {

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
            SumChunks(
                &s, "kk", kcount, &first, [&](PrimExpr kk) { return step(kk, preset); }, step);
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

}  // namespace matmul
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
