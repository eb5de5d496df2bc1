/*
 * src/compiler/host_kernel.cc — the host kernel registry, HasHostKernel / LowerHostOp
 * (host_kernel.h), and the fallback that runs an npu strategy on the host when it
 * refuses an op only for its dtypes.
 */
#include "tilecore/compiler/host_kernel.h"

#include <cctype>
#include <map>
#include <mutex>

#include "host_util.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/compiler_attrs.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace compiler {

namespace {
using namespace detail;  // NOLINT(build/namespaces)
using host::Convert;

std::map<std::string, HostKernel>& Registry() {
  static std::map<std::string, HostKernel> r;
  return r;
}
std::mutex& RegistryMutex() {
  static std::mutex m;
  return m;
}
const HostKernel* FindHost(const std::string& op_type) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(op_type);
  return it == Registry().end() ? nullptr : &it->second;
}

int64_t DataInputs(int declared, size_t n) {
  return declared < 0 ? static_cast<int64_t>(n)
                      : std::min<int64_t>(static_cast<int64_t>(n), declared);
}

// The dtype a tensor is computed in by the strategy fallback: mode 0 keeps every dtype,
// mode 1 maps floats to float32 and integers to int32, mode 2 maps both to float32.
// bool stays bool.
DataType Substitute(DataType t, int mode) {
  if (mode == 0 || t.is_bool()) return t;
  if (t.is_float()) return DataType::Float(32);
  if (t.is_integer()) return mode == 1 ? DataType::Int(32) : DataType::Float(32);
  return t;
}

std::vector<TensorSpec> SubstituteAll(const std::vector<TensorSpec>& specs, size_t count,
                                      int mode) {
  std::vector<TensorSpec> out = specs;
  for (size_t i = 0; i < std::min(count, out.size()); ++i)
    if (out[i].defined()) out[i] = TensorSpec(out[i]->shape, Substitute(out[i]->dtype, mode));
  return out;
}

bool Has64(const std::vector<TensorSpec>& specs, size_t count) {
  for (size_t i = 0; i < std::min(count, specs.size()); ++i)
    if (specs[i].defined() && specs[i]->dtype.bits() == 64) return true;
  return false;
}

/*! \brief The first fallback mode whose substituted inputs the strategy accepts (-1: none; *why:
 * the reason). */
int FallbackMode(const Strategy& s, const std::string& op_type, const Map<String, Any>& attrs,
                 const std::vector<TensorSpec>& inputs, std::string* why) {
  size_t data = static_cast<size_t>(DataInputs(s.data_inputs, inputs.size()));
  std::string first;
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<TensorSpec> sub = SubstituteAll(inputs, data, mode);
    if (mode == 0 && Has64(sub, data)) continue;
    std::string w = s.check ? s.check(op_type, attrs, sub) : "";
    if (w.empty()) return mode;
    if (first.empty()) first = w;
  }
  *why = first;
  return -1;
}

Stmt CopyConvert(const Buffer& dst, const Buffer& src) {
  int64_t n = 1;
  for (const PrimExpr& d : dst->shape) n *= static_cast<const IntImmNode*>(d.get())->value;
  Buffer d = View(dst, {std::max<int64_t>(n, 1)}, "cd"),
         s = View(src, {std::max<int64_t>(n, 1)}, "cs");
  return Loop("i", n, [&](PrimExpr i) {
    return BufferStore(d, Convert(dst->dtype, BufferLoad(s, {i})), {i});
  });
}

PrimFunc LowerFallback(const Strategy& s, const OpCall& call, int mode) {
  OpCall inner = call;
  inner.cores = 1;
  inner.inputs = SubstituteAll(call.inputs, static_cast<size_t>(call.data_inputs), mode);
  inner.outputs = SubstituteAll(call.outputs, call.outputs.size(), mode);
  PrimFunc f = s.lower(inner);
  Params real = MakeParams(call);
  std::vector<Buffer> real_bufs = real.in;
  real_bufs.insert(real_bufs.end(), real.out.begin(), real.out.end());
  if (real_bufs.size() != f->params.size())
    TILECORE_THROW(InternalError) << "LowerHostOp(" << call.op_type
                                  << "): the strategy's PrimFunc has " << f->params.size()
                                  << " params, expected " << real_bufs.size();
  Array<Var> params;
  Map<Var, Buffer> map;
  std::vector<Stmt> pre, post;
  std::vector<Buffer> temps;
  size_t n_in = real.in.size();
  for (size_t i = 0; i < real_bufs.size(); ++i) {
    Buffer ib = f->buffer_map.at(f->params[i]);
    if (ib->dtype == real_bufs[i]->dtype) {
      params.push_back(f->params[i]);
      map.Set(f->params[i], ib);
      continue;
    }
    params.push_back(real_bufs[i]->data);
    map.Set(real_bufs[i]->data, real_bufs[i]);
    temps.push_back(ib);
    if (i < n_in)
      pre.push_back(CopyConvert(ib, real_bufs[i]));
    else
      post.push_back(CopyConvert(real_bufs[i], ib));
  }
  Stmt body = Seq({Seq(pre), f->body, Seq(post)});
  // the strategy's param buffers become temporaries of the host kernel
  for (const Buffer& t : temps)
    body = Allocate(
        Buffer(t->data, t->dtype, t->shape, t->strides, t->elem_offset, String("local"), t->name),
        body);
  Map<String, Any> attrs = f->attrs;
  attrs.Set("host", String(mode == 0 ? "npu strategy" : "npu strategy on float32/int32 copies"));
  return PrimFunc(params, body, map, attrs);
}

}  // namespace

