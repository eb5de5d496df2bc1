/*
 * src/ffi/structural_equal.cc — StructuralEqual and GetFirstMismatch (rules in
 * structural.h).
 *
 * One walk serves both: it stops at the first mismatch and, when asked, renders
 * the access path it was at. Paths are kept as cheap segments and only turned into
 * text on a mismatch, so plain equality pays nothing for them.
 *
 * The walk keeps the object pairs it is inside on a heap stack, not the C stack, so
 * its depth is bounded by memory alone (a chain of a million nodes is fine).
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

  std::optional<std::pair<std::string, std::string>> mismatch() const { return mismatch_; }

 private:
  struct Segment {
    enum Kind { kField, kIndex, kStrKey, kIntKey, kOtherKey, kEntryKey, kEntryValue } kind;
    std::string_view name;
    int64_t index;
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

  /*!
   * \brief One object pair whose children are being compared. The walk keeps these on
   * a heap stack instead of the C stack, so a chain a million levels deep costs memory,
   * not stack frames. Children are visited in the same order a recursive walk would.
   */
  struct Frame {
    enum Kind { kArray, kLookupMap, kEntryMap, kFields } kind;
    const TCFFIObject* a;
    const TCFFIObject* b;
    bool def;
    bool has_segment;  // the root pair was reached by no path segment
    size_t next{0};    // the next child (for kEntryMap: 2 * entry + 0 for the key, 1 for the value)
    const std::vector<const TCFFIFieldInfo*>* fields{nullptr};  // kFields
    std::vector<const std::pair<Any, Any>*> sorted{};           // kLookupMap: x's entries
    Any hold_a{}, hold_b{};  // a field getter's references, in case it made the values afresh
  };

  enum class Step { kEqual, kUnequal, kPushed };

 public:
  bool Run(const TCFFIAny& lhs, const TCFFIAny& rhs) {
    Step root = Visit(lhs, rhs, false, nullptr);
    if (root != Step::kPushed) return root == Step::kEqual;
    while (!stack_.empty()) {
      Step s = Advance();
      if (s == Step::kUnequal) return false;
      if (s == Step::kEqual) Finish();
    }
    return true;
  }

 private:
  /*! \brief Pops the finished top frame: its pair is proven equal. */
  void Finish() {
    const Frame& f = stack_.back();
    proven_.insert({f.a, f.b});
    if (f.has_segment) path_.pop_back();
    stack_.pop_back();
  }

  /*!
   * \brief Compares a child pair met under `segment` (nullptr at the root): settles it
   * at once (kEqual, kUnequal), or pushes a frame for its children (kPushed).
   */
  Step Visit(const TCFFIAny& a, const TCFFIAny& b, bool def, const Segment* segment) {
    if (segment != nullptr) path_.push_back(*segment);
    Step s = VisitAt(a, b, def, segment != nullptr);
    if (s == Step::kEqual && segment != nullptr) path_.pop_back();
    // On kUnequal the path stays as it is: the walk ends there.
    return s;
  }

  static Step Result(bool equal) { return equal ? Step::kEqual : Step::kUnequal; }

  Step VisitAt(const TCFFIAny& a, const TCFFIAny& b, bool def, bool has_segment) {
    std::string_view sa, sb;
    bool a_str = details::AnyGetStringView(&a, &sa);
    bool b_str = details::AnyGetStringView(&b, &sb);
    if (a_str || b_str) return Result(a_str && b_str && sa == sb ? true : Fail());
    bool a_bytes = structural::GetBytesView(&a, &sa);
    bool b_bytes = structural::GetBytesView(&b, &sb);
    if (a_bytes || b_bytes) return Result(a_bytes && b_bytes && sa == sb ? true : Fail());
    if (a.type_index != b.type_index) return Result(Fail());
    switch (a.type_index) {
      case kTCFFINone:
        return Step::kEqual;
      case kTCFFIInt:
      case kTCFFIBool:
        return Result(a.v_int64 == b.v_int64 ? true : Fail());
      case kTCFFIFloat: {
        double x = a.v_float64, y = b.v_float64;
        return Result(x == y || (std::isnan(x) && std::isnan(y)) ? true : Fail());
      }
      case kTCFFIDataType:
        return Result(a.v_dtype == b.v_dtype ? true : Fail());
      case kTCFFIDevice:
        return Result(a.v_device == b.v_device ? true : Fail());
      case kTCFFIOpaquePtr:
      case kTCFFIDLTensorPtr:
        return Result(a.v_ptr == b.v_ptr ? true : Fail());
      default:
        break;
    }
    if (a.type_index < kTCFFIStaticObjectBegin)
      return Result(a.v_int64 == b.v_int64 ? true : Fail());
    // A pair proven equal stays equal: variable mappings only grow. Without this, a
    // DAG that shares subtrees (common subexpressions) costs one visit per path.
    ObjectPair key{a.v_obj, b.v_obj};
    if (proven_.count(key)) return Step::kEqual;
    Step s = VisitObject(a, b, def, has_segment);
    if (s == Step::kEqual) proven_.insert(key);
    return s;
  }

  Step Push(Frame::Kind kind, const TCFFIAny& a, const TCFFIAny& b, bool def, bool has_segment) {
    stack_.push_back(Frame{kind, a.v_obj, b.v_obj, def, has_segment});
    return Step::kPushed;
  }

  Step VisitObject(const TCFFIAny& a, const TCFFIAny& b, bool def, bool has_segment) {
    switch (a.type_index) {
      case kTCFFIArray:
        return Push(Frame::kArray, a, b, def, has_segment);
      case kTCFFIMap: {
        const auto* x = reinterpret_cast<const MapObj*>(a.v_obj);
        const auto* y = reinterpret_cast<const MapObj*>(b.v_obj);
        if (structural::MapUsesLookup(x) && structural::MapUsesLookup(y)) {
          Push(Frame::kLookupMap, a, b, def, has_segment);
          stack_.back().sorted = structural::SortedEntries(x);
          return Step::kPushed;
        }
        // Object keys: identity lookup would miss structurally equal keys, so pair
        // entries by position.
        return Push(Frame::kEntryMap, a, b, def, has_segment);
      }
      case kTCFFIShape: {
        const auto* x = reinterpret_cast<const ShapeObj*>(a.v_obj);
        const auto* y = reinterpret_cast<const ShapeObj*>(b.v_obj);
        return Result(x->storage == y->storage ? true : Fail());
      }
      case kTCFFINDArray:
        return Result(EqualNDArray(a, b));
      default:
        break;
    }
    const TCFFITypeInfo* info;
    switch (structural::SEqualKindOf(a.type_index, &info)) {
      case kTCFFISEqualTreeNode:
        Push(Frame::kFields, a, b, def, has_segment);
        stack_.back().fields = &fields_.Get(info);
        return Step::kPushed;
      case kTCFFISEqualFreeVar:
        return VisitVar(a, b, info, def, has_segment);
      default:
        return Result(a.v_obj == b.v_obj ? true : Fail());
    }
  }

  /*! \brief Compares the next child of the top frame; kEqual once it has no more. */
  Step Advance() {
    Frame& f = stack_.back();
    switch (f.kind) {
      case Frame::kArray:
        return AdvanceArray(f);
      case Frame::kLookupMap:
        return AdvanceLookupMap(f);
      case Frame::kEntryMap:
        return AdvanceEntryMap(f);
      case Frame::kFields:
        return AdvanceFields(f);
    }
    return Step::kEqual;
  }

  Step AdvanceArray(Frame& f) {
    const auto& x = reinterpret_cast<const ArrayObj*>(f.a)->data;
    const auto& y = reinterpret_cast<const ArrayObj*>(f.b)->data;
    size_t common = std::min(x.size(), y.size());
    while (f.next < common) {
      size_t i = f.next++;
      Segment seg{Segment::kIndex, {}, static_cast<int64_t>(i)};
      Step s = Visit(*x[i].raw(), *y[i].raw(), f.def, &seg);
      if (s != Step::kEqual) return s;
    }
    if (x.size() == y.size()) return Step::kEqual;
    path_.push_back({Segment::kIndex, {}, static_cast<int64_t>(common)});
    return Result(Fail(x.size() < y.size(), y.size() < x.size()));
  }

  static Segment KeySegment(const Any& key) {
    std::string_view s;
    if (details::AnyGetStringView(key.raw(), &s)) return {Segment::kStrKey, s, 0};
    if (key.type_index() == kTCFFIInt) return {Segment::kIntKey, {}, key.raw()->v_int64};
    return {Segment::kOtherKey, {}, 0};
  }

  Step AdvanceLookupMap(Frame& f) {
    const auto* x = reinterpret_cast<const MapObj*>(f.a);
    const auto* y = reinterpret_cast<const MapObj*>(f.b);
    while (f.next < f.sorted.size()) {
      const auto* e = f.sorted[f.next++];
      Segment seg = KeySegment(e->first);
      const Any* other = y->Find(e->first);
      if (other == nullptr) {
        path_.push_back(seg);
        return Result(Fail(false, true));
      }
      Step s = Visit(*e->second.raw(), *other->raw(), f.def, &seg);
      if (s != Step::kEqual) return s;
    }
    if (x->entries.size() == y->entries.size()) return Step::kEqual;
    for (const auto* e : structural::SortedEntries(y)) {
      if (x->Find(e->first) == nullptr) {
        path_.push_back(KeySegment(e->first));
        return Result(Fail(true, false));
      }
    }
    return Step::kEqual;
  }

  Step AdvanceEntryMap(Frame& f) {
    const auto* x = reinterpret_cast<const MapObj*>(f.a);
    const auto* y = reinterpret_cast<const MapObj*>(f.b);
    size_t common = std::min(x->entries.size(), y->entries.size());
    while (f.next < 2 * common) {
      size_t i = f.next / 2;
      bool value = f.next % 2;
      ++f.next;
      const auto& [xk, xv] = x->entries[i];
      const auto& [yk, yv] = y->entries[i];
      Segment seg{value ? Segment::kEntryValue : Segment::kEntryKey, {}, static_cast<int64_t>(i)};
      Step s = value ? Visit(*xv.raw(), *yv.raw(), f.def, &seg)
                     : Visit(*xk.raw(), *yk.raw(), f.def, &seg);
      if (s != Step::kEqual) return s;
    }
    if (x->entries.size() == y->entries.size()) return Step::kEqual;
    path_.push_back({Segment::kEntryKey, {}, static_cast<int64_t>(common)});
    return Result(
        Fail(x->entries.size() < y->entries.size(), y->entries.size() < x->entries.size()));
  }

  Step AdvanceFields(Frame& f) {
    while (f.next < f.fields->size()) {
      const TCFFIFieldInfo* field = (*f.fields)[f.next++];
      Segment seg{Segment::kField, details::FieldName(*field), 0};
      Any x = details::GetReflectedField(f.a, *field);
      Any y = details::GetReflectedField(f.b, *field);
      bool field_def = f.def || (field->flags & kTCFFIFieldDefRegion);
      Step s = Visit(*x.raw(), *y.raw(), field_def, &seg);
      if (s == Step::kPushed) {  // `f` may have moved: the new frame is on top
        stack_.back().hold_a = std::move(x);
        stack_.back().hold_b = std::move(y);
      }
      if (s != Step::kEqual) return s;
    }
    return Step::kEqual;
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

  Step VisitVar(const TCFFIAny& a, const TCFFIAny& b, const TCFFITypeInfo* info, bool def,
                bool has_segment) {
    const Object* x = details::ObjectUnsafe::FromHandle(a.v_obj);
    const Object* y = details::ObjectUnsafe::FromHandle(b.v_obj);
    auto it = lhs_to_rhs_.find(x);
    if (it != lhs_to_rhs_.end()) return Result(it->second == y ? true : Fail());
    if (rhs_to_lhs_.count(y)) return Result(Fail());  // y is bound to another variable
    bool bind = def || map_free_vars_;
    if (!bind && x != y) return Result(Fail());
    // Bind before comparing the variables' own fields, so a field that mentions the
    // variable itself compares consistently.
    lhs_to_rhs_.emplace(x, y);
    rhs_to_lhs_.emplace(y, x);
    keep_alive_.emplace_back(AnyView::FromRaw(a));
    keep_alive_.emplace_back(AnyView::FromRaw(b));
    if (x == y) return Step::kEqual;
    // The variables' own fields are no binding site.
    Push(Frame::kFields, a, b, false, has_segment);
    stack_.back().fields = &fields_.Get(info);
    return Step::kPushed;
  }

  bool map_free_vars_;
  bool record_;
  std::unordered_set<ObjectPair, ObjectPairHash> proven_;
  std::vector<Segment> path_;
  std::vector<Frame> stack_;
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
