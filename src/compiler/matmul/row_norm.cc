/*
 * src/compiler/matmul/row_norm.cc — the MatMul strategy's plan for a Gemm followed by its row
 * normalisation (LowerGemmRowNorm, RowNormPlans).
 */
#include <algorithm>
#include <string>
#include <utility>

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

}  // namespace matmul
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
