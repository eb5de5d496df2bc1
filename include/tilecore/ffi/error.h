/*
 * include/tilecore/ffi/error.h — errors: the Error object, the C++ exception that
 * carries it, and the throwing helpers.
 *
 * Inside C++ an error is a C++ exception (tilecore::ffi::Error). At the C ABI it
 * becomes an error object in thread-local storage and a non-zero return code; on
 * the other side it becomes an exception again (C++ or Python). Kinds follow
 * Python's names so the Python bridge can map them onto builtin exception types.
 *
 *   TILECORE_THROW(ValueError) << "node `" << name << "`: expected 4-D input, got " << nd;
 *   TILECORE_ICHECK(ptr != nullptr) << "internal: ...";   // a bug in tilecore, not the user's
 */
#ifndef TILECORE_FFI_ERROR_H_
#define TILECORE_FFI_ERROR_H_

#include <exception>
#include <sstream>
#include <string>
#include <string_view>

#include "tilecore/ffi/object.h"

namespace tilecore {
namespace ffi {

/*! \brief The error object; its cell is TCFFIErrorCell. */
class ErrorObj : public Object {
 public:
  TCFFIErrorCell cell{};
  std::string kind_storage;
  std::string message_storage;
  std::string backtrace_storage;

  ErrorObj(std::string kind, std::string message, std::string backtrace);
  ~ErrorObj();
  ErrorObj(const ErrorObj&) = delete;

  TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO("ffi.Error", ErrorObj, Object, kTCFFIError);
};

/*!
 * \brief A C++ exception carrying an error object.
 */
class Error : public std::exception, public ObjectRef {
 public:
  Error(std::string kind, std::string message, std::string backtrace);
  explicit Error(ObjectPtr<Object> error_obj);

  std::string_view kind() const { return get()->kind_storage; }
  std::string_view message() const { return get()->message_storage; }
  std::string_view backtrace() const { return get()->backtrace_storage; }
  /*! \brief "Kind: message", as Python prints it. */
  const char* what() const noexcept override;

  const ErrorObj* get() const { return static_cast<const ErrorObj*>(ObjectRef::get()); }

 private:
  mutable std::string what_;
};

/*! \brief The current C++ stack as text, innermost frame last; "" when disabled
 * (environment TILECORE_BACKTRACE=0). */
std::string CaptureBacktrace(int skip_frames = 1);

namespace details {
/*! \brief Accumulates a message and throws it when destroyed (end of the full expression). */
class ErrorBuilder {
 public:
  ErrorBuilder(const char* kind, const char* file, int line)
      : kind_(kind), file_(file), line_(line) {}
  [[noreturn]] ~ErrorBuilder() noexcept(false);
  template <typename T>
  ErrorBuilder& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  const char* kind_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};
}  // namespace details

/*! \brief Throws a user-facing error of the given kind (ValueError, TypeError, ...). */
#define TILECORE_THROW(Kind) ::tilecore::ffi::details::ErrorBuilder(#Kind, __FILE__, __LINE__)

/*! \brief Checks an internal invariant; failure is an InternalError (a bug in tilecore). */
#define TILECORE_ICHECK(cond)                                                 \
  if (__builtin_expect(!(cond), 0))                                           \
  ::tilecore::ffi::details::ErrorBuilder("InternalError", __FILE__, __LINE__) \
      << "Check failed: (" #cond ") at " << __FILE__ << ":" << __LINE__ << ": "

/*! \brief Checks a user-facing condition; failure is an error of the given kind. */
#define TILECORE_CHECK(cond, Kind) \
  if (__builtin_expect(!(cond), 0)) TILECORE_THROW(Kind)

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_ERROR_H_
