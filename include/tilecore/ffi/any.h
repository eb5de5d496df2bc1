/*
 * include/tilecore/ffi/any.h — AnyView (borrowed) and Any (owning): the values
 * that cross every function boundary, and TypeTraits, which say how each C++ type
 * goes into and comes out of them.
 *
 * Both share the 16-byte TCFFIAny layout; only ownership differs:
 *   - AnyView never touches reference counts. Arguments are AnyViews.
 *   - Any owns what it holds. Results are Anys.
 *
 * Conversions out of an Any come in two strengths:
 *   - as<T>()       exact: the value is stored as a T (an int is not a double).
 *   - try_cast<T>() / cast<T>() convenient: also int -> float, "int8" -> DataType,
 *                   raw or small string -> String, ...
 */
#ifndef TILECORE_FFI_ANY_H_
#define TILECORE_FFI_ANY_H_

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/object.h"
#include "tilecore/ffi/string.h"

namespace tilecore {
namespace ffi {

class Any;
class AnyView;

/*!
 * \brief How a C++ type T travels in an Any. Specialisations provide:
 *   - CopyToAnyView(const T&, TCFFIAny*): borrowed (no reference taken)
 *   - MoveToAny(T, TCFFIAny*): owned
 *   - CheckAnyStrict(const TCFFIAny*): stored exactly as a T
 *   - TryCastFromAnyView(const TCFFIAny*) -> std::optional<T>: with conversions
 *   - TypeStr(): the name used in signatures and error messages
 */
template <typename T, typename = void>
struct TypeTraits {
  static constexpr bool enabled = false;
};

template <typename T>
using TypeTraitsNoCR = TypeTraits<std::remove_const_t<std::remove_reference_t<T>>>;

namespace details {
/*! \brief The type name of a stored value, as users see it ("int", "str", "ir.Var", ...). */
std::string AnyTypeName(const TCFFIAny* value);
/*! \brief The string bytes of a RawStr/SmallStr/Str value; false if not a string. */
inline bool AnyGetStringView(const TCFFIAny* v, std::string_view* out) {
  switch (v->type_index) {
    case kTCFFIRawStr:
      *out = std::string_view(v->v_c_str);
      return true;
    case kTCFFISmallStr:
      *out = std::string_view(v->v_bytes, v->small_len);
      return true;
    case kTCFFIStr: {
      const auto* cell = reinterpret_cast<const TCFFIStrCell*>(
          reinterpret_cast<const char*>(v->v_obj) + sizeof(TCFFIObject));
      *out = std::string_view(cell->bytes.data, cell->bytes.size);
      return true;
    }
    default:
      return false;
  }
}
inline void SetNone(TCFFIAny* out) { *out = TCFFIAny{}; }  // type None, all payload zero
/*! \brief Fills `out` (owned) with a copy of the string, inline when it fits in 7 bytes. */
void MakeOwnedString(std::string_view s, TCFFIAny* out);
}  // namespace details

// ---------------------------------------------------------------------------
// PODs
// ---------------------------------------------------------------------------
template <typename Int>
struct TypeTraits<Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const Int& v, TCFFIAny* out) {
    out->type_index = kTCFFIInt;
    out->zero_padding = 0;
    out->v_int64 = static_cast<int64_t>(v);
  }
  static void MoveToAny(Int v, TCFFIAny* out) { CopyToAnyView(v, out); }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIInt; }
  static std::optional<Int> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index != kTCFFIInt && v->type_index != kTCFFIBool) return std::nullopt;
    int64_t x = v->v_int64;
    if constexpr (sizeof(Int) < sizeof(int64_t) || std::is_unsigned_v<Int>) {
      if constexpr (std::is_unsigned_v<Int>) {
        if (x < 0) return std::nullopt;
        if constexpr (sizeof(Int) < sizeof(int64_t)) {
          if (x > static_cast<int64_t>(std::numeric_limits<Int>::max())) return std::nullopt;
        }
      } else {
        if (x < std::numeric_limits<Int>::min() || x > std::numeric_limits<Int>::max())
          return std::nullopt;
      }
    }
    return static_cast<Int>(x);
  }
  static std::string TypeStr() { return "int"; }
};

