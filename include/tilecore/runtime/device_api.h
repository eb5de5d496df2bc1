// include/tilecore/runtime/device_api.h — the device-API registry: where arrays live.
//
// A device kind ("cpu", "npu", or one added out of tree) is a DeviceAPI object
// registered as the global function `device_api.<name>` (it returns the object).
// RegisterDeviceAPI also hands the kind's memory services to the FFI
// (TCFFIDeviceAllocatorRegister), so `NDArray::Empty(shape, dtype, {type, id})`,
// `tilecore.nd.array(x, device=...)`, `.numpy()` and `copyto` work for it.
//
// Rationale: the FFI sits below the runtime and cannot know devices; it defines the
// allocator hook, the runtime fills it. The registry is the only table: the FFI's
// callbacks look the API up by device type (`runtime.device_api_of_type.<N>`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"

namespace tilecore::runtime {

/// What a device kind does. A plain polymorphic class; the registry hands it out
/// wrapped in a DeviceAPIObj (FFI objects have no virtual functions).
class DeviceAPI {
 public:
  virtual ~DeviceAPI() = default;
  /// The kind's name ("cpu", "npu"): `device_api.<name>`.
  virtual std::string name() const = 0;
  /// The DLPack device type number of the kind.
  virtual int32_t device_type() const = 0;
  /// Allocates `nbytes` aligned to `alignment` on `dev`; throws MemoryError when full.
  virtual void* Alloc(DLDevice dev, size_t nbytes, size_t alignment) = 0;
  /// Frees what Alloc returned. Must not throw.
  virtual void Free(DLDevice dev, void* ptr) noexcept = 0;
  /// Copies between same-shape, same-dtype tensors; one is on this kind, the other
  /// on this kind or the CPU.
  virtual void Copy(const DLTensor& from, const DLTensor& to) = 0;
  /// What the device is: memory sizes, use, cores, ... (for `tilecore.runtime`).
  virtual ffi::Map<ffi::String, ffi::Any> Attributes(DLDevice dev) const { return {}; }

  /// Scratch memory for the duration of a call (seed: TVM's AllocWorkspace): served
  /// from this kind's per-device pool, which keeps the blocks FreeWorkspace returns
  /// and hands them out again (best fit), so a kernel called in a loop reaches Alloc
  /// once. Sizes are rounded up to 64 bytes; blocks are 64-byte aligned.
  /// **IMPORTANT**: free with FreeWorkspace on the same device, not Free.
  virtual void* AllocWorkspace(DLDevice dev, size_t nbytes);
  /// Returns a block to the pool; ValueError if `ptr` is not a live workspace block of `dev`.
  virtual void FreeWorkspace(DLDevice dev, void* ptr);
  /// Pool statistics of `dev`: blocks, bytes (held from Alloc), in_use (blocks handed out).
  ffi::Map<ffi::String, ffi::Any> WorkspaceInfo(DLDevice dev);
  /// Gives every free pool block of `dev` back to Free (blocks in use stay).
  void ReleaseWorkspace(DLDevice dev);

  /// The API registered as `device_api.<name>`; ValueError listing the known kinds.
  static std::shared_ptr<DeviceAPI> Get(const std::string& name);
  /// The API of a device type; ValueError when none is registered.
  static std::shared_ptr<DeviceAPI> ForDeviceType(int32_t device_type);

 private:
  struct WorkspaceBlock {
    void* ptr;
    size_t bytes;
    bool in_use;
  };
  std::mutex ws_mu_;
  std::map<int32_t, std::vector<WorkspaceBlock>> ws_;  // device id -> its blocks
};

class DeviceAPIObj : public ffi::Object {
 public:
  explicit DeviceAPIObj(std::shared_ptr<DeviceAPI> a) : api(std::move(a)) {}
  std::shared_ptr<DeviceAPI> api;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("runtime.DeviceAPI", DeviceAPIObj, ffi::Object);
};

class DeviceAPIRef : public ffi::ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(DeviceAPIRef, ffi::ObjectRef, DeviceAPIObj);
};

/// Registers `api` as `device_api.<name>` and its memory services with the FFI.
/// ValueError if the name is taken and `allow_override` is false.
void RegisterDeviceAPI(std::shared_ptr<DeviceAPI> api, bool allow_override = false);

/// Stages a tensor that is not on the host: fills `host` (compact, CPU) from `t`.
/// Used by modules that run on the host but receive device arrays.
ffi::NDArray CopyToHost(const DLTensor& t);

}  // namespace tilecore::runtime
