/*
 * python/csrc/function_type.cc — tilecore.Function: calling a TCFFIFunctionCell from Python.
 *
 * The call path is the reason this extension is hand-written. A call is:
 *   vectorcall (PEP 590, no argument tuple) -> each argument converted by an exact-type
 *   switch into a stack array of TCFFIAny -> one indirect call of the cell's safe_call ->
 *   the result converted back.
 * No heap allocation, dict lookup or PyErr_Occurred() happens on that path for scalar,
 * string and object arguments. The GIL stays held unless the function's flags ask for
 * it to be released (long-running C++ work), since dropping and re-taking it costs more
 * than most calls.
 */
#include "internal.h"

#include <structmember.h>

#include <climits>
#include <string>

namespace tilecore_py {

PyTypeObject FunctionType = {PyVarObject_HEAD_INIT(nullptr, 0)};

namespace {

// Calls with `_move()`d arguments publish a MoveFrame for the duration of the call (see
// callback.cc); kept out of line so the common path stays small.
int CallWithMoves(TCFFIFunctionCell* cell, TCFFIObject* h, ArgFrame& frame, int32_t nargs,
                  TCFFIAny* result) {
  MoveFrame move{frame.args(), &frame};
  MoveFrame* saved = CurrentMoveFrame();
  CurrentMoveFrame() = &move;
  g_num_move_frames.fetch_add(1, std::memory_order_relaxed);
  int rc;
  if (cell->flags & kTCFFIFunctionReleaseGIL) {
    Py_BEGIN_ALLOW_THREADS rc = cell->safe_call(h, frame.args(), nargs, result);
    Py_END_ALLOW_THREADS
  } else {
    rc = cell->safe_call(h, frame.args(), nargs, result);
  }
  g_num_move_frames.fetch_sub(1, std::memory_order_relaxed);
  CurrentMoveFrame() = saved;
  return rc;
}

PyObject* FunctionVectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                             PyObject* kwnames) {
  PyTCFunction* self = reinterpret_cast<PyTCFunction*>(callable);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    return PyErr_Format(PyExc_TypeError, "%S takes positional arguments only, got keyword '%U'",
                        callable, PyTuple_GET_ITEM(kwnames, 0));
  }
  TCFFIObject* h = self->base.handle;
  if (h == nullptr) {
    return PyErr_Format(PyExc_ValueError,
                        "cannot call an empty Function (its reference was moved)");
  }
  if (nargs > INT32_MAX) return PyErr_Format(PyExc_TypeError, "too many arguments");
  ArgFrame frame(nargs);
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (ConvertArg(args[i], static_cast<int>(i), frame, self->name) != 0) return nullptr;
  }
  TCFFIFunctionCell* cell = CellOf<TCFFIFunctionCell>(h);
  TCFFIAny result;
  result.type_index = kTCFFINone;
  result.zero_padding = 0;
  result.v_int64 = 0;
  int rc;
  if (frame.has_moved()) {
    rc = CallWithMoves(cell, h, frame, static_cast<int32_t>(nargs), &result);
  } else if (cell->flags & kTCFFIFunctionReleaseGIL) {
    Py_BEGIN_ALLOW_THREADS rc =
        cell->safe_call(h, frame.args(), static_cast<int32_t>(nargs), &result);
    Py_END_ALLOW_THREADS
  } else {
    rc = cell->safe_call(h, frame.args(), static_cast<int32_t>(nargs), &result);
  }
  if (rc != 0) return RaiseFromFFIError(rc, self->name);
  if (result.type_index == kTCFFINone) Py_RETURN_NONE;
  return ResultToPy(&result, args, nargs);
}

PyObject* FunctionNew(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  // Function(callable): the same as tilecore.convert(callable).
  PyObject* callable = nullptr;
  static const char* kwlist[] = {"callable", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Function", const_cast<char**>(kwlist),
                                   &callable)) {
    return nullptr;
  }
  if (Py_TYPE(callable) == &FunctionType) return Py_NewRef(callable);
  if (!PyCallable_Check(callable)) {
    return PyErr_Format(PyExc_TypeError, "Function() expects a callable, got '%s'",
                        Py_TYPE(callable)->tp_name);
  }
  TCFFIObject* h = FunctionFromCallable(callable);
  if (h == nullptr) return nullptr;
  return WrapFunction(h, true, nullptr);
}

void FunctionDealloc(PyObject* obj) {
  PyTCFunction* self = reinterpret_cast<PyTCFunction*>(obj);
  if (self->base.handle != nullptr) TCFFIObjectDecRef(self->base.handle);
  Py_XDECREF(self->name);
  PyObject_Free(obj);
}

