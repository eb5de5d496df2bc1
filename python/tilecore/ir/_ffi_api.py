"""The `ir.*` global functions of the C++ library, looked up on first use."""

from __future__ import annotations

from ..ffi._base import _ffi_core


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    func = _ffi_core._get_global_func("ir." + name)
    if func is None:
        raise AttributeError(f"the tilecore library does not register 'ir.{name}' (built without the ir layer?)")
    globals()[name] = func
    return func
