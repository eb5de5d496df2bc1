/*
 * src/compiler/strategy_reduce.cc — ReduceSum ReduceMean ReduceMax ReduceMin
 * ReduceProd ReduceSumSquare ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp (ArgMax and
 * ArgMin, with their int64 output, are in strategy_axis_scan.cc).
 *
 * Axes: the attribute `axes` when the attrs hold it (before opset 18, ReduceSum 13;
 * a compiler that knows a constant `axes` input may also put its value there), else
 * the `axes` input, which is not a param: its value follows from the output shape.
 * The check refuses an axes input whose value the shapes may not tell (keepdims=0
 * and two readings of the same output shape). No axes reduce everything, or with
 * noop_with_empty_axes (from the axes-input opset on) copy the input.
 *
 * The reduced dims (size-1 dims aside) form one or two groups: the input is
 * [K0, R0, K1, R1, K2] (one group: [1, 1, A, R, B], rows_util.h) and the output
 * [K0, K1, K2]. Each (k0, k1, k2) tile folds R1 in chunks, in a loop over R0 (or, when
 * R0 is the longer and the block K1 x R1 x K2 small, R0 first in tiles holding whole
 * blocks, then R1 in L1), with
 * tile.vec_redsum / redmax / redmin over the innermost loop (a strided view when
 * K2 > 1), partial results combined with an element-wise command; the squares, |x|,
 * the exp of LogSumExp (after a first pass for the maximum), the 1/R of the mean,
 * sqrt and log are vector commands too. The product has no vector form: front-end
 * code. An empty reduction writes the identity. float32; Max, Min, Sum and Prod
 * also int32 (an int32 sum wraps like ONNX, so it stays front-end code).
 *
 * A plain fold (Sum, Mean, Max, Min, LogSum) whose rows fit a tile ([1, 1, K1, R1, K2]: a
 * global pool) is also offered pipelined over two slots (PipelinedResident) and the cost
 * model keeps the faster (tc_reduce_pipeline overrides it); both give the same bits.
 *
 * An int8 input of ReduceMean, ReduceMax or ReduceMin, or of a GlobalAveragePool or
 * GlobalMaxPool (a value stored int8 with tc_x_scale / tc_x_zero_point: docs/precision.md,
 * "int8 between ops"), is loaded as it is, a quarter of the bytes, and converted to f32 in
 * L1 (a mean's rows too long for MatrixMean, pipelined: to int16, folded in runs of at most
 * 255 codes, the runs' sums then in f32); the mean, max or min of the codes is exact (sums
 * of at most 2^17 codes) and dequantised once per output, (v - zero point) x scale.
 */
#include <map>
#include <set>

#include "kernel_util.h"
#include "plan_choice.h"
#include "rows_util.h"
#include "tilecore/arch/params.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/functor.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

using namespace rows;  // NOLINT(build/namespaces)

PrimExpr Math(const char* op, PrimExpr x) { return call(op, {x}); }

bool IntAllowed(const std::string& op) {
  return op == "ReduceMax" || op == "ReduceMin" || op == "ReduceSum" || op == "ReduceProd";
}

/*! \brief What the attrs (and the presence of the axes input) say before the output is known. */
struct AxesSpec {
  bool from_input = false;  // the axes input is present and the attrs lack `axes`
  bool noop = false;
  std::vector<int64_t> axes;  // normalised, sorted; empty with !from_input && !noop: every axis
};

bool ReadAxes(const std::string& op, const Map<String, Any>& attrs,
              const std::vector<TensorSpec>& ins, AxesSpec* a, std::string* why) {
  int64_t rank = static_cast<int64_t>(ins[0]->shape.size());
  int64_t opset = AttrInt(attrs, "_opset", 18);
  int64_t input_opset = op == "ReduceSum" ? 13 : 18;
  std::vector<int64_t> raw;
  if (HasAttr(attrs, "axes")) {
    raw = AttrInts(attrs, "axes", {});
  } else if (ins.size() > 1 && ins[1].defined() && ins[1]->numel() > 0) {
    a->from_input = true;
    return true;
  }
  if (raw.empty()) {
    a->noop = AttrInt(attrs, "noop_with_empty_axes", 0) != 0 && opset >= input_opset;
    for (int64_t d = 0; d < rank; ++d) a->axes.push_back(d);
    return true;
  }
  std::set<int64_t> seen;
  for (int64_t x : raw) {
    int64_t n;
    if (!NormAxis(x, rank, &n) || (rank == 0 && x != 0 && x != -1)) {
      *why = op + ": axis " + std::to_string(x) + " out of range for rank " + std::to_string(rank);
      return false;
    }
    if (!seen.insert(n).second) {
      *why = op + ": axes repeat axis " + std::to_string(x);
      return false;
    }
  }
  a->axes.assign(seen.begin(), seen.end());
  return true;
}

