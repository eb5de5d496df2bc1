/*
 * python/csrc/opaque.cc — kTCFFIOpaquePyObject: a Python object carried through C++.
 *
 * A Python value with no tilecore form (and a Python exception raised in a callback)
 * crosses the FFI as an opaque object that holds a strong reference to it. C++ can
 * store it and hand it back; only Python looks inside. The object is allocated here,
 * with its own deleter, as the ABI allows for any object kind (see TCFFIObject).
 */
#include <cstdlib>

#include "internal.h"

namespace tilecore_py {

namespace {

struct OpaqueBox {
  TCFFIObject header;
  TCFFIOpaqueObjectCell cell;
};

// Drops a Python reference from whatever thread the last C++ owner runs on.
void ReleasePyObject(void* handle) {
  PyObject* obj = static_cast<PyObject*>(handle);
  if (PyGILState_Check()) {
    Py_DECREF(obj);
    return;
  }
  // Once the interpreter is gone no destructor can run: leaking is the only safe choice.
  if (!PythonIsAlive()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  Py_DECREF(obj);
  PyGILState_Release(state);
}

void OpaqueDeleter(TCFFIObject* self) {
  OpaqueBox* box = reinterpret_cast<OpaqueBox*>(self);
  if (box->cell.release != nullptr) box->cell.release(box->cell.handle);
  std::free(box);
}

}  // namespace

bool PythonIsAlive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

TCFFIObject* MakeOpaquePyObject(PyObject* obj) {
  OpaqueBox* box = static_cast<OpaqueBox*>(std::malloc(sizeof(OpaqueBox)));
  if (box == nullptr) {
    PyErr_NoMemory();
    return nullptr;
  }
  box->header.ref_count = 1;
  box->header.type_index = kTCFFIOpaquePyObject;
  box->header.reserved = 0;
  box->header.deleter = OpaqueDeleter;
  box->cell.handle = Py_NewRef(obj);
  box->cell.release = ReleasePyObject;
  return &box->header;
}

PyObject* OpaquePyObjectGet(TCFFIObject* obj) {
  // Only boxes made here are known to hold a PyObject*.
  TCFFIOpaqueObjectCell* cell = CellOf<TCFFIOpaqueObjectCell>(obj);
  if (obj->type_index != kTCFFIOpaquePyObject || cell->release != ReleasePyObject) return nullptr;
  return static_cast<PyObject*>(cell->handle);
}

}  // namespace tilecore_py
