/*
 * src/ffi/serialization.cc — SaveJSON and LoadJSON of value graphs (format in
 * serialization.h).
 *
 * Saving walks the graph depth first and emits a node after the nodes it refers
 * to. Loading validates every node up front (shape, type key, references, field
 * names), then builds the nodes reachable from the root. Both walks keep their
 * place on an explicit heap stack, and freeing a value releases its children
 * without recursion (object.h), so depth is bounded by memory alone: a chain of a
 * million nested values saves and loads without touching the C++ stack.
 */
#include "tilecore/ffi/serialization.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "src/ffi/reflected_fields.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/container/shape.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/json.h"
#include "tilecore/ffi/ndarray.h"

namespace tilecore {
namespace ffi {
// Checks registered by kinds (RegisterLoadCheck); filled at static-initialisation time.
static std::unordered_map<int32_t, void (*)(const Object*)>& LoadChecks() {
  static std::unordered_map<int32_t, void (*)(const Object*)> checks;
  return checks;
}

namespace {

constexpr const char* kFormatVersion = "0.1.0";
constexpr int64_t kMaxNDim = 1024;

// ---------------------------------------------------------------------------
// base64 (RFC 4648, with padding)
// ---------------------------------------------------------------------------
constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(in[k])); };
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kBase64Alphabet[(v >> s) & 63]);
  }
  size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = byte(i) << 16;
    if (rest == 2) v |= byte(i + 1) << 8;
    out.push_back(kBase64Alphabet[(v >> 18) & 63]);
    out.push_back(kBase64Alphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kBase64Alphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

/*! \brief Strict decoding; false on any character, length or padding error. */
bool Base64Decode(std::string_view in, std::string* out) {
  if (in.size() % 4 != 0) return false;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  out->clear();
  out->reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    bool last = i + 4 == in.size();
    int pad = 0;
    if (last && in[i + 3] == '=') pad = in[i + 2] == '=' ? 2 : 1;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      int d = k >= 4 - pad ? 0 : value(in[i + k]);
      if (d < 0) return false;
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out->push_back(static_cast<char>((v >> 16) & 0xFF));
    if (pad < 2) out->push_back(static_cast<char>((v >> 8) & 0xFF));
    if (pad < 1) out->push_back(static_cast<char>(v & 0xFF));
  }
  return true;
}

bool DataTypeRoundTrips(DLDataType t) {
  try {
    return StringToDLDataType(DLDataTypeToString(t)) == t;
  } catch (const Error&) {
    return false;
  }
}

Any DataTypeToJSON(DLDataType t) {
  if (DataTypeRoundTrips(t)) return Any(DLDataTypeToString(t));
  return Array<Any>{Any(static_cast<int64_t>(t.code)), Any(static_cast<int64_t>(t.bits)),
                    Any(static_cast<int64_t>(t.lanes))};
}

Any MakeNode(std::string_view type, const Any* data) {
  auto m = make_object<MapObj>();
  m->Set(Any("type"), Any(std::string(type)));
  if (data != nullptr) m->Set(Any("data"), *data);
  return Map<Any, Any>(ObjectPtr<Object>(std::move(m)));
}

// ---------------------------------------------------------------------------
// Save
// ---------------------------------------------------------------------------
class GraphWriter {
 public:
  std::string Save(const TCFFIAny& root) {
    int64_t root_index = Visit(root);
    while (!stack_.empty()) {
      if (Advance(stack_.back())) continue;  // a child frame was pushed
      int64_t index = Finish(stack_.back());
      stack_.pop_back();
      if (stack_.empty()) {
        root_index = index;
      } else {
        Deliver(stack_.back(), index);
      }
    }
    std::string out = "{\"root\": " + std::to_string(root_index) + ", \"nodes\": [";
    for (size_t i = 0; i < nodes_.size(); ++i) {
      out += i ? ",\n  " : "\n  ";
      out += json::Stringify(nodes_[i]);
    }
    out += "\n], \"tilecore_version\": \"";
    out += kFormatVersion;
    out += "\"}";
    return out;
  }

 private:
  std::string PathString() const {
    std::string s = "root";
    for (const std::string& seg : path_) s += seg;
    return s;
  }

  [[noreturn]] void FailType(const TCFFIAny& v, std::string_view why) const {
    TILECORE_THROW(TypeError) << "SaveJSON: cannot save a value of type `"
                              << details::AnyTypeName(&v) << "` at " << PathString() << ": " << why;
  }

  int64_t Add(std::string_view type, const Any* data) {
    nodes_.push_back(MakeNode(type, data));
    return static_cast<int64_t>(nodes_.size()) - 1;
  }

  /*! \brief A node for a value compared by value; equal values share one node. */
  int64_t Literal(std::string key, std::string_view type, const Any* data) {
    auto it = literal_index_.find(key);
    if (it != literal_index_.end()) return it->second;
    int64_t index = Add(type, data);
    literal_index_.emplace(std::move(key), index);
    return index;
  }

