/*
 * src/ffi/function.cc — Function entry points of the C ABI and the global registry.
 *
 * The registry is an open-addressing hash table of immutable entries. Readers load
 * the table pointer and probe it with atomic loads, never locking; writers take a
 * mutex, publish new entries with atomic stores and, when the table fills, publish a
 * larger copy. Replaced tables and entries are retired, not freed, so a reader that
 * still holds an old pointer stays safe.
 *
 * Rationale: lookups happen on every `get_global_func` and during module loading
 * from many threads; registrations are rare. Retiring instead of freeing costs a
 * few kilobytes per process.
 */
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "src/ffi/safe_call.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {
namespace {

struct RegistryEntry {
  std::string name;
  Function func;  // null when the name was removed (a tombstone)
};

struct RegistryTable {
  explicit RegistryTable(size_t capacity) : slots(capacity) {
    for (auto& s : slots) s.store(nullptr, std::memory_order_relaxed);
  }
  std::vector<std::atomic<RegistryEntry*>> slots;
};

class GlobalRegistry {
 public:
  static GlobalRegistry* Global() {
    static GlobalRegistry* registry = new GlobalRegistry();  // lives for the process
    return registry;
  }

  /*! \brief Lock-free lookup. */
  const RegistryEntry* Find(std::string_view name) const {
    RegistryTable* table = table_.load(std::memory_order_acquire);
    size_t mask = table->slots.size() - 1;
    for (size_t i = Hash(name) & mask, probes = 0; probes <= mask; i = (i + 1) & mask, ++probes) {
      RegistryEntry* e = table->slots[i].load(std::memory_order_acquire);
      if (e == nullptr) return nullptr;
      if (e->name == name) return e->func.defined() ? e : nullptr;
    }
    return nullptr;
  }

  void Set(std::string_view name, Function func, bool allow_override) {
    std::lock_guard<std::mutex> lock(mutex_);
    const RegistryEntry* old = Find(name);
    if (old != nullptr && !allow_override) {
      TILECORE_THROW(ValueError) << "Global function `" << name
                                 << "` is already registered; pass override=True to replace it";
    }
    Publish(name, std::move(func));
  }

  bool Remove(std::string_view name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Find(name) == nullptr) return false;
    Publish(name, Function());
    return true;
  }

  std::vector<String> ListNames() const {
    RegistryTable* table = table_.load(std::memory_order_acquire);
    std::vector<String> names;
    for (const auto& slot : table->slots) {
      RegistryEntry* e = slot.load(std::memory_order_acquire);
      if (e != nullptr && e->func.defined()) names.emplace_back(e->name);
    }
    return names;
  }

 private:
  GlobalRegistry() {
    tables_.push_back(std::make_unique<RegistryTable>(1024));
    table_.store(tables_.back().get());
  }

  static size_t Hash(std::string_view s) { return std::hash<std::string_view>()(s); }

  // Called with mutex_ held.
  void Publish(std::string_view name, Function func) {
    entries_.push_back(
        std::make_unique<RegistryEntry>(RegistryEntry{std::string(name), std::move(func)}));
    RegistryEntry* entry = entries_.back().get();
    RegistryTable* table = table_.load(std::memory_order_relaxed);
    if ((used_ + 1) * 2 > table->slots.size()) {
      auto bigger = std::make_unique<RegistryTable>(table->slots.size() * 2);
      for (const auto& slot : table->slots) {
        RegistryEntry* e = slot.load(std::memory_order_relaxed);
        if (e != nullptr) Insert(bigger.get(), e);
      }
      tables_.push_back(std::move(bigger));
      table = tables_.back().get();
      table_.store(table, std::memory_order_release);
    }
    if (Insert(table, entry)) ++used_;
  }

  // Returns true when a new slot was taken (false when an entry was replaced).
  static bool Insert(RegistryTable* table, RegistryEntry* entry) {
    size_t mask = table->slots.size() - 1;
    for (size_t i = Hash(entry->name) & mask;; i = (i + 1) & mask) {
      RegistryEntry* e = table->slots[i].load(std::memory_order_relaxed);
      if (e == nullptr) {
        table->slots[i].store(entry, std::memory_order_release);
        return true;
      }
      if (e->name == entry->name) {
        table->slots[i].store(entry, std::memory_order_release);
        return false;
      }
    }
  }

  std::mutex mutex_;
  std::atomic<RegistryTable*> table_;
  size_t used_{0};
  std::vector<std::unique_ptr<RegistryTable>> tables_;   // current and retired
  std::vector<std::unique_ptr<RegistryEntry>> entries_;  // current and retired
};

std::mutex pending_errors_mutex;
std::vector<std::string>& PendingErrors() {
  static std::vector<std::string>* errors = new std::vector<std::string>();
  return *errors;
}

/*! \brief A Function made from a C callback (TCFFIFunctionCreate). */
class CFunctionObj : public FunctionObj {
 public:
  CFunctionObj(void* self, TCFFISafeCallType callback, void (*deleter)(void*))
      : self_(self), callback_(callback), deleter_(deleter) {
    cell.safe_call = Trampoline;
  }
  ~CFunctionObj() {
    if (deleter_) deleter_(self_);
  }
  CFunctionObj(const CFunctionObj&) = delete;

 private:
  static int Trampoline(void* obj, const TCFFIAny* args, int32_t num_args, TCFFIAny* result) {
    auto* self = static_cast<CFunctionObj*>(obj);
    return self->callback_(self->self_, args, num_args, result);
  }
  void* self_;
  TCFFISafeCallType callback_;
  void (*deleter_)(void*);
};

}  // namespace

