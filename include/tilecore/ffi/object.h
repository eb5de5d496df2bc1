/*
 * include/tilecore/ffi/object.h — Object, ObjectPtr and ObjectRef: the object system.
 *
 * Every tilecore heap object (IR nodes, arrays, functions, modules, ...) derives from
 * Object, whose only data member is the C ABI's 24-byte TCFFIObject header. Objects
 * have no virtual functions: the header's deleter destroys them and the header's
 * type index identifies them, so a C caller or another shared library sees the same
 * layout as this C++ code.
 *
 * Declaring a kind:
 *
 *   class VarNode : public Object {
 *    public:
 *     String name;
 *     TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Var", VarNode, Object);
 *   };
 *   class Var : public ObjectRef {
 *    public:
 *     TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Var, ObjectRef, VarNode);
 *   };
 */
#ifndef TILECORE_FFI_OBJECT_H_
#define TILECORE_FFI_OBJECT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "tilecore/ffi/c_api.h"

// Which sanitizer instruments this build: GCC defines __SANITIZE_ADDRESS__ and
// __SANITIZE_THREAD__, Clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define TILECORE_ADDRESS_SANITIZER 1
#endif
#if defined(__SANITIZE_THREAD__)
#define TILECORE_THREAD_SANITIZER 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TILECORE_ADDRESS_SANITIZER 1
#endif
#if __has_feature(thread_sanitizer)
#define TILECORE_THREAD_SANITIZER 1
#endif
#endif

