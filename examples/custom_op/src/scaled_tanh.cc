/*
 * examples/custom_op/src/scaled_tanh.cc — a graph op added to tilecore from a
 * separately built library: example::ScaledTanh, y = alpha * tanh(beta * x).
 *
 * Build it (see CMakeLists.txt or Makefile), then from Python:
 *
 *   tilecore.load_library("build/libtilecore_custom_op.so")
 *   graph = tilecore.frontend.from_onnx(model)   # a model with example::ScaledTanh nodes
 *   tilecore.frontend.evaluate(graph, {"x": x})
 *
 * Everything the registry needs is C++: the attribute schema, type inference and
 * the reference implementation.
 */
#include <cmath>

#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/graph_op.h"

namespace {

using namespace tilecore::ir;  // NOLINT
using tilecore::ffi::Any;
using tilecore::ffi::Array;
using tilecore::ffi::Function;
using tilecore::ffi::Map;
using tilecore::ffi::NDArray;
using tilecore::ffi::String;

// [custom_op_attr.begin]
// The attribute schema: name -> [kind, default, required].
Map<String, Any> ScaledTanhAttrs() {
  Map<String, Any> attrs;
  attrs.Set(String("alpha"), Array<Any>{Any(String("float")), Any(1.0), Any(false)});
  attrs.Set(String("beta"), Array<Any>{Any(String("float")), Any(1.0), Any(false)});
  return attrs;
}

double FloatAttr(const Map<String, Any>& attrs, const char* name) {
  Any v = attrs.at(String(name));
  if (auto d = v.try_cast<double>()) return *d;
  TILECORE_THROW(TypeError) << "ScaledTanh: attribute `" << name << "` must be a float, got "
                            << v.GetTypeKey();
}
// [custom_op_attr.end]

// [custom_op_infer.begin]
// Type inference: one entry per output, the input's type (shape, dtype) unchanged.
// Unknown input (None) gives an unknown output; a non-float input is an error.
Array<Any> ScaledTanhInfer(Map<String, Any>, Array<Any> inputs) {
  Array<Any> out;
  auto x = inputs.empty() ? std::nullopt : inputs.raw(0).try_cast<Value>();
  if (!x.has_value()) {
    out.push_back(Any());
    return out;
  }
  auto t = (*x)->type.as<TensorTypeNode>();
  if (t != nullptr && t->dtype != "float32" && t->dtype != "float64") {
    TILECORE_THROW(TypeError) << "ScaledTanh: input dtype " << t->dtype.view()
                              << " is not supported (float32, float64)";
  }
  out.push_back(Any((*x)->type));
  return out;
}
// [custom_op_infer.end]

// [custom_op_reference.begin]
template <typename T>
NDArray Apply(const NDArray& x, double alpha, double beta) {
  NDArray y = NDArray::Empty(x.shape(), x.dtype(), DLDevice{kDLCPU, 0});
  const T* a = x.data<T>();
  T* b = y.data<T>();
  for (int64_t i = 0, n = x.NumElements(); i < n; ++i) {
    b[i] = static_cast<T>(alpha * std::tanh(beta * static_cast<double>(a[i])));
  }
  return y;
}

// The reference implementation: host arrays in, one array per output out.
Array<Any> ScaledTanhReference(Map<String, Any> attrs, Array<Any> inputs) {
  if (inputs.size() != 1)
    TILECORE_THROW(ValueError) << "ScaledTanh takes 1 input, got " << inputs.size();
  auto x = inputs.raw(0).try_cast<NDArray>();
  if (!x.has_value())
    TILECORE_THROW(TypeError) << "ScaledTanh: expected an array, got "
                              << inputs.raw(0).GetTypeKey();
  if (x->device().device_type != kDLCPU || !x->IsContiguous()) {
    TILECORE_THROW(ValueError) << "ScaledTanh: expected a contiguous host array";
  }
  double alpha = FloatAttr(attrs, "alpha"), beta = FloatAttr(attrs, "beta");
  DLDataType t = x->dtype();
  Array<Any> out;
  if (t.code == kDLFloat && t.bits == 32) {
    out.push_back(Apply<float>(*x, alpha, beta));
  } else if (t.code == kDLFloat && t.bits == 64) {
    out.push_back(Apply<double>(*x, alpha, beta));
  } else {
    TILECORE_THROW(TypeError) << "ScaledTanh: dtype is not supported (float32, float64)";
  }
  return out;
}
// [custom_op_reference.end]

}  // namespace

// [custom_op_register.begin]
// Registered when the library is loaded (tilecore.load_library): name, domain,
// attribute schema, inputs (min, max), outputs (min, max), since_version, infer, reference.
TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterGraphOp(
      GraphOpDef(String("ScaledTanh"), String("example"), ScaledTanhAttrs(), 1, 1, 1, 1, 1,
                 Function::FromTyped(ScaledTanhInfer, "example::ScaledTanh.infer"),
                 Function::FromTyped(ScaledTanhReference, "example::ScaledTanh.reference"),
                 String("alpha * tanh(beta * x)")));
});
// [custom_op_register.end]
