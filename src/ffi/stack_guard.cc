// src/ffi/stack_guard.cc — StackGuard's check of the C stack left on this thread.
#include "tilecore/ffi/stack_guard.h"

#include <pthread.h>

#include "tilecore/ffi/error.h"

namespace tilecore {
namespace ffi {
namespace {
// Checks run every kCheckEvery levels, so the reserve must cover that many frames of the
// largest guarded step plus the unwinding that follows the error.
constexpr uintptr_t kStackReserve = 512 * 1024;

// (initial-exec: a load relative to the thread pointer, where the default model calls
// __tls_get_addr at every check; the object pool's thread-locals share the static TLS too)
__attribute__((tls_model("initial-exec"))) thread_local uintptr_t low = 0;
__attribute__((tls_model("initial-exec"))) thread_local bool known = false;

uintptr_t StackLow() {
  if (!known) {
    known = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) low = reinterpret_cast<uintptr_t>(addr);
      pthread_attr_destroy(&attr);
    }
  }
  return low;
}
}  // namespace

bool CStackBelow(uintptr_t reserve) {
  uintptr_t low = StackLow();
  char here;
  return low != 0 && reinterpret_cast<uintptr_t>(&here) < low + reserve;
}

void StackGuard::Check(const char* what, int64_t& counter) {
  if (CStackBelow(kStackReserve) || counter > kMaxDepth) {
    int64_t depth = counter;
    --counter;  // the destructor of the guard being constructed will not run
    TILECORE_THROW(ValueError) << what << ": the tree is nested too deeply (depth " << depth
                               << " when the C stack ran low); build it with less nesting";
  }
}

}  // namespace ffi
}  // namespace tilecore