  template <typename T>
  static std::string Key(char tag, const T& bits) {
    std::string k(1, tag);
    k.append(reinterpret_cast<const char*>(&bits), sizeof(T));
    return k;
  }

  /*!
   * \brief A container or reflected object whose children are being saved. The walk
   * keeps these on a heap stack instead of the C stack, so a chain a million levels
   * deep costs memory, not stack frames; children are visited in the order a
   * recursive walk would take, so node numbering is the same.
   */
  struct Frame {
    enum Kind { kArray, kMap, kFields } kind;
    TCFFIAny value;  // the object (kept alive by keep_alive_)
    size_t next{0};  // the next child (kMap: 2 * entry + 0 for the key, 1 for the value)
    ObjectPtr<ArrayObj> refs{};                  // kArray, kMap: the children's node indices
    ObjectPtr<MapObj> fields{};                  // kFields: field name -> node index
    const TCFFITypeInfo* info{nullptr};          // kFields
    std::vector<const TCFFIFieldInfo*> order{};  // kFields
  };

  /*!
   * \brief The node of a value, or -1 when a frame was pushed for an object whose
   * children must be saved first (its node index is delivered to the parent later).
   */
  int64_t Visit(const TCFFIAny& v) {
    if (v.type_index < kTCFFIStaticObjectBegin || v.type_index == kTCFFIStr ||
        v.type_index == kTCFFIBytes) {
      return VisitLiteral(v);
    }
    return VisitObjectRef(v);
  }

  [[gnu::noinline]] int64_t VisitLiteral(const TCFFIAny& v) {
    std::string_view s;
    if (details::AnyGetStringView(&v, &s)) {
      try {
        json::Stringify(AnyView::FromRaw(v));
      } catch (const Error&) {
        TILECORE_THROW(ValueError) << "SaveJSON: the string at " << PathString()
                                   << " is not valid UTF-8; save binary data as bytes";
      }
      Any data(std::string{s});
      return Literal(std::string("s").append(s), "str", &data);
    }
    switch (v.type_index) {
      case kTCFFINone:
        return Literal("n", "None", nullptr);
      case kTCFFIBool: {
        Any data(v.v_int64 != 0);
        return Literal(Key('b', v.v_int64), "bool", &data);
      }
      case kTCFFIInt: {
        Any data(v.v_int64);
        return Literal(Key('i', v.v_int64), "int", &data);
      }
      case kTCFFIFloat: {
        double d = v.v_float64;
        Any data;
        if (std::isnan(d)) {
          data = Any("nan");
          d = std::numeric_limits<double>::quiet_NaN();  // one node for every NaN
        } else if (std::isinf(d)) {
          data = Any(d > 0 ? "inf" : "-inf");
        } else {
          data = Any(d);
        }
        return Literal(Key('f', d), "float", &data);
      }
      case kTCFFIDataType: {
        Any data = DataTypeToJSON(v.v_dtype);
        DLDataType t = v.v_dtype;
        return Literal(Key('t', t), "DataType", &data);
      }
      case kTCFFIDevice: {
        Any data = Array<Any>{Any(static_cast<int64_t>(v.v_device.device_type)),
                              Any(static_cast<int64_t>(v.v_device.device_id))};
        DLDevice d = v.v_device;
        return Literal(Key('d', d), "Device", &data);
      }
      case kTCFFISmallBytes:
        return VisitBytes(std::string_view(v.v_bytes, v.small_len));
      case kTCFFIByteArrayPtr: {
        const auto* b = static_cast<const TCFFIByteArray*>(v.v_ptr);
        return VisitBytes(std::string_view(b->data, b->size));
      }
      case kTCFFIBytes: {
        const auto* obj = reinterpret_cast<const BytesObj*>(v.v_obj);
        return VisitBytes(obj->view());
      }
      case kTCFFIOpaquePtr:
        FailType(v, "opaque pointers have no meaning outside this process");
      case kTCFFIDLTensorPtr:
        FailType(v, "a borrowed DLTensor* has no owner; pass an NDArray");
      default:
        break;
    }
    FailType(v, "unknown value kind");
  }

  [[noreturn, gnu::noinline]] void FailCycle(const Object* obj) const {
    TILECORE_THROW(ValueError) << "SaveJSON: reference cycle: the `" << obj->GetTypeKey() << "` at "
                               << PathString() << " contains itself";
  }

