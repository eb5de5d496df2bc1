/*
 * src/compiler/host_index.cc — host kernels of the index and shape ops in any dtype:
 * ArgMax/ArgMin, Hardmax, CumSum, CumProd, TopK, Softmax/LogSoftmax, LayerNormalization,
 * NegativeLogLikelihoodLoss, Dropout (inference), Pad, Slice, the reductions (ReduceSum Mean Max
 * Min Prod L1 L2 SumSquare LogSum LogSumExp), Gather, GatherElements, GatherND, ScatterElements,
 * ScatterND, TensorScatter, Concat, Split, Transpose, Tile, Trilu, Range, OneHot, ConstantOfShape,
 * EyeLike, Compress, ReverseSequence and ai.onnx.ml's ArrayFeatureExtractor.
 *
 * Plain scalar loops over the global buffers. Where an op takes a value the specs do
 * not carry (Tile's `repeats`, Split's `split`), the kernel reads it from the output
 * shape: the repeats and split sizes are the output's (the driver passes only outputs
 * whose shapes follow from constants). A reduction's `axes` input without the attribute
 * is read when the kernel runs and checked against the output shape.
 */
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

using Check = std::function<std::string(const std::string&, const Map<String, Any>&,
                                        const std::vector<TensorSpec>&)>;

Check Inputs(size_t lo, size_t hi) {
  return [lo, hi](const std::string& op, const Map<String, Any>&,
                  const std::vector<TensorSpec>& in) { return NeedInputs(op, in, lo, hi); };
}

std::string NeedInt(const std::string& op, const std::vector<TensorSpec>& in, size_t i) {
  if (i < in.size() && in[i].defined() && !in[i]->dtype.is_integer())
    return op + ": input " + std::to_string(i) + " must be an integer tensor, got " +
           in[i]->dtype.str();
  return "";
}

Check IndexInputs(size_t lo, size_t hi, size_t index_input) {
  return [=](const std::string& op, const Map<String, Any>& a, const std::vector<TensorSpec>& in) {
    std::string w = NeedInputs(op, in, lo, hi);
    return w.empty() ? NeedInt(op, in, index_input) : w;
  };
}

PrimExpr NegInf(DataType t) {
  if (t.is_float()) return cast(t, ir::call("tir.log", {F32(0)}));  // log(0) = -inf
  return make_const(t, t.is_uint() ? int64_t{0} : -(int64_t{1} << (t.bits() - 1)));
}

// ---- reductions and arg reductions -------------------------------------------------

/*! \brief Whether a reduction reads its axes input when it runs: the input is given and the
 * attrs lack `axes` (a compiler that knows a constant axes input passes it as the attribute). */
bool AxesAtRunTime(const OpCall& call) {
  return !HasAttr(call.attrs, "axes") && call.inputs.size() > 1 && call.inputs[1].defined() &&
         call.inputs[1]->numel() > 0 && !call.inputs[0]->shape.empty();
}

/*! \brief Whether input `i` is given (present and not empty). */
bool Given(const OpCall& call, size_t i) {
  return i < call.inputs.size() && call.inputs[i].defined() && call.inputs[i]->numel() > 0;
}

/*! \brief The reduced axes from attr `axes`, else all (none with noop_with_empty_axes). */
std::vector<bool> ReducedAxes(const OpCall& call, size_t r) {
  std::vector<int64_t> axes = AttrInts(call.attrs, "axes", {});
  bool noop = AttrInt(call.attrs, "noop_with_empty_axes", 0) != 0;
  std::vector<bool> red(r, axes.empty() && !noop);
  for (int64_t a : axes) red[Axis(call.op_type, a, static_cast<int64_t>(r))] = true;
  return red;
}

/*!
 * \brief The values of an axes input of `k` elements that give the output shape `out`, as
 * masks of reduced axes, grouped by the reduced axes of size > 1 (masks in a group reduce
 * the same elements): the kernel branches on the group the value read at run time is in.
 */
std::map<std::vector<bool>, std::vector<std::vector<bool>>> AxesReadings(
    const std::vector<int64_t>& in, const std::vector<int64_t>& out, int64_t k, bool keep) {
  std::map<std::vector<bool>, std::vector<std::vector<bool>>> groups;
  size_t r = in.size();
  for (uint32_t m = 0; m < (1u << r); ++m) {
    if (__builtin_popcount(m) != k) continue;
    std::vector<bool> mask(r), effective(r);
    std::vector<int64_t> shape;
    for (size_t d = 0; d < r; ++d) {
      mask[d] = (m >> d) & 1;
      effective[d] = mask[d] && in[d] != 1;
      if (!mask[d])
        shape.push_back(in[d]);
      else if (keep)
        shape.push_back(1);
    }
    if (shape == out) groups[effective].push_back(mask);
  }
  return groups;
}

/*!
 * \brief A reduction. The axes come from the attribute `axes`; an axes input without it is
 * read when the kernel runs (it is then input param 1): each axis is checked (in range, not
 * repeated), and the kernel reduces the axes read when they give the output shape it was
 * compiled for, else it fails naming them (a shape another value would give is not guessed).
 */
PrimFunc LowerReduce(const OpCall& call0) {
  NeedOutputs(call0, 1);
  OpCall call = call0;
  const bool run_time = AxesAtRunTime(call0);
  if (run_time) call.data_inputs = 2;
  Params p = MakeParams(call);
  const std::string& op = call.op_type;
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  bool keep = AttrInt(call.attrs, "keepdims", 1) != 0;
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  DataType xt = X->dtype, yt = Y->dtype;
  DataType acc_t = xt.is_float() ? DataType::Float(64) : DataType::Int(64);
  std::vector<int64_t> st = Strides(in);
  Scalar acc(acc_t, "acc");
  bool is_max = op == "ReduceMax", is_min = op == "ReduceMin", is_prod = op == "ReduceProd";
  bool lse = op == "ReduceLogSumExp";
  // the reduction of the axes in `red`
  auto reduce = [&](const std::vector<bool>& red) -> Stmt {
    std::vector<int64_t> kept, reduced;
    for (size_t d = 0; d < in.size(); ++d) (red[d] ? reduced : kept).push_back(in[d]);
    int64_t K = Numel(kept), R = Numel(reduced);
    if (K != call.outputs[0]->numel())
      TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): output of "
                                 << call.outputs[0]->numel() << " elements, expected " << K;
    return Loop("o", K, [&](PrimExpr o) -> Stmt {
      std::vector<PrimExpr> kc = Unravel(o, kept);
      auto load = [&](PrimExpr r) {
        std::vector<PrimExpr> rc = Unravel(r, reduced);
        PrimExpr idx = I32(0);
        size_t ki = 0, ri = 0;
        for (size_t d = 0; d < in.size(); ++d)
          idx = idx + (red[d] ? rc[ri++] : kc[ki++]) * I32(st[d]);
        return cast(acc_t, BufferLoad(X, {idx}));
      };
      PrimExpr init;
      if (is_max)
        init = R > 0 ? load(I32(0)) : NegInf(acc_t);
      else if (is_min)
        init = R > 0 ? load(I32(0)) : make_zero(acc_t) - NegInf(acc_t);
      else if (is_prod)
        init = make_const(acc_t, 1);
      else
        init = make_zero(acc_t);
      if (lse && R == 0) return BufferStore(Y, Convert(yt, NegInf(acc_t)), {o});
      if (lse) init = load(I32(0));  // the max, first
      std::vector<Stmt> s{acc.set(init)};
      auto step = [&](std::function<PrimExpr(PrimExpr, PrimExpr)> f, int64_t from) {
        s.push_back(Loop("r", I32(R - from),
                         [&](PrimExpr r) { return acc.set(f(acc.get(), load(r + I32(from)))); }));
      };
      if (is_max || is_min) {
        if (R > 1)
          step([&](PrimExpr a, PrimExpr v) { return is_max ? HMax(a, v) : HMin(a, v); }, 1);
        s.push_back(BufferStore(Y, Convert(yt, acc.get()), {o}));
        return Seq(s);
      }
      if (lse) {
        if (R > 1) step([](PrimExpr a, PrimExpr v) { return HMax(a, v); }, 1);
        Scalar m(acc_t, "m");
        std::vector<Stmt> t{m.set(acc.get()), acc.set(make_zero(acc_t))};
        t.push_back(Loop("r", R, [&](PrimExpr r) {
          return acc.set(acc.get() + ir::call("tir.exp", {load(r) - m.get()}));
        }));
        t.push_back(BufferStore(Y, Convert(yt, m.get() + ir::call("tir.log", {acc.get()})), {o}));
        s.push_back(m.scope(Seq(t)));
        return Seq(s);
      }
      step(
          [&](PrimExpr a, PrimExpr v) -> PrimExpr {
            if (is_prod) return a * v;
            if (op == "ReduceL1")
              return a + select(v < make_zero(v.dtype()), make_zero(v.dtype()) - v, v);
            if (op == "ReduceL2" || op == "ReduceSumSquare") return a + v * v;
            return a + v;
          },
          0);
      PrimExpr r = acc.get();
      if (op == "ReduceMean")
        r = xt.is_float() ? r / make_const(acc_t, static_cast<double>(std::max<int64_t>(R, 1)))
                          : r / make_const(acc_t, std::max<int64_t>(
                                                      R, 1));  // truncates, as numpy's cast does
      if (op == "ReduceL2") r = ir::call("tir.sqrt", {cast(DataType::Float(64), r)});
      if (op == "ReduceLogSum") r = ir::call("tir.log", {cast(DataType::Float(64), r)});
      s.push_back(BufferStore(Y, Convert(yt, r), {o}));
      return Seq(s);
    });
  };
  if (!run_time) return MakeFunc(call, p, Seq({acc.scope(reduce(ReducedAxes(call, in.size())))}));

  const int64_t k = call.inputs[1]->numel(), r = static_cast<int64_t>(in.size());
  if (r > 16)
    TILECORE_THROW(ValueError) << "LowerHostOp(" << op
                               << "): an axes input read when the kernel runs needs rank <= 16";
  auto groups = AxesReadings(in, out, k, keep);
  if (groups.empty())
    TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): no value of the axes input (" << k
                               << " axes) gives the output shape " << ShapeText(out)
                               << " from the input shape " << ShapeText(in);
  Buffer A = Flat(p.in[1], "A");
  Buffer seen = Local({r}, DataType::Int(32), "seen");
  std::vector<PrimExpr> values;
  std::vector<Stmt> s = ReadAxes(op + ": the axes input", A, k, r, seen, &values);
  // each group of readings, tried in turn; a value in none fails
  Stmt chain =
      Fail(op + ": the axes input " + ValuesFormat(k) + " gives another output shape than " +
               ShapeText(out) + ", the one the model declares and the kernel was compiled for",
           values);
  for (auto g = groups.rbegin(); g != groups.rend(); ++g)
    chain = IfThenElse(AxesAre(seen, g->second), Seq({reduce(g->second.front())}), chain);
  s.push_back(chain);
  return MakeFunc(call, p, Seq({acc.scope(Allocate(seen, Seq(s)))}));
}

