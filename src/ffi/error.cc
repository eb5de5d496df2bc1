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
#include <mutex>
#include <new>
#include <sstream>
#include <unordered_map>
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

namespace {
/*! \brief What a return address shows in a backtrace. */
struct FrameText {
  enum Kind : uint8_t { kLine, kForeign, kSkip } kind = kSkip;
  std::string line;
};

FrameText DescribeFrame(void* frame) {
  FrameText t;
  Dl_info info;
  if (dladdr(frame, &info) && info.dli_sname != nullptr) {
    std::string name = Demangle(info.dli_sname);
    if (IsForeignFrame(name)) {
      t.kind = FrameText::kForeign;
    } else if (name.rfind("tilecore::ffi::details::ErrorBuilder", 0) != 0) {
      // (frames of the error machinery itself say nothing to the user: skipped)
      t.kind = FrameText::kLine;
      t.line = "  " + name;
    }
  } else if (info.dli_fname != nullptr) {
    const char* base = std::strrchr(info.dli_fname, '/');
    std::ostringstream os;
    os << "  " << (base ? base + 1 : info.dli_fname) << "+0x" << std::hex
       << (reinterpret_cast<uintptr_t>(frame) - reinterpret_cast<uintptr_t>(info.dli_fbase));
    t.kind = FrameText::kLine;
    t.line = os.str();
  }
  return t;
}

// Each return address described once per process: the compiler raises and catches errors
// as it tries plans (a plan that does not fit L1), and looking up and demangling every
// frame of every one of them took a twentieth of a compile.
const FrameText& FrameTextOf(void* frame) {
  static std::mutex mu;
  static std::unordered_map<void*, FrameText>* texts = new std::unordered_map<void*, FrameText>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = texts->find(frame);
  if (it == texts->end()) it = texts->emplace(frame, DescribeFrame(frame)).first;
  return it->second;  // (entries are never erased: the reference stays valid)
}
}  // namespace

std::string CaptureBacktrace(int skip_frames) {
  if (!BacktraceEnabled()) return "";
  void* frames[48];
  int n = ::backtrace(frames, 48);
  std::vector<const std::string*> lines;  // innermost first
  for (int i = skip_frames; i < n; ++i) {
    const FrameText& t = FrameTextOf(frames[i]);
    if (t.kind == FrameText::kForeign) break;
    if (t.kind == FrameText::kLine) lines.push_back(&t.line);
  }
  // Outermost first, innermost last, as Python prints tracebacks.
  std::string out;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) out += **it + "\n";
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
