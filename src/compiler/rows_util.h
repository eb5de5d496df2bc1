/*
 * src/compiler/rows_util.h — what the strategies that reduce along axes share
 * (Softmax, normalisations, Reduce*, pooling): a tensor seen as [A, R, B] with R the
 * reduced extent, its tiles over cores, and nests over L1 tiles written so that
 * EmitTileIntrinsics turns them into vector-engine commands (element-wise with
 * broadcast sources, and reductions of the innermost loop into a destination).
 *
 * Tiling: a tile is [ta, tr, tb] elements of [A, R, B] (at most kRowTile); the
 * (a, b) tiles are the work items, spread over the cores round robin, and R is
 * walked in chunks of tr inside an item. Every dimension is cut into full tiles and
 * one remainder tile with its own constant size.
 */
#ifndef TILECORE_SRC_COMPILER_ROWS_UTIL_H_
#define TILECORE_SRC_COMPILER_ROWS_UTIL_H_

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernel_util.h"
#include "matrix_precision.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace rows {

/*! \brief Elements of one [ta, tr, tb] tile (64 KiB of f32: one L1 bank). */
constexpr int64_t kRowTile = 16384;

/*! \brief n cut into full tiles of t and one remainder: (count, size, base) per segment. */
struct Seg {
  int64_t count, size, base;
};
inline std::vector<Seg> Segs(int64_t n, int64_t t) {
  std::vector<Seg> s;
  if (t <= 0) return s;
  if (n / t > 0) s.push_back({n / t, t, 0});
  if (n % t > 0) s.push_back({1, n % t, (n / t) * t});
  return s;
}

/*! \brief Loops over `ext` (outermost first), body(indices). */
inline Stmt Nest(const std::vector<int64_t>& ext,
                 const std::function<Stmt(const std::vector<PrimExpr>&)>& body,
                 const std::string& prefix = "i") {
  std::function<Stmt(size_t, std::vector<PrimExpr>)> rec = [&](size_t d,
                                                               std::vector<PrimExpr> idx) -> Stmt {
    if (d == ext.size()) return body(idx);
    return Loop(prefix + std::to_string(d), ext[d], [&](PrimExpr v) {
      idx.push_back(v);
      return rec(d + 1, idx);
    });
  };
  return rec(0, {});
}

/*! \brief Sum, max and min fold on the vector engine; a product stays front-end code. */
enum class Red { kSum, kMax, kMin, kProd };

inline PrimExpr Identity(Red r, DataType t) {
  if (r == Red::kSum) return make_zero(t);
  if (r == Red::kProd) return make_const(t, 1);
  if (t.is_float()) return FloatImm(t, r == Red::kMax ? -INFINITY : INFINITY);
  return IntImm(t, r == Red::kMax ? -(int64_t{1} << 31) : (int64_t{1} << 31) - 1);
}
inline PrimExpr Combine(Red r, PrimExpr a, PrimExpr b) {
  if (r == Red::kSum) return a + b;
  if (r == Red::kProd) return a * b;
  return r == Red::kMax ? max(a, b) : min(a, b);
}

/*!
 * \brief A view of an L1 allocation with the logical dims `dims` (row-major, dense),
 * stored without its unit dims: a loop of extent 1 disappears from the IR, and an
 * index that stays constant inside a tile-command nest would not line the operands up.
 */
struct TileView {
  Buffer buf;
  std::vector<int64_t> dims;
  Array<PrimExpr> Idx(const std::vector<PrimExpr>& i) const {
    Array<PrimExpr> out;
    for (size_t k = 0; k < dims.size(); ++k)
      if (dims[k] != 1) out.push_back(i[k]);
    if (out.empty()) out.push_back(I32(0));
    return out;
  }
  PrimExpr Load(const std::vector<PrimExpr>& i) const { return BufferLoad(buf, Idx(i)); }
  Stmt Store(PrimExpr v, const std::vector<PrimExpr>& i) const {
    return BufferStore(buf, v, Idx(i));
  }
  /*! \brief The whole view as a region (for DMA). */
  BufferRegion All() const {
    std::vector<int64_t> ext;
    for (int64_t d : dims)
      if (d != 1) ext.push_back(d);
    if (ext.empty()) ext.push_back(1);
    return Region(buf, std::vector<PrimExpr>(ext.size(), I32(0)), ext);
  }
};
inline TileView MakeView(const Buffer& alloc, const std::vector<int64_t>& dims,
                         const std::string& name) {
  std::vector<int64_t> s;
  for (int64_t d : dims)
    if (d != 1) s.push_back(d);
  if (s.empty()) s.push_back(1);
  return TileView{View(alloc, s, name), dims};
}

