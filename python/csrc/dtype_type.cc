/*
 * python/csrc/dtype_type.cc — tilecore.DataType, a DLDataType by value.
 *
 * Data types cross the FFI as a POD (kTCFFIDataType). Their spelling ("float32",
 * "int8x4", "bool", "bfloat16") is parsed and printed by the library
 * ("ffi.DataTypeFromString" / "ffi.DataTypeToString"), so Python and C++ agree on it.
 * A DataType compares equal to its spelling: `nd.dtype == "float32"`.
 */
#include <cstring>

#include "internal.h"

namespace tilecore_py {

PyTypeObject DataTypeType = {PyVarObject_HEAD_INIT(nullptr, 0)};

namespace {

int ParseDataTypeStr(PyObject* s, DLDataType* out) {
  PyObject* parsed = CallGlobal("ffi.DataTypeFromString", &s, 1);
  if (parsed == nullptr) return -1;
  if (Py_TYPE(parsed) != &DataTypeType) {
    Py_DECREF(parsed);
    PyErr_SetString(PyExc_TypeError, "ffi.DataTypeFromString did not return a DataType");
    return -1;
  }
  *out = reinterpret_cast<PyTCDataType*>(parsed)->dtype;
  Py_DECREF(parsed);
  return 0;
}

PyObject* DataTypeNew(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"dtype", nullptr};
  PyObject* spec = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:DataType", const_cast<char**>(kwlist), &spec)) {
    return nullptr;
  }
  if (Py_TYPE(spec) == &DataTypeType) return Py_NewRef(spec);
  DLDataType t;
  if (DataTypeFromPy(spec, &t) != 0) return nullptr;
  return MakeDataType(t);
}

PyObject* DataTypeStr(PyObject* self) {
  PyObject* r = CallGlobal("ffi.DataTypeToString", &self, 1);
  return r;
}

PyObject* DataTypeRepr(PyObject* self) {
  PyObject* s = DataTypeStr(self);
  if (s == nullptr) return nullptr;
  PyObject* r = PyUnicode_FromFormat("DataType('%U')", s);
  Py_DECREF(s);
  return r;
}

PyObject* DataTypeRichCompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || Py_TYPE(a) != &DataTypeType) Py_RETURN_NOTIMPLEMENTED;
  DLDataType x = reinterpret_cast<PyTCDataType*>(a)->dtype, y;
  if (Py_TYPE(b) == &DataTypeType) {
    y = reinterpret_cast<PyTCDataType*>(b)->dtype;
  } else if (PyUnicode_Check(b)) {
    if (ParseDataTypeStr(b, &y) != 0) {  // not a dtype spelling: simply not equal
      PyErr_Clear();
      return PyBool_FromLong(op == Py_NE);
    }
  } else {
    Py_RETURN_NOTIMPLEMENTED;
  }
  bool eq = x.code == y.code && x.bits == y.bits && x.lanes == y.lanes;
  return PyBool_FromLong((op == Py_EQ) == eq);
}

Py_hash_t DataTypeHash(PyObject* self) {
  DLDataType t = reinterpret_cast<PyTCDataType*>(self)->dtype;
  Py_hash_t h =
      (static_cast<Py_hash_t>(t.code) << 24) ^ (static_cast<Py_hash_t>(t.bits) << 16) ^ t.lanes;
  return h == -1 ? -2 : h;
}

PyObject* GetCode(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<PyTCDataType*>(self)->dtype.code);
}
PyObject* GetBits(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<PyTCDataType*>(self)->dtype.bits);
}
PyObject* GetLanes(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<PyTCDataType*>(self)->dtype.lanes);
}
PyObject* GetItemSize(PyObject* self, void*) {
  DLDataType t = reinterpret_cast<PyTCDataType*>(self)->dtype;
  return PyLong_FromLong((static_cast<long>(t.bits) * t.lanes + 7) / 8);
}

PyObject* DataTypeReduce(PyObject* self, PyObject*) {
  PyObject* s = DataTypeStr(self);
  if (s == nullptr) return nullptr;
  PyObject* r = Py_BuildValue("(O(N))", reinterpret_cast<PyObject*>(&DataTypeType), s);
  return r;
}

PyMethodDef kDataTypeMethods[] = {{"__reduce__", DataTypeReduce, METH_NOARGS, nullptr},
                                  {nullptr, nullptr, 0, nullptr}};

PyGetSetDef kDataTypeGetSet[] = {
    {"type_code", GetCode, nullptr, "DLPack type code (int 0, uint 1, float 2, bfloat 4, bool 6).",
     nullptr},
    {"bits", GetBits, nullptr, "Bits per lane.", nullptr},
    {"lanes", GetLanes, nullptr, "Vector lanes (1 for scalars).", nullptr},
    {"itemsize", GetItemSize, nullptr, "Bytes per element.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

PyObject* MakeDataType(DLDataType dtype) {
  PyTCDataType* self = PyObject_New(PyTCDataType, &DataTypeType);
  if (self != nullptr) self->dtype = dtype;
  return reinterpret_cast<PyObject*>(self);
}

int DataTypeFromPy(PyObject* obj, DLDataType* out) {
  if (Py_TYPE(obj) == &DataTypeType) {
    *out = reinterpret_cast<PyTCDataType*>(obj)->dtype;
    return 0;
  }
  if (PyUnicode_Check(obj)) return ParseDataTypeStr(obj, out);
  // numpy dtypes print their name ("float32"), numpy scalar types carry it as __name__,
  // torch dtypes print "torch.float32".
  PyObject* text = PyType_Check(obj) ? PyObject_GetAttrString(obj, "__name__") : PyObject_Str(obj);
  if (text == nullptr) return -1;
  static PyObject* torch_prefix = PyUnicode_InternFromString("torch.");
  PyObject* name = text;
  if (torch_prefix != nullptr && PyUnicode_Check(text) &&
      PyUnicode_Tailmatch(text, torch_prefix, 0, 6, -1) == 1) {
    name = PyUnicode_Substring(text, 6, PyUnicode_GET_LENGTH(text));
    Py_DECREF(text);
    if (name == nullptr) return -1;
  }
  int rc = ParseDataTypeStr(name, out);
  Py_DECREF(name);
  return rc;
}

int InitDataTypeType(PyObject* module) {
  DataTypeType.tp_name = "tilecore.DataType";
  DataTypeType.tp_doc =
      "DataType(spec): an element type such as 'float32', 'int8', 'bool' or 'int8x4'.\n\n"
      "spec may also be a numpy dtype or scalar type. Compares equal to its spelling.";
  DataTypeType.tp_basicsize = sizeof(PyTCDataType);
  DataTypeType.tp_flags = Py_TPFLAGS_DEFAULT;
  DataTypeType.tp_new = DataTypeNew;
  DataTypeType.tp_repr = DataTypeRepr;
  DataTypeType.tp_str = DataTypeStr;
  DataTypeType.tp_hash = DataTypeHash;
  DataTypeType.tp_richcompare = DataTypeRichCompare;
  DataTypeType.tp_methods = kDataTypeMethods;
  DataTypeType.tp_getset = kDataTypeGetSet;
  if (PyType_Ready(&DataTypeType) < 0) return -1;
  return PyModule_AddObjectRef(module, "DataType", reinterpret_cast<PyObject*>(&DataTypeType));
}

}  // namespace tilecore_py
