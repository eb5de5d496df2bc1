// examples/device_plugin/src/module.cc — step 4: the "toyacc" runtime module kind.
//
// A runtime::ModuleNode is what a code generator returns and what the runtime
// runs. It answers GetFunction (a Function taking arrays and scalars), GetSource
// (here the bytecode text) and SaveToBytes; the global function
// `runtime.module.loadbinary_toyacc` reads those bytes back, which is how
// `tilecore.runtime.load_module` finds a kind it has never heard of.
//
// Calls run on toyacc:<device>: array arguments elsewhere (numpy arrays, cpu
// NDArrays) are copied there first, and the ones the kernel writes are copied back,
// as the npu module does with the simulator's memory.
#include "tilecore/runtime/module.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/runtime/kernel.h"
#include "toyacc.h"

namespace toyacc {
namespace {

using namespace tilecore;  // NOLINT

// [toyacc.module.begin]
class ToyaccModuleNode final : public runtime::ModuleNode {
 public:
  ToyaccModuleNode(std::vector<Kernel> kernels, int32_t device_id)
      : kernels_(std::move(kernels)), device_id_(device_id) {}

  std::string kind() const override { return "toyacc"; }

  std::vector<std::string> ListFunctions() const override {
    std::vector<std::string> names;
    for (const Kernel& k : kernels_) names.push_back(k.name);
    return names;
  }

  std::optional<ffi::Function> GetFunction(const std::string& name,
                                           const runtime::Module& self) override {
    for (const Kernel& k : kernels_) {
      if (k.name != name) continue;
      // The Function holds `self`, so the module (and `k`) outlive every call.
      return ffi::Function::FromPacked(
          [self, &k, dev = device()](ffi::PackedArgs args, ffi::Any*) { Call(k, dev, args); });
    }
    return std::nullopt;
  }

  std::string GetSource(const std::string& format) const override {
    if (!format.empty() && format != "toyacc") {
      TILECORE_THROW(ValueError) << "a toyacc module has source in format `toyacc`, not `" << format
                                 << "`";
    }
    return Print(kernels_);
  }

  std::string SaveToBytes() const override {
    runtime::ByteWriter w;
    w.u32(static_cast<uint32_t>(device_id_));
    w.str(Print(kernels_));
    return w.data();
  }

  static runtime::Module LoadFromBytes(const ffi::Bytes& bytes) {
    runtime::ByteReader r(bytes.view(), "toyacc module");
    uint32_t device_id = r.u32();
    if (device_id >= uint32_t(kNumDevices)) r.fail("bad device " + std::to_string(device_id));
    std::string text = r.str();
    if (!r.at_end()) r.fail("trailing bytes");
    return ModuleCreate(Assemble(text), static_cast<int32_t>(device_id));
  }

  ffi::Map<ffi::String, ffi::Any> Info() const override {
    ffi::Array<ffi::Any> funcs;
    for (const Kernel& k : kernels_) {
      ffi::Map<ffi::String, ffi::Any> m;
      m.Set("name", ffi::Any(ffi::String(k.name)));
      m.Set("params", ffi::Any(runtime::ParamsToArray(k.params)));
      m.Set("stack", ffi::Any(k.stack_size));
      funcs.push_back(ffi::Any(m));
    }
    ffi::Map<ffi::String, ffi::Any> info;
    info.Set("functions", ffi::Any(funcs));
    info.Set("device", ffi::Any(int64_t{device_id_}));
    return info;
  }
  // [toyacc.module.end]

 private:
  DLDevice device() const { return DLDevice{static_cast<DLDeviceType>(kDeviceType), device_id_}; }

  // [toyacc.call.begin]
  static void Call(const Kernel& k, DLDevice dev, ffi::PackedArgs args) {
    runtime::CheckKernelArgs(k.name, k.params,
                             args);  // count, kinds, dtypes: TypeError quoting the signature
    std::vector<Arg> values(k.params.size());
    std::vector<std::pair<ffi::NDArray, ffi::NDArray>> copy_back;  // (caller's array, toyacc copy)
    std::vector<ffi::NDArray> keep;  // copies live until the call returns
    for (size_t i = 0; i < k.params.size(); ++i) {
      const runtime::KernelParam& p = k.params[i];
      const ffi::AnyView& a = args[int32_t(i)];
      if (p.kind == "int") values[i].i = a.cast<int64_t>();
      if (p.kind == "float") values[i].f = a.cast<double>();
      if (p.kind != "buffer") continue;
      ffi::NDArray x = a.cast<ffi::NDArray>();
      const DLTensor& t = x.tensor();
      bool here = t.device.device_type == dev.device_type && t.device.device_id == dev.device_id;
      if (!here || !ffi::DLTensorIsContiguous(t)) {  // stage it on toyacc:<dev>
        ffi::NDArray y = x.CopyTo(dev);
        keep.push_back(y);
        if (p.written) copy_back.emplace_back(x, y);
        x = y;
      }
      int64_t n = 1;
      for (int d = 0; d < x.tensor().ndim; ++d) n *= x.tensor().shape[d];
      values[i].buffer =
          BufferView{static_cast<char*>(x.tensor().data) + x.tensor().byte_offset, n};
    }
    Run(k, values);
    for (auto& [original, copy] : copy_back) copy.CopyTo(original);
  }
  // [toyacc.call.end]

  std::vector<Kernel> kernels_;
  int32_t device_id_;
};

}  // namespace

runtime::Module ModuleCreate(std::vector<Kernel> kernels, int32_t device_id) {
  return runtime::Module(std::make_unique<ToyaccModuleNode>(std::move(kernels), device_id));
}

}  // namespace toyacc

// [toyacc.loader.begin]
TILECORE_REGISTER_GLOBAL("runtime.module.loadbinary_toyacc")
    .set_body_typed([](tilecore::ffi::Bytes bytes) {
      return toyacc::ToyaccModuleNode::LoadFromBytes(bytes);
    });
// [toyacc.loader.end]