namespace details {

void ThrowArgumentCountMismatch(const std::string& signature, int32_t expected, int32_t given) {
  TILECORE_THROW(TypeError) << "Mismatched number of arguments when calling `" << signature
                            << "`: expected " << expected << " but got " << given;
}

void ThrowCallOfEmptyFunction() {
  TILECORE_THROW(ValueError) << "Function is empty (moved or never created): it cannot be called";
}

void ThrowArgumentTypeMismatch(const std::string& signature, int32_t index,
                               const std::string& expected, const AnyView& actual,
                               const std::string& refusal) {
  TILECORE_THROW(TypeError) << "Mismatched type on argument #" << index << " when calling `"
                            << signature << "`: expected `" << expected << "` but got `"
                            << actual.GetTypeKey() << "`" << refusal;
}

}  // namespace details

std::optional<Function> Function::GetGlobal(std::string_view name) {
  const RegistryEntry* e = GlobalRegistry::Global()->Find(name);
  if (e == nullptr) return std::nullopt;
  return e->func;
}

Function Function::GetGlobalRequired(std::string_view name) {
  std::optional<Function> f = GetGlobal(name);
  if (!f.has_value())
    TILECORE_THROW(ValueError) << "Global function `" << name << "` is not registered";
  return *f;
}

void Function::SetGlobal(std::string_view name, Function func, bool allow_override) {
  if (!func.defined())
    TILECORE_THROW(ValueError) << "Cannot register a null function as `" << name << "`";
  GlobalRegistry::Global()->Set(name, std::move(func), allow_override);
}

bool Function::RemoveGlobal(std::string_view name) {
  return GlobalRegistry::Global()->Remove(name);
}

std::vector<String> Function::ListGlobalNames() { return GlobalRegistry::Global()->ListNames(); }

void GlobalFunctionRegistration::Register(Function f) {
  func_ = f;
  try {
    Function::SetGlobal(name_, std::move(f), override_);
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(pending_errors_mutex);
    PendingErrors().push_back(std::string(e.message()));
  }
}

GlobalFunctionRegistration& GlobalFunctionRegistration::release_gil() {
  if (func_.defined())
    const_cast<FunctionObj*>(func_.get())->cell.flags |= kTCFFIFunctionReleaseGIL;
  return *this;
}

std::vector<std::string> TakePendingRegistrationErrors() {
  std::lock_guard<std::mutex> lock(pending_errors_mutex);
  std::vector<std::string> out;
  out.swap(PendingErrors());
  return out;
}

}  // namespace ffi
}  // namespace tilecore

using namespace tilecore::ffi;  // NOLINT(*)

int TCFFIFunctionCreate(void* self, TCFFISafeCallType safe_call, void (*deleter)(void* self),
                        TCFFIObjectHandle* out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  *out = details::ObjectUnsafe::MoveToHandle(make_object<CFunctionObj>(self, safe_call, deleter));
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFIFunctionCall(TCFFIObjectHandle func, const TCFFIAny* args, int32_t num_args,
                      TCFFIAny* result) {
  const auto* cell = reinterpret_cast<const TCFFIFunctionCell*>(reinterpret_cast<char*>(func) +
                                                                sizeof(TCFFIObject));
  return cell->safe_call(func, args, num_args, result);
}

int TCFFIFunctionSetGlobal(const TCFFIByteArray* name, TCFFIObjectHandle func, int allow_override) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  if (func == nullptr || func->type_index != kTCFFIFunction) {
    TILECORE_THROW(TypeError) << "TCFFIFunctionSetGlobal: `"
                              << std::string_view(name->data, name->size)
                              << "` must be given a Function";
  }
  Function::SetGlobal(std::string_view(name->data, name->size),
                      Function(details::ObjectUnsafe::CopyFromHandle(func)), allow_override != 0);
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFIFunctionGetGlobal(const TCFFIByteArray* name, TCFFIObjectHandle* out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  std::optional<Function> f = Function::GetGlobal(std::string_view(name->data, name->size));
  *out = f.has_value()
             ? details::ObjectUnsafe::MoveToHandle(ObjectPtr<Object>(ObjectRefUnsafe::GetPtr(*f)))
             : nullptr;
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFIFunctionRemoveGlobal(const TCFFIByteArray* name, int32_t* out_removed) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  *out_removed = Function::RemoveGlobal(std::string_view(name->data, name->size)) ? 1 : 0;
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFIStringFromByteArray(const TCFFIByteArray* str, TCFFIAny* out) {
  TILECORE_FFI_SAFE_CALL_BEGIN();
  details::MakeOwnedString(std::string_view(str->data, str->size), out);
  TILECORE_FFI_SAFE_CALL_END();
}

int TCFFIBytesFromByteArray(const TCFFIByteArray* bytes, TCFFIAny* out) {
  TCFFIAny view;
  view.type_index = kTCFFIByteArrayPtr;
  view.zero_padding = 0;
  view.v_ptr = const_cast<TCFFIByteArray*>(bytes);
  return TCFFIAnyViewToOwnedAny(&view, out);
}

TILECORE_REGISTER_GLOBAL("ffi.ListGlobalFunctionNames").set_body_typed([]() {
  Array<String> names;
  for (const String& n : Function::ListGlobalNames()) names.push_back(n);
  return names;
});

TILECORE_REGISTER_GLOBAL("ffi.RemoveGlobalFunction").set_body_typed([](String name) {
  return Function::RemoveGlobal(name.view());
});
