/*
 * src/compiler/matmul/softmax.cc — the MatMul strategy's attention plan (LowerMatMulSoftmax): a
 * product, its softmax and the context product in one kernel.
 */
#include <algorithm>
#include <limits>
#include <string>

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

int64_t SoftmaxRows(int64_t M, int64_t N, int64_t K, int64_t D, bool mask) {
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

}  // namespace matmul
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