/*! \brief The axes an output shape implies; false with the reason when none or several fit. */
bool AxesFromOutput(const std::string& op, const std::vector<int64_t>& in,
                    const std::vector<int64_t>& out, bool keepdims, std::vector<int64_t>* axes,
                    std::string* why) {
  size_t r = in.size();
  std::set<std::vector<int64_t>> effective;  // the reduced dims of size > 1, per reading
  if (keepdims) {
    if (out.size() != r) {
      *why = op + ": output rank " + std::to_string(out.size()) +
             " with keepdims=1 and input rank " + std::to_string(r);
      return false;
    }
    std::vector<int64_t> e;
    for (size_t d = 0; d < r; ++d) {
      if (out[d] == in[d]) continue;
      if (out[d] != 1) {
        *why = op + ": output shape does not follow from the input shape";
        return false;
      }
      e.push_back(static_cast<int64_t>(d));
    }
    *axes = e;
    return true;
  }
  if (out.size() > r || r > 16) {
    *why = op + ": output rank " + std::to_string(out.size()) + " does not fit input rank " +
           std::to_string(r);
    return false;
  }
  size_t k = r - out.size();
  for (uint32_t m = 0; m < (1u << r); ++m) {
    if (static_cast<size_t>(__builtin_popcount(m)) != k) continue;
    std::vector<int64_t> kept, e;
    for (size_t d = 0; d < r; ++d) {
      if (m & (1u << d)) {
        if (in[d] != 1) e.push_back(static_cast<int64_t>(d));
      } else {
        kept.push_back(in[d]);
      }
    }
    if (kept == out) effective.insert(e);
  }
  if (effective.size() != 1) {
    *why =
        op + (effective.empty()
                  ? ": output shape does not follow from the input shape"
                  : ": the output shape leaves the reduced axes ambiguous; give the constant axes "
                    "as the attribute `axes`");
    return false;
  }
  *axes = *effective.begin();
  return true;
}

/*!
 * \brief The input as [K0, R0, K1, R1, K2]: kept and reduced dims merged (size-1
 * dims aside), at most two reduced groups. One group is [1, 1, A, R, B].
 */
struct Groups {
  int64_t K0 = 1, R0 = 1, K1 = 1, R1 = 1, K2 = 1;
  int64_t R() const { return R0 * R1; }
  int64_t Kept() const { return K0 * K1 * K2; }
};

bool Merge(const std::string& op, const std::vector<int64_t>& in, const std::vector<int64_t>& axes,
           Groups* g, std::string* why) {
  std::set<int64_t> red(axes.begin(), axes.end());
  std::vector<std::pair<bool, int64_t>> runs;  // (reduced, extent)
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    bool r = red.count(static_cast<int64_t>(d)) != 0;
    if (!runs.empty() && runs.back().first == r)
      runs.back().second *= in[d];
    else
      runs.push_back({r, in[d]});
  }
  int nred = 0;
  for (auto& x : runs) nred += x.first;
  if (nred > 2) {
    *why =
        op + ": the reduced axes form more than two separate groups (after dropping size-1 dims)";
    return false;
  }
  *g = Groups();
  std::vector<int64_t*> slots;  // where the runs go, in order
  if (nred == 2)
    slots = {&g->K0, &g->R0, &g->K1, &g->R1, &g->K2};
  else
    slots = {&g->K1, &g->R1, &g->K2};
  size_t k = 0;
  for (auto& x : runs) {
    // advance to the next slot of the run's kind (kept slots are even, reduced odd)
    while (k < slots.size() && (k % 2 == 1) != x.first) ++k;
    *slots[k] *= x.second;
    ++k;
  }
  return true;
}

/*! \brief With the axes an input, can every axes value of that length be lowered? */
std::string CheckAxesInput(const std::string& op, const std::vector<int64_t>& in, int64_t k,
                           bool keepdims) {
  size_t r = in.size();
  if (r > 16) return op + ": rank above 16";
  std::map<std::vector<int64_t>, std::set<std::vector<int64_t>>>
      readings;  // kept shape -> effective axes
  for (uint32_t m = 0; m < (1u << r); ++m) {
    if (__builtin_popcount(m) != k) continue;
    std::vector<int64_t> kept, e;
    for (size_t d = 0; d < r; ++d) {
      if (m & (1u << d)) {
        if (in[d] != 1) e.push_back(static_cast<int64_t>(d));
        if (keepdims) kept.push_back(1);
      } else {
        kept.push_back(in[d]);
      }
    }
    Groups g;
    std::string why;
    if (!Merge(op, in, e, &g, &why)) return why + " for some value of the axes input";
    readings[kept].insert(e);
  }
  for (auto& [shape, sets] : readings) {
    if (sets.size() > 1 && !keepdims)
      return op +
             ": with keepdims=0 the shapes leave the axes input ambiguous; its value is needed as "
             "the "
             "attribute `axes`";
  }
  return "";
}

std::string CheckReduce(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& ins) {
  if (ins.empty() || ins.size() > 2 || !ins[0].defined())
    return op + ": expects data and optional axes";
  std::vector<DataType> ok{DataType::Float(32)};
  if (IntAllowed(op)) ok.push_back(DataType::Int(32));
  // the mean, max or min of an int8 value's codes, dequantised (its code in tc_x_scale)
  const bool codes = op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin";
  if (codes) ok.push_back(DataType::Int(8));
  std::string why = CheckDTypes({ins[0]}, ok, op);
  if (!why.empty()) return why;
  const bool x_i8 = ins[0]->dtype == DataType::Int(8);  // (a code op's: the dtypes above)
  if (codes) {
    why = CheckInt8Input(attrs, ins[0], op);
    if (!why.empty()) return why;
  }
  if (ins.size() > 1 && ins[1].defined() && ins[1]->shape.size() != 1)
    return op + ": axes must be 1-D";
  AxesSpec a;
  if (!ReadAxes(op, attrs, ins, &a, &why)) return why;
  Groups g;
  if (a.from_input)
    return CheckAxesInput(op, Shape(ins[0]), ins[1]->numel(), AttrInt(attrs, "keepdims", 1) != 0);
  if (!a.noop && !Merge(op, Shape(ins[0]), a.axes, &g, &why)) return why;
  if (x_i8 && a.noop) return op + ": an int8 input needs axes to reduce";
  return "";
}