void RegisterHostKernel(const std::string& op_type, HostKernel k) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[op_type] = std::move(k);
}

std::vector<std::string> ListHostKernels() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<std::string> out;
  for (const auto& [k, v] : Registry()) out.push_back(k);
  return out;
}

namespace {
// the npu strategy the host may run on copies: a custom kernel's built-in one, never its own
std::shared_ptr<const Strategy> HostFallbackStrategy(const std::string& op_type) {
  std::shared_ptr<const Strategy> s = FindStrategy(op_type);
  return s != nullptr && s->custom_kernel ? s->behind : s;
}
}  // namespace

std::string HasHostKernel(const std::string& op_type, const Map<String, Any>& attrs,
                          const std::vector<TensorSpec>& inputs) {
  std::string host_why = CheckCompilerAttrs(op_type, attrs);
  if (!host_why.empty()) return host_why;
  if (const HostKernel* k = FindHost(op_type)) {
    host_why = k->check ? k->check(op_type, attrs, inputs) : "";
    if (host_why.empty()) return "";
  }
  std::shared_ptr<const Strategy> s = HostFallbackStrategy(op_type);
  if (!s) return host_why.empty() ? "no npu strategy and no host kernel for " + op_type : host_why;
  std::string why;
  if (FallbackMode(*s, op_type, attrs, inputs, &why) >= 0) return "";
  return host_why.empty() ? why : host_why + "; " + why;
}

namespace {
// "host_<op>": a bare op name such as "exp" would clash with the c target's math helpers
PrimFunc HostSymbol(PrimFunc f, const std::string& op_type) {
  std::string sym = "host_";
  for (char ch : op_type)
    sym += static_cast<char>(std::isalnum(static_cast<unsigned char>(ch)) ? std::tolower(ch) : '_');
  return f.WithAttr("global_symbol", String(sym));
}
PrimFunc LowerHostOpImpl(const std::string& op_type, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& inputs,
                         const std::vector<TensorSpec>& outputs);
}  // namespace

PrimFunc LowerHostOp(const std::string& op_type, const Map<String, Any>& attrs,
                     const std::vector<TensorSpec>& inputs,
                     const std::vector<TensorSpec>& outputs) {
  return HostSymbol(LowerHostOpImpl(op_type, attrs, inputs, outputs), op_type);
}

namespace {
PrimFunc LowerHostOpImpl(const std::string& op_type, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& inputs,
                         const std::vector<TensorSpec>& outputs) {
  std::string attrs_why = CheckCompilerAttrs(op_type, attrs);
  if (!attrs_why.empty())
    TILECORE_THROW(ValueError) << "LowerHostOp(" << op_type << "): " << attrs_why;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined())
      TILECORE_THROW(ValueError) << "LowerHostOp(" << op_type << "): output " << i << " is None";
  if (const HostKernel* k = FindHost(op_type)) {
    if ((k->check ? k->check(op_type, attrs, inputs) : "").empty()) {
      OpCall call{op_type,
                  attrs,
                  inputs,
                  outputs,
                  1,
                  int64_t(arch::tc1::kL1Bytes),
                  DataInputs(k->data_inputs, inputs.size())};
      return k->lower(call);
    }
  }
  std::shared_ptr<const Strategy> s = HostFallbackStrategy(op_type);
  std::string why = HasHostKernel(op_type, attrs, inputs);
  if (!s || !why.empty()) TILECORE_THROW(ValueError) << "LowerHostOp(" << op_type << "): " << why;
  int mode = FallbackMode(*s, op_type, attrs, inputs, &why);
  OpCall call{op_type,
              attrs,
              inputs,
              outputs,
              1,
              int64_t(arch::tc1::kL1Bytes),
              DataInputs(s->data_inputs, inputs.size())};
  return LowerFallback(*s, call, mode);
}
}  // namespace

namespace {
std::vector<TensorSpec> Specs(const Array<Any>& a) {
  std::vector<TensorSpec> v;
  for (const Any& x : a) v.push_back(x.is_none() ? TensorSpec() : x.cast<TensorSpec>());
  return v;
}
}  // namespace

TILECORE_REGISTER_GLOBAL("compiler.HasHostKernel")
    .set_body_typed([](String op_type, Map<String, Any> attrs, Array<Any> inputs) {
      return String(HasHostKernel(std::string(op_type), attrs, Specs(inputs)));
    });
TILECORE_REGISTER_GLOBAL("compiler.LowerHostOp")
    .set_body_typed([](String op_type, Map<String, Any> attrs, Array<Any> inputs,
                       Array<Any> outputs) {
      return LowerHostOp(std::string(op_type), attrs, Specs(inputs), Specs(outputs));
    });
TILECORE_REGISTER_GLOBAL("compiler.ListHostKernels").set_body_typed([]() {
  Array<String> out;
  for (const std::string& s : ListHostKernels()) out.push_back(String(s));
  return out;
});

}  // namespace compiler
}  // namespace tilecore
