/*
 * src/ffi/structural_internal.h — what StructuralEqual and StructuralHash must do
 * identically so that equal values hash equal: value views of strings and bytes,
 * the canonical visiting order of map entries, array bytes, and a field cache.
 */
#ifndef TILECORE_SRC_FFI_STRUCTURAL_INTERNAL_H_
#define TILECORE_SRC_FFI_STRUCTURAL_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/ffi/reflected_fields.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/ndarray.h"

namespace tilecore {
namespace ffi {
namespace structural {

/*! \brief The bytes of a bytes value in any of its three forms. */
inline bool GetBytesView(const TCFFIAny* v, std::string_view* out) {
  switch (v->type_index) {
    case kTCFFISmallBytes:
      *out = std::string_view(v->v_bytes, v->small_len);
      return true;
    case kTCFFIByteArrayPtr: {
      const auto* b = static_cast<const TCFFIByteArray*>(v->v_ptr);
      *out = std::string_view(b->data, b->size);
      return true;
    }
    case kTCFFIBytes:
      *out = reinterpret_cast<const BytesObj*>(v->v_obj)->view();
      return true;
    default:
      return false;
  }
}

/*! \brief 0.0 for -0.0 and one NaN for all NaNs: floats that compare equal get equal bits. */
inline double CanonicalFloat(double d) {
  if (std::isnan(d)) return std::numeric_limits<double>::quiet_NaN();
  return d == 0 ? 0.0 : d;
}

/*! \brief Keys a map can be looked up by: PODs and strings (objects compare by identity). */
inline bool IsLookupKey(const Any& k) {
  return k.type_index() < kTCFFIStaticObjectBegin || k.type_index() == kTCFFIStr;
}
inline bool MapUsesLookup(const MapObj* m) {
  for (const auto& e : m->entries) {
    if (!IsLookupKey(e.first)) return false;
  }
  return true;
}

/*! \brief A byte string that orders lookup keys the same way on every side. */
inline std::string CanonicalKey(const Any& k) {
  std::string_view s;
  std::string out;
  if (::tilecore::ffi::details::AnyGetStringView(k.raw(), &s)) return out.append("s").append(s);
  if (GetBytesView(k.raw(), &s)) return out.append("y").append(s);
  TCFFIAny r = *k.raw();
  if (r.type_index == kTCFFIFloat) r.v_float64 = CanonicalFloat(r.v_float64);
  out.append("x");
  out.append(reinterpret_cast<const char*>(&r.type_index), sizeof(r.type_index));
  out.append(reinterpret_cast<const char*>(&r.v_int64), sizeof(r.v_int64));
  return out;
}

/*!
 * \brief Entries of a lookup map sorted by canonical key.
 * Rationale: binding order of variables must not depend on insertion order, or two
 * equal maps built in different orders would hash differently.
 */
inline std::vector<const std::pair<Any, Any>*> SortedEntries(const MapObj* m) {
  std::vector<std::pair<std::string, const std::pair<Any, Any>*>> keyed;
  keyed.reserve(m->entries.size());
  for (const auto& e : m->entries) keyed.emplace_back(CanonicalKey(e.first), &e);
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const std::pair<Any, Any>*> out;
  out.reserve(keyed.size());
  for (const auto& k : keyed) out.push_back(k.second);
  return out;
}

/*! \brief The compact bytes of an array; `holder` keeps a CPU copy alive when one is needed. */
inline std::string_view NDArrayBytes(const TCFFIAny& v, NDArray* holder) {
  NDArray arr(::tilecore::ffi::details::ObjectUnsafe::CopyFromHandle(v.v_obj));
  if (arr.device().device_type != kDLCPU || !arr.IsContiguous())
    arr = arr.CopyTo(DLDevice{kDLCPU, 0});
  *holder = arr;
  if (arr.NumBytes() == 0) return {};
  return std::string_view(arr.data<char>(), arr.NumBytes());
}

/*! \brief Reflected fields per kind, looked up once per walk. */
class FieldCache {
 public:
  const std::vector<const TCFFIFieldInfo*>& Get(const TCFFITypeInfo* info) {
    auto it = cache_.find(info->type_index);
    if (it == cache_.end()) {
      std::vector<const TCFFIFieldInfo*> kept;
      for (const TCFFIFieldInfo* f : ::tilecore::ffi::details::ReflectedFields(info)) {
        if (!(f->flags & kTCFFIFieldSEqualIgnore)) kept.push_back(f);
      }
      it = cache_.emplace(info->type_index, std::move(kept)).first;
    }
    return it->second;
  }

 private:
  std::unordered_map<int32_t, std::vector<const TCFFIFieldInfo*>> cache_;
};

/*! \brief The structural kind of an object: TreeNode, FreeVar or Identity. */
inline int32_t SEqualKindOf(int32_t type_index, const TCFFITypeInfo** info) {
  *info = TCFFIGetTypeInfo(type_index);
  return *info ? (*info)->structural_eq_kind : kTCFFISEqualIdentity;
}

}  // namespace structural
}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_SRC_FFI_STRUCTURAL_INTERNAL_H_