/*! \brief The value of a reduction over nothing (ONNX: the identity; the mean: NaN). */
PrimExpr EmptyValue(const std::string& op, DataType t) {
  if (op == "ReduceProd") return make_const(t, 1);
  if (op == "ReduceMax" || op == "ReduceLogSum" || op == "ReduceLogSumExp")
    return Identity(Red::kMax, t);
  if (op == "ReduceMin") return Identity(Red::kMin, t);
  if (op == "ReduceMean") return FloatImm(t, NAN);
  return make_zero(t);
}

/*!
 * \brief Two groups with a long outer one: fold R0 in tiles of [K0, R0, K1 x R1 x K2]
 * (the whole inner block a row), then R1 of the partial result in L1.
 */
Stmt OuterFirst(const OpCall& call, const Params& p, const Groups& g, Red red, bool square,
                bool absolute,
                const std::function<void(std::vector<Stmt>*, const TileView&)>& post) {
  DataType t = call.inputs[0]->dtype;
  int64_t inner = g.K1 * g.R1 * g.K2;
  Tiles tl;
  tl.tb = inner;
  tl.tr = std::max<int64_t>(1, std::min(g.R0, kRowTile / inner));
  tl.ta = std::max<int64_t>(1, std::min(g.K0, kRowTile / (tl.tr * inner)));
  tl.ta = std::min(tl.ta, std::max<int64_t>(1, (g.K0 + call.cores - 1) / call.cores));
  Buffer X = View(p.in[0], {g.K0, g.R0, inner}, "X");
  Buffer Y = View(p.out[0], {g.K0, g.K1 * g.K2}, "Y");
  return ForTiles(call, g.K0, inner, tl, [&](PrimExpr a0, int64_t ta, PrimExpr, int64_t) {
    Buffer Xa = Local({ta * tl.tr * inner}, t, "Xt"), Ea = Local({ta * tl.tr * inner}, t, "Et");
    Buffer Qa = Local({ta * inner}, t, "Q"), Pa = Local({ta * inner}, t, "P"),
           Sa = Local({ta * g.K1 * g.K2}, t, "S");
    TileView Q = MakeView(Qa, {ta, inner}, "Qv"), P = MakeView(Pa, {ta, inner}, "Pv");
    TileView S = MakeView(Sa, {ta * g.K1, g.K2}, "Sv");
    std::vector<Stmt> s;
    s.push_back(ForChunks(g.R0, tl.tr, [&](PrimExpr r0, int64_t n, bool first) {
      TileView x = MakeView(Xa, {ta, n, inner}, "Xv"), e = MakeView(Ea, {ta, n, inner}, "Ev");
      std::vector<Stmt> c{DmaWait(x.All(), Region(X, {a0, r0, I32(0)}, {ta, n, inner}), 0)};
      if (square)
        c.push_back(MapTile(x, [](PrimExpr v, const std::vector<PrimExpr>&) { return v * v; }));
      if (absolute) {
        c.push_back(Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
          return e.Store(x.Load(i) * F32(-1.0), i);
        }));
        c.push_back(MapTile(
            x, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return max(v, e.Load(i)); }));
      }
      if (first) {
        c.push_back(ReduceTile(Q, x, red));
      } else {
        c.push_back(ReduceTile(P, x, red));
        c.push_back(MapTile(Q, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
          return Combine(red, v, P.Load(i));
        }));
      }
      return Seq(c);
    }));
    s.push_back(ReduceTile(S, MakeView(Qa, {ta * g.K1, g.R1, g.K2}, "Q3"), red));
    post(&s, S);
    s.push_back(DmaWait(Region(Y, {a0, I32(0)}, {ta, g.K1 * g.K2}),
                        MakeView(Sa, {ta, g.K1 * g.K2}, "S2").All(), 1));
    return Allocate(Xa, Allocate(Ea, Allocate(Qa, Allocate(Pa, Allocate(Sa, Seq(s))))));
  });
}

/*! \brief `s` with every loop carrying `tile_no_overflow` = `why` (BoundedNest's, for a
 * nest built by ReduceTile). */
Stmt MarkedNoOverflow(const Stmt& s, const std::string& why) {
  struct Mark : public ir::IRMutator {
    String why;
    Stmt VisitStmt_(const ForNode* op) override {
      Stmt body = VisitStmt(op->body);
      Map<String, Any> ann = op->annotations;
      ann.Set(String("tile_no_overflow"), why);
      return For(op->loop_var, op->min, op->extent, op->kind, body, ann, op->span);
    }
  } mark;
  mark.why = String(why);
  return mark.VisitStmt(s);
}

