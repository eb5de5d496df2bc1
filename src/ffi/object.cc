/*
 * src/ffi/object.cc — the run-time type table and the object/Any entry points of
 * the C ABI.
 *
 * Type infos are created once and never freed; readers index a fixed table of
 * atomic pointers, so TCFFIGetTypeInfo and isinstance never take a lock.
 */
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/ffi/safe_call.h"
#include "tilecore/ffi/any.h"
#include "tilecore/ffi/c_api.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/string.h"

namespace tilecore {
namespace ffi {
namespace {

constexpr int32_t kMaxTypeIndex = 1 << 14;

struct TypeEntry {
  TCFFITypeInfo info{};
  std::string key;
  std::vector<int32_t> ancestors;
  std::vector<TCFFIFieldInfo> fields;
  std::vector<std::string> field_names;  // owns fields[i].name
  std::vector<std::string> field_docs;   // owns fields[i].doc
};

class TypeTable {
 public:
  static TypeTable* Global() {
    static TypeTable* table =
        new TypeTable();  // lives for the process: objects may outlive statics
    return table;
  }

  int32_t GetOrAlloc(std::string_view key, int32_t static_index, int32_t parent_index) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    auto it = key_to_index_.find(std::string(key));
    if (it != key_to_index_.end()) {
      TypeEntry* e = entries_[it->second].load();
      int32_t parent_now = e->ancestors.empty() ? -1 : e->ancestors.back();
      if (parent_now != parent_index) {
        TILECORE_THROW(ValueError) << "Type `" << key << "` is already registered with parent `"
                                   << KeyOf(parent_now) << "`, not `" << KeyOf(parent_index) << "`";
      }
      if (static_index >= 0 && static_index != it->second) {
        TILECORE_THROW(ValueError) << "Type `" << key << "` already has index " << it->second;
      }
      return it->second;
    }
    int32_t index = static_index;
    if (index < 0) {
      index = next_dynamic_index_++;
      if (index >= kMaxTypeIndex) TILECORE_THROW(RuntimeError) << "Too many object kinds";
    } else if (entries_[index].load() != nullptr) {
      TILECORE_THROW(ValueError) << "Static type index " << index << " is taken by `"
                                 << entries_[index].load()->key << "`";
    }
    auto entry = std::make_unique<TypeEntry>();
    entry->key = std::string(key);
    if (index != kTCFFIObject) {
      TypeEntry* parent = parent_index >= 0 && parent_index < kMaxTypeIndex
                              ? entries_[parent_index].load()
                              : nullptr;
      if (parent == nullptr) {
        TILECORE_THROW(ValueError) << "Type `" << key << "`: unknown parent index " << parent_index;
      }
      entry->ancestors = parent->ancestors;
      entry->ancestors.push_back(parent_index);
    }
    entry->info.type_index = index;
    entry->info.type_depth = static_cast<int32_t>(entry->ancestors.size());
    entry->info.type_key = TCFFIByteArray{entry->key.data(), entry->key.size()};
    entry->info.type_ancestors = entry->ancestors.data();
    entry->info.structural_eq_kind = kTCFFISEqualIdentity;
    key_to_index_[entry->key] = index;
    entries_[index].store(entry.release(), std::memory_order_release);
    return index;
  }

  const TCFFITypeInfo* Get(int32_t index) const {
    if (index < 0 || index >= kMaxTypeIndex) return nullptr;
    TypeEntry* e = entries_[index].load(std::memory_order_acquire);
    return e ? &e->info : nullptr;
  }

  TypeEntry* GetEntry(int32_t index) {
    if (index < 0 || index >= kMaxTypeIndex) return nullptr;
    return entries_[index].load(std::memory_order_acquire);
  }

  int32_t Find(std::string_view key) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    auto it = key_to_index_.find(std::string(key));
    return it == key_to_index_.end() ? -1 : it->second;
  }

  std::string KeyOf(int32_t index) const {
    const TCFFITypeInfo* info = Get(index);
    if (info == nullptr) return "<unknown type " + std::to_string(index) + ">";
    return std::string(info->type_key.data, info->type_key.size);
  }

  std::recursive_mutex& mutex() { return mutex_; }

