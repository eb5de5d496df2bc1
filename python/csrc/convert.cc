/*
 * python/csrc/convert.cc — Python values to TCFFIAny and back.
 *
 * Arguments become borrowed views (AnyView): a Python int, float, bool or None is
 * copied into the payload, a str is passed as a pointer to its cached UTF-8 (zero
 * copy, kTCFFIRawStr), a tilecore object passes its handle. Only values that have no
 * tilecore form yet (list, dict, callable, numpy array, foreign object) create a
 * temporary object, which the ArgFrame releases after the call.
 *
 * The switch tests exact types first, in the order they are most common in calls,
 * so the common cases cost one pointer comparison each; subclasses and protocols
 * (numpy scalars via __index__/__float__, __dlpack__, callables) come after.
 */
#include <cstring>

#include "internal.h"

namespace tilecore_py {

namespace {

TCFFIObject* g_array_fn = nullptr;
TCFFIObject* g_map_fn = nullptr;

inline void SetPOD(TCFFIAny* out, int32_t type_index, int64_t v) {
  out->type_index = type_index;
  out->zero_padding = 0;
  out->v_int64 = v;
}

inline void SetObject(TCFFIAny* out, TCFFIObject* h) {
  if (h == nullptr) {
    SetPOD(out, kTCFFINone, 0);
  } else {
    out->type_index = h->type_index;
    out->zero_padding = 0;
    out->v_obj = h;
  }
}

// Names the function (when known) and the argument in a conversion error.
int ArgError(PyObject* exc_type, PyObject* fname, int i, PyObject* detail) {
  if (detail == nullptr) return -1;
  const char* kind = exc_type == PyExc_TypeError       ? "TypeError"
                     : exc_type == PyExc_ValueError    ? "ValueError"
                     : exc_type == PyExc_OverflowError ? "OverflowError"
                                                       : "RuntimeError";
  exc_type = ErrorClassForKind(kind, exc_type);
  if (fname != nullptr) {
    PyErr_Format(exc_type, "%U: argument %d: %U", fname, i, detail);
  } else {
    PyErr_Format(exc_type, "argument %d: %U", i, detail);
  }
  Py_DECREF(detail);
  return -1;
}

int IntArg(PyObject* o, int i, TCFFIAny* out, PyObject* fname) {
  // Most ints in calls fit one digit: read it without a call into libpython.
#if PY_VERSION_HEX >= 0x030C0000
  if (PyUnstable_Long_IsCompact(reinterpret_cast<PyLongObject*>(o))) {
    SetPOD(out, kTCFFIInt, PyUnstable_Long_CompactValue(reinterpret_cast<PyLongObject*>(o)));
    return 0;
  }
#else
  Py_ssize_t size = Py_SIZE(o);
  if (size >= -1 && size <= 1) {
    SetPOD(out, kTCFFIInt,
           size * static_cast<int64_t>(reinterpret_cast<PyLongObject*>(o)->ob_digit[0]));
    return 0;
  }
#endif
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow != 0) {
    return ArgError(PyExc_OverflowError, fname, i,
                    PyUnicode_FromFormat("int %R does not fit in int64", o));
  }
  if (v == -1 && PyErr_Occurred()) return -1;
  SetPOD(out, kTCFFIInt, v);
  return 0;
}

// Short strings (names, dtypes, keys) are the common case: scan them inline.
inline bool HasNul(const char* s, Py_ssize_t n) {
  if (n > 32) return std::memchr(s, 0, static_cast<size_t>(n)) != nullptr;
  for (Py_ssize_t k = 0; k < n; ++k) {
    if (s[k] == 0) return true;
  }
  return false;
}

int StrArg(PyObject* o, int i, ArgFrame& frame, PyObject* fname) {
  TCFFIAny* out = frame.args() + i;
  Py_ssize_t n = 0;
  const char* s;
  if (PyUnicode_IS_COMPACT_ASCII(o)) {
    // ASCII text is its own UTF-8, NUL-terminated right after the object header.
    s = static_cast<const char*>(PyUnicode_DATA(o));
    n = PyUnicode_GET_LENGTH(o);
  } else {
    // The UTF-8 form is cached inside the str object, so the pointer stays valid for
    // the call while the caller holds the argument.
    s = PyUnicode_AsUTF8AndSize(o, &n);
  }
  if (s == nullptr) {
    PyErr_Clear();
    return ArgError(PyExc_TypeError, fname, i,
                    PyUnicode_FromString("str is not encodable as UTF-8 (lone surrogate)"));
  }
  if (!HasNul(s, n)) {
    out->type_index = kTCFFIRawStr;
    out->zero_padding = 0;
    out->v_c_str = s;
    return 0;
  }
  // An embedded NUL would truncate a C string: pass an owned string object instead.
  TCFFIByteArray bytes{s, static_cast<size_t>(n)};
  TCFFIAny owned{};
  if (TCFFIStringFromByteArray(&bytes, &owned) != 0) {
    RaiseFromFFIError(-1, fname);
    return -1;
  }
  if (owned.type_index >= kTCFFIStaticObjectBegin) frame.AddTemp(owned.v_obj);
  *out = owned;
  return 0;
}

// list/tuple -> Array and dict -> Map: the items are converted into their own frame
// (recursively) and handed to the library's constructor functions.
int ContainerArg(PyObject* o, int i, ArgFrame& frame, PyObject* fname, bool is_map) {
  TCFFIObject* ctor =
      is_map ? GetCachedGlobal("ffi.Map", &g_map_fn) : GetCachedGlobal("ffi.Array", &g_array_fn);
  if (ctor == nullptr) return -1;
  // A snapshot, so code run by a conversion (__index__, __dlpack__) cannot mutate the
  // container under us and free an item we hold borrowed.
  PyObject* items = is_map ? PyDict_Items(o) : PySequence_Tuple(o);
  if (items == nullptr) return -1;
  if (Py_EnterRecursiveCall(" while converting a nested container to tilecore")) {
    Py_DECREF(items);
    return -1;
  }
  Py_ssize_t n = is_map ? PyList_GET_SIZE(items) * 2 : PyTuple_GET_SIZE(items);
  int rc = 0;
  {
    ArgFrame sub(n);
    for (Py_ssize_t j = 0; j < n && rc == 0; ++j) {
      PyObject* item;
      if (is_map) {
        PyObject* pair = PyList_GET_ITEM(items, j / 2);
        item = PyTuple_GET_ITEM(pair, j % 2);
      } else {
        item = PyTuple_GET_ITEM(items, j);
      }
      rc = ConvertArg(item, static_cast<int>(j), sub, nullptr);
    }
    if (rc == 0) {
      TCFFIAny result{};
      if (TCFFIFunctionCall(ctor, sub.args(), static_cast<int32_t>(n), &result) != 0) {
        RaiseFromFFIError(-1, nullptr);
        rc = -1;
      } else {
        if (result.type_index >= kTCFFIStaticObjectBegin && result.v_obj != nullptr) {
          frame.AddTemp(result.v_obj);
        }
        frame.args()[i] = result;
      }
    }
  }
  Py_LeaveRecursiveCall();
  Py_DECREF(items);
  if (rc != 0 && fname != nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
    // Say which argument held the bad element.
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject* msg = PyObject_Str(value);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (msg == nullptr) return -1;
    ArgError(PyExc_TypeError, fname, i,
             PyUnicode_FromFormat("in %s element: %U", is_map ? "dict" : "sequence", msg));
    Py_DECREF(msg);
  }
  return rc;
}

int TempArg(TCFFIObject* h, int i, ArgFrame& frame) {
  if (h == nullptr) return -1;
  frame.AddTemp(h);
  SetObject(frame.args() + i, h);
  return 0;
}

bool HasDLPack(PyTypeObject* t) {
  static PyObject* name = PyUnicode_InternFromString("__dlpack__");
  return name != nullptr && _PyType_Lookup(t, name) != nullptr;
}

bool IsNumpyBool(PyTypeObject* t) {
  return std::strcmp(t->tp_name, "numpy.bool") == 0 || std::strcmp(t->tp_name, "numpy.bool_") == 0;
}

int ConvertArgSlow(PyObject* o, int i, ArgFrame& frame, PyObject* fname) {
  PyTypeObject* t = Py_TYPE(o);
  TCFFIAny* out = frame.args() + i;
  if (t == &RValueRefType) {
    PyTCRValueRef* ref = reinterpret_cast<PyTCRValueRef*>(o);
    if (ref->handle == nullptr) {
      return ArgError(PyExc_ValueError, fname, i,
                      PyUnicode_FromString("a moved reference can be passed only once"));
    }
    TCFFIObject* h = ref->handle;
    ref->handle = nullptr;  // the frame owns it now; a direct Python callee may take it
    frame.AddTemp(h);
    frame.AddMoved(i);
    SetObject(out, h);
    return 0;
  }
  if (t == &DeviceType) {
    SetPOD(out, kTCFFIDevice, 0);
    out->v_device = reinterpret_cast<PyTCDevice*>(o)->device;
    return 0;
  }
  if (t == &DataTypeType) {
    SetPOD(out, kTCFFIDataType, 0);
    out->v_dtype = reinterpret_cast<PyTCDataType*>(o)->dtype;
    return 0;
  }
  if (PyBytes_Check(o) || PyByteArray_Check(o)) {
    TCFFIByteArray* slot = frame.ByteSlot(i);
    if (PyBytes_Check(o)) {
      slot->data = PyBytes_AS_STRING(o);
      slot->size = static_cast<size_t>(PyBytes_GET_SIZE(o));
    } else {
      slot->data = PyByteArray_AS_STRING(o);
      slot->size = static_cast<size_t>(PyByteArray_GET_SIZE(o));
    }
    SetPOD(out, kTCFFIByteArrayPtr, 0);
    out->v_ptr = slot;
    return 0;
  }
  if (PyBool_Check(o)) {
    SetPOD(out, kTCFFIBool, o == Py_True);
    return 0;
  }
  if (PyLong_Check(o)) return IntArg(o, i, out, fname);
  if (PyFloat_Check(o)) {
    SetPOD(out, kTCFFIFloat, 0);
    out->v_float64 = PyFloat_AsDouble(o);
    return 0;
  }
  if (PyUnicode_Check(o)) return StrArg(o, i, frame, fname);
  if (PyTuple_Check(o) || PyList_Check(o)) return ContainerArg(o, i, frame, fname, false);
  if (PyDict_Check(o)) return ContainerArg(o, i, frame, fname, true);
  if (IsNumpyArrayType(t)) {
    TCFFIObject* h = NDArrayFromBuffer(o);
    if (h != nullptr) return TempArg(h, i, frame);
    if (PyErr_Occurred()) return -1;
  }
  if (HasDLPack(t)) return TempArg(NDArrayFromDLPackObject(o), i, frame);
  if (IsNumpyBool(t)) {
    int truth = PyObject_IsTrue(o);
    if (truth < 0) return -1;
    SetPOD(out, kTCFFIBool, truth);
    return 0;
  }
  PyNumberMethods* num = t->tp_as_number;
  if (num != nullptr && num->nb_index != nullptr) {
    // numpy integer scalars and other int-likes.
    PyObject* as_int = PyNumber_Index(o);
    if (as_int == nullptr) return -1;
    int rc = IntArg(as_int, i, out, fname);
    Py_DECREF(as_int);
    return rc;
  }
  // Complex numbers (Python's and numpy's) have no FFI type: they travel opaque below,
  // never silently as their real part.
  if (num != nullptr && num->nb_float != nullptr && !PyComplex_Check(o) &&
      std::strstr(t->tp_name, "complex") == nullptr) {
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    SetPOD(out, kTCFFIFloat, 0);
    out->v_float64 = v;
    return 0;
  }
  if (PyCallable_Check(o)) return TempArg(FunctionFromCallable(o), i, frame);
  // Anything else travels as an opaque Python object: C++ can hold it and hand it back
  // (`echo(x) is x`), and a typed C++ parameter reports the mismatch by name.
  return TempArg(MakeOpaquePyObject(o), i, frame);
}

PyObject* DecodeUTF8(const char* s, size_t n) {
  // "replace": bytes from C++ that are not UTF-8 must not make a result unreadable.
  return PyUnicode_DecodeUTF8(s, static_cast<Py_ssize_t>(n), "replace");
}

PyObject* ObjectToPy(TCFFIObject* h, bool owned) {
  PyObject* r;
  switch (h->type_index) {
    case kTCFFIStr: {
      TCFFIStrCell* cell = CellOf<TCFFIStrCell>(h);
      r = DecodeUTF8(cell->bytes.data, cell->bytes.size);
      break;
    }
    case kTCFFIBytes: {
      TCFFIStrCell* cell = CellOf<TCFFIStrCell>(h);
      r = PyBytes_FromStringAndSize(cell->bytes.data, static_cast<Py_ssize_t>(cell->bytes.size));
      break;
    }
    case kTCFFIOpaquePyObject: {
      r = OpaquePyObjectGet(h);
      if (r == nullptr) return WrapObject(h, owned);  // a foreign opaque object: keep it wrapped
      Py_INCREF(r);
      break;
    }
    case kTCFFIFunction:
      return WrapFunction(h, owned, nullptr);
    default:
      return WrapObject(h, owned);
  }
  if (owned) TCFFIObjectDecRef(h);
  return r;
}

}  // namespace

