"""The library's ``testing.*`` functions, for tests and benchmarks of the FFI.

``tilecore.testing.echo(x)`` calls the global function "testing.echo"; so do
``nop``, ``apply``, ``apply_in_thread``, ``call_n``, ``object_use_count``,
``make_test_object`` and the others the library registers under ``testing.``.
"""

from __future__ import annotations

from ._base import _ffi_core


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    func = _ffi_core._get_global_func("testing." + name)
    if func is None:
        raise AttributeError(f"no global function 'testing.{name}' is registered")
    globals()[name] = func
    return func


def __dir__():
    from .function import list_global_func_names

    return sorted(n[len("testing."):] for n in list_global_func_names() if n.startswith("testing."))
