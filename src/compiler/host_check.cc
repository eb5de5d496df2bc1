/*
 * src/compiler/host_check.cc — host kernels that check, when the model runs, an input the
 * compiler could not read when compiling.
 *
 * CheckInput: that an input gives the output shape the kernels were compiled for.
 * In: one integer (or float) tensor, the input checked (Reshape's shape, Tile's repeats,
 * Squeeze's axes, ...); no outputs. The driver adds the step before the node whose output
 * shape the model only declares (compiler/driver.py) and sets the attributes:
 *   tc_what     the node, op and input, for the message;
 *   tc_shape    the output shape the model declares, for the message;
 *   tc_reason   (instead of tc_shape) what else the kernels were compiled for, for the
 *               message (Dropout's inference mode: training_mode 0);
 *   tc_counts   (value checks) per element of the input, how many values it may take
 *               (0: any), and tc_allowed those values, in order; tc_single a value that
 *               may appear at most once (Reshape's -1);
 *   tc_rank     (axes checks) the rank the axes index, negative ones counting from it;
 *               tc_masks the axes sets that give the shape, each as tc_rank 0/1 flags.
 * A value outside what is allowed fails the run with a ValueError naming the node, the
 * input and the value, instead of the kernels computing a shape the model did not ask for.
 *
 * CheckIndices: that every index of a Gather, GatherElements, GatherND, Scatter,
 * ScatterElements or ScatterND is in range (the npu kernels clamp an index, or drop an
 * update, where ONNX says the model is in error). In: the indices (int32 or int64); no
 * outputs. Attributes:
 *   tc_what     the node, op and input, for the message;
 *   tc_bounds   the length of the data axis each index selects along: element e of the
 *               indices is checked against tc_bounds[e % size] (one entry for the
 *               gathers along an axis; one per element of an index tuple for GatherND
 *               and ScatterND); an index i is valid when -bound <= i < bound;
 *   tc_axes     the data axis of each entry of tc_bounds, for the message.
 * Rationale: one scalar compare per index on the host, before the node's step, costs
 * little beside the gather's DMA, and keeps the kernels free of a failure path.
 */
#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

std::string CheckCheckInput(const std::string& op, const Map<String, Any>& attrs,
                            const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 1);
  if (!w.empty()) return w;
  int64_t k = in[0]->numel();
  if (HasAttr(attrs, "tc_rank")) {
    int64_t r = AttrInt(attrs, "tc_rank", 0);
    auto masks = AttrInts(attrs, "tc_masks", {});
    if (r < 0 || (r > 0 && masks.size() % r != 0)) return op + ": tc_masks is not a list of masks";
    return "";
  }
  auto counts = AttrInts(attrs, "tc_counts", {});
  if (static_cast<int64_t>(counts.size()) != k)
    return op + ": tc_counts has " + std::to_string(counts.size()) + " entries for an input of " +
           std::to_string(k);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  if (total != static_cast<int64_t>(AttrInts(attrs, "tc_allowed", {}).size()))
    return op + ": tc_allowed does not have the values tc_counts counts";
  return "";
}

