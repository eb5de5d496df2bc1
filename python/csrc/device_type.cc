/*
 * python/csrc/device_type.cc — tilecore.Device, a DLDevice by value.
 *
 * Devices cross the FFI as a POD (kTCFFIDevice), so a Device is a small immutable
 * value object, compared and hashed by (device_type, device_id). Names ("cpu", "npu")
 * come from the library ("ffi.DeviceNameToType" / "ffi.DeviceTypeToName"), which keeps
 * one table of them.
 */
#include <climits>

#include "internal.h"

namespace tilecore_py {

PyTypeObject DeviceType = {PyVarObject_HEAD_INIT(nullptr, 0)};

namespace {

// A device type or id outside int32 is refused (OverflowError) instead of being narrowed
// to some other, valid device.
bool CheckInt32(long v, const char* what) {
  if (v < INT32_MIN || v > INT32_MAX) {
    PyErr_Format(PyExc_OverflowError, "device %s %ld does not fit in 32 bits", what, v);
    return false;
  }
  return true;
}

int ParseDeviceName(PyObject* name, DLDevice* out) {
  // "npu" or "npu:1"
  Py_ssize_t colon = PyUnicode_FindChar(name, ':', 0, PyUnicode_GET_LENGTH(name), 1);
  if (colon == -2) return -1;
  PyObject* kind = colon >= 0 ? PyUnicode_Substring(name, 0, colon) : Py_NewRef(name);
  if (kind == nullptr) return -1;
  PyObject* type = CallGlobal("ffi.DeviceNameToType", &kind, 1);
  Py_DECREF(kind);
  if (type == nullptr) return -1;
  long t = PyLong_AsLong(type);
  Py_DECREF(type);
  if (t == -1 && PyErr_Occurred()) return -1;
  long id = 0;
  if (colon >= 0) {
    PyObject* rest = PyUnicode_Substring(name, colon + 1, PyUnicode_GET_LENGTH(name));
    PyObject* num = rest ? PyLong_FromUnicodeObject(rest, 10) : nullptr;
    Py_XDECREF(rest);
    if (num == nullptr) return -1;
    id = PyLong_AsLong(num);
    Py_DECREF(num);
    if (id == -1 && PyErr_Occurred()) return -1;
  }
  if (!CheckInt32(t, "type") || !CheckInt32(id, "id")) return -1;
  out->device_type = static_cast<DLDeviceType>(t);
  out->device_id = static_cast<int32_t>(id);
  return 0;
}

PyObject* DeviceNew(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"device_type", "device_id", nullptr};
  PyObject* type = nullptr;
  PyObject* id = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Device", const_cast<char**>(kwlist), &type,
                                   &id)) {
    return nullptr;
  }
  DLDevice d{kDLCPU, 0};
  if (DeviceFromPy(type, &d) != 0) return nullptr;
  if (id != nullptr) {
    long v = PyLong_AsLong(id);
    if (v == -1 && PyErr_Occurred()) return nullptr;
    if (!CheckInt32(v, "id")) return nullptr;
    d.device_id = static_cast<int32_t>(v);
  }
  return MakeDevice(d);
}

PyObject* DeviceTypeName(PyObject* self, void* = nullptr) {
  PyObject* t = PyLong_FromLong(reinterpret_cast<PyTCDevice*>(self)->device.device_type);
  if (t == nullptr) return nullptr;
  PyObject* name = CallGlobal("ffi.DeviceTypeToName", &t, 1);
  Py_DECREF(t);
  return name;
}

PyObject* DeviceRepr(PyObject* self) {
  PyObject* name = DeviceTypeName(self);
  if (name == nullptr) return nullptr;
  PyObject* r =
      PyUnicode_FromFormat("%U(%d)", name, reinterpret_cast<PyTCDevice*>(self)->device.device_id);
  Py_DECREF(name);
  return r;
}

PyObject* DeviceRichCompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || Py_TYPE(b) != &DeviceType || Py_TYPE(a) != &DeviceType) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  DLDevice x = reinterpret_cast<PyTCDevice*>(a)->device,
           y = reinterpret_cast<PyTCDevice*>(b)->device;
  bool eq = x.device_type == y.device_type && x.device_id == y.device_id;
  return PyBool_FromLong((op == Py_EQ) == eq);
}

