/*
 * python/csrc/error.cc — errors across the bridge, both directions.
 *
 * C++ -> Python: a TCFFIError (kind, message, backtrace) becomes an instance of the
 * class tilecore.error registered for its kind (e.g. tilecore.error.TypeError, which
 * is also a builtins.TypeError); the C++ backtrace is attached as a note.
 * If the error's cause is a Python exception (raised in a callback, see callback.cc),
 * that same exception object is raised again: its own traceback (the callback's
 * frames) is kept, Python adds the caller's frames as it unwinds, and the C++ frames
 * in between are attached as a note, so the user sees all three.
 *
 * Python -> C++: a Python exception becomes a TCFFIError whose kind is the nearest
 * builtin exception class ("ValueError" for a subclass of ValueError), whose message
 * is str(exc), whose backtrace is the formatted Python traceback, and whose cause is
 * the exception object (kTCFFIOpaquePyObject).
 */
#include <cstring>

#include "internal.h"

namespace tilecore_py {

namespace {

// {kind: exception class}, filled by tilecore.error.
PyObject* g_error_classes = nullptr;

PyObject* ByteArrayToStr(const TCFFIByteArray& b) {
  if (b.data == nullptr || b.size == 0) return PyUnicode_FromStringAndSize("", 0);
  return PyUnicode_DecodeUTF8(b.data, static_cast<Py_ssize_t>(b.size), "replace");
}

PyObject* ErrorClassFor(PyObject* kind) {
  PyObject* cls = kind ? PyDict_GetItemWithError(g_error_classes, kind) : nullptr;
  if (cls == nullptr) {
    PyErr_Clear();
    cls = PyDict_GetItemString(g_error_classes, "RuntimeError");
  }
  return cls != nullptr ? cls : PyExc_RuntimeError;  // borrowed
}

void AddNote(PyObject* exc, const char* header, PyObject* text) {
  // BaseException.add_note exists from Python 3.11; older versions just lose the note.
  if (PyUnicode_GET_LENGTH(text) == 0) return;
  // An exception that crosses many Python <-> C++ levels (deep recursion through callbacks)
  // keeps the note of the innermost crossing only: one per level would make the exception
  // grow with the depth, and printing it quadratic.
  if (PyObject* notes = PyObject_GetAttrString(exc, "__notes__")) {
    bool seen = false;
    PyObject* head = PyUnicode_FromString(header);
    if (head != nullptr && PyList_Check(notes)) {
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(notes) && !seen; ++i) {
        PyObject* n = PyList_GET_ITEM(notes, i);
        seen = PyUnicode_Check(n) && PyUnicode_Tailmatch(n, head, 0, PY_SSIZE_T_MAX, -1) == 1;
      }
    }
    Py_XDECREF(head);
    Py_DECREF(notes);
    PyErr_Clear();
    if (seen) return;
  } else {
    PyErr_Clear();
  }
  PyObject* note = PyUnicode_FromFormat("%s\n%U", header, text);
  if (note == nullptr) {
    PyErr_Clear();
    return;
  }
  PyObject* r = PyObject_CallMethod(exc, "add_note", "O", note);
  Py_XDECREF(r);
  Py_DECREF(note);
  PyErr_Clear();
}

// The nearest builtin class in the exception's MRO names its kind.
PyObject* KindOf(PyObject* exc) {
  PyObject* mro = Py_TYPE(exc)->tp_mro;
  for (Py_ssize_t i = 0; mro != nullptr && i < PyTuple_GET_SIZE(mro); ++i) {
    PyTypeObject* t = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
    if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
      const char* name = t->tp_name;
      const char* dot = std::strrchr(name, '.');
      return PyUnicode_FromString(dot ? dot + 1 : name);
    }
  }
  return PyUnicode_FromString("RuntimeError");
}

constexpr int kMaxNoteFrames = 20;

PyObject* FormatTraceback(PyObject* tb) {
  if (tb == nullptr || tb == Py_None) return PyUnicode_FromStringAndSize("", 0);
  PyObject* traceback = PyImport_ImportModule("traceback");
  if (traceback == nullptr) return nullptr;
  // The innermost frames only (the tail of the linked list): the traceback of an exception that
  // unwinds through deep recursion holds every level, and formatting it whole at each C++ crossing
  // made the unwinding quadratic in the depth. The exception keeps its whole traceback.
  Py_ssize_t n = 0;
  for (PyObject* t = tb; t != nullptr && t != Py_None;
       t = reinterpret_cast<PyObject*>(reinterpret_cast<PyTracebackObject*>(t)->tb_next)) {
    ++n;
  }
  for (; n > kMaxNoteFrames; --n)
    tb = reinterpret_cast<PyObject*>(reinterpret_cast<PyTracebackObject*>(tb)->tb_next);
  PyObject* lines = PyObject_CallMethod(traceback, "format_tb", "O", tb);
  Py_DECREF(traceback);
  if (lines == nullptr) return nullptr;
  PyObject* empty = PyUnicode_FromStringAndSize("", 0);
  PyObject* text = empty ? PyUnicode_Join(empty, lines) : nullptr;
  Py_XDECREF(empty);
  Py_DECREF(lines);
  return text;
}

PyObject* RegisterErrorClass(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyExceptionClass_Check(args[1])) {
    return PyErr_Format(PyExc_TypeError, "_register_error_class(kind: str, cls: exception class)");
  }
  if (PyDict_SetItem(g_error_classes, args[0], args[1]) < 0) return nullptr;
  Py_RETURN_NONE;
}

}  // namespace