 private:
  TypeTable() {
    for (auto& e : entries_) e.store(nullptr);
    // POD kinds get entries too, so that every index has a printable key.
    const std::pair<int32_t, const char*> pods[] = {
        {kTCFFINone, "None"},
        {kTCFFIInt, "int"},
        {kTCFFIBool, "bool"},
        {kTCFFIFloat, "float"},
        {kTCFFIOpaquePtr, "void*"},
        {kTCFFIDataType, "DataType"},
        {kTCFFIDevice, "Device"},
        {kTCFFIDLTensorPtr, "DLTensor*"},
        {kTCFFIRawStr, "str"},
        {kTCFFIByteArrayPtr, "bytes"},
        {kTCFFISmallStr, "str"},
        {kTCFFISmallBytes, "bytes"},
        // A foreign object with no tilecore form: messages name it, not its number.
        {kTCFFIOpaquePyObject, "Python object"}};
    for (const auto& [index, key] : pods) {
      auto entry = std::make_unique<TypeEntry>();
      entry->key = key;
      entry->info.type_index = index;
      entry->info.type_key = TCFFIByteArray{entry->key.data(), entry->key.size()};
      entries_[index].store(entry.release());
    }
    GetOrAlloc("ffi.Object", kTCFFIObject, -1);
  }

  // Recursive: an error thrown under the lock allocates an Error, whose kind may be
  // registering itself for the first time.
  std::recursive_mutex mutex_;
  std::unordered_map<std::string, int32_t> key_to_index_;
  std::array<std::atomic<TypeEntry*>, kMaxTypeIndex> entries_;
  int32_t next_dynamic_index_{kTCFFIDynObjectBegin};
};

}  // namespace

namespace details {

int32_t GetOrAllocTypeIndex(const char* type_key, int32_t static_type_index,
                            int32_t parent_type_index) {
  return TypeTable::Global()->GetOrAlloc(type_key, static_type_index, parent_type_index);
}

std::string TypeIndexToKey(int32_t type_index) { return TypeTable::Global()->KeyOf(type_index); }

bool IsAncestorIndex(int32_t object_type_index, int32_t ancestor_index, int32_t ancestor_depth) {
  const TCFFITypeInfo* info = TypeTable::Global()->Get(object_type_index);
  return info != nullptr && info->type_depth > ancestor_depth &&
         info->type_ancestors[ancestor_depth] == ancestor_index;
}

int32_t TypeDepth(int32_t type_index) {
  const TCFFITypeInfo* info = TypeTable::Global()->Get(type_index);
  return info ? info->type_depth : -1;
}

std::string AnyTypeName(const TCFFIAny* value) {
  if (value->type_index == kTCFFIRawStr || value->type_index == kTCFFISmallStr) return "str";
  return TypeTable::Global()->KeyOf(value->type_index);
}

std::string RefusalText(const std::optional<RefusedElement>& r) {
  if (!r) return "";
  return std::string(r->is_key ? ": its key " : ": its element ") + r->where + " is `" + r->got +
         "`, not `" + r->expected + "`";
}

std::string KeyText(const TCFFIAny* key) {
  AnyView k = AnyView::FromRaw(*key);
  if (key->type_index == kTCFFIInt) return std::to_string(key->v_int64);
  if (auto s = k.try_cast<String>(); s && k.type_index() != kTCFFINone) {
    std::string text(s->data(), s->size());
    if (text.size() > 40) text = text.substr(0, 40) + "...";
    return "\"" + text + "\"";
  }
  return "<" + AnyTypeName(key) + ">";
}

void MakeOwnedString(std::string_view s, TCFFIAny* out) {
  if (s.size() <= 7) {
    out->type_index = kTCFFISmallStr;
    out->small_len = static_cast<uint32_t>(s.size());
    std::memset(out->v_bytes, 0, sizeof(out->v_bytes));
    std::memcpy(out->v_bytes, s.data(), s.size());
  } else {
    out->type_index = kTCFFIStr;
    out->zero_padding = 0;
    out->v_obj = ObjectUnsafe::MoveToHandle(make_object<StrObj>(std::string(s)));
  }
}

}  // namespace details

String::String(std::string s) : ObjectRef(make_object<StrObj>(std::move(s))) {}

