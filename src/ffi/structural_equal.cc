/*
 * src/ffi/structural_equal.cc — StructuralEqual and GetFirstMismatch (rules in
 * structural.h).
 *
 * One walk serves both: it stops at the first mismatch and, when asked, renders
 * the access path it was at. Paths are kept as cheap segments and only turned into
 * text on a mismatch, so plain equality pays nothing for them.
 */
#include <unordered_map>
#include <unordered_set>

#include "src/ffi/structural_internal.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/shape.h"
#include "tilecore/ffi/structural.h"

namespace tilecore {
namespace ffi {
namespace {

using structural::FieldCache;

using ObjectPair = std::pair<const TCFFIObject*, const TCFFIObject*>;
struct ObjectPairHash {
  size_t operator()(const ObjectPair& p) const {
    return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
  }
};

class SEqualHandler {
 public:
  SEqualHandler(bool map_free_vars, bool record) : map_free_vars_(map_free_vars), record_(record) {}

  bool Run(const TCFFIAny& lhs, const TCFFIAny& rhs) { return Equal(lhs, rhs, false, 0); }

  std::optional<std::pair<std::string, std::string>> mismatch() const { return mismatch_; }

 private:
  struct Segment {
    enum Kind { kField, kIndex, kStrKey, kIntKey, kOtherKey, kEntryKey, kEntryValue } kind;
    std::string_view name;
    int64_t index;
  };

  /*! \brief Pushes a path segment for the lifetime of the scope. */
  class Scope {
   public:
    Scope(SEqualHandler* h, Segment s) : h_(h) { h_->path_.push_back(s); }
    ~Scope() { h_->path_.pop_back(); }

   private:
    SEqualHandler* h_;
  };

  std::string PathString() const {
    std::string s = "root";
    for (const Segment& seg : path_) {
      switch (seg.kind) {
        case Segment::kField:
          s.append(".").append(seg.name);
          break;
        case Segment::kIndex:
        case Segment::kIntKey:
          s.append("[").append(std::to_string(seg.index)).append("]");
          break;
        case Segment::kStrKey:
          s.append("[\"").append(seg.name).append("\"]");
          break;
        case Segment::kOtherKey:
          s.append("[<key>]");
          break;
        case Segment::kEntryKey:
          s.append("[<key ").append(std::to_string(seg.index)).append(">]");
          break;
        case Segment::kEntryValue:
          s.append("[<value ").append(std::to_string(seg.index)).append(">]");
          break;
      }
    }
    return s;
  }

  /*! \brief Records the mismatch at the current path; `missing` marks a side that lacks it. */
  bool Fail(bool lhs_missing = false, bool rhs_missing = false) {
    if (record_ && !mismatch_.has_value()) {
      std::string p = PathString();
      mismatch_.emplace(p + (lhs_missing ? " (missing)" : ""),
                        p + (rhs_missing ? " (missing)" : ""));
    }
    return false;
  }

  bool Equal(const TCFFIAny& a, const TCFFIAny& b, bool def, int depth) {
    std::string_view sa, sb;
    bool a_str = details::AnyGetStringView(&a, &sa);
    bool b_str = details::AnyGetStringView(&b, &sb);
    if (a_str || b_str) return a_str && b_str && sa == sb ? true : Fail();
    bool a_bytes = structural::GetBytesView(&a, &sa);
    bool b_bytes = structural::GetBytesView(&b, &sb);
    if (a_bytes || b_bytes) return a_bytes && b_bytes && sa == sb ? true : Fail();
    if (a.type_index != b.type_index) return Fail();
    switch (a.type_index) {
      case kTCFFINone:
        return true;
      case kTCFFIInt:
      case kTCFFIBool:
        return a.v_int64 == b.v_int64 ? true : Fail();
      case kTCFFIFloat: {
        double x = a.v_float64, y = b.v_float64;
        return x == y || (std::isnan(x) && std::isnan(y)) ? true : Fail();
      }
      case kTCFFIDataType:
        return a.v_dtype == b.v_dtype ? true : Fail();
      case kTCFFIDevice:
        return a.v_device == b.v_device ? true : Fail();
      case kTCFFIOpaquePtr:
      case kTCFFIDLTensorPtr:
        return a.v_ptr == b.v_ptr ? true : Fail();
      default:
        break;
    }
    if (a.type_index < kTCFFIStaticObjectBegin) return a.v_int64 == b.v_int64 ? true : Fail();
    if (depth > structural::kMaxDepth) {
      TILECORE_THROW(ValueError) << "StructuralEqual: the graph is nested deeper than "
                                 << structural::kMaxDepth << " levels at " << PathString();
    }
    // A pair proven equal stays equal: variable mappings only grow. Without this, a
    // DAG that shares subtrees (common subexpressions) costs one visit per path.
    ObjectPair key{a.v_obj, b.v_obj};
    if (proven_.count(key)) return true;
    if (!EqualObject(a, b, def, depth)) return false;
    proven_.insert(key);
    return true;
  }

