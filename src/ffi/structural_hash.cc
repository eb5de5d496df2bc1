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

  /*!
   * \brief The hash of `root`. The objects being hashed wait on a heap stack, not the C
   * stack, so depth is bounded by memory alone; children are hashed in the order a
   * recursive walk would take (it decides binding numbers), so the value is the same.
   */
  uint64_t Run(const TCFFIAny& root) {
    uint64_t h = 0;
    if (Visit(root, false, &h)) return h;
    while (true) {
      Frame& f = stack_.back();
      if (Advance(f)) continue;  // a child frame was pushed
      uint64_t done = f.h;
      if (f.memo && next_number_ == f.numbered)
        memo_.emplace(std::make_pair(static_cast<const void*>(f.obj), f.def), done);
      stack_.pop_back();
      if (stack_.empty()) return done;
      stack_.back().h = Combine(stack_.back().h, done);
    }
  }

 private:
  struct KeyHash {
    size_t operator()(const std::pair<const void*, bool>& k) const {
      return std::hash<const void*>()(k.first) * 2 + (k.second ? 1 : 0);
    }
  };

  /*! \brief An object whose children are being hashed into `h`. */
  struct Frame {
    enum Kind { kArray, kLookupMap, kEntryMap, kFields } kind;
    const TCFFIObject* obj;
    bool def;
    uint64_t h;
    int64_t numbered;  // next_number_ when the frame began: remembered if no variable was bound
    bool memo{true};   // false for a variable's fields (never remembered)
    size_t next{0};    // the next child (maps: 2 * entry + 0 for the key, 1 for the value)
    const std::vector<const TCFFIFieldInfo*>* fields{nullptr};  // kFields
    std::vector<const std::pair<Any, Any>*> sorted{};           // kLookupMap
    Any hold{};  // a field getter's reference, in case it made the value afresh
  };

  /*!
   * \brief Hashes a value: true with `*out` set when that takes no walk below it, false
   * when a frame was pushed whose result the parent combines when it is finished.
   */
  bool Visit(const TCFFIAny& v, bool def, uint64_t* out) {
    std::string_view s;
    if (details::AnyGetStringView(&v, &s)) {
      *out = Combine(kTagStr, HashBytes(s));
      return true;
    }
    if (structural::GetBytesView(&v, &s)) {
      *out = Combine(kTagBytes, HashBytes(s));
      return true;
    }
    switch (v.type_index) {
      case kTCFFINone:
        *out = Fmix64(kTagNone);
        return true;
      case kTCFFIInt:
        *out = Combine(kTagInt, static_cast<uint64_t>(v.v_int64));
        return true;
      case kTCFFIBool:
        *out = Combine(kTagBool, static_cast<uint64_t>(v.v_int64));
        return true;
      case kTCFFIFloat: {
        double d = structural::CanonicalFloat(v.v_float64);
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof(bits));
        *out = Combine(kTagFloat, bits);
        return true;
      }
      case kTCFFIDataType:
        *out = Combine(kTagDataType, (uint64_t{v.v_dtype.code} << 24) |
                                         (uint64_t{v.v_dtype.bits} << 16) | v.v_dtype.lanes);
        return true;
      case kTCFFIDevice:
        *out = Combine(Combine(kTagDevice, static_cast<uint64_t>(v.v_device.device_type)),
                       static_cast<uint64_t>(static_cast<uint32_t>(v.v_device.device_id)));
        return true;
      default:
        break;
    }
    if (v.type_index < kTCFFIStaticObjectBegin) {
      *out = Combine(Combine(kTagPtr, static_cast<uint64_t>(v.type_index)),
                     static_cast<uint64_t>(v.v_int64));
      return true;
    }
    // A graph may share subgraphs (a DAG): a node's hash is remembered, so each node is
    // hashed once instead of once per path to it. Only hashes that bound no variable are
    // remembered: a revisit of such a node hashes the same, so sharing changes nothing.
    auto key = std::make_pair(static_cast<const void*>(v.v_obj), def);
    if (auto it = memo_.find(key); it != memo_.end()) {
      *out = it->second;
      return true;
    }
    int64_t numbered = next_number_;
    if (!VisitObject(v, def, out)) return false;
    if (next_number_ == numbered) memo_.emplace(key, *out);
    return true;
  }

  void Push(Frame::Kind kind, const TCFFIAny& v, bool def, uint64_t h) {
    stack_.push_back(Frame{kind, v.v_obj, def, h, next_number_});
  }

  bool VisitObject(const TCFFIAny& v, bool def, uint64_t* out) {
    switch (v.type_index) {
      case kTCFFIArray: {
        const auto& data = reinterpret_cast<const ArrayObj*>(v.v_obj)->data;
        Push(Frame::kArray, v, def, Combine(kTagArray, data.size()));
        return false;
      }
      case kTCFFIMap: {
        const auto* m = reinterpret_cast<const MapObj*>(v.v_obj);
        if (structural::MapUsesLookup(m)) {
          Push(Frame::kLookupMap, v, def, Combine(kTagLookupMap, m->entries.size()));
          stack_.back().sorted = structural::SortedEntries(m);
        } else {
          Push(Frame::kEntryMap, v, def, Combine(kTagEntryMap, m->entries.size()));
        }
        return false;
      }
      case kTCFFIShape: {
        const auto& dims = reinterpret_cast<const ShapeObj*>(v.v_obj)->storage;
        uint64_t h = Combine(kTagShape, dims.size());
        for (int64_t d : dims) h = Combine(h, static_cast<uint64_t>(d));
        *out = h;
        return true;
      }
      case kTCFFINDArray: {
        const DLTensor& t = *TCFFINDArrayGetDLTensorPtr(v.v_obj);
        uint64_t h = Combine(kTagNDArray, static_cast<uint64_t>(t.ndim));
        for (int i = 0; i < t.ndim; ++i) h = Combine(h, static_cast<uint64_t>(t.shape[i]));
        h = Combine(
            h, (uint64_t{t.dtype.code} << 24) | (uint64_t{t.dtype.bits} << 16) | t.dtype.lanes);
        NDArray holder;
        *out = Combine(h, HashBytes(structural::NDArrayBytes(v, &holder)));
        return true;
      }
      default:
        break;
    }
    const TCFFITypeInfo* info;
    switch (structural::SEqualKindOf(v.type_index, &info)) {
      case kTCFFISEqualTreeNode:
        Push(Frame::kFields, v, def, Combine(kTagTreeNode, HashBytes(details::TypeKeyOf(info))));
        stack_.back().fields = &fields_.Get(info);
        return false;
      case kTCFFISEqualFreeVar:
        return VisitVar(v, info, def, out);
      default:
        *out = Combine(Combine(kTagIdentity, static_cast<uint64_t>(v.type_index)),
                       reinterpret_cast<uintptr_t>(v.v_obj));
        return true;
    }
  }

  bool VisitVar(const TCFFIAny& v, const TCFFITypeInfo* info, bool def, uint64_t* out) {
    const Object* x = details::ObjectUnsafe::FromHandle(v.v_obj);
    auto it = bound_.find(x);
    uint64_t identity = Combine(Combine(kTagIdentity, static_cast<uint64_t>(v.type_index)),
                                reinterpret_cast<uintptr_t>(v.v_obj));
    if (it != bound_.end()) {
      *out = it->second < 0 ? identity : Combine(kTagBoundVar, it->second);
      return true;
    }
    keep_alive_.emplace_back(AnyView::FromRaw(v));
    if (!def && !map_free_vars_) {
      // StructuralEqual maps such a variable to itself; it stays hashed by identity.
      bound_.emplace(x, -1);
      *out = identity;
      return true;
    }
    int64_t number = next_number_++;
    bound_.emplace(x, number);
    uint64_t h = Combine(kTagBoundVar, static_cast<uint64_t>(number));
    // The fields count only where the variable is bound, as in StructuralEqual.
    Push(Frame::kFields, v, false, Combine(h, HashBytes(details::TypeKeyOf(info))));
    stack_.back().fields = &fields_.Get(info);
    stack_.back().memo = false;
    return false;
  }

  /*!
   * \brief Hashes children of `f` into `f.h` until one needs a frame of its own (true)
   * or none is left (false). `f` is not used after a push, which may move it.
   */
  bool Advance(Frame& f) {
    uint64_t h;
    switch (f.kind) {
      case Frame::kArray: {
        const auto& data = reinterpret_cast<const ArrayObj*>(f.obj)->data;
        while (f.next < data.size()) {
          if (!Visit(*data[f.next++].raw(), f.def, &h)) return true;
          f.h = Combine(f.h, h);
        }
        return false;
      }
      case Frame::kLookupMap:
        while (f.next < 2 * f.sorted.size()) {
          const auto* e = f.sorted[f.next / 2];
          const Any& item = f.next++ % 2 ? e->second : e->first;
          if (!Visit(*item.raw(), f.def, &h)) return true;
          f.h = Combine(f.h, h);
        }
        return false;
      case Frame::kEntryMap: {
        const auto& entries = reinterpret_cast<const MapObj*>(f.obj)->entries;
        while (f.next < 2 * entries.size()) {
          const auto& e = entries[f.next / 2];
          const Any& item = f.next++ % 2 ? e.second : e.first;
          if (!Visit(*item.raw(), f.def, &h)) return true;
          f.h = Combine(f.h, h);
        }
        return false;
      }
      case Frame::kFields:
        while (f.next < f.fields->size()) {
          const TCFFIFieldInfo* field = (*f.fields)[f.next++];
          Any value = details::GetReflectedField(f.obj, *field);
          bool field_def = f.def || (field->flags & kTCFFIFieldDefRegion);
          if (!Visit(*value.raw(), field_def, &h)) {
            stack_.back().hold = std::move(value);
            return true;
          }
          f.h = Combine(f.h, h);
        }
        return false;
    }
    return false;
  }

  bool map_free_vars_;
  std::unordered_map<const Object*, int64_t> bound_;  // binding number, or -1: bound to itself
  std::unordered_map<std::pair<const void*, bool>, uint64_t, KeyHash> memo_;  // (node, def) -> hash
  int64_t next_number_{0};
  std::vector<Any> keep_alive_;
  std::vector<Frame> stack_;
  FieldCache fields_;
};

}  // namespace

uint64_t StructuralHash(const AnyView& value, bool map_free_vars) {
  return SHashHandler(map_free_vars).Run(*value.raw());
}

TILECORE_REGISTER_GLOBAL("ffi.StructuralHash")
    .set_body_typed([](AnyView value, bool map_free_vars) {
      return static_cast<int64_t>(StructuralHash(value, map_free_vars));
    });

}  // namespace ffi
}  // namespace tilecore