/*!
 * \brief D[a, b] = reduce over r of S[a, r, b] (tile.vec_red* over the innermost loop);
 * D has dims (ta, tb), S (ta, tr, tb).
 */
inline Stmt ReduceTile(const TileView& D, const TileView& S, Red red) {
  int64_t ta = S.dims[0], tr = S.dims[1], tb = S.dims[2];
  DataType t = D.buf->dtype;
  if (tr == 1) {  // nothing to fold: a copy
    return Nest({ta, tb}, [&](const std::vector<PrimExpr>& i) {
      return D.Store(S.Load({i[0], I32(0), i[1]}), i);
    });
  }
  if (ta * tb == 1 && tr >= 4 && red != Red::kProd) {
    // one destination element: a reduction needs an outer loop, so fold two halves on
    // the engine and combine them (and an odd last element) in front-end code
    int64_t w = tr / 2;
    Buffer T = Local({2}, t, "Half");
    Buffer S2 = View(S.buf, {2, w}, "Halves");
    Var j{String("j")}, r{String("r")};
    Stmt fold = For(
        j, I32(0), I32(2), ForKind::kSerial,
        SeqStmt::Flatten(Array<Stmt>{
            BufferStore(T, Identity(red, t), {j}),
            For(r, I32(0), I32(w), ForKind::kSerial,
                BufferStore(T, Combine(red, BufferLoad(T, {j}), BufferLoad(S2, {j, r})), {j}))}));
    PrimExpr v = Combine(red, BufferLoad(T, {I32(0)}), BufferLoad(T, {I32(1)}));
    if (tr % 2) v = Combine(red, v, BufferLoad(S.buf, {I32(tr - 1)}));
    return Allocate(T, SeqStmt::Flatten(Array<Stmt>{fold, D.Store(v, {I32(0), I32(0)})}));
  }
  return Nest({ta, tb}, [&](const std::vector<PrimExpr>& i) {
    Var r{String("r")};
    Stmt init = D.Store(Identity(red, t), i);
    Stmt acc = For(r, I32(0), I32(tr), ForKind::kSerial,
                   D.Store(Combine(red, D.Load(i), S.Load({i[0], r, i[1]})), i));
    return SeqStmt::Flatten(Array<Stmt>{init, acc});
  });
}

/*! \brief V[i] = f(V[i], i) over V's dims. */
inline Stmt MapTile(const TileView& V,
                    const std::function<PrimExpr(PrimExpr v, const std::vector<PrimExpr>& i)>& f) {
  return Nest(V.dims, [&](const std::vector<PrimExpr>& i) { return V.Store(f(V.Load(i), i), i); });
}

/*! \brief A float constant that f32 holds exactly (so the vector engine can take it as its scalar).
 */
inline PrimExpr F32Exact(double v) { return F32(static_cast<double>(static_cast<float>(v))); }

/*! \brief The tile sizes of [A, R, B] within kRowTile: tb (whole rows of R when 64 columns of them
 * fit), then tr, then ta. */
struct Tiles {
  int64_t ta, tr, tb;
};
inline Tiles ChooseTiles(int64_t A, int64_t R, int64_t B, int64_t cores = 1,
                         int64_t budget = kRowTile) {
  Tiles t;
  t.tb = std::max<int64_t>(1, std::min(B, budget));
  // a short R with a long B (softmax over channels): whole rows, fewer columns
  if (R > 0 && R * std::min<int64_t>(B, 64) <= budget)
    t.tb = std::max<int64_t>(1, std::min(B, budget / R));
  t.tr = std::max<int64_t>(1, std::min(R, budget / t.tb));
  t.ta = std::max<int64_t>(1, std::min(A, budget / (t.tr * t.tb)));
  // one tile of B and few of A: smaller A tiles, so that every core gets one
  if (t.tb == B && cores > 1) t.ta = std::max<int64_t>(1, std::min(t.ta, (A + cores - 1) / cores));
  return t;
}

/*!
 * \brief The (a, b) tiles of [A, ., B] over the cores: body(a0, ta, b0, tb) builds one
 * item for a tile of constant size ta x tb starting at (a0, b0).
 */
inline Stmt ForTiles(
    const OpCall& call, int64_t A, int64_t B, const Tiles& t,
    const std::function<Stmt(PrimExpr a0, int64_t ta, PrimExpr b0, int64_t tb)>& body) {
  int64_t rotation = 0;
  return OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> groups;
    for (const Seg& sa : Segs(A, t.ta)) {
      for (const Seg& sb : Segs(B, t.tb)) {
        groups.push_back(
            ForEachItem(core, call.cores, sa.count * sb.count, &rotation, "t", [&](PrimExpr it) {
              PrimExpr ai = sb.count == 1 ? it : floordiv(it, I32(sb.count));
              PrimExpr bi = sb.count == 1 ? I32(0) : floormod(it, I32(sb.count));
              return body(I32(sa.base) + ai * I32(t.ta), sa.size, I32(sb.base) + bi * I32(t.tb),
                          sb.size);
            }));
      }
    }
    return Seq(groups);
  });
}

