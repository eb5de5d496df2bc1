// src/runtime/npu_device.cc — device_api.npu: arrays in the DDR of a TC1 simulator.
#if TILECORE_ENABLE_NPU
#include "tilecore/runtime/npu_device.h"

#include "tilecore/ffi/ndarray.h"

#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/runtime/device_api.h"

namespace tilecore::runtime {

NpuDevice::NpuDevice(int id) : id_(id) {}

sim::SimulatorRef NpuDevice::simulator() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!sim_.defined()) {
    sim_ = sim::TranslateSimError([&] {
      return sim::SimulatorRef(
          ffi::make_object<sim::SimulatorObj>(sim::SimConfig::from_target(target_)));
    });
    free_.clear();
    used_.clear();
    uint64_t ddr = sim_->sim.config().ddr_bytes;
    if (ddr > kNpuHeapBase) free_[kNpuHeapBase] = ddr - kNpuHeapBase;
  }
  return sim_;
}

void NpuDevice::configure(const std::string& target) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!used_.empty()) {
      TILECORE_THROW(ValueError) << "npu:" << id_ << ": cannot reconfigure while " << used_.size()
                                 << " arrays are still allocated on it";
    }
    // Validate first, so a bad target leaves the device as it was.
    sim::TranslateSimError([&] { return sim::SimConfig::from_target(target); });
    target_ = target;
    sim_ = sim::SimulatorRef();
    resident_ = ResidentConstants{};  // (a new simulator: its DDR holds nothing of them)
  }
  simulator();
}

uint64_t NpuDevice::capacity() { return simulator()->sim.config().ddr_bytes; }

uint64_t NpuDevice::alloc(uint64_t nbytes, uint64_t alignment) {
  simulator();
  std::lock_guard<std::mutex> lock(mu_);
  if (alignment < 64) alignment = 64;
  uint64_t size = (nbytes == 0 ? 1 : nbytes);
  size = (size + 63) / 64 * 64;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    uint64_t start = (it->first + alignment - 1) / alignment * alignment;
    uint64_t end = it->first + it->second;
    if (start + size > end) continue;
    uint64_t base = it->first;
    free_.erase(it);
    if (start > base) free_[base] = start - base;
    if (start + size < end) free_[start + size] = end - (start + size);
    used_[start] = size;
    return start;
  }
  TILECORE_THROW(MemoryError) << "npu:" << id_ << ": out of device memory allocating " << nbytes
                              << " bytes (" << bytes_in_use_locked() << " of "
                              << sim_->sim.config().ddr_bytes
                              << " bytes in use; configure a larger -ddr=)";
}

void NpuDevice::free(uint64_t addr) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = used_.find(addr);
  if (it == used_.end()) return;
  uint64_t start = it->first, size = it->second;
  used_.erase(it);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    free_.erase(next);
  }
  auto prev = free_.lower_bound(start);
  if (prev != free_.begin()) {
    --prev;
    if (prev->first + prev->second == start) {
      prev->second += size;
      return;
    }
  }
  free_[start] = size;
}

uint64_t NpuDevice::bytes_in_use_locked() const {
  uint64_t n = 0;
  for (const auto& [a, s] : used_) n += s;
  return n;
}

uint64_t NpuDevice::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_in_use_locked();
}

size_t NpuDevice::live_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_.size();
}

int NpuDeviceId(int64_t id) {
  if (id < 0 || id >= kMaxNpuDevices) {
    TILECORE_THROW(ValueError) << "npu:" << id
                               << " does not exist (npu:0 .. npu:" << kMaxNpuDevices - 1 << ")";
  }
  return static_cast<int>(id);
}

NpuDevice& GetNpuDevice(int id) {
  static std::array<std::unique_ptr<NpuDevice>, kMaxNpuDevices> devices;
  static std::mutex mu;
  NpuDeviceId(id);
  std::lock_guard<std::mutex> lock(mu);
  if (!devices[size_t(id)]) devices[size_t(id)] = std::make_unique<NpuDevice>(id);
  return *devices[size_t(id)];
}

