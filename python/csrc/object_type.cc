/*
 * python/csrc/object_type.cc — tilecore._ffi_core.Object, the Python face of a TCFFIObject*.
 *
 * An Object holds one strong reference to its handle. Which Python class wraps a
 * handle is decided by its type index: the class registered for that index, else the
 * class of the nearest registered ancestor (tilecore.register_object fills the table).
 * Fields declared by C++ reflection (TCFFITypeInfo::fields) read as attributes.
 * Equality and hashing are by identity of the handle; structural comparison is a
 * separate, explicit function (tilecore.structural_equal).
 */
#include <cstring>
#include <string>
#include <vector>

#include "internal.h"

namespace tilecore_py {

PyTypeObject ObjectType = {PyVarObject_HEAD_INIT(nullptr, 0)};
PyTypeObject RValueRefType = {PyVarObject_HEAD_INIT(nullptr, 0)};

namespace {

/* ---------------------------------------------------------------------------
 * Class registry: type index -> Python class
 * ------------------------------------------------------------------------- */
// Registered classes, owned: {int type index: class}. Pending: {type key: class} for keys
// the library does not know yet (an extension not loaded); they resolve on first sight.
PyObject* g_registered = nullptr;
PyObject* g_pending = nullptr;
// Resolution cache, borrowed from g_registered (or static types): the class to use for
// each type index, nearest registered ancestor included. Cleared on every registration.
// Only touched with the GIL held.
std::vector<PyTypeObject*> g_resolved;

PyTypeObject* DefaultClassFor(int32_t index) {
  if (index == kTCFFIFunction) return &FunctionType;
  if (index == kTCFFINDArray) return &NDArrayType;
  return &ObjectType;
}

// Looks a candidate index up among registered (or pending, by key) classes. Borrowed.
PyTypeObject* RegisteredClass(int32_t index) {
  PyObject* key = PyLong_FromLong(index);
  if (key == nullptr) return nullptr;
  PyObject* cls = PyDict_GetItemWithError(g_registered, key);
  if (cls == nullptr && !PyErr_Occurred() && PyDict_GET_SIZE(g_pending) > 0) {
    const TCFFITypeInfo* info = TCFFIGetTypeInfo(index);
    if (info != nullptr) {
      PyObject* type_key = PyUnicode_FromStringAndSize(
          info->type_key.data, static_cast<Py_ssize_t>(info->type_key.size));
      if (type_key != nullptr) {
        cls = PyDict_GetItemWithError(g_pending, type_key);
        if (cls != nullptr) {
          // The key is known now: promote the pending class to a registered one
          // (g_registered takes its reference before g_pending drops its own).
          if (PyDict_SetItem(g_registered, key, cls) < 0) {
            cls = nullptr;
          } else {
            PyDict_DelItem(g_pending, type_key);
          }
        }
        Py_DECREF(type_key);
      }
    }
  }
  Py_DECREF(key);
  PyErr_Clear();  // a lookup failure only means "not registered"
  return reinterpret_cast<PyTypeObject*>(cls);
}

PyTypeObject* ResolveClass(int32_t index) {
  if (index >= 0 && static_cast<size_t>(index) < g_resolved.size() &&
      g_resolved[index] != nullptr) {
    return g_resolved[index];
  }
  PyTypeObject* found = RegisteredClass(index);
  if (found == nullptr) {
    const TCFFITypeInfo* info = TCFFIGetTypeInfo(index);
    if (info != nullptr) {
      for (int32_t d = info->type_depth - 1; d >= 0 && found == nullptr; --d) {
        found = RegisteredClass(info->type_ancestors[d]);
      }
    }
  }
  if (found == nullptr) found = DefaultClassFor(index);
  if (index >= 0 && index < (1 << 20)) {
    if (g_resolved.size() <= static_cast<size_t>(index)) g_resolved.resize(index + 1, nullptr);
    g_resolved[index] = found;
  }
  return found;
}

/* ---------------------------------------------------------------------------
 * Reflection
 * ------------------------------------------------------------------------- */
// Finds a field by name on the kind or its ancestors (nearest first).
const TCFFIFieldInfo* FindField(int32_t type_index, const char* name, size_t len) {
  const TCFFITypeInfo* info = TCFFIGetTypeInfo(type_index);
  if (info == nullptr) return nullptr;
  for (int32_t level = info->type_depth; level >= 0; --level) {
    const TCFFITypeInfo* t =
        level == info->type_depth ? info : TCFFIGetTypeInfo(info->type_ancestors[level]);
    if (t == nullptr) continue;
    for (int32_t i = 0; i < t->num_fields; ++i) {
      const TCFFIFieldInfo& f = t->fields[i];
      if (f.name.size == len && std::memcmp(f.name.data, name, len) == 0) return &f;
    }
  }
  return nullptr;
}

PyObject* ObjectNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  // An empty object; subclasses fill the handle with _init_handle_by_constructor.
  PyObject* self = type->tp_alloc(type, 0);
  if (self != nullptr) reinterpret_cast<PyTCObject*>(self)->handle = nullptr;
  return self;
}

void ObjectDealloc(PyObject* self) {
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(self)->handle;
  if (h != nullptr) TCFFIObjectDecRef(h);
  Py_TYPE(self)->tp_free(self);
}

PyObject* ObjectRichCompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || !IsTCObject(a) || !IsTCObject(b)) Py_RETURN_NOTIMPLEMENTED;
  bool same = reinterpret_cast<PyTCObject*>(a)->handle == reinterpret_cast<PyTCObject*>(b)->handle;
  return PyBool_FromLong((op == Py_EQ) == same);
}