template <>
struct TypeTraits<bool> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const bool& v, TCFFIAny* out) {
    out->type_index = kTCFFIBool;
    out->zero_padding = 0;
    out->v_int64 = v ? 1 : 0;
  }
  static void MoveToAny(bool v, TCFFIAny* out) { CopyToAnyView(v, out); }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIBool; }
  static std::optional<bool> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index == kTCFFIBool || v->type_index == kTCFFIInt) return v->v_int64 != 0;
    return std::nullopt;
  }
  static std::string TypeStr() { return "bool"; }
};

template <typename Float>
struct TypeTraits<Float, std::enable_if_t<std::is_floating_point_v<Float>>> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const Float& v, TCFFIAny* out) {
    out->type_index = kTCFFIFloat;
    out->zero_padding = 0;
    out->v_float64 = static_cast<double>(v);
  }
  static void MoveToAny(Float v, TCFFIAny* out) { CopyToAnyView(v, out); }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIFloat; }
  static std::optional<Float> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index == kTCFFIFloat) return static_cast<Float>(v->v_float64);
    if (v->type_index == kTCFFIInt || v->type_index == kTCFFIBool)
      return static_cast<Float>(v->v_int64);
    return std::nullopt;
  }
  static std::string TypeStr() { return "float"; }
};

template <>
struct TypeTraits<void*> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(void* const& v, TCFFIAny* out) {
    out->type_index = v ? kTCFFIOpaquePtr : kTCFFINone;
    out->zero_padding = 0;
    out->v_ptr = v;
  }
  static void MoveToAny(void* v, TCFFIAny* out) { CopyToAnyView(v, out); }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIOpaquePtr; }
  static std::optional<void*> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index == kTCFFIOpaquePtr) return v->v_ptr;
    if (v->type_index == kTCFFINone) return static_cast<void*>(nullptr);
    return std::nullopt;
  }
  static std::string TypeStr() { return "void*"; }
};

template <>
struct TypeTraits<DLDataType> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const DLDataType& v, TCFFIAny* out) {
    out->type_index = kTCFFIDataType;
    out->zero_padding = 0;
    out->v_int64 = 0;
    out->v_dtype = v;
  }
  static void MoveToAny(DLDataType v, TCFFIAny* out) { CopyToAnyView(v, out); }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIDataType; }
  static std::optional<DLDataType> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index == kTCFFIDataType) return v->v_dtype;
    std::string_view s;
    if (details::AnyGetStringView(v, &s)) return StringToDLDataType(s);
    return std::nullopt;
  }
  static std::string TypeStr() { return "DataType"; }
};

template <>
struct TypeTraits<DLDevice> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const DLDevice& v, TCFFIAny* out) {
    out->type_index = kTCFFIDevice;
    out->zero_padding = 0;
    out->v_device = v;
  }
  static void MoveToAny(DLDevice v, TCFFIAny* out) { CopyToAnyView(v, out); }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIDevice; }
  static std::optional<DLDevice> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index == kTCFFIDevice) return v->v_device;
    return std::nullopt;
  }
  static std::string TypeStr() { return "Device"; }
};

template <>
struct TypeTraits<DLTensor*> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(DLTensor* const& v, TCFFIAny* out) {
    out->type_index = kTCFFIDLTensorPtr;
    out->zero_padding = 0;
    out->v_ptr = v;
  }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIDLTensorPtr; }
  static std::optional<DLTensor*> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index == kTCFFIDLTensorPtr) return static_cast<DLTensor*>(v->v_ptr);
    if (v->type_index == kTCFFINDArray) return TCFFINDArrayGetDLTensorPtr(v->v_obj);
    return std::nullopt;
  }
  static std::string TypeStr() { return "DLTensor*"; }
};