/*!
 * \brief As ForTiles, with an outer extent K0 before [A, ., B] (A = per_outer):
 * body(k0, a0, ta, b0, tb).
 */
inline Stmt ForTiles(const OpCall& call, int64_t outer_times_a, int64_t B, const Tiles& t,
                     int64_t A,
                     const std::function<Stmt(PrimExpr k0, PrimExpr a0, int64_t ta, PrimExpr b0,
                                              int64_t tb)>& body) {
  int64_t K0 = A > 0 ? outer_times_a / A : 0;
  int64_t rotation = 0;
  return OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> groups;
    for (const Seg& sa : Segs(A, t.ta)) {
      for (const Seg& sb : Segs(B, t.tb)) {
        int64_t per = sa.count * sb.count;
        groups.push_back(ForEachItem(core, call.cores, K0 * per, &rotation, "t", [&](PrimExpr it) {
          PrimExpr k0 = K0 == 1 ? I32(0) : floordiv(it, I32(per));
          PrimExpr rest = K0 == 1 ? it : floormod(it, I32(per));
          PrimExpr ai = sb.count == 1 ? rest : floordiv(rest, I32(sb.count));
          PrimExpr bi = sb.count == 1 ? I32(0) : floormod(rest, I32(sb.count));
          return body(k0, I32(sa.base) + ai * I32(t.ta), sa.size, I32(sb.base) + bi * I32(t.tb),
                      sb.size);
        }));
      }
    }
    return Seq(groups);
  });
}

/*! \brief Rows per tile of a pipelined row op over A rows: the largest divisor of A up to
 * `target`, or 0 when it is below half of `target` (tiles that small do not pay). */
inline int64_t PipelineRows(int64_t A, int64_t target) {
  for (int64_t ta = std::max<int64_t>(target, 1); ta >= 1; --ta)
    if (A % ta == 0) return 2 * ta >= target ? ta : 0;
  return 0;
}

/*!
 * \brief Softmax (LogSoftmax with `log`) along the rows of the resident [rows, R] tile x:
 * M = the rows' maxima, x -= M, e = exp(x), S = the sums of e, then e = e * (1 / S)
 * (e = x - log(S)); with `q` defined, e quantised into it (QuantiseSteps: times `inv`,
 * plus `zp`, converted). `before_e` and `before_q` (may be undefined) come before the
 * first write of e and of q: a pipelined caller's wait for the store that reads them.
 * The passes of the Softmax strategies and of a MatMul's tc_softmax, so their bits agree.
 */
inline Stmt SoftmaxRows(const TileView& x, const TileView& e, const TileView& M, const TileView& S,
                        bool log, const Buffer& q, double inv, int64_t zp, const Stmt& before_e,
                        const Stmt& before_q) {
  auto per_row = [](const TileView& v, bool sub) {
    return [v, sub](PrimExpr a, const std::vector<PrimExpr>& i) {
      return sub ? a - v.Load({i[0], I32(0)}) : a * v.Load({i[0], I32(0)});
    };
  };
  std::vector<Stmt> c{ReduceTile(M, x, Red::kMax), MapTile(x, per_row(M, true))};
  if (before_e.defined()) c.push_back(before_e);
  c.push_back(Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
    return e.Store(call("tir.exp", {x.Load(i)}), i);
  }));
  c.push_back(ReduceTile(S, e, Red::kSum));
  if (log) {
    c.push_back(
        MapTile(S, [](PrimExpr v, const std::vector<PrimExpr>&) { return call("tir.log", {v}); }));
    c.push_back(Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
      return e.Store(x.Load(i) - S.Load({i[0], I32(0)}), i);
    }));
  } else {
    c.push_back(MapTile(S, [](PrimExpr v, const std::vector<PrimExpr>&) { return F32(1.0) / v; }));
    c.push_back(MapTile(e, per_row(S, false)));
  }
  if (q.defined()) {
    if (before_q.defined()) c.push_back(before_q);
    NestFn nest = [&](const std::function<Stmt(const Array<PrimExpr>&)>& f) {
      return Nest(e.dims, [&](const std::vector<PrimExpr>& i) { return f(e.Idx(i)); });
    };
    for (Stmt st : QuantiseSteps(q, e.buf, inv, zp, nest)) c.push_back(st);
  }
  return Seq(c);
}