// ArgMax / ArgMin / Hardmax: along one axis
PrimFunc LowerArg(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  const std::string& op = call.op_type;
  std::vector<int64_t> in = Shape(call.inputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  bool hard = op == "Hardmax";
  int64_t opset = AttrInt(call.attrs, "_opset", 13);
  int64_t axis = Axis(op, AttrInt(call.attrs, "axis", hard ? (opset >= 13 ? -1 : 1) : 0), rank);
  int64_t outer = 1, A = rank ? in[axis] : 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= in[d];
  if (hard && opset < 13) {  // the input read as 2-D [prod(:axis), prod(axis:)]
    A *= inner;
    inner = 1;
  }
  if (A == 0) TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): the axis is empty";
  if (!hard && call.outputs[0]->numel() != outer * inner)
    TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): output of "
                               << call.outputs[0]->numel() << " elements, expected "
                               << outer * inner;
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  bool last = AttrInt(call.attrs, "select_last_index", 0) != 0;
  bool is_max = op != "ArgMin";
  Scalar best(X->dtype, "best"), at(DataType::Int(32), "at");
  Stmt body = Loop("o", outer * inner, [&](PrimExpr o) {
    PrimExpr base = floordiv(o, I32(inner)) * I32(A * inner) + floormod(o, I32(inner));
    auto x = [&](PrimExpr k) { return BufferLoad(X, {base + k * I32(inner)}); };
    std::vector<Stmt> s{best.set(x(I32(0))), at.set(I32(0))};
    s.push_back(Loop("k", I32(A - 1), [&](PrimExpr k0) {
      PrimExpr k = k0 + I32(1), v = x(k), b = best.get();
      PrimExpr better = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
      return IfThenElse(better, Seq({best.set(v), at.set(k)}));
    }));
    if (hard) {
      s.push_back(Loop("k", I32(A), [&](PrimExpr k) {
        return BufferStore(Y, select(eq(k, at.get()), make_const(Y->dtype, 1), make_zero(Y->dtype)),
                           {base + k * I32(inner)});
      }));
    } else {
      s.push_back(BufferStore(Y, cast(Y->dtype, at.get()), {o}));
    }
    return Seq(s);
  });
  return MakeFunc(call, p, Seq({best.scope(at.scope(body))}));
}

// CumSum and CumProd along the attribute `axis` (a constant axis input, folded by the
// compiler), or along the axis input read when the kernel runs (then input param 1): the
// kernel has a branch per axis and takes the one the value names, failing on a value out of
// range (every axis gives the same output shape, so none is guessed).
PrimFunc LowerCumSum(const OpCall& call0) {
  const std::string& op = call0.op_type;
  bool prod = op == "CumProd";
  NeedOutputs(call0, 1);
  OpCall call = call0;
  const bool run_time = !HasAttr(call.attrs, "axis") && call.inputs.size() > 1 &&
                        call.inputs[1].defined() && call.inputs[1]->numel() == 1;
  if (run_time) call.data_inputs = 2;
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  if (!run_time && !HasAttr(call.attrs, "axis"))
    TILECORE_THROW(ValueError) << "LowerHostOp(" << op
                               << "): the axis input must be one value (or the attribute axis)";
  bool excl = AttrInt(call.attrs, "exclusive", 0) != 0,
       rev = AttrInt(call.attrs, "reverse", 0) != 0;
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  Scalar acc(X->dtype, "acc");
  auto along = [&](int64_t axis) -> Stmt {
    int64_t A = in.empty() ? 1 : in[axis], inner = 1, outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= in[d];
    return Loop("o", outer * inner, [&](PrimExpr o) {
      PrimExpr base = floordiv(o, I32(inner)) * I32(A * inner) + floormod(o, I32(inner));
      return Seq({acc.set(prod ? make_const(X->dtype, 1) : make_zero(X->dtype)),
                  Loop("k", A, [&](PrimExpr k0) {
                    PrimExpr k = rev ? I32(A - 1) - k0 : k0;
                    PrimExpr at = base + k * I32(inner);
                    PrimExpr next =
                        prod ? acc.get() * BufferLoad(X, {at}) : acc.get() + BufferLoad(X, {at});
                    if (excl) return Seq({BufferStore(Y, acc.get(), {at}), acc.set(next)});
                    return Seq({acc.set(next), BufferStore(Y, acc.get(), {at})});
                  })});
    });
  };
  if (!run_time)
    return MakeFunc(call, p,
                    Seq({acc.scope(along(Axis(op, AttrInt(call.attrs, "axis", 0), rank)))}));
  Buffer A = Flat(p.in[1], "A");
  PrimExpr v = cast(DataType::Int(64), BufferLoad(A, {I32(0)}));
  PrimExpr a = select(v < I64(0), v + I64(rank), v);
  Stmt chain = Fail(op + ": the axis input is %d when the model runs, out of range for rank " +
                        std::to_string(rank),
                    {v});
  for (int64_t d = std::max<int64_t>(rank, 1); d-- > 0;)
    chain = IfThenElse(eq(a, I64(d)), along(d), chain);
  return MakeFunc(call, p, Seq({acc.scope(chain)}));
}