PyObject* FunctionRepr(PyObject* obj) {
  PyTCFunction* self = reinterpret_cast<PyTCFunction*>(obj);
  if (self->name != nullptr) return PyUnicode_FromFormat("<tilecore.Function %U>", self->name);
  return PyUnicode_FromFormat("<tilecore.Function at %p>", static_cast<void*>(self->base.handle));
}

PyObject* FunctionGetName(PyObject* obj, void*) {
  PyObject* name = reinterpret_cast<PyTCFunction*>(obj)->name;
  return Py_NewRef(name != nullptr ? name : Py_None);
}

PyObject* FunctionGetReleasesGIL(PyObject* obj, void*) {
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(obj)->handle;
  if (h == nullptr) Py_RETURN_FALSE;
  return PyBool_FromLong((CellOf<TCFFIFunctionCell>(h)->flags & kTCFFIFunctionReleaseGIL) != 0);
}

PyGetSetDef kFunctionGetSet[] = {
    {"name", FunctionGetName, nullptr, "Registry name, when the Function came from one.", nullptr},
    {"releases_gil", FunctionGetReleasesGIL, nullptr,
     "Whether calls drop the GIL while the C++ body runs.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef kFunctionMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(PyTCFunction, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

/* ---------------------------------------------------------------------------
 * Module functions: the global registry
 * ------------------------------------------------------------------------- */
bool NameToByteArray(PyObject* name, TCFFIByteArray* out) {
  Py_ssize_t len = 0;
  const char* s = PyUnicode_AsUTF8AndSize(name, &len);
  if (s == nullptr) return false;
  *out = TCFFIByteArray{s, static_cast<size_t>(len)};
  return true;
}

PyObject* GetGlobalFunc(PyObject*, PyObject* name) {
  // _get_global_func(name) -> Function, or None when the name is not registered.
  if (!PyUnicode_Check(name)) {
    return PyErr_Format(PyExc_TypeError, "function name must be str, got '%s'",
                        Py_TYPE(name)->tp_name);
  }
  TCFFIByteArray key;
  if (!NameToByteArray(name, &key)) return nullptr;
  TCFFIObject* h = nullptr;
  if (TCFFIFunctionGetGlobal(&key, &h) != 0) return RaiseFromFFIError(-1, nullptr);
  if (h == nullptr) Py_RETURN_NONE;
  return WrapFunction(h, true, name);
}

PyObject* RegisterGlobalFunc(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  // _register_global_func(name, func_or_callable, override: bool) -> Function registered.
  if (nargs != 3 || !PyUnicode_Check(args[0])) {
    return PyErr_Format(PyExc_TypeError, "_register_global_func(name: str, func, override: bool)");
  }
  int allow_override = PyObject_IsTrue(args[2]);
  if (allow_override < 0) return nullptr;
  PyObject* func = args[1];
  PyObject* made = nullptr;
  if (Py_TYPE(func) != &FunctionType) {
    if (!PyCallable_Check(func)) {
      return PyErr_Format(PyExc_TypeError, "cannot register '%s' as a function: not callable",
                          Py_TYPE(func)->tp_name);
    }
    TCFFIObject* h = FunctionFromCallable(func);
    if (h == nullptr) return nullptr;
    made = WrapFunction(h, true, args[0]);
    if (made == nullptr) return nullptr;
    func = made;
  }
  TCFFIByteArray key;
  if (!NameToByteArray(args[0], &key)) {
    Py_XDECREF(made);
    return nullptr;
  }
  if (TCFFIFunctionSetGlobal(&key, reinterpret_cast<PyTCObject*>(func)->handle, allow_override) !=
      0) {
    Py_XDECREF(made);
    return RaiseFromFFIError(-1, nullptr);
  }
  return made != nullptr ? made : Py_NewRef(func);
}

PyObject* RemoveGlobalFunc(PyObject*, PyObject* name) {
  TCFFIByteArray key;
  if (!PyUnicode_Check(name) || !NameToByteArray(name, &key)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "function name must be str");
    return nullptr;
  }
  int32_t removed = 0;
  if (TCFFIFunctionRemoveGlobal(&key, &removed) != 0) return RaiseFromFFIError(-1, nullptr);
  return PyBool_FromLong(removed);
}

PyObject* ConvertToFunction(PyObject*, PyObject* callable) {
  if (Py_TYPE(callable) == &FunctionType) return Py_NewRef(callable);
  if (!PyCallable_Check(callable)) {
    return PyErr_Format(PyExc_TypeError, "expected a callable, got '%s'",
                        Py_TYPE(callable)->tp_name);
  }
  TCFFIObject* h = FunctionFromCallable(callable);
  if (h == nullptr) return nullptr;
  return WrapFunction(h, true, nullptr);
}

}  // namespace

