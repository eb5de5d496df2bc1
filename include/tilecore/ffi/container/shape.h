/*
 * include/tilecore/ffi/container/shape.h — Shape: an immutable tuple of int64
 * dimensions whose cell (TCFFIShapeCell) C code can read without a call.
 */
#ifndef TILECORE_FFI_CONTAINER_SHAPE_H_
#define TILECORE_FFI_CONTAINER_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "tilecore/ffi/any.h"

namespace tilecore {
namespace ffi {

class ShapeObj : public Object {
 public:
  TCFFIShapeCell cell{};
  std::vector<int64_t> storage;

  explicit ShapeObj(std::vector<int64_t> dims) : storage(std::move(dims)) {
    cell.data = storage.data();
    cell.size = storage.size();
  }
  ShapeObj(const ShapeObj&) = delete;
  TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO("ffi.Shape", ShapeObj, Object, kTCFFIShape);
};

class Shape : public ObjectRef {
 public:
  Shape() : Shape(std::vector<int64_t>{}) {}
  Shape(std::vector<int64_t> dims)
      : ObjectRef(make_object<ShapeObj>(std::move(dims))) {}  // NOLINT(*)
  Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}
  explicit Shape(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}

  size_t size() const { return get()->cell.size; }
  int64_t operator[](size_t i) const { return get()->cell.data[i]; }
  const int64_t* data() const { return get()->cell.data; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size(); }
  /*! \brief Product of the dimensions (1 for a scalar shape). */
  int64_t Product() const {
    int64_t p = 1;
    for (int64_t d : *this) p *= d;
    return p;
  }
  bool operator==(const Shape& o) const { return get()->storage == o.get()->storage; }

  const ShapeObj* get() const { return static_cast<const ShapeObj*>(ObjectRef::get()); }
  const ShapeObj* operator->() const { return get(); }
  using ContainerType = ShapeObj;
};

template <>
struct TypeTraits<Shape> : public ObjectRefTypeTraitsBase<Shape> {
  static std::optional<Shape> TryCastFromAnyView(const TCFFIAny* v);
  static std::string TypeStr() { return "Shape"; }
};

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_CONTAINER_SHAPE_H_
