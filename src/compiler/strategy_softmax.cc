/*
 * src/compiler/strategy_softmax.cc — Softmax and LogSoftmax along one axis (opset 13
 * and later; before 13 the input is flattened to 2-D at `axis`, as ONNX did then), and
 * LpNormalization (p 1 or 2: x times the reciprocal of max(norm, FLT_MIN), so a zero
 * norm gives 0 like the reference), and Hardmax (1 at the first maximum: the maximum
 * and the first index holding it are folds, the selects front-end code).
 *
 * The input is seen as [A, R, B] with R the axis (rows_util.h). Numerically stable:
 * y = exp(x - max) / sum(exp(x - max)), log-softmax x - max - log(sum(...)). All of it
 * runs on the vector engine: tile.vec_redmax / vec_redsum fold R, the subtraction of
 * the row maximum is a tile.vec_sub with a broadcast source, then vec_exp, vec_recip
 * (vec_log) and vec_mul (vec_sub). When R fits one tile ([ta, R, tb] within 64 KiB)
 * the tile stays in L1 and is read from DDR once; otherwise R is walked in chunks
 * three times (maximum, sum, output). With `tc_y_scale` (int8 edges) Softmax stores
 * int8, quantised as its readers would on load (times f32(1 / scale), plus the zero
 * point, converted). Softmax and LogSoftmax over the last axis with rows enough for
 * several tiles per core pipeline their tiles (LowerSoftmaxPipelined).
 */
#include "kernel_util.h"
#include "matrix_precision.h"
#include "rows_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

using namespace rows;  // NOLINT(build/namespaces)

PrimExpr Math(const char* op, PrimExpr x) { return call(op, {x}); }

/*! \brief [A, R, B] of the op's input; false with the reason when the axis is bad. */
bool Geometry(const std::string& op, const Map<String, Any>& attrs, const std::vector<int64_t>& s,
              int64_t* A, int64_t* R, int64_t* B, std::string* why) {
  int64_t rank = static_cast<int64_t>(s.size());
  int64_t opset = AttrInt(attrs, "_opset", 13);
  bool legacy = opset > 0 && opset < 13 && op != "LpNormalization";
  int64_t axis = AttrInt(attrs, "axis", legacy ? 1 : -1);
  int64_t ax = 0;
  if (rank == 0 || !NormAxis(axis, rank, &ax)) {
    *why = op + ": axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank);
    return false;
  }
  *A = Prod(s, 0, ax);
  if (legacy) {
    *R = Prod(s, ax, s.size());
    *B = 1;
  } else {
    *R = s[ax];
    *B = Prod(s, ax + 1, s.size());
  }
  return true;
}

std::string CheckSoftmax(const std::string& op, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& ins) {
  if (ins.size() != 1 || !ins[0].defined()) return op + ": expects one input";
  std::string why = CheckDTypes(ins, {DataType::Float(32)}, op);
  if (!why.empty()) return why;
  int64_t A, R, B;
  if (!Geometry(op, attrs, Shape(ins[0]), &A, &R, &B, &why)) return why;
  int64_t p = AttrInt(attrs, "p", 2);
  if (op == "LpNormalization" && p != 1 && p != 2) return "LpNormalization: p must be 1 or 2";
  if (HasAttr(attrs, "tc_y_scale") && (op != "Softmax" || !(AttrFloat(attrs, "tc_y_scale", 0) > 0)))
    return op + ": an int8 output (tc_y_scale, positive) is Softmax's only";
  return "";
}

/*!
 * \brief Softmax or LogSoftmax over the last axis in tiles of `ta` whole rows, several per
 * core, software-pipelined in three stages over two slots: the load of tile i + 1, the
 * vector passes of tile i and the store of tile i - 1 overlap. Rows left over (A not a
 * multiple of ta) are one shorter tile after them, on the next core in turn. The passes
 * and their order are the resident form's, so the results are the same bit for bit.
 */
