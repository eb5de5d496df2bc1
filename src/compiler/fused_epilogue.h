/*
 * src/compiler/fused_epilogue.h — what a Conv does to its f32 result before storing it,
 * when the driver fused the nodes after it (docs/compiler.md, "Epilogue fusion"):
 *
 *   tc_residual = 1         the last input (the output's shape) is added: f32, or in an
 *                           int8 Conv int8 with tc_residual_scale (and _zero_point),
 *                           added in the residual's units (ResidualUnits below)
 *   tc_activation = "Relu"  then max(y, 0)
 *   tc_activation = "Clip"  then min(max(y, tc_clip_min), tc_clip_max)
 *   tc_activation = "Sigmoid" then sigmoid(y) (one vector command)
 *   tc_activation = "SiLU", "HardSwish" or "HardSigmoid" (its alpha and beta as
 *                           tc_activation_alpha, tc_activation_beta; ONNX's defaults 0.2
 *                           and 0.5) then the op's passes (activation_passes.h), through a
 *                           scratch tile of the result's shape
 *   tc_residual_last = 1    the residual (f32, a Conv not in int8) is added after the
 *                           activation instead (YOLO's Conv -> SiLU -> Add)
 *
 * The order is ONNX's Conv -> Add -> Relu/Clip (or Conv -> activation -> Add), each
 * rounded to f32 as the separate nodes would be, so a fused Conv gives the same bits as
 * the unfused nodes (an int8 residual excepted: it is added in int8 precision, as any
 * int8 engine does). Fusing saves
 * the Add's and the activation's DDR round trips (read two tensors, write one; read one,
 * write one): those steps are DMA-bound and take as long as a Conv in ResNet-50.
 */
#ifndef TILECORE_SRC_COMPILER_FUSED_EPILOGUE_H_
#define TILECORE_SRC_COMPILER_FUSED_EPILOGUE_H_

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "activation_passes.h"
#include "kernel_util.h"

