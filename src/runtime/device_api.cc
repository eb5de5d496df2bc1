// src/runtime/device_api.cc — the device-API registry and the `cpu` kind.
#include "tilecore/runtime/device_api.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "tilecore/ffi/c_api.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore::runtime {
namespace {

std::string TypeKey(int32_t device_type) { return "runtime.device_api_of_type." + std::to_string(device_type); }

// The FFI's hooks: each looks the API up in the registry by device type.
int AllocHook(DLDevice dev, size_t nbytes, size_t alignment, void** out) {
  try {
    *out = DeviceAPI::ForDeviceType(dev.device_type)->Alloc(dev, nbytes, alignment);
    return 0;
  } catch (...) {
    return ffi::details::SetRaisedFromCurrentException();
  }
}
void FreeHook(DLDevice dev, void* ptr) {
  try {
    DeviceAPI::ForDeviceType(dev.device_type)->Free(dev, ptr);
  } catch (...) {
    // A free must not fail; a kind that disappeared leaks its block.
  }
}
int CopyHook(const DLTensor* from, const DLTensor* to) {
  try {
    int32_t t = from->device.device_type != kDLCPU ? from->device.device_type : to->device.device_type;
    DeviceAPI::ForDeviceType(t)->Copy(*from, *to);
    return 0;
  } catch (...) {
    return ffi::details::SetRaisedFromCurrentException();
  }
}

// The host: plain aligned malloc and the FFI's strided copy.
class CpuDeviceAPI final : public DeviceAPI {
 public:
  std::string name() const override { return "cpu"; }
  int32_t device_type() const override { return kDLCPU; }
  void* Alloc(DLDevice, size_t nbytes, size_t alignment) override {
    size_t a = alignment < sizeof(void*) ? sizeof(void*) : alignment;
    size_t n = (nbytes + a - 1) / a * a;
    void* p = std::aligned_alloc(a, n == 0 ? a : n);
    if (p == nullptr) TILECORE_THROW(MemoryError) << "cpu: cannot allocate " << nbytes << " bytes";
    return p;
  }
  void Free(DLDevice, void* ptr) noexcept override { std::free(ptr); }
  void Copy(const DLTensor& from, const DLTensor& to) override { ffi::CopyDLTensor(from, to); }
  ffi::Map<ffi::String, ffi::Any> Attributes(DLDevice) const override {
    ffi::Map<ffi::String, ffi::Any> m;
    m.Set("name", ffi::Any(ffi::String("cpu")));
    return m;
  }
};

}  // namespace

std::shared_ptr<DeviceAPI> DeviceAPI::Get(const std::string& name) {
  auto f = ffi::Function::GetGlobal("device_api." + name);
  if (!f) {
    std::string known;
    for (const ffi::String& n : ffi::Function::ListGlobalNames()) {
      std::string_view v = n.view();
      if (v.rfind("device_api.", 0) == 0) known += (known.empty() ? "" : ", ") + std::string(v.substr(11));
    }
    TILECORE_THROW(ValueError) << "no device API `" << name << "` is registered (known: " << known << ")";
  }
  return (*f)().cast<DeviceAPIRef>()->api;
}

std::shared_ptr<DeviceAPI> DeviceAPI::ForDeviceType(int32_t device_type) {
  auto f = ffi::Function::GetGlobal(TypeKey(device_type));
  if (!f) {
    TILECORE_THROW(ValueError) << "no device API is registered for device type " << device_type << " ("
                               << ffi::DeviceTypeToName(device_type) << ")";
  }
  return (*f)().cast<DeviceAPIRef>()->api;
}

void RegisterDeviceAPI(std::shared_ptr<DeviceAPI> api, bool allow_override) {
  TILECORE_ICHECK(api != nullptr);
  DeviceAPIRef ref(ffi::make_object<DeviceAPIObj>(api));
  ffi::Function getter = ffi::Function::FromPacked([ref](ffi::PackedArgs, ffi::Any* rv) { *rv = ffi::Any(ref); });
  ffi::Function::SetGlobal("device_api." + api->name(), getter, allow_override);
  ffi::Function::SetGlobal(TypeKey(api->device_type()), getter, true);
  if (api->device_type() != kDLCPU) {
    TCFFIDeviceAllocator hooks{AllocHook, FreeHook, CopyHook};
    if (TCFFIDeviceAllocatorRegister(api->device_type(), &hooks) != 0) ffi::details::ThrowRaisedError();
  }
}

ffi::NDArray CopyToHost(const DLTensor& t) {
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  ffi::NDArray host = ffi::NDArray::Empty(shape, t.dtype, DLDevice{kDLCPU, 0});
  ffi::CopyDLTensor(t, host.tensor());
  return host;
}

TILECORE_FFI_STATIC_INIT_BLOCK({
  // The FFI serves cpu memory itself; registering the cpu API makes it visible by name.
  RegisterDeviceAPI(std::make_shared<CpuDeviceAPI>());
});

TILECORE_REGISTER_GLOBAL("runtime.DeviceAttributes").set_body_typed([](DLDevice dev) {
  return DeviceAPI::ForDeviceType(dev.device_type)->Attributes(dev);
});
TILECORE_REGISTER_GLOBAL("runtime.ListDeviceAPIs").set_body_typed([]() {
  ffi::Array<ffi::String> out;
  for (const ffi::String& n : ffi::Function::ListGlobalNames()) {
    std::string_view v = n.view();
    if (v.rfind("device_api.", 0) == 0) out.push_back(ffi::String(v.substr(11)));
  }
  return out;
});

}  // namespace tilecore::runtime