PrimFunc LowerCheckInput(const OpCall& call) {
  Params p = MakeParams(call);
  std::string what = AttrStr(call.attrs, "tc_what", "CheckInput");
  std::string shape = AttrStr(call.attrs, "tc_shape", "");
  std::string compiled = HasAttr(call.attrs, "tc_reason")
                             ? "; " + AttrStr(call.attrs, "tc_reason", "") + " needs "
                             : "; the output shape the model declares, " + shape +
                                   ", the one the model was compiled for, needs ";
  int64_t k = call.inputs[0]->numel();
  Buffer A = Flat(p.in[0], "A");
  std::vector<Stmt> s;
  if (HasAttr(call.attrs, "tc_rank")) {
    int64_t r = AttrInt(call.attrs, "tc_rank", 0);
    auto flat = AttrInts(call.attrs, "tc_masks", {});
    std::vector<std::vector<bool>> masks;
    std::string sets;
    for (size_t m = 0; r > 0 && m < flat.size(); m += r) {
      masks.emplace_back(flat.begin() + m, flat.begin() + m + r);
      std::string set;
      for (int64_t d = 0; d < r; ++d)
        if (flat[m + d]) set += (set.empty() ? "" : ", ") + std::to_string(d);
      sets += (sets.empty() ? "{" : " or {") + set + "}";
    }
    Buffer seen = Local({std::max<int64_t>(r, 1)}, DataType::Int(32), "seen");
    std::vector<PrimExpr> values;
    std::vector<Stmt> read = ReadAxes(what, A, k, r, seen, &values);
    read.push_back(IfThenElse(
        !AxesAre(seen, masks),
        Fail(what + " is " + ValuesFormat(k) + " when the model runs" + compiled + "axes " + sets,
             values)));
    return MakeFunc(call, p, Seq({Allocate(seen, Seq(read))}));
  }
  auto counts = AttrInts(call.attrs, "tc_counts", {});
  auto allowed = AttrInts(call.attrs, "tc_allowed", {});
  size_t next = 0;
  std::vector<PrimExpr> values;
  for (int64_t j = 0; j < k; ++j) {
    PrimExpr v = Convert(DataType::Int(64), BufferLoad(A, {I32(j)}));
    values.push_back(v);
    PrimExpr ok;
    std::string alternatives;
    for (int64_t c = 0; c < counts[j]; ++c, ++next) {
      PrimExpr e = eq(v, I64(allowed[next]));
      ok = ok.defined() ? (ok || e) : e;
      alternatives += (c ? " or " : "") + std::to_string(allowed[next]);
    }
    if (!ok.defined()) continue;  // any value
    s.push_back(IfThenElse(!ok, Fail(what + ": element " + std::to_string(j) +
                                         " is %d when the model runs" + compiled + alternatives,
                                     {v})));
  }
  if (HasAttr(call.attrs, "tc_single") && k > 1) {
    int64_t single = AttrInt(call.attrs, "tc_single", 0);
    PrimExpr n = I32(0);
    for (const PrimExpr& v : values) n = n + select(eq(v, I64(single)), I32(1), I32(0));
    s.push_back(IfThenElse(
        n > I32(1), Fail(what + " is " + ValuesFormat(k) +
                             " when the model runs: " + std::to_string(single) + " may appear once",
                         values)));
  }
  return MakeFunc(call, p, Seq(s));
}

std::string CheckCheckIndices(const std::string& op, const Map<String, Any>& attrs,
                              const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 1);
  if (!w.empty()) return w;
  if (!in[0]->dtype.is_integer()) return op + ": the indices are not integers";
  auto bounds = AttrInts(attrs, "tc_bounds", {});
  if (bounds.empty() || in[0]->numel() % static_cast<int64_t>(bounds.size()) != 0)
    return op + ": tc_bounds does not divide the indices into tuples";
  if (AttrInts(attrs, "tc_axes", {}).size() != bounds.size())
    return op + ": tc_axes does not have an axis per entry of tc_bounds";
  return "";
}

PrimFunc LowerCheckIndices(const OpCall& call) {
  Params p = MakeParams(call);
  std::string what = AttrStr(call.attrs, "tc_what", "CheckIndices");
  auto bounds = AttrInts(call.attrs, "tc_bounds", {});
  auto axes = AttrInts(call.attrs, "tc_axes", {});
  std::vector<int64_t> shape = Shape(call.inputs[0]);
  int64_t k = call.inputs[0]->numel(), size = static_cast<int64_t>(bounds.size());
  if (k == 0) return MakeFunc(call, p, Evaluate(I32(0)));
  Buffer A = Flat(p.in[0], "A");
  std::string where =
      shape.empty() ? "" : " at " + ValuesFormat(static_cast<int64_t>(shape.size()));
  Stmt body = Loop("t", k / size, [&](PrimExpr t) {
    std::vector<Stmt> s;
    for (int64_t j = 0; j < size; ++j) {
      PrimExpr e = t * I32(size) + I32(j);
      PrimExpr v = cast(DataType::Int(64), BufferLoad(A, {e}));
      std::vector<PrimExpr> args = Unravel(e, shape);
      args.insert(args.begin(), v);
      int64_t b = bounds[j];
      s.push_back(IfThenElse(
          v < I64(-b) || v >= I64(b),
          Fail(what + ": index %d" + where + " is out of range when the model runs: axis " +
                   std::to_string(axes[j]) + " of the data has " + std::to_string(b) +
                   " elements, so an index must be in [" + std::to_string(-b) + ", " +
                   std::to_string(b - 1) + "]",
               args)));
    }
    return Seq(s);
  });
  return MakeFunc(call, p, body);
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("CheckInput", HostKernel{host::CheckCheckInput, host::LowerCheckInput, 1});
  RegisterHostKernel("CheckIndices",
                     HostKernel{host::CheckCheckIndices, host::LowerCheckIndices, 1});
});

}  // namespace compiler
}  // namespace tilecore
