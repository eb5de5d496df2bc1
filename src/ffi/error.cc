/*
 * src/ffi/error.cc — error objects, the thread-local raised error, and backtraces.
 */
#include "tilecore/ffi/error.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <vector>

#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {

ErrorObj::ErrorObj(std::string kind, std::string message, std::string backtrace)
    : kind_storage(std::move(kind)),
      message_storage(std::move(message)),
      backtrace_storage(std::move(backtrace)) {
  cell.kind = TCFFIByteArray{kind_storage.data(), kind_storage.size()};
  cell.message = TCFFIByteArray{message_storage.data(), message_storage.size()};
  cell.backtrace = TCFFIByteArray{backtrace_storage.data(), backtrace_storage.size()};
  cell.cause = nullptr;
}

ErrorObj::~ErrorObj() {
  if (cell.cause) details::DecRef(cell.cause);
}

Error::Error(std::string kind, std::string message, std::string backtrace)
    : ObjectRef(make_object<ErrorObj>(std::move(kind), std::move(message), std::move(backtrace))) {}

Error::Error(ObjectPtr<Object> error_obj) : ObjectRef(std::move(error_obj)) {}

const char* Error::what() const noexcept {
  if (what_.empty()) {
    what_ = std::string(kind()) + ": " + std::string(message());
  }
  return what_.c_str();
}

namespace {
bool BacktraceEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("TILECORE_BACKTRACE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

std::string Demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

thread_local ObjectPtr<Object> raised_error;
}  // namespace

namespace {
// Frames outside tilecore's C++ (the interpreter, libc start-up, a test runner's
// main) end the backtrace: the caller's own traceback already shows them.
bool IsForeignFrame(const std::string& name) {
  return name.rfind("Py", 0) == 0 || name.rfind("_Py", 0) == 0 || name.rfind("_start", 0) == 0 ||
         name.rfind("__libc_start", 0) == 0 || name == "main";
}
}  // namespace

std::string CaptureBacktrace(int skip_frames) {
  if (!BacktraceEnabled()) return "";
  void* frames[48];
  int n = ::backtrace(frames, 48);
  std::vector<std::string> lines;  // innermost first
  for (int i = skip_frames; i < n; ++i) {
    Dl_info info;
    if (dladdr(frames[i], &info) && info.dli_sname != nullptr) {
      std::string name = Demangle(info.dli_sname);
      if (IsForeignFrame(name)) break;
      // Frames of the error machinery itself say nothing to the user.
      if (name.rfind("tilecore::ffi::details::ErrorBuilder", 0) == 0) continue;
      lines.push_back("  " + name);
    } else if (info.dli_fname != nullptr) {
      const char* base = std::strrchr(info.dli_fname, '/');
      std::ostringstream os;
      os << "  " << (base ? base + 1 : info.dli_fname) << "+0x" << std::hex
         << (reinterpret_cast<uintptr_t>(frames[i]) - reinterpret_cast<uintptr_t>(info.dli_fbase));
      lines.push_back(os.str());
    }
  }
  // Outermost first, innermost last, as Python prints tracebacks.
  std::string out;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) out += *it + "\n";
  return out;
}

namespace details {

ErrorBuilder::~ErrorBuilder() noexcept(false) {
  throw Error(kind_, stream_.str(), CaptureBacktrace(2));
}

int SetRaisedFromCurrentException() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    raised_error = ObjectRefUnsafe::GetPtr(e);
  } catch (const std::bad_alloc&) {
    raised_error = ObjectRefUnsafe::GetPtr(Error("MemoryError", "out of memory", ""));
  } catch (const std::exception& e) {
    raised_error = ObjectRefUnsafe::GetPtr(Error("RuntimeError", e.what(), ""));
  } catch (...) {
    raised_error = ObjectRefUnsafe::GetPtr(Error("RuntimeError", "unknown C++ exception", ""));
  }
  return -1;
}

void ThrowRaisedError() {
  ObjectPtr<Object> err = std::move(raised_error);
  if (!err) throw Error("InternalError", "a call failed without raising an error", "");
  throw Error(std::move(err));
}

}  // namespace details
}  // namespace ffi
}  // namespace tilecore

using namespace tilecore::ffi;  // NOLINT(*)

int TCFFIErrorCreate(const TCFFIByteArray* kind, const TCFFIByteArray* message,
                     const TCFFIByteArray* backtrace, TCFFIObjectHandle cause,
                     TCFFIObjectHandle* out) {
  try {
    auto obj = make_object<ErrorObj>(
        std::string(kind->data, kind->size), std::string(message->data, message->size),
        backtrace ? std::string(backtrace->data, backtrace->size) : std::string());
    if (cause) {
      details::IncRef(cause);
      obj->cell.cause = cause;
    }
    *out = details::ObjectUnsafe::MoveToHandle(std::move(obj));
    return 0;
  } catch (...) {
    return details::SetRaisedFromCurrentException();
  }
}

void TCFFIErrorSetRaised(TCFFIObjectHandle error) {
  raised_error = details::ObjectUnsafe::CopyFromHandle(error);
}

void TCFFIErrorSetRaisedFromCStr(const char* kind, const char* message) {
  raised_error = ObjectRefUnsafe::GetPtr(Error(kind, message, CaptureBacktrace(1)));
}

void TCFFIErrorMoveFromRaised(TCFFIObjectHandle* out) {
  *out = details::ObjectUnsafe::MoveToHandle(std::move(raised_error));
}
