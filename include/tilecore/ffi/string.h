/*
 * include/tilecore/ffi/string.h — String and Bytes: immutable, reference-counted text.
 *
 * In an Any a string may travel in three forms: a borrowed `const char*` (arguments
 * from Python or C++ literals), a small string of up to 7 bytes inline in the Any,
 * or a Str object. String accepts all three; only the object form is ever stored.
 */
#ifndef TILECORE_FFI_STRING_H_
#define TILECORE_FFI_STRING_H_

#include <cstring>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "tilecore/ffi/object.h"

namespace tilecore {
namespace ffi {

/*! \brief Object of kTCFFIStr / kTCFFIBytes; the cell points into `storage`. */
class StrObj : public Object {
 public:
  TCFFIStrCell cell{};
  std::string storage;

  explicit StrObj(std::string s) : storage(std::move(s)) {
    cell.bytes.data = storage.data();
    cell.bytes.size = storage.size();
  }
  StrObj(const StrObj&) = delete;
  std::string_view view() const { return {cell.bytes.data, cell.bytes.size}; }

  TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO("ffi.String", StrObj, Object, kTCFFIStr);
};

/*! \brief Object of kTCFFIBytes; same layout as StrObj, different kind. */
class BytesObj : public StrObj {
 public:
  using StrObj::StrObj;
  TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO("ffi.Bytes", BytesObj, Object, kTCFFIBytes);
};

/*! \brief An immutable UTF-8 string; never null. */
class String : public ObjectRef {
 public:
  String();                                               // (the empty string: one object, shared)
  String(std::string s);                                  // NOLINT(*)
  String(const char* s) : String(std::string(s)) {}       // NOLINT(*)
  String(std::string_view s) : String(std::string(s)) {}  // NOLINT(*)
  explicit String(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}

  const char* data() const { return get()->cell.bytes.data; }
  const char* c_str() const { return data(); }
  size_t size() const { return get()->cell.bytes.size; }
  bool empty() const { return size() == 0; }
  std::string_view view() const { return {data(), size()}; }
  operator std::string() const { return std::string(view()); }  // NOLINT(*)
  operator std::string_view() const { return view(); }          // NOLINT(*)

  bool operator==(const String& o) const { return view() == o.view(); }
  bool operator==(std::string_view o) const { return view() == o; }
  bool operator==(const char* o) const { return view() == o; }
  bool operator<(const String& o) const { return view() < o.view(); }

  const StrObj* get() const { return static_cast<const StrObj*>(ObjectRef::get()); }
  const StrObj* operator->() const { return get(); }
  using ContainerType = StrObj;
};

inline std::ostream& operator<<(std::ostream& os, const String& s) { return os << s.view(); }
inline std::string operator+(const String& a, std::string_view b) {
  return std::string(a.view()) + std::string(b);
}

/*! \brief An immutable byte string; never null. */
class Bytes : public ObjectRef {
 public:
  Bytes() : Bytes(std::string()) {}
  explicit Bytes(std::string s);
  explicit Bytes(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}
  const char* data() const { return get()->cell.bytes.data; }
  size_t size() const { return get()->cell.bytes.size; }
  std::string_view view() const { return {data(), size()}; }
  bool operator==(const Bytes& o) const { return view() == o.view(); }

  const BytesObj* get() const { return static_cast<const BytesObj*>(ObjectRef::get()); }
  using ContainerType = BytesObj;
};

}  // namespace ffi
}  // namespace tilecore

template <>
struct std::hash<tilecore::ffi::String> {
  size_t operator()(const tilecore::ffi::String& s) const {
    return std::hash<std::string_view>()(s.view());
  }
};
#endif  // TILECORE_FFI_STRING_H_