namespace {

size_t NumBytes(const DLTensor& t) {
  return size_t(ffi::DLTensorNumElements(t)) * ((t.dtype.bits * t.dtype.lanes + 7) / 8);
}

uint64_t DdrAddress(const DLTensor& t) {
  return reinterpret_cast<uint64_t>(t.data) + t.byte_offset;
}

class NpuDeviceAPI final : public DeviceAPI {
 public:
  std::string name() const override { return "npu"; }
  int32_t device_type() const override { return ffi::kDLNPU; }
  void* Alloc(DLDevice dev, size_t nbytes, size_t alignment) override {
    return reinterpret_cast<void*>(GetNpuDevice(dev.device_id).alloc(nbytes, alignment));
  }
  void Free(DLDevice dev, void* ptr) noexcept override {
    if (dev.device_id >= 0 && dev.device_id < kMaxNpuDevices) {
      GetNpuDevice(dev.device_id).free(reinterpret_cast<uint64_t>(ptr));
    }
  }
  void Copy(const DLTensor& from, const DLTensor& to) override {
    bool from_npu = from.device.device_type == ffi::kDLNPU,
         to_npu = to.device.device_type == ffi::kDLNPU;
    if ((from_npu && !ffi::DLTensorIsContiguous(from)) ||
        (to_npu && !ffi::DLTensorIsContiguous(to))) {
      TILECORE_THROW(ValueError) << "npu: copies need compact (C-contiguous) arrays on the device";
    }
    if (from_npu && to_npu) {
      ffi::NDArray host = CopyToHost(from);
      Copy(host.tensor(), to);
      return;
    }
    if (to_npu) {  // host -> npu
      const DLTensor* src = &from;
      ffi::NDArray staged;
      if (!ffi::DLTensorIsContiguous(from)) {
        staged = CopyToHost(from);
        src = &staged.tensor();
      }
      NpuDevice& d = GetNpuDevice(to.device.device_id);
      std::lock_guard<std::recursive_mutex> lock(d.launch_mutex());
      sim::SimulatorRef s = d.simulator();
      std::lock_guard<std::mutex> sim_lock(s.mut()->mu);
      std::span<const uint8_t> bytes(static_cast<const uint8_t*>(src->data) + src->byte_offset,
                                     NumBytes(*src));
      sim::TranslateSimError([&] { s.mut()->sim.write(arch::Space::DDR, DdrAddress(to), bytes); });
      return;
    }
    // npu -> host
    NpuDevice& d = GetNpuDevice(from.device.device_id);
    std::lock_guard<std::recursive_mutex> lock(d.launch_mutex());
    sim::SimulatorRef s = d.simulator();
    std::lock_guard<std::mutex> sim_lock(s.mut()->mu);
    if (ffi::DLTensorIsContiguous(to)) {
      std::span<uint8_t> out(static_cast<uint8_t*>(to.data) + to.byte_offset, NumBytes(to));
      sim::TranslateSimError([&] { s->sim.read_into(arch::Space::DDR, DdrAddress(from), out); });
    } else {
      std::vector<int64_t> shape(to.shape, to.shape + to.ndim);
      ffi::NDArray tmp = ffi::NDArray::Empty(shape, to.dtype, DLDevice{kDLCPU, 0});
      std::span<uint8_t> out(tmp.data<uint8_t>(), tmp.NumBytes());
      sim::TranslateSimError([&] { s->sim.read_into(arch::Space::DDR, DdrAddress(from), out); });
      ffi::CopyDLTensor(tmp.tensor(), to);
    }
  }
  ffi::Map<ffi::String, ffi::Any> Attributes(DLDevice dev) const override {
    NpuDevice& d = GetNpuDevice(dev.device_id);
    sim::SimulatorRef s = d.simulator();
    ffi::Map<ffi::String, ffi::Any> m;
    m.Set("name", ffi::Any(ffi::String("npu")));
    m.Set("target", ffi::Any(ffi::String(d.target())));
    m.Set("cores", ffi::Any(int64_t{s->sim.config().cores}));
    m.Set("ddr_bytes", ffi::Any(static_cast<int64_t>(s->sim.config().ddr_bytes)));
    m.Set("bytes_in_use", ffi::Any(static_cast<int64_t>(d.bytes_in_use())));
    m.Set("live_allocations", ffi::Any(static_cast<int64_t>(d.live_allocations())));
    return m;
  }
};

}  // namespace

TILECORE_FFI_STATIC_INIT_BLOCK({ RegisterDeviceAPI(std::make_shared<NpuDeviceAPI>()); });

TILECORE_REGISTER_GLOBAL("runtime.NpuSimulator").set_body_typed([](int64_t id) {
  return GetNpuDevice(NpuDeviceId(id)).simulator();
});
TILECORE_REGISTER_GLOBAL("runtime.NpuConfigure").set_body_typed([](int64_t id, std::string target) {
  GetNpuDevice(NpuDeviceId(id)).configure(target);
});

}  // namespace tilecore::runtime
#endif  // TILECORE_ENABLE_NPU