  int64_t VisitObjectRef(const TCFFIAny& v) {
    const Object* obj = details::ObjectUnsafe::FromHandle(v.v_obj);
    auto it = object_index_.find(obj);
    if (it != object_index_.end()) return it->second;
    if (!on_path_.insert(obj).second) FailCycle(obj);
    keep_alive_.emplace_back(AnyView::FromRaw(v));  // pointers stay unique while we index by them
    switch (v.type_index) {
      case kTCFFIArray:
        stack_.push_back(Frame{Frame::kArray, v});
        stack_.back().refs = make_object<ArrayObj>();
        return -1;
      case kTCFFIMap:
        stack_.push_back(Frame{Frame::kMap, v});
        stack_.back().refs = make_object<ArrayObj>();
        return -1;
      case kTCFFIShape:
        return Finished(obj, VisitShape(static_cast<const ShapeObj*>(obj)));
      case kTCFFINDArray:
        return Finished(obj, VisitNDArray(v));
      default:
        break;
    }
    const TCFFITypeInfo* info = TCFFIGetTypeInfo(v.type_index);
    if (info == nullptr || info->creator == nullptr) {
      FailType(v,
               "the kind has no creator, so it could not be loaded again "
               "(only reflected kinds declared with ObjectDef can be saved)");
    }
    stack_.push_back(Frame{Frame::kFields, v});
    Frame& f = stack_.back();
    f.fields = make_object<MapObj>();
    f.info = info;
    f.order = details::ReflectedFields(info);
    return -1;
  }

  /*! \brief Records the node of an object whose children are all saved. */
  int64_t Finished(const Object* obj, int64_t index) {
    on_path_.erase(obj);
    object_index_.emplace(obj, index);
    return index;
  }

  int64_t VisitBytes(std::string_view b) {
    Any data(Base64Encode(b));
    return Literal(std::string("y").append(b), "bytes", &data);
  }

  /*!
   * \brief Saves children of `f` until one needs a frame of its own (true) or none is
   * left (false). The child's path segment stays pushed until its index is delivered.
   * `f` is not used after a push, which may move it.
   */
  bool Advance(Frame& f) {
    while (true) {
      const Any* child = nullptr;
      Any field_value;
      switch (f.kind) {
        case Frame::kArray: {
          const auto& data = reinterpret_cast<const ArrayObj*>(f.value.v_obj)->data;
          if (f.next == data.size()) return false;
          path_.push_back(std::string("[").append(std::to_string(f.next)).append("]"));
          child = &data[f.next];
          break;
        }
        case Frame::kMap: {
          const auto& entries = reinterpret_cast<const MapObj*>(f.value.v_obj)->entries;
          if (f.next == 2 * entries.size()) return false;
          const auto& [key, value] = entries[f.next / 2];
          if (f.next % 2 == 0) {
            path_.push_back("<key " + std::to_string(f.next / 2) + ">");
            child = &key;
          } else {
            child = &value;  // Deliver already turned the key's segment into the value's
          }
          break;
        }
        case Frame::kFields: {
          if (f.next == f.order.size()) return false;
          path_.push_back("." + std::string(details::FieldName(*f.order[f.next])));
          field_value = details::GetReflectedField(f.value.v_obj, *f.order[f.next]);
          child = &field_value;
          break;
        }
      }
      ++f.next;
      int64_t ref = Visit(*child->raw());
      if (ref < 0) return true;
      Deliver(f, ref);
    }
  }

  /*! \brief Hands the node index of the child `f` last visited to `f`. */
  void Deliver(Frame& f, int64_t ref) {
    size_t k = f.next - 1;
    switch (f.kind) {
      case Frame::kArray:
        f.refs->data.emplace_back(ref);
        path_.pop_back();
        return;
      case Frame::kMap: {
        f.refs->data.emplace_back(ref);
        if (k % 2 == 0) {
          const Any& key = reinterpret_cast<const MapObj*>(f.value.v_obj)->entries[k / 2].first;
          path_.back() = "[" + KeyText(key, k / 2) + "]";
        } else {
          path_.pop_back();
        }
        return;
      }
      case Frame::kFields:
        f.fields->Set(Any(std::string(details::FieldName(*f.order[k]))), Any(ref));
        path_.pop_back();
        return;
    }
  }

  /*! \brief Adds the node of the top frame's object, all of whose children are saved. */
  int64_t Finish(Frame& f) {
    const Object* obj = details::ObjectUnsafe::FromHandle(f.value.v_obj);
    if (f.kind == Frame::kFields) {
      Any data = Map<Any, Any>(ObjectPtr<Object>(std::move(f.fields)));
      return Finished(obj, Add(details::TypeKeyOf(f.info), &data));
    }
    Any data = Array<Any>(ObjectPtr<Object>(std::move(f.refs)));
    return Finished(obj, Add(f.kind == Frame::kArray ? "ffi.Array" : "ffi.Map", &data));
  }

  [[gnu::noinline]] int64_t VisitShape(const ShapeObj* shape) {
    auto dims = make_object<ArrayObj>();
    for (int64_t d : shape->storage) dims->data.emplace_back(d);
    Any data = Array<Any>(ObjectPtr<Object>(std::move(dims)));
    return Add("ffi.Shape", &data);
  }

