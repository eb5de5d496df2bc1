/*
 * include/tilecore/ffi/function.h — Function (the PackedFunc), typed wrappers and the
 * global registry.
 *
 * A Function is an object whose cell holds a C function pointer with the ABI's
 * calling convention. C++ lambdas become Functions in two ways:
 *
 *   Function::FromPacked([](PackedArgs args, Any* rv) { *rv = args[0].cast<int>() + 1; });
 *   Function::FromTyped([](int64_t a, int64_t b) { return a + b; }, "myadd");
 *
 * The typed form checks each argument; a mismatch raises TypeError naming the
 * function, its signature, the argument index and the expected and actual types.
 * An object-typed parameter refuses None, in both forms (None converts to no object; see
 * NoneMeansAbsent in any.h); a parameter that accepts None is std::optional<T>.
 *
 * Registration (at static-initialisation time, usually at the bottom of the file
 * that implements the function):
 *
 *   TILECORE_REGISTER_GLOBAL("testing.echo").set_body_typed([](Any x) { return x; });
 */
#ifndef TILECORE_FFI_FUNCTION_H_
#define TILECORE_FFI_FUNCTION_H_

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tilecore/ffi/any.h"

namespace tilecore {
namespace ffi {

namespace details {
/*! \brief `refusal`: which element of a container argument was refused (RefusalText). */
[[noreturn]] void ThrowArgumentTypeMismatch(const std::string& signature, int32_t index,
                                            const std::string& expected, const AnyView& actual,
                                            const std::string& refusal = "");
}  // namespace details

/*!
 * \brief One argument of a packed call: a view that knows its position and the called
 * function's name, so that `args[i].cast<T>()` (or a conversion to T) that fails raises
 * TypeError "Mismatched type on argument #i when calling `name`: expected `T` but got `U`".
 * This holds for None given for an object type, which converts to no object.
 */
class PackedArg : public AnyView {
 public:
  PackedArg(const AnyView& v, int32_t index, const char* function)
      : AnyView(v), index_(index), function_(function) {}
  template <typename T>
  T cast() const {
    std::optional<T> r = try_cast<T>();
    if (!r.has_value()) {
      details::ThrowArgumentTypeMismatch(function_ != nullptr ? function_ : "<anonymous>", index_,
                                         TypeTraitsNoCR<T>::TypeStr(), *this,
                                         details::RefusalText(details::FirstRefused<T>(raw())));
    }
    return *std::move(r);
  }
  template <typename T>
  operator T() const {  // NOLINT(*)
    return cast<T>();
  }

 private:
  int32_t index_;
  const char* function_;
};

/*! \brief The arguments of a call: a borrowed array of views, and the called function's name. */
class PackedArgs {
 public:
  PackedArgs(const AnyView* data, int32_t size, const char* function = nullptr)
      : data_(data), size_(size), function_(function) {}
  int32_t size() const { return size_; }
  PackedArg operator[](int32_t i) const { return PackedArg(data_[i], i, function_); }
  const AnyView* data() const { return data_; }
  /*! \brief The called function's name (for messages), or nullptr. */
  const char* function() const { return function_; }
  /*! \brief The arguments from `begin` on, as the arguments of another call (unnamed). */
  PackedArgs Slice(int32_t begin) const {
    return PackedArgs(data_ + begin, begin < size_ ? size_ - begin : 0);
  }

 private:
  const AnyView* data_;
  int32_t size_;
  const char* function_;
};

/*! \brief The object behind a Function. Subclasses append their callable. */
class FunctionObj : public Object {
 public:
  TCFFIFunctionCell cell{};
  TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO("ffi.Function", FunctionObj, Object, kTCFFIFunction);
};

namespace details {
/*! \brief Raises the current C++ exception into thread-local storage; returns -1. */
int SetRaisedFromCurrentException() noexcept;
/*! \brief Throws the error waiting in thread-local storage as a C++ Error. */
[[noreturn]] void ThrowRaisedError();

template <typename TCallable>
class PackedFunctionObj : public FunctionObj {
 public:
  explicit PackedFunctionObj(TCallable callable) : callable_(std::move(callable)) {
    cell.safe_call = SafeCall;
  }
  static int SafeCall(void* self, const TCFFIAny* args, int32_t num_args, TCFFIAny* result) {
    // The caller initialised `result` to None (the ABI's promise), so the body writes
    // straight into it; on failure whatever it wrote is released.
    Any* rv = reinterpret_cast<Any*>(result);
    try {
      auto* obj = static_cast<PackedFunctionObj*>(self);
      obj->callable_(PackedArgs(reinterpret_cast<const AnyView*>(args), num_args), rv);
      return 0;
    } catch (...) {
      rv->reset();
      return SetRaisedFromCurrentException();
    }
  }