PyObject* ErrorClassForKind(const char* kind, PyObject* fallback) {
  PyObject* cls = g_error_classes ? PyDict_GetItemString(g_error_classes, kind) : nullptr;
  return cls != nullptr ? cls : fallback;
}

PyObject* RaiseFromFFIError(int rc, PyObject* fname) {
  // -2: a Python signal handler already raised (e.g. KeyboardInterrupt); keep that.
  if (rc == -2 && PyErr_Occurred()) return nullptr;
  TCFFIObject* err = nullptr;
  TCFFIErrorMoveFromRaised(&err);
  if (err == nullptr) {
    if (!PyErr_Occurred()) {
      if (fname != nullptr) {
        PyErr_Format(PyExc_RuntimeError, "%U failed without setting an error", fname);
      } else {
        PyErr_SetString(PyExc_RuntimeError, "a tilecore call failed without setting an error");
      }
    }
    return nullptr;
  }
  if (err->type_index != kTCFFIError) {
    TCFFIObjectDecRef(err);
    PyErr_SetString(PyExc_RuntimeError, "a tilecore call raised a value that is not an Error");
    return nullptr;
  }
  TCFFIErrorCell* cell = CellOf<TCFFIErrorCell>(err);
  PyObject* backtrace = ByteArrayToStr(cell->backtrace);
  PyObject* cause = cell->cause != nullptr ? OpaquePyObjectGet(cell->cause) : nullptr;
  if (backtrace != nullptr && cause != nullptr && PyExceptionInstance_Check(cause)) {
    // The Python exception a callback raised: raise it again, as itself.
    Py_INCREF(cause);
    TCFFIObjectDecRef(err);
    AddNote(cause, "The exception passed through these C++ frames (innermost last):", backtrace);
    Py_DECREF(backtrace);
    PyObject* type = Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(cause)));
    PyObject* tb = PyException_GetTraceback(cause);
    PyErr_Restore(type, cause, tb);
    return nullptr;
  }
  PyObject* kind = ByteArrayToStr(cell->kind);
  PyObject* message = ByteArrayToStr(cell->message);
  TCFFIObjectDecRef(err);
  if (kind == nullptr || message == nullptr || backtrace == nullptr) {
    Py_XDECREF(kind);
    Py_XDECREF(message);
    Py_XDECREF(backtrace);
    return nullptr;
  }
  PyObject* cls = ErrorClassFor(kind);
  PyObject* exc = PyObject_CallOneArg(cls, message);
  if (exc != nullptr) {
    PyObject_SetAttrString(exc, "kind", kind);
    PyObject_SetAttrString(exc, "backtrace", backtrace);
    PyErr_Clear();
    AddNote(exc, "C++ backtrace (innermost last):", backtrace);
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
    Py_DECREF(exc);
  }
  Py_DECREF(kind);
  Py_DECREF(message);
  Py_DECREF(backtrace);
  return nullptr;
}

int SetFFIErrorFromPyErr() {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  if (type == nullptr) {
    TCFFIErrorSetRaisedFromCStr("RuntimeError", "a Python callback failed without an exception");
    return -1;
  }
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb != nullptr) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);

  PyObject* kind = KindOf(value);
  PyObject* message = PyObject_Str(value);
  if (message == nullptr) {
    PyErr_Clear();
    message = PyUnicode_FromString("<exception str() failed>");
  }
  PyObject* exc_tb = PyException_GetTraceback(value);
  PyObject* trace = FormatTraceback(exc_tb);
  Py_XDECREF(exc_tb);
  if (trace == nullptr) {
    PyErr_Clear();
    trace = PyUnicode_FromStringAndSize("", 0);
  }
  TCFFIObject* cause = MakeOpaquePyObject(value);
  Py_DECREF(value);  // the cause holds it now
  int ok = kind != nullptr && message != nullptr && trace != nullptr && cause != nullptr;
  if (ok) {
    Py_ssize_t nk = 0, nm = 0, nt = 0;
    const char* k = PyUnicode_AsUTF8AndSize(kind, &nk);
    const char* m = PyUnicode_AsUTF8AndSize(message, &nm);
    const char* t = PyUnicode_AsUTF8AndSize(trace, &nt);
    TCFFIObject* err = nullptr;
    if (k && m && t) {
      TCFFIByteArray bk{k, static_cast<size_t>(nk)}, bm{m, static_cast<size_t>(nm)},
          bt{t, static_cast<size_t>(nt)};
      if (TCFFIErrorCreate(&bk, &bm, &bt, cause, &err) == 0) {
        TCFFIErrorSetRaised(err);
        TCFFIObjectDecRef(err);
      } else {
        ok = 0;  // the library's own error is raised already
      }
    } else {
      ok = 0;
      TCFFIErrorSetRaisedFromCStr("RuntimeError", "a Python callback raised an unprintable error");
    }
  } else {
    TCFFIErrorSetRaisedFromCStr("RuntimeError", "out of memory while reporting a Python error");
  }
  PyErr_Clear();
  if (cause != nullptr) TCFFIObjectDecRef(cause);
  Py_XDECREF(kind);
  Py_XDECREF(message);
  Py_XDECREF(trace);
  return -1;
}

PyMethodDef kErrorModuleMethods[] = {
    {"_register_error_class", AsPyCFunction(RegisterErrorClass), METH_FASTCALL,
     "_register_error_class(kind, cls): raise cls for C++ errors of that kind."},
    {nullptr, nullptr, 0, nullptr}};

int InitErrors(PyObject* module) {
  g_error_classes = PyDict_New();
  if (g_error_classes == nullptr) return -1;
  return PyModule_AddObjectRef(module, "_error_classes", g_error_classes);
}

}  // namespace tilecore_py