  static std::string KeyText(const Any& key, size_t i) {
    std::string_view s;
    if (details::AnyGetStringView(key.raw(), &s)) return "\"" + std::string(s) + "\"";
    if (key.type_index() == kTCFFIInt) return std::to_string(key.raw()->v_int64);
    return "<value " + std::to_string(i) + ">";
  }

  int64_t VisitNDArray(const TCFFIAny& v) {
    NDArray arr(details::ObjectUnsafe::CopyFromHandle(v.v_obj));
    if (arr.device().device_type != kDLCPU) {
      FailType(v, "the array is on device `" + DLDeviceToString(arr.device()) +
                      "`; only CPU arrays can be saved (copy it to the CPU first)");
    }
    if (!arr.IsContiguous()) arr = arr.CopyTo(DLDevice{kDLCPU, 0});
    auto shape = make_object<ArrayObj>();
    for (int64_t d : arr.shape()) shape->data.emplace_back(d);
    auto m = make_object<MapObj>();
    m->Set(Any("shape"), Array<Any>(ObjectPtr<Object>(std::move(shape))));
    m->Set(Any("dtype"), DataTypeToJSON(arr.dtype()));
    std::string_view bytes(arr.NumBytes() ? arr.data<char>() : "", arr.NumBytes());
    m->Set(Any("data"), Any(Base64Encode(bytes)));
    Any data = Map<Any, Any>(ObjectPtr<Object>(std::move(m)));
    return Add("ffi.NDArray", &data);
  }

  std::vector<Any> nodes_;
  std::unordered_map<std::string, int64_t> literal_index_;
  std::unordered_map<const Object*, int64_t> object_index_;
  std::unordered_set<const Object*> on_path_;
  std::vector<Any> keep_alive_;
  std::vector<std::string> path_;
  std::vector<Frame> stack_;
};

// ---------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------
enum class NodeKind { kLiteral, kArray, kMap, kObject };

struct Node {
  std::string type;
  NodeKind kind{NodeKind::kLiteral};
  Any value;                                  // kLiteral: the finished value
  std::vector<int64_t> refs;                  // other kinds: referenced nodes, in order
  const TCFFITypeInfo* info{nullptr};         // kObject
  std::vector<const TCFFIFieldInfo*> fields;  // kObject: aligned with refs
};

class GraphReader {
 public:
  Any Load(std::string_view text) {
    Any doc;
    try {
      doc = json::Parse(text);
    } catch (const Error& e) {
      TILECORE_THROW(ValueError) << "LoadJSON: not valid JSON: " << e.message();
    }
    const MapObj* top = AsMap(doc);
    if (top == nullptr)
      TILECORE_THROW(ValueError) << "LoadJSON: expected a JSON object at the top, got "
                                 << Kind(doc);
    for (const auto& [k, v] : top->entries) {
      std::string_view key = StrOf(k);
      if (key != "root" && key != "nodes" && key != "tilecore_version") {
        TILECORE_THROW(ValueError) << "LoadJSON: unknown top-level member \"" << key
                                   << "\" (expected root, nodes, tilecore_version)";
      }
    }
    const Any* nodes = top->Find(Any("nodes"));
    if (nodes == nullptr)
      TILECORE_THROW(ValueError) << "LoadJSON: missing top-level member \"nodes\"";
    if (nodes->type_index() != kTCFFIArray) {
      TILECORE_THROW(ValueError) << "LoadJSON: \"nodes\" must be an array, got " << Kind(*nodes);
    }
    const Any* version = top->Find(Any("tilecore_version"));
    if (version != nullptr && !IsStr(*version)) {
      TILECORE_THROW(ValueError) << "LoadJSON: \"tilecore_version\" must be a string, got "
                                 << Kind(*version);
    }
    const auto* arr = reinterpret_cast<const ArrayObj*>(nodes->raw()->v_obj);
    nodes_.resize(arr->data.size());
    for (size_t i = 0; i < arr->data.size(); ++i) Prepare(static_cast<int64_t>(i), arr->data[i]);

    const Any* root = top->Find(Any("root"));
    if (root == nullptr)
      TILECORE_THROW(ValueError) << "LoadJSON: missing top-level member \"root\"";
    if (root->type_index() != kTCFFIInt) {
      TILECORE_THROW(ValueError) << "LoadJSON: \"root\" must be a node index (int), got "
                                 << Kind(*root);
    }
    int64_t r = root->raw()->v_int64;
    if (r < 0 || r >= static_cast<int64_t>(nodes_.size())) {
      TILECORE_THROW(ValueError) << "LoadJSON: \"root\" refers to node " << r
                                 << ", out of range [0, " << nodes_.size() << ")";
    }
    return Build(r);
  }