 private:
  TCallable callable_;
};

// Signature introspection for typed wrappers.
template <typename T>
struct FunctionSignature : FunctionSignature<decltype(&T::operator())> {};
template <typename C, typename R, typename... Args>
struct FunctionSignature<R (C::*)(Args...) const> {
  using Return = R;
  using ArgsTuple = std::tuple<Args...>;
  static constexpr size_t kNumArgs = sizeof...(Args);
};
template <typename C, typename R, typename... Args>
struct FunctionSignature<R (C::*)(Args...)> : FunctionSignature<R (C::*)(Args...) const> {};
template <typename R, typename... Args>
struct FunctionSignature<R (*)(Args...)> {
  using Return = R;
  using ArgsTuple = std::tuple<Args...>;
  static constexpr size_t kNumArgs = sizeof...(Args);
};
template <typename R, typename... Args>
struct FunctionSignature<R(Args...)> : FunctionSignature<R (*)(Args...)> {};

template <typename T>
std::string TypeStrOf() {
  if constexpr (std::is_void_v<T>) {
    return "None";
  } else {
    return TypeTraitsNoCR<T>::TypeStr();
  }
}

template <typename Sig, size_t... I>
std::string SignatureString(const std::string& name, std::index_sequence<I...>) {
  std::string s = name + "(";
  ((s += (I == 0 ? "" : ", ") + std::to_string(I) + ": " +
         TypeStrOf<std::tuple_element_t<I, typename Sig::ArgsTuple>>()),
   ...);
  return s + ") -> " + TypeStrOf<typename Sig::Return>();
}

[[noreturn]] void ThrowCallOfEmptyFunction();
[[noreturn]] void ThrowArgumentCountMismatch(const std::string& signature, int32_t expected,
                                             int32_t given);

template <typename Arg>
auto UnpackArg(const PackedArgs& args, int32_t i, const std::string* sig_name,
               std::string (*sig)(const std::string&)) {
  using T = std::remove_const_t<std::remove_reference_t<Arg>>;
  // An object-typed parameter never receives None (or an emptied handle): the conversion
  // refuses it (see NoneMeansAbsent); a body that accepts None takes std::optional<T>.
  const AnyView& a = args.data()[i];
  std::optional<T> v = TypeTraits<T>::TryCastFromAnyView(a.raw());
  if (!v.has_value()) {
    ThrowArgumentTypeMismatch(sig(*sig_name), i, TypeTraits<T>::TypeStr(), a,
                              RefusalText(FirstRefused<T>(a.raw())));
  }
  return *std::move(v);
}

template <typename F, typename Sig, size_t... I>
void CallTyped(const F& f, const std::string* name, const PackedArgs& args, Any* rv,
               std::index_sequence<I...>) {
  auto sig = +[](const std::string& n) {
    return SignatureString<Sig>(n, std::make_index_sequence<Sig::kNumArgs>());
  };
  if (args.size() != static_cast<int32_t>(Sig::kNumArgs)) {
    ThrowArgumentCountMismatch(sig(*name), Sig::kNumArgs, args.size());
  }
  if constexpr (std::is_void_v<typename Sig::Return>) {
    f(UnpackArg<std::tuple_element_t<I, typename Sig::ArgsTuple>>(args, I, name, sig)...);
  } else {
    *rv =
        Any(f(UnpackArg<std::tuple_element_t<I, typename Sig::ArgsTuple>>(args, I, name, sig)...));
  }
}
}  // namespace details

/*!
 * \brief A callable object: the PackedFunc. Never null when obtained from a registry
 * lookup that succeeded; may be null when default-constructed.
 */
class Function : public ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Function, ObjectRef, FunctionObj);

  /*! \brief Wraps `void(PackedArgs, Any*)`. */
  template <typename TCallable>
  static Function FromPacked(TCallable callable) {
    return Function(make_object<details::PackedFunctionObj<TCallable>>(std::move(callable)));
  }