int ConvertArg(PyObject* o, int i, ArgFrame& frame, PyObject* fname) {
  PyTypeObject* t = Py_TYPE(o);
  TCFFIAny* out = frame.args() + i;
  if (t == &PyLong_Type) return IntArg(o, i, out, fname);
  if (t == &PyFloat_Type) {
    SetPOD(out, kTCFFIFloat, 0);
    out->v_float64 = PyFloat_AS_DOUBLE(o);
    return 0;
  }
  if (t == &PyUnicode_Type) return StrArg(o, i, frame, fname);
  if (o == Py_None) {
    SetPOD(out, kTCFFINone, 0);
    return 0;
  }
  if (t == &PyBool_Type) {
    SetPOD(out, kTCFFIBool, o == Py_True);
    return 0;
  }
  if (IsTCObject(o)) {
    SetObject(out, reinterpret_cast<PyTCObject*>(o)->handle);
    return 0;
  }
  return ConvertArgSlow(o, i, frame, fname);
}

int PyToOwnedAny(PyObject* value, TCFFIAny* out) {
  ArgFrame frame(1);
  if (ConvertArg(value, 0, frame, nullptr) != 0) return -1;
  TCFFIAny* view = frame.args();
  switch (view->type_index) {
    case kTCFFIRawStr: {
      TCFFIByteArray s{view->v_c_str, std::strlen(view->v_c_str)};
      if (TCFFIStringFromByteArray(&s, out) != 0) return (RaiseFromFFIError(-1, nullptr), -1);
      return 0;
    }
    case kTCFFIByteArrayPtr:
      if (TCFFIBytesFromByteArray(static_cast<TCFFIByteArray*>(view->v_ptr), out) != 0) {
        return (RaiseFromFFIError(-1, nullptr), -1);
      }
      return 0;
    default:
      // PODs copy; objects gain the reference the owned Any holds (temporaries made for
      // the conversion are released by the frame, so the count ends up right).
      if (view->type_index >= kTCFFIStaticObjectBegin) TCFFIObjectIncRef(view->v_obj);
      *out = *view;
      return 0;
  }
}