 private:
  static const MapObj* AsMap(const Any& v) {
    return v.type_index() == kTCFFIMap ? reinterpret_cast<const MapObj*>(v.raw()->v_obj) : nullptr;
  }
  static const ArrayObj* AsArray(const Any& v) {
    return v.type_index() == kTCFFIArray ? reinterpret_cast<const ArrayObj*>(v.raw()->v_obj)
                                         : nullptr;
  }
  static bool IsStr(const Any& v) {
    std::string_view s;
    return details::AnyGetStringView(v.raw(), &s);
  }
  static std::string_view StrOf(const Any& v) {
    std::string_view s;
    details::AnyGetStringView(v.raw(), &s);
    return s;
  }
  /*! \brief The JSON kind of a parsed value, for messages. */
  static std::string Kind(const Any& v) {
    switch (v.type_index()) {
      case kTCFFINone:
        return "null";
      case kTCFFIBool:
        return "a boolean";
      case kTCFFIInt:
        return "an integer";
      case kTCFFIFloat:
        return "a number";
      case kTCFFIArray:
        return "an array";
      case kTCFFIMap:
        return "an object";
      default:
        return IsStr(v) ? "a string" : v.GetTypeKey();
    }
  }

  std::string Where(int64_t i) const {
    std::string s = "LoadJSON: node " + std::to_string(i);
    if (!nodes_[i].type.empty()) s += " (`" + nodes_[i].type + "`)";
    return s;
  }

  /*!
   * \brief For an array a field refused: the first element it refuses and its type. The
   *  setter only knows the array is not an Array of its element type; each element is
   *  tried alone on a scratch object of the same kind to name the first it refuses.
   */
  static std::pair<int64_t, std::string> RefusedElement(const Node& n, const TCFFIFieldInfo* f,
                                                        const Any& value) {
    if (value.type_index() != kTCFFIArray) return {-1, ""};
    Array<Any> arr = value.cast<Array<Any>>();
    TCFFIObjectHandle scratch = nullptr;
    if (n.info->creator(&scratch) != 0) {
      TCFFIObjectHandle ignored = nullptr;
      TCFFIErrorMoveFromRaised(&ignored);
      if (ignored != nullptr) details::DecRef(ignored);
      return {-1, ""};
    }
    ObjectPtr<Object> keep = details::ObjectUnsafe::MoveFromHandle(scratch);
    void* addr = reinterpret_cast<char*>(scratch) + f->offset;
    for (size_t k = 0; k < arr.size(); ++k) {
      Array<Any> one{arr[k]};
      Any one_any(one);
      if (f->setter(addr, one_any.raw()) == 0) continue;
      TCFFIObjectHandle ignored = nullptr;
      TCFFIErrorMoveFromRaised(&ignored);
      if (ignored != nullptr) details::DecRef(ignored);
      return {static_cast<int64_t>(k), arr[k].GetTypeKey()};
    }
    return {-1, ""};
  }

  [[noreturn]] void Fail(int64_t i, const std::string& what) const {
    TILECORE_THROW(ValueError) << Where(i) << ": " << what;
  }

  int64_t Ref(int64_t i, const Any& v, const std::string& what) const {
    if (v.type_index() != kTCFFIInt) Fail(i, what + " must be a node index (int), got " + Kind(v));
    int64_t r = v.raw()->v_int64;
    if (r < 0 || r >= static_cast<int64_t>(nodes_.size())) {
      Fail(i, what + " refers to node " + std::to_string(r) + ", out of range [0, " +
                  std::to_string(nodes_.size()) + ")");
    }
    return r;
  }

