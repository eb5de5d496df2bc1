/*
 * src/ffi/container.cc — Array, Map and Shape: the registered functions through
 * which other languages build and read them.
 */
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/container/shape.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {

namespace details {
void ThrowMapKeyError(const Any& key) {
  std::string_view s;
  if (AnyGetStringView(key.raw(), &s)) TILECORE_THROW(KeyError) << "'" << s << "'";
  if (key.type_index() == kTCFFIInt) TILECORE_THROW(KeyError) << key.raw()->v_int64;
  TILECORE_THROW(KeyError) << "key of type `" << key.GetTypeKey() << "` not in map";
}
}  // namespace details

std::optional<Shape> TypeTraits<Shape>::TryCastFromAnyView(const TCFFIAny* v) {
  if (v->type_index == kTCFFIShape) return Shape(details::ObjectUnsafe::CopyFromHandle(v->v_obj));
  if (v->type_index == kTCFFIArray) {
    // A list of ints converts to a Shape (Python passes tuples as arrays).
    const auto* arr = reinterpret_cast<const ArrayObj*>(v->v_obj);
    std::vector<int64_t> dims;
    for (const Any& e : arr->data) {
      if (e.type_index() != kTCFFIInt) return std::nullopt;
      dims.push_back(e.raw()->v_int64);
    }
    return Shape(std::move(dims));
  }
  return std::nullopt;
}

namespace {
const ArrayObj* ArrayOf(const AnyView& v, const char* fname) {
  if (v.type_index() == kTCFFINone)
    TILECORE_THROW(ValueError) << "Array is empty (moved or never created)";
  if (v.type_index() != kTCFFIArray) {
    TILECORE_THROW(TypeError) << fname << ": expected `ffi.Array` but got `" << v.GetTypeKey()
                              << "`";
  }
  return reinterpret_cast<const ArrayObj*>(v.raw()->v_obj);
}
const MapObj* MapOf(const AnyView& v, const char* fname) {
  if (v.type_index() == kTCFFINone)
    TILECORE_THROW(ValueError) << "Map is empty (moved or never created)";
  if (v.type_index() != kTCFFIMap) {
    TILECORE_THROW(TypeError) << fname << ": expected `ffi.Map` but got `" << v.GetTypeKey() << "`";
  }
  return reinterpret_cast<const MapObj*>(v.raw()->v_obj);
}
}  // namespace

// The raw container functions read their arguments by index: the count is checked first.
static void CheckArgCount(const PackedArgs& args, int32_t n, const char* name) {
  if (args.size() != n) {
    TILECORE_THROW(TypeError) << name << " takes " << n << (n == 1 ? " argument" : " arguments")
                              << ", got " << args.size();
  }
}

TILECORE_REGISTER_GLOBAL("ffi.Array").set_body([](PackedArgs args, Any* rv) {
  auto arr = make_object<ArrayObj>();
  arr->data.reserve(args.size());
  for (int32_t i = 0; i < args.size(); ++i) arr->data.emplace_back(args[i]);
  *rv = Array<Any>(ObjectPtr<Object>(std::move(arr)));
});

TILECORE_REGISTER_GLOBAL("ffi.ArraySize").set_body([](PackedArgs args, Any* rv) {
  CheckArgCount(args, 1, "ffi.ArraySize");
  *rv = static_cast<int64_t>(ArrayOf(args[0], "ffi.ArraySize")->data.size());
});

TILECORE_REGISTER_GLOBAL("ffi.ArrayGetItem").set_body([](PackedArgs args, Any* rv) {
  CheckArgCount(args, 2, "ffi.ArrayGetItem");
  const ArrayObj* arr = ArrayOf(args[0], "ffi.ArrayGetItem");
  int64_t i = args[1].cast<int64_t>();
  int64_t n = static_cast<int64_t>(arr->data.size());
  if (i < 0 || i >= n)
    TILECORE_THROW(IndexError) << "Array index " << i << " out of range [0, " << n << ")";
  *rv = arr->data[i];
});

TILECORE_REGISTER_GLOBAL("ffi.Map").set_body([](PackedArgs args, Any* rv) {
  if (args.size() % 2 != 0)
    TILECORE_THROW(ValueError) << "ffi.Map takes key, value pairs; got an odd count "
                               << args.size();
  auto m = make_object<MapObj>();
  for (int32_t i = 0; i < args.size(); i += 2) m->Set(Any(args[i]), Any(args[i + 1]));
  *rv = Map<Any, Any>(ObjectPtr<Object>(std::move(m)));
});

TILECORE_REGISTER_GLOBAL("ffi.MapSize").set_body([](PackedArgs args, Any* rv) {
  CheckArgCount(args, 1, "ffi.MapSize");
  *rv = static_cast<int64_t>(MapOf(args[0], "ffi.MapSize")->entries.size());
});

TILECORE_REGISTER_GLOBAL("ffi.MapGetItem").set_body([](PackedArgs args, Any* rv) {
  CheckArgCount(args, 2, "ffi.MapGetItem");
  const MapObj* m = MapOf(args[0], "ffi.MapGetItem");
  Any key(args[1]);
  const Any* v = m->Find(key);
  if (v == nullptr) details::ThrowMapKeyError(key);
  *rv = *v;
});

TILECORE_REGISTER_GLOBAL("ffi.MapCount").set_body([](PackedArgs args, Any* rv) {
  CheckArgCount(args, 2, "ffi.MapCount");
  *rv = static_cast<int64_t>(MapOf(args[0], "ffi.MapCount")->Find(Any(args[1])) ? 1 : 0);
});

TILECORE_REGISTER_GLOBAL("ffi.MapItems").set_body([](PackedArgs args, Any* rv) {
  CheckArgCount(args, 1, "ffi.MapItems");
  const MapObj* m = MapOf(args[0], "ffi.MapItems");
  auto arr = make_object<ArrayObj>();
  arr->data.reserve(m->entries.size() * 2);
  for (const auto& [k, v] : m->entries) {
    arr->data.push_back(k);
    arr->data.push_back(v);
  }
  *rv = Array<Any>(ObjectPtr<Object>(std::move(arr)));
});

TILECORE_REGISTER_GLOBAL("ffi.Shape").set_body([](PackedArgs args, Any* rv) {
  std::vector<int64_t> dims;
  dims.reserve(args.size());
  for (int32_t i = 0; i < args.size(); ++i) {
    std::optional<int64_t> d = args[i].as<int64_t>();
    if (!d.has_value()) {
      TILECORE_THROW(TypeError) << "ffi.Shape: dimension #" << i << " must be `int`, got `"
                                << args[i].GetTypeKey() << "`";
    }
    dims.push_back(*d);
  }
  *rv = Shape(std::move(dims));
});

}  // namespace ffi
}  // namespace tilecore