// TopK: K from the output shape; ties go to the lower index
PrimFunc LowerTopK(const OpCall& call) {
  NeedOutputs(call, 2);
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = Axis("TopK", AttrInt(call.attrs, "axis", -1), rank);
  bool largest = AttrInt(call.attrs, "largest", 1) != 0;
  int64_t A = in[axis], K = out.size() == in.size() ? out[axis] : -1, inner = 1, outer = 1;
  if (K < 0 || K > A)
    TILECORE_THROW(ValueError) << "LowerHostOp(TopK): the output shape does not fit the input's";
  for (int64_t d = 0; d < axis; ++d) outer *= in[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= in[d];
  Buffer X = Flat(p.in[0], "X"), V = Flat(p.out[0], "V"), I = Flat(p.out[1], "I");
  Buffer taken = Local({std::max<int64_t>(A, 1)}, DataType::Int(32), "taken");
  Scalar best(X->dtype, "best"), at(DataType::Int(32), "at");
  Stmt body = Loop("o", outer * inner, [&](PrimExpr o) {
    PrimExpr b = floordiv(o, I32(inner)) * I32(A * inner) + floormod(o, I32(inner));
    PrimExpr ob = floordiv(o, I32(inner)) * I32(K * inner) + floormod(o, I32(inner));
    Stmt clear = Loop("a", A, [&](PrimExpr a) { return BufferStore(taken, I32(0), {a}); });
    Stmt pick = Loop("j", K, [&](PrimExpr j) {
      Stmt scan = Loop("a", A, [&](PrimExpr a) {
        PrimExpr v = BufferLoad(X, {b + a * I32(inner)});
        PrimExpr better = at.get() < I32(0) || (largest ? v > best.get() : v < best.get());
        return IfThenElse(eq(BufferLoad(taken, {a}), I32(0)) && better,
                          Seq({best.set(v), at.set(a)}));
      });
      return Seq({at.set(I32(-1)), scan, BufferStore(taken, I32(1), {at.get()}),
                  BufferStore(V, best.get(), {ob + j * I32(inner)}),
                  BufferStore(I, cast(I->dtype, at.get()), {ob + j * I32(inner)})});
    });
    return Seq({clear, pick});
  });
  return MakeFunc(call, p, Seq({Allocate(taken, best.scope(at.scope(body)))}));
}

// Softmax / LogSoftmax along one axis (opset < 13: over the input read as 2-D from axis), in
// float64
PrimFunc LowerSoftmax(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t opset = AttrInt(call.attrs, "_opset", 13);
  int64_t axis = Axis(call.op_type, AttrInt(call.attrs, "axis", opset >= 13 ? -1 : 1), rank);
  int64_t A = rank ? in[axis] : 1, inner = 1, outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= in[d];
  if (opset < 13) {
    A *= inner;
    inner = 1;
  }
  bool log = call.op_type == "LogSoftmax";
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  DataType f64 = DataType::Float(64);
  Scalar m(f64, "m"), sum(f64, "sum");
  Stmt body = Loop("o", outer * inner, [&](PrimExpr o) {
    PrimExpr b = floordiv(o, I32(inner)) * I32(A * inner) + floormod(o, I32(inner));
    auto x = [&](PrimExpr k) { return cast(f64, BufferLoad(X, {b + k * I32(inner)})); };
    return Seq({m.set(x(I32(0))),
                Loop("k", A, [&](PrimExpr k) { return m.set(HMax(m.get(), x(k))); }),
                sum.set(make_zero(f64)),
                Loop("k", A,
                     [&](PrimExpr k) {
                       return sum.set(sum.get() + ir::call("tir.exp", {x(k) - m.get()}));
                     }),
                Loop("k", A, [&](PrimExpr k) {
                  PrimExpr v = log ? x(k) - m.get() - ir::call("tir.log", {sum.get()})
                                   : ir::call("tir.exp", {x(k) - m.get()}) / sum.get();
                  return BufferStore(Y, cast(Y->dtype, v), {b + k * I32(inner)});
                })});
  });
  if (A == 0) body = Stmt();
  return MakeFunc(call, p, Seq({m.scope(sum.scope(Seq({body})))}));
}

// LayerNormalization over the dims from `axis` on, in float64; outputs Y and optionally Mean,
// InvStdDev
PrimFunc LowerLayerNorm(const OpCall& call) {
  if (call.outputs.empty() || call.outputs.size() > 3)
    TILECORE_THROW(ValueError) << "LowerHostOp(LayerNormalization): expected 1 to 3 outputs";
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = Axis("LayerNormalization", AttrInt(call.attrs, "axis", -1), rank);
  double eps = AttrFloat(call.attrs, "epsilon", 1e-5);
  int64_t outer = 1, R = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in[d];
  for (int64_t d = axis; d < rank; ++d) R *= in[d];
  std::vector<int64_t> norm(in.begin() + axis, in.end());
  DataType f64 = DataType::Float(64);
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  // scale and bias broadcast to the normalized shape
  auto operand = [&](size_t i) -> std::function<PrimExpr(PrimExpr)> {
    if (i >= p.in.size() || !call.inputs[i].defined()) return nullptr;
    std::vector<int64_t> s = Shape(call.inputs[i]);
    if (s.size() > norm.size())
      TILECORE_THROW(ValueError) << "LowerHostOp(LayerNormalization): input " << i
                                 << " has more dims than the normalized shape";
    s.insert(s.begin(), norm.size() - s.size(), 1);
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] != 1 && s[d] != norm[d])
        TILECORE_THROW(ValueError)
            << "LowerHostOp(LayerNormalization): input " << i << " does not broadcast";
    Buffer B = Flat(p.in[i], "B" + std::to_string(i));
    return [B, s, norm = norm](PrimExpr r) {
      std::vector<PrimExpr> c = Unravel(r, norm);
      for (size_t d = 0; d < c.size(); ++d)
        if (s[d] == 1) c[d] = I32(0);
      return cast(DataType::Float(64), BufferLoad(B, {Ravel(c, s)}));
    };
  };
  auto scale = operand(1), bias = operand(2);
  Scalar mean(f64, "mean"), var(f64, "var");
  Stmt body = Loop("o", outer, [&](PrimExpr o) {
    auto x = [&](PrimExpr r) { return cast(f64, BufferLoad(X, {o * I32(R) + r})); };
    PrimExpr n = make_const(f64, static_cast<double>(std::max<int64_t>(R, 1)));
    std::vector<Stmt> s{mean.set(make_zero(f64)),
                        Loop("r", R, [&](PrimExpr r) { return mean.set(mean.get() + x(r)); }),
                        mean.set(mean.get() / n),
                        var.set(make_zero(f64)),
                        Loop("r", R,
                             [&](PrimExpr r) {
                               PrimExpr d = x(r) - mean.get();
                               return var.set(var.get() + d * d);
                             }),
                        var.set(make_const(f64, 1.0) /
                                ir::call("tir.sqrt", {var.get() / n + make_const(f64, eps)}))};
    s.push_back(Loop("r", R, [&](PrimExpr r) {
      PrimExpr v = (x(r) - mean.get()) * var.get();
      if (scale) v = v * scale(r);
      if (bias) v = v + bias(r);
      return BufferStore(Y, cast(Y->dtype, v), {o * I32(R) + r});
    }));
    if (p.out.size() > 1)
      s.push_back(BufferStore(Flat(p.out[1], "M"), cast(p.out[1]->dtype, mean.get()), {o}));
    if (p.out.size() > 2)
      s.push_back(BufferStore(Flat(p.out[2], "S"), cast(p.out[2]->dtype, var.get()), {o}));
    return Seq(s);
  });
  return MakeFunc(call, p, Seq({mean.scope(var.scope(Seq({body})))}));
}

// NegativeLogLikelihoodLoss: input (N, C, d...), target (N, d...), optional weight (C)
PrimFunc LowerNll(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> xs = Shape(call.inputs[0]), ts = Shape(call.inputs[1]);
  if (xs.size() < 2 || ts.size() + 1 != xs.size())
    TILECORE_THROW(ValueError) << "LowerHostOp(NegativeLogLikelihoodLoss): input of rank "
                               << xs.size() << " and target of rank " << ts.size();
  int64_t N = xs[0], C = xs[1], D = 1;
  for (size_t d = 2; d < xs.size(); ++d) D *= xs[d];
  std::string red = AttrStr(call.attrs, "reduction", "mean");
  int64_t ignore = AttrInt(call.attrs, "ignore_index", INT64_MIN);
  bool has_w = p.in.size() > 2 && call.inputs[2].defined();
  DataType f64 = DataType::Float(64);
  Buffer X = Flat(p.in[0], "X"), T = Flat(p.in[1], "T"), Y = Flat(p.out[0], "Y");
  Scalar acc(f64, "acc"), wsum(f64, "wsum");
  Stmt loop = Loop("i", N * D, [&](PrimExpr i) {
    PrimExpr t = cast(DataType::Int(64), BufferLoad(T, {i}));
    PrimExpr skip =
        HasAttr(call.attrs, "ignore_index") ? eq(t, I64(ignore)) : make_const(DataType::Bool(), 0);
    PrimExpr tc = cast(DataType::Int(32), select(skip, I64(0), t));
    // a class out of [0, C) (and not ignore_index) is an error, never a read beyond the row
    Stmt check = IfThenElse(
        !skip && (t < I64(0) || t >= I64(C)),
        Fail("NegativeLogLikelihoodLoss: target %d (element %d) is out of range "
             "when the model runs: a class must be in [0, " +
                 std::to_string(C - 1) + "]" +
                 (HasAttr(call.attrs, "ignore_index") ? " or ignore_index " + std::to_string(ignore)
                                                      : std::string()),
             {t, i}));
    PrimExpr w = has_w ? cast(f64, BufferLoad(Flat(p.in[2], "W"), {tc})) : make_const(f64, 1.0);
    w = select(skip, make_zero(f64), w);
    PrimExpr x = cast(
        f64, BufferLoad(X, {floordiv(i, I32(D)) * I32(C * D) + tc * I32(D) + floormod(i, I32(D))}));
    PrimExpr loss = make_zero(f64) - x * w;
    if (red == "none") return Seq({check, BufferStore(Y, cast(Y->dtype, loss), {i})});
    return Seq({check, acc.set(acc.get() + loss), wsum.set(wsum.get() + w)});
  });
  Stmt body = loop;
  if (red != "none") {
    PrimExpr r = red == "mean" ? acc.get() / wsum.get() : acc.get();
    body = Seq({acc.set(make_zero(f64)), wsum.set(make_zero(f64)), loop,
                BufferStore(Y, cast(Y->dtype, r), {I32(0)})});
  }
  return MakeFunc(call, p, Seq({acc.scope(wsum.scope(Seq({body})))}));
}

// Dropout at inference (training_mode false or absent): the output is the input, the mask all true
/*! \brief Whether a Dropout reads its ratio or training mode when the kernel runs: the input
 * is given and the attribute the compiler sets from a constant is not. */
bool DropoutAtRunTime(const OpCall& call) {
  bool t_run = !HasAttr(call.attrs, "training_mode") && Given(call, 2);
  bool r_run = !HasAttr(call.attrs, "ratio") && Given(call, 1) &&
               (t_run || AttrInt(call.attrs, "training_mode", 0) != 0);
  return t_run || r_run;
}

// Dropout: the output is the input and the mask true, at inference and in training mode
// with ratio 0 (its scale 1 / (1 - ratio) is 1 and it drops nothing); any other training
// run would draw random numbers, so it fails (a training mode or ratio read when the
// kernel runs) or is refused (constants).
PrimFunc LowerDropout(const OpCall& call0) {
  OpCall call = call0;
  bool run_time = DropoutAtRunTime(call0);
  if (run_time) call.data_inputs = Given(call, 2) ? 3 : 2;
  Params p = MakeParams(call);
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  int64_t n = call.inputs[0]->numel();
  std::vector<Stmt> s;
  if (run_time) {
    PrimExpr training =
        HasAttr(call.attrs, "training_mode")
            ? ne(I32(AttrInt(call.attrs, "training_mode", 0)), I32(0))
            : ne(BufferLoad(Flat(p.in[2], "T"), {I32(0)}), make_zero(call.inputs[2]->dtype));
    PrimExpr ratio = HasAttr(call.attrs, "ratio")
                         ? cast(DataType::Float(64),
                                FloatImm(DataType::Float(64), AttrFloat(call.attrs, "ratio", 0.5)))
                     : Given(call, 1)
                         ? cast(DataType::Float(64), BufferLoad(Flat(p.in[1], "R"), {I32(0)}))
                         : FloatImm(DataType::Float(64), 0.5);
    s.push_back(IfThenElse(
        training && ne(ratio, FloatImm(DataType::Float(64), 0.0)),
        Fail("Dropout: training mode with ratio %g when the model runs draws random numbers; "
             "tilecore runs Dropout at inference or with ratio 0",
             {ratio}, true)));
  }
  s.push_back(Loop("i", n, [&](PrimExpr i) { return BufferStore(Y, BufferLoad(X, {i}), {i}); }));
  if (p.out.size() > 1) {
    Buffer M = Flat(p.out[1], "M");
    s.push_back(
        Loop("i", n, [&](PrimExpr i) { return BufferStore(M, make_const(M->dtype, 1), {i}); }));
  }
  return MakeFunc(call, p, Seq(s));
}