  int64_t Int(int64_t i, const Any& v, const std::string& what, int64_t lo, int64_t hi) const {
    if (v.type_index() != kTCFFIInt) Fail(i, what + " must be an integer, got " + Kind(v));
    int64_t x = v.raw()->v_int64;
    if (x < lo || x > hi) {
      Fail(i, what + " " + std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
    }
    return x;
  }

  DLDataType ParseDataType(int64_t i, const Any& data, const std::string& what) const {
    if (IsStr(data)) {
      try {
        return StringToDLDataType(StrOf(data));
      } catch (const Error& e) {
        Fail(i, what + ": " + std::string(e.message()));
      }
    }
    const ArrayObj* a = AsArray(data);
    if (a == nullptr || a->data.size() != 3) {
      Fail(i, what + " must be a dtype string or [code, bits, lanes], got " + Kind(data));
    }
    DLDataType t;
    t.code = static_cast<uint8_t>(Int(i, a->data[0], what + " code", 0, 255));
    t.bits = static_cast<uint8_t>(Int(i, a->data[1], what + " bits", 0, 255));
    t.lanes = static_cast<uint16_t>(Int(i, a->data[2], what + " lanes", 0, 65535));
    return t;
  }

  void Prepare(int64_t i, const Any& raw) {
    Node& node = nodes_[i];
    const MapObj* m = AsMap(raw);
    if (m == nullptr)
      Fail(i, "expected a JSON object {\"type\": ..., \"data\": ...}, got " + Kind(raw));
    for (const auto& [k, v] : m->entries) {
      if (StrOf(k) != "type" && StrOf(k) != "data") {
        Fail(i, "unknown member \"" + std::string(StrOf(k)) + "\" (expected type, data)");
      }
    }
    const Any* type = m->Find(Any("type"));
    if (type == nullptr || !IsStr(*type)) Fail(i, "missing \"type\" string");
    node.type = std::string(StrOf(*type));
    const Any* data_ptr = m->Find(Any("data"));
    if (node.type == "None") {
      if (data_ptr != nullptr && !data_ptr->is_none()) Fail(i, "None takes no data");
      return;
    }
    if (data_ptr == nullptr) Fail(i, "missing \"data\"");
    const Any& data = *data_ptr;
    const std::string& t = node.type;
    if (t == "bool") {
      if (data.type_index() != kTCFFIBool) Fail(i, "data must be true or false, got " + Kind(data));
      node.value = data;
    } else if (t == "int") {
      if (data.type_index() != kTCFFIInt) Fail(i, "data must be an integer, got " + Kind(data));
      node.value = data;
    } else if (t == "float") {
      PrepareFloat(i, data);
    } else if (t == "str") {
      if (!IsStr(data)) Fail(i, "data must be a string, got " + Kind(data));
      node.value = data;
    } else if (t == "bytes") {
      std::string decoded;
      if (!IsStr(data) || !Base64Decode(StrOf(data), &decoded))
        Fail(i, "data must be a base64 string");
      TCFFIByteArray b{decoded.data(), decoded.size()};
      TCFFIAny view{};
      view.type_index = kTCFFIByteArrayPtr;
      view.v_ptr = &b;
      node.value = Any(AnyView::FromRaw(view));
    } else if (t == "DataType") {
      node.value = Any(ParseDataType(i, data, "data"));
    } else if (t == "Device") {
      const ArrayObj* a = AsArray(data);
      if (a == nullptr || a->data.size() != 2) Fail(i, "data must be [device_type, device_id]");
      DLDevice d;
      d.device_type = static_cast<DLDeviceType>(
          Int(i, a->data[0], "device_type", 0, std::numeric_limits<int32_t>::max()));
      d.device_id =
          static_cast<int32_t>(Int(i, a->data[1], "device_id", std::numeric_limits<int32_t>::min(),
                                   std::numeric_limits<int32_t>::max()));
      node.value = Any(d);
    } else if (t == "ffi.Shape") {
      const ArrayObj* a = AsArray(data);
      if (a == nullptr) Fail(i, "data must be an array of integers, got " + Kind(data));
      std::vector<int64_t> dims;
      for (size_t k = 0; k < a->data.size(); ++k) {
        dims.push_back(Int(i, a->data[k], "dimension " + std::to_string(k),
                           std::numeric_limits<int64_t>::min(),
                           std::numeric_limits<int64_t>::max()));
      }
      node.value = Shape(std::move(dims));
    } else if (t == "ffi.NDArray") {
      PrepareNDArray(i, data);
    } else if (t == "ffi.Array" || t == "ffi.Map") {
      const ArrayObj* a = AsArray(data);
      if (a == nullptr) Fail(i, "data must be an array of node indices, got " + Kind(data));
      bool is_map = t == "ffi.Map";
      if (is_map && a->data.size() % 2 != 0)
        Fail(i, "data must hold key, value pairs; got an odd length");
      node.kind = is_map ? NodeKind::kMap : NodeKind::kArray;
      for (size_t k = 0; k < a->data.size(); ++k) {
        std::string what = is_map ? (k % 2 ? "value " : "key ") + std::to_string(k / 2)
                                  : "element " + std::to_string(k);
        node.refs.push_back(Ref(i, a->data[k], what));
      }
    } else {
      PrepareObject(i, data);
    }
  }

  void PrepareFloat(int64_t i, const Any& data) {
    Node& node = nodes_[i];
    if (data.type_index() == kTCFFIFloat || data.type_index() == kTCFFIInt) {
      node.value = Any(data.cast<double>());
      return;
    }
    std::string_view s = StrOf(data);
    if (IsStr(data) && s == "nan") {
      node.value = Any(std::numeric_limits<double>::quiet_NaN());
    } else if (IsStr(data) && s == "inf") {
      node.value = Any(std::numeric_limits<double>::infinity());
    } else if (IsStr(data) && s == "-inf") {
      node.value = Any(-std::numeric_limits<double>::infinity());
    } else {
      Fail(i, "data must be a number or one of \"nan\", \"inf\", \"-inf\", got " + Kind(data));
    }
  }

  void PrepareNDArray(int64_t i, const Any& data) {
    const MapObj* m = AsMap(data);
    if (m == nullptr) Fail(i, "data must be an object {shape, dtype, data}, got " + Kind(data));
    for (const auto& [k, v] : m->entries) {
      std::string_view key = StrOf(k);
      if (key != "shape" && key != "dtype" && key != "data") {
        Fail(i, "unknown member \"" + std::string(key) + "\" (expected shape, dtype, data)");
      }
    }
    const Any* shape = m->Find(Any("shape"));
    const Any* dtype = m->Find(Any("dtype"));
    const Any* bytes = m->Find(Any("data"));
    if (shape == nullptr || dtype == nullptr || bytes == nullptr)
      Fail(i, "data needs shape, dtype and data");
    const ArrayObj* dims = AsArray(*shape);
    if (dims == nullptr) Fail(i, "shape must be an array of integers, got " + Kind(*shape));
    if (static_cast<int64_t>(dims->data.size()) > kMaxNDim)
      Fail(i, "shape has more than 1024 dimensions");
    DLDataType t = ParseDataType(i, *dtype, "dtype");
    if (t.bits == 0 || t.lanes == 0) Fail(i, "dtype has zero bits or lanes");
    std::vector<int64_t> extents;
    // The byte count is checked against the payload before allocating anything.
    uint64_t numel = 1;
    bool overflow = false;
    for (size_t k = 0; k < dims->data.size(); ++k) {
      int64_t d = Int(i, dims->data[k], "shape[" + std::to_string(k) + "]", 0,
                      std::numeric_limits<int64_t>::max());
      extents.push_back(d);
      if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
        overflow = true;
      numel *= static_cast<uint64_t>(d);
    }
    std::string decoded;
    if (!IsStr(*bytes) || !Base64Decode(StrOf(*bytes), &decoded))
      Fail(i, "data.data must be a base64 string");
    uint64_t elem = DataTypeBytes(t);
    if (overflow || (numel != 0 && elem > std::numeric_limits<uint64_t>::max() / numel) ||
        numel * elem != decoded.size()) {
      Fail(i, "data holds " + std::to_string(decoded.size()) +
                  " bytes, which does not match the shape and dtype");
    }
    NDArray arr = NDArray::Empty(extents, t, DLDevice{kDLCPU, 0});
    if (!decoded.empty()) std::memcpy(arr.data<char>(), decoded.data(), decoded.size());
    nodes_[i].value = arr;
  }

  void PrepareObject(int64_t i, const Any& data) {
    Node& node = nodes_[i];
    int32_t index;
    TCFFIByteArray key{node.type.data(), node.type.size()};
    if (TCFFITypeKeyToIndex(&key, &index) != 0) {
      TCFFIObjectHandle err = nullptr;
      TCFFIErrorMoveFromRaised(&err);
      if (err) TCFFIObjectDecRef(err);
      Fail(i, "unknown type key");
    }
    const TCFFITypeInfo* info = TCFFIGetTypeInfo(index);
    if (info == nullptr || index < kTCFFIStaticObjectBegin || info->creator == nullptr) {
      Fail(i, "this kind has no creator and cannot be loaded");
    }
    const MapObj* m = AsMap(data);
    if (m == nullptr) Fail(i, "data must be an object of fields, got " + Kind(data));
    node.kind = NodeKind::kObject;
    node.info = info;
    std::vector<const TCFFIFieldInfo*> fields = details::ReflectedFields(info);
    for (const auto& [k, v] : m->entries) {
      std::string_view name = StrOf(k);
      bool known = false;
      for (const TCFFIFieldInfo* f : fields) known = known || details::FieldName(*f) == name;
      if (!known) {
        std::string names;
        for (const TCFFIFieldInfo* f : fields) {
          names += (names.empty() ? "" : ", ") + std::string(details::FieldName(*f));
        }
        Fail(i, "unknown field `" + std::string(name) +
                    "` (fields: " + (names.empty() ? "none" : names) + ")");
      }
    }
    for (const TCFFIFieldInfo* f : fields) {
      std::string name(details::FieldName(*f));
      const Any* ref = m->Find(Any(name));
      if (ref == nullptr) Fail(i, "missing field `" + name + "`");
      node.refs.push_back(Ref(i, *ref, "field `" + name + "`"));
      node.fields.push_back(f);
    }
  }

  std::string RefLabel(int64_t i, size_t k) const {
    const Node& n = nodes_[i];
    switch (n.kind) {
      case NodeKind::kObject:
        return "field `" + std::string(details::FieldName(*n.fields[k])) + "`";
      case NodeKind::kMap:
        return (k % 2 ? "value " : "key ") + std::to_string(k / 2);
      default:
        return "element " + std::to_string(k);
    }
  }

  /*! \brief Builds the nodes reachable from `root`, children first, without recursion. */
  Any Build(int64_t root) {
    enum : uint8_t { kNew, kOnStack, kDone };
    std::vector<uint8_t> state(nodes_.size(), kNew);
    std::vector<Any> values(nodes_.size());
    struct Frame {
      int64_t node;
      size_t next;
    };
    std::vector<Frame> stack{{root, 0}};
    state[root] = kOnStack;
    while (!stack.empty()) {
      int64_t cur = stack.back().node;
      size_t k = stack.back().next;
      if (k < nodes_[cur].refs.size()) {
        ++stack.back().next;
        int64_t child = nodes_[cur].refs[k];
        if (state[child] == kDone) continue;
        if (state[child] == kOnStack) {
          std::string chain;
          bool in_cycle = false;
          for (const Frame& f : stack) {
            in_cycle = in_cycle || f.node == child;
            if (in_cycle) chain += std::to_string(f.node) + " -> ";
          }
          Fail(cur, RefLabel(cur, k) + " refers back to node " + std::to_string(child) +
                        ": reference cycle " + chain + std::to_string(child));
        }
        state[child] = kOnStack;
        stack.push_back({child, 0});
        continue;
      }
      values[cur] = Make(cur, values);
      state[cur] = kDone;
      stack.pop_back();
    }
    return values[root];
  }

  Any Make(int64_t i, const std::vector<Any>& values) const {
    const Node& n = nodes_[i];
    switch (n.kind) {
      case NodeKind::kLiteral:
        return n.value;
      case NodeKind::kArray: {
        auto arr = make_object<ArrayObj>();
        arr->data.reserve(n.refs.size());
        for (int64_t r : n.refs) arr->data.push_back(values[r]);
        return Array<Any>(ObjectPtr<Object>(std::move(arr)));
      }
      case NodeKind::kMap: {
        auto m = make_object<MapObj>();
        for (size_t k = 0; k < n.refs.size(); k += 2) {
          const Any& key = values[n.refs[k]];
          if (m->Find(key) != nullptr) {
            Fail(i, "key " + std::to_string(k / 2) + " (node " + std::to_string(n.refs[k]) +
                        ") repeats an earlier key");
          }
          m->Set(key, values[n.refs[k + 1]]);
        }
        return Map<Any, Any>(ObjectPtr<Object>(std::move(m)));
      }
      case NodeKind::kObject:
        break;
    }
    TCFFIObjectHandle handle = nullptr;
    if (n.info->creator(&handle) != 0) details::ThrowRaisedError();
    ObjectPtr<Object> obj = details::ObjectUnsafe::MoveFromHandle(handle);
    for (size_t k = 0; k < n.fields.size(); ++k) {
      const TCFFIFieldInfo* f = n.fields[k];
      void* addr = reinterpret_cast<char*>(handle) + f->offset;
      if (f->setter(addr, values[n.refs[k]].raw()) != 0) {
        TCFFIObjectHandle err_handle = nullptr;
        TCFFIErrorMoveFromRaised(&err_handle);
        if (err_handle == nullptr)
          Fail(i, "field `" + std::string(details::FieldName(*f)) + "` was refused");
        Error err(details::ObjectUnsafe::MoveFromHandle(err_handle));
        std::string field(details::FieldName(*f));
        std::string message(err.message());
        // An array refused as a whole: name the element (params[0]) and what the field holds.
        if (auto [index, type] = RefusedElement(n, f, values[n.refs[k]]); index >= 0) {
          std::string expected = message;
          if (size_t a = message.find("expected `"), b = message.find("` but got");
              a != std::string::npos && b != std::string::npos && b > a) {
            expected = message.substr(a + 10, b - a - 10);
          }
          field += "[" + std::to_string(index) + "]";
          message = "an element cannot be `" + type + "` (the field is `" + expected + "`)";
        }
        throw Error(std::string(err.kind()), Where(i) + " field `" + field + "`: " + message,
                    std::string(err.backtrace()));
      }
    }
    if (auto check = LoadChecks().find(handle->type_index); check != LoadChecks().end()) {
      try {
        check->second(obj.get());
      } catch (const Error& err) {
        throw Error(std::string(err.kind()), Where(i) + ": " + std::string(err.message()),
                    std::string(err.backtrace()));
      }
    }
    TCFFIAny raw{};
    raw.type_index = handle->type_index;
    raw.v_obj = details::ObjectUnsafe::MoveToHandle(std::move(obj));
    return Any::MoveFromRaw(&raw);
  }

  std::vector<Node> nodes_;
};

}  // namespace

void RegisterLoadCheck(int32_t type_index, void (*check)(const Object* obj)) {
  LoadChecks()[type_index] = check;
}

std::string SaveJSON(const AnyView& value) { return GraphWriter().Save(*value.raw()); }

Any LoadJSON(std::string_view json) { return GraphReader().Load(json); }

TILECORE_REGISTER_GLOBAL("ffi.SaveJSON").set_body_typed([](AnyView value) {
  return SaveJSON(value);
});
TILECORE_REGISTER_GLOBAL("ffi.LoadJSON").set_body_typed([](std::string json) {
  return LoadJSON(json);
});

}  // namespace ffi
}  // namespace tilecore