Py_hash_t ObjectHash(PyObject* self) {
  // Identity hash of the handle; rotate away the always-zero alignment bits.
  uintptr_t p = reinterpret_cast<uintptr_t>(reinterpret_cast<PyTCObject*>(self)->handle);
  Py_hash_t h = static_cast<Py_hash_t>((p >> 4) | (p << (8 * sizeof(p) - 4)));
  return h == -1 ? -2 : h;
}

PyObject* ObjectRepr(PyObject* self) {
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(self)->handle;
  if (h == nullptr) return PyUnicode_FromFormat("<%s: empty>", Py_TYPE(self)->tp_name);
  PyObject* text = CallGlobal("ffi.Repr", &self, 1);
  if (text != nullptr && PyUnicode_Check(text)) return text;
  // Printing must never fail: fall back to the type key and address.
  Py_XDECREF(text);
  PyErr_Clear();
  PyObject* key = TypeKeyOf(h->type_index);
  if (key == nullptr) return nullptr;
  PyObject* r = PyUnicode_FromFormat("<%U object at %p>", key, static_cast<void*>(h));
  Py_DECREF(key);
  return r;
}

PyObject* ObjectGetAttro(PyObject* self, PyObject* name) {
  // Python attributes (methods, properties, instance dict) come first, reflected fields
  // second; the suppressing lookup avoids building an AttributeError on the field path.
#if PY_VERSION_HEX >= 0x030700A0
  PyObject* r = _PyObject_GenericGetAttrWithDict(self, name, nullptr, 1);
  if (r != nullptr || PyErr_Occurred()) return r;
#else
  PyObject* r = PyObject_GenericGetAttr(self, name);
  if (r != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
  PyErr_Clear();
#endif
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(self)->handle;
  Py_ssize_t len = 0;
  const char* s = PyUnicode_AsUTF8AndSize(name, &len);
  if (s == nullptr) return nullptr;
  if (h == nullptr) {
    return PyErr_Format(ErrorClassForKind("AttributeError", PyExc_AttributeError),
                        "'%s' object is empty (it holds no C++ object, or its reference was "
                        "moved); it has no attribute '%U'",
                        Py_TYPE(self)->tp_name, name);
  }
  const TCFFIFieldInfo* field = FindField(h->type_index, s, static_cast<size_t>(len));
  if (field == nullptr || field->getter == nullptr) {
    PyObject* key = TypeKeyOf(h->type_index);
    if (key == nullptr) return nullptr;
    PyErr_Format(ErrorClassForKind("AttributeError", PyExc_AttributeError),
                 "'%U' object has no attribute '%U'", key, name);
    Py_DECREF(key);
    return nullptr;
  }
  TCFFIAny value{};
  if (field->getter(reinterpret_cast<char*>(h) + field->offset, &value) != 0) {
    return RaiseFromFFIError(-1, nullptr);
  }
  return AnyToPy(&value, true);
}

int ObjectSetAttro(PyObject* self, PyObject* name, PyObject* value) {
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(self)->handle;
  if (h != nullptr && value != nullptr && PyUnicode_Check(name)) {
    Py_ssize_t len = 0;
    const char* s = PyUnicode_AsUTF8AndSize(name, &len);
    if (s == nullptr) return -1;
    const TCFFIFieldInfo* field = FindField(h->type_index, s, static_cast<size_t>(len));
    if (field != nullptr) {
      if (!(field->flags & kTCFFIFieldWritable) || field->setter == nullptr) {
        PyObject* key = TypeKeyOf(h->type_index);
        if (key == nullptr) return -1;
        PyErr_Format(ErrorClassForKind("AttributeError", PyExc_AttributeError),
                     "field '%U' of '%U' is read-only", name, key);
        Py_DECREF(key);
        return -1;
      }
      ArgFrame frame(1);
      if (ConvertArg(value, 0, frame, nullptr) != 0) return -1;
      if (field->setter(reinterpret_cast<char*>(h) + field->offset, frame.args()) != 0) {
        RaiseFromFFIError(-1, nullptr);
        return -1;
      }
      return 0;
    }
  }
  return PyObject_GenericSetAttr(self, name, value);
}

PyObject* ObjectDir(PyObject* self, PyObject*) {
  // object.__dir__ plus the reflected fields of the kind and its ancestors.
  PyObject* names =
      PyObject_CallMethod(reinterpret_cast<PyObject*>(&PyBaseObject_Type), "__dir__", "O", self);
  if (names == nullptr) return nullptr;
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(self)->handle;
  const TCFFITypeInfo* info = h ? TCFFIGetTypeInfo(h->type_index) : nullptr;
  if (info != nullptr) {
    for (int32_t level = info->type_depth; level >= 0; --level) {
      const TCFFITypeInfo* t =
          level == info->type_depth ? info : TCFFIGetTypeInfo(info->type_ancestors[level]);
      for (int32_t i = 0; t != nullptr && i < t->num_fields; ++i) {
        PyObject* n = PyUnicode_FromStringAndSize(t->fields[i].name.data,
                                                  static_cast<Py_ssize_t>(t->fields[i].name.size));
        if (n == nullptr || PyList_Append(names, n) < 0) {
          Py_XDECREF(n);
          Py_DECREF(names);
          return nullptr;
        }
        Py_DECREF(n);
      }
    }
  }
  return names;
}

PyObject* ObjectMove(PyObject* self, PyObject*) {
  PyTCObject* o = reinterpret_cast<PyTCObject*>(self);
  if (o->handle == nullptr) {
    return PyErr_Format(PyExc_ValueError, "cannot _move() an empty %s", Py_TYPE(self)->tp_name);
  }
  PyTCRValueRef* ref = PyObject_New(PyTCRValueRef, &RValueRefType);
  if (ref == nullptr) return nullptr;
  ref->handle = o->handle;  // the reference changes hands; no count changes
  o->handle = nullptr;
  return reinterpret_cast<PyObject*>(ref);
}

PyObject* ObjectSameAs(PyObject* self, PyObject* other) {
  if (!IsTCObject(other)) Py_RETURN_FALSE;
  return PyBool_FromLong(reinterpret_cast<PyTCObject*>(self)->handle ==
                         reinterpret_cast<PyTCObject*>(other)->handle);
}

PyObject* ObjectInitByConstructor(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  // self._init_handle_by_constructor(fconstructor, *args): lets a registered Python
  // class build its C++ object in __init__.
  if (nargs < 1 || Py_TYPE(args[0]) != &FunctionType) {
    return PyErr_Format(PyExc_TypeError, "_init_handle_by_constructor expects a Function first");
  }
  TCFFIObject* f = reinterpret_cast<PyTCObject*>(args[0])->handle;
  if (f == nullptr) return PyErr_Format(PyExc_ValueError, "constructor Function is empty");
  PyObject* made =
      CallHandle(f, args + 1, nargs - 1, reinterpret_cast<PyTCFunction*>(args[0])->name);
  if (made == nullptr) return nullptr;
  if (!IsTCObject(made)) {
    Py_DECREF(made);
    return PyErr_Format(PyExc_TypeError, "constructor did not return a tilecore object");
  }
  PyTCObject* o = reinterpret_cast<PyTCObject*>(self);
  TCFFIObject* old = o->handle;
  o->handle = reinterpret_cast<PyTCObject*>(made)->handle;
  if (o->handle != nullptr) TCFFIObjectIncRef(o->handle);
  if (old != nullptr) TCFFIObjectDecRef(old);
  Py_DECREF(made);
  Py_RETURN_NONE;
}

PyObject* ObjectReduce(PyObject* self, PyObject*) {
  // Pickling (and copy.deepcopy) go through JSON: (tilecore.load_json, (save_json(self),)).
  // Kinds JSON cannot save (functions, arrays) fail with save_json's error.
  PyObject* ser = PyImport_ImportModule("tilecore.ffi.serialization");
  if (ser == nullptr) return nullptr;
  PyObject* save = PyObject_GetAttrString(ser, "save_json");
  PyObject* load = PyObject_GetAttrString(ser, "load_json");
  Py_DECREF(ser);
  PyObject* text = save != nullptr && load != nullptr ? PyObject_CallOneArg(save, self) : nullptr;
  PyObject* r = text != nullptr ? Py_BuildValue("(O(O))", load, text) : nullptr;
  Py_XDECREF(save);
  Py_XDECREF(load);
  Py_XDECREF(text);
  return r;
}

PyObject* ObjectGetHandle(PyObject* self, void*) {
  // A ctypes.c_void_p, so `x.handle.value` is the address or None (as in TVM).
  static PyObject* c_void_p = nullptr;
  if (c_void_p == nullptr) {
    PyObject* ctypes = PyImport_ImportModule("ctypes");
    if (ctypes == nullptr) return nullptr;
    c_void_p = PyObject_GetAttrString(ctypes, "c_void_p");
    Py_DECREF(ctypes);
    if (c_void_p == nullptr) return nullptr;
  }
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(self)->handle;
  if (h == nullptr) return PyObject_CallNoArgs(c_void_p);
  PyObject* addr = PyLong_FromVoidPtr(h);
  if (addr == nullptr) return nullptr;
  PyObject* r = PyObject_CallOneArg(c_void_p, addr);
  Py_DECREF(addr);
  return r;
}

PyObject* ObjectGetTypeIndex(PyObject* self, void*) {
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(self)->handle;
  if (h == nullptr) Py_RETURN_NONE;
  return PyLong_FromLong(h->type_index);
}

PyObject* ObjectGetTypeKey(PyObject* self, void*) {
  TCFFIObject* h = reinterpret_cast<PyTCObject*>(self)->handle;
  if (h == nullptr) Py_RETURN_NONE;
  return TypeKeyOf(h->type_index);
}

PyObject* ObjectGetIsEmpty(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<PyTCObject*>(self)->handle == nullptr);
}

