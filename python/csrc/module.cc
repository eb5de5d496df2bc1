/*
 * python/csrc/module.cc — the tilecore._ffi_core module: start-up and small helpers.
 *
 * The module refuses to load against a libtilecore whose ABI major version differs
 * from the one it was compiled with, since every struct layout may have changed.
 * Everything user-facing is wrapped by the pure-Python package `tilecore`.
 */
#include "internal.h"

namespace tilecore_py {
namespace {

PyObject* Convert(PyObject*, PyObject* value) {
  // _convert(x): list -> Array, dict -> Map, callable -> Function, numpy -> NDArray;
  // values that already have a tilecore form come back as they are.
  TCFFIAny owned{};
  if (PyToOwnedAny(value, &owned) != 0) return nullptr;
  if (owned.type_index >= kTCFFIStaticObjectBegin && owned.v_obj != nullptr && IsTCObject(value) &&
      reinterpret_cast<PyTCObject*>(value)->handle == owned.v_obj) {
    TCFFIObjectDecRef(owned.v_obj);
    return Py_NewRef(value);
  }
  return AnyToPy(&owned, true);
}

PyObject* AbiVersion(PyObject*, PyObject*) {
  int32_t major = 0, minor = 0;
  if (TCFFIGetABIVersion(&major, &minor) != 0) return RaiseFromFFIError(-1, nullptr);
  return Py_BuildValue("(ii)", static_cast<int>(major), static_cast<int>(minor));
}

PyObject* UseCount(PyObject*, PyObject* obj) {
  // The raw reference count of an object's handle (tests of reference handling).
  if (!IsTCObject(obj)) return PyErr_Format(PyExc_TypeError, "expected a tilecore object");
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(obj)->handle;
  return PyLong_FromUnsignedLongLong(h != nullptr ? h->ref_count : 0);
}

PyObject* ShapeToTuple(PyObject*, PyObject* obj) {
  // The dimensions of a Shape, read straight from its cell.
  TCFFIObject* h = IsTCObject(obj) ? reinterpret_cast<PyTCObject*>(obj)->handle : nullptr;
  if (h == nullptr || h->type_index != kTCFFIShape) {
    return PyErr_Format(PyExc_TypeError, "expected a Shape, got '%s'", Py_TYPE(obj)->tp_name);
  }
  TCFFIShapeCell* cell = CellOf<TCFFIShapeCell>(h);
  PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(cell->size));
  if (t == nullptr) return nullptr;
  for (size_t i = 0; i < cell->size; ++i) {
    PyObject* v = PyLong_FromLongLong(cell->data[i]);
    if (v == nullptr) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, static_cast<Py_ssize_t>(i), v);
  }
  return t;
}

PyMethodDef kModuleMethods[] = {
    {"_shape_to_tuple", ShapeToTuple, METH_O, "The dimensions of a Shape as a tuple."},
    {"_convert", Convert, METH_O, "Converts a Python value to its tilecore form."},
    {"_abi_version", AbiVersion, METH_NOARGS, "(major, minor) of the loaded libtilecore's C ABI."},
    {"_use_count", UseCount, METH_O, "Reference count of an object's handle."},
    {nullptr, nullptr, 0, nullptr}};

int ExecModule(PyObject* m) {
  int32_t major = -1, minor = -1;
  TCFFIGetABIVersion(&major, &minor);
  if (major != TILECORE_FFI_ABI_VERSION_MAJOR) {
    PyErr_Format(PyExc_ImportError,
                 "tilecore._ffi_core was built for C ABI %d.x but the loaded libtilecore has %d.%d",
                 TILECORE_FFI_ABI_VERSION_MAJOR, static_cast<int>(major), static_cast<int>(minor));
    return -1;
  }
  if (InitObjectType(m) < 0 || InitFunctionType(m) < 0 || InitNDArrayType(m) < 0 ||
      InitDeviceType(m) < 0 || InitDataTypeType(m) < 0 || InitErrors(m) < 0) {
    return -1;
  }
  if (PyModule_AddFunctions(m, kModuleMethods) < 0 ||
      PyModule_AddFunctions(m, kObjectModuleMethods) < 0 ||
      PyModule_AddFunctions(m, kErrorModuleMethods) < 0) {
    return -1;
  }
  if (PyModule_AddIntConstant(m, "kDLCPU", kDLCPU) < 0 ||
      PyModule_AddIntConstant(m, "kDLExtDev", kDLExtDev) < 0) {
    return -1;
  }
  return 0;
}

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT,
    "tilecore._ffi_core",
    "The CPython bridge to libtilecore's FFI (internal; use the `tilecore` package).",
    -1,  // static types and global tables: one instance per process
    nullptr,
};

}  // namespace
}  // namespace tilecore_py

PyMODINIT_FUNC PyInit__ffi_core() {
  PyObject* m = PyModule_Create(&tilecore_py::kModule);
  if (m == nullptr) return nullptr;
  if (tilecore_py::ExecModule(m) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