  bool EqualObject(const TCFFIAny& a, const TCFFIAny& b, bool def, int depth) {
    switch (a.type_index) {
      case kTCFFIArray:
        return EqualArray(a, b, def, depth);
      case kTCFFIMap:
        return EqualMap(a, b, def, depth);
      case kTCFFIShape: {
        const auto* x = reinterpret_cast<const ShapeObj*>(a.v_obj);
        const auto* y = reinterpret_cast<const ShapeObj*>(b.v_obj);
        return x->storage == y->storage ? true : Fail();
      }
      case kTCFFINDArray:
        return EqualNDArray(a, b);
      default:
        break;
    }
    const TCFFITypeInfo* info;
    switch (structural::SEqualKindOf(a.type_index, &info)) {
      case kTCFFISEqualTreeNode:
        return EqualFields(a, b, info, def, depth);
      case kTCFFISEqualFreeVar:
        return EqualVar(a, b, info, def, depth);
      default:
        return a.v_obj == b.v_obj ? true : Fail();
    }
  }

  bool EqualArray(const TCFFIAny& a, const TCFFIAny& b, bool def, int depth) {
    const auto& x = reinterpret_cast<const ArrayObj*>(a.v_obj)->data;
    const auto& y = reinterpret_cast<const ArrayObj*>(b.v_obj)->data;
    size_t common = std::min(x.size(), y.size());
    for (size_t i = 0; i < common; ++i) {
      Scope scope(this, {Segment::kIndex, {}, static_cast<int64_t>(i)});
      if (!Equal(*x[i].raw(), *y[i].raw(), def, depth + 1)) return false;
    }
    if (x.size() == y.size()) return true;
    Scope scope(this, {Segment::kIndex, {}, static_cast<int64_t>(common)});
    return Fail(x.size() < y.size(), y.size() < x.size());
  }

  static Segment KeySegment(const Any& key) {
    std::string_view s;
    if (details::AnyGetStringView(key.raw(), &s)) return {Segment::kStrKey, s, 0};
    if (key.type_index() == kTCFFIInt) return {Segment::kIntKey, {}, key.raw()->v_int64};
    return {Segment::kOtherKey, {}, 0};
  }

  bool EqualMap(const TCFFIAny& a, const TCFFIAny& b, bool def, int depth) {
    const auto* x = reinterpret_cast<const MapObj*>(a.v_obj);
    const auto* y = reinterpret_cast<const MapObj*>(b.v_obj);
    if (structural::MapUsesLookup(x) && structural::MapUsesLookup(y)) {
      for (const auto* e : structural::SortedEntries(x)) {
        Scope scope(this, KeySegment(e->first));
        const Any* other = y->Find(e->first);
        if (other == nullptr) return Fail(false, true);
        if (!Equal(*e->second.raw(), *other->raw(), def, depth + 1)) return false;
      }
      if (x->entries.size() == y->entries.size()) return true;
      for (const auto* e : structural::SortedEntries(y)) {
        if (x->Find(e->first) == nullptr) {
          Scope scope(this, KeySegment(e->first));
          return Fail(true, false);
        }
      }
      return true;
    }
    // Object keys: identity lookup would miss structurally equal keys, so pair entries by position.
    size_t common = std::min(x->entries.size(), y->entries.size());
    for (size_t i = 0; i < common; ++i) {
      const auto& [xk, xv] = x->entries[i];
      const auto& [yk, yv] = y->entries[i];
      {
        Scope scope(this, {Segment::kEntryKey, {}, static_cast<int64_t>(i)});
        if (!Equal(*xk.raw(), *yk.raw(), def, depth + 1)) return false;
      }
      Scope scope(this, {Segment::kEntryValue, {}, static_cast<int64_t>(i)});
      if (!Equal(*xv.raw(), *yv.raw(), def, depth + 1)) return false;
    }
    if (x->entries.size() == y->entries.size()) return true;
    Scope scope(this, {Segment::kEntryKey, {}, static_cast<int64_t>(common)});
    return Fail(x->entries.size() < y->entries.size(), y->entries.size() < x->entries.size());
  }

