/*
 * src/compiler/strategy_matmul.cc — MatMul (batched, broadcast, 1-D operands) and Gemm
 * (transA/B, alpha, beta, C broadcast) on the matrix engine.
 *
 * Tiling: C tiles of TM x TN (128 x 128 f32) accumulate over K in steps of TK (256);
 * the A, B and C tiles (128 + 128 + 64 KiB) fit L1 for any shape. Edge tiles have
 * their own constant sizes (a full part and a remainder per dimension), so every DMA
 * and every tile.mm has constant extents. The output tiles (batch x M-tiles x
 * N-tiles) are spread over the cores round robin.
 */
#include <algorithm>

#include "kernel_util.h"
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
PrimExpr BatchIndex(const PrimExpr& ob, const std::vector<int64_t>& out_batch, const std::vector<int64_t>& in_batch) {
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
  Buffer A, B, C;   // views: A [nbA, M, K] (or [nbA, K, M]), B [nbB, K, N] (or [nbB, N, K]), C [nbC, M, N]
  Buffer bias;      // Gemm's C as a [bm, bn] view (bm in {1, M}, bn in {1, N}), or undefined
  int64_t bm = 0, bn = 0;
};

Stmt LowerGemm(const OpCall& call, const GemmPlan& g) {
  DataType f32 = DataType::Float(32);
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
          Buffer Cl = Local({tm, tn}, f32, "Cl");
          // One set of A and B tiles for every K step: the engines order their accesses by
          // buffer, so the steps must not get fresh buffers at reused addresses.
          int64_t kmax = std::max<int64_t>(std::min(g.K, kTK), 1);
          Buffer Al = Local({tm, kmax}, f32, "Al");
          Buffer Bl = Local({kmax, tn}, f32, "Bl");
          Buffer At = Local({kmax, tm}, f32, "At");
          Buffer Bt = Local({tn, kmax}, f32, "Bt");
          std::vector<Stmt> s;
          bool first = true;
          for (auto [kcount, tk] : Segments(g.K, kTK)) {
            int64_t kbase = tk == kTK ? 0 : (g.K / kTK) * kTK;
            auto step = [&, tk = tk, kbase = kbase](PrimExpr kk, bool accumulate) {
              PrimExpr k0 = I32(kbase) + kk * I32(kTK);
              std::vector<Stmt> st;
              Stmt loadA, loadB;
              if (!g.transA) {
                loadA = DmaWait(Region(Al, {I32(0), I32(0)}, {tm, tk}), Region(g.A, {ab, m0, k0}, {1, tm, tk}), 0);
              } else {
                loadA = (Seq({DmaWait(Region(At, {I32(0), I32(0)}, {tk, tm}),
                                                  Region(g.A, {ab, k0, m0}, {1, tk, tm}), 0),
                                          Loop("i", tm, [&](PrimExpr i) {
                                            return Loop("k", tk, [&](PrimExpr k) {
                                              return BufferStore(Al, BufferLoad(At, {k, i}), {i, k});
                                            });
                                          })}));
              }
              if (!g.transB) {
                loadB = DmaWait(Region(Bl, {I32(0), I32(0)}, {tk, tn}), Region(g.B, {bb, k0, n0}, {1, tk, tn}), 0);
              } else {
                loadB = (Seq({DmaWait(Region(Bt, {I32(0), I32(0)}, {tn, tk}),
                                                  Region(g.B, {bb, n0, k0}, {1, tn, tk}), 0),
                                          Loop("k", tk, [&](PrimExpr k) {
                                            return Loop("j", tn, [&](PrimExpr j) {
                                              return BufferStore(Bl, BufferLoad(Bt, {j, k}), {k, j});
                                            });
                                          })}));
              }
              Stmt mm = Intrin("tile.mm", {Region(Cl, {I32(0), I32(0)}, {tm, tn}), Region(Al, {I32(0), I32(0)}, {tm, tk}),
                                           Region(Bl, {I32(0), I32(0)}, {tk, tn}),
                                           IntImm(DataType::Bool(), accumulate ? 1 : 0)});
              return Seq({loadA, loadB, mm});
            };
            if (first) {
              s.push_back(step(I32(0), false));
              if (kcount > 1)
                s.push_back(Loop("kk", kcount - 1, [&](PrimExpr kk) { return step(kk + I32(1), true); }));
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
          if (g.alpha != 1.0) s.push_back(over_c([&](PrimExpr i, PrimExpr j) {
            return BufferLoad(Cl, {i, j}) * F32(g.alpha);
          }));
          if (g.bias.defined() && g.beta != 0.0) {
            int64_t rm = g.bm == 1 ? 1 : tm, rn = g.bn == 1 ? 1 : tn;
            Buffer Tl = Local({rm, rn}, f32, "Tl");
            std::vector<Stmt> bs;
            bs.push_back(DmaWait(Region(Tl, {I32(0), I32(0)}, {rm, rn}),
                                 Region(g.bias, {g.bm == 1 ? I32(0) : m0, g.bn == 1 ? I32(0) : n0}, {rm, rn}), 0));
            if (g.beta != 1.0)
              bs.push_back(Loop("i", rm, [&](PrimExpr i) {
                return Loop("j", rn, [&](PrimExpr j) {
                  return BufferStore(Tl, BufferLoad(Tl, {i, j}) * F32(g.beta), {i, j});
                });
              }));
            bs.push_back(over_c([&](PrimExpr i, PrimExpr j) {
              return BufferLoad(Cl, {i, j}) + BufferLoad(Tl, {rm == 1 ? I32(0) : i, rn == 1 ? I32(0) : j});
            }));
            s.push_back(Allocate(Tl, Seq(bs)));
          }
          s.push_back(DmaWait(Region(g.C, {ob, m0, n0}, {1, tm, tn}), Region(Cl, {I32(0), I32(0)}, {tm, tn}), 1));
          Stmt r = Allocate(Cl, Allocate(Al, Allocate(Bl, Seq(s))));
          if (g.transA) r = Allocate(At, r);
          if (g.transB) r = Allocate(Bt, r);
          return r;
        }));
      }
    }
    return Seq(body);
  });
}