Py_hash_t DeviceHash(PyObject* self) {
  DLDevice d = reinterpret_cast<PyTCDevice*>(self)->device;
  Py_hash_t h = static_cast<Py_hash_t>(d.device_type) * 1000003 + d.device_id;
  return h == -1 ? -2 : h;
}

PyObject* GetDeviceType(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<PyTCDevice*>(self)->device.device_type);
}

PyObject* GetDeviceId(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<PyTCDevice*>(self)->device.device_id);
}

PyObject* DeviceReduce(PyObject* self, PyObject*) {
  DLDevice d = reinterpret_cast<PyTCDevice*>(self)->device;
  return Py_BuildValue("(O(ii))", reinterpret_cast<PyObject*>(&DeviceType),
                       static_cast<int>(d.device_type), static_cast<int>(d.device_id));
}

PyObject* DeviceDLPackDevice(PyObject* self, PyObject*) {
  DLDevice d = reinterpret_cast<PyTCDevice*>(self)->device;
  return Py_BuildValue("(ii)", static_cast<int>(d.device_type), static_cast<int>(d.device_id));
}

PyMethodDef kDeviceMethods[] = {
    {"__reduce__", DeviceReduce, METH_NOARGS, nullptr},
    {"__dlpack_device__", DeviceDLPackDevice, METH_NOARGS, "(device_type, device_id)."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef kDeviceGetSet[] = {
    {"device_type", GetDeviceType, nullptr, "DLPack device type number (cpu 1, npu 12).", nullptr},
    {"device_id", GetDeviceId, nullptr, "Index of the device among those of its type.", nullptr},
    {"type_name", DeviceTypeName, nullptr, "Name of the device type, e.g. 'npu'.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

PyObject* MakeDevice(DLDevice device) {
  PyTCDevice* self = PyObject_New(PyTCDevice, &DeviceType);
  if (self != nullptr) self->device = device;
  return reinterpret_cast<PyObject*>(self);
}

int DeviceFromPy(PyObject* obj, DLDevice* out) {
  if (Py_TYPE(obj) == &DeviceType) {
    *out = reinterpret_cast<PyTCDevice*>(obj)->device;
    return 0;
  }
  if (PyUnicode_Check(obj)) return ParseDeviceName(obj, out);
  if (PyLong_Check(obj)) {
    long t = PyLong_AsLong(obj);
    if (t == -1 && PyErr_Occurred()) return -1;
    if (!CheckInt32(t, "type")) return -1;
    *out = DLDevice{static_cast<DLDeviceType>(t), 0};
    return 0;
  }
  if (PyTuple_Check(obj) && PyTuple_GET_SIZE(obj) == 2) {
    long t = PyLong_AsLong(PyTuple_GET_ITEM(obj, 0));
    long id = PyLong_AsLong(PyTuple_GET_ITEM(obj, 1));
    if (PyErr_Occurred()) return -1;
    if (!CheckInt32(t, "type") || !CheckInt32(id, "id")) return -1;
    *out = DLDevice{static_cast<DLDeviceType>(t), static_cast<int32_t>(id)};
    return 0;
  }
  PyErr_Format(PyExc_TypeError,
               "expected a Device, a device name or (device_type, device_id), got '%s'",
               Py_TYPE(obj)->tp_name);
  return -1;
}

int InitDeviceType(PyObject* module) {
  DeviceType.tp_name = "tilecore.Device";
  DeviceType.tp_doc =
      "Device(device_type, device_id=0): where an array lives.\n\n"
      "device_type is a name ('cpu', 'npu', also 'npu:1') or a DLPack device type number.";
  DeviceType.tp_basicsize = sizeof(PyTCDevice);
  DeviceType.tp_flags = Py_TPFLAGS_DEFAULT;
  DeviceType.tp_new = DeviceNew;
  DeviceType.tp_repr = DeviceRepr;
  DeviceType.tp_hash = DeviceHash;
  DeviceType.tp_richcompare = DeviceRichCompare;
  DeviceType.tp_methods = kDeviceMethods;
  DeviceType.tp_getset = kDeviceGetSet;
  if (PyType_Ready(&DeviceType) < 0) return -1;
  return PyModule_AddObjectRef(module, "Device", reinterpret_cast<PyObject*>(&DeviceType));
}

}  // namespace tilecore_py