// (a default String in every IR node that names something: a Call's op before it is set,
// a buffer's name; immutable, so one object serves them all, never freed)
namespace {
const ObjectPtr<Object>& EmptyString() {
  static const ObjectPtr<Object>* empty = new ObjectPtr<Object>(make_object<StrObj>(std::string()));
  return *empty;
}
}  // namespace

String::String() : ObjectRef(EmptyString()) {}
Bytes::Bytes(std::string s) : ObjectRef(make_object<BytesObj>(std::move(s))) {}

void Any::FromBorrowedOnly(const AnyView& view) {
  details::SetNone(&data_);
  if (TCFFIAnyViewToOwnedAny(view.raw(), &data_) != 0) details::ThrowRaisedError();
}

namespace {
/*!
 * \brief The foreign object an opaque box holds: each crossing of a Python object makes a new
 *  box, so a box is keyed (hashed, compared) by what it holds, not by itself.
 */
const void* OpaqueIdentity(const TCFFIAny* r) {
  if (r->type_index != kTCFFIOpaquePyObject) return nullptr;
  const char* obj = reinterpret_cast<const char*>(r->v_obj);
  return reinterpret_cast<const TCFFIOpaqueObjectCell*>(obj + sizeof(TCFFIObject))->handle;
}
}  // namespace

size_t AnyHash::operator()(const Any& a) const {
  std::string_view s;
  if (details::AnyGetStringView(a.raw(), &s)) return std::hash<std::string_view>()(s);
  const TCFFIAny* r = a.raw();
  if (const void* id = OpaqueIdentity(r)) return std::hash<const void*>()(id);
  if (r->type_index == kTCFFIFloat) return std::hash<double>()(r->v_float64);
  if (r->type_index == kTCFFIBool) return std::hash<int64_t>()(r->v_int64);
  return std::hash<int64_t>()(r->v_int64) ^ (static_cast<size_t>(r->type_index) << 48);
}

bool AnyEqual::operator()(const Any& a, const Any& b) const {
  std::string_view sa, sb;
  bool a_str = details::AnyGetStringView(a.raw(), &sa);
  bool b_str = details::AnyGetStringView(b.raw(), &sb);
  if (a_str || b_str) return a_str && b_str && sa == sb;
  const TCFFIAny* x = a.raw();
  const TCFFIAny* y = b.raw();
  if (x->type_index == kTCFFIFloat && y->type_index == kTCFFIFloat)
    return x->v_float64 == y->v_float64;
  if (const void* id = OpaqueIdentity(x)) return id == OpaqueIdentity(y);
  // bool and int are different keys, as for C++ users; Python normalises before calling.
  return x->type_index == y->type_index && x->v_int64 == y->v_int64;
}

}  // namespace ffi
}  // namespace tilecore

using namespace tilecore::ffi;  // NOLINT(*)

// ---------------------------------------------------------------------------
// C ABI
// ---------------------------------------------------------------------------
int TCFFIObjectIncRef(TCFFIObjectHandle obj) {
  if (obj) details::IncRef(obj);
  return 0;
}

namespace tilecore {
namespace ffi {
namespace details {
void DestroyObject(TCFFIObject* obj) noexcept {
  // Trivially destructible thread-locals: safe to use during thread exit. (initial-exec:
  // read relative to the thread pointer, not through a call, on every object freed)
  __attribute__((tls_model("initial-exec"))) thread_local TCFFIObject* pending = nullptr;
  __attribute__((tls_model("initial-exec"))) thread_local bool draining = false;
  if (draining) {
    obj->ref_count = reinterpret_cast<uint64_t>(pending);
    pending = obj;
    return;
  }
  draining = true;
  obj->deleter(obj);
  while (pending != nullptr) {
    TCFFIObject* next = pending;
    pending = reinterpret_cast<TCFFIObject*>(next->ref_count);
    next->deleter(next);
  }
  draining = false;
}
}  // namespace details
}  // namespace ffi
}  // namespace tilecore

int TCFFIObjectDecRef(TCFFIObjectHandle obj) {
  if (obj) details::DecRef(obj);
  return 0;
}

int TCFFIAnyRelease(TCFFIAny* any) {
  if (any->type_index >= kTCFFIStaticObjectBegin) details::DecRef(any->v_obj);
  details::SetNone(any);
  return 0;
}