std::string CheckF32(const std::string& op, const Map<String, Any>&, const std::vector<TensorSpec>& ins) {
  return CheckDTypes(ins, {DataType::Float(32)}, op);
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
  return MakeFunc(call, p, LowerGemm(call, g));
}

std::string CheckMatMul(const std::string& op, const Map<String, Any>& attrs, const std::vector<TensorSpec>& ins) {
  if (ins.size() != 2 || !ins[0].defined() || !ins[1].defined()) return op + ": expects 2 inputs";
  std::string why = CheckF32(op, attrs, ins);
  if (!why.empty()) return why;
  auto as = Shape(ins[0]), bs = Shape(ins[1]);
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
  return MakeFunc(call, p, LowerGemm(call, g));
}

std::string CheckGemm(const std::string& op, const Map<String, Any>& attrs, const std::vector<TensorSpec>& ins) {
  if (ins.size() < 2 || !ins[0].defined() || !ins[1].defined()) return op + ": expects A and B";
  std::string why = CheckF32(op, attrs, ins);
  if (!why.empty()) return why;
  auto as = Shape(ins[0]), bs = Shape(ins[1]);
  if (as.size() != 2 || bs.size() != 2) return op + ": A and B must be 2-D";
  bool ta = AttrInt(attrs, "transA", 0) != 0, tb = AttrInt(attrs, "transB", 0) != 0;
  int64_t M = ta ? as[1] : as[0], K = ta ? as[0] : as[1], K2 = tb ? bs[1] : bs[0], N = tb ? bs[0] : bs[1];
  if (K != K2) return op + ": inner dimensions differ";
  if (ins.size() > 2 && ins[2].defined()) {
    auto cs = Shape(ins[2]);
    if (cs.size() > 2) return op + ": C has more than 2 dimensions";
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
    if ((cs[0] != 1 && cs[0] != M) || (cs[1] != 1 && cs[1] != N)) return op + ": C does not broadcast to (M, N)";
  }
  return "";
}

std::string OnnxLayout(const OpCall&, int) { return "onnx"; }

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterStrategy("MatMul", Strategy{detail::CheckMatMul, detail::LowerMatMul, detail::OnnxLayout});
  RegisterStrategy("Gemm", Strategy{detail::CheckGemm, detail::LowerGemmOp, detail::OnnxLayout});
});

}  // namespace compiler
}  // namespace tilecore
