/*
 * include/tilecore/ffi/ndarray.h — NDArray: a DLTensor with an owner.
 *
 * The DLTensor sits right after the object header (the C ABI's promise), so any
 * C code holding an NDArray handle can read shape, dtype and data directly.
 * Memory comes from the device allocator registered for the tensor's device kind
 * (the ffi registers the CPU; the runtime registers the npu), or from a foreign
 * DLPack producer whose deleter runs when the NDArray dies (zero copy).
 */
#ifndef TILECORE_FFI_NDARRAY_H_
#define TILECORE_FFI_NDARRAY_H_

#include <cstdint>
#include <vector>

#include "tilecore/ffi/container/shape.h"

namespace tilecore {
namespace ffi {

class NDArrayObj : public Object {
 public:
  /*! \brief Must stay the first member: C code reads it at offset sizeof(TCFFIObject). */
  DLTensor tensor{};
  std::vector<int64_t> shape_storage;
  std::vector<int64_t> strides_storage;
  /*! \brief Who owns `tensor.data`: this object (allocated on tensor.device) or a foreign producer.
   */
  enum class Owner { kSelf, kDLPack, kDLPackVersioned } owner{Owner::kSelf};
  void* foreign{nullptr};
  /*! \brief The producer marked the data read-only (DLPACK_FLAG_BITMASK_READ_ONLY): copies
   * into it and kernel arguments the kernel writes are refused. */
  bool read_only{false};

  NDArrayObj() = default;
  NDArrayObj(const NDArrayObj&) = delete;
  ~NDArrayObj();

  TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO("ffi.NDArray", NDArrayObj, Object, kTCFFINDArray);
};
static_assert(sizeof(TCFFIObject) == 24);

class NDArray : public ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(NDArray, ObjectRef, NDArrayObj);

  /*! \brief Allocates an uninitialised, compact array on `device`. */
  static NDArray Empty(const std::vector<int64_t>& shape, DLDataType dtype, DLDevice device);
  /*! \brief Takes ownership of a DLPack tensor (zero copy). */
  static NDArray FromDLPack(DLManagedTensor* tensor);
  static NDArray FromDLPackVersioned(DLManagedTensorVersioned* tensor);
  /*! \brief Exports a view that keeps this array alive until its deleter runs. */
  DLManagedTensorVersioned* ToDLPackVersioned() const;
  DLManagedTensor* ToDLPack() const;

  const DLTensor* operator*() const { return &get()->tensor; }
  const DLTensor& tensor() const { return get()->tensor; }
  std::vector<int64_t> shape() const { return get()->shape_storage; }
  DLDataType dtype() const { return get()->tensor.dtype; }
  DLDevice device() const { return get()->tensor.device; }
  int64_t NumElements() const;
  size_t NumBytes() const;
  bool IsContiguous() const;
  template <typename T>
  T* data() const {
    return reinterpret_cast<T*>(static_cast<char*>(get()->tensor.data) + get()->tensor.byte_offset);
  }

  /*! \brief Copies this array's data into `other` (same shape and dtype, any devices). */
  void CopyTo(const NDArray& other) const;
  /*! \brief A copy of this array on another device. */
  NDArray CopyTo(DLDevice device) const;
};

/*! \brief Copies between two tensors of the same shape and dtype; ValueError otherwise. */
void CopyDLTensor(const DLTensor& from, const DLTensor& to);
/*! \brief Elements of a DLTensor (product of its shape). */
int64_t DLTensorNumElements(const DLTensor& t);
/*! \brief True if the tensor is compact row-major (size-1 dimensions may have any stride). */
bool DLTensorIsContiguous(const DLTensor& t);

template <>
struct TypeTraits<NDArray> : public ObjectRefTypeTraitsBase<NDArray> {
  static std::string TypeStr() { return "NDArray"; }
};

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_NDARRAY_H_