  /*! \brief Wraps a function with typed parameters; `name` appears in argument errors. */
  template <typename TCallable>
  static Function FromTyped(TCallable callable, std::string name = "<anonymous>") {
    using Sig = details::FunctionSignature<std::decay_t<TCallable>>;
    return FromPacked([f = std::move(callable), name = std::move(name)](PackedArgs args, Any* rv) {
      details::CallTyped<TCallable, Sig>(f, &name, args, rv,
                                         std::make_index_sequence<Sig::kNumArgs>());
    });
  }

  /*! \brief Calls with already-packed arguments. */
  Any CallPacked(PackedArgs args) const {
    TCFFIAny result;
    details::SetNone(&result);
    const FunctionObj* f = get();
    if (f == nullptr) details::ThrowCallOfEmptyFunction();
    if (f->cell.safe_call(const_cast<FunctionObj*>(f),
                          reinterpret_cast<const TCFFIAny*>(args.data()), args.size(),
                          &result) != 0) {
      details::ThrowRaisedError();
    }
    return Any::MoveFromRaw(&result);
  }

  template <typename... Args>
  Any operator()(Args&&... args) const {
    if constexpr (sizeof...(Args) == 0) {
      return CallPacked(PackedArgs(nullptr, 0));
    } else {
      AnyView views[] = {AnyView(std::forward<Args>(args))...};
      return CallPacked(PackedArgs(views, sizeof...(Args)));
    }
  }

  /*! \brief Looks up a global function; nullopt if absent. */
  static std::optional<Function> GetGlobal(std::string_view name);
  /*! \brief Looks up a global function; ValueError naming it if absent. */
  static Function GetGlobalRequired(std::string_view name);
  /*! \brief Registers; ValueError if taken and !allow_override. */
  static void SetGlobal(std::string_view name, Function func, bool allow_override = false);
  static bool RemoveGlobal(std::string_view name);
  static std::vector<String> ListGlobalNames();
};

/*!
 * \brief The builder returned by TILECORE_REGISTER_GLOBAL. A registration that
 * fails at static-initialisation time cannot throw: it is recorded and reported by
 * the library loader (ffi.LoadLibrary) or at the next registry access.
 */
class GlobalFunctionRegistration {
 public:
  explicit GlobalFunctionRegistration(const char* name) : name_(name) {}
  GlobalFunctionRegistration& set_override(bool allow = true) {
    override_ = allow;
    return *this;
  }
  /*! \brief A packed body; its arguments carry this function's name for conversion errors. */
  template <typename TCallable>
  GlobalFunctionRegistration& set_body(TCallable callable) {
    Register(
        Function::FromPacked([f = std::move(callable), name = name_](PackedArgs args, Any* rv) {
          f(PackedArgs(args.data(), args.size(), name.c_str()), rv);
        }));
    return *this;
  }
  template <typename TCallable>
  GlobalFunctionRegistration& set_body_typed(TCallable callable) {
    Register(Function::FromTyped(std::move(callable), name_));
    return *this;
  }
  /*!
   * \brief Marks the function as safe to run without the Python GIL.
   * **IMPORTANT**: a function that blocks while a Python callback runs on another
   * thread (e.g. it joins a worker thread that calls back) must release the GIL,
   * or the callback waits for the GIL forever.
   */
  GlobalFunctionRegistration& release_gil();

 private:
  void Register(Function f);
  std::string name_;
  bool override_{false};
  Function func_;
};

/*! \brief Errors of registrations done at static-initialisation time, then cleared. */
std::vector<std::string> TakePendingRegistrationErrors();

#define TILECORE_FFI_STR_CONCAT_(a, b) a##b
#define TILECORE_FFI_STR_CONCAT(a, b) TILECORE_FFI_STR_CONCAT_(a, b)
/*! \brief Registers a global function at static-initialisation time. */
#define TILECORE_REGISTER_GLOBAL(Name)                                                         \
  [[maybe_unused]] static ::tilecore::ffi::GlobalFunctionRegistration TILECORE_FFI_STR_CONCAT( \
      __tilecore_registration_, __COUNTER__) = ::tilecore::ffi::GlobalFunctionRegistration(Name)

template <>
struct TypeTraits<Function> : public ObjectRefTypeTraitsBase<Function> {
  static std::string TypeStr() { return "Function"; }
};

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_FUNCTION_H_
