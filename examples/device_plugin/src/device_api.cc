// examples/device_plugin/src/device_api.cc — step 2: where toyacc arrays live.
//
// A DeviceAPI allocates, frees and copies memory of one device type. Registering it
// makes `tilecore.nd.empty(shape, dtype, device)`, `nd.array(x, device=...)`,
// `.numpy()` and `copyto` work for toyacc arrays. toyacc memory is host memory in
// disguise, so a copy is the host's strided copy; a real device would call its
// driver here. The API also counts what is allocated, which
// `tilecore.runtime.device_attributes(dev)` reports.
#include <cstdlib>
#include <map>
#include <mutex>

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/runtime/device_api.h"
#include "toyacc.h"

namespace toyacc {
namespace {

using namespace tilecore;  // NOLINT

// [toyacc.device_api.begin]
class ToyaccDeviceAPI final : public runtime::DeviceAPI {
 public:
  std::string name() const override { return "toyacc"; }
  int32_t device_type() const override { return kDeviceType; }

  void* Alloc(DLDevice dev, size_t nbytes, size_t alignment) override {
    CheckId(dev);
    size_t a = alignment < 64 ? 64 : alignment;
    void* p = std::aligned_alloc(a, (nbytes + a - 1) / a * a + (nbytes == 0 ? a : 0));
    if (p == nullptr)
      TILECORE_THROW(MemoryError) << "toyacc:" << dev.device_id << ": out of memory";
    std::lock_guard<std::mutex> lock(mu_);
    blocks_[p] = {dev.device_id, nbytes};
    return p;
  }

  void Free(DLDevice, void* ptr) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.erase(ptr);
    std::free(ptr);
  }

  void Copy(const DLTensor& from, const DLTensor& to) override {
    DLTensor src = from, dst = to;  // both are host memory: copy them as cpu tensors
    src.device = dst.device = DLDevice{kDLCPU, 0};
    ffi::CopyDLTensor(src, dst);
  }

  ffi::Map<ffi::String, ffi::Any> Attributes(DLDevice dev) const override {
    CheckId(dev);
    std::lock_guard<std::mutex> lock(mu_);
    int64_t bytes = 0, arrays = 0;
    for (const auto& [ptr, block] : blocks_) {
      if (block.device_id == dev.device_id) bytes += int64_t(block.nbytes), ++arrays;
    }
    ffi::Map<ffi::String, ffi::Any> m;
    m.Set("name", ffi::Any(ffi::String("toyacc")));
    m.Set("bytes_in_use", ffi::Any(bytes));
    m.Set("live_arrays", ffi::Any(arrays));
    return m;
  }

 private:
  static void CheckId(DLDevice dev) {
    if (dev.device_id < 0 || dev.device_id >= kNumDevices) {
      TILECORE_THROW(ValueError) << "toyacc has devices 0.." << kNumDevices - 1 << ", not "
                                 << dev.device_id;
    }
  }
  struct Block {
    int32_t device_id;
    size_t nbytes;
  };
  mutable std::mutex mu_;
  std::map<void*, Block> blocks_;
};
// [toyacc.device_api.end]

}  // namespace
}  // namespace toyacc

// [toyacc.device_api_register.begin]
TILECORE_FFI_STATIC_INIT_BLOCK({
  tilecore::runtime::RegisterDeviceAPI(std::make_shared<toyacc::ToyaccDeviceAPI>());
  // Names device type 32, so that "toyacc:1" parses and devices print by name:
  // `tilecore.device("toyacc", 0)`, `tilecore.device("toyacc:1")`.
  tilecore::ffi::RegisterDeviceName(toyacc::kDeviceType, "toyacc");
});
// [toyacc.device_api_register.end]