PyObject* AnyToPy(TCFFIAny* any, bool owned) {
  switch (any->type_index) {
    case kTCFFINone:
      Py_RETURN_NONE;
    case kTCFFIInt:
      return PyLong_FromLongLong(any->v_int64);
    case kTCFFIBool:
      return PyBool_FromLong(any->v_int64 != 0);
    case kTCFFIFloat:
      return PyFloat_FromDouble(any->v_float64);
    case kTCFFIOpaquePtr:
      if (any->v_ptr == nullptr) Py_RETURN_NONE;
      return PyLong_FromVoidPtr(any->v_ptr);
    case kTCFFIDataType:
      return MakeDataType(any->v_dtype);
    case kTCFFIDevice:
      return MakeDevice(any->v_device);
    case kTCFFIDLTensorPtr: {
      TCFFIObject* view = NDArrayViewOfDLTensor(static_cast<DLTensor*>(any->v_ptr));
      return view != nullptr ? WrapObject(view, true) : nullptr;
    }
    case kTCFFIRawStr:
      return DecodeUTF8(any->v_c_str, std::strlen(any->v_c_str));
    case kTCFFIByteArrayPtr: {
      auto* b = static_cast<TCFFIByteArray*>(any->v_ptr);
      return PyBytes_FromStringAndSize(b->data, static_cast<Py_ssize_t>(b->size));
    }
    case kTCFFISmallStr:
      return DecodeUTF8(any->v_bytes, any->small_len <= 7 ? any->small_len : 7);
    case kTCFFISmallBytes:
      return PyBytes_FromStringAndSize(any->v_bytes, any->small_len <= 7 ? any->small_len : 7);
    default:
      break;
  }
  if (any->type_index >= kTCFFIStaticObjectBegin) {
    if (any->v_obj == nullptr) Py_RETURN_NONE;
    return ObjectToPy(any->v_obj, owned);
  }
  return PyErr_Format(PyExc_TypeError, "tilecore value of unknown type index %d",
                      static_cast<int>(any->type_index));
}

PyObject* ResultToPy(TCFFIAny* result, PyObject* const* py_args, Py_ssize_t num_args) {
  int32_t ti = result->type_index;
  if (ti >= kTCFFIStaticObjectBegin && ti != kTCFFIStr && ti != kTCFFIBytes &&
      result->v_obj != nullptr) {
    // Identity: an argument that comes back is returned as the same Python object.
    for (Py_ssize_t i = 0; i < num_args; ++i) {
      PyObject* a = py_args[i];
      if (IsTCObject(a) && reinterpret_cast<PyTCObject*>(a)->handle == result->v_obj) {
        TCFFIObjectDecRef(result->v_obj);
        return Py_NewRef(a);
      }
    }
  }
  return AnyToPy(result, true);
}

}  // namespace tilecore_py
