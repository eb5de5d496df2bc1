/*
 * src/compiler/custom_kernel.cc — npu implementations registered while tilecore runs: a
 * kernel engineer's DSL kernel (tilecore.compiler.register_kernel) as the strategy of a
 * graph op. The custom strategy is two Functions, `check(attrs, inputs) -> str` ("" when
 * it takes the call) and `lower(attrs, inputs, outputs, cores) -> PrimFunc`; it stands
 * in front of the op's built-in strategy, which keeps every call the custom one declines
 * (an override for some shapes or dtypes only). The PrimFunc it returns is checked
 * against the call (one param per data input, then per output, each buffer of the
 * tensor's dtype) and named as LowerOp names every kernel.
 *
 *   compiler.RegisterCustomKernel(op_type, check, lower)
 *   compiler.RemoveCustomKernel(op_type) -> bool      (the built-in strategy back)
 *   compiler.CustomKernelTakes(op_type, attrs, inputs) -> bool
 */
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kernel_util.h"
#include "tilecore/compiler/strategy.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace compiler {
namespace {

struct CustomKernel {
  ffi::Function check, lower;
  std::shared_ptr<const Strategy> builtin;  // the strategy it stands in front of (or null)
};

std::map<std::string, CustomKernel>& Customs() {
  static std::map<std::string, CustomKernel> m;
  return m;
}
std::mutex& CustomsMutex() {
  static std::mutex m;
  return m;
}

std::optional<CustomKernel> FindCustom(const std::string& op_type) {
  std::lock_guard<std::mutex> lock(CustomsMutex());
  auto it = Customs().find(op_type);
  if (it == Customs().end()) return std::nullopt;
  return it->second;
}

Array<Any> SpecArray(const std::vector<TensorSpec>& specs) {
  Array<Any> a;
  for (const TensorSpec& t : specs) a.push_back(t.defined() ? Any(t) : Any());
  return a;
}

// The custom check's answer; an exception in it is the reason, not a crash.
std::string CustomReason(const CustomKernel& k, const std::string& op_type,
                         const Map<String, Any>& attrs, const std::vector<TensorSpec>& inputs) {
  // (a built-in strategy may take int64 indices as int32 words; a DSL kernel takes no such)
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i]->dtype.bits() == 64)
      return "input " + std::to_string(i) + " is " + inputs[i]->dtype.str() +
             ": a custom kernel takes no 64-bit tensors";
  try {
    Any r = k.check(attrs, SpecArray(inputs));
    if (auto s = r.try_cast<String>()) return std::string(s->view());
    return "the custom kernel's check for " + op_type + " returned " + r.GetTypeKey() +
           ", not a str";
  } catch (const ffi::Error& e) {
    return "the custom kernel's check for " + op_type + " raised " + std::string(e.kind()) + ": " +
           std::string(e.message());
  }
}

// A lowered custom kernel must take the params a strategy's PrimFunc takes.
ir::PrimFunc Checked(ir::PrimFunc f, const OpCall& call) {
  const std::string& op = call.op_type;
  size_t want = size_t(call.data_inputs) + call.outputs.size();
  if (f->params.size() != want)
    TILECORE_THROW(ValueError) << "custom kernel for " << op << ": it takes " << f->params.size()
                               << " params; the op has " << call.data_inputs
                               << " data input(s) and " << call.outputs.size()
                               << " output(s), one pointer param each, in that order";
  for (size_t i = 0; i < want; ++i) {
    const TensorSpec& t =
        i < size_t(call.data_inputs) ? call.inputs[i] : call.outputs[i - call.data_inputs];
    std::string what = i < size_t(call.data_inputs)
                           ? "input " + std::to_string(i)
                           : "output " + std::to_string(i - call.data_inputs);
    auto b = f->buffer_map.Get(f->params[i]);
    if (!b.has_value())
      TILECORE_THROW(ValueError) << "custom kernel for " << op << ": param " << i << " (" << what
                                 << ") is a scalar; it must be a pointer";
    if (t.defined() && (*b)->dtype != t->dtype)
      TILECORE_THROW(ValueError) << "custom kernel for " << op << ": param " << i << " (" << what
                                 << ") points to " << (*b)->dtype.str() << "; the " << what
                                 << " is " << t->dtype.str();
    if (std::string((*b)->scope.view()) != "global")
      TILECORE_THROW(ValueError) << "custom kernel for " << op << ": param " << i << " (" << what
                                 << ") is in " << (*b)->scope
                                 << " memory; tensors come in global memory";
  }
  return f.WithAttr("global_symbol", String(detail::KernelSymbol(op)))
      .WithAttr("op_type", String(op))
      .WithAttr("input_params", call.data_inputs)
      .WithAttr("custom_kernel", int64_t{1});
}