  bool EqualNDArray(const TCFFIAny& a, const TCFFIAny& b) {
    const DLTensor& x = TCFFINDArrayGetDLTensorPtr(a.v_obj)[0];
    const DLTensor& y = TCFFINDArrayGetDLTensorPtr(b.v_obj)[0];
    if (x.ndim != y.ndim || !(x.dtype == y.dtype)) return Fail();
    for (int i = 0; i < x.ndim; ++i) {
      if (x.shape[i] != y.shape[i]) return Fail();
    }
    NDArray hx, hy;
    return structural::NDArrayBytes(a, &hx) == structural::NDArrayBytes(b, &hy) ? true : Fail();
  }

  bool EqualFields(const TCFFIAny& a, const TCFFIAny& b, const TCFFITypeInfo* info, bool def,
                   int depth) {
    for (const TCFFIFieldInfo* f : fields_.Get(info)) {
      Scope scope(this, {Segment::kField, details::FieldName(*f), 0});
      Any x = details::GetReflectedField(a.v_obj, *f);
      Any y = details::GetReflectedField(b.v_obj, *f);
      bool field_def = def || (f->flags & kTCFFIFieldDefRegion);
      if (!Equal(*x.raw(), *y.raw(), field_def, depth + 1)) return false;
    }
    return true;
  }

  bool EqualVar(const TCFFIAny& a, const TCFFIAny& b, const TCFFITypeInfo* info, bool def,
                int depth) {
    const Object* x = details::ObjectUnsafe::FromHandle(a.v_obj);
    const Object* y = details::ObjectUnsafe::FromHandle(b.v_obj);
    auto it = lhs_to_rhs_.find(x);
    if (it != lhs_to_rhs_.end()) return it->second == y ? true : Fail();
    if (rhs_to_lhs_.count(y)) return Fail();  // y is bound to another variable
    bool bind = def || map_free_vars_;
    if (!bind && x != y) return Fail();
    // Bind before comparing the variables' own fields, so a field that mentions the
    // variable itself compares consistently.
    lhs_to_rhs_.emplace(x, y);
    rhs_to_lhs_.emplace(y, x);
    keep_alive_.emplace_back(AnyView::FromRaw(a));
    keep_alive_.emplace_back(AnyView::FromRaw(b));
    if (x == y) return true;
    return EqualFields(a, b, info, false, depth);
  }

  bool map_free_vars_;
  bool record_;
  std::unordered_set<ObjectPair, ObjectPairHash> proven_;
  std::vector<Segment> path_;
  std::optional<std::pair<std::string, std::string>> mismatch_;
  std::unordered_map<const Object*, const Object*> lhs_to_rhs_;
  std::unordered_map<const Object*, const Object*> rhs_to_lhs_;
  std::vector<Any> keep_alive_;  // mapped pointers must not be freed and reused mid-walk
  FieldCache fields_;
};

}  // namespace

bool StructuralEqual(const AnyView& lhs, const AnyView& rhs, bool map_free_vars) {
  return SEqualHandler(map_free_vars, false).Run(*lhs.raw(), *rhs.raw());
}

std::optional<std::pair<std::string, std::string>> GetFirstMismatch(const AnyView& lhs,
                                                                    const AnyView& rhs,
                                                                    bool map_free_vars) {
  SEqualHandler handler(map_free_vars, true);
  if (handler.Run(*lhs.raw(), *rhs.raw())) return std::nullopt;
  return handler.mismatch();
}

TILECORE_REGISTER_GLOBAL("ffi.StructuralEqual")
    .set_body_typed([](AnyView lhs, AnyView rhs, bool map_free_vars) {
      return StructuralEqual(lhs, rhs, map_free_vars);
    });

TILECORE_REGISTER_GLOBAL("ffi.GetFirstStructuralMismatch")
    .set_body_typed([](AnyView lhs, AnyView rhs, bool map_free_vars) -> Any {
      auto m = GetFirstMismatch(lhs, rhs, map_free_vars);
      if (!m.has_value()) return Any();
      return Array<Any>{Any(m->first), Any(m->second)};
    });

}  // namespace ffi
}  // namespace tilecore
