/*
 * src/compiler/matmul/columns.cc — the column plan of the MatMul strategy (LowerGemmColumns,
 * ColumnPlans): blocks of output columns, their weights streamed.
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

}  // namespace matmul
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