PrimFunc LowerSoftmaxPipelined(const OpCall& call, int64_t A, int64_t R, int64_t ta) {
  Params p = MakeParams(call);
  const bool log_sm = call.op_type == "LogSoftmax";
  const bool y_i8 = call.outputs[0]->dtype == DataType::Int(8);
  const double y_inv = InverseScale(AttrFloat(call.attrs, "tc_y_scale", 1.0));
  const int64_t y_zp = AttrInt(call.attrs, "tc_y_zero_point", 0);
  DataType f32 = DataType::Float(32);
  Buffer X = View(p.in[0], {A, R}, "X"), Y = View(p.out[0], {A, R}, "Y");
  int64_t rotation = 0;
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    Buffer Xs[2], Es[2], Qs[2], Ms[2], Ss[2];
    for (int s = 0; s < 2; ++s) {
      std::string k = std::to_string(s);
      Xs[s] = Local({ta * R}, f32, "Xt" + k), Es[s] = Local({ta * R}, f32, "Et" + k);
      Qs[s] = y_i8 ? Local({ta * R}, DataType::Int(8), "Qt" + k) : Es[s];
      Ms[s] = Local({ta}, f32, "M" + k), Ss[s] = Local({ta}, f32, "S" + k);
    }
    auto rows = [&](PrimExpr t) { return t * I32(ta); };
    auto load = [&](PrimExpr t, int64_t s) {  // (after the vector passes that read the slot)
      return Intrin("tile.dma_copy", {Region(Xs[s], {I32(0)}, {ta * R}),
                                      Region(X, {rows(t), I32(0)}, {ta, R}), I32(s)});
    };
    auto compute = [&](PrimExpr, int64_t s) {
      TileView x = MakeView(Xs[s], {ta, R, 1}, "Xv"), e = MakeView(Es[s], {ta, R, 1}, "Ev");
      TileView M = MakeView(Ms[s], {ta, 1}, "Mv"), S = MakeView(Ss[s], {ta, 1}, "Sv");
      // what the store reads is written once the slot's last store has left
      Stmt wait_store = Intrin("tile.wait", {I32(2 + s)});
      Buffer q = y_i8 ? MakeView(Qs[s], {ta, R, 1}, "Qv").buf : Buffer();
      return Seq(
          {Intrin("tile.wait", {I32(s)}), SoftmaxRows(x, e, M, S, log_sm, q, y_inv, y_zp,
                                                      y_i8 ? Stmt() : wait_store, wait_store)});
    };
    auto post = [&](PrimExpr t, int64_t s) {
      return Intrin("tile.dma_copy", {Region(Y, {rows(t), I32(0)}, {ta, R}),
                                      Region(Qs[s], {I32(0)}, {ta * R}), I32(2 + s)});
    };
    std::vector<Stmt> seq{
        ForEachItemThreeStage(core, call.cores, A / ta, &rotation, "t", load, compute, post),
        Intrin("tile.wait", {I32(2)}), Intrin("tile.wait", {I32(3)})};
    if (const int64_t rest = A % ta; rest > 0) {  // in slot 0, its stores drained
      const PrimExpr r0 = I32(A / ta * ta);
      seq.push_back(ForEachItem(core, call.cores, 1, &rotation, "t", [&](PrimExpr) {
        TileView x = MakeView(Xs[0], {rest, R, 1}, "Xr"), e = MakeView(Es[0], {rest, R, 1}, "Er");
        TileView M = MakeView(Ms[0], {rest, 1}, "Mr"), S = MakeView(Ss[0], {rest, 1}, "Sr");
        Buffer q = y_i8 ? MakeView(Qs[0], {rest, R, 1}, "Qr").buf : Buffer();
        return Seq({Intrin("tile.dma_copy", {Region(Xs[0], {I32(0)}, {rest * R}),
                                             Region(X, {r0, I32(0)}, {rest, R}), I32(0)}),
                    Intrin("tile.wait", {I32(0)}),
                    SoftmaxRows(x, e, M, S, log_sm, q, y_inv, y_zp, Stmt(), Stmt()),
                    Intrin("tile.dma_copy", {Region(Y, {r0, I32(0)}, {rest, R}),
                                             Region(Qs[0], {I32(0)}, {rest * R}), I32(2)}),
                    Intrin("tile.wait", {I32(2)})});
      }));
    }
    Stmt r = Seq(seq);
    for (int k = 0; k < 2; ++k) {
      r = Allocate(Xs[k], Allocate(Es[k], Allocate(Ms[k], Allocate(Ss[k], r))));
      if (y_i8) r = Allocate(Qs[k], r);
    }
    return r;
  });
  return MakeFunc(call, p, body);
}

/*! \brief The rows per tile of the pipelined Softmax (a divisor of A near what gives each core
 * four tiles, at least half of it, else that many and a shorter last tile: 4 x 199 rows have
 * no divisor near 20; each tile within a quarter of a bank of f32), or 0 when it does not
 * apply: an axis that is not the last, rows too long or too few. */
int64_t PipelinedSoftmaxRows(const OpCall& call, int64_t A, int64_t R, int64_t B) {
  if ((call.op_type != "Softmax" && call.op_type != "LogSoftmax") || B != 1) return 0;
  if (R <= 0 || R > kRowTile / 4 || A < 2 * call.cores) return 0;
  int64_t target = std::min<int64_t>((A + call.cores * 4 - 1) / (call.cores * 4), kRowTile / 4 / R);
  if (int64_t ta = PipelineRows(A, target)) return ta;
  return A / std::max<int64_t>(target, 1) >= 2 * call.cores ? target : 0;
}

