/*
 * src/ffi/ndarray.cc — NDArray allocation, copies between devices, and DLPack.
 */
#include "tilecore/ffi/ndarray.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "src/ffi/safe_call.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {
namespace {

constexpr int32_t kMaxDeviceType = 64;
constexpr size_t kAllocAlignment = 64;

int CpuAlloc(DLDevice, size_t nbytes, size_t alignment, void** out) {
  size_t size = (nbytes + alignment - 1) / alignment * alignment;
  *out = std::aligned_alloc(alignment, size == 0 ? alignment : size);
  if (*out == nullptr) {
    TCFFIErrorSetRaisedFromCStr("MemoryError", "cpu: out of memory");
    return -1;
  }
  return 0;
}
void CpuFree(DLDevice, void* ptr) { std::free(ptr); }
int CpuCopy(const DLTensor* from, const DLTensor* to) {
  try {
    CopyDLTensor(*from, *to);
    return 0;
  } catch (...) {
    return details::SetRaisedFromCurrentException();
  }
}

class DeviceAllocators {
 public:
  static DeviceAllocators* Global() {
    static DeviceAllocators* table = new DeviceAllocators();  // lives for the process
    return table;
  }
  void Register(int32_t device_type, const TCFFIDeviceAllocator& a) {
    if (device_type < 0 || device_type >= kMaxDeviceType) {
      TILECORE_THROW(ValueError) << "Device type " << device_type << " is out of range [0, "
                                 << kMaxDeviceType << ")";
    }
    // Allocators are retired, not freed: arrays allocated earlier still call their free.
    owned_.push_back(std::make_unique<TCFFIDeviceAllocator>(a));
    table_[device_type].store(owned_.back().get(), std::memory_order_release);
  }
  const TCFFIDeviceAllocator& Get(int32_t device_type) const {
    const TCFFIDeviceAllocator* a = device_type >= 0 && device_type < kMaxDeviceType
                                        ? table_[device_type].load(std::memory_order_acquire)
                                        : nullptr;
    if (a == nullptr) {
      TILECORE_THROW(ValueError) << "No device API is registered for device `"
                                 << DeviceTypeToName(device_type) << "`";
    }
    return *a;
  }

 private:
  DeviceAllocators() {
    for (auto& t : table_) t.store(nullptr);
    Register(kDLCPU, TCFFIDeviceAllocator{CpuAlloc, CpuFree, CpuCopy});
  }
  std::array<std::atomic<const TCFFIDeviceAllocator*>, kMaxDeviceType> table_;
  std::vector<std::unique_ptr<TCFFIDeviceAllocator>> owned_;
};

void CheckCall(int rc) {
  if (rc != 0) details::ThrowRaisedError();
}

// Strided element copy on the host, one innermost run at a time.
void CopyStrided(const char* src, const int64_t* src_strides, char* dst, const int64_t* dst_strides,
                 const int64_t* shape, int ndim, size_t elem) {
  if (ndim == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  if (ndim == 1) {
    if (src_strides[0] == 1 && dst_strides[0] == 1) {
      std::memcpy(dst, src, elem * shape[0]);
    } else {
      for (int64_t i = 0; i < shape[0]; ++i) {
        std::memcpy(dst + i * dst_strides[0] * elem, src + i * src_strides[0] * elem, elem);
      }
    }
    return;
  }
  for (int64_t i = 0; i < shape[0]; ++i) {
    CopyStrided(src + i * src_strides[0] * elem, src_strides + 1, dst + i * dst_strides[0] * elem,
                dst_strides + 1, shape + 1, ndim - 1, elem);
  }
}

std::vector<int64_t> StridesOf(const DLTensor& t) {
  std::vector<int64_t> s(t.ndim);
  if (t.strides != nullptr) {
    s.assign(t.strides, t.strides + t.ndim);
  } else {
    int64_t acc = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      s[i] = acc;
      acc *= t.shape[i];
    }
  }
  return s;
}

void DeleteDLPackVersioned(DLManagedTensorVersioned* self) {
  details::DecRef(static_cast<TCFFIObject*>(self->manager_ctx));
  delete self;  // allocated by ToDLPackVersioned below
}
void DeleteDLPack(DLManagedTensor* self) {
  details::DecRef(static_cast<TCFFIObject*>(self->manager_ctx));
  delete self;  // allocated by ToDLPack below
}

void CheckDLTensor(const DLTensor& t) {
  if (t.ndim < 0 || t.ndim > 64)
    TILECORE_THROW(ValueError) << "DLPack tensor has invalid ndim " << t.ndim;
  if (t.ndim > 0 && t.shape == nullptr) TILECORE_THROW(ValueError) << "DLPack tensor has no shape";
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0)
      TILECORE_THROW(ValueError) << "DLPack tensor has negative dimension " << t.shape[i];
  }
}

