/*
 * src/compiler/host_batch_norm.cc — the host kernel of BatchNormalization, in both modes,
 * any float dtype (float16, bfloat16, float32, float64; X, scale/B and mean/var each its
 * own), computed in float64 and rounded once per output.
 *
 * X is (N, C, D1, ...), rank >= 2; scale, B, mean and var hold one value per channel
 * (axis 1). Per channel c, over the N * D1 * ... values of that channel:
 * - inference (training_mode 0, or an opset before 14):
 *     Y = scale * (X - mean) / sqrt(var + epsilon) + B
 * - training (training_mode 1, opset 14 and 15): the batch's own statistics, two passes
 *   as numpy (onnx/reference/ops/op_batch_normalization.py, and ONNX Runtime):
 *     m = the mean of X, v = the biased variance of X (divided by the count, not count - 1)
 *     Y = scale * (X - m) / sqrt(v + epsilon) + B
 *     running_mean = mean * momentum + m * (1 - momentum)   (output 1, when asked)
 *     running_var  = var * momentum + v * (1 - momentum)    (output 2, when asked)
 *
 * Rationale: the npu strategy (strategy_norm.cc) has fixed statistics and refuses training
 * mode, so the host's fallback of running that strategy on float32 copies refuses it too;
 * a kernel of its own also keeps float64 inference in float64. The npu still runs
 * inference-mode float32 nodes: the partition asks the strategy first.
 */
#include <cmath>

#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

const char* const kOperands[] = {"X", "scale", "B", "input_mean", "input_var"};

bool Training(const Map<String, Any>& attrs) {
  return AttrInt(attrs, "training_mode", 0) != 0 && AttrInt(attrs, "_opset", 15) >= 14;
}

std::string CheckBatchNorm(const std::string& op, const Map<String, Any>& attrs,
                           const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 5, 5);
  if (!w.empty()) return w;
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i]->dtype.is_float())
      return op + ": input " + std::to_string(i) + " (" + kOperands[i] +
             ") must be a float tensor, got " + in[i]->dtype.str();
  std::vector<int64_t> s = Shape(in[0]);
  if (s.size() < 2)
    return op + ": X of rank " + std::to_string(s.size()) + " has no channel axis (rank >= 2)";
  for (size_t i = 1; i < in.size(); ++i) {
    std::vector<int64_t> c = Shape(in[i]);
    if (c.size() != 1 || c[0] != s[1])
      return op + ": input " + std::to_string(i) + " (" + kOperands[i] + ") must hold one value " +
             "per channel: shape [" + std::to_string(s[1]) + "], got rank " +
             std::to_string(c.size()) + (c.size() == 1 ? " of " + std::to_string(c[0]) : "");
  }
  return "";
}

PrimFunc LowerBatchNorm(const OpCall& call) {
  const bool training = Training(call.attrs);
  if (call.outputs.empty() || call.outputs.size() > (training ? 3u : 1u))
    TILECORE_THROW(ValueError) << "LowerHostOp(BatchNormalization): expected "
                               << (training ? "1 to 3 outputs (Y, running_mean, running_var)"
                                            : "1 output in inference mode")
                               << ", got " << call.outputs.size();
  Params p = MakeParams(call);
  std::vector<int64_t> s = Shape(call.inputs[0]);
  const int64_t N = s[0], C = s[1], D = Numel(s) / std::max<int64_t>(N * C, 1);
  // ONNX's float attributes are float32, their defaults too: an importer's default of 0.9 as a
  // double would give other running values than ONNX Runtime's and the reference's 0.9f
  const double eps = static_cast<float>(AttrFloat(call.attrs, "epsilon", 1e-5));
  const double momentum = static_cast<float>(AttrFloat(call.attrs, "momentum", 0.9));
  DataType f64 = DataType::Float(64);
  auto num = [&](double v) { return make_const(f64, v); };
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  Buffer Sc = Flat(p.in[1], "Scale"), B = Flat(p.in[2], "B");
  Buffer Mi = Flat(p.in[3], "InputMean"), Vi = Flat(p.in[4], "InputVar");
  auto ld = [&](const Buffer& b, PrimExpr i) { return cast(f64, BufferLoad(b, {i})); };
  // the channel's mean, then its variance (its deviation once the outputs 1 and 2 are written)
  Buffer stats = Local({2}, f64, "stats");
  PrimExpr mean = BufferLoad(stats, {I32(0)}), var = BufferLoad(stats, {I32(1)});
  auto set = [&](int k, PrimExpr v) { return BufferStore(stats, v, {I32(k)}); };

  Stmt body = Loop("c", C, [&](PrimExpr c) {
    // element (n, c, d) of X and Y
    auto at = [&](PrimExpr n, PrimExpr d) { return (n * I32(C) + c) * I32(D) + d; };
    auto over = [&](const std::function<Stmt(PrimExpr)>& f) {
      return Loop("n", N, [&](PrimExpr n) {
        return Loop("d", D, [&](PrimExpr d) { return f(at(n, d)); });
      });
    };
    std::vector<Stmt> st;
    if (training) {
      // 0 / 0 (NaN) for a channel without values, as numpy's mean of nothing
      PrimExpr count = num(static_cast<double>(N * D));
      st.push_back(set(0, num(0.0)));
      st.push_back(over([&](PrimExpr i) { return set(0, mean + ld(X, i)); }));
      st.push_back(set(0, mean / count));
      st.push_back(set(1, num(0.0)));
      st.push_back(over([&](PrimExpr i) {
        PrimExpr dx = ld(X, i) - mean;
        return set(1, var + dx * dx);
      }));
      st.push_back(set(1, var / count));
      if (p.out.size() > 1)
        st.push_back(BufferStore(
            Flat(p.out[1], "RunningMean"),
            cast(p.out[1]->dtype, ld(Mi, c) * num(momentum) + mean * num(1.0 - momentum)), {c}));
      if (p.out.size() > 2)
        st.push_back(BufferStore(
            Flat(p.out[2], "RunningVar"),
            cast(p.out[2]->dtype, ld(Vi, c) * num(momentum) + var * num(1.0 - momentum)), {c}));
    } else {
      st.push_back(set(0, ld(Mi, c)));
      st.push_back(set(1, ld(Vi, c)));
    }
    st.push_back(set(1, ir::call("tir.sqrt", {var + num(eps)})));  // now the deviation
    st.push_back(over([&](PrimExpr i) {
      PrimExpr y = ld(Sc, c) * (ld(X, i) - mean) / var + ld(B, c);
      return BufferStore(Y, cast(Y->dtype, y), {i});
    }));
    return Seq(st);
  });
  return MakeFunc(call, p, Allocate(stats, Seq({body})));
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("BatchNormalization",
                     HostKernel{host::CheckBatchNorm, host::LowerBatchNorm, 5});
});

}  // namespace compiler
}  // namespace tilecore
