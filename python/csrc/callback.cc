/*
 * python/csrc/callback.cc — Python callables as Functions that C++ calls back.
 *
 * FunctionFromCallable wraps a callable with TCFFIFunctionCreate. When C++ calls it, the
 * trampoline takes the GIL (PyGILState_Ensure, so any C++ thread may call it, not only
 * the one whose call led here), converts the borrowed arguments to Python, calls the
 * callable with vectorcall and converts the result to an owned Any. A Python exception
 * becomes a TCFFIError whose cause is the exception object itself (error.cc), so the
 * Python caller on the other side gets the very same exception back.
 */
#include <cstdint>
#include <memory>

#include "internal.h"
#include "tilecore/ffi/stack_guard.h"

namespace tilecore_py {

std::atomic<int> g_num_move_frames{0};

MoveFrame*& CurrentMoveFrame() {
  thread_local MoveFrame* frame = nullptr;
  return frame;
}

namespace {

constexpr int kStackArgs = 8;

// Python -> C++ -> Python recursion uses C stack on every round trip, which Python's own
// recursion limit does not see. A callback refuses to start (RecursionError) when less
// than kStackReserve bytes of this thread's C stack are left.
constexpr uintptr_t kStackReserve = 256 * 1024;

bool CStackNearlyFull() { return tilecore::ffi::CStackBelow(kStackReserve); }

int CallPython(PyObject* callable, const TCFFIAny* args, int32_t num_args, TCFFIAny* result) {
  // A caller that `_move()`d arguments published them; if this callback received that
  // very array it is the direct callee, and takes those references over (an rvalue).
  MoveFrame* move =
      g_num_move_frames.load(std::memory_order_relaxed) != 0 ? CurrentMoveFrame() : nullptr;
  if (move != nullptr) {
    CurrentMoveFrame() = nullptr;  // nested calls start clean
    if (move->args != args) move = nullptr;
  }
  PyObject* stack_args[kStackArgs];
  std::unique_ptr<PyObject*[]> heap_args;
  PyObject** py_args = stack_args;
  if (num_args > kStackArgs) {
    heap_args = std::make_unique<PyObject*[]>(num_args);
    py_args = heap_args.get();
  }
  int32_t made = 0;
  for (; made < num_args; ++made) {
    TCFFIAny arg = args[made];
    TCFFIObject* stolen = move != nullptr ? move->frame->TakeMoved(made) : nullptr;
    PyObject* value = stolen != nullptr ? AnyToPy(&arg, true) : AnyToPy(&arg, false);
    if (value == nullptr) break;
    py_args[made] = value;
  }
  PyObject* ret = nullptr;
  if (made == num_args) {
    if (CStackNearlyFull()) {
      PyErr_SetString(PyExc_RecursionError,
                      "maximum recursion depth exceeded: the C stack is nearly full "
                      "(Python -> tilecore -> Python calls nested too deeply)");
    } else if (Py_EnterRecursiveCall(" while calling a Python callback from tilecore") == 0) {
      ret = PyObject_Vectorcall(callable, py_args, static_cast<size_t>(num_args), nullptr);
      Py_LeaveRecursiveCall();
    }
  }
  for (int32_t i = 0; i < made; ++i) Py_DECREF(py_args[i]);
  if (ret == nullptr) return SetFFIErrorFromPyErr();
  if (ret == Py_None) {  // the common hook result; *result is None already
    Py_DECREF(ret);
    return 0;
  }
  int rc = PyToOwnedAny(ret, result);
  Py_DECREF(ret);
  return rc == 0 ? 0 : SetFFIErrorFromPyErr();
}

int CallbackSafeCall(void* self, const TCFFIAny* args, int32_t num_args, TCFFIAny* result) {
  if (!PythonIsAlive()) {
    TCFFIErrorSetRaisedFromCStr("RuntimeError",
                                "a Python callback was called after the interpreter shut down");
    return -1;
  }
  PyGILState_STATE state = PyGILState_Ensure();
  int rc = CallPython(static_cast<PyObject*>(self), args, num_args, result);
  PyGILState_Release(state);
  return rc;
}

void CallbackDeleter(void* self) {
  PyObject* callable = static_cast<PyObject*>(self);
  if (PyGILState_Check()) {
    Py_DECREF(callable);
    return;
  }
  // The last owner may be a C++ thread or a static destructor after Python is gone.
  if (!PythonIsAlive()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  Py_DECREF(callable);
  PyGILState_Release(state);
}

}  // namespace

TCFFIObject* FunctionFromCallable(PyObject* callable) {
  TCFFIObject* out = nullptr;
  Py_INCREF(callable);  // owned by the Function; released by CallbackDeleter
  if (TCFFIFunctionCreate(callable, CallbackSafeCall, CallbackDeleter, &out) != 0) {
    Py_DECREF(callable);
    RaiseFromFFIError(-1, nullptr);
    return nullptr;
  }
  return out;
}

}  // namespace tilecore_py