template <typename Managed>
NDArray WrapForeign(Managed* m, NDArrayObj::Owner owner) {
  if (m == nullptr) TILECORE_THROW(ValueError) << "from_dlpack: null managed tensor";
  try {
    CheckDLTensor(m->dl_tensor);
  } catch (...) {
    if (m->deleter) m->deleter(m);
    throw;
  }
  auto obj = make_object<NDArrayObj>();
  obj->tensor = m->dl_tensor;
  obj->shape_storage.assign(m->dl_tensor.shape, m->dl_tensor.shape + m->dl_tensor.ndim);
  obj->tensor.shape = obj->shape_storage.data();
  if (m->dl_tensor.strides != nullptr) {
    obj->strides_storage.assign(m->dl_tensor.strides, m->dl_tensor.strides + m->dl_tensor.ndim);
    obj->tensor.strides = obj->strides_storage.data();
  }
  obj->owner = owner;
  obj->foreign = m;
  return NDArray(std::move(obj));
}

}  // namespace

NDArrayObj::~NDArrayObj() {
  switch (owner) {
    case Owner::kSelf:
      if (tensor.data)
        DeviceAllocators::Global()->Get(tensor.device.device_type).free(tensor.device, tensor.data);
      break;
    case Owner::kDLPack: {
      auto* m = static_cast<DLManagedTensor*>(foreign);
      if (m->deleter) m->deleter(m);
      break;
    }
    case Owner::kDLPackVersioned: {
      auto* m = static_cast<DLManagedTensorVersioned*>(foreign);
      if (m->deleter) m->deleter(m);
      break;
    }
  }
}

int64_t DLTensorNumElements(const DLTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

void CopyDLTensor(const DLTensor& from, const DLTensor& to) {
  if (from.ndim != to.ndim || !(from.dtype == to.dtype)) {
    TILECORE_THROW(ValueError) << "Cannot copy a " << DLDataTypeToString(from.dtype)
                               << " tensor of rank " << from.ndim << " into a "
                               << DLDataTypeToString(to.dtype) << " tensor of rank " << to.ndim;
  }
  for (int i = 0; i < from.ndim; ++i) {
    if (from.shape[i] != to.shape[i]) {
      TILECORE_THROW(ValueError) << "Cannot copy: shapes differ at dimension " << i << " ("
                                 << from.shape[i] << " vs " << to.shape[i] << ")";
    }
  }
  if (from.device.device_type == kDLCPU && to.device.device_type == kDLCPU) {
    std::vector<int64_t> fs = StridesOf(from), ts = StridesOf(to);
    if (DLTensorNumElements(from) == 0) return;
    CopyStrided(static_cast<const char*>(from.data) + from.byte_offset, fs.data(),
                static_cast<char*>(to.data) + to.byte_offset, ts.data(), from.shape, from.ndim,
                DataTypeBytes(from.dtype));
    return;
  }
  int32_t device_type =
      from.device.device_type != kDLCPU ? from.device.device_type : to.device.device_type;
  CheckCall(DeviceAllocators::Global()->Get(device_type).copy(&from, &to));
}

NDArray NDArray::Empty(const std::vector<int64_t>& shape, DLDataType dtype, DLDevice device) {
  if (dtype.bits == 0 || dtype.lanes == 0)
    TILECORE_THROW(ValueError) << "NDArray.empty: invalid dtype";
  auto shape_str = [&] {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + (shape.size() == 1 ? ",)" : ")");
  };
  // The byte size must fit int64: every product is checked, so no overflow can hand back
  // a small buffer for a huge shape.
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) TILECORE_THROW(ValueError) << "NDArray.empty: negative dimension " << d;
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  int64_t nbytes = 0;
  if (overflow || __builtin_mul_overflow(n, static_cast<int64_t>(DataTypeBytes(dtype)), &nbytes)) {
    TILECORE_THROW(ValueError) << "NDArray.empty: shape " << shape_str() << " of "
                               << DLDataTypeToString(dtype) << " needs more than 2^63 bytes";
  }
  const TCFFIDeviceAllocator& alloc = DeviceAllocators::Global()->Get(device.device_type);
  auto obj = make_object<NDArrayObj>();
  obj->shape_storage = shape;
  obj->tensor.device = device;
  obj->tensor.dtype = dtype;
  obj->tensor.ndim = static_cast<int32_t>(shape.size());
  obj->tensor.shape = obj->shape_storage.data();
  obj->tensor.strides = nullptr;
  obj->tensor.byte_offset = 0;
  void* data = nullptr;
  CheckCall(alloc.alloc(device, static_cast<size_t>(nbytes), kAllocAlignment, &data));
  obj->tensor.data = data;
  return NDArray(std::move(obj));
}

NDArray NDArray::FromDLPack(DLManagedTensor* tensor) {
  return WrapForeign(tensor, NDArrayObj::Owner::kDLPack);
}