// ---------------------------------------------------------------------------
// Strings
// ---------------------------------------------------------------------------
template <>
struct TypeTraits<String> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const String& v, TCFFIAny* out) {
    out->type_index = kTCFFIStr;
    out->zero_padding = 0;
    out->v_obj = ObjectRefUnsafe::GetHandle(v);
  }
  static void MoveToAny(String v, TCFFIAny* out) {
    CopyToAnyView(v, out);
    details::ObjectUnsafe::MoveToHandle(ObjectPtr<Object>(ObjectRefUnsafe::MovePtr(std::move(v))));
  }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIStr; }
  static std::optional<String> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index == kTCFFIStr) {
      return String(details::ObjectUnsafe::CopyFromHandle(v->v_obj));
    }
    std::string_view s;
    if (details::AnyGetStringView(v, &s)) return String(s);
    return std::nullopt;
  }
  static std::string TypeStr() { return "str"; }
};

template <>
struct TypeTraits<std::string> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const std::string& v, TCFFIAny* out) {
    out->type_index = kTCFFIRawStr;
    out->zero_padding = 0;
    out->v_c_str = v.c_str();
  }
  static void MoveToAny(const std::string& v, TCFFIAny* out) { details::MakeOwnedString(v, out); }
  static bool CheckAnyStrict(const TCFFIAny* v) {
    std::string_view s;
    return details::AnyGetStringView(v, &s);
  }
  static std::optional<std::string> TryCastFromAnyView(const TCFFIAny* v) {
    std::string_view s;
    if (details::AnyGetStringView(v, &s)) return std::string(s);
    return std::nullopt;
  }
  static std::string TypeStr() { return "str"; }
};

template <>
struct TypeTraits<const char*> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const char* const& v, TCFFIAny* out) {
    out->type_index = kTCFFIRawStr;
    out->zero_padding = 0;
    out->v_c_str = v;
  }
  static void MoveToAny(const char* v, TCFFIAny* out) { details::MakeOwnedString(v, out); }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIRawStr; }
  static std::string TypeStr() { return "str"; }
};
template <size_t N>
struct TypeTraits<char[N]> : public TypeTraits<const char*> {
  static void CopyToAnyView(const char (&v)[N], TCFFIAny* out) {
    TypeTraits<const char*>::CopyToAnyView(v, out);
  }
  static void MoveToAny(const char (&v)[N], TCFFIAny* out) { details::MakeOwnedString(v, out); }
};

// ---------------------------------------------------------------------------
// Object references (generic; containers specialise where they convert)
// ---------------------------------------------------------------------------
/*!
 * \brief Whether None converts to a null handle of object type T. It does not, by default:
 * None is not an object, so as<T>(), try_cast<T>() and cast<T>() of None give nothing (or
 * the TypeError) for every object type, and a function parameter, field or result that
 * accepts None says so with std::optional<T>. A type whose None means "absent"
 * (ir::Span: no source location) declares `static constexpr bool _type_none_means_absent
 * = true;` and receives None as a null handle.
 */
template <typename T, typename = void>
struct NoneMeansAbsent : std::false_type {};
template <typename T>
struct NoneMeansAbsent<T, std::void_t<decltype(T::_type_none_means_absent)>>
    : std::bool_constant<T::_type_none_means_absent> {};

template <typename TRef>
struct ObjectRefTypeTraitsBase {
  static constexpr bool enabled = true;
  using ContainerType = typename TRef::ContainerType;
  static void CopyToAnyView(const TRef& v, TCFFIAny* out) {
    out->zero_padding = 0;
    if (v.defined()) {
      out->type_index = v->type_index();
      out->v_obj = ObjectRefUnsafe::GetHandle(v);
    } else {
      out->type_index = kTCFFINone;
      out->v_int64 = 0;
    }
  }
  static void MoveToAny(TRef v, TCFFIAny* out) {
    CopyToAnyView(v, out);
    details::ObjectUnsafe::MoveToHandle(ObjectRefUnsafe::MovePtr(std::move(v)));
  }
  static bool CheckAnyStrict(const TCFFIAny* v) {
    if (v->type_index == kTCFFINone) return NoneMeansAbsent<TRef>::value;
    if (v->type_index < kTCFFIStaticObjectBegin) return false;
    return details::ObjectUnsafe::FromHandle(v->v_obj)->template IsInstance<ContainerType>();
  }
  static std::optional<TRef> TryCastFromAnyView(const TCFFIAny* v) {
    if (!CheckAnyStrict(v)) return std::nullopt;
    if (v->type_index == kTCFFINone) return TRef(ObjectPtr<Object>(nullptr));
    return TRef(details::ObjectUnsafe::CopyFromHandle(v->v_obj));
  }
  static std::string TypeStr() { return ContainerType::_type_key; }
};