std::string CheckDropout(const std::string& op, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 3);
  if (!w.empty()) return w;
  // training_mode and ratio: attributes the driver sets from constant inputs, else read
  // when the kernel runs
  bool ratio_given = in.size() > 1 && in[1].defined() && in[1]->numel() > 0;
  if (AttrInt(attrs, "training_mode", 0) != 0 && !(ratio_given && !HasAttr(attrs, "ratio")) &&
      AttrFloat(attrs, "ratio", 0.5) != 0.0)
    return "Dropout: training mode with a ratio other than 0 draws random numbers; only "
           "inference (training_mode 0) or ratio 0 runs";
  return "";
}

/*!
 * \brief Appends to `s` the reading of element `j` of an axes input read when the kernel runs
 * (`raw`, int64) into `a`, counted from `rank` when negative; the run fails on an axis out of
 * range or one `seen` (an int32 flag per axis) already holds, which it then sets.
 */
void ReadRunTimeAxis(const std::string& op, PrimExpr raw, int64_t j, int64_t rank,
                     const Buffer& seen, const Scalar& a, std::vector<Stmt>* s) {
  s->push_back(IfThenElse(
      raw < I64(-rank) || raw >= I64(rank),
      Fail(op + ": axis %d (element " + std::to_string(j) + ") is out of range for rank " +
               std::to_string(rank) + " when the model runs",
           {raw})));
  s->push_back(a.set(select(raw < I64(0), raw + I64(rank), raw)));
  PrimExpr ai = cast(DataType::Int(32), a.get());
  s->push_back(IfThenElse(eq(BufferLoad(seen, {ai}), I32(1)),
                          Fail(op + ": axis %d is named twice when the model runs", {raw})));
  s->push_back(BufferStore(seen, I32(1), {ai}));
}

/*!
 * \brief The input index an output index `c` of a padded axis reads (Pad's modes): `before`
 * and `after` are the axis's pads (negative ones crop), `dim` its input length. wrap wraps
 * within what the crops leave, as ONNX crops before it pads.
 */
PrimExpr PadSource(const std::string& mode, PrimExpr c, PrimExpr before, PrimExpr after,
                   int64_t dim) {
  PrimExpr i = c - before, n = I32(std::max<int64_t>(dim, 1));
  if (mode == "reflect") {
    i = select(i < I32(0), I32(0) - i, i);
    i = select(i >= n, I32(2 * (dim - 1)) - i, i);
  } else if (mode == "wrap") {
    PrimExpr lo = max(I32(0) - before, I32(0)), hi = n - max(I32(0) - after, I32(0));
    i = lo + floormod(i - lo, max(hi - lo, I32(1)));
  }
  return HMin(HMax(i, I32(0)), n - I32(1));
}

/*!
 * \brief Pad with pads, the constant value or axes read when the kernel runs (every given one
 * of inputs 1-3 is then a param): the kernel reads the pads of each axis, fails when they do
 * not give the output shape it was compiled for, and pads as LowerPad does.
 */
PrimFunc LowerPadAtRunTime(const OpCall& call0) {
  OpCall call = call0;
  call.data_inputs = 1;
  for (size_t i = 1; i <= 3; ++i)
    if (Given(call, i)) call.data_inputs = static_cast<int>(i) + 1;
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  if (!Given(call, 1) || static_cast<int64_t>(out.size()) != rank)
    TILECORE_THROW(ValueError) << "LowerHostOp(Pad): pads must be given";
  int64_t k = Given(call, 3) ? call.inputs[3]->numel() : rank;
  if (call.inputs[1]->numel() != 2 * k)
    TILECORE_THROW(ValueError) << "LowerHostOp(Pad): " << call.inputs[1]->numel() << " pads for "
                               << k << " axes";
  std::string mode = AttrStr(call.attrs, "mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    TILECORE_THROW(ValueError) << "LowerHostOp(Pad): unknown mode " << mode;
  const DataType i64 = DataType::Int(64);
  Buffer P = Flat(p.in[1], "P");
  std::optional<Buffer> Ax;
  if (Given(call, 3)) Ax = Flat(p.in[3], "Ax");
  Buffer before = Local({std::max<int64_t>(rank, 1)}, i64, "before"),
         after = Local({std::max<int64_t>(rank, 1)}, i64, "after"),
         seen = Local({std::max<int64_t>(rank, 1)}, DataType::Int(32), "seen");
  Scalar a(i64, "a");
  std::vector<Stmt> s;
  for (int64_t d = 0; d < rank; ++d)
    s.insert(s.end(), {BufferStore(before, I64(0), {I32(d)}), BufferStore(after, I64(0), {I32(d)}),
                       BufferStore(seen, I32(0), {I32(d)})});
  for (int64_t j = 0; j < k; ++j) {
    PrimExpr raw = Ax ? cast(i64, BufferLoad(*Ax, {I32(j)})) : I64(j);
    ReadRunTimeAxis("Pad", raw, j, rank, seen, a, &s);
    PrimExpr ai = cast(DataType::Int(32), a.get());
    s.push_back(BufferStore(before, cast(i64, BufferLoad(P, {I32(j)})), {ai}));
    s.push_back(BufferStore(after, cast(i64, BufferLoad(P, {I32(j + k)})), {ai}));
  }
  std::vector<PrimExpr> sizes;
  PrimExpr same = eq(I32(0), I32(0));
  for (int64_t d = 0; d < rank; ++d) {
    sizes.push_back(I64(in[d]) + BufferLoad(before, {I32(d)}) + BufferLoad(after, {I32(d)}));
    same = same && eq(sizes.back(), I64(out[d]));
  }
  s.push_back(IfThenElse(!same, Fail("Pad: the pads give the output shape " + ValuesFormat(rank) +
                                         " when the model runs; the model declares " +
                                         ShapeText(out) + ", the one the kernel was compiled for",
                                     sizes)));
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  DataType t = X->dtype;
  PrimExpr fill;
  if (Given(call, 2))
    fill = cast(t, BufferLoad(Flat(p.in[2], "V"), {I32(0)}));
  else
    fill = make_zero(t);
  s.push_back(Loop("o", Numel(out), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, out);
    PrimExpr inside = make_const(DataType::Bool(), 1);
    for (int64_t d = 0; d < rank; ++d) {
      PrimExpr b = cast(DataType::Int(32), BufferLoad(before, {I32(d)})),
               e = cast(DataType::Int(32), BufferLoad(after, {I32(d)}));
      PrimExpr i = c[d] - b;
      inside = inside && i >= I32(0) && i < I32(in[d]);
      c[d] = PadSource(mode, c[d], b, e, in[d]);
    }
    PrimExpr x = BufferLoad(X, {Ravel(c, in)});
    return BufferStore(Y, mode == "constant" ? select(inside, x, fill) : x, {o});
  }));
  Stmt body = a.scope(Seq(s));
  for (const Buffer& buf : {before, after, seen}) body = Allocate(buf, body);
  return MakeFunc(call, p, body);
}

