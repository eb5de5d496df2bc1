/*
 * include/tilecore/ffi/container/map.h — Map<K, V>: a copy-on-write hash map that
 * keeps insertion order.
 *
 * Keys compare as AnyEqual says: numbers and strings by value (a small string, a
 * raw string and a Str object with the same bytes are the same key), objects by
 * identity. Insertion order is kept so that printing and JSON output are
 * deterministic.
 */
#ifndef TILECORE_FFI_CONTAINER_MAP_H_
#define TILECORE_FFI_CONTAINER_MAP_H_

#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tilecore/ffi/any.h"

namespace tilecore {
namespace ffi {

class MapObj : public Object {
 public:
  /*! \brief Entries in insertion order. */
  std::vector<std::pair<Any, Any>> entries;
  /*! \brief Key -> position in entries. */
  std::unordered_map<Any, size_t, AnyHash, AnyEqual> index;

  const Any* Find(const Any& key) const {
    auto it = index.find(key);
    return it == index.end() ? nullptr : &entries[it->second].second;
  }
  void Set(Any key, Any value) {
    auto it = index.find(key);
    if (it != index.end()) {
      entries[it->second].second = std::move(value);
    } else {
      index.emplace(key, entries.size());
      entries.emplace_back(std::move(key), std::move(value));
    }
  }
  TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO("ffi.Map", MapObj, Object, kTCFFIMap);
};

template <typename K = Any, typename V = Any>
class Map : public ObjectRef {
 public:
  Map() : ObjectRef(make_object<MapObj>()) {}
  explicit Map(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}
  Map(std::initializer_list<std::pair<K, V>> init) : Map() {
    for (const auto& kv : init) Set(kv.first, kv.second);
  }
  template <typename K2, typename V2,
            typename = std::enable_if_t<!std::is_same_v<K2, K> || !std::is_same_v<V2, V>>>
  Map(const Map<K2, V2>& other) : ObjectRef(ObjectRefUnsafe::GetPtr(other)) {}  // NOLINT(*)

  size_t size() const { return obj()->entries.size(); }
  bool empty() const { return size() == 0; }
  size_t count(const K& key) const { return obj()->Find(Any(key)) ? 1 : 0; }
  std::optional<V> Get(const K& key) const {
    const Any* v = obj()->Find(Any(key));
    if (!v) return std::nullopt;
    return v->template cast<V>();
  }
  /*! \brief The value of `key`; KeyError naming the key if absent. */
  V at(const K& key) const;
  V operator[](const K& key) const { return at(key); }
  void Set(const K& key, const V& value) { CopyOnWrite()->Set(Any(key), Any(value)); }

  /*! \brief Entries in insertion order, converted. */
  std::vector<std::pair<K, V>> items() const {
    std::vector<std::pair<K, V>> out;
    out.reserve(size());
    for (const auto& [k, v] : obj()->entries)
      out.emplace_back(k.template cast<K>(), v.template cast<V>());
    return out;
  }

  const MapObj* get() const { return obj(); }
  const MapObj* operator->() const { return obj(); }
  using ContainerType = MapObj;

 private:
  const MapObj* obj() const { return static_cast<const MapObj*>(ObjectRef::get()); }
  MapObj* CopyOnWrite() {
    if (data_.use_count() > 1) {
      auto copy = make_object<MapObj>();
      copy->entries = obj()->entries;
      copy->index = obj()->index;
      data_ = std::move(copy);
    }
    return static_cast<MapObj*>(data_.get());
  }
};

namespace details {
[[noreturn]] void ThrowMapKeyError(const Any& key);
}

template <typename K, typename V>
V Map<K, V>::at(const K& key) const {
  const Any* v = obj()->Find(Any(key));
  if (!v) details::ThrowMapKeyError(Any(key));
  return v->template cast<V>();
}

template <typename K, typename V>
struct HasTemplateTypeTraits<Map<K, V>> : std::true_type {};

template <typename K, typename V>
struct TypeTraits<Map<K, V>> : public ObjectRefTypeTraitsBase<Map<K, V>> {
  static bool CheckAnyStrict(const TCFFIAny* v) {
    if (v->type_index != kTCFFIMap) return false;
    if constexpr (std::is_same_v<K, Any> && std::is_same_v<V, Any>) {
      return true;
    } else {
      const auto* m = reinterpret_cast<const MapObj*>(v->v_obj);
      for (const auto& [k, val] : m->entries) {
        if (!ElementNotNone<K>(k.raw()) || !ElementNotNone<V>(val.raw()) ||
            !TypeTraitsNoCR<K>::CheckAnyStrict(k.raw()) ||
            !TypeTraitsNoCR<V>::CheckAnyStrict(val.raw()))
          return false;
      }
      return true;
    }
  }
  static std::optional<Map<K, V>> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index != kTCFFIMap) return std::nullopt;
    if (CheckAnyStrict(v)) return Map<K, V>(details::ObjectUnsafe::CopyFromHandle(v->v_obj));
    const auto* m = reinterpret_cast<const MapObj*>(v->v_obj);
    Map<K, V> out;
    for (const auto& [k, val] : m->entries) {
      if (!ElementNotNone<K>(k.raw()) || !ElementNotNone<V>(val.raw())) return std::nullopt;
      auto ck = TypeTraitsNoCR<K>::TryCastFromAnyView(k.raw());
      auto cv = TypeTraitsNoCR<V>::TryCastFromAnyView(val.raw());
      if (!ck.has_value() || !cv.has_value()) return std::nullopt;
      out.Set(*ck, *cv);
    }
    return out;
  }
  static std::optional<details::RefusedElement> FirstRefused(const TCFFIAny* v) {
    if (v->type_index != kTCFFIMap) return std::nullopt;
    const auto* m = reinterpret_cast<const MapObj*>(v->v_obj);
    for (const auto& [k, val] : m->entries) {
      std::string key = details::KeyText(k.raw());
      if (auto r = details::RefusedAs<K>(k.raw(), key)) {
        r->is_key = true;
        return r;
      }
      if (auto r = details::RefusedAs<V>(val.raw(), "[" + key + "]")) return r;
    }
    return std::nullopt;
  }
  static std::string TypeStr() {
    return "Map[" + TypeTraitsNoCR<K>::TypeStr() + ", " + TypeTraitsNoCR<V>::TypeStr() + "]";
  }
};

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_CONTAINER_MAP_H_
