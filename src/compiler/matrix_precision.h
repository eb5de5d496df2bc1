/*
 * src/compiler/matrix_precision.h — what a matrix op (Conv, MatMul, Gemm) computes in,
 * read from its `tc_precision` attribute (docs/precision.md): f32 (no attribute),
 * f16/bf16 (operands rounded to the narrow type in L1, f32 accumulation) or int8 (the
 * quantised-node form: activations quantised on load, int8 weights, i32 accumulation,
 * per-channel dequantisation to f32; the data may also be int8 already and, with
 * tc_y_scale, the output is stored int8).
 */
#ifndef TILECORE_SRC_COMPILER_MATRIX_PRECISION_H_
#define TILECORE_SRC_COMPILER_MATRIX_PRECISION_H_

#include <cmath>
#include <string>
#include <vector>

#include "kernel_util.h"

namespace tilecore {
namespace compiler {
namespace detail {

struct MatrixPrecision {
  std::string name = "f32";  // f32, f16, bf16, int8
  DataType operand = DataType::Float(32);
  DataType accum = DataType::Float(32);
  bool int8() const { return name == "int8"; }
  int64_t operand_bytes() const { return operand.bits() / 8; }
};

/*! \brief The precision of a matrix op; `why` gets the reason for an unknown name. */
inline MatrixPrecision GetMatrixPrecision(const Map<String, Any>& attrs,
                                          std::string* why = nullptr) {
  MatrixPrecision p;
  p.name = AttrStr(attrs, "tc_precision", "f32");
  if (p.name == "f16") {
    p.operand = DataType::Float(16);
  } else if (p.name == "bf16") {
    p.operand = DataType::BFloat16();
  } else if (p.name == "int8") {
    p.operand = DataType::Int(8);
    p.accum = DataType::Int(32);
  } else if (p.name.empty()) {
    p.name = "f32";
  } else if (p.name != "f32" && why != nullptr) {
    *why = "tc_precision `" + p.name + "` (expected f32, f16, bf16 or int8)";
  }
  return p;
}

/*!
 * \brief "" when the inputs have the dtypes the precision's quantised-node form gives
 * them (docs/precision.md), else the reason. A positive tc_b_scale marks a MatMul of
 * two activations (no int8 weights, no w_scale).
 */
inline std::string CheckMatrixInputs(const std::string& op, const Map<String, Any>& attrs,
                                     const std::vector<TensorSpec>& ins) {
  std::string why;
  MatrixPrecision p = GetMatrixPrecision(attrs, &why);
  if (!why.empty()) return op + ": " + why;
  DataType f32 = DataType::Float(32);
  auto dtype_is = [&](size_t i, DataType t, const char* what) -> std::string {
    if (i >= ins.size() || !ins[i].defined()) return "";
    if (ins[i]->dtype == t) return "";
    return op + ": input " + std::to_string(i) + " (" + what + ") has dtype " +
           ins[i]->dtype.str() + "; " + p.name + " takes " + t.str();
  };
  if (HasAttr(attrs, "tc_out_scale")) {  // a factor the result is multiplied by
    double s = AttrFloat(attrs, "tc_out_scale", 0);
    if (!p.int8()) return op + ": tc_out_scale needs the int8 form (its epilogue scale)";
    if (!(s > 0) || !std::isfinite(s)) return op + ": tc_out_scale must be positive and finite";
  }
  if (HasAttr(attrs, "tc_y_scale")) {  // an int8 output, quantised in the epilogue
    if (!p.int8() && op != "Conv")
      return op + ": an int8 output (tc_y_scale) in " + p.name + " is a Conv's only";
    if (!(AttrFloat(attrs, "tc_y_scale", 0) > 0)) return op + ": tc_y_scale must be positive";
    int64_t yzp = AttrInt(attrs, "tc_y_zero_point", 0);
    if (yzp < -128 || yzp > 127) return op + ": tc_y_zero_point out of the int8 range";
  }
  if (!p.int8()) {
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!ins[i].defined() || ins[i]->dtype == f32) continue;
      if (i == 1 && p.operand != f32 && ins[i]->dtype == p.operand)
        continue;  // a weight stored narrow
      return dtype_is(i, f32, i == 1 ? "weights" : "data");
    }
    return "";
  }
  // the data is f32 (quantised on load) or int8 (quantised by its producer, same scale)
  if (!ins.empty() && ins[0].defined() && ins[0]->dtype != DataType::Int(8)) {
    std::string r = dtype_is(0, f32, "data");
    if (!r.empty()) return r + " or int8";
  }
  std::string r = dtype_is(2, DataType::Int(32), "int32 bias");
  if (!r.empty()) return r;
  if (!(AttrFloat(attrs, "tc_x_scale", 0) > 0)) return op + ": int8 needs a positive tc_x_scale";
  int64_t zp = AttrInt(attrs, "tc_x_zero_point", 0);
  if (zp < -128 || zp > 127) return op + ": tc_x_zero_point out of the int8 range";
  bool b_act = (AttrFloat(attrs, "tc_b_scale", 0) > 0);
  if (b_act) {
    if (op != "MatMul") return op + ": tc_b_scale is for MatMul only";
    if (ins.size() != 2) return op + ": an int8 MatMul of two activations takes 2 inputs";
    if (ins[1].defined() && ins[1]->dtype == DataType::Int(8))
      return "";  // quantised by its producer
    std::string rb = dtype_is(1, f32, "B");
    return rb.empty() ? "" : rb + " or int8";
  }
  if (ins.size() != 4 || !ins[3].defined())
    return op + ": int8 expects inputs X, W, bias (may be omitted), w_scale";
  for (auto r : {dtype_is(1, DataType::Int(8), "int8 weights"), dtype_is(3, f32, "w_scale")})
    if (!r.empty()) return r;
  if (ins[3]->shape.size() != 1) return op + ": w_scale must be 1-D";
  if (ins[2].defined() && (ins[2]->shape.size() != 1 || ins[2]->shape[0] != ins[3]->shape[0]))
    return op + ": the int32 bias and w_scale must both have one value per output channel";
  return "";
}

/*! \brief f32(1 / scale), the multiplier that quantises on load. */
inline double InverseScale(double scale) {
  return static_cast<double>(static_cast<float>(1.0 / scale));
}

/*!
 * \brief Quantisation of the f32 tile `src` into the int8 tile `dst` over the loops `nest`
 * makes: dst = i8(f32(f32(src * f32(inv)) + zp)) (nearest even, saturating), one vector
 * command (tquant; src is left as it is). Every activation quantisation goes through here,
 * so a Conv that quantises its output (tc_y_scale) gives its readers the bits they would
 * make on load. With `work` (a tile of src's shape) the same steps one command each, the
 * scaled values left in work.
 */
inline std::vector<Stmt> QuantiseSteps(const Buffer& dst, const Buffer& src, double inv, int64_t zp,
                                       const NestFn& nest, const Buffer& work = Buffer()) {
  std::vector<Stmt> s;
  if (!work.defined()) {
    // one pass (the vector engine's tquant; a plain tcvt with inv 1 and no zero point): the
    // same f32 product, f32 sum and conversion, src left as it is
    s.push_back(nest([&](const Array<PrimExpr>& i) {
      PrimExpr x = BufferLoad(src, i);
      if (inv != 1.0) x = x * F32(inv);
      if (zp != 0) x = x + F32(static_cast<double>(zp));
      return BufferStore(dst, Cast(dst->dtype, x), i);
    }));
    return s;
  }
  s.push_back(nest([&](const Array<PrimExpr>& i) {
    return BufferStore(work, BufferLoad(src, i) * F32(inv), i);
  }));
  if (zp != 0)
    s.push_back(nest([&](const Array<PrimExpr>& i) {
      return BufferStore(work, BufferLoad(work, i) + F32(static_cast<double>(zp)), i);
    }));
  s.push_back(nest([&](const Array<PrimExpr>& i) {
    return BufferStore(dst, Cast(dst->dtype, BufferLoad(work, i)), i);
  }));
  return s;
}

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_SRC_COMPILER_MATRIX_PRECISION_H_