// Pad: pads (and axes, the constant value) are compile-time constants, passed as attributes,
// or read when the kernel runs (LowerPadAtRunTime)
PrimFunc LowerPad(const OpCall& call) {
  NeedOutputs(call, 1);
  if ((Given(call, 1) && !HasAttr(call.attrs, "pads")) ||
      (Given(call, 2) && !HasAttr(call.attrs, "value")) ||
      (Given(call, 3) && !HasAttr(call.attrs, "axes")))
    return LowerPadAtRunTime(call);
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  if (!HasAttr(call.attrs, "pads"))
    TILECORE_THROW(ValueError)
        << "LowerHostOp(Pad): the value of pads must be given as the attribute pads";
  std::vector<int64_t> pads = AttrInts(call.attrs, "pads", {});
  std::vector<int64_t> axes = AttrInts(call.attrs, "axes", {});
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size() || static_cast<int64_t>(out.size()) != rank)
    TILECORE_THROW(ValueError) << "LowerHostOp(Pad): " << pads.size() << " pads for " << axes.size()
                               << " axes";
  std::vector<int64_t> begin(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) begin[Axis("Pad", axes[i], rank)] = pads[i];
  std::string mode = AttrStr(call.attrs, "mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    TILECORE_THROW(ValueError) << "LowerHostOp(Pad): unknown mode " << mode;
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  DataType t = X->dtype;
  double v = AttrFloat(call.attrs, "value", 0.0);
  PrimExpr fill = t.is_float() ? make_const(t, v) : make_const(t, static_cast<int64_t>(v));
  Stmt body = Loop("o", Numel(out), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, out);
    PrimExpr inside = make_const(DataType::Bool(), 1);
    for (int64_t d = 0; d < rank; ++d) {
      PrimExpr i = c[d] - I32(begin[d]);
      inside = inside && i >= I32(0) && i < I32(in[d]);
      c[d] = PadSource(mode, c[d], I32(begin[d]), I32(out[d] - in[d] - begin[d]), in[d]);
    }
    PrimExpr x = BufferLoad(X, {Ravel(c, in)});
    return BufferStore(Y, mode == "constant" ? select(inside, x, fill) : x, {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

/*!
 * \brief Slice with starts, ends, axes or steps read when the kernel runs (every given one of
 * inputs 1-4 is then a param): the kernel computes each axis's first index, step and count
 * as ONNX does (negative values count from the end, clamped to the axis), fails when the
 * counts are not the output shape it was compiled for, and copies.
 */
PrimFunc LowerSliceAtRunTime(const OpCall& call0) {
  OpCall call = call0;
  call.data_inputs = 1;
  for (size_t i = 1; i <= 4; ++i)
    if (Given(call, i)) call.data_inputs = static_cast<int>(i) + 1;
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  if (!Given(call, 1) || !Given(call, 2) || static_cast<int64_t>(out.size()) != rank)
    TILECORE_THROW(ValueError) << "LowerHostOp(Slice): starts and ends must be given";
  int64_t k = call.inputs[1]->numel();
  for (size_t i = 2; i <= 4; ++i)
    if (Given(call, i) && call.inputs[i]->numel() != k)
      TILECORE_THROW(ValueError) << "LowerHostOp(Slice): input " << i << " has "
                                 << call.inputs[i]->numel() << " elements, starts has " << k;
  const DataType i64 = DataType::Int(64);
  Buffer S = Flat(p.in[1], "S"), E = Flat(p.in[2], "E");
  std::optional<Buffer> Ax, St;
  if (Given(call, 3)) Ax = Flat(p.in[3], "Ax");
  if (Given(call, 4)) St = Flat(p.in[4], "St");
  Buffer first = Local({std::max<int64_t>(rank, 1)}, i64, "first"),
         step = Local({std::max<int64_t>(rank, 1)}, i64, "step"),
         count = Local({std::max<int64_t>(rank, 1)}, i64, "count"),
         seen = Local({std::max<int64_t>(rank, 1)}, DataType::Int(32), "seen");
  Scalar a(i64, "a"), dim(i64, "dim"), b(i64, "b"), e(i64, "e"), st(i64, "st");
  std::vector<Stmt> s;
  for (int64_t d = 0; d < rank; ++d)
    s.insert(s.end(),
             {BufferStore(first, I64(0), {I32(d)}), BufferStore(step, I64(1), {I32(d)}),
              BufferStore(count, I64(in[d]), {I32(d)}), BufferStore(seen, I32(0), {I32(d)})});
  auto clamp = [](PrimExpr x, PrimExpr lo, PrimExpr hi) { return max(min(x, hi), lo); };
  for (int64_t j = 0; j < k; ++j) {
    PrimExpr raw = Ax ? cast(i64, BufferLoad(*Ax, {I32(j)})) : I64(j);
    ReadRunTimeAxis("Slice", raw, j, rank, seen, a, &s);
    PrimExpr dim_of = I64(rank ? in[rank - 1] : 0);
    for (int64_t d = rank - 1; d-- > 0;) dim_of = select(eq(a.get(), I64(d)), I64(in[d]), dim_of);
    s.push_back(dim.set(dim_of));
    s.push_back(st.set(St ? cast(i64, BufferLoad(*St, {I32(j)})) : I64(1)));
    s.push_back(
        IfThenElse(eq(st.get(), I64(0)),
                   Fail("Slice: step " + std::to_string(j) + " is 0 when the model runs", {})));
    PrimExpr sv = cast(i64, BufferLoad(S, {I32(j)})), ev = cast(i64, BufferLoad(E, {I32(j)}));
    s.push_back(b.set(select(sv < I64(0), sv + dim.get(), sv)));
    s.push_back(e.set(select(ev < I64(0), ev + dim.get(), ev)));
    PrimExpr up = st.get() > I64(0);
    s.push_back(b.set(
        select(up, clamp(b.get(), I64(0), dim.get()), clamp(b.get(), I64(0), dim.get() - I64(1)))));
    s.push_back(e.set(select(up, clamp(e.get(), I64(0), dim.get()),
                             clamp(e.get(), I64(-1), dim.get() - I64(1)))));
    // the count, ceil(distance / |step|) when the distance is positive; the step kept within
    // the axis so that it stays exact in the int32 index arithmetic below
    PrimExpr dist = select(up, e.get() - b.get(), b.get() - e.get());
    PrimExpr mag = select(up, st.get(), I64(0) - st.get());
    PrimExpr n = select(dist > I64(0), floordiv(dist + mag - I64(1), mag), I64(0));
    PrimExpr ai = cast(DataType::Int(32), a.get());
    s.push_back(BufferStore(count, n, {ai}));
    s.push_back(BufferStore(first, b.get(), {ai}));
    s.push_back(BufferStore(step, clamp(st.get(), I64(-1) - dim.get(), dim.get() + I64(1)), {ai}));
  }
  std::vector<PrimExpr> counts;
  PrimExpr same = eq(I32(0), I32(0));
  for (int64_t d = 0; d < rank; ++d) {
    counts.push_back(BufferLoad(count, {I32(d)}));
    same = same && eq(counts.back(), I64(out[d]));
  }
  s.push_back(IfThenElse(!same, Fail("Slice: starts, ends, axes and steps give the output shape " +
                                         ValuesFormat(rank) +
                                         " when the model runs; the model "
                                         "declares " +
                                         ShapeText(out) + ", the one the kernel was compiled for",
                                     counts)));
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  std::vector<int64_t> strides = Strides(in);
  s.push_back(Loop("o", Numel(out), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, out);
    PrimExpr idx = I32(0);
    for (int64_t d = 0; d < rank; ++d)
      idx = idx + (cast(DataType::Int(32), BufferLoad(first, {I32(d)})) +
                   c[d] * cast(DataType::Int(32), BufferLoad(step, {I32(d)}))) *
                      I32(strides[d]);
    return BufferStore(Y, BufferLoad(X, {idx}), {o});
  }));
  Stmt body = Seq(s);
  for (const Scalar* v : {&a, &dim, &b, &e, &st}) body = v->scope(body);
  for (const Buffer& buf : {first, step, count, seen}) body = Allocate(buf, body);
  return MakeFunc(call, p, body);
}

// Slice: starts, ends, axes and steps are compile-time constants, passed as attributes, or
// read when the kernel runs (LowerSliceAtRunTime)
PrimFunc LowerSlice(const OpCall& call) {
  NeedOutputs(call, 1);
  if (!HasAttr(call.attrs, "starts") || !HasAttr(call.attrs, "ends") ||
      (Given(call, 3) && !HasAttr(call.attrs, "axes")) ||
      (Given(call, 4) && !HasAttr(call.attrs, "steps")))
    return LowerSliceAtRunTime(call);
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  if (!HasAttr(call.attrs, "starts") || !HasAttr(call.attrs, "ends"))
    TILECORE_THROW(ValueError)
        << "LowerHostOp(Slice): the values of starts and ends must be given as attributes";
  std::vector<int64_t> starts = AttrInts(call.attrs, "starts", {}),
                       ends = AttrInts(call.attrs, "ends", {});
  std::vector<int64_t> axes = AttrInts(call.attrs, "axes", {});
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> steps =
      AttrInts(call.attrs, "steps", std::vector<int64_t>(starts.size(), 1));
  if (axes.size() != starts.size() || steps.size() != starts.size() ||
      ends.size() != starts.size() || static_cast<int64_t>(out.size()) != rank)
    TILECORE_THROW(ValueError)
        << "LowerHostOp(Slice): starts, ends, axes and steps differ in length";
  std::vector<int64_t> begin(rank, 0), step(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t d = Axis("Slice", axes[i], rank), dim = in[d], st = steps[i];
    if (st == 0) TILECORE_THROW(ValueError) << "LowerHostOp(Slice): a step is 0";
    int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
    b = st > 0 ? std::clamp<int64_t>(b, 0, dim)
               : std::clamp<int64_t>(b, 0, std::max<int64_t>(dim - 1, 0));
    begin[d] = b;
    step[d] = st;
  }
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  Stmt body = Loop("o", Numel(out), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, out);
    for (int64_t d = 0; d < rank; ++d) c[d] = I32(begin[d]) + c[d] * I32(step[d]);
    return BufferStore(Y, BufferLoad(X, {Ravel(c, in)}), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

// ---- gathers and scatters ----------------------------------------------------------

PrimFunc LowerGather(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> ds = Shape(call.inputs[0]), is = Shape(call.inputs[1]),
                       os = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(ds.size()), ri = static_cast<int64_t>(is.size());
  int64_t axis = Axis("Gather", AttrInt(call.attrs, "axis", 0), rank);
  if (static_cast<int64_t>(os.size()) != rank - 1 + ri)
    TILECORE_THROW(ValueError) << "LowerHostOp(Gather): output rank " << os.size() << ", expected "
                               << rank - 1 + ri;
  Buffer X = Flat(p.in[0], "X"), I = Flat(p.in[1], "I"), Y = Flat(p.out[0], "Y");
  std::vector<int64_t> st = Strides(ds);
  Stmt body = Loop("o", Numel(os), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, os);
    std::vector<PrimExpr> ic(c.begin() + axis, c.begin() + axis + ri);
    PrimExpr k = WrapIndex(BufferLoad(I, {Ravel(ic, is)}), ds[axis]);
    PrimExpr idx = k * I32(st[axis]);
    for (int64_t d = 0; d < axis; ++d) idx = idx + c[d] * I32(st[d]);
    for (int64_t d = axis + 1; d < rank; ++d) idx = idx + c[d - 1 + ri] * I32(st[d]);
    return BufferStore(Y, BufferLoad(X, {idx}), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

PrimFunc LowerGatherElements(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> ds = Shape(call.inputs[0]), is = Shape(call.inputs[1]);
  int64_t rank = static_cast<int64_t>(ds.size());
  if (static_cast<int64_t>(is.size()) != rank)
    TILECORE_THROW(ValueError) << "LowerHostOp(GatherElements): indices of rank " << is.size()
                               << ", data of rank " << rank;
  int64_t axis = Axis("GatherElements", AttrInt(call.attrs, "axis", 0), rank);
  Buffer X = Flat(p.in[0], "X"), I = Flat(p.in[1], "I"), Y = Flat(p.out[0], "Y");
  std::vector<int64_t> st = Strides(ds);
  Stmt body = Loop("o", Numel(is), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, is);
    c[axis] = WrapIndex(BufferLoad(I, {o}), ds[axis]);
    PrimExpr idx = I32(0);
    for (int64_t d = 0; d < rank; ++d) idx = idx + c[d] * I32(st[d]);
    return BufferStore(Y, BufferLoad(X, {idx}), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

PrimFunc LowerGatherND(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> ds = Shape(call.inputs[0]), is = Shape(call.inputs[1]),
                       os = Shape(call.outputs[0]);
  int64_t b = AttrInt(call.attrs, "batch_dims", 0);
  if (is.empty())
    TILECORE_THROW(ValueError) << "LowerHostOp(GatherND): indices must have rank >= 1";
  int64_t k = is.back();
  if (b < 0 || b + k > static_cast<int64_t>(ds.size()))
    TILECORE_THROW(ValueError) << "LowerHostOp(GatherND): batch_dims " << b << " + index depth "
                               << k << " exceed the data rank " << ds.size();
  std::vector<int64_t> rows(is.begin(), is.end() - 1);
  int64_t inner = 1;
  for (size_t d = b + k; d < ds.size(); ++d) inner *= ds[d];
  std::vector<int64_t> st = Strides(ds);
  Buffer X = Flat(p.in[0], "X"), I = Flat(p.in[1], "I"), Y = Flat(p.out[0], "Y");
  Stmt body = Loop("o", Numel(os), [&](PrimExpr o) {
    PrimExpr row = floordiv(o, I32(inner)), j = floormod(o, I32(inner));
    std::vector<PrimExpr> rc = Unravel(row, rows);
    PrimExpr idx = j;
    for (int64_t d = 0; d < b; ++d) idx = idx + rc[d] * I32(st[d]);
    for (int64_t t = 0; t < k; ++t)
      idx = idx + WrapIndex(BufferLoad(I, {row * I32(k) + I32(t)}), ds[b + t]) * I32(st[b + t]);
    return BufferStore(Y, BufferLoad(X, {idx}), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

PrimExpr Combine(const std::string& reduction, PrimExpr old, PrimExpr upd) {
  if (reduction == "add") return old + upd;
  if (reduction == "mul") return old * upd;
  if (reduction == "max") return HMax(old, upd);
  if (reduction == "min") return HMin(old, upd);
  return upd;
}

Stmt CopyAll(const Buffer& dst, const Buffer& src, int64_t n) {
  return Loop("i", n, [&](PrimExpr i) { return BufferStore(dst, BufferLoad(src, {i}), {i}); });
}

PrimFunc LowerScatterElements(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> ds = Shape(call.inputs[0]), is = Shape(call.inputs[1]);
  int64_t rank = static_cast<int64_t>(ds.size());
  int64_t axis = Axis(call.op_type, AttrInt(call.attrs, "axis", 0), rank);
  std::string red = AttrStr(call.attrs, "reduction", "none");
  Buffer X = Flat(p.in[0], "X"), I = Flat(p.in[1], "I"), U = Flat(p.in[2], "U"),
         Y = Flat(p.out[0], "Y");
  std::vector<int64_t> st = Strides(ds);
  Stmt scatter = Loop("u", Numel(is), [&](PrimExpr u) {
    std::vector<PrimExpr> c = Unravel(u, is);
    c[axis] = WrapIndex(BufferLoad(I, {u}), ds[axis]);
    PrimExpr idx = I32(0);
    for (int64_t d = 0; d < rank; ++d) idx = idx + c[d] * I32(st[d]);
    return BufferStore(Y, Combine(red, BufferLoad(Y, {idx}), BufferLoad(U, {u})), {idx});
  });
  return MakeFunc(call, p, Seq({Seq({CopyAll(Y, X, Numel(ds)), scatter})}));
}

/*!
 * \brief TensorScatter (a key/value cache update): the past cache copied, then each batch
 * entry's update written along `axis` from its write index (input 2; 0 when absent),
 * wrapping around the axis in mode circular. In mode linear a write past the axis's end
 * fails the run naming the batch entry and the index (ONNX leaves it undefined).
 */
PrimFunc LowerTensorScatter(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), up = Shape(call.inputs[1]);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = Axis("TensorScatter", AttrInt(call.attrs, "axis", -2), rank);
  std::string mode = AttrStr(call.attrs, "mode", "linear");
  if (mode != "linear" && mode != "circular")
    TILECORE_THROW(ValueError) << "LowerHostOp(TensorScatter): unknown mode " << mode;
  if (axis < 1 || static_cast<int64_t>(up.size()) != rank)
    TILECORE_THROW(ValueError) << "LowerHostOp(TensorScatter): the update must have the cache's "
                                  "rank and the axis must follow the batch axis";
  for (int64_t d = 0; d < rank; ++d)
    if (d == axis ? up[d] > in[d] : up[d] != in[d])
      TILECORE_THROW(ValueError) << "LowerHostOp(TensorScatter): update " << ShapeText(up)
                                 << " does not fit the cache " << ShapeText(in);
  int64_t prefix = 1, inner = 1, per_batch = 1, M = in[axis], S = up[axis];
  for (int64_t d = 0; d < axis; ++d) prefix *= in[d];
  for (int64_t d = 1; d < axis; ++d) per_batch *= in[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= in[d];
  Buffer X = Flat(p.in[0], "X"), U = Flat(p.in[1], "U"), Y = Flat(p.out[0], "Y");
  bool has_w = Given(call, 2);
  std::vector<Stmt> s;
  s.push_back(
      Loop("i", Numel(in), [&](PrimExpr i) { return BufferStore(Y, BufferLoad(X, {i}), {i}); }));
  if (S == 0 || prefix == 0 || inner == 0) return MakeFunc(call, p, Seq(s));
  std::optional<Buffer> W;
  if (has_w) W = Flat(p.in[2], "W");
  s.push_back(Loop("q", prefix * S, [&](PrimExpr q) {
    PrimExpr pre = floordiv(q, I32(S)), t = floormod(q, I32(S));
    PrimExpr b = floordiv(pre, I32(per_batch));
    PrimExpr w = W ? cast(DataType::Int(64), BufferLoad(*W, {b})) : I64(0);
    PrimExpr c = w + cast(DataType::Int(64), t);
    std::vector<Stmt> body;
    if (mode == "circular") {
      c = floormod(c, I64(M));
    } else {
      body.push_back(IfThenElse(
          c < I64(0) || c >= I64(M),
          Fail("TensorScatter: batch entry %d writes position %d when the model runs; the cache "
               "axis has " +
                   std::to_string(M) + " positions (mode linear)",
               {cast(DataType::Int(64), b), c})));
    }
    PrimExpr ci = cast(DataType::Int(32), c);
    body.push_back(Loop("k", inner, [&](PrimExpr k) {
      return BufferStore(Y, BufferLoad(U, {(pre * I32(S) + t) * I32(inner) + k}),
                         {(pre * I32(M) + ci) * I32(inner) + k});
    }));
    return Seq(body);
  }));
  return MakeFunc(call, p, Seq(s));
}

PrimFunc LowerScatterND(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> ds = Shape(call.inputs[0]), is = Shape(call.inputs[1]);
  if (is.empty())
    TILECORE_THROW(ValueError) << "LowerHostOp(ScatterND): indices must have rank >= 1";
  int64_t k = is.back();
  if (k > static_cast<int64_t>(ds.size()))
    TILECORE_THROW(ValueError) << "LowerHostOp(ScatterND): index depth " << k
                               << " exceeds the data rank " << ds.size();
  std::string red = AttrStr(call.attrs, "reduction", "none");
  int64_t rows = Numel(std::vector<int64_t>(is.begin(), is.end() - 1)), inner = 1;
  for (size_t d = k; d < ds.size(); ++d) inner *= ds[d];
  std::vector<int64_t> st = Strides(ds);
  Buffer X = Flat(p.in[0], "X"), I = Flat(p.in[1], "I"), U = Flat(p.in[2], "U"),
         Y = Flat(p.out[0], "Y");
  Stmt scatter = Loop("u", rows, [&](PrimExpr u) {
    PrimExpr base = I32(0);
    for (int64_t t = 0; t < k; ++t)
      base = base + WrapIndex(BufferLoad(I, {u * I32(k) + I32(t)}), ds[t]) * I32(st[t]);
    return Loop("j", inner, [&](PrimExpr j) {
      PrimExpr idx = base + j;
      return BufferStore(Y, Combine(red, BufferLoad(Y, {idx}), BufferLoad(U, {u * I32(inner) + j})),
                         {idx});
    });
  });
  return MakeFunc(call, p, Seq({Seq({CopyAll(Y, X, Numel(ds)), scatter})}));
}

// ---- layout ------------------------------------------------------------------------

PrimFunc LowerConcat(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> os = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(os.size());
  int64_t axis = Axis("Concat", AttrInt(call.attrs, "axis", 0), rank);
  Buffer Y = Flat(p.out[0], "Y");
  std::vector<int64_t> st = Strides(os);
  std::vector<Stmt> s;
  int64_t off = 0;
  for (size_t i = 0; i < p.in.size(); ++i) {
    std::vector<int64_t> is = Shape(call.inputs[i]);
    if (static_cast<int64_t>(is.size()) != rank)
      TILECORE_THROW(ValueError) << "LowerHostOp(Concat): input " << i << " has rank " << is.size()
                                 << ", expected " << rank;
    Buffer X = Flat(p.in[i], "X" + std::to_string(i));
    s.push_back(Loop("i", Numel(is), [&](PrimExpr g) {
      std::vector<PrimExpr> c = Unravel(g, is);
      c[axis] = c[axis] + I32(off);
      return BufferStore(Y, BufferLoad(X, {Ravel(c, os)}), {Ravel(c, os)});
    }));
    // the store index above is the output's; the load is the input's flat index
    s.back() = Loop("i", Numel(is), [&](PrimExpr g) {
      std::vector<PrimExpr> c = Unravel(g, is);
      c[axis] = c[axis] + I32(off);
      return BufferStore(Y, BufferLoad(X, {g}), {Ravel(c, os)});
    });
    off += is[axis];
  }
  if (off != os[axis])
    TILECORE_THROW(ValueError) << "LowerHostOp(Concat): the inputs do not add up to the output";
  return MakeFunc(call, p, Seq({Seq(s)}));
}

PrimFunc LowerSplit(const OpCall& call) {
  Params p = MakeParams(call);
  std::vector<int64_t> is = Shape(call.inputs[0]);
  int64_t rank = static_cast<int64_t>(is.size());
  int64_t axis = Axis("Split", AttrInt(call.attrs, "axis", 0), rank);
  Buffer X = Flat(p.in[0], "X");
  std::vector<Stmt> s;
  int64_t off = 0;
  for (size_t i = 0; i < p.out.size(); ++i) {
    std::vector<int64_t> os = Shape(call.outputs[i]);
    Buffer Y = Flat(p.out[i], "Y" + std::to_string(i));
    s.push_back(Loop("i", Numel(os), [&](PrimExpr g) {
      std::vector<PrimExpr> c = Unravel(g, os);
      c[axis] = c[axis] + I32(off);
      return BufferStore(Y, BufferLoad(X, {Ravel(c, is)}), {g});
    }));
    off += os[axis];
  }
  if (off != is[axis])
    TILECORE_THROW(ValueError) << "LowerHostOp(Split): the outputs do not add up to the input";
  return MakeFunc(call, p, Seq({Seq(s)}));
}

PrimFunc LowerTranspose(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> is = Shape(call.inputs[0]);
  int64_t rank = static_cast<int64_t>(is.size());
  std::vector<int64_t> perm;
  for (int64_t d = rank; d-- > 0;) perm.push_back(d);
  perm = AttrInts(call.attrs, "perm", perm);
  std::set<int64_t> seen(perm.begin(), perm.end());
  if (static_cast<int64_t>(perm.size()) != rank || static_cast<int64_t>(seen.size()) != rank ||
      (rank && (*seen.begin() != 0 || *seen.rbegin() != rank - 1)))
    TILECORE_THROW(ValueError) << "LowerHostOp(Transpose): perm is not a permutation of the "
                               << rank << " axes";
  std::vector<int64_t> os;
  for (int64_t d : perm) os.push_back(is[d]);
  std::vector<int64_t> st = Strides(is);
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  Stmt body = Loop("o", Numel(os), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, os);
    PrimExpr idx = I32(0);
    for (int64_t d = 0; d < rank; ++d) idx = idx + c[d] * I32(st[perm[d]]);
    return BufferStore(Y, BufferLoad(X, {idx}), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

PrimFunc LowerTile(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> is = Shape(call.inputs[0]), os = Shape(call.outputs[0]);
  if (is.size() != os.size())
    TILECORE_THROW(ValueError) << "LowerHostOp(Tile): output rank differs from the input's";
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  Stmt body = Loop("o", Numel(os), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, os);
    for (size_t d = 0; d < c.size(); ++d) c[d] = floormod(c[d], I32(std::max<int64_t>(is[d], 1)));
    return BufferStore(Y, BufferLoad(X, {Ravel(c, is)}), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

// ---- generators ----------------------------------------------------------------------

PrimFunc LowerTrilu(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> s = Shape(call.inputs[0]);
  if (s.size() < 2)
    TILECORE_THROW(ValueError) << "LowerHostOp(Trilu): the input must have rank >= 2";
  bool upper = AttrInt(call.attrs, "upper", 1) != 0;
  bool has_k = p.in.size() > 1 && call.inputs[1].defined();
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  PrimExpr k = has_k ? cast(DataType::Int(64), BufferLoad(Flat(p.in[1], "K"), {I32(0)})) : I64(0);
  int64_t H = s[s.size() - 2], W = s.back();
  Stmt body = Loop("o", Numel(s), [&](PrimExpr o) {
    PrimExpr j = cast(DataType::Int(64), floormod(o, I32(W))),
             i = cast(DataType::Int(64), floormod(floordiv(o, I32(W)), I32(H)));
    PrimExpr keep = upper ? (j - i >= k) : (j - i <= k);
    PrimExpr x = BufferLoad(X, {o});
    return BufferStore(Y, select(keep, x, make_zero(X->dtype)), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

// ReverseSequence: y[b, t] = x[b, len[b] - 1 - t] for t < len[b], x[b, t] after.
PrimFunc LowerReverseSequence(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> s = Shape(call.inputs[0]);
  int64_t rank = static_cast<int64_t>(s.size());
  int64_t ta = Axis("ReverseSequence", AttrInt(call.attrs, "time_axis", 0), rank);
  int64_t ba = Axis("ReverseSequence", AttrInt(call.attrs, "batch_axis", 1), rank);
  if (ta == ba)
    TILECORE_THROW(ValueError) << "LowerHostOp(ReverseSequence): time_axis == batch_axis";
  Buffer X = Flat(p.in[0], "X"), Ln = Flat(p.in[1], "lens"), Y = Flat(p.out[0], "Y");
  // a length out of [0, T] is an error (ONNX Runtime's too), not clamped
  Stmt check = Loop("b", s[ba], [&](PrimExpr b) {
    PrimExpr len = cast(DataType::Int(64), BufferLoad(Ln, {b}));
    return IfThenElse(len < I64(0) || len > I64(s[ta]),
                      Fail("ReverseSequence: sequence_lens element %d is %d when the model runs; a "
                           "length must be in [0, " +
                               std::to_string(s[ta]) + "], the time axis's",
                           {b, len}));
  });
  Stmt body = Loop("o", Numel(s), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, s);
    PrimExpr len = max(I32(0), min(cast(DataType::Int(32), BufferLoad(Ln, {c[ba]})), I32(s[ta])));
    PrimExpr t = c[ta];
    c[ta] = select(t < len, len - I32(1) - t, t);
    return BufferStore(Y, BufferLoad(X, {Ravel(c, s)}), {o});
  });
  return MakeFunc(call, p, Seq({check, body}));
}

// ai.onnx.ml ArrayFeatureExtractor: x[..., indices] along the last axis.
PrimFunc LowerArrayFeatureExtractor(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> s = Shape(call.inputs[0]), os = Shape(call.outputs[0]);
  int64_t last = s.empty() ? 1 : s.back(), K = Numel(Shape(call.inputs[1]));
  if (Numel(os) != Numel(s) / std::max<int64_t>(last, 1) * K)
    TILECORE_THROW(ValueError) << "LowerHostOp(ArrayFeatureExtractor): the output shape does not "
                                  "fit the input and the indices";
  Buffer X = Flat(p.in[0], "X"), I = Flat(p.in[1], "I"), Y = Flat(p.out[0], "Y");
  // an index out of [0, last) is an error (ONNX Runtime's too), never a read beyond the row
  Stmt check = Loop("k", K, [&](PrimExpr k) {
    PrimExpr v = cast(DataType::Int(64), BufferLoad(I, {k}));
    return IfThenElse(v < I64(0) || v >= I64(last),
                      Fail("ArrayFeatureExtractor: index %d (element %d) is out of range when the "
                           "model runs: the last axis has " +
                               std::to_string(last) + " elements",
                           {v, k}));
  });
  Stmt body = Loop("o", Numel(os), [&](PrimExpr o) {
    PrimExpr row = floordiv(o, I32(K)), k = floormod(o, I32(K));
    PrimExpr i = WrapIndex(BufferLoad(I, {k}), last);
    return BufferStore(Y, BufferLoad(X, {row * I32(last) + i}), {o});
  });
  return MakeFunc(call, p, Seq({check, body}));
}

// EyeLike: ones on the k-th diagonal of a 2-D tensor of x's shape (dtype attribute or x's).
PrimFunc LowerEyeLike(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> s = Shape(call.outputs[0]);
  if (s.size() != 2) TILECORE_THROW(ValueError) << "LowerHostOp(EyeLike): the input must be 2-D";
  int64_t k = AttrInt(call.attrs, "k", 0), W = s[1];
  Buffer Y = Flat(p.out[0], "Y");
  DataType t = Y->dtype;
  auto one = t.is_float() ? make_const(t, 1.0) : make_const(t, int64_t{1});
  Stmt body = Loop("o", Numel(s), [&](PrimExpr o) {
    PrimExpr i = floordiv(o, I32(W)), j = floormod(o, I32(W));
    return BufferStore(Y, select(eq(j - i, I32(k)), one, make_zero(t)), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

std::string CheckEyeLike(const std::string& op, const Map<String, Any>&,
                         const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 1);
  if (!w.empty()) return w;
  return in[0]->shape.size() == 2 ? "" : "EyeLike: the input must be 2-D";
}

// Compress: the slices along `axis` (of the flattened input without it) whose condition
// is true, in order. The output's length along the axis is the model's (static) one; a run
// whose conditions give another length fails saying so.
PrimFunc LowerCompress(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  int64_t outer = 1, A = Numel(in), inner = 1, K = Numel(out);
  if (HasAttr(call.attrs, "axis")) {
    int64_t rank = static_cast<int64_t>(in.size());
    int64_t axis = Axis("Compress", AttrInt(call.attrs, "axis", 0), rank);
    if (out.size() != in.size())
      TILECORE_THROW(ValueError) << "LowerHostOp(Compress): output rank " << out.size()
                                 << ", expected " << in.size();
    A = in[axis];
    K = out[axis];
    outer = inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= in[d];
  }
  int64_t n_cond = std::min<int64_t>(A, Numel(Shape(call.inputs[1])));
  Buffer X = Flat(p.in[0], "X"), C = Flat(p.in[1], "C"), Y = Flat(p.out[0], "Y");
  Scalar k(DataType::Int(32), "k");
  Stmt pick = Loop("a", n_cond, [&](PrimExpr a) {
    PrimExpr c = BufferLoad(C, {a});
    PrimExpr on = c.dtype().is_bool() ? c : ne(c, make_zero(c.dtype()));
    Stmt copy = Loop("e", outer * inner, [&](PrimExpr e) {
      PrimExpr o = floordiv(e, I32(inner)), n = floormod(e, I32(inner));
      return BufferStore(Y, BufferLoad(X, {(o * I32(A) + a) * I32(inner) + n}),
                         {(o * I32(K) + k.get()) * I32(inner) + n});
    });
    return IfThenElse(on, Seq({IfThenElse(k.get() < I32(K), copy), k.set(k.get() + I32(1))}));
  });
  // the output's length is the model's: the conditions decide it, so a run they give
  // another length fails
  Stmt check = IfThenElse(
      ne(k.get(), I32(K)),
      Fail("Compress: %d conditions are true, but the output's length along "
           "the axis is " +
               std::to_string(K) + ", the one the model declares and the kernel was compiled for",
           {k.get()}));
  return MakeFunc(call, p, Seq({k.scope(Seq({k.set(I32(0)), pick, check}))}));
}

// Range: start and delta read when the kernel runs; the length is the output's (static)
// one, and a run whose start, limit and delta give another length fails saying so
PrimFunc LowerRange(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  Buffer S = Flat(p.in[0], "S"), L = Flat(p.in[1], "L"), D = Flat(p.in[2], "D");
  Buffer Y = Flat(p.out[0], "Y");
  int64_t n = call.outputs[0]->numel();
  PrimExpr start = BufferLoad(S, {I32(0)}), delta = BufferLoad(D, {I32(0)});
  Stmt body = Loop(
      "i", n, [&](PrimExpr i) { return BufferStore(Y, start + cast(Y->dtype, i) * delta, {i}); });
  // max(ceil((limit - start) / delta), 0), in double (exact for the integer types' ranges)
  auto f64 = [](PrimExpr x) { return cast(DataType::Float(64), x); };
  PrimExpr q = (f64(BufferLoad(L, {I32(0)})) - f64(start)) / f64(delta);
  PrimExpr t = cast(DataType::Float(64), cast(DataType::Int(64), q));  // q truncated
  PrimExpr count =
      cast(DataType::Int(64), select(t < q, t + make_const(DataType::Float(64), 1.0), t));
  count = select(count < I64(0), I64(0), count);
  Stmt check =
      IfThenElse(ne(count, I64(n)),
                 Fail("Range: start, limit and delta give %d elements, not " + std::to_string(n) +
                          ", the output length the model declares and the kernel was compiled for",
                      {count}));
  return MakeFunc(call, p, Seq({check, body}));
}

PrimFunc LowerOneHot(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> is = Shape(call.inputs[0]), os = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(os.size());
  int64_t axis = Axis("OneHot", AttrInt(call.attrs, "axis", -1), rank);
  if (static_cast<int64_t>(is.size()) + 1 != rank)
    TILECORE_THROW(ValueError) << "LowerHostOp(OneHot): output rank " << rank << ", expected "
                               << is.size() + 1;
  int64_t depth = os[axis];
  Buffer I = Flat(p.in[0], "I"), V = Flat(p.in[2], "V"), Y = Flat(p.out[0], "Y");
  Stmt body = Loop("o", Numel(os), [&](PrimExpr o) {
    std::vector<PrimExpr> c = Unravel(o, os);
    PrimExpr pos = c[axis];
    c.erase(c.begin() + axis);
    // indices may be float; negative ones count from the end
    PrimExpr raw = Convert(DataType::Int(64), BufferLoad(I, {Ravel(c, is)}));
    PrimExpr k = select(raw < I64(0), raw + I64(depth), raw);
    PrimExpr on = eq(k, cast(DataType::Int(64), pos));
    return BufferStore(
        Y, cast(Y->dtype, select(on, BufferLoad(V, {I32(1)}), BufferLoad(V, {I32(0)}))), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

PrimFunc LowerConstantOfShape(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  Buffer Y = Flat(p.out[0], "Y");
  DataType t = Y->dtype;
  double v = HasAttr(call.attrs, "value") ? AttrFloat(call.attrs, "value", 0.0) : 0.0;
  PrimExpr c = t.is_float() ? make_const(t, v) : make_const(t, static_cast<int64_t>(v));
  if (auto i = HasAttr(call.attrs, "value") ? call.attrs.Get(String("value"))->try_cast<int64_t>()
                                            : std::nullopt;
      i && !t.is_float())
    c = make_const(t, *i);  // (an int64 beyond 2^53 is not a double)
  return MakeFunc(call, p, Seq({Loop("i", call.outputs[0]->numel(), [&](PrimExpr i) {
                    return BufferStore(Y, c, {i});
                  })}));
}

std::string CheckConstantOfShape(const std::string& op, const Map<String, Any>& attrs,
                                 const std::vector<TensorSpec>& in) {
  if (HasAttr(attrs, "value")) {
    auto v = attrs.Get(String("value"));
    if (!v->try_cast<double>()) return "ConstantOfShape: the attribute value must be a number";
  }
  return "";
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  using namespace host;  // NOLINT(build/namespaces)
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    RegisterHostKernel(op, HostKernel{Inputs(1, 2), LowerReduce, 1});
  for (const char* op : {"ArgMax", "ArgMin", "Hardmax"})
    RegisterHostKernel(op, HostKernel{Inputs(1, 1), LowerArg, 1});
  RegisterHostKernel("Softmax", HostKernel{Inputs(1, 1), LowerSoftmax, 1});
  RegisterHostKernel("LogSoftmax", HostKernel{Inputs(1, 1), LowerSoftmax, 1});
  RegisterHostKernel("Slice", HostKernel{Inputs(1, 5), LowerSlice, 1});
  RegisterHostKernel("LayerNormalization", HostKernel{Inputs(1, 3), LowerLayerNorm, 3});
  RegisterHostKernel("NegativeLogLikelihoodLoss", HostKernel{IndexInputs(2, 3, 1), LowerNll, 3});
  RegisterHostKernel("Dropout", HostKernel{CheckDropout, LowerDropout, 1});
  RegisterHostKernel("Pad", HostKernel{Inputs(1, 4), LowerPad, 1});
  RegisterHostKernel("CumSum", HostKernel{Inputs(1, 2), LowerCumSum, 1});
  RegisterHostKernel("CumProd", HostKernel{Inputs(1, 2), LowerCumSum, 1});
  RegisterHostKernel("TopK", HostKernel{Inputs(1, 2), LowerTopK, 1});
  RegisterHostKernel("Gather", HostKernel{IndexInputs(2, 2, 1), LowerGather, 2});
  RegisterHostKernel("GatherElements", HostKernel{IndexInputs(2, 2, 1), LowerGatherElements, 2});
  RegisterHostKernel("GatherND", HostKernel{IndexInputs(2, 2, 1), LowerGatherND, 2});
  RegisterHostKernel("ScatterElements", HostKernel{IndexInputs(3, 3, 1), LowerScatterElements, 3});
  RegisterHostKernel("Scatter", HostKernel{IndexInputs(3, 3, 1), LowerScatterElements, 3});
  RegisterHostKernel("ScatterND", HostKernel{IndexInputs(3, 3, 1), LowerScatterND, 3});
  RegisterHostKernel("TensorScatter", HostKernel{IndexInputs(2, 3, 2), LowerTensorScatter, -1});
  RegisterHostKernel("Concat", HostKernel{Inputs(1, 64), LowerConcat, -1});
  RegisterHostKernel("Split", HostKernel{Inputs(1, 2), LowerSplit, 1});
  RegisterHostKernel("Transpose", HostKernel{Inputs(1, 1), LowerTranspose, 1});
  RegisterHostKernel("Tile", HostKernel{Inputs(2, 2), LowerTile, 1});
  RegisterHostKernel("Trilu", HostKernel{IndexInputs(1, 2, 1), LowerTrilu, 2});
  RegisterHostKernel("Range", HostKernel{Inputs(3, 3), LowerRange, 3});
  RegisterHostKernel("OneHot", HostKernel{Inputs(3, 3), LowerOneHot, 3});
  RegisterHostKernel("ConstantOfShape", HostKernel{CheckConstantOfShape, LowerConstantOfShape, 0});
  RegisterHostKernel("EyeLike", HostKernel{CheckEyeLike, LowerEyeLike, 0});
  RegisterHostKernel("Compress", HostKernel{Inputs(2, 2), LowerCompress, 2});
  RegisterHostKernel("ai.onnx.ml::ArrayFeatureExtractor",
                     HostKernel{IndexInputs(2, 2, 1), LowerArrayFeatureExtractor, 2});
  RegisterHostKernel("ReverseSequence", HostKernel{IndexInputs(2, 2, 1), LowerReverseSequence, 2});
});

}  // namespace compiler
}  // namespace tilecore
