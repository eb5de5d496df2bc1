/*
 * tests/cpp/ffi/small_stack.h — runs a test body on a thread with a small C stack.
 *
 * A walk that recursed once per level of a 100000-deep graph would need far more than
 * 256 KiB of stack, so a body that passes here proves the walk (and the destructors of
 * what it built) keeps its place on the heap instead.
 */
#ifndef TILECORE_TESTS_CPP_FFI_SMALL_STACK_H_
#define TILECORE_TESTS_CPP_FFI_SMALL_STACK_H_

#include <pthread.h>

#include <exception>
#include <functional>
#include <stdexcept>

namespace tilecore {
namespace testing {

inline constexpr size_t kSmallStackBytes = 256 << 10;

/*! \brief Runs `body` on a new thread with a 256 KiB stack; rethrows what it throws. */
inline void RunOnSmallStack(const std::function<void()>& body) {
  struct Context {
    const std::function<void()>* body;
    std::exception_ptr error;
  } context{&body, nullptr};
  auto entry = [](void* arg) -> void* {
    auto* c = static_cast<Context*>(arg);
    try {
      (*c->body)();
    } catch (...) {
      c->error = std::current_exception();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kSmallStackBytes);
  pthread_t thread;
  int rc = pthread_create(&thread, &attr, entry, &context);
  pthread_attr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("pthread_create failed");
  pthread_join(thread, nullptr);
  if (context.error) std::rethrow_exception(context.error);
}

}  // namespace testing
}  // namespace tilecore
#endif  // TILECORE_TESTS_CPP_FFI_SMALL_STACK_H_
