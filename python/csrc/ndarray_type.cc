/*
 * python/csrc/ndarray_type.cc — tilecore.NDArray and DLPack in both directions.
 *
 * An NDArray is an Object whose DLTensor follows the object header, so shape, dtype
 * and device are read straight from memory. Exchange with numpy and PyTorch is zero
 * copy through DLPack capsules:
 *   - export: __dlpack__(stream=None, max_version=None, dl_device=None, copy=None)
 *     hands out a "dltensor_versioned" capsule when the consumer asks for DLPack >= 1.0
 *     (max_version), else a legacy "dltensor" one; the capsule keeps the array alive.
 *   - import: from_dlpack(x) asks x.__dlpack__ for the versioned form first, falls back
 *     to the legacy call for older producers, and takes the managed tensor over.
 * Capsule names follow the DLPack Python specification: a consumer renames a capsule
 * to "used_dltensor[_versioned]" once it owns the tensor; the capsule destructor frees
 * only tensors nobody consumed.
 */
#include <cstdlib>
#include <cstring>

#include "internal.h"

namespace tilecore_py {

PyTypeObject NDArrayType = {PyVarObject_HEAD_INIT(nullptr, 0)};

namespace {

constexpr const char* kCapsule = "dltensor";
constexpr const char* kCapsuleUsed = "used_dltensor";
constexpr const char* kCapsuleVersioned = "dltensor_versioned";
constexpr const char* kCapsuleVersionedUsed = "used_dltensor_versioned";

DLTensor* TensorOf(PyObject* self) {
  return TCFFINDArrayGetDLTensorPtr(reinterpret_cast<PyTCObject*>(self)->handle);
}

bool CheckNotEmpty(PyObject* self) {
  if (reinterpret_cast<PyTCObject*>(self)->handle != nullptr) return true;
  PyErr_SetString(PyExc_ValueError, "NDArray is empty (moved or never created)");
  return false;
}

PyObject* Int64Tuple(const int64_t* data, int n) {
  PyObject* t = PyTuple_New(n);
  if (t == nullptr) return nullptr;
  for (int i = 0; i < n; ++i) {
    PyObject* v = PyLong_FromLongLong(data[i]);
    if (v == nullptr) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

PyObject* GetShape(PyObject* self, void*) {
  if (!CheckNotEmpty(self)) return nullptr;
  DLTensor* t = TensorOf(self);
  return Int64Tuple(t->shape, t->ndim);
}

PyObject* GetStrides(PyObject* self, void*) {
  if (!CheckNotEmpty(self)) return nullptr;
  DLTensor* t = TensorOf(self);
  if (t->strides == nullptr) Py_RETURN_NONE;  // compact row-major
  return Int64Tuple(t->strides, t->ndim);
}

PyObject* GetNDim(PyObject* self, void*) {
  if (!CheckNotEmpty(self)) return nullptr;
  return PyLong_FromLong(TensorOf(self)->ndim);
}

PyObject* GetDType(PyObject* self, void*) {
  if (!CheckNotEmpty(self)) return nullptr;
  return MakeDataType(TensorOf(self)->dtype);
}

PyObject* GetDevice(PyObject* self, void*) {
  if (!CheckNotEmpty(self)) return nullptr;
  return MakeDevice(TensorOf(self)->device);
}

PyObject* GetByteOffset(PyObject* self, void*) {
  if (!CheckNotEmpty(self)) return nullptr;
  return PyLong_FromUnsignedLongLong(TensorOf(self)->byte_offset);
}

PyObject* GetDataPtr(PyObject* self, void*) {
  if (!CheckNotEmpty(self)) return nullptr;
  DLTensor* t = TensorOf(self);
  return PyLong_FromVoidPtr(static_cast<char*>(t->data) + t->byte_offset);
}

void CapsuleDestructor(PyObject* capsule) {
  // Only a capsule nobody consumed still carries its original name.
  if (PyCapsule_IsValid(capsule, kCapsuleVersioned)) {
    auto* m =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kCapsuleVersioned));
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  } else if (PyCapsule_IsValid(capsule, kCapsule)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule));
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  }
}

