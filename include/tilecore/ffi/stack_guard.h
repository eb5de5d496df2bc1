/*
 * include/tilecore/ffi/stack_guard.h — a guard for recursive walks over user-built trees.
 *
 * Recursive visitors (IR visitors and mutators, the analyzer, the printer) use one C stack
 * frame per level of the tree they walk, and a tree may be as deep as its builder made it.
 * A StackGuard at the top of each recursive step counts the depth and raises ValueError
 * naming it when the thread's C stack is nearly used up, instead of letting the process
 * die with a stack overflow:
 *
 *   PrimExpr VisitExpr(const PrimExpr& e) {
 *     ffi::StackGuard guard("IRMutator");
 *     ...
 *   }
 */
#ifndef TILECORE_FFI_STACK_GUARD_H_
#define TILECORE_FFI_STACK_GUARD_H_

#include <cstdint>

namespace tilecore {
namespace ffi {

/*! \brief True when less than `reserve` bytes of this thread's C stack are left (false
 * when the thread's stack bounds are unknown). Shared by StackGuard and the Python
 * bridge's callback entry, which refuses Python -> C++ -> Python recursion in time. */
bool CStackBelow(uintptr_t reserve);

class StackGuard {
 public:
  /*! \brief `what` names the walk in the error ("IRMutator", "ScriptPrinter", ...). */
  explicit StackGuard(const char* what) : StackGuard(what, Depth()) {}
  /*! \brief Counting in `depth` instead of the thread's counter: a walker's own (a walk
   * within a walk checks the C stack as often; the thread's counter costs a call to reach
   * in a shared library, and a walker takes a guard at every node). */
  StackGuard(const char* what, int64_t& depth) : depth_(depth) {
    if (++depth_ % kCheckEvery == 0 || depth_ > kMaxDepth) Check(what, depth_);
  }
  ~StackGuard() { --depth_; }
  StackGuard(const StackGuard&) = delete;
  StackGuard& operator=(const StackGuard&) = delete;

  /*! \brief Nesting depth of guarded steps on this thread. */
  static int64_t& Depth() {
    thread_local int64_t depth = 0;
    return depth;
  }

 private:
  static constexpr int64_t kCheckEvery = 16;
  /*! \brief Depths beyond this are checked on every step. */
  static constexpr int64_t kMaxDepth = 1 << 20;
  /*! \brief Raises ValueError if less than the reserve is left on this thread's C stack. */
  static void Check(const char* what, int64_t& depth);
  int64_t& depth_;
};

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_STACK_GUARD_H_
