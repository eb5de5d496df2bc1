// src/runtime/device_api.cc — the device-API registry and the `cpu` kind.
#include "tilecore/runtime/device_api.h"

#include <algorithm>
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

std::string TypeKey(int32_t device_type) {
  return "runtime.device_api_of_type." + std::to_string(device_type);
}

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
    int32_t t =
        from->device.device_type != kDLCPU ? from->device.device_type : to->device.device_type;
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

void* DeviceAPI::AllocWorkspace(DLDevice dev, size_t nbytes) {
  size_t want = std::max<size_t>(64, (nbytes + 63) / 64 * 64);
  std::lock_guard<std::mutex> lock(ws_mu_);
  std::vector<WorkspaceBlock>& blocks = ws_[dev.device_id];
  WorkspaceBlock* best = nullptr;
  for (WorkspaceBlock& b : blocks) {
    if (!b.in_use && b.bytes >= want && (best == nullptr || b.bytes < best->bytes)) best = &b;
  }
  if (best != nullptr) {
    best->in_use = true;
    return best->ptr;
  }
  void* p = Alloc(dev, want, 64);
  blocks.push_back(WorkspaceBlock{p, want, true});
  return p;
}

void DeviceAPI::FreeWorkspace(DLDevice dev, void* ptr) {
  std::lock_guard<std::mutex> lock(ws_mu_);
  auto it = ws_.find(dev.device_id);
  if (it != ws_.end()) {
    for (WorkspaceBlock& b : it->second) {
      if (b.ptr == ptr && b.in_use) {
        b.in_use = false;
        return;
      }
    }
  }
  TILECORE_THROW(ValueError) << name() << ":" << dev.device_id << ": FreeWorkspace of " << ptr
                             << ", which is not a workspace block in use on this device";
}

ffi::Map<ffi::String, ffi::Any> DeviceAPI::WorkspaceInfo(DLDevice dev) {
  std::lock_guard<std::mutex> lock(ws_mu_);
  int64_t blocks = 0, bytes = 0, in_use = 0;
  auto it = ws_.find(dev.device_id);
  if (it != ws_.end()) {
    for (const WorkspaceBlock& b : it->second) {
      ++blocks;
      bytes += int64_t(b.bytes);
      in_use += b.in_use ? 1 : 0;
    }
  }
  ffi::Map<ffi::String, ffi::Any> m;
  m.Set("blocks", ffi::Any(blocks));
  m.Set("bytes", ffi::Any(bytes));
  m.Set("in_use", ffi::Any(in_use));
  return m;
}

void DeviceAPI::ReleaseWorkspace(DLDevice dev) {
  std::lock_guard<std::mutex> lock(ws_mu_);
  auto it = ws_.find(dev.device_id);
  if (it == ws_.end()) return;
  std::vector<WorkspaceBlock> keep;
  for (const WorkspaceBlock& b : it->second) {
    if (b.in_use)
      keep.push_back(b);
    else
      Free(dev, b.ptr);
  }
  it->second = std::move(keep);
}

std::shared_ptr<DeviceAPI> DeviceAPI::Get(const std::string& name) {
  auto f = ffi::Function::GetGlobal("device_api." + name);
  if (!f) {
    std::string known;
    for (const ffi::String& n : ffi::Function::ListGlobalNames()) {
      std::string_view v = n.view();
      if (v.rfind("device_api.", 0) == 0)
        known += (known.empty() ? "" : ", ") + std::string(v.substr(11));
    }
    TILECORE_THROW(ValueError) << "no device API `" << name << "` is registered (known: " << known
                               << ")";
  }
  return (*f)().cast<DeviceAPIRef>()->api;
}

std::shared_ptr<DeviceAPI> DeviceAPI::ForDeviceType(int32_t device_type) {
  auto f = ffi::Function::GetGlobal(TypeKey(device_type));
  if (!f) {
    TILECORE_THROW(ValueError) << "no device API is registered for device type " << device_type
                               << " (" << ffi::DeviceTypeToName(device_type) << ")";
  }
  return (*f)().cast<DeviceAPIRef>()->api;
}

void RegisterDeviceAPI(std::shared_ptr<DeviceAPI> api, bool allow_override) {
  TILECORE_ICHECK(api != nullptr);
  DeviceAPIRef ref(ffi::make_object<DeviceAPIObj>(api));
  ffi::Function getter =
      ffi::Function::FromPacked([ref](ffi::PackedArgs, ffi::Any* rv) { *rv = ffi::Any(ref); });
  ffi::Function::SetGlobal("device_api." + api->name(), getter, allow_override);
  ffi::Function::SetGlobal(TypeKey(api->device_type()), getter, true);
  if (api->device_type() != kDLCPU) {
    TCFFIDeviceAllocator hooks{AllocHook, FreeHook, CopyHook};
    if (TCFFIDeviceAllocatorRegister(api->device_type(), &hooks) != 0)
      ffi::details::ThrowRaisedError();
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
// Workspace from Python and C: the block's address as an integer (npu: a DDR address).
TILECORE_REGISTER_GLOBAL("runtime.AllocWorkspace").set_body_typed([](DLDevice dev, int64_t nbytes) {
  if (nbytes < 0)
    TILECORE_THROW(ValueError) << "runtime.AllocWorkspace: nbytes must be >= 0, got " << nbytes;
  return int64_t(reinterpret_cast<uintptr_t>(
      DeviceAPI::ForDeviceType(dev.device_type)->AllocWorkspace(dev, size_t(nbytes))));
});
TILECORE_REGISTER_GLOBAL("runtime.FreeWorkspace").set_body_typed([](DLDevice dev, int64_t addr) {
  DeviceAPI::ForDeviceType(dev.device_type)
      ->FreeWorkspace(dev, reinterpret_cast<void*>(uintptr_t(addr)));
});
TILECORE_REGISTER_GLOBAL("runtime.WorkspaceInfo").set_body_typed([](DLDevice dev) {
  return DeviceAPI::ForDeviceType(dev.device_type)->WorkspaceInfo(dev);
});
TILECORE_REGISTER_GLOBAL("runtime.ReleaseWorkspace").set_body_typed([](DLDevice dev) {
  DeviceAPI::ForDeviceType(dev.device_type)->ReleaseWorkspace(dev);
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
