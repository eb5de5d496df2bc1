/*
 * src/compiler/strategy_reduce.cc — ReduceSum ReduceMean ReduceMax ReduceMin
 * ReduceProd ReduceSumSquare ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp, and the
 * reasons ArgMax / ArgMin stay on the host (their int64 output).
 *
 * Axes: the attribute `axes` when the attrs hold it (before opset 18, ReduceSum 13;
 * a compiler that knows a constant `axes` input may also put its value there), else
 * the `axes` input, which is not a param: its value follows from the output shape
 * (an error when two readings of it give different results, e.g. reducing one of two
 * equal dims with keepdims=0). No axes reduce everything, or with
 * noop_with_empty_axes (from the axes-input opset on) copy the input.
 *
 * The reduced dims (size-1 dims aside) must be adjacent: the input is then [A, R, B]
 * (rows_util.h) and the output [A, B]. Each (a, b) tile folds R in chunks with
 * tile.vec_redsum / redmax / redmin over the innermost loop (a strided view when
 * B > 1), partial results combined with an element-wise command; the squares, |x|,
 * the exp of LogSumExp (after a first pass for the maximum), the 1/R of the mean,
 * sqrt and log are vector commands too. The product has no vector form: front-end
 * code. float32; Max, Min, Sum and Prod also int32 (an int32 sum wraps like ONNX, so
 * it stays front-end code).
 */
#include <set>

#include "kernel_util.h"
#include "rows_util.h"
#include "tilecore/ffi/reflection.h"

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

bool ReadAxes(const std::string& op, const Map<String, Any>& attrs, const std::vector<TensorSpec>& ins, AxesSpec* a,
              std::string* why) {
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
bool AxesFromOutput(const std::string& op, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                    bool keepdims, std::vector<int64_t>* axes, std::string* why) {
  size_t r = in.size();
  std::set<std::vector<int64_t>> effective;  // the reduced dims of size > 1, per reading
  if (keepdims) {
    if (out.size() != r) {
      *why = op + ": output rank " + std::to_string(out.size()) + " with keepdims=1 and input rank " + std::to_string(r);
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
    *why = op + ": output rank " + std::to_string(out.size()) + " does not fit input rank " + std::to_string(r);
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
    *why = op + (effective.empty() ? ": output shape does not follow from the input shape"
                                   : ": the output shape leaves the reduced axes ambiguous; give the constant axes "
                                     "as the attribute `axes`");
    return false;
  }
  *axes = *effective.begin();
  return true;
}

/*! \brief [A, R, B] when the reduced dims (size-1 dims aside) are adjacent. */
bool Merge(const std::string& op, const std::vector<int64_t>& in, const std::vector<int64_t>& axes, int64_t* A,
           int64_t* R, int64_t* B, std::string* why) {
  std::set<int64_t> red(axes.begin(), axes.end());
  *A = *R = *B = 1;
  int state = 0;  // 0: before the reduced block, 1: in it, 2: after it
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    bool r = red.count(static_cast<int64_t>(d)) != 0;
    if (r && state == 2) {
      *why = op + ": the reduced axes are not adjacent (after dropping size-1 dims)";
      return false;
    }
    if (r) state = 1;
    else if (state == 1) state = 2;
    (r ? *R : (state == 0 ? *A : *B)) *= in[d];
  }
  return true;
}

std::string CheckReduce(const std::string& op, const Map<String, Any>& attrs, const std::vector<TensorSpec>& ins) {
  if (ins.empty() || ins.size() > 2 || !ins[0].defined()) return op + ": expects data and optional axes";
  std::vector<DataType> ok{DataType::Float(32)};
  if (IntAllowed(op)) ok.push_back(DataType::Int(32));
  std::string why = CheckDTypes({ins[0]}, ok, op);
  if (!why.empty()) return why;
  if (ins.size() > 1 && ins[1].defined() && ins[1]->shape.size() != 1) return op + ": axes must be 1-D";
  AxesSpec a;
  if (!ReadAxes(op, attrs, ins, &a, &why)) return why;
  if (!a.from_input && !a.noop) {
    int64_t A, R, B;
    if (!Merge(op, Shape(ins[0]), a.axes, &A, &R, &B, &why)) return why;
  }
  return "";
}

}  // namespace

