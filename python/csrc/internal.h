/*
 * python/csrc/internal.h — declarations shared by the files of tilecore._ffi_core.
 *
 * The extension is the only bridge between Python and libtilecore. It talks to the
 * library through the C ABI (tilecore/ffi/c_api.h) and a handful of global
 * functions the library registers ("ffi.Array", "ffi.Repr", ...), nothing else.
 *
 * Files, one concept each:
 *   module.cc        the module object, its functions, start-up
 *   object_type.cc   Object: the Python face of a TCFFIObject*, class registry, reflection
 *   function_type.cc Function: vectorcall into a TCFFIFunctionCell
 *   convert.cc       Python value -> TCFFIAny (call arguments) and back
 *   callback.cc      Python callable -> Function, called back from C++
 *   error.cc         TCFFIError <-> Python exception
 *   ndarray_type.cc  NDArray and DLPack
 *   device_type.cc   Device (DLDevice)
 *   dtype_type.cc    DataType (DLDataType)
 *   opaque.cc        kTCFFIOpaquePyObject: a Python object carried by the FFI
 */
#ifndef TILECORE_PYTHON_CSRC_INTERNAL_H_
#define TILECORE_PYTHON_CSRC_INTERNAL_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "tilecore/ffi/c_api.h"

namespace tilecore_py {

/* ---------------------------------------------------------------------------
 * Python object layouts
 * ------------------------------------------------------------------------- */
/*! \brief Every tilecore object seen from Python: one strong reference to `handle`
 * (NULL once the reference was handed over with `_move()`). */
struct PyTCObject {
  PyObject_HEAD TCFFIObject* handle;
};

/*! \brief A Function: the object plus the vectorcall entry point (PEP 590). */
struct PyTCFunction {
  PyTCObject base;
  vectorcallfunc vectorcall;
  /*! \brief The registry name when known (for error messages); may be NULL. */
  PyObject* name;
};

/*! \brief The result of `obj._move()`: owns the reference taken from `obj`; passing it
 * as an argument hands that reference to the callee. */
struct PyTCRValueRef {
  PyObject_HEAD TCFFIObject* handle;
};

struct PyTCDevice {
  PyObject_HEAD DLDevice device;
};

struct PyTCDataType {
  PyObject_HEAD DLDataType dtype;
};

extern PyTypeObject ObjectType;
extern PyTypeObject FunctionType;
extern PyTypeObject RValueRefType;
extern PyTypeObject NDArrayType;
extern PyTypeObject DeviceType;
extern PyTypeObject DataTypeType;

/*! \brief A METH_FASTCALL / METH_KEYWORDS implementation as the PyCFunction that
 * PyMethodDef stores (the cast through void(*)() is the documented idiom). */
template <typename F>
inline PyCFunction AsPyCFunction(F f) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f));
}

/*! \brief The cell that follows the header of every object. */
template <typename Cell>
inline Cell* CellOf(TCFFIObject* obj) {
  return reinterpret_cast<Cell*>(reinterpret_cast<char*>(obj) + sizeof(TCFFIObject));
}

/*! \brief Fast "is a tilecore Object" test: the exact hot types first, then the MRO walk. */
inline bool IsTCObject(PyObject* o) {
  PyTypeObject* t = Py_TYPE(o);
  // Registered Python classes (Array, Map, user kinds) derive directly from Object or
  // NDArray: one more comparison before walking the MRO.
  return t == &FunctionType || t == &ObjectType || t == &NDArrayType || t->tp_base == &ObjectType ||
         t->tp_base == &NDArrayType || PyType_IsSubtype(t, &ObjectType);
}

/* ---------------------------------------------------------------------------
 * Type set-up (each *_type.cc file)
 * ------------------------------------------------------------------------- */
int InitObjectType(PyObject* module);
int InitFunctionType(PyObject* module);
int InitNDArrayType(PyObject* module);
int InitDeviceType(PyObject* module);
int InitDataTypeType(PyObject* module);
int InitErrors(PyObject* module);

/* ---------------------------------------------------------------------------
 * object_type.cc
 * ------------------------------------------------------------------------- */
/*! \brief Wraps an object handle in the Python class registered for its type index
 * (or its nearest registered ancestor). Steals the reference when `owned`, else adds one.
 * Returns a new reference or NULL with an exception set (the reference is then released). */
