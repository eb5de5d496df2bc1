/*
 * include/tilecore/ffi/container/array.h — Array<T>: an immutable-looking,
 * copy-on-write sequence of values.
 *
 * An Array shared by several owners is never changed in place: a mutating call
 * copies it first when use_count() > 1. IR nodes can therefore share arrays freely.
 * Array<T> checks element types when converted from an Any (TypeError naming the
 * index of the first bad element); the storage is always Any.
 */
#ifndef TILECORE_FFI_CONTAINER_ARRAY_H_
#define TILECORE_FFI_CONTAINER_ARRAY_H_

#include <initializer_list>
#include <vector>

#include "tilecore/ffi/any.h"

namespace tilecore {
namespace ffi {

class ArrayObj : public Object {
 public:
  using Storage = std::vector<Any, details::PoolAllocator<Any>>;
  Storage data;

  ArrayObj() = default;
  explicit ArrayObj(Storage d) : data(std::move(d)) {}
  TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO("ffi.Array", ArrayObj, Object, kTCFFIArray);
};

template <typename T = Any>
class Array : public ObjectRef {
 public:
  using value_type = T;
  Array() : ObjectRef(make_object<ArrayObj>()) {}
  explicit Array(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}
  Array(std::initializer_list<T> init) : Array() {
    for (const T& v : init) push_back(v);
  }
  Array(const std::vector<T>& init) : ObjectRef(FromVector(init)) {}  // NOLINT(*)
  template <typename U, typename = std::enable_if_t<!std::is_same_v<U, T>>>
  Array(const Array<U>& other) : ObjectRef(ObjectRefUnsafe::GetPtr(other)) {}  // NOLINT(*)

  size_t size() const { return obj()->data.size(); }
  bool empty() const { return size() == 0; }
  T operator[](size_t i) const { return Get(i); }
  T Get(size_t i) const {
    if (i >= size())
      TILECORE_THROW(IndexError) << "Array index " << i << " out of range [0, " << size() << ")";
    if constexpr (std::is_same_v<T, Any>) {
      return obj()->data[i];
    } else {
      return obj()->data[i].template cast<T>();
    }
  }
  T back() const { return Get(size() - 1); }
  const Any& raw(size_t i) const { return obj()->data[i]; }

  void push_back(T v) { CopyOnWrite()->data.emplace_back(Any(std::move(v))); }
  void Set(size_t i, T v) {
    if (i >= size())
      TILECORE_THROW(IndexError) << "Array index " << i << " out of range [0, " << size() << ")";
    CopyOnWrite()->data[i] = Any(std::move(v));
  }
  void clear() { CopyOnWrite()->data.clear(); }

  class iterator {
   public:
    iterator(const Array* a, size_t i) : a_(a), i_(i) {}
    T operator*() const { return a_->Get(i_); }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const iterator& o) const { return i_ != o.i_; }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    const Array* a_;
    size_t i_;
  };
  iterator begin() const { return iterator(this, 0); }
  iterator end() const { return iterator(this, size()); }

  const ArrayObj* get() const { return obj(); }
  const ArrayObj* operator->() const { return obj(); }
  using ContainerType = ArrayObj;

 private:
  static ObjectPtr<ArrayObj> FromVector(const std::vector<T>& init) {
    ObjectPtr<ArrayObj> n = make_object<ArrayObj>();
    n->data.reserve(init.size());
    for (const T& v : init) n->data.emplace_back(Any(v));
    return n;
  }
  const ArrayObj* obj() const { return static_cast<const ArrayObj*>(ObjectRef::get()); }
  ArrayObj* CopyOnWrite() {
    if (data_.use_count() > 1) data_ = make_object<ArrayObj>(obj()->data);
    return static_cast<ArrayObj*>(data_.get());
  }
};

template <typename T>
struct HasTemplateTypeTraits<Array<T>> : std::true_type {};

template <typename T>
struct TypeTraits<Array<T>> : public ObjectRefTypeTraitsBase<Array<T>> {
  static bool CheckAnyStrict(const TCFFIAny* v) {
    if (v->type_index != kTCFFIArray) return false;
    if constexpr (std::is_same_v<T, Any>) {
      return true;
    } else {
      const auto* arr = reinterpret_cast<const ArrayObj*>(v->v_obj);
      for (const Any& e : arr->data) {
        if (!ElementNotNone<T>(e.raw()) || !TypeTraitsNoCR<T>::CheckAnyStrict(e.raw()))
          return false;
      }
      return true;
    }
  }
  static std::optional<Array<T>> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index != kTCFFIArray) return std::nullopt;
    if (CheckAnyStrict(v)) return Array<T>(details::ObjectUnsafe::CopyFromHandle(v->v_obj));
    // Elements need conversion (e.g. raw str -> String): build a converted copy.
    const auto* arr = reinterpret_cast<const ArrayObj*>(v->v_obj);
    Array<T> out;
    for (const Any& e : arr->data) {
      if (!ElementNotNone<T>(e.raw())) return std::nullopt;
      std::optional<T> c = TypeTraitsNoCR<T>::TryCastFromAnyView(e.raw());
      if (!c.has_value()) return std::nullopt;
      out.push_back(*std::move(c));
    }
    return out;
  }
  static std::optional<details::RefusedElement> FirstRefused(const TCFFIAny* v) {
    if (v->type_index != kTCFFIArray) return std::nullopt;
    const auto* arr = reinterpret_cast<const ArrayObj*>(v->v_obj);
    for (size_t i = 0; i < arr->data.size(); ++i) {
      if (auto r = details::RefusedAs<T>(arr->data[i].raw(), "[" + std::to_string(i) + "]"))
        return r;
    }
    return std::nullopt;
  }
  static std::string TypeStr() { return "Array[" + TypeTraitsNoCR<T>::TypeStr() + "]"; }
};

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_CONTAINER_ARRAY_H_