PyMethodDef kObjectMethods[] = {
    {"_move", ObjectMove, METH_NOARGS,
     "Hands this object's reference over to the returned value, leaving this object empty.\n"
     "Passing the result as an argument lets the callee take the reference over."},
    {"same_as", ObjectSameAs, METH_O, "Whether both refer to the same C++ object."},
    {"__reduce__", ObjectReduce, METH_NOARGS, "Pickles the object graph as tilecore JSON."},
    {"__dir__", ObjectDir, METH_NOARGS, nullptr},
    {"_init_handle_by_constructor", AsPyCFunction(ObjectInitByConstructor), METH_FASTCALL,
     "Sets the handle to the object returned by fconstructor(*args)."},
    {"__init_handle_by_constructor__", AsPyCFunction(ObjectInitByConstructor), METH_FASTCALL,
     "Alias of _init_handle_by_constructor."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef kObjectGetSet[] = {
    {"handle", ObjectGetHandle, nullptr, "The object's address as ctypes.c_void_p.", nullptr},
    {"type_index", ObjectGetTypeIndex, nullptr, "Run-time type index of the object.", nullptr},
    {"type_key", ObjectGetTypeKey, nullptr, "Type key of the object, e.g. 'ffi.Array'.", nullptr},
    {"_is_empty", ObjectGetIsEmpty, nullptr, "True once the reference was moved out.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

void RValueRefDealloc(PyObject* self) {
  TCFFIObject* h = reinterpret_cast<PyTCRValueRef*>(self)->handle;
  if (h != nullptr) TCFFIObjectDecRef(h);
  PyObject_Free(self);
}

/* ---------------------------------------------------------------------------
 * Module functions
 * ------------------------------------------------------------------------- */
PyObject* RegisterObjectClass(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  // _register_object(type_key_or_index, cls) -> type index, or None while pending.
  if (nargs != 2 || !PyType_Check(args[1]) ||
      !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(args[1]), &ObjectType)) {
    return PyErr_Format(PyExc_TypeError,
                        "_register_object(key_or_index, cls): cls must subclass tilecore.Object");
  }
  PyObject* cls = args[1];
  g_resolved.clear();
  int32_t index = -1;
  if (PyLong_Check(args[0])) {
    index = static_cast<int32_t>(PyLong_AsLong(args[0]));
    if (index == -1 && PyErr_Occurred()) return nullptr;
  } else if (PyUnicode_Check(args[0])) {
    Py_ssize_t len = 0;
    const char* s = PyUnicode_AsUTF8AndSize(args[0], &len);
    if (s == nullptr) return nullptr;
    TCFFIByteArray key{s, static_cast<size_t>(len)};
    if (TCFFITypeKeyToIndex(&key, &index) != 0) {
      // Not known to the library (yet): keep it until a handle of that kind shows up.
      TCFFIObject* err = nullptr;
      TCFFIErrorMoveFromRaised(&err);
      if (err != nullptr) TCFFIObjectDecRef(err);
      if (PyDict_SetItem(g_pending, args[0], cls) < 0) return nullptr;
      Py_RETURN_NONE;
    }
  } else {
    return PyErr_Format(PyExc_TypeError, "_register_object: key must be str or int");
  }
  if (index == kTCFFIFunction && cls != reinterpret_cast<PyObject*>(&FunctionType)) {
    return PyErr_Format(PyExc_TypeError, "Function cannot be subclassed");
  }
  PyObject* key = PyLong_FromLong(index);
  if (key == nullptr) return nullptr;
  int rc = PyDict_SetItem(g_registered, key, cls);
  Py_DECREF(key);
  if (rc < 0) return nullptr;
  return PyLong_FromLong(index);
}

PyObject* TypeKeyToIndex(PyObject*, PyObject* arg) {
  Py_ssize_t len = 0;
  const char* s = PyUnicode_AsUTF8AndSize(arg, &len);
  if (s == nullptr) return nullptr;
  TCFFIByteArray key{s, static_cast<size_t>(len)};
  int32_t index = -1;
  if (TCFFITypeKeyToIndex(&key, &index) != 0) return RaiseFromFFIError(-1, nullptr);
  return PyLong_FromLong(index);
}

PyObject* TypeInfoFields(PyObject*, PyObject* arg) {
  // _type_fields(index) -> [(name, doc, flags)], the kind's own fields then ancestors'.
  long index = PyLong_AsLong(arg);
  if (index == -1 && PyErr_Occurred()) return nullptr;
  const TCFFITypeInfo* info = TCFFIGetTypeInfo(static_cast<int32_t>(index));
  PyObject* out = PyList_New(0);
  if (out == nullptr || info == nullptr) return out;
  for (int32_t level = info->type_depth; level >= 0; --level) {
    const TCFFITypeInfo* t =
        level == info->type_depth ? info : TCFFIGetTypeInfo(info->type_ancestors[level]);
    for (int32_t i = 0; t != nullptr && i < t->num_fields; ++i) {
      const TCFFIFieldInfo& f = t->fields[i];
      PyObject* item = Py_BuildValue("(s#s#L)", f.name.data, static_cast<Py_ssize_t>(f.name.size),
                                     f.doc.data ? f.doc.data : "",
                                     static_cast<Py_ssize_t>(f.doc.data ? f.doc.size : 0),
                                     static_cast<long long>(f.flags));
      if (item == nullptr || PyList_Append(out, item) < 0) {
        Py_XDECREF(item);
        Py_DECREF(out);
        return nullptr;
      }
      Py_DECREF(item);
    }
  }
  return out;
}

}  // namespace

PyObject* TypeKeyOf(int32_t type_index) {
  const TCFFITypeInfo* info = TCFFIGetTypeInfo(type_index);
  if (info == nullptr || info->type_key.data == nullptr) {
    return PyUnicode_FromFormat("<type index %d>", static_cast<int>(type_index));
  }
  return PyUnicode_FromStringAndSize(info->type_key.data,
                                     static_cast<Py_ssize_t>(info->type_key.size));
}

PyObject* WrapObject(TCFFIObject* handle, bool owned) {
  PyTypeObject* cls = ResolveClass(handle->type_index);
  if (cls == &FunctionType) return WrapFunction(handle, owned, nullptr);
  PyObject* self = cls->tp_alloc(cls, 0);
  if (self == nullptr) {
    if (owned) TCFFIObjectDecRef(handle);
    return nullptr;
  }
  if (!owned) TCFFIObjectIncRef(handle);
  reinterpret_cast<PyTCObject*>(self)->handle = handle;
  return self;
}

PyMethodDef kObjectModuleMethods[] = {
    {"_register_object", AsPyCFunction(RegisterObjectClass), METH_FASTCALL,
     "_register_object(type_key_or_index, cls): wrap handles of that kind in cls."},
    {"_type_key_to_index", TypeKeyToIndex, METH_O, "Type index of a registered type key."},
    {"_type_fields", TypeInfoFields, METH_O, "Reflected fields of a type index."},
    {nullptr, nullptr, 0, nullptr}};

int InitObjectType(PyObject* module) {
  g_registered = PyDict_New();
  g_pending = PyDict_New();
  if (g_registered == nullptr || g_pending == nullptr) return -1;
  if (PyModule_AddObjectRef(module, "_object_classes", g_registered) < 0) return -1;

  ObjectType.tp_name = "tilecore.Object";
  ObjectType.tp_doc =
      "Base class of every tilecore object: a strong reference to a C++ object.\n\n"
      "Attributes read the object's reflected fields; == and hash are by identity.";
  ObjectType.tp_basicsize = sizeof(PyTCObject);
  ObjectType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  ObjectType.tp_new = ObjectNew;
  ObjectType.tp_dealloc = ObjectDealloc;
  ObjectType.tp_repr = ObjectRepr;
  ObjectType.tp_hash = ObjectHash;
  ObjectType.tp_richcompare = ObjectRichCompare;
  ObjectType.tp_getattro = ObjectGetAttro;
  ObjectType.tp_setattro = ObjectSetAttro;
  ObjectType.tp_methods = kObjectMethods;
  ObjectType.tp_getset = kObjectGetSet;
  if (PyType_Ready(&ObjectType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Object", reinterpret_cast<PyObject*>(&ObjectType)) < 0) {
    return -1;
  }

  RValueRefType.tp_name = "tilecore.ObjectRValueRef";
  RValueRefType.tp_doc = "An object reference in transit, made by Object._move().";
  RValueRefType.tp_basicsize = sizeof(PyTCRValueRef);
  RValueRefType.tp_flags = Py_TPFLAGS_DEFAULT;
  RValueRefType.tp_dealloc = RValueRefDealloc;
  if (PyType_Ready(&RValueRefType) < 0) return -1;
  return PyModule_AddObjectRef(module, "ObjectRValueRef",
                               reinterpret_cast<PyObject*>(&RValueRefType));
}

}  // namespace tilecore_py