PyObject* WrapObject(TCFFIObject* handle, bool owned);
/*! \brief Wraps a Function handle; `name` (may be NULL) is kept for error messages. */
PyObject* WrapFunction(TCFFIObject* handle, bool owned, PyObject* name);
/*! \brief The type key of an index, as a Python str ("<unknown>" when unregistered). */
PyObject* TypeKeyOf(int32_t type_index);
extern PyMethodDef kObjectModuleMethods[];

/* ---------------------------------------------------------------------------
 * convert.cc
 * ------------------------------------------------------------------------- */
/*!
 * \brief Storage for the arguments of one call: a small stack array of TCFFIAny and the
 * temporaries (objects created for list/dict/callable/array arguments) released after
 * the call. Only calls with more than kStackArgs arguments touch the heap.
 */
class ArgFrame {
 public:
  static constexpr int kStackArgs = 8;

  explicit ArgFrame(Py_ssize_t num_args) {
    if (num_args > kStackArgs) {
      Overflow* o = GetOverflow();
      o->any = std::make_unique<TCFFIAny[]>(num_args);
      o->temps = std::make_unique<TCFFIObject*[]>(num_args);
      o->bytes = std::make_unique<TCFFIByteArray[]>(num_args);
      any_ = o->any.get();
      temps_ = o->temps.get();
      bytes_ = o->bytes.get();
    } else {
      any_ = stack_any_;
      temps_ = stack_temps_;
      bytes_ = stack_bytes_;
    }
  }
  ~ArgFrame() {
    for (int i = 0; i < num_temps_; ++i) {
      if (temps_[i] != nullptr) TCFFIObjectDecRef(temps_[i]);
    }
  }
  ArgFrame(const ArgFrame&) = delete;
  ArgFrame& operator=(const ArgFrame&) = delete;

  TCFFIAny* args() { return any_; }
  /*! \brief Keeps `obj` (an owned reference) alive until the call returns. */
  void AddTemp(TCFFIObject* obj) { temps_[num_temps_++] = obj; }
  TCFFIByteArray* ByteSlot(int arg_index) { return &bytes_[arg_index]; }
  /*! \brief Records that argument `arg_index` is a moved reference kept as the last temp. */
  void AddMoved(int arg_index) { GetOverflow()->moved.emplace_back(arg_index, num_temps_ - 1); }
  bool has_moved() const { return overflow_ != nullptr && !overflow_->moved.empty(); }
  /*! \brief Hands the moved reference of an argument over to the caller (who now owns it),
   * or returns NULL if that argument was not moved (or was taken already). */
  TCFFIObject* TakeMoved(int arg_index) {
    if (overflow_ == nullptr) return nullptr;
    for (auto& [arg, temp] : overflow_->moved) {
      if (arg == arg_index && temps_[temp] != nullptr) {
        TCFFIObject* obj = temps_[temp];
        temps_[temp] = nullptr;
        return obj;
      }
    }
    return nullptr;
  }

 private:
  // What only long argument lists and moved references need; allocated on first use so
  // the common frame is three pointers, a counter and the stack arrays.
  struct Overflow {
    std::unique_ptr<TCFFIAny[]> any;
    std::unique_ptr<TCFFIObject*[]> temps;
    std::unique_ptr<TCFFIByteArray[]> bytes;
    std::vector<std::pair<int, int>> moved;  // (argument index, temp index)
  };
  Overflow* GetOverflow() {
    if (overflow_ == nullptr) overflow_ = std::make_unique<Overflow>();
    return overflow_.get();
  }

  TCFFIAny* any_;
  TCFFIObject** temps_;
  TCFFIByteArray* bytes_;
  int num_temps_ = 0;
  std::unique_ptr<Overflow> overflow_;
  TCFFIAny stack_any_[kStackArgs];
  TCFFIObject* stack_temps_[kStackArgs];
  TCFFIByteArray stack_bytes_[kStackArgs];
};

/*! \brief Converts argument `i` into frame.args()[i] (a borrowed view). 0 or -1 with a
 * Python error set. `fname` (may be NULL) names the function in error messages. */
int ConvertArg(PyObject* value, int i, ArgFrame& frame, PyObject* fname);
/*! \brief Converts a Python value into an owned Any. 0, or -1 with a Python error set. */
int PyToOwnedAny(PyObject* value, TCFFIAny* out);
/*! \brief Converts an Any to Python. An owned Any is consumed (also on failure). */
PyObject* AnyToPy(TCFFIAny* any, bool owned);
/*! \brief Converts a call result, returning an argument itself when the result is that
 * argument's object (so `echo(x) is x`). Consumes `result`. */
PyObject* ResultToPy(TCFFIAny* result, PyObject* const* py_args, Py_ssize_t num_args);