// A new NDArray on `device` holding a copy of `src`.
TCFFIObject* CopyToDevice(TCFFIObject* src, DLDevice device) {
  DLTensor* t = TCFFINDArrayGetDLTensorPtr(src);
  TCFFIObject* dst = nullptr;
  if (TCFFINDArrayEmpty(t->shape, t->ndim, t->dtype, device, &dst) != 0) {
    RaiseFromFFIError(-1, nullptr);
    return nullptr;
  }
  if (TCFFINDArrayCopyFromTo(t, TCFFINDArrayGetDLTensorPtr(dst)) != 0) {
    TCFFIObjectDecRef(dst);
    RaiseFromFFIError(-1, nullptr);
    return nullptr;
  }
  return dst;
}

PyObject* NDArrayDLPack(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"stream", "max_version", "dl_device", "copy", nullptr};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", const_cast<char**>(kwlist),
                                   &stream, &max_version, &dl_device, &copy)) {
    return nullptr;
  }
  if (!CheckNotEmpty(self)) return nullptr;
  // Host memory needs no stream synchronisation; the npu simulator is synchronous too.
  bool versioned = false;
  if (max_version != Py_None) {
    if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) < 1) {
      return PyErr_Format(PyExc_TypeError,
                          "__dlpack__: max_version must be a (major, minor) tuple");
    }
    long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
    if (major == -1 && PyErr_Occurred()) return nullptr;
    versioned = major >= 1;
  }
  TCFFIObject* target = reinterpret_cast<PyTCObject*>(self)->handle;
  DLDevice own = TCFFINDArrayGetDLTensorPtr(target)->device;
  int copy_flag = copy == Py_None ? -1 : PyObject_IsTrue(copy);
  if (copy != Py_None && copy_flag < 0) return nullptr;
  TCFFIObject* copied = nullptr;
  if (dl_device != Py_None) {
    DLDevice want;
    if (DeviceFromPy(dl_device, &want) != 0) return nullptr;
    if (want.device_type != own.device_type || want.device_id != own.device_id) {
      if (copy_flag == 0) {
        return PyErr_Format(PyExc_BufferError,
                            "__dlpack__: the array lives on another device and copy=False");
      }
      copied = CopyToDevice(target, want);
      if (copied == nullptr) return nullptr;
    }
  }
  if (copy_flag == 1 && copied == nullptr) {
    copied = CopyToDevice(target, own);
    if (copied == nullptr) return nullptr;
  }
  if (copied != nullptr) target = copied;
  PyObject* capsule = nullptr;
  if (versioned) {
    DLManagedTensorVersioned* m = nullptr;
    if (TCFFINDArrayToDLPackVersioned(target, &m) != 0) {
      RaiseFromFFIError(-1, nullptr);
    } else {
      if (copied != nullptr) m->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
      capsule = PyCapsule_New(m, kCapsuleVersioned, CapsuleDestructor);
      if (capsule == nullptr) m->deleter(m);
    }
  } else {
    DLManagedTensor* m = nullptr;
    if (TCFFINDArrayToDLPack(target, &m) != 0) {
      RaiseFromFFIError(-1, nullptr);
    } else {
      capsule = PyCapsule_New(m, kCapsule, CapsuleDestructor);
      if (capsule == nullptr) m->deleter(m);
    }
  }
  if (copied != nullptr) TCFFIObjectDecRef(copied);  // the capsule holds its own reference
  return capsule;
}

PyObject* NDArrayDLPackDevice(PyObject* self, PyObject*) {
  if (!CheckNotEmpty(self)) return nullptr;
  DLDevice d = TensorOf(self)->device;
  return Py_BuildValue("(ii)", static_cast<int>(d.device_type), static_cast<int>(d.device_id));
}