/*!
 * \brief LayerNormalization (RMSNormalization with `rms`: no mean) along the rows of the
 * resident [rows, R, 1] tile x: with `skip`, x += e first (e holds the skip's rows: the
 * residual Add); M = the rows' means, x -= M; e = x * x, V = 1 / sqrt(mean(e) + eps)
 * (two-pass, as the reference); x *= V; y = x * gamma, plus beta when it has a buffer;
 * with `q` defined, y quantised into it (QuantiseSteps: one tquant pass, y kept).
 * `before_y` (may be undefined) comes before the first write of y: a pipelined caller's
 * wait for the store that reads it and for gamma and beta. The passes of the
 * normalisation strategy and of a Gemm's tc_row_norm, so their bits agree.
 */
inline Stmt LayerNormRows(const TileView& x, const TileView& e, const TileView& y,
                          const TileView& M, const TileView& V, const TileView& gamma,
                          const TileView& beta, bool rms, bool skip, double epsilon,
                          const Buffer& q, double q_inv, int64_t q_zp, const Stmt& before_y) {
  PrimExpr inv_r = F32Exact(1.0 / static_cast<double>(x.dims[1]));
  PrimExpr eps = F32Exact(epsilon);
  auto by_row = [](const TileView& v, bool sub) {
    return [v, sub](PrimExpr a, const std::vector<PrimExpr>& i) {
      return sub ? a - v.Load({i[0], I32(0)}) : a * v.Load({i[0], I32(0)});
    };
  };
  auto scalar = [](std::function<PrimExpr(PrimExpr)> f) {
    return [f](PrimExpr v, const std::vector<PrimExpr>&) { return f(v); };
  };
  std::vector<Stmt> c;
  if (skip)  // X + S: the Add the residual was
    c.push_back(
        MapTile(x, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v + e.Load(i); }));
  if (!rms) {
    c.push_back(ReduceTile(M, x, Red::kSum));
    c.push_back(MapTile(M, scalar([&](PrimExpr v) { return v * inv_r; })));
    c.push_back(MapTile(x, by_row(M, true)));
  }
  c.push_back(Nest(
      x.dims, [&](const std::vector<PrimExpr>& i) { return e.Store(x.Load(i) * x.Load(i), i); }));
  c.push_back(ReduceTile(V, e, Red::kSum));
  c.push_back(MapTile(V, scalar([&](PrimExpr v) { return v * inv_r; })));
  c.push_back(MapTile(V, scalar([&](PrimExpr v) { return v + eps; })));
  c.push_back(MapTile(V, scalar([](PrimExpr v) { return call("tir.sqrt", {v}); })));
  c.push_back(MapTile(V, scalar([](PrimExpr v) { return F32(1.0) / v; })));
  c.push_back(MapTile(x, by_row(V, false)));
  if (before_y.defined()) c.push_back(before_y);
  c.push_back(Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
    return y.Store(x.Load(i) * gamma.Load({i[1]}), i);
  }));
  if (beta.buf.defined())
    c.push_back(MapTile(
        y, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v + beta.Load({i[1]}); }));
  if (q.defined()) {  // (one tquant pass: y is stored as it is)
    NestFn nest = [&](const std::function<Stmt(const Array<PrimExpr>&)>& f) {
      return Nest(y.dims, [&](const std::vector<PrimExpr>& i) { return f(y.Idx(i)); });
    };
    TileView qv = MakeView(q, y.dims, "Qv");
    for (Stmt st : QuantiseSteps(qv.buf, y.buf, q_inv, q_zp, nest)) c.push_back(st);
  }
  return Seq(c);
}

/*!
 * \brief The chunks of R in steps of tr: chunk(r0, size, first) for the first full chunk,
 * a loop over the other full chunks, then the remainder.
 */
inline Stmt ForChunks(int64_t R, int64_t tr,
                      const std::function<Stmt(PrimExpr r0, int64_t size, bool first)>& chunk) {
  std::vector<Stmt> s;
  int64_t full = R / tr, rem = R % tr;
  if (full > 0) s.push_back(chunk(I32(0), tr, true));
  if (full > 1)
    s.push_back(
        Loop("rc", full - 1, [&](PrimExpr i) { return chunk((i + I32(1)) * I32(tr), tr, false); }));
  if (rem > 0) s.push_back(chunk(I32(full * tr), rem, full == 0));
  return Seq(s);
}

/*! \brief An axis in [-rank, rank) made non-negative; false when out of range. */
inline bool NormAxis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

inline int64_t Prod(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

}  // namespace rows

/*!
 * \brief The reduction `op` ("ReduceMean", ...) of call.inputs[0] as call.attrs say
 * (strategy_reduce.cc); the global poolings lower through it.
 */
PrimFunc LowerReduction(const OpCall& call, const std::string& op);

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_SRC_COMPILER_ROWS_UTIL_H_