/* ---------------------------------------------------------------------------
 * function_type.cc
 * ------------------------------------------------------------------------- */
extern PyMethodDef kFunctionModuleMethods[];
/*! \brief Calls a Function handle with Python arguments (used by module helpers). */
PyObject* CallHandle(TCFFIObject* func, PyObject* const* args, Py_ssize_t nargs, PyObject* fname);
/*! \brief Calls a global function by name; raises if it is not registered. */
PyObject* CallGlobal(const char* name, PyObject* const* args, Py_ssize_t nargs);
/*! \brief A cached handle of a global function (borrowed, lives forever); NULL with a
 * Python error set if missing. */
TCFFIObject* GetCachedGlobal(const char* name, TCFFIObject** cache);

/* ---------------------------------------------------------------------------
 * callback.cc
 * ------------------------------------------------------------------------- */
/*! \brief Creates a Function that calls the Python callable. Owned handle or NULL + error. */
TCFFIObject* FunctionFromCallable(PyObject* callable);
/*!
 * \brief Published (thread-locally) while a call has `_move()`d arguments, so a Python
 * callback that is the direct callee (it receives this very args array) can take over
 * those references instead of adding new ones, as a C++ callee taking an rvalue would.
 */
struct MoveFrame {
  const TCFFIAny* args;
  ArgFrame* frame;
};
MoveFrame*& CurrentMoveFrame();
/*! \brief How many MoveFrames are published on all threads: callbacks skip the
 * thread-local lookup while it is zero (nearly always). */
extern std::atomic<int> g_num_move_frames;

/* ---------------------------------------------------------------------------
 * error.cc
 * ------------------------------------------------------------------------- */
/*! \brief Turns the thread's raised TCFFIError into a Python exception; returns NULL. */
PyObject* RaiseFromFFIError(int rc, PyObject* fname);
/*! \brief Turns the pending Python exception into a raised TCFFIError (the exception
 * object travels as the error's cause); returns -1. */
int SetFFIErrorFromPyErr();
/*! \brief The tilecore.error class registered for `kind` (borrowed), else `fallback`;
 * so errors the bridge itself raises are TilecoreErrors too. */
PyObject* ErrorClassForKind(const char* kind, PyObject* fallback);
extern PyMethodDef kErrorModuleMethods[];

/* ---------------------------------------------------------------------------
 * opaque.cc
 * ------------------------------------------------------------------------- */
/*! \brief A kTCFFIOpaquePyObject holding a new reference to `obj`. NULL + error on failure. */
TCFFIObject* MakeOpaquePyObject(PyObject* obj);
/*! \brief The Python object inside an opaque object made by this module, else NULL. */
PyObject* OpaquePyObjectGet(TCFFIObject* obj);
/*! \brief Whether Python can still be entered (false during and after finalisation). */
bool PythonIsAlive();

/* ---------------------------------------------------------------------------
 * ndarray_type.cc / device_type.cc / dtype_type.cc
 * ------------------------------------------------------------------------- */
/*! \brief An NDArray (owned handle) viewing the memory of an object with __dlpack__ or a
 * DLPack capsule, zero copy. NULL + error on failure. */
TCFFIObject* NDArrayFromDLPackObject(PyObject* obj);
/*! \brief Whether `t` is numpy.ndarray itself (not a subclass). */
bool IsNumpyArrayType(PyTypeObject* t);
/*! \brief An NDArray over a numpy array's memory through the buffer protocol (ndarray_buffer.cc).
 * NULL without an error when the buffer cannot be described exactly (take __dlpack__
 * then); NULL + error when the NDArray is refused. */
TCFFIObject* NDArrayFromBuffer(PyObject* obj);
/*! \brief A non-owning NDArray over a borrowed DLTensor (valid while the tensor is). */
TCFFIObject* NDArrayViewOfDLTensor(DLTensor* tensor);
extern PyMethodDef kNDArrayModuleMethods[];
PyObject* MakeDevice(DLDevice device);
PyObject* MakeDataType(DLDataType dtype);
/*! \brief Accepts a DataType, a str or anything whose str() is a dtype (numpy dtypes). */
int DataTypeFromPy(PyObject* obj, DLDataType* out);
/*! \brief Accepts a Device, a str ("cpu", "npu:1") or a (type, id) tuple. */
int DeviceFromPy(PyObject* obj, DLDevice* out);

}  // namespace tilecore_py

#endif  // TILECORE_PYTHON_CSRC_INTERNAL_H_
