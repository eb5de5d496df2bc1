/*
 * src/ffi/structural_hash.cc — StructuralHash (rules in structural.h).
 *
 * The walk mirrors StructuralEqual's exactly (same fields, same map entry order,
 * same places where variables get bound), which is what makes equal values hash
 * equal. A bound variable contributes only its binding number, so renaming
 * variables consistently leaves the hash unchanged.
 */
#include <unordered_map>

#include "src/ffi/structural_internal.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/shape.h"
#include "tilecore/ffi/structural.h"

namespace tilecore {
namespace ffi {
namespace {

using structural::FieldCache;

uint64_t Fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

uint64_t Combine(uint64_t seed, uint64_t v) {
  return Fmix64(seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

uint64_t HashBytes(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return Fmix64(h ^ s.size());
}

// Tags keep values of different kinds apart (an int 1 and a bool true, ...).
enum Tag : uint64_t {
  kTagNone = 1,
  kTagInt,
  kTagBool,
  kTagFloat,
  kTagStr,
  kTagBytes,
  kTagDataType,
  kTagDevice,
  kTagPtr,
  kTagArray,
  kTagLookupMap,
  kTagEntryMap,
  kTagShape,
  kTagNDArray,
  kTagIdentity,
  kTagBoundVar,
  kTagTreeNode
};

class SHashHandler {
 public:
  explicit SHashHandler(bool map_free_vars) : map_free_vars_(map_free_vars) {}

  uint64_t Hash(const TCFFIAny& v, bool def, int depth) {
    std::string_view s;
    if (details::AnyGetStringView(&v, &s)) return Combine(kTagStr, HashBytes(s));
    if (structural::GetBytesView(&v, &s)) return Combine(kTagBytes, HashBytes(s));
    switch (v.type_index) {
      case kTCFFINone:
        return Fmix64(kTagNone);
      case kTCFFIInt:
        return Combine(kTagInt, static_cast<uint64_t>(v.v_int64));
      case kTCFFIBool:
        return Combine(kTagBool, static_cast<uint64_t>(v.v_int64));
      case kTCFFIFloat: {
        double d = structural::CanonicalFloat(v.v_float64);
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof(bits));
        return Combine(kTagFloat, bits);
      }
      case kTCFFIDataType:
        return Combine(kTagDataType, (uint64_t{v.v_dtype.code} << 24) |
                                         (uint64_t{v.v_dtype.bits} << 16) | v.v_dtype.lanes);
      case kTCFFIDevice:
        return Combine(Combine(kTagDevice, static_cast<uint64_t>(v.v_device.device_type)),
                       static_cast<uint64_t>(static_cast<uint32_t>(v.v_device.device_id)));
      default:
        break;
    }
    if (v.type_index < kTCFFIStaticObjectBegin) {
      return Combine(Combine(kTagPtr, static_cast<uint64_t>(v.type_index)),
                     static_cast<uint64_t>(v.v_int64));
    }
    if (depth > structural::kMaxDepth) {
      TILECORE_THROW(ValueError) << "StructuralHash: the graph is nested deeper than "
                                 << structural::kMaxDepth << " levels";
    }
    // A graph may share subgraphs (a DAG): a node's hash is remembered, so each node is
    // hashed once instead of once per path to it. Only hashes that bound no variable are
    // remembered: a revisit of such a node hashes the same, so sharing changes nothing.
    auto key = std::make_pair(static_cast<const void*>(v.v_obj), def);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    int64_t numbered = next_number_;
    uint64_t h = HashObject(v, def, depth);
    if (next_number_ == numbered) memo_.emplace(key, h);
    return h;
  }

 private:
  struct KeyHash {
    size_t operator()(const std::pair<const void*, bool>& k) const {
      return std::hash<const void*>()(k.first) * 2 + (k.second ? 1 : 0);
    }
  };

  uint64_t HashObject(const TCFFIAny& v, bool def, int depth) {
    switch (v.type_index) {
      case kTCFFIArray: {
        const auto& data = reinterpret_cast<const ArrayObj*>(v.v_obj)->data;
        uint64_t h = Combine(kTagArray, data.size());
        for (const Any& e : data) h = Combine(h, Hash(*e.raw(), def, depth + 1));
        return h;
      }
      case kTCFFIMap:
        return HashMap(v, def, depth);
      case kTCFFIShape: {
        const auto& dims = reinterpret_cast<const ShapeObj*>(v.v_obj)->storage;
        uint64_t h = Combine(kTagShape, dims.size());
        for (int64_t d : dims) h = Combine(h, static_cast<uint64_t>(d));
        return h;
      }
      case kTCFFINDArray: {
        const DLTensor& t = *TCFFINDArrayGetDLTensorPtr(v.v_obj);
        uint64_t h = Combine(kTagNDArray, static_cast<uint64_t>(t.ndim));
        for (int i = 0; i < t.ndim; ++i) h = Combine(h, static_cast<uint64_t>(t.shape[i]));
        h = Combine(
            h, (uint64_t{t.dtype.code} << 24) | (uint64_t{t.dtype.bits} << 16) | t.dtype.lanes);
        NDArray holder;
        return Combine(h, HashBytes(structural::NDArrayBytes(v, &holder)));
      }
      default:
        break;
    }
    const TCFFITypeInfo* info;
    switch (structural::SEqualKindOf(v.type_index, &info)) {
      case kTCFFISEqualTreeNode: {
        uint64_t h = Combine(kTagTreeNode, HashBytes(details::TypeKeyOf(info)));
        return HashFields(h, v, info, def, depth);
      }
      case kTCFFISEqualFreeVar:
        return HashVar(v, info, def, depth);
      default:
        return Combine(Combine(kTagIdentity, static_cast<uint64_t>(v.type_index)),
                       reinterpret_cast<uintptr_t>(v.v_obj));
    }
  }

  uint64_t HashMap(const TCFFIAny& v, bool def, int depth) {
    const auto* m = reinterpret_cast<const MapObj*>(v.v_obj);
    if (structural::MapUsesLookup(m)) {
      uint64_t h = Combine(kTagLookupMap, m->entries.size());
      for (const auto* e : structural::SortedEntries(m)) {
        h = Combine(h, Hash(*e->first.raw(), def, depth + 1));
        h = Combine(h, Hash(*e->second.raw(), def, depth + 1));
      }
      return h;
    }
    uint64_t h = Combine(kTagEntryMap, m->entries.size());
    for (const auto& [key, value] : m->entries) {
      h = Combine(h, Hash(*key.raw(), def, depth + 1));
      h = Combine(h, Hash(*value.raw(), def, depth + 1));
    }
    return h;
  }

  uint64_t HashFields(uint64_t h, const TCFFIAny& v, const TCFFITypeInfo* info, bool def,
                      int depth) {
    for (const TCFFIFieldInfo* f : fields_.Get(info)) {
      Any value = details::GetReflectedField(v.v_obj, *f);
      bool field_def = def || (f->flags & kTCFFIFieldDefRegion);
      h = Combine(h, Hash(*value.raw(), field_def, depth + 1));
    }
    return h;
  }

  uint64_t HashVar(const TCFFIAny& v, const TCFFITypeInfo* info, bool def, int depth) {
    const Object* x = details::ObjectUnsafe::FromHandle(v.v_obj);
    auto it = bound_.find(x);
    uint64_t identity = Combine(Combine(kTagIdentity, static_cast<uint64_t>(v.type_index)),
                                reinterpret_cast<uintptr_t>(v.v_obj));
    if (it != bound_.end()) return it->second < 0 ? identity : Combine(kTagBoundVar, it->second);
    keep_alive_.emplace_back(AnyView::FromRaw(v));
    if (!def && !map_free_vars_) {
      // StructuralEqual maps such a variable to itself; it stays hashed by identity.
      bound_.emplace(x, -1);
      return identity;
    }
    int64_t number = next_number_++;
    bound_.emplace(x, number);
    uint64_t h = Combine(kTagBoundVar, static_cast<uint64_t>(number));
    // The fields count only where the variable is bound, as in StructuralEqual.
    return HashFields(Combine(h, HashBytes(details::TypeKeyOf(info))), v, info, false, depth);
  }

  bool map_free_vars_;
  std::unordered_map<const Object*, int64_t> bound_;  // binding number, or -1: bound to itself
  std::unordered_map<std::pair<const void*, bool>, uint64_t, KeyHash> memo_;  // (node, def) -> hash
  int64_t next_number_{0};
  std::vector<Any> keep_alive_;
  FieldCache fields_;
};

}  // namespace

uint64_t StructuralHash(const AnyView& value, bool map_free_vars) {
  return SHashHandler(map_free_vars).Hash(*value.raw(), false, 0);
}

TILECORE_REGISTER_GLOBAL("ffi.StructuralHash")
    .set_body_typed([](AnyView value, bool map_free_vars) {
      return static_cast<int64_t>(StructuralHash(value, map_free_vars));
    });

}  // namespace ffi
}  // namespace tilecore
