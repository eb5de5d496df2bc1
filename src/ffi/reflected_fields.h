/*
 * src/ffi/reflected_fields.h — walking the reflected fields of an object kind,
 * shared by JSON save/load and structural equality/hashing.
 *
 * A kind's TCFFITypeInfo lists only the fields registered on that kind; fields
 * registered on its ancestors are inherited, so they are visited first (outermost
 * ancestor first). A name registered again lower in the hierarchy is visited once,
 * at its most derived registration.
 */
#ifndef TILECORE_SRC_FFI_REFLECTED_FIELDS_H_
#define TILECORE_SRC_FFI_REFLECTED_FIELDS_H_

#include <string_view>
#include <vector>

#include "tilecore/ffi/any.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {
namespace details {

inline std::string_view FieldName(const TCFFIFieldInfo& f) { return {f.name.data, f.name.size}; }
inline std::string_view TypeKeyOf(const TCFFITypeInfo* info) {
  return {info->type_key.data, info->type_key.size};
}

/*! \brief The fields of a kind, inherited ones first, each name once. */
inline std::vector<const TCFFIFieldInfo*> ReflectedFields(const TCFFITypeInfo* info) {
  std::vector<const TCFFITypeInfo*> chain;
  for (int32_t d = 0; d < info->type_depth; ++d) {
    const TCFFITypeInfo* a = TCFFIGetTypeInfo(info->type_ancestors[d]);
    if (a != nullptr && a->num_fields > 0) chain.push_back(a);
  }
  chain.push_back(info);
  std::vector<const TCFFIFieldInfo*> out;
  for (size_t c = 0; c < chain.size(); ++c) {
    for (int32_t i = 0; i < chain[c]->num_fields; ++i) {
      const TCFFIFieldInfo* f = &chain[c]->fields[i];
      bool redeclared = false;
      for (size_t later = c + 1; later < chain.size() && !redeclared; ++later) {
        for (int32_t j = 0; j < chain[later]->num_fields; ++j) {
          if (FieldName(chain[later]->fields[j]) == FieldName(*f)) redeclared = true;
        }
      }
      if (!redeclared) out.push_back(f);
    }
  }
  return out;
}

/*! \brief Reads one field of an object through its getter. */
inline Any GetReflectedField(const TCFFIObject* obj, const TCFFIFieldInfo& f) {
  TCFFIAny value;
  SetNone(&value);
  void* addr = reinterpret_cast<char*>(const_cast<TCFFIObject*>(obj)) + f.offset;
  if (f.getter(addr, &value) != 0) ThrowRaisedError();
  return Any::MoveFromRaw(&value);
}

}  // namespace details
}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_SRC_FFI_REFLECTED_FIELDS_H_