void RegisterCustom(const std::string& op_type, ffi::Function check, ffi::Function lower) {
  std::shared_ptr<const Strategy> builtin;
  {
    std::lock_guard<std::mutex> lock(CustomsMutex());
    auto it = Customs().find(op_type);
    // (a second registration replaces the first, in front of the same built-in)
    builtin = it != Customs().end() ? it->second.builtin : FindStrategy(op_type);
    Customs()[op_type] = CustomKernel{check, lower, builtin};
  }
  Strategy s;
  s.custom_kernel = true;
  if (builtin) {  // the same params as the built-in (constant inputs are not params)
    s.data_inputs = builtin->data_inputs;
    s.int64_inputs = builtin->int64_inputs;
    s.int64_outputs = builtin->int64_outputs;
    s.behind = builtin;
  }
  // the engineer's kernel takes its weights as the model has them
  s.weight_layout = [op_type](const OpCall& call, int input) -> std::string {
    auto k = FindCustom(op_type);
    if (k && k->builtin && k->builtin->weight_layout &&
        !CustomReason(*k, op_type, call.attrs, call.inputs).empty())
      return k->builtin->weight_layout(call, input);
    return "onnx";
  };
  s.check = [op_type](const std::string&, const Map<String, Any>& attrs,
                      const std::vector<TensorSpec>& inputs) -> std::string {
    auto k = FindCustom(op_type);
    if (!k) return "no npu strategy for " + op_type;
    std::string mine = CustomReason(*k, op_type, attrs, inputs);
    if (mine.empty() || !k->builtin) return mine;
    std::string theirs = k->builtin->check ? k->builtin->check(op_type, attrs, inputs) : "";
    return theirs.empty() ? "" : mine + "; the built-in strategy: " + theirs;
  };
  s.lower = [op_type](const OpCall& call) -> ir::PrimFunc {
    auto k = FindCustom(op_type);
    if (!k) TILECORE_THROW(ValueError) << "no npu strategy for " << op_type;
    if (!CustomReason(*k, op_type, call.attrs, call.inputs).empty()) {
      if (!k->builtin) TILECORE_THROW(ValueError) << "custom kernel for " << op_type << " declines";
      return k->builtin->lower(call);
    }
    Any r = k->lower(call.attrs, SpecArray(call.inputs), SpecArray(call.outputs), call.cores);
    auto f = r.try_cast<ir::PrimFunc>();
    if (!f)
      TILECORE_THROW(TypeError) << "custom kernel for " << op_type << ": lowering returned "
                                << r.GetTypeKey() << ", not a PrimFunc";
    return Checked(*f, call);
  };
  RegisterStrategy(op_type, s);
}

bool RemoveCustom(const std::string& op_type) {
  std::shared_ptr<const Strategy> builtin;
  {
    std::lock_guard<std::mutex> lock(CustomsMutex());
    auto it = Customs().find(op_type);
    if (it == Customs().end()) return false;
    builtin = it->second.builtin;
    Customs().erase(it);
  }
  if (builtin) {
    RegisterStrategy(op_type, *builtin);
  } else {
    RemoveStrategy(op_type);
  }
  return true;
}

}  // namespace

TILECORE_REGISTER_GLOBAL("compiler.RegisterCustomKernel")
    .set_body_typed([](String op_type, ffi::Function check, ffi::Function lower) {
      RegisterCustom(std::string(op_type), check, lower);
    });
TILECORE_REGISTER_GLOBAL("compiler.RemoveCustomKernel").set_body_typed([](String op_type) {
  return RemoveCustom(std::string(op_type));
});
TILECORE_REGISTER_GLOBAL("compiler.CustomKernelTakes")
    .set_body_typed([](String op_type, Map<String, Any> attrs, Array<Any> inputs) {
      auto k = FindCustom(std::string(op_type));
      if (!k) return false;
      std::vector<TensorSpec> in;
      for (const Any& a : inputs) in.push_back(a.is_none() ? TensorSpec() : a.cast<TensorSpec>());
      return CustomReason(*k, std::string(op_type), attrs, in).empty();
    });

}  // namespace compiler
}  // namespace tilecore