PrimFunc LowerReduction(const OpCall& call, const std::string& op) {
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  DataType t = call.inputs[0]->dtype;
  AxesSpec a;
  std::string why;
  ReadAxes(op, call.attrs, call.inputs, &a, &why);
  bool keep = AttrInt(call.attrs, "keepdims", 1) != 0;
  if (a.from_input && !AxesFromOutput(op, in, out, keep, &a.axes, &why))
    TILECORE_THROW(ValueError) << "LowerOp(" << op << "): " << why;
  int64_t A = Numel(in), R = 1, B = 1;
  if (!a.noop && !Merge(op, in, a.axes, &A, &R, &B, &why)) TILECORE_THROW(ValueError) << "LowerOp(" << op << "): " << why;
  if (Numel(out) != A * B)
    TILECORE_THROW(ValueError) << "LowerOp(" << op << "): output of " << Numel(out) << " elements, expected " << A * B;
  if (A * B == 0) return MakeFunc(call, p, Evaluate(I32(0)));
  if (R == 0) TILECORE_THROW(ValueError) << "LowerOp(" << op << "): reduction over an empty axis";
  Buffer X = View(p.in[0], {A, R, B}, "X");
  Buffer Y = View(p.out[0], {A, B}, "Y");
  Red red = Red::kSum;
  if (op == "ReduceMax") red = Red::kMax;
  if (op == "ReduceMin") red = Red::kMin;
  if (op == "ReduceProd") red = Red::kProd;
  bool square = op == "ReduceSumSquare" || op == "ReduceL2", absolute = op == "ReduceL1", lse = op == "ReduceLogSumExp";
  if (a.noop) red = Red::kSum, square = absolute = lse = false;
  Tiles tl = ChooseTiles(A, R, B, call.cores);
  bool resident = tl.tr == R;
  Stmt body = ForTiles(call, A, B, tl, [&](PrimExpr a0, int64_t ta, PrimExpr b0, int64_t tb) {
    Buffer Xa = Local({ta * tl.tr * tb}, t, "Xt");
    Buffer Ea = Local({ta * tl.tr * tb}, t, "Et");
    Buffer Sa = Local({ta * tb}, t, "S");
    Buffer Ma = Local({ta * tb}, t, "M");
    Buffer Pa = Local({ta * tb}, t, "P");
    TileView S = MakeView(Sa, {ta, tb}, "Sv"), M = MakeView(Ma, {ta, tb}, "Mv"), P = MakeView(Pa, {ta, tb}, "Pv");
    auto xt = [&](int64_t n) { return MakeView(Xa, {ta, n, tb}, "Xv"); };
    auto et = [&](int64_t n) { return MakeView(Ea, {ta, n, tb}, "Ev"); };
    auto load = [&](PrimExpr r0, int64_t n) { return DmaWait(xt(n).All(), Region(X, {a0, r0, b0}, {ta, n, tb}), 0); };
    auto fold = [&](const TileView& src, bool first, Red r, const TileView& into) {
      if (first) return ReduceTile(into, src, r);
      return Seq({ReduceTile(P, src, r),
                  MapTile(into, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return Combine(r, v, P.Load(i)); })});
    };
    // what each element contributes, in place in Xt
    auto pre = [&](int64_t n) -> Stmt {
      TileView x = xt(n), e = et(n);
      if (square) return MapTile(x, [](PrimExpr v, const std::vector<PrimExpr>&) { return v * v; });
      if (absolute) {
        return Seq({Nest(x.dims, [&](const std::vector<PrimExpr>& i) { return e.Store(x.Load(i) * F32(-1.0), i); }),
                    MapTile(x, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return max(v, e.Load(i)); })});
      }
      if (lse) {
        return Seq({MapTile(x, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v - M.Load({i[0], i[2]}); }),
                    MapTile(x, [](PrimExpr v, const std::vector<PrimExpr>&) { return Math("tir.exp", v); })});
      }
      return Stmt();
    };
    std::vector<Stmt> s;
    if (lse && !resident) {
      s.push_back(ForChunks(R, tl.tr, [&](PrimExpr r0, int64_t n, bool first) {
        return Seq({load(r0, n), fold(xt(n), first, Red::kMax, M)});
      }));
    }
    s.push_back(ForChunks(R, tl.tr, [&](PrimExpr r0, int64_t n, bool first) {
      std::vector<Stmt> c{load(r0, n)};
      if (lse && resident) c.push_back(ReduceTile(M, xt(n), Red::kMax));
      c.push_back(pre(n));
      c.push_back(fold(xt(n), first, red, S));
      return Seq(c);
    }));
    auto post = [&](std::function<PrimExpr(PrimExpr)> f) {
      s.push_back(MapTile(S, [f](PrimExpr v, const std::vector<PrimExpr>&) { return f(v); }));
    };
    if (!a.noop) {
      if (op == "ReduceMean") post([R](PrimExpr v) { return v * F32Exact(1.0 / static_cast<double>(R)); });
      if (op == "ReduceL2") post([](PrimExpr v) { return Math("tir.sqrt", v); });
      if (op == "ReduceLogSum" || lse) post([](PrimExpr v) { return Math("tir.log", v); });
      if (lse) s.push_back(MapTile(S, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v + M.Load(i); }));
    }
    s.push_back(DmaWait(Region(Y, {a0, b0}, {ta, tb}), S.All(), 1));
    return Allocate(Xa, Allocate(Ea, Allocate(Sa, Allocate(Ma, Allocate(Pa, Seq(s))))));
  });
  return MakeFunc(call, p, body);
}

namespace {

PrimFunc LowerReduce(const OpCall& call) { return LowerReduction(call, call.op_type); }

std::string CheckArg(const std::string& op, const Map<String, Any>&, const std::vector<TensorSpec>&) {
  return op + ": the output is int64 (TC1 has no 64-bit types)";
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
                         "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}) {
    RegisterStrategy(op, Strategy{detail::CheckReduce, detail::LowerReduce,
                                  [](const OpCall&, int) { return std::string("onnx"); }, 1});
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    RegisterStrategy(op, Strategy{detail::CheckArg, nullptr, [](const OpCall&, int) { return std::string("onnx"); }});
  }
});

}  // namespace compiler
}  // namespace tilecore
