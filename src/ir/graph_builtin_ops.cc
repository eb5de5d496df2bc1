/*
 * src/ir/graph_builtin_ops.cc — graph ops of the "tilecore" domain: the canonical
 * forms graph passes produce that ONNX has no op for (RecognizeActivations turns
 * x * Sigmoid(x) into tilecore::SiLU, Where(IsNaN(x), c, x) into tilecore::ReplaceNaN).
 * Written in C++, infer and reference alike.
 */
#include <cmath>

#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/graph_op.h"

namespace tilecore {
namespace ir {

namespace {

Array<Any> SameTypeAsInput0(Map<String, Any>, Array<Any> inputs) {
  Array<Any> out;
  auto v = inputs.empty() ? std::optional<Value>() : AsObject<Value>(inputs.raw(0));
  out.push_back(v.has_value() ? Any((*v)->type) : Any());
  return out;
}

template <typename T, typename F>
NDArray Map1(const NDArray& x, F f) {
  NDArray y = NDArray::Empty(x.shape(), x.dtype(), DLDevice{kDLCPU, 0});
  const T* a = x.data<T>();
  T* b = y.data<T>();
  for (int64_t i = 0, n = x.NumElements(); i < n; ++i) b[i] = f(a[i]);
  return y;
}

/*!
 * \brief [f(x)] for the one input of the element-wise op `op`, a contiguous float32 or
 * float64 host array; f is called with float or double. Errors name the op.
 */
template <typename F>
Array<Any> MapFloat(const char* op, const Array<Any>& inputs, F f) {
  if (inputs.size() != 1)
    TILECORE_THROW(ValueError) << op << " takes 1 input, got " << inputs.size();
  auto x = inputs.raw(0).try_cast<NDArray>();
  if (!x.has_value())
    TILECORE_THROW(TypeError) << op << ": expected an array, got " << inputs.raw(0).GetTypeKey();
  if (x->device().device_type != kDLCPU || !x->IsContiguous())
    TILECORE_THROW(ValueError) << op << ": expected a contiguous host array";
  DLDataType t = x->dtype();
  Array<Any> out;
  if (t.code == kDLFloat && t.bits == 32) {
    out.push_back(Map1<float>(*x, f));
  } else if (t.code == kDLFloat && t.bits == 64) {
    out.push_back(Map1<double>(*x, f));
  } else {
    TILECORE_THROW(TypeError) << op << ": dtype " << DtypeOfNDArray(*x)
                              << " is not supported (float32, float64)";
  }
  return out;
}

Array<Any> SiLUReference(Map<String, Any>, Array<Any> inputs) {
  return MapFloat("SiLU", inputs, [](auto v) {
    using T = decltype(v);
    return v / (T(1) + std::exp(-v));
  });
}

/*! \brief x where it is not NaN, else the attribute `value` (float32, float64). */
Array<Any> ReplaceNaNReference(Map<String, Any> attrs, Array<Any> inputs) {
  double value = 0.0;
  if (auto v = attrs.Get(String("value")); v.has_value())
    value = v->try_cast<double>().value_or(0.0);
  return MapFloat("ReplaceNaN", inputs, [value](auto v) {
    using T = decltype(v);
    return std::isnan(v) ? T(value) : v;
  });
}

/*! \brief Registers tilecore::ReplaceNaN (out of the init block: its commas are the macro's). */
void RegisterReplaceNaN() {
  Map<String, Any> replace_nan_attrs;
  replace_nan_attrs.Set(String("value"),
                        Any(Array<Any>({Any(String("float")), Any(0.0), Any(false)})));
  RegisterGraphOp(
      GraphOpDef(String("ReplaceNaN"), String("tilecore"), replace_nan_attrs, 1, 1, 1, 1, 1,
                 Function::FromTyped(SameTypeAsInput0, "tilecore::ReplaceNaN.infer"),
                 Function::FromTyped(ReplaceNaNReference, "tilecore::ReplaceNaN.reference"),
                 String("x where it is not NaN, else value")));
}

}  // namespace

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterGraphOp(GraphOpDef(String("SiLU"), String("tilecore"), Map<String, Any>(), 1, 1, 1, 1, 1,
                             Function::FromTyped(SameTypeAsInput0, "tilecore::SiLU.infer"),
                             Function::FromTyped(SiLUReference, "tilecore::SiLU.reference"),
                             String("x * sigmoid(x)")));
  RegisterReplaceNaN();
});

}  // namespace ir
}  // namespace tilecore