/*!
 * \brief A container element of type T: an object-typed element must not be None (an
 * Array[Pass] holds passes; a function receiving one never meets a null element).
 */
template <typename T>
bool ElementNotNone(const TCFFIAny* v) {
  if constexpr (std::is_base_of_v<ObjectRef, T>) return v->type_index != kTCFFINone;
  return true;
}

namespace details {
/*!
 * \brief The first element of a container value that a container type refuses, so that a
 * refused Array or Map names it ("element [1] is `None`, not `transform.Pass`") instead of
 * only the container's type. Containers' TypeTraits define
 * `static std::optional<RefusedElement> FirstRefused(const TCFFIAny*)`; other types do not.
 */
struct RefusedElement {
  std::string where;  // "[1]", "[\"a\"]", "[0][2]"; for a map key, the key's text
  std::string got;    // the element's type
  std::string expected;
  bool is_key = false;
};

template <typename T, typename = void>
struct HasFirstRefused : std::false_type {};
template <typename T>
struct HasFirstRefused<
    T, std::void_t<decltype(TypeTraitsNoCR<T>::FirstRefused(std::declval<const TCFFIAny*>()))>>
    : std::true_type {};

template <typename T>
std::optional<RefusedElement> FirstRefused(const TCFFIAny* v) {
  if constexpr (HasFirstRefused<T>::value) {
    return TypeTraitsNoCR<T>::FirstRefused(v);
  } else {
    return std::nullopt;
  }
}

/*! \brief Element `e` of a container of T, found at `where`: why T refuses it, if it does. */
template <typename T>
std::optional<RefusedElement> RefusedAs(const TCFFIAny* e, const std::string& where) {
  if (ElementNotNone<T>(e) && TypeTraitsNoCR<T>::TryCastFromAnyView(e).has_value())
    return std::nullopt;
  if (std::optional<RefusedElement> inner = FirstRefused<T>(e)) {
    inner->where = (inner->is_key ? where + " " : where) + inner->where;
    return inner;
  }
  return RefusedElement{where, AnyTypeName(e), TypeTraitsNoCR<T>::TypeStr()};
}

/*! \brief ": its element [0] is `None`, not `transform.Pass`", or "" if `r` is empty. */
std::string RefusalText(const std::optional<RefusedElement>& r);
/*! \brief A map key for messages: "\"a\"", "5", or its type. */
std::string KeyText(const TCFFIAny* key);
}  // namespace details

/*! \brief Set by containers (Array<T>, Map<K, V>) that specialise TypeTraits as templates. */
template <typename T>
struct HasTemplateTypeTraits : std::false_type {};

template <typename TRef>
struct TypeTraits<
    TRef, std::enable_if_t<std::is_base_of_v<ObjectRef, TRef> && !std::is_same_v<TRef, String> &&
                           !HasTemplateTypeTraits<TRef>::value>>
    : public ObjectRefTypeTraitsBase<TRef> {};

// Any and AnyView carry any value; their traits are declared before the classes
// (which consult TypeTraits in their constructors) and defined after them.
template <>
struct TypeTraits<Any> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const Any& v, TCFFIAny* out);
  static void MoveToAny(Any v, TCFFIAny* out);
  static bool CheckAnyStrict(const TCFFIAny*) { return true; }
  static std::optional<Any> TryCastFromAnyView(const TCFFIAny* v);
  static std::string TypeStr() { return "Any"; }
};

template <>
struct TypeTraits<AnyView> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const AnyView& v, TCFFIAny* out);
  static bool CheckAnyStrict(const TCFFIAny*) { return true; }
  static std::optional<AnyView> TryCastFromAnyView(const TCFFIAny* v);
  static std::string TypeStr() { return "Any"; }
};