/*! \brief The most int8 codes an int16 sum holds exactly (128 x 255 = 32,640). */
constexpr int64_t kI16SumCodes = 255;
/*! \brief The shortest run PipelinedResident folds in int16 (shorter ones leave the f32 fold
 * of the runs' sums as long as the conversion it saves). */
constexpr int64_t kI16SumMinRun = 32;

/*!
 * \brief The tiles of a reduction whose reduced extent fits one tile ([1, 1, K1, R1, K2]:
 * a global pool's channels, each a row of H x W) software-pipelined over two slots: the load
 * of tile i + 1 is issued before tile i is folded, and its store is left running, where the
 * plain plan waits for every load and store. Smaller tiles than the plain plan's (at least
 * four per core where the rows allow), so that there is something to overlap. Each output
 * folds the same row in the same order as in the plain plan: the same bits.
 */
Stmt PipelinedResident(const OpCall& call, const Params& p, const Groups& g, Red red,
                       const std::function<void(std::vector<Stmt>*, const TileView&)>& post) {
  const DataType xt = call.inputs[0]->dtype;
  const bool x_i8 = xt == DataType::Int(8);
  const DataType t = x_i8 ? DataType::Float(32) : xt;
  Tiles tl = ChooseTiles(g.K1, g.R1, g.K2, call.cores);
  tl.ta = std::max<int64_t>(1, std::min(tl.ta, (g.K1 + call.cores * 4 - 1) / (call.cores * 4)));
  Buffer X = View(p.in[0], {g.K1, g.R1, g.K2}, "X");
  Buffer Y = View(p.out[0], {g.K1, g.K2}, "Y");
  // A sum of int8 rows (tb 1) longer than the matrix engine's plan takes (MatrixMean) folds
  // runs of `run` codes in int16, exact (at most kI16SumCodes of them), then the runs' sums
  // in f32, exact too (integers below 2^24): the same bits as converting every code to f32,
  // at half the vector engine's work (i16 lanes are twice f32's). `run` is the longest such
  // run that divides the row. (Shorter rows: the two more commands' latencies outweigh it in
  // a layer group, MobileNetV3-Small's 14 x 14 pools 140 cycles each.)
  int64_t run = 0;
  if (x_i8 && red == Red::kSum && g.K2 == 1 && g.R1 > int64_t{arch::tc1::kMaxMmDim})
    for (int64_t b = std::min<int64_t>(g.R1, kI16SumCodes); b >= kI16SumMinRun && run == 0; --b)
      if (g.R1 % b == 0 && g.R1 / b > 1) run = b;
  const int64_t runs = run > 0 ? g.R1 / run : 0;
  int64_t rotation = 0;
  return OverCores(call.cores, [&](PrimExpr core) {
    // the slots hold the loaded type; an int8 tile is converted into Xf before its fold (or
    // into Xh, its runs folded into Ph and those into Pf)
    Buffer Xs[2] = {Local({tl.ta * g.R1 * tl.tb}, xt, "Xt0"),
                    Local({tl.ta * g.R1 * tl.tb}, xt, "Xt1")};
    const DataType i16 = DataType::Int(16);
    Buffer Xf = x_i8 && run == 0 ? Local({tl.ta * g.R1 * tl.tb}, t, "Xf") : Buffer();
    Buffer Xh = run > 0 ? Local({tl.ta * g.R1}, i16, "Xh") : Buffer();
    Buffer Ph = run > 0 ? Local({tl.ta * runs}, i16, "Ph") : Buffer();
    Buffer Pf = run > 0 ? Local({tl.ta * runs}, t, "Pf") : Buffer();
    Buffer Ss[2] = {Local({tl.ta * tl.tb}, t, "S0"), Local({tl.ta * tl.tb}, t, "S1")};
    std::vector<Stmt> groups;
    for (const Seg& sa : Segs(g.K1, tl.ta)) {
      for (const Seg& sb : Segs(g.K2, tl.tb)) {
        const int64_t ta = sa.size, tb = sb.size;
        auto origin = [&](PrimExpr it) {
          PrimExpr ai = sb.count == 1 ? it : floordiv(it, I32(sb.count));
          PrimExpr bi = sb.count == 1 ? I32(0) : floormod(it, I32(sb.count));
          return std::make_pair(I32(sa.base) + ai * I32(tl.ta), I32(sb.base) + bi * I32(tl.tb));
        };
        auto front = [&](PrimExpr it, int64_t slot) {
          auto [a0, b0] = origin(it);
          TileView x = MakeView(Xs[slot], {ta, g.R1, tb}, "Xv");
          return Seq({Intrin("tile.wait", {I32(2 + slot)}),  // the slot's last store has left
                      Intrin("tile.dma_copy",
                             {x.All(), Region(X, {a0, I32(0), b0}, {ta, g.R1, tb}), I32(slot)})});
        };
        auto back = [&](PrimExpr it, int64_t slot) {
          auto [a0, b0] = origin(it);
          TileView x = MakeView(Xs[slot], {ta, g.R1, tb}, "Xv"),
                   S = MakeView(Ss[slot], {ta, tb}, "Sv");
          std::vector<Stmt> s{Intrin("tile.wait", {I32(slot)})};
          if (run > 0) {
            TileView h = MakeView(Xh, {ta, g.R1, 1}, "Xhv");
            s.push_back(Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
              return h.Store(Cast(i16, x.Load(i)), i);
            }));
            TileView runs_h = MakeView(Xh, {ta * runs, run, 1}, "Xhr");
            TileView ph = MakeView(Ph, {ta * runs, 1}, "Phv"),
                     pf = MakeView(Pf, {ta * runs, 1}, "Pfv");
            // (each run's sum is at most 255 x 128 in magnitude: the engine's saturating
            // adds and the IR's wrapping ones agree)
            s.push_back(MarkedNoOverflow(ReduceTile(ph, runs_h, red),
                                         "a run of at most 255 int8 codes summed in int16"));
            s.push_back(Nest(ph.dims, [&](const std::vector<PrimExpr>& i) {
              return pf.Store(Cast(t, ph.Load(i)), i);
            }));
            x = MakeView(Pf, {ta, runs, 1}, "Pfr");
          } else if (x_i8) {
            TileView f = MakeView(Xf, {ta, g.R1, tb}, "Xfv");
            s.push_back(Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
              return f.Store(Cast(t, x.Load(i)), i);
            }));
            x = f;
          }
          s.push_back(ReduceTile(S, x, red));
          post(&s, S);
          s.push_back(
              Intrin("tile.dma_copy", {Region(Y, {a0, b0}, {ta, tb}), S.All(), I32(2 + slot)}));
          return Seq(s);
        };
        groups.push_back(ForEachItemPipelined(core, call.cores, sa.count * sb.count, &rotation, "t",
                                              front, back));
      }
    }
    groups.push_back(Intrin("tile.wait", {I32(2)}));
    groups.push_back(Intrin("tile.wait", {I32(3)}));
    Stmt body = Seq(groups);
    if (run > 0)
      for (const Buffer& b : {Pf, Ph, Xh}) body = Allocate(b, body);
    else if (x_i8)
      body = Allocate(Xf, body);
    for (const Buffer& b : {Ss[1], Ss[0], Xs[1], Xs[0]}) body = Allocate(b, body);
    return body;
  });
}

