// include/tilecore/runtime/npu_device.h — the `npu` device: TC1 simulators and their DDR.
//
// Device `npu:N` is one simulated TC1 cluster (a sim::Simulator, default
// "npu -cores=4"). Its global memory (DDR) is managed by a first-fit allocator:
// an NDArray on npu:N has `data` = the DDR byte address (as a pointer value, as
// CUDA device pointers are), so compiled kernels receive plain DDR addresses.
// Address 0 .. kNpuHeapBase-1 is never handed out (a null pointer stays null).
// Only built with TILECORE_ENABLE_NPU.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "tilecore/sim/sim_ffi.h"

namespace tilecore::runtime {

inline constexpr uint64_t kNpuHeapBase = 0x10000;
inline constexpr int kMaxNpuDevices = 16;

class NpuDevice {
 public:
  explicit NpuDevice(int id);

  /// The simulator; created on first use with the current target string.
  sim::SimulatorRef simulator();
  /// Replaces the simulator (e.g. "npu -cores=8 -ddr=1GiB"); ValueError while
  /// arrays are still allocated on the device.
  void configure(const std::string& target);
  const std::string& target() const { return target_; }

  uint64_t alloc(uint64_t nbytes, uint64_t alignment);
  void free(uint64_t addr) noexcept;
  uint64_t bytes_in_use() const;
  size_t live_allocations() const;
  uint64_t capacity();

  /// Serialises kernel launches and host copies on this device.
  std::recursive_mutex& launch_mutex() { return launch_mu_; }

  /// The constants the last executable run left in this device's DDR (under launch_mutex):
  /// whose run (`owner`, an executable's run-state id, and its bucket), at which arena
  /// address, and the simulator's ddr_epoch when it finished. Cleared by configure().
  struct ResidentConstants {
    uint64_t owner = 0;
    size_t bucket = 0;
    uint64_t arena = 0;
    uint64_t epoch = 0;
  };
  ResidentConstants& resident_constants() { return resident_; }

 private:
  uint64_t bytes_in_use_locked() const;
  int id_;
  std::string target_ = "npu -cores=4";
  sim::SimulatorRef sim_;
  mutable std::mutex mu_;
  std::recursive_mutex launch_mu_;
  ResidentConstants resident_;
  std::map<uint64_t, uint64_t> free_;  // address -> size
  std::map<uint64_t, uint64_t> used_;  // address -> size
};

/// Device `npu:id`; ValueError for an id outside 0..15.
NpuDevice& GetNpuDevice(int id);
/// `id` as an int after checking it names a device (before narrowing: 2^32 is not npu:0).
int NpuDeviceId(int64_t id);

}  // namespace tilecore::runtime