PrimFunc LowerSoftmax(const OpCall& call) {
  Params p = MakeParams(call);
  bool log_sm = call.op_type == "LogSoftmax", lp = call.op_type == "LpNormalization";
  bool hard = call.op_type == "Hardmax";
  int64_t p_norm = AttrInt(call.attrs, "p", 2);
  int64_t A, R, B;
  std::string why;
  Geometry(call.op_type, call.attrs, Shape(call.inputs[0]), &A, &R, &B, &why);
  DataType f32 = DataType::Float(32);
  if (A * R * B == 0) return MakeFunc(call, p, Evaluate(I32(0)));
  if (int64_t ta = PipelinedSoftmaxRows(call, A, R, B))
    return LowerSoftmaxPipelined(call, A, R, ta);
  Buffer X = View(p.in[0], {A, R, B}, "X");
  Buffer Y = View(p.out[0], {A, R, B}, "Y");
  Tiles t = ChooseTiles(A, R, B, call.cores);
  bool resident = t.tr == R;
  // an int8 output (int8 edges): quantised as its readers would on load
  const bool y_i8 = call.outputs[0]->dtype == DataType::Int(8);
  const double y_inv = InverseScale(AttrFloat(call.attrs, "tc_y_scale", 1.0));
  const int64_t y_zp = AttrInt(call.attrs, "tc_y_zero_point", 0);
  Stmt body = ForTiles(call, A, B, t, [&](PrimExpr a0, int64_t ta, PrimExpr b0, int64_t tb) {
    Buffer Qa = y_i8 ? Local({ta * t.tr * tb}, DataType::Int(8), "Qt") : Buffer();
    Buffer Xa = Local({ta * t.tr * tb}, f32, "Xt");
    Buffer Ea = Local({ta * t.tr * tb}, f32, "Et");
    Buffer Ma = Local({ta * tb}, f32, "M");
    Buffer Sa = Local({ta * tb}, f32, "S");
    Buffer Pa = Local({ta * tb}, f32, "P");
    TileView M = MakeView(Ma, {ta, tb}, "Mv"), S = MakeView(Sa, {ta, tb}, "Sv"),
             P = MakeView(Pa, {ta, tb}, "Pv");
    auto xt = [&](int64_t n) { return MakeView(Xa, {ta, n, tb}, "Xv"); };
    auto et = [&](int64_t n) { return MakeView(Ea, {ta, n, tb}, "Ev"); };
    auto load = [&](PrimExpr r0, int64_t n) {
      return DmaWait(xt(n).All(), Region(X, {a0, r0, b0}, {ta, n, tb}), 0);
    };
    auto store = [&](PrimExpr r0, const TileView& from) {
      if (!y_i8) return DmaWait(Region(Y, {a0, r0, b0}, from.dims), from.All(), 1);
      TileView q = MakeView(Qa, from.dims, "Qv");
      NestFn nest = [&](const std::function<Stmt(const Array<PrimExpr>&)>& f) {
        return Nest(from.dims, [&](const std::vector<PrimExpr>& i) { return f(from.Idx(i)); });
      };
      std::vector<Stmt> st = QuantiseSteps(q.buf, from.buf, y_inv, y_zp, nest);
      st.push_back(DmaWait(Region(Y, {a0, r0, b0}, from.dims), q.All(), 1));
      return Seq(st);
    };
    auto minus = [&](const TileView& v) {  // x - v[a, b], v broadcast along r
      return [v](PrimExpr x, const std::vector<PrimExpr>& i) { return x - v.Load({i[0], i[2]}); };
    };
    auto times = [&](const TileView& v) {
      return [v](PrimExpr x, const std::vector<PrimExpr>& i) { return x * v.Load({i[0], i[2]}); };
    };
    auto fold = [&](const TileView& src, bool first, Red red, const TileView& into) {
      if (first) return ReduceTile(into, src, red);
      return Seq(
          {ReduceTile(P, src, red), MapTile(into, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
             return Combine(red, v, P.Load(i));
           })});
    };
    auto expo = [&](int64_t n) {  // Et = exp(Xt)
      TileView x = xt(n), e = et(n);
      return Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
        return e.Store(Math("tir.exp", x.Load(i)), i);
      });
    };
    auto recip = [](PrimExpr v, const std::vector<PrimExpr>&) { return F32(1.0) / v; };
    auto logf = [](PrimExpr v, const std::vector<PrimExpr>&) { return Math("tir.log", v); };
    std::vector<Stmt> s;
    if (hard) {
      // M = the maximum (vector engine); S = the first index holding it: the minimum of
      // (x == M ? r : R) (the select is front-end code, the fold vec_redmin); then the
      // one-hot row (front-end code)
      auto first_at = [&](PrimExpr r0, int64_t n) {
        TileView x = xt(n), e = et(n);
        return Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
          PrimExpr r = cast(f32, r0 + i[1]);
          return e.Store(
              select(eq(x.Load(i), M.Load({i[0], i[2]})), r, F32(static_cast<double>(R))), i);
        });
      };
      auto one_hot = [&](PrimExpr r0, int64_t n) {
        TileView x = xt(n);
        return Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
          return x.Store(select(eq(cast(f32, r0 + i[1]), S.Load({i[0], i[2]})), F32(1.0), F32(0.0)),
                         i);
        });
      };
      s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool first) {
        return Seq({load(r0, n), fold(xt(n), first, Red::kMax, M)});
      }));
      s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool first) {
        std::vector<Stmt> c;
        if (!resident) c.push_back(load(r0, n));
        c.push_back(first_at(r0, n));
        c.push_back(fold(et(n), first, Red::kMin, S));
        return Seq(c);
      }));
      s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool) {
        return Seq({one_hot(r0, n), store(r0, xt(n))});
      }));
    } else if (lp) {
      // Et = |x|^p (p = 1: max(x, -x)); S = its sum, the norm, at least FLT_MIN (x / 0 -> 0)
      auto contrib = [&](int64_t n) -> Stmt {
        TileView x = xt(n), e = et(n);
        if (p_norm == 2)
          return Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
            return e.Store(x.Load(i) * x.Load(i), i);
          });
        return Seq({Nest(x.dims,
                         [&](const std::vector<PrimExpr>& i) {
                           return e.Store(x.Load(i) * F32(-1.0), i);
                         }),
                    MapTile(e, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
                      return max(v, x.Load(i));
                    })});
      };
      s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool first) {
        return Seq({load(r0, n), contrib(n), fold(et(n), first, Red::kSum, S)});
      }));
      if (p_norm == 2)
        s.push_back(MapTile(
            S, [](PrimExpr v, const std::vector<PrimExpr>&) { return Math("tir.sqrt", v); }));
      s.push_back(MapTile(S, [](PrimExpr v, const std::vector<PrimExpr>&) {
        return max(v, F32(1.1754943508222875e-38));
      }));
      s.push_back(MapTile(S, recip));
      s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool) {
        std::vector<Stmt> c;
        if (!resident) c.push_back(load(r0, n));
        c.push_back(MapTile(xt(n), times(S)));
        c.push_back(store(r0, xt(n)));
        return Seq(c);
      }));
    } else if (resident) {
      s.push_back(load(I32(0), R));
      s.push_back(ReduceTile(M, xt(R), Red::kMax));
      s.push_back(MapTile(xt(R), minus(M)));
      s.push_back(expo(R));
      s.push_back(ReduceTile(S, et(R), Red::kSum));
      if (log_sm) {
        s.push_back(MapTile(S, logf));
        s.push_back(MapTile(xt(R), minus(S)));
        s.push_back(store(I32(0), xt(R)));
      } else {
        s.push_back(MapTile(S, recip));
        s.push_back(MapTile(et(R), times(S)));
        s.push_back(store(I32(0), et(R)));
      }
    } else {
      // pass 1: the maximum along R
      s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool first) {
        return Seq({load(r0, n), fold(xt(n), first, Red::kMax, M)});
      }));
      // pass 2: the sum of exp(x - max)
      s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool first) {
        return Seq(
            {load(r0, n), MapTile(xt(n), minus(M)), expo(n), fold(et(n), first, Red::kSum, S)});
      }));
      if (log_sm) {
        s.push_back(MapTile(S, logf));
        s.push_back(
            MapTile(M, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v + S.Load(i); }));
      } else {
        s.push_back(MapTile(S, recip));
      }
      // pass 3: the output
      s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool) {
        std::vector<Stmt> c{load(r0, n), MapTile(xt(n), minus(M))};
        if (log_sm) {
          c.push_back(store(r0, xt(n)));
        } else {
          c.push_back(expo(n));
          c.push_back(MapTile(et(n), times(S)));
          c.push_back(store(r0, et(n)));
        }
        return Seq(c);
      }));
    }
    Stmt r = Allocate(Xa, Allocate(Ea, Allocate(Ma, Allocate(Sa, Allocate(Pa, Seq(s))))));
    return y_i8 ? Allocate(Qa, r) : r;
  });
  return MakeFunc(call, p, body);
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax", "LpNormalization"}) {
    RegisterStrategy(op, Strategy{detail::CheckSoftmax, detail::LowerSoftmax,
                                  [](const OpCall&, int) { return std::string("onnx"); }});
  }
});

}  // namespace compiler
}  // namespace tilecore