// ---------------------------------------------------------------------------
// AnyView and Any
// ---------------------------------------------------------------------------
/*!
 * \brief A borrowed value. Cheap to copy; valid while what it views is alive.
 */
class AnyView {
 public:
  AnyView() { details::SetNone(&data_); }
  AnyView(std::nullptr_t) : AnyView() {}  // NOLINT(*)
  template <typename T, typename = std::enable_if_t<TypeTraitsNoCR<T>::enabled &&
                                                    !std::is_same_v<std::decay_t<T>, Any>>>
  AnyView(const T& value) {  // NOLINT(*)
    TypeTraitsNoCR<T>::CopyToAnyView(value, &data_);
  }
  AnyView(const char* value) {
    TypeTraits<const char*>::CopyToAnyView(value, &data_);
  }                         // NOLINT(*)
  AnyView(const Any& any);  // NOLINT(*)

  int32_t type_index() const { return data_.type_index; }
  bool is_none() const { return data_.type_index == kTCFFINone; }
  std::string GetTypeKey() const { return details::AnyTypeName(&data_); }

  template <typename T>
  std::optional<T> as() const {
    if (!TypeTraitsNoCR<T>::CheckAnyStrict(&data_)) return std::nullopt;
    return TypeTraitsNoCR<T>::TryCastFromAnyView(&data_);
  }
  template <typename T>
  std::optional<T> try_cast() const {
    return TypeTraitsNoCR<T>::TryCastFromAnyView(&data_);
  }
  /*! \brief Converts or throws TypeError naming both types. */
  template <typename T>
  T cast() const {
    std::optional<T> r = try_cast<T>();
    if (!r.has_value()) {
      TILECORE_THROW(TypeError) << "Cannot convert from type `" << GetTypeKey() << "` to `"
                                << TypeTraitsNoCR<T>::TypeStr() << "`"
                                << details::RefusalText(details::FirstRefused<T>(&data_));
    }
    return *std::move(r);
  }
  template <typename T>
  operator T() const {  // NOLINT(*)
    return cast<T>();
  }

  const TCFFIAny* raw() const { return &data_; }
  static AnyView FromRaw(const TCFFIAny& raw) {
    AnyView v;
    v.data_ = raw;
    return v;
  }

 protected:
  TCFFIAny data_;
  friend class Any;
};
static_assert(sizeof(AnyView) == sizeof(TCFFIAny));

/*!
 * \brief An owning value: holds one reference to its object, if any.
 */
class Any {
 public:
  Any() { details::SetNone(&data_); }
  Any(std::nullptr_t) : Any() {}  // NOLINT(*)
  Any(const Any& other) : data_(other.data_) {
    if (data_.type_index >= kTCFFIStaticObjectBegin) details::IncRef(data_.v_obj);
  }
  Any(Any&& other) noexcept : data_(other.data_) { details::SetNone(&other.data_); }
  /*! \brief Copies a view into owned form (a raw string becomes a String). */
  explicit Any(const AnyView& view) : data_(view.data_) {
    // Objects and PODs copy inline; only borrowed-only kinds need the slow path.
    if (data_.type_index >= kTCFFIStaticObjectBegin) {
      details::IncRef(data_.v_obj);
    } else if (data_.type_index == kTCFFIRawStr || data_.type_index == kTCFFIByteArrayPtr ||
               data_.type_index == kTCFFIDLTensorPtr) {
      FromBorrowedOnly(view);
    }
  }
  template <typename T, typename = std::enable_if_t<TypeTraitsNoCR<T>::enabled &&
                                                    !std::is_same_v<std::decay_t<T>, AnyView>>>
  Any(T value) {  // NOLINT(*)
    TypeTraitsNoCR<T>::MoveToAny(std::move(value), &data_);
  }
  Any(const char* value) { TypeTraits<const char*>::MoveToAny(value, &data_); }  // NOLINT(*)
  ~Any() { reset(); }

