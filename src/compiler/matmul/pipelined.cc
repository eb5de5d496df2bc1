/*
 * src/compiler/matmul/pipelined.cc — the pipelined plan of the MatMul strategy
 * (LowerGemmPipelined, PipelinePlans).
 */
#include <algorithm>
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

}  // namespace matmul
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
