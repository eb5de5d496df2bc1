"""The library's own `ffi.*` global functions, looked up on first use.

`_ffi_api.ArraySize(arr)` calls the global function "ffi.ArraySize"; the Function is
cached as a module attribute after the first lookup, so later calls cost one attribute
read.
"""

from __future__ import annotations

from ._base import _ffi_core


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    func = _ffi_core._get_global_func("ffi." + name)
    if func is None:
        raise AttributeError(
            f"the tilecore library does not register 'ffi.{name}' "
            "(is libtilecore older than this Python package?)"
        )
    globals()[name] = func
    return func