int TCFFIAnyViewToOwnedAny(const TCFFIAny* view, TCFFIAny* out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  switch (view->type_index) {
    case kTCFFIRawStr:
      details::MakeOwnedString(view->v_c_str, out);
      break;
    case kTCFFIByteArrayPtr: {
      const auto* b = static_cast<const TCFFIByteArray*>(view->v_ptr);
      if (b->size <= 7) {
        out->type_index = kTCFFISmallBytes;
        out->small_len = static_cast<uint32_t>(b->size);
        std::memset(out->v_bytes, 0, sizeof(out->v_bytes));
        std::memcpy(out->v_bytes, b->data, b->size);
      } else {
        out->type_index = kTCFFIBytes;
        out->zero_padding = 0;
        out->v_obj = details::ObjectUnsafe::MoveToHandle(
            make_object<BytesObj>(std::string(b->data, b->size)));
      }
      break;
    }
    case kTCFFIDLTensorPtr:
      TILECORE_THROW(TypeError) << "A DLTensor* argument has no owner and cannot be kept; "
                                   "pass an NDArray instead";
    default:
      *out = *view;
      if (out->type_index >= kTCFFIStaticObjectBegin) details::IncRef(out->v_obj);
  }
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFITypeGetOrAllocIndex(const TCFFIByteArray* type_key, int32_t static_type_index,
                             int32_t parent_type_index, int32_t* out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  *out = TypeTable::Global()->GetOrAlloc(std::string_view(type_key->data, type_key->size),
                                         static_type_index, parent_type_index);
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFITypeKeyToIndex(const TCFFIByteArray* type_key, int32_t* out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  std::string_view key(type_key->data, type_key->size);
  int32_t index = TypeTable::Global()->Find(key);
  if (index < 0) TILECORE_THROW(KeyError) << "Unknown object type `" << key << "`";
  *out = index;
  TILECORE_FFI_SAFE_CALL_END();
}

const TCFFITypeInfo* TCFFIGetTypeInfo(int32_t type_index) {
  return TypeTable::Global()->Get(type_index);
}

int TCFFITypeRegisterField(int32_t type_index, const TCFFIFieldInfo* info) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  TypeTable* table = TypeTable::Global();
  std::lock_guard<std::recursive_mutex> lock(table->mutex());
  TypeEntry* e = table->GetEntry(type_index);
  if (e == nullptr || type_index < kTCFFIStaticObjectBegin) {
    TILECORE_THROW(ValueError) << "Cannot register a field on unknown object type index "
                               << type_index;
  }
  std::string name(info->name.data, info->name.size);
  for (const std::string& n : e->field_names) {
    if (n == name)
      TILECORE_THROW(ValueError) << "Field `" << name << "` of `" << e->key
                                 << "` is already registered";
  }
  // Names and docs are owned by the entry; deques would keep pointers stable, but fields are
  // registered at static-initialisation time, so re-pointing after growth is enough.
  e->field_names.push_back(std::move(name));
  e->field_docs.emplace_back(info->doc.data ? std::string(info->doc.data, info->doc.size) : "");
  e->fields.push_back(*info);
  for (size_t i = 0; i < e->fields.size(); ++i) {
    e->fields[i].name = TCFFIByteArray{e->field_names[i].data(), e->field_names[i].size()};
    e->fields[i].doc = TCFFIByteArray{e->field_docs[i].data(), e->field_docs[i].size()};
  }
  e->info.fields = e->fields.data();
  e->info.num_fields = static_cast<int32_t>(e->fields.size());
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFITypeRegisterMetadata(int32_t type_index, TCFFIObjectCreator creator,
                              int32_t structural_eq_kind) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  TypeEntry* e = TypeTable::Global()->GetEntry(type_index);
  if (e == nullptr) TILECORE_THROW(ValueError) << "Unknown object type index " << type_index;
  e->info.creator = creator;
  e->info.structural_eq_kind = structural_eq_kind;
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFIGetABIVersion(int32_t* major, int32_t* minor) {
  *major = TILECORE_FFI_ABI_VERSION_MAJOR;
  *minor = TILECORE_FFI_ABI_VERSION_MINOR;
  return 0;
}
