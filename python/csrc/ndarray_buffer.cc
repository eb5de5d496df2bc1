/*
 * python/csrc/ndarray_buffer.cc — numpy arrays as arguments through the buffer protocol.
 *
 * Passing a numpy array to a packed function is the argument path's common case. The
 * general route (ndarray_type.cc) calls the Python method __dlpack__, which builds a
 * capsule the callee then unwraps; for an exact numpy.ndarray the buffer protocol gives
 * the same facts (pointer, shape, strides in bytes, format, read-only) in one C call, so
 * the NDArray is made from a Py_buffer held until the NDArray dies. Anything the buffer
 * cannot describe exactly (a foreign byte order, a format without a DLPack type, strides
 * that are not whole elements) goes the general way, which reports it.
 */
#include <cstring>

#include "internal.h"

namespace tilecore_py {
namespace {

struct BufferTensor {
  DLManagedTensorVersioned managed{};
  Py_buffer view{};
};

void ReleaseBufferTensor(DLManagedTensorVersioned* self) {
  auto* owner = static_cast<BufferTensor*>(self->manager_ctx);
  if (PythonIsAlive()) {  // the last reference may be dropped on a thread without the GIL
    PyGILState_STATE gil = PyGILState_Ensure();
    PyBuffer_Release(&owner->view);
    PyGILState_Release(gil);
  }
  delete owner;
}

/*! \brief The DLPack type of a struct-module format of one native item, or false. */
bool DLTypeOfFormat(const char* format, Py_ssize_t itemsize, DLDataType* out) {
  if (format == nullptr) format = "B";
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (*format == '<') ++format;
#endif
  if (*format == '@' || *format == '=') ++format;
  if (format[0] == '\0' || format[1] != '\0') return false;
  uint8_t code;
  switch (format[0]) {
    case '?':
      code = kDLBool;
      break;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
      code = kDLInt;
      break;
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
      code = kDLUInt;
      break;
    case 'e':
    case 'f':
    case 'd':
      code = kDLFloat;
      break;
    default:
      return false;
  }
  if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8) return false;
  *out = DLDataType{code, static_cast<uint8_t>(itemsize * 8), 1};
  return true;
}

}  // namespace

bool IsNumpyArrayType(PyTypeObject* t) {
  static PyTypeObject* numpy_ndarray = nullptr;  // found once, compared by pointer after
  if (t == numpy_ndarray) return true;
  if (numpy_ndarray == nullptr && std::strcmp(t->tp_name, "numpy.ndarray") == 0) {
    numpy_ndarray = t;
    return true;
  }
  return false;
}

TCFFIObject* NDArrayFromBuffer(PyObject* obj) {
  auto* owner = new BufferTensor();
  if (PyObject_GetBuffer(obj, &owner->view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    delete owner;
    return nullptr;
  }
  Py_buffer& v = owner->view;
  DLDataType dtype;
  bool ok = v.ndim <= 64 && DLTypeOfFormat(v.format, v.itemsize, &dtype);
  int64_t shape[64], strides[64];
  for (int d = 0; ok && d < v.ndim; ++d) {
    shape[d] = v.shape[d];
    ok = v.strides[d] % v.itemsize == 0;
    strides[d] = ok ? v.strides[d] / v.itemsize : 0;
  }
  if (!ok) {
    PyBuffer_Release(&v);
    delete owner;
    return nullptr;
  }
  DLManagedTensorVersioned& m = owner->managed;
  m.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m.manager_ctx = owner;
  m.deleter = ReleaseBufferTensor;
  m.flags = v.readonly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  m.dl_tensor.data = v.buf;
  m.dl_tensor.device = DLDevice{kDLCPU, 0};
  m.dl_tensor.ndim = v.ndim;
  m.dl_tensor.dtype = dtype;
  m.dl_tensor.shape = shape;  // copied by the NDArray
  m.dl_tensor.strides = PyBuffer_IsContiguous(&v, 'C') ? nullptr : strides;
  m.dl_tensor.byte_offset = 0;
  TCFFIObject* out = nullptr;
  if (TCFFINDArrayFromDLPackVersioned(&m, &out) != 0) {  // the deleter ran on failure
    RaiseFromFFIError(-1, nullptr);
    return nullptr;
  }
  return out;
}

}  // namespace tilecore_py