/*!
 * \brief The mean of an int8 value's codes over each row of [K1, R1] (a global average
 * pool's channels, each a row of H x W) on the matrix engine: a tile of ta rows times a
 * column of R1 ones, its epilogue adding -R1 x zero point to the int32 sum and scaling by
 * f32(scale / R1), the mean in the input's units. Per code a sixty-fourth of a cycle,
 * where the vector engine's conversion and fold take two; the vector engine is left free.
 * Tiles of `rows` rows (at most kMatrixMeanTile codes), pipelined over two slots
 * (PipelinedResident's). The same bits as the vector
 * plans: the exact sum less R1 x zero point, rounded once to f32, times the same scale.
 */
/*! \brief The int8 codes of one tile of MatrixMean (two slots of them in L1). */
constexpr int64_t kMatrixMeanTile = int64_t{128} << 10;

/*! \brief MatrixMean's rows a tile: about four tiles a core, within kMatrixMeanTile codes. */
int64_t MatrixMeanRows(const OpCall& call, const Groups& g) {
  const int64_t rows = (g.K1 + call.cores * 4 - 1) / (call.cores * 4);
  return std::max<int64_t>(1, std::min(rows, kMatrixMeanTile / g.R1));
}

Stmt MatrixMean(const OpCall& call, const Params& p, const Groups& g, double mean_scale,
                int64_t zero_point, int64_t rows) {
  const DataType i8 = DataType::Int(8), i32 = DataType::Int(32), f32 = DataType::Float(32);
  const int64_t R = g.R1;
  const int64_t cap = std::max<int64_t>(1, kMatrixMeanTile / R);
  int64_t ta = std::max<int64_t>(1, std::min(rows, cap));
  Buffer X = View(p.in[0], {g.K1, R}, "X");
  Buffer Y = View(p.out[0], {g.K1, 1}, "Y");
  const double big = 3.0e38;
  int64_t rotation = 0;
  return OverCores(call.cores, [&](PrimExpr core) {
    Buffer Xs[2] = {Local({ta, R}, i8, "Xc0"), Local({ta, R}, i8, "Xc1")};
    Buffer Ss[2] = {Local({ta, 1}, f32, "M0"), Local({ta, 1}, f32, "M1")};
    Buffer Ones = Local({R, 1}, i8, "Ones"), Bias = Local({1, 1}, i32, "Bias");
    std::vector<Stmt> groups{
        Intrin("tile.dma_fill", {Region(Ones, {I32(0), I32(0)}, {R, 1}), F32(1.0), I32(4)}),
        Intrin("tile.dma_fill", {Region(Bias, {I32(0), I32(0)}, {1, 1}),
                                 F32(static_cast<double>(-R * zero_point)), I32(4)}),
        Intrin("tile.wait", {I32(4)})};
    for (const Seg& sa : Segs(g.K1, ta)) {
      const int64_t n = sa.size;
      auto front = [&, sa](PrimExpr it, int64_t slot) {
        PrimExpr a0 = I32(sa.base) + it * I32(ta);
        return Seq({Intrin("tile.wait", {I32(2 + slot)}),  // the slot's last store has left
                    Intrin("tile.dma_copy", {Region(Xs[slot], {I32(0), I32(0)}, {n, R}),
                                             Region(X, {a0, I32(0)}, {n, R}), I32(slot)})});
      };
      auto back = [&, sa](PrimExpr it, int64_t slot) {
        PrimExpr a0 = I32(sa.base) + it * I32(ta);
        return Seq(
            {Intrin("tile.wait", {I32(slot)}),
             Intrin("tile.mm", {Region(Ss[slot], {I32(0), I32(0)}, {n, 1}),
                                Region(Xs[slot], {I32(0), I32(0)}, {n, R}),
                                Region(Ones, {I32(0), I32(0)}, {R, 1}), IntImm(DataType::Bool(), 0),
                                Region(Bias, {I32(0), I32(0)}, {1, 1}), F32(mean_scale), I32(0),
                                I32(0), StringImm("none"), F32(-big), F32(big)}),
             Intrin("tile.dma_copy", {Region(Y, {a0, I32(0)}, {n, 1}),
                                      Region(Ss[slot], {I32(0), I32(0)}, {n, 1}), I32(2 + slot)})});
      };
      groups.push_back(
          ForEachItemPipelined(core, call.cores, sa.count, &rotation, "t", front, back));
    }
    groups.push_back(Intrin("tile.wait", {I32(2)}));
    groups.push_back(Intrin("tile.wait", {I32(3)}));
    Stmt body = Seq(groups);
    for (const Buffer& b : {Bias, Ones, Ss[1], Ss[0], Xs[1], Xs[0]}) body = Allocate(b, body);
    return body;
  });
}

}  // namespace