namespace tilecore {
namespace compiler {
namespace detail {

struct FusedEpilogue {
  int64_t residual = -1;  // index of the input added to the result, or -1
  // "", "Relu", "Clip", "Sigmoid", "SiLU", "HardSwish" or "HardSigmoid"
  std::string activation;
  bool residual_last = false;  // the residual added after the activation
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  double alpha = 0.2, beta = 0.5;  // HardSigmoid's
  bool any() const { return residual >= 0 || !activation.empty(); }
  // an activation of several passes (activation_passes.h): it needs a scratch tile
  bool passes() const {
    return activation == "SiLU" || activation == "HardSwish" || activation == "HardSigmoid";
  }
  // an activation that is more than bounds on the result (no form in residual units)
  bool curved() const { return passes() || activation == "Sigmoid"; }
};

inline FusedEpilogue GetFusedEpilogue(const Map<String, Any>& attrs, size_t n_inputs) {
  FusedEpilogue e;
  if (AttrInt(attrs, "tc_residual", 0) != 0 && n_inputs > 0)
    e.residual = static_cast<int64_t>(n_inputs) - 1;
  e.residual_last = e.residual >= 0 && AttrInt(attrs, "tc_residual_last", 0) != 0;
  e.activation = AttrStr(attrs, "tc_activation", "");
  if (e.activation == "Relu") e.lo = 0;
  if (e.activation == "Clip") {
    e.lo = AttrFloat(attrs, "tc_clip_min", e.lo);
    e.hi = AttrFloat(attrs, "tc_clip_max", e.hi);
  }
  e.alpha = AttrFloat(attrs, "tc_activation_alpha", e.alpha);
  e.beta = AttrFloat(attrs, "tc_activation_beta", e.beta);
  return e;
}

/*!
 * \brief "" when the fused epilogue of `op` is well formed for an output of shape
 * `out` (the residual f32 and of that shape; a known activation), else the reason.
 * `ins` gets the inputs without the residual.
 */
inline std::string CheckFusedEpilogue(const std::string& op, const Map<String, Any>& attrs,
                                      std::vector<TensorSpec>* ins) {
  FusedEpilogue e = GetFusedEpilogue(attrs, ins->size());
  if (!e.activation.empty() && e.activation != "Relu" && e.activation != "Clip" && !e.curved())
    return op + ": tc_activation `" + e.activation +
           "` (expected Relu, Clip, Sigmoid, SiLU, HardSwish or HardSigmoid)";
  if (e.lo > e.hi) return op + ": tc_clip_min is above tc_clip_max";
  if (AttrInt(attrs, "tc_residual_last", 0) != 0 && e.residual < 0)
    return op + ": tc_residual_last without tc_residual";
  if (e.residual < 0) return "";
  if (e.residual < 3 || !(*ins)[e.residual].defined())
    return op +
           ": tc_residual needs the residual as the last input, after the bias (which "
           "may be omitted)";
  DataType rt = (*ins)[e.residual]->dtype;
  if (e.residual_last &&
      (rt != DataType::Float(32) || AttrStr(attrs, "tc_precision", "f32") == "int8"))
    return op +
           ": a residual after the activation (tc_residual_last) is float32, in a Conv "
           "not in int8 (an int8 Conv adds its residual in the matrix engine's epilogue, "
           "before the activation)";
  if (rt == DataType::Int(8) && e.curved())  // (added in the residual's units: only bounds)
    return op + ": tc_activation " + e.activation + " after an int8 residual";
  if (rt == DataType::Int(8) && AttrStr(attrs, "tc_precision", "f32") == "int8") {
    if (!(AttrFloat(attrs, "tc_residual_scale", 0) > 0))
      return op + ": an int8 residual needs a positive tc_residual_scale";
    int64_t zp = AttrInt(attrs, "tc_residual_zero_point", 0);
    if (zp < -128 || zp > 127) return op + ": tc_residual_zero_point out of the int8 range";
  } else if (rt != DataType::Float(32)) {
    return op + ": the residual input has dtype " + rt.str() +
           "; a fused residual is float32 (or int8 in an int8 Conv)";
  }
  ins->pop_back();
  return "";
}

/*! \brief "" when the residual has the output's shape, else the reason. */
inline std::string CheckResidualShape(const std::string& op, const FusedEpilogue& e,
                                      const std::vector<TensorSpec>& ins,
                                      const std::vector<int64_t>& out) {
  if (e.residual < 0 || Shape(ins[e.residual]) == out) return "";
  std::string s;
  for (int64_t d : out) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return op + ": the residual input's shape is not the output's [" + s + "]";
}

/*! \brief Whether quantising `v` to int8 (times f32(inv), plus zp, round half even,
 * saturate; QuantiseSteps) gives `limit` (-128 or 127) or beyond. */
inline bool QuantisesTo(double v, double inv, int64_t zp, int limit) {
  float t = static_cast<float>(v) * static_cast<float>(inv);
  t = t + static_cast<float>(zp);
  const float r = std::nearbyint(t);
  return limit < 0 ? r <= limit : r >= limit;
}

/*!
 * \brief `e` without the activation bounds that an int8 output's quantisation applies
 * anyway: quantising is monotonic, so max(y, lo) quantises to max(q(y), q(lo)), which is
 * q(y) when q(lo) is -128 (a Relu before a zero point of -128), and min(y, hi) to q(y) when
 * q(hi) is 127. Each bound dropped is a vector pass saved, the bits unchanged.
 */
inline FusedEpilogue WithoutSaturatedBounds(FusedEpilogue e, double inv, int64_t zp) {
  if (std::isfinite(e.lo) && QuantisesTo(e.lo, inv, zp, -128))
    e.lo = -std::numeric_limits<double>::infinity();
  if (std::isfinite(e.hi) && QuantisesTo(e.hi, inv, zp, 127))
    e.hi = std::numeric_limits<double>::infinity();
  return e;
}

/*!
 * \brief How an int8 Conv adds an int8 residual (docs/precision.md, "Int8 residuals"): in
 * the residual's units, as the matrix engine's epilogue can, so that no vector pass
 * dequantises the residual or applies the activation:
 *
 *   u = clamp(f32(acc + bias) * f32(w_scale[m] * x_factor) + f32(r) - zero_point, lo, hi)
 *
 * each step rounded to f32 in this order (the mm epilogue's), then y = u * out_scale for an
 * f32 output, or q = sat_i8(round_half_even(u * out_scale + y_zero_point)) for an int8 one.
 */
struct ResidualUnits {
  double x_factor = 1;     // f32(x_scale / residual_scale)
  int64_t zero_point = 0;  // the residual's
  double out_scale = 1;    // f32(residual_scale / y_scale) for an int8 output, else residual_scale
  double lo = -std::numeric_limits<double>::infinity();  // the activation's bounds, in the
  double hi = std::numeric_limits<double>::infinity();   // residual's units (Relu: lo = 0)
};

inline ResidualUnits GetResidualUnits(const Map<String, Any>& attrs, const FusedEpilogue& e,
                                      bool y_i8) {
  auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  const double rs = f32(AttrFloat(attrs, "tc_residual_scale", 1.0));
  ResidualUnits u;
  u.x_factor = f32(f32(AttrFloat(attrs, "tc_x_scale", 1.0)) / rs);
  u.zero_point = AttrInt(attrs, "tc_residual_zero_point", 0);
  u.out_scale = y_i8 ? f32(rs / f32(AttrFloat(attrs, "tc_y_scale", 1.0))) : rs;
  if (!e.activation.empty()) {
    u.lo = std::isfinite(e.lo) ? f32(e.lo / rs) : e.lo;
    u.hi = std::isfinite(e.hi) ? f32(e.hi / rs) : e.hi;
  }
  if (y_i8) {  // the bounds the output's quantisation applies anyway
    const int64_t y_zp = AttrInt(attrs, "tc_y_zero_point", 0);
    if (std::isfinite(u.lo) && QuantisesTo(u.lo, u.out_scale, y_zp, -128))
      u.lo = -std::numeric_limits<double>::infinity();
    if (std::isfinite(u.hi) && QuantisesTo(u.hi, u.out_scale, y_zp, 127))
      u.hi = std::numeric_limits<double>::infinity();
  }
  return u;
}

/*! \brief The vector engine's form of the residual steps of ResidualUnits on the f32 tile
 * `v` (already f32(acc + bias) * scale): r8 converted into the f32 tile `rf` and added, the
 * zero point subtracted, then the clamp; one vector command per step. */
inline std::vector<Stmt> AddConvertedResidualInUnits(const ResidualUnits& u, const Buffer& v,
                                                     const Buffer& rf, const NestFn& nest);
inline std::vector<Stmt> AddResidualInUnits(const ResidualUnits& u, const Buffer& v,
                                            const Buffer& r8, const Buffer& rf,
                                            const NestFn& nest) {
  std::vector<Stmt> s;
  s.push_back(nest([&](const Array<PrimExpr>& i) {
    return BufferStore(rf, Cast(DataType::Float(32), BufferLoad(r8, i)), i);
  }));
  for (Stmt& x : AddConvertedResidualInUnits(u, v, rf, nest)) s.push_back(std::move(x));
  return s;
}

/*! \brief AddResidualInUnits' steps after the conversion: `rf` holds f32(r8) already. */
inline std::vector<Stmt> AddConvertedResidualInUnits(const ResidualUnits& u, const Buffer& v,
                                                     const Buffer& rf, const NestFn& nest) {
  std::vector<Stmt> s;
  s.push_back(nest([&](const Array<PrimExpr>& i) {
    return BufferStore(v, BufferLoad(v, i) + BufferLoad(rf, i), i);
  }));
  if (u.zero_point != 0)
    s.push_back(nest([&](const Array<PrimExpr>& i) {
      return BufferStore(v, BufferLoad(v, i) + F32(static_cast<double>(-u.zero_point)), i);
    }));
  if (std::isfinite(u.lo))
    s.push_back(nest([&](const Array<PrimExpr>& i) {
      return BufferStore(v, max(BufferLoad(v, i), F32(u.lo)), i);
    }));
  if (std::isfinite(u.hi))
    s.push_back(nest([&](const Array<PrimExpr>& i) {
      return BufferStore(v, min(BufferLoad(v, i), F32(u.hi)), i);
    }));
  return s;
}

/*! \brief The activation of `e` on every element of `v`, over the loops `nest` makes;
 * an empty statement when there is none. One statement per bound: each is one vector
 * command (max, then min), where min(max(..)) would stay a scalar loop. An activation of
 * several passes writes its intermediate values to `scratch` (a tile of v's shape). The
 * same commands as the activation's own op (strategy_elementwise.cc): the same bits. */
inline Stmt ApplyActivation(const FusedEpilogue& e, const Buffer& v, const NestFn& nest,
                            const Buffer& scratch = Buffer()) {
  std::vector<Stmt> s;
  if (e.passes()) {
    if (!scratch.defined())
      TILECORE_THROW(InternalError)
          << "ApplyActivation: " << e.activation << " needs a scratch tile";
    Map<String, Any> attrs;
    attrs.Set("alpha", e.alpha);
    attrs.Set("beta", e.beta);
    std::vector<ActivationPass> passes = ActivationPasses(e.activation, attrs);
    for (size_t k = 0; k < passes.size(); ++k) {
      const Buffer& dst = k + 1 == passes.size() ? v : scratch;
      s.push_back(nest([&](const Array<PrimExpr>& i) {
        return BufferStore(dst, passes[k](BufferLoad(v, i), BufferLoad(scratch, i)), i);
      }));
    }
  }
  if (e.activation == "Sigmoid")
    s.push_back(nest([&](const Array<PrimExpr>& i) {
      return BufferStore(v, call("tir.sigmoid", {BufferLoad(v, i)}), i);
    }));
  if (!e.activation.empty() && std::isfinite(e.lo))
    s.push_back(nest([&](const Array<PrimExpr>& i) {
      return BufferStore(v, max(BufferLoad(v, i), F32(e.lo)), i);
    }));
  if (!e.activation.empty() && std::isfinite(e.hi))
    s.push_back(nest([&](const Array<PrimExpr>& i) {
      return BufferStore(v, min(BufferLoad(v, i), F32(e.hi)), i);
    }));
  if (s.empty()) return Evaluate(I32(0));
  return s.size() == 1 ? s[0] : Seq(s);
}

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_SRC_COMPILER_FUSED_EPILOGUE_H_