PyMethodDef kNDArrayMethods[] = {
    {"__dlpack__", AsPyCFunction(NDArrayDLPack), METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> capsule\n\n"
     "Exports the array as a DLPack capsule sharing its memory (unless a copy is asked for\n"
     "or dl_device differs). A versioned capsule is returned when max_version >= (1, 0)."},
    {"__dlpack_device__", NDArrayDLPackDevice, METH_NOARGS,
     "(device_type, device_id) of the array, as DLPack numbers them."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef kNDArrayGetSet[] = {
    {"shape", GetShape, nullptr, "Dimensions, a tuple of int.", nullptr},
    {"strides", GetStrides, nullptr, "Strides in elements, or None when compact row-major.",
     nullptr},
    {"ndim", GetNDim, nullptr, "Number of dimensions.", nullptr},
    {"dtype", GetDType, nullptr, "Element type, a tilecore.DataType.", nullptr},
    {"device", GetDevice, nullptr, "Where the data lives, a tilecore.Device.", nullptr},
    {"byte_offset", GetByteOffset, nullptr, "Offset of the first element from the data pointer.",
     nullptr},
    {"data_ptr", GetDataPtr, nullptr, "Address of the first element, as int.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyObject* CallDLPack(PyObject* obj) {
  // Ask for a versioned capsule; producers older than DLPack 1.0 reject max_version.
  static PyObject* name = PyUnicode_InternFromString("__dlpack__");
  static PyObject* kwnames = Py_BuildValue("(s)", "max_version");
  static PyObject* version = Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
  if (name == nullptr || kwnames == nullptr || version == nullptr) return nullptr;
  PyObject* call_args[2] = {obj, version};
  PyObject* capsule =
      PyObject_VectorcallMethod(name, call_args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
  if (capsule != nullptr || !PyErr_ExceptionMatches(PyExc_TypeError)) return capsule;
  PyErr_Clear();
  return PyObject_VectorcallMethod(name, call_args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
}

PyObject* ModuleFromDLPack(PyObject*, PyObject* obj) {
  TCFFIObject* h = NDArrayFromDLPackObject(obj);
  return h != nullptr ? WrapObject(h, true) : nullptr;
}

PyObject* ModuleEmpty(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  // _ndarray_empty(shape: tuple[int], dtype, device) -> NDArray
  if (nargs != 3) return PyErr_Format(PyExc_TypeError, "_ndarray_empty(shape, dtype, device)");
  PyObject* shape = PySequence_Tuple(args[0]);
  if (shape == nullptr) return nullptr;
  Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
  if (ndim > 64) {
    Py_DECREF(shape);
    return PyErr_Format(PyExc_ValueError, "empty: %zd dimensions is more than 64", ndim);
  }
  int64_t dims[64];
  for (Py_ssize_t i = 0; i < ndim; ++i) {
    dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    if (dims[i] == -1 && PyErr_Occurred()) {
      Py_DECREF(shape);
      return nullptr;
    }
  }
  Py_DECREF(shape);
  DLDataType dtype;
  DLDevice device;
  if (DataTypeFromPy(args[1], &dtype) != 0 || DeviceFromPy(args[2], &device) != 0) return nullptr;
  TCFFIObject* h = nullptr;
  if (TCFFINDArrayEmpty(dims, static_cast<int32_t>(ndim), dtype, device, &h) != 0) {
    return RaiseFromFFIError(-1, nullptr);
  }
  return WrapObject(h, true);
}

PyObject* ModuleCopyFromTo(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyObject_TypeCheck(args[0], &NDArrayType) ||
      !PyObject_TypeCheck(args[1], &NDArrayType)) {
    return PyErr_Format(PyExc_TypeError, "_ndarray_copy_from_to(src: NDArray, dst: NDArray)");
  }
  if (!CheckNotEmpty(args[0]) || !CheckNotEmpty(args[1])) return nullptr;
  int rc;
  Py_BEGIN_ALLOW_THREADS  // a large copy (or a device copy) need not block other threads
      rc = TCFFINDArrayCopyFromToArrays(reinterpret_cast<PyTCObject*>(args[0])->handle,
                                        reinterpret_cast<PyTCObject*>(args[1])->handle);
  Py_END_ALLOW_THREADS if (rc != 0) return RaiseFromFFIError(-1, nullptr);
  Py_RETURN_NONE;
}

void ViewDeleter(DLManagedTensor* self) { std::free(self); }

}  // namespace

TCFFIObject* NDArrayFromDLPackObject(PyObject* obj) {
  static PyObject* dlpack_name = PyUnicode_InternFromString("__dlpack__");
  if (!PyCapsule_CheckExact(obj) &&
      (dlpack_name == nullptr || _PyType_Lookup(Py_TYPE(obj), dlpack_name) == nullptr)) {
    PyErr_Format(ErrorClassForKind("TypeError", PyExc_TypeError),
                 "from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got '%s'",
                 Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  PyObject* capsule = PyCapsule_CheckExact(obj) ? Py_NewRef(obj) : CallDLPack(obj);
  if (capsule == nullptr) return nullptr;
  TCFFIObject* out = nullptr;
  int rc = 0;
  // The capsule is renamed *before* the call: the library owns the tensor from then on,
  // even if it refuses it (it calls the deleter itself in that case).
  if (PyCapsule_IsValid(capsule, kCapsuleVersioned)) {
    auto* m =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kCapsuleVersioned));
    PyCapsule_SetName(capsule, kCapsuleVersionedUsed);
    rc = TCFFINDArrayFromDLPackVersioned(m, &out);
  } else if (PyCapsule_IsValid(capsule, kCapsule)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule));
    PyCapsule_SetName(capsule, kCapsuleUsed);
    rc = TCFFINDArrayFromDLPack(m, &out);
  } else {
    Py_DECREF(capsule);
    PyErr_Format(
        PyExc_TypeError,
        "from_dlpack: expected an object with __dlpack__ or an unused DLPack capsule, got '%s'",
        Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  Py_DECREF(capsule);
  if (rc != 0) {
    RaiseFromFFIError(-1, nullptr);
    return nullptr;
  }
  return out;
}

TCFFIObject* NDArrayViewOfDLTensor(DLTensor* tensor) {
  // A borrowed DLTensor (a C++ caller's AnyView) seen from a Python callback: a
  // non-owning NDArray over the same memory, valid while the caller's tensor is.
  auto* m = static_cast<DLManagedTensor*>(std::calloc(1, sizeof(DLManagedTensor)));
  if (m == nullptr) {
    PyErr_NoMemory();
    return nullptr;
  }
  m->dl_tensor = *tensor;  // the library copies shape and strides
  m->deleter = ViewDeleter;
  TCFFIObject* out = nullptr;
  if (TCFFINDArrayFromDLPack(m, &out) != 0) {
    RaiseFromFFIError(-1, nullptr);
    return nullptr;
  }
  return out;
}

PyMethodDef kNDArrayModuleMethods[] = {
    {"_from_dlpack", ModuleFromDLPack, METH_O,
     "_from_dlpack(x) -> NDArray sharing memory with x (an object with __dlpack__ or a capsule)."},
    {"_ndarray_empty", AsPyCFunction(ModuleEmpty), METH_FASTCALL,
     "_ndarray_empty(shape, dtype, device) -> uninitialised compact NDArray."},
    {"_ndarray_copy_from_to", AsPyCFunction(ModuleCopyFromTo), METH_FASTCALL,
     "_ndarray_copy_from_to(src, dst): copies between arrays of equal shape and dtype."},
    {nullptr, nullptr, 0, nullptr}};

int InitNDArrayType(PyObject* module) {
  NDArrayType.tp_name = "tilecore.NDArray";
  NDArrayType.tp_doc =
      "An n-dimensional array on a device (a DLTensor with an owner).\n\n"
      "Shares memory with numpy and PyTorch through DLPack (__dlpack__, from_dlpack).";
  NDArrayType.tp_base = &ObjectType;
  NDArrayType.tp_basicsize = sizeof(PyTCObject);
  NDArrayType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  NDArrayType.tp_methods = kNDArrayMethods;
  NDArrayType.tp_getset = kNDArrayGetSet;
  if (PyType_Ready(&NDArrayType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "NDArray", reinterpret_cast<PyObject*>(&NDArrayType)) < 0) {
    return -1;
  }
  return PyModule_AddFunctions(module, kNDArrayModuleMethods);
}

}  // namespace tilecore_py