NDArray NDArray::FromDLPackVersioned(DLManagedTensorVersioned* tensor) {
  if (tensor != nullptr && tensor->version.major != DLPACK_MAJOR_VERSION) {
    uint32_t major = tensor->version.major;
    if (tensor->deleter) tensor->deleter(tensor);
    TILECORE_THROW(ValueError) << "from_dlpack: DLPack major version " << major
                               << " is not supported (expected " << DLPACK_MAJOR_VERSION << ")";
  }
  bool read_only = tensor != nullptr && (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  NDArray out = WrapForeign(tensor, NDArrayObj::Owner::kDLPackVersioned);
  const_cast<NDArrayObj*>(out.get())->read_only = read_only;
  return out;
}

DLManagedTensorVersioned* NDArray::ToDLPackVersioned() const {
  auto m = std::make_unique<DLManagedTensorVersioned>();
  m->version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m->dl_tensor = get()->tensor;
  m->flags = get()->read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  TCFFIObject* h = ObjectRefUnsafe::GetHandle(*this);
  details::IncRef(h);
  m->manager_ctx = h;
  m->deleter = DeleteDLPackVersioned;
  return m.release();
}

DLManagedTensor* NDArray::ToDLPack() const {
  auto m = std::make_unique<DLManagedTensor>();
  m->dl_tensor = get()->tensor;
  TCFFIObject* h = ObjectRefUnsafe::GetHandle(*this);
  details::IncRef(h);
  m->manager_ctx = h;
  m->deleter = DeleteDLPack;
  return m.release();
}

int64_t NDArray::NumElements() const { return DLTensorNumElements(get()->tensor); }
size_t NDArray::NumBytes() const {
  return static_cast<size_t>(NumElements()) * DataTypeBytes(dtype());
}

bool NDArray::IsContiguous() const { return DLTensorIsContiguous(get()->tensor); }

bool DLTensorIsContiguous(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

void NDArray::CopyTo(const NDArray& other) const {
  if (other->read_only)
    TILECORE_THROW(ValueError) << "Cannot copy: the destination array is read-only";
  CopyDLTensor(get()->tensor, other->tensor);
}

NDArray NDArray::CopyTo(DLDevice device) const {
  NDArray out = Empty(shape(), dtype(), device);
  CopyTo(out);
  return out;
}

TILECORE_REGISTER_GLOBAL("ffi.NDArrayEmpty")
    .set_body_typed([](Shape shape, DLDataType dtype, DLDevice device) {
      return NDArray::Empty(std::vector<int64_t>(shape.begin(), shape.end()), dtype, device);
    });
TILECORE_REGISTER_GLOBAL("ffi.NDArrayCopyFromTo").set_body_typed([](NDArray from, NDArray to) {
  from.CopyTo(to);
});
TILECORE_REGISTER_GLOBAL("ffi.NDArrayCopyToDevice")
    .set_body_typed([](NDArray from, DLDevice device) { return from.CopyTo(device); });

}  // namespace ffi
}  // namespace tilecore

using namespace tilecore::ffi;  // NOLINT(*)

int TCFFIDeviceAllocatorRegister(int32_t device_type, const TCFFIDeviceAllocator* allocator) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  DeviceAllocators::Global()->Register(device_type, *allocator);
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFINDArrayEmpty(const int64_t* shape, int32_t ndim, DLDataType dtype, DLDevice device,
                      TCFFIObjectHandle* out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  if (ndim < 0) TILECORE_THROW(ValueError) << "TCFFINDArrayEmpty: negative ndim " << ndim;
  NDArray arr = NDArray::Empty(std::vector<int64_t>(shape, shape + ndim), dtype, device);
  *out = details::ObjectUnsafe::MoveToHandle(ObjectPtr<Object>(ObjectRefUnsafe::GetPtr(arr)));
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFINDArrayCopyFromTo(const DLTensor* from, const DLTensor* to) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  CopyDLTensor(*from, *to);
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFINDArrayCopyFromToArrays(TCFFIObjectHandle from, TCFFIObjectHandle to) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  NDArray(details::ObjectUnsafe::CopyFromHandle(from))
      .CopyTo(NDArray(details::ObjectUnsafe::CopyFromHandle(to)));
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFINDArrayFromDLPack(DLManagedTensor* from, TCFFIObjectHandle* out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  NDArray arr = NDArray::FromDLPack(from);
  *out = details::ObjectUnsafe::MoveToHandle(ObjectPtr<Object>(ObjectRefUnsafe::GetPtr(arr)));
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFINDArrayFromDLPackVersioned(DLManagedTensorVersioned* from, TCFFIObjectHandle* out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  NDArray arr = NDArray::FromDLPackVersioned(from);
  *out = details::ObjectUnsafe::MoveToHandle(ObjectPtr<Object>(ObjectRefUnsafe::GetPtr(arr)));
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFINDArrayToDLPack(TCFFIObjectHandle array, DLManagedTensor** out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  *out = NDArray(details::ObjectUnsafe::CopyFromHandle(array)).ToDLPack();
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFINDArrayToDLPackVersioned(TCFFIObjectHandle array, DLManagedTensorVersioned** out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  *out = NDArray(details::ObjectUnsafe::CopyFromHandle(array)).ToDLPackVersioned();
  TILECORE_FFI_SAFE_CALL_END();
}