PrimFunc LowerReduction(const OpCall& call, const std::string& op) {
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  // an int8 input: loaded as it is, converted in L1, the result dequantised (header)
  const bool x_i8 = call.inputs[0]->dtype == DataType::Int(8);
  const DataType t = x_i8 ? DataType::Float(32) : call.inputs[0]->dtype;
  const double x_scale = AttrFloat(call.attrs, "tc_x_scale", 1.0);
  const int64_t x_zero_point = AttrInt(call.attrs, "tc_x_zero_point", 0);
  AxesSpec a;
  std::string why;
  ReadAxes(op, call.attrs, call.inputs, &a, &why);
  bool keep = AttrInt(call.attrs, "keepdims", 1) != 0;
  if (a.from_input && !AxesFromOutput(op, in, out, keep, &a.axes, &why))
    TILECORE_THROW(ValueError) << "LowerOp(" << op << "): " << why;
  Groups g;
  g.K1 = Numel(in);
  if (!a.noop && !Merge(op, in, a.axes, &g, &why))
    TILECORE_THROW(ValueError) << "LowerOp(" << op << "): " << why;
  if (!a.noop) {
    // a zero-size dim among the reduced ones: Merge kept it in a group; recount
    for (int64_t x : a.axes)
      if (x < static_cast<int64_t>(in.size()) && in[x] == 0) g.R1 = 0;
  }
  int64_t kept = a.noop ? Numel(in) : Numel(out);
  if (g.R() != 0 && Numel(out) != g.Kept())
    TILECORE_THROW(ValueError) << "LowerOp(" << op << "): output of " << Numel(out)
                               << " elements, expected " << g.Kept();
  if (kept == 0) return MakeFunc(call, p, Evaluate(I32(0)));
  if (g.R() == 0) {  // an empty reduction: the identity everywhere, by core 0
    Buffer Y = View(p.out[0], {kept}, "Y");
    Stmt fill =
        Seq({Intrin("tile.dma_fill", {Region(Y, {I32(0)}, {kept}), EmptyValue(op, t), I32(1)}),
             Intrin("tile.wait", {I32(1)})});
    return MakeFunc(call, p, OverCores(call.cores, [&](PrimExpr core) {
                      return IfThenElse(eq(core, I32(0)), fill);
                    }));
  }
  int64_t R = g.R();
  Buffer X = View(p.in[0], {g.K0, g.R0, g.K1, g.R1, g.K2}, "X");
  Buffer Y = View(p.out[0], {g.K0, g.K1, g.K2}, "Y");
  Red red = Red::kSum;
  if (op == "ReduceMax") red = Red::kMax;
  if (op == "ReduceMin") red = Red::kMin;
  if (op == "ReduceProd") red = Red::kProd;
  bool square = op == "ReduceSumSquare" || op == "ReduceL2", absolute = op == "ReduceL1",
       lse = op == "ReduceLogSumExp";
  if (a.noop) red = Red::kSum, square = absolute = lse = false;
  // the codes' mean or max in the input's units: (v - zero point) x scale, a vector command
  // each
  // (a mean: of the sum, less R x zero point, times f32(scale / R), as MatrixMean's epilogue)
  const double mean_scale = static_cast<float>(x_scale / static_cast<double>(g.R()));
  auto dequantise_steps = [&](const std::function<void(std::function<PrimExpr(PrimExpr)>)>& post) {
    if (op == "ReduceMean") {
      if (x_zero_point != 0)
        post([z = x_zero_point * g.R()](PrimExpr v) { return v - F32(static_cast<double>(z)); });
      post([s = mean_scale](PrimExpr v) { return v * F32(s); });
      return;
    }
    if (x_zero_point != 0)
      post([z = x_zero_point](PrimExpr v) { return v - F32(static_cast<double>(z)); });
    post([s = static_cast<float>(x_scale)](PrimExpr v) { return v * F32(s); });
  };
  auto post_ops = [&](std::vector<Stmt>* s, const TileView& S) {
    auto post = [&](std::function<PrimExpr(PrimExpr)> f) {
      s->push_back(MapTile(S, [f](PrimExpr v, const std::vector<PrimExpr>&) { return f(v); }));
    };
    if (a.noop) return;
    if (op == "ReduceMean" && !x_i8)
      post([R](PrimExpr v) { return v * F32Exact(1.0 / static_cast<double>(R)); });
    if (op == "ReduceL2") post([](PrimExpr v) { return Math("tir.sqrt", v); });
    if (op == "ReduceLogSum") post([](PrimExpr v) { return Math("tir.log", v); });
    if (x_i8) dequantise_steps(post);
  };
  // a long outer group and a small inner block: fold the outer group in tiles first (a
  // loop over R0 would move one small tile per step); LogSumExp keeps the loop
  if (g.R0 > g.R1 && !lse && !x_i8 && g.K1 * g.R1 * g.K2 * 4 <= kRowTile)
    return MakeFunc(call, p, OuterFirst(call, p, g, red, square, absolute, post_ops));
  Tiles tl = ChooseTiles(g.K1, g.R1, g.K2, std::max<int64_t>(1, call.cores / g.K0));
  bool resident = tl.tr == g.R1 && g.R0 == 1;
  // a plain fold of rows that fit a tile: the pipelined plan too, the faster kept
  const bool plain = !a.noop && !square && !absolute && !lse && red != Red::kProd;
  // (tc_reduce_pipeline 0 or 1 overrides the cost model: never pipelined, or pipelined)
  const int64_t want = AttrInt(call.attrs, "tc_reduce_pipeline", -1);
  std::optional<PrimFunc> pipelined;
  if (resident && plain && g.K0 == 1 && want != 0)
    pipelined = MakeFunc(call, p, PipelinedResident(call, p, g, red, post_ops));
  if (pipelined && want == 1) return *pipelined;
  Stmt body = ForTiles(
      call, g.K0 * g.K1, g.K2, tl, g.K1,
      [&](PrimExpr k0, PrimExpr a0, int64_t ta, PrimExpr b0, int64_t tb) {
        Buffer Xa = Local({ta * tl.tr * tb}, t, "Xt");
        Buffer X8 = x_i8 ? Local({ta * tl.tr * tb}, DataType::Int(8), "Xq") : Buffer();
        Buffer Ea = Local({ta * tl.tr * tb}, t, "Et");
        Buffer Sa = Local({ta * tb}, t, "S");
        Buffer Ma = Local({ta * tb}, t, "M");
        Buffer Pa = Local({ta * tb}, t, "P");
        TileView S = MakeView(Sa, {ta, tb}, "Sv"), M = MakeView(Ma, {ta, tb}, "Mv"),
                 P = MakeView(Pa, {ta, tb}, "Pv");
        auto xt = [&](int64_t n) { return MakeView(Xa, {ta, n, tb}, "Xv"); };
        auto et = [&](int64_t n) { return MakeView(Ea, {ta, n, tb}, "Ev"); };
        auto load = [&](PrimExpr r0, PrimExpr c0, int64_t n) {
          const BufferRegion from = Region(X, {k0, r0, a0, c0, b0}, {1, 1, ta, n, tb});
          if (!x_i8) return DmaWait(xt(n).All(), from, 0);
          TileView q = MakeView(X8, {ta, n, tb}, "Xqv"), f = xt(n);
          return Seq({DmaWait(q.All(), from, 0), Nest(q.dims, [&](const std::vector<PrimExpr>& i) {
                        return f.Store(Cast(t, q.Load(i)), i);
                      })});
        };
        // every chunk of the reduced extent: R0 (a loop) times the chunks of R1
        auto over_r =
            [&](const std::function<Stmt(PrimExpr r0, PrimExpr c0, int64_t n, bool first)>& fn) {
              Stmt head = ForChunks(g.R1, tl.tr, [&](PrimExpr c0, int64_t n, bool first) {
                return fn(I32(0), c0, n, first);
              });
              if (g.R0 == 1) return head;
              return Seq({head, Loop("r0", g.R0 - 1, [&](PrimExpr i) {
                            return ForChunks(g.R1, tl.tr, [&](PrimExpr c0, int64_t n, bool) {
                              return fn(i + I32(1), c0, n, false);
                            });
                          })});
            };
        auto fold = [&](const TileView& src, bool first, Red r, const TileView& into) {
          if (first) return ReduceTile(into, src, r);
          return Seq({ReduceTile(P, src, r),
                      MapTile(into, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
                        return Combine(r, v, P.Load(i));
                      })});
        };
        // what each element contributes, in place in Xt
        auto pre = [&](int64_t n) -> Stmt {
          TileView x = xt(n), e = et(n);
          if (square)
            return MapTile(x, [](PrimExpr v, const std::vector<PrimExpr>&) { return v * v; });
          if (absolute) {
            return Seq({Nest(x.dims,
                             [&](const std::vector<PrimExpr>& i) {
                               return e.Store(x.Load(i) * F32(-1.0), i);
                             }),
                        MapTile(x, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
                          return max(v, e.Load(i));
                        })});
          }
          if (lse) {
            return Seq({MapTile(x,
                                [&](PrimExpr v, const std::vector<PrimExpr>& i) {
                                  return v - M.Load({i[0], i[2]});
                                }),
                        MapTile(x, [](PrimExpr v, const std::vector<PrimExpr>&) {
                          return Math("tir.exp", v);
                        })});
          }
          return Stmt();
        };
        std::vector<Stmt> s;
        if (lse && !resident) {
          s.push_back(over_r([&](PrimExpr r0, PrimExpr c0, int64_t n, bool first) {
            return Seq({load(r0, c0, n), fold(xt(n), first, Red::kMax, M)});
          }));
        }
        s.push_back(over_r([&](PrimExpr r0, PrimExpr c0, int64_t n, bool first) {
          std::vector<Stmt> c{load(r0, c0, n)};
          if (lse && resident) c.push_back(ReduceTile(M, xt(n), Red::kMax));
          c.push_back(pre(n));
          c.push_back(fold(xt(n), first, red, S));
          return Seq(c);
        }));
        auto post = [&](std::function<PrimExpr(PrimExpr)> f) {
          s.push_back(MapTile(S, [f](PrimExpr v, const std::vector<PrimExpr>&) { return f(v); }));
        };
        if (!a.noop) {
          if (op == "ReduceMean" && !x_i8)
            post([R](PrimExpr v) { return v * F32Exact(1.0 / static_cast<double>(R)); });
          if (op == "ReduceL2") post([](PrimExpr v) { return Math("tir.sqrt", v); });
          if (op == "ReduceLogSum" || lse) post([](PrimExpr v) { return Math("tir.log", v); });
          if (lse)
            s.push_back(MapTile(
                S, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v + M.Load(i); }));
          if (x_i8) dequantise_steps(post);
        }
        s.push_back(DmaWait(Region(Y, {k0, a0, b0}, {1, ta, tb}), S.All(), 1));
        Stmt tile = Allocate(Xa, Allocate(Ea, Allocate(Sa, Allocate(Ma, Allocate(Pa, Seq(s))))));
        return x_i8 ? Allocate(X8, tile) : tile;
      });
  PrimFunc unpipelined = MakeFunc(call, p, body);
  // an int8 mean of whole rows: the matrix engine's too, in tiles of about four a core, in
  // tiles of whole blocks of its rows (5 rows leave 11 of 16 idle), and in tiles that split
  // each core's share into as few blocks as cover it, the same on every core (144 rows over
  // 4 cores: 3 tiles of 12 each, where tiles of 16 give one core 48 rows and the others 32);
  // tc_reduce_matrix 0 or 1 overrides
  const int64_t want_matrix = AttrInt(call.attrs, "tc_reduce_matrix", -1);
  std::vector<PrimFunc> matrix;
  if (x_i8 && op == "ReduceMean" && resident && g.K0 == 1 && g.K2 == 1 &&
      g.R1 <= int64_t{arch::tc1::kMaxMmDim} && want_matrix != 0) {
    const int64_t rows = MatrixMeanRows(call, g), block = MatrixBlockRows(DataType::Int(8));
    const int64_t share = (g.K1 + call.cores - 1) / call.cores;
    const int64_t whole =
        std::min((rows + block - 1) / block * block, std::max(block, share / block * block));
    const int64_t share_blocks = (share + block - 1) / block;  // the fewest a core's rows take
    const int64_t balanced = (share + share_blocks - 1) / share_blocks;
    matrix.push_back(MakeFunc(call, p, MatrixMean(call, p, g, mean_scale, x_zero_point, rows)));
    if (whole != rows && whole * g.R1 <= kMatrixMeanTile)
      matrix.push_back(MakeFunc(call, p, MatrixMean(call, p, g, mean_scale, x_zero_point, whole)));
    if (balanced != rows && balanced != whole && balanced * g.R1 <= kMatrixMeanTile)
      matrix.push_back(
          MakeFunc(call, p, MatrixMean(call, p, g, mean_scale, x_zero_point, balanced)));
  }
  if (want_matrix == 1 && matrix.empty())
    TILECORE_THROW(ValueError) << op << ": tc_reduce_matrix 1 asks for the matrix engine's mean, "
                               << "which takes an int8 mean of whole rows of at most "
                               << arch::tc1::kMaxMmDim << " elements (here rows of " << g.R1
                               << (x_i8 && op == "ReduceMean" ? "" : ", not an int8 mean") << ")";
  if (!pipelined && matrix.empty()) return unpipelined;
  Fastest best(call, "");
  if (want_matrix != 1 || matrix.empty()) {
    best.Offer(unpipelined);
    if (pipelined) best.Offer(*pipelined);
  }
  for (const PrimFunc& f : matrix) best.Offer(f);
  if (!best.best.defined()) return want_matrix == 1 && !matrix.empty() ? matrix[0] : unpipelined;
  return best.best;
}

namespace {

PrimFunc LowerReduce(const OpCall& call) { return LowerReduction(call, call.op_type); }

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
        "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}) {
    RegisterStrategy(op, Strategy{detail::CheckReduce, detail::LowerReduce,
                                  [](const OpCall&, int) { return std::string("onnx"); }, 1});
  }
});

}  // namespace compiler
}  // namespace tilecore