namespace tilecore {
namespace ffi {

class Object;
template <typename T>
class ObjectPtr;

namespace details {
/*! \brief Allocates (or finds) the run-time index of a kind; aborts on a broken hierarchy. */
int32_t GetOrAllocTypeIndex(const char* type_key, int32_t static_type_index,
                            int32_t parent_type_index);
/*! \brief The registered key of an index, or "<unknown type N>". */
std::string TypeIndexToKey(int32_t type_index);
/*! \brief O(1) ancestry test on the run-time hierarchy. */
bool IsAncestorIndex(int32_t object_type_index, int32_t ancestor_index, int32_t ancestor_depth);
int32_t TypeDepth(int32_t type_index);

inline void IncRef(TCFFIObject* obj) { __atomic_fetch_add(&obj->ref_count, 1, __ATOMIC_RELAXED); }
/*!
 * \brief Runs the deleter of an object whose count reached zero. Releases made while a
 * deleter runs are queued (linked through the dead ref_count) and run after it
 * returns, so freeing a deep tree (a long expression chain, nested arrays) uses
 * constant C stack instead of one frame per level.
 */
void DestroyObject(TCFFIObject* obj) noexcept;
/*!
 * \brief Memory for one object of `bytes` bytes (src/ffi/object_pool.cc): objects up to
 * kPooledObjectBytes come from per-thread free lists of their size class, larger ones from
 * operator new. IR passes make and drop millions of small nodes, and the free lists cost a
 * fraction of malloc's bookkeeping.
 */
void* AllocObjectMemory(size_t bytes);
/*! \brief Gives back memory of AllocObjectMemory(bytes) (any thread may). */
void FreeObjectMemory(void* memory, size_t bytes) noexcept;
/*! \brief Objects up to this size (and alignment 16) are pooled. */
constexpr size_t kPooledObjectBytes = 256;
template <typename T>
constexpr bool kPooledObject = sizeof(T) <= kPooledObjectBytes && alignof(T) <= 16;
/*! \brief A standard allocator over AllocObjectMemory: the storage of small containers
 * inside objects (an Array's elements) from the same free lists. */
template <typename T>
struct PoolAllocator {
  using value_type = T;
  static_assert(alignof(T) <= 16, "PoolAllocator: the pool's blocks are 16-byte aligned");
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT(*)
  T* allocate(size_t n) { return static_cast<T*>(AllocObjectMemory(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { FreeObjectMemory(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};
inline void DecRef(TCFFIObject* obj) {
#if defined(TILECORE_THREAD_SANITIZER)
  // ThreadSanitizer does not model fences: an acquire-release decrement orders the same
  // accesses in a form it sees.
  if (__atomic_fetch_sub(&obj->ref_count, 1, __ATOMIC_ACQ_REL) == 1) DestroyObject(obj);
#else
  if (__atomic_fetch_sub(&obj->ref_count, 1, __ATOMIC_RELEASE) == 1) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    DestroyObject(obj);
  }
#endif
}
struct ObjectUnsafe;
}  // namespace details

/*!
 * \brief Base of every heap object. Layout: exactly one TCFFIObject header.
 */
class Object {
 public:
  Object() : header_{0, 0, 0, nullptr} {}
  Object(const Object&) : header_{0, 0, 0, nullptr} {}
  Object& operator=(const Object&) { return *this; }

  int32_t type_index() const { return header_.type_index; }
  std::string GetTypeKey() const { return details::TypeIndexToKey(header_.type_index); }
  /*! \brief Number of strong references (for tests and copy-on-write). */
  uint64_t use_count() const { return __atomic_load_n(&header_.ref_count, __ATOMIC_RELAXED); }

  /*! \brief True if this object is a T (or derives from it). O(1). */
  template <typename T>
  bool IsInstance() const;

  static constexpr const char* _type_key = "ffi.Object";
  static constexpr int32_t _type_index = kTCFFIObject;
  static constexpr int32_t _type_depth = 0;
  static constexpr bool _type_final = false;
  static int32_t RuntimeTypeIndex() { return kTCFFIObject; }
  static int32_t RuntimeTypeDepth() { return 0; }

 protected:
  TCFFIObject header_;

  friend struct details::ObjectUnsafe;
  template <typename T, typename... Args>
  friend ObjectPtr<T> make_object(Args&&... args);
};
static_assert(sizeof(Object) == sizeof(TCFFIObject), "Object must be exactly the C header");

/*!
 * \brief Declares the kind of an object class whose index is allocated at run time.
 * Use inside the class body; ParentType is the direct base.
 */
#define TILECORE_FFI_DECLARE_OBJECT_INFO(TypeKey, TypeName, ParentType)          \
  static constexpr const char* _type_key = TypeKey;                              \
  static constexpr int32_t _type_index = -1;                                     \
  static constexpr bool _type_final = false;                                     \
  using _type_parent = ParentType;                                               \
  static int32_t RuntimeTypeIndex() {                                            \
    static const int32_t tindex = ::tilecore::ffi::details::GetOrAllocTypeIndex( \
        TypeKey, -1, ParentType::RuntimeTypeIndex());                            \
    return tindex;                                                               \
  }                                                                              \
  static int32_t RuntimeTypeDepth() { return ParentType::RuntimeTypeDepth() + 1; }

/*! \brief Like TILECORE_FFI_DECLARE_OBJECT_INFO, for a kind with no subclasses (faster isinstance).
 */
#define TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL(TypeKey, TypeName, ParentType) \
  TILECORE_FFI_DECLARE_OBJECT_INFO(TypeKey, TypeName, ParentType)             \
  static constexpr bool _type_final_marker = true;

/*! \brief Declares a kind with a fixed index from TCFFITypeIndex (the ffi's own kinds). */
#define TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO(TypeKey, TypeName, ParentType, StaticIndex) \
  static constexpr const char* _type_key = TypeKey;                                         \
  static constexpr int32_t _type_index = StaticIndex;                                       \
  static constexpr bool _type_final_marker = true;                                          \
  using _type_parent = ParentType;                                                          \
  static int32_t RuntimeTypeIndex() {                                                       \
    static const int32_t tindex = ::tilecore::ffi::details::GetOrAllocTypeIndex(            \
        TypeKey, StaticIndex, ParentType::RuntimeTypeIndex());                              \
    return tindex;                                                                          \
  }                                                                                         \
  static int32_t RuntimeTypeDepth() { return ParentType::RuntimeTypeDepth() + 1; }

namespace details {
template <typename T, typename = void>
struct IsFinalKind : std::false_type {};
template <typename T>
struct IsFinalKind<T, std::void_t<decltype(T::_type_final_marker)>> : std::true_type {};
}  // namespace details

namespace details {
/*!
 * \brief IsAncestorIndex for kind T, its answers kept per object kind (a kind's ancestors
 * never change once it is registered): an IR walk asks it of every element it reads
 * (Array<PrimExpr>::Get), over a few dozen kinds.
 */
template <typename T>
bool IsKindOf(int32_t type_index) {
  // (0: not asked yet, 1: a T, 2: not a T; kinds from kKept on are asked each time)
  constexpr int32_t kKept = 2048;
  static std::atomic<int8_t> known[kKept] = {};
  if (type_index < 0 || type_index >= kKept)
    return IsAncestorIndex(type_index, T::RuntimeTypeIndex(), T::RuntimeTypeDepth());
  int8_t k = known[type_index].load(std::memory_order_relaxed);
  if (k == 0) {
    k = IsAncestorIndex(type_index, T::RuntimeTypeIndex(), T::RuntimeTypeDepth()) ? 1 : 2;
    known[type_index].store(k, std::memory_order_relaxed);
  }
  return k == 1;
}
}  // namespace details

template <typename T>
inline bool Object::IsInstance() const {
  if constexpr (std::is_same_v<T, Object>) {
    return true;
  } else {
    int32_t target = T::RuntimeTypeIndex();
    if (header_.type_index == target) return true;
    if constexpr (details::IsFinalKind<T>::value) {
      return false;
    } else {
      return details::IsKindOf<T>(header_.type_index);
    }
  }
}

/*!
 * \brief An intrusive strong pointer to an object.
 */
template <typename T>
class ObjectPtr {
 public:
  ObjectPtr() = default;
  ObjectPtr(std::nullptr_t) {}  // NOLINT(*)
  ObjectPtr(const ObjectPtr& other) : data_(other.data_) { IncRef(); }
  ObjectPtr(ObjectPtr&& other) noexcept : data_(other.data_) { other.data_ = nullptr; }
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(const ObjectPtr<U>& other) : data_(other.data_) {  // NOLINT(*)
    IncRef();
  }
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(ObjectPtr<U>&& other) : data_(other.data_) {  // NOLINT(*)
    other.data_ = nullptr;
  }
  ~ObjectPtr() { DecRef(); }

  ObjectPtr& operator=(const ObjectPtr& other) {
    ObjectPtr(other).swap(*this);
    return *this;
  }
  ObjectPtr& operator=(ObjectPtr&& other) noexcept {
    ObjectPtr(std::move(other)).swap(*this);
    return *this;
  }
  void swap(ObjectPtr& other) noexcept { std::swap(data_, other.data_); }

  T* get() const { return static_cast<T*>(data_); }
  T* operator->() const { return get(); }
  T& operator*() const { return *get(); }
  explicit operator bool() const { return data_ != nullptr; }
  bool operator==(const ObjectPtr& other) const { return data_ == other.data_; }
  bool operator==(std::nullptr_t) const { return data_ == nullptr; }
  uint64_t use_count() const { return data_ ? data_->use_count() : 0; }
  void reset() { ObjectPtr().swap(*this); }

 private:
  void IncRef() {
    if (data_) details::IncRef(reinterpret_cast<TCFFIObject*>(data_));
  }
  void DecRef() {
    if (data_) details::DecRef(reinterpret_cast<TCFFIObject*>(data_));
  }
  explicit ObjectPtr(Object* data) : data_(data) {}

  Object* data_{nullptr};

  template <typename>
  friend class ObjectPtr;
  friend struct details::ObjectUnsafe;
  friend class ObjectRef;
  template <typename U, typename... Args>
  friend ObjectPtr<U> make_object(Args&&... args);
};

namespace details {
/*! \brief Conversions between handles and smart pointers; for the ffi's own code. */
struct ObjectUnsafe {
  static TCFFIObject* GetHeader(const Object* obj) {
    return const_cast<TCFFIObject*>(&obj->header_);
  }
  static Object* FromHandle(TCFFIObject* handle) { return reinterpret_cast<Object*>(handle); }
  /*! \brief Takes over one reference that the caller owns. */
  template <typename T = Object>
  static ObjectPtr<T> MoveFromHandle(TCFFIObject* handle) {
    ObjectPtr<T> ptr;
    ptr.data_ = reinterpret_cast<Object*>(handle);
    return ptr;
  }
  /*! \brief Adds a reference and wraps. */
  template <typename T = Object>
  static ObjectPtr<T> CopyFromHandle(TCFFIObject* handle) {
    if (handle) IncRef(handle);
    return MoveFromHandle<T>(handle);
  }
  /*! \brief Gives up the pointer's reference to the caller. */
  template <typename T>
  static TCFFIObject* MoveToHandle(ObjectPtr<T>&& ptr) {
    TCFFIObject* h = reinterpret_cast<TCFFIObject*>(ptr.data_);
    ptr.data_ = nullptr;
    return h;
  }
  static void InitHeader(Object* obj, int32_t type_index, void (*deleter)(TCFFIObject*)) {
    obj->header_.ref_count = 1;
    obj->header_.type_index = type_index;
    obj->header_.reserved = 0;
    obj->header_.deleter = deleter;
  }
};

template <typename T>
void DeleteObject(TCFFIObject* obj) {
  T* p = reinterpret_cast<T*>(obj);
  if constexpr (kPooledObject<T>) {
    p->~T();
    FreeObjectMemory(p, sizeof(T));
  } else {
    delete p;  // the object allocator's one delete
  }
}
}  // namespace details

/*!
 * \brief Allocates an object of kind T with a reference count of one.
 * The only place objects are allocated (AllocObjectMemory, or `new` for large ones).
 */
template <typename T, typename... Args>
ObjectPtr<T> make_object(Args&&... args) {
  static_assert(std::is_base_of_v<Object, T>, "make_object needs an Object subclass");
  T* obj;
  if constexpr (details::kPooledObject<T>) {
    void* memory = details::AllocObjectMemory(sizeof(T));
    try {
      obj = new (memory) T(std::forward<Args>(args)...);
    } catch (...) {
      details::FreeObjectMemory(memory, sizeof(T));
      throw;
    }
  } else {
    obj = new T(std::forward<Args>(args)...);
  }
  details::ObjectUnsafe::InitHeader(obj, T::RuntimeTypeIndex(), details::DeleteObject<T>);
  return details::ObjectUnsafe::MoveFromHandle<T>(reinterpret_cast<TCFFIObject*>(obj));
}

/*!
 * \brief A typed reference to an object; the base of every handle class.
 *
 * Subclasses name a container type (their object kind). A handle may be null (default
 * constructed, moved from), but None converts to no object type (see NoneMeansAbsent).
 */
class ObjectRef {
 public:
  ObjectRef() = default;
  explicit ObjectRef(ObjectPtr<Object> data) : data_(std::move(data)) {}

  bool defined() const { return data_ != nullptr; }
  const Object* get() const { return data_.get(); }
  const Object* operator->() const { return get(); }
  bool same_as(const ObjectRef& other) const { return data_ == other.data_; }
  bool operator==(const ObjectRef& other) const { return data_ == other.data_; }
  uint64_t use_count() const { return data_.use_count(); }

  template <typename T>
  const T* as() const {
    if (data_ && data_->IsInstance<T>()) return static_cast<const T*>(data_.get());
    return nullptr;
  }

  using ContainerType = Object;

 protected:
  ObjectPtr<Object> data_;
  Object* get_mutable() const { return data_.get(); }

  friend struct details::ObjectUnsafe;
  friend struct ObjectRefUnsafe;
};

/*! \brief Handle-level access to ObjectRef internals, for the ffi's own conversions. */
struct ObjectRefUnsafe {
  template <typename R>
  static R FromPtr(ObjectPtr<Object> ptr) {
    R ref;
    ref.data_ = std::move(ptr);
    return ref;
  }
  static const ObjectPtr<Object>& GetPtr(const ObjectRef& ref) { return ref.data_; }
  static ObjectPtr<Object>&& MovePtr(ObjectRef&& ref) { return std::move(ref.data_); }
  static TCFFIObject* GetHandle(const ObjectRef& ref) {
    return reinterpret_cast<TCFFIObject*>(const_cast<Object*>(ref.get()));
  }
};

/*! \brief Standard members of an ObjectRef subclass `TypeName` holding `ObjectName`. */
#define TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName)               \
  TypeName() = default;                                                                        \
  explicit TypeName(::tilecore::ffi::ObjectPtr<::tilecore::ffi::Object> n)                     \
      : ParentType(std::move(n)) {}                                                            \
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<ObjectName, U>>>         \
  TypeName(::tilecore::ffi::ObjectPtr<U> n) /* NOLINT(*) */                                    \
      : ParentType(::tilecore::ffi::ObjectPtr<::tilecore::ffi::Object>(std::move(n))) {}       \
  const ObjectName* operator->() const { return static_cast<const ObjectName*>(data_.get()); } \
  const ObjectName* get() const { return operator->(); }                                       \
  using ContainerType = ObjectName;

/*! \brief Like TILECORE_FFI_DEFINE_OBJECT_REF_METHODS, plus mutable access for copy-on-write. */
#define TILECORE_FFI_DEFINE_MUTABLE_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName) \
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName)               \
  ObjectName* operator->() { return static_cast<ObjectName*>(data_.get()); }

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_OBJECT_H_