  Any& operator=(const Any& other) {
    Any(other).swap(*this);
    return *this;
  }
  Any& operator=(Any&& other) noexcept {
    // Whole-value moves, no swap: this sits on every call's result path.
    TCFFIAny old = data_;
    data_ = other.data_;
    details::SetNone(&other.data_);
    if (old.type_index >= kTCFFIStaticObjectBegin) details::DecRef(old.v_obj);
    return *this;
  }
  void swap(Any& other) noexcept { std::swap(data_, other.data_); }
  void reset() {
    if (data_.type_index >= kTCFFIStaticObjectBegin) details::DecRef(data_.v_obj);
    details::SetNone(&data_);
  }

  int32_t type_index() const { return data_.type_index; }
  bool is_none() const { return data_.type_index == kTCFFINone; }
  std::string GetTypeKey() const { return details::AnyTypeName(&data_); }

  template <typename T>
  std::optional<T> as() const {
    return AnyView(*this).as<T>();
  }
  template <typename T>
  std::optional<T> try_cast() const {
    return AnyView(*this).try_cast<T>();
  }
  template <typename T>
  T cast() const {
    return AnyView(*this).cast<T>();
  }
  template <typename T>
  operator T() const {  // NOLINT(*)
    return cast<T>();
  }

  const TCFFIAny* raw() const { return &data_; }
  /*! \brief Takes over an owned raw value (e.g. a call result). */
  static Any MoveFromRaw(TCFFIAny* raw) {
    Any a;
    a.data_ = *raw;
    details::SetNone(raw);
    return a;
  }
  /*! \brief Gives the owned raw value to the caller, leaving None. */
  void MoveToRaw(TCFFIAny* out) {
    *out = data_;
    details::SetNone(&data_);
  }

 private:
  void FromBorrowedOnly(const AnyView& view);
  TCFFIAny data_;
  friend class AnyView;
};
static_assert(sizeof(Any) == sizeof(TCFFIAny));

inline AnyView::AnyView(const Any& any) : data_(any.data_) {}

inline void TypeTraits<Any>::CopyToAnyView(const Any& v, TCFFIAny* out) { *out = *v.raw(); }
inline void TypeTraits<Any>::MoveToAny(Any v, TCFFIAny* out) { v.MoveToRaw(out); }
inline std::optional<Any> TypeTraits<Any>::TryCastFromAnyView(const TCFFIAny* v) {
  return Any(AnyView::FromRaw(*v));
}
inline void TypeTraits<AnyView>::CopyToAnyView(const AnyView& v, TCFFIAny* out) { *out = *v.raw(); }
inline std::optional<AnyView> TypeTraits<AnyView>::TryCastFromAnyView(const TCFFIAny* v) {
  return AnyView::FromRaw(*v);
}

template <typename T>
struct TypeTraits<std::optional<T>> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const std::optional<T>& v, TCFFIAny* out) {
    if (v.has_value()) {
      TypeTraits<T>::CopyToAnyView(*v, out);
    } else {
      details::SetNone(out);
    }
  }
  static void MoveToAny(std::optional<T> v, TCFFIAny* out) {
    if (v.has_value()) {
      TypeTraits<T>::MoveToAny(std::move(*v), out);
    } else {
      details::SetNone(out);
    }
  }
  static bool CheckAnyStrict(const TCFFIAny* v) {
    return v->type_index == kTCFFINone || TypeTraits<T>::CheckAnyStrict(v);
  }
  static std::optional<std::optional<T>> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index == kTCFFINone) return std::optional<T>();
    auto r = TypeTraits<T>::TryCastFromAnyView(v);
    if (!r.has_value()) return std::nullopt;
    return std::optional<T>(std::move(*r));
  }
  static std::optional<details::RefusedElement> FirstRefused(const TCFFIAny* v) {
    if (v->type_index == kTCFFINone) return std::nullopt;
    return details::FirstRefused<T>(v);
  }
  static std::string TypeStr() { return "Optional[" + TypeTraits<T>::TypeStr() + "]"; }
};

/*! \brief Hash and equality of Any as map keys: PODs and strings by value, objects by identity. */
struct AnyHash {
  size_t operator()(const Any& a) const;
};
struct AnyEqual {
  bool operator()(const Any& a, const Any& b) const;
};

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_ANY_H_