PyObject* WrapFunction(TCFFIObject* handle, bool owned, PyObject* name) {
  PyTCFunction* self = PyObject_New(PyTCFunction, &FunctionType);
  if (self == nullptr) {
    if (owned) TCFFIObjectDecRef(handle);
    return nullptr;
  }
  if (!owned) TCFFIObjectIncRef(handle);
  self->base.handle = handle;
  self->vectorcall = FunctionVectorcall;
  self->name = Py_XNewRef(name);
  return reinterpret_cast<PyObject*>(self);
}

PyObject* CallHandle(TCFFIObject* func, PyObject* const* args, Py_ssize_t nargs, PyObject* fname) {
  ArgFrame frame(nargs);
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (ConvertArg(args[i], static_cast<int>(i), frame, fname) != 0) return nullptr;
  }
  TCFFIAny result{};
  int rc = CellOf<TCFFIFunctionCell>(func)->safe_call(func, frame.args(),
                                                      static_cast<int32_t>(nargs), &result);
  if (rc != 0) return RaiseFromFFIError(rc, fname);
  return ResultToPy(&result, args, nargs);
}

TCFFIObject* GetCachedGlobal(const char* name, TCFFIObject** cache) {
  // The handles live as long as the registry holds them; we keep our own reference, so a
  // later override of the name does not free the function under us.
  if (*cache != nullptr) return *cache;
  TCFFIByteArray key{name, std::char_traits<char>::length(name)};
  TCFFIObject* h = nullptr;
  if (TCFFIFunctionGetGlobal(&key, &h) != 0) {
    RaiseFromFFIError(-1, nullptr);
    return nullptr;
  }
  if (h == nullptr) {
    PyErr_Format(PyExc_RuntimeError,
                 "global function '%s' is not registered: the tilecore library is incomplete",
                 name);
    return nullptr;
  }
  *cache = h;
  return h;
}

PyObject* CallGlobal(const char* name, PyObject* const* args, Py_ssize_t nargs) {
  TCFFIByteArray key{name, std::char_traits<char>::length(name)};
  TCFFIObject* h = nullptr;
  if (TCFFIFunctionGetGlobal(&key, &h) != 0) return RaiseFromFFIError(-1, nullptr);
  if (h == nullptr) {
    return PyErr_Format(PyExc_RuntimeError, "global function '%s' is not registered", name);
  }
  PyObject* fname = PyUnicode_FromString(name);
  PyObject* r = fname ? CallHandle(h, args, nargs, fname) : nullptr;
  Py_XDECREF(fname);
  TCFFIObjectDecRef(h);
  return r;
}

PyMethodDef kFunctionModuleMethods[] = {
    {"_get_global_func", GetGlobalFunc, METH_O,
     "_get_global_func(name) -> Function or None when not registered."},
    {"_register_global_func", AsPyCFunction(RegisterGlobalFunc), METH_FASTCALL,
     "_register_global_func(name, func, override) -> the registered Function."},
    {"_remove_global_func", RemoveGlobalFunc, METH_O,
     "_remove_global_func(name) -> whether the name was registered."},
    {"_convert_to_function", ConvertToFunction, METH_O,
     "Wraps a Python callable as a Function that C++ can call."},
    {nullptr, nullptr, 0, nullptr}};

int InitFunctionType(PyObject* module) {
  FunctionType.tp_name = "tilecore.Function";
  FunctionType.tp_doc =
      "A type-erased function: C++ code, or a Python callable made callable from C++.\n\n"
      "Function(callable) wraps a Python callable; calls take positional arguments only.";
  FunctionType.tp_base = &ObjectType;
  FunctionType.tp_basicsize = sizeof(PyTCFunction);
  FunctionType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  FunctionType.tp_vectorcall_offset = offsetof(PyTCFunction, vectorcall);
  FunctionType.tp_call = PyVectorcall_Call;
  FunctionType.tp_new = FunctionNew;
  FunctionType.tp_dealloc = FunctionDealloc;
  FunctionType.tp_repr = FunctionRepr;
  FunctionType.tp_getset = kFunctionGetSet;
  FunctionType.tp_members = kFunctionMembers;
  if (PyType_Ready(&FunctionType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Function", reinterpret_cast<PyObject*>(&FunctionType)) < 0) {
    return -1;
  }
  return PyModule_AddFunctions(module, kFunctionModuleMethods);
}

}  // namespace tilecore_py
