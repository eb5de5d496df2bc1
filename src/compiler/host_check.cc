/*
 * src/compiler/host_check.cc — the host kernel of CheckInput: a run-time check that an
 * input the compiler could not read when compiling has a value that gives the output
 * shape the kernels were compiled for.
 *
 * In: one integer (or float) tensor, the input checked (Reshape's shape, Tile's repeats,
 * Squeeze's axes, ...); no outputs. The driver adds the step before the node whose output
 * shape the model only declares (compiler/driver.py) and sets the attributes:
 *   tc_what     the node, op and input, for the message;
 *   tc_shape    the output shape the model declares, for the message;
 *   tc_counts   (value checks) per element of the input, how many values it may take
 *               (0: any), and tc_allowed those values, in order; tc_single a value that
 *               may appear at most once (Reshape's -1);
 *   tc_rank     (axes checks) the rank the axes index, negative ones counting from it;
 *               tc_masks the axes sets that give the shape, each as tc_rank 0/1 flags.
 * A value outside what is allowed fails the run with a ValueError naming the node, the
 * input and the value, instead of the kernels computing a shape the model did not ask for.
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
  std::string compiled = "; the output shape the model declares, " + shape +
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

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("CheckInput", HostKernel{host::CheckCheckInput, host::LowerCheckInput, 1});
});

}  // namespace compiler
}  // namespace tilecore
