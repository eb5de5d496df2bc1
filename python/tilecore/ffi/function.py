"""Functions and the global registry.

A :class:`Function` is a type-erased callable: C++ code registered by name, or a
Python callable made callable from C++. Calls take positional arguments, converted
by type (int, float, bool, None, str, bytes, tilecore objects, list -> Array,
dict -> Map, callables -> Function, numpy/PyTorch arrays -> NDArray)::

    @tilecore.register_func("demo.add")
    def add(a, b):
        return a + b

    f = tilecore.get_global_func("demo.add")
    f(1, 2)                 # 3, a call through the registry
"""

from __future__ import annotations

import difflib
from typing import Any, Callable

from ._base import _ffi_core
from . import error

Function = _ffi_core.Function


def register_func(func_name: str | Callable[..., Any] | None = None, f: Callable[..., Any] | None = None,
                  override: bool = False) -> Callable[..., Any]:
    """Registers a Python function as a global function, callable from C++ by name.

    Usable as ``@register_func`` (the name is the function's ``__name__``),
    ``@register_func("name")`` or ``register_func("name", f)``.

    :param func_name: the registry name, dotted by layer (``"mylib.hook"``).
    :param f: the callable, when not used as a decorator.
    :param override: replace a function registered under the same name; without it,
        a taken name raises :class:`tilecore.error.ValueError`.
    :returns: the callable itself (so a decorated function stays a Python function).
    """
    if callable(func_name) and f is None:
        f, func_name = func_name, func_name.__name__
    if not isinstance(func_name, str):
        raise error.TypeError(f"register_func: the name must be a str, got {type(func_name).__name__}")

    def register(myf):
        if not callable(myf):
            raise error.TypeError(f"register_func: {myf!r} is not callable")
        _ffi_core._register_global_func(func_name, myf, bool(override))
        return myf

    return register(f) if f is not None else register


def get_global_func(name: str, allow_missing: bool = False) -> Function | None:
    """Returns the global function registered under ``name``.

    :param allow_missing: return None instead of raising when it is not registered.
    :raises tilecore.error.ValueError: the name is not registered (the message lists
        close matches).
    """
    func = _ffi_core._get_global_func(name)
    if func is None and not allow_missing:
        close = difflib.get_close_matches(name, list_global_func_names(), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise error.ValueError(f"global function '{name}' is not registered{hint}")
    return func


def list_global_func_names() -> list[str]:
    """Names of all registered global functions, as a list of str."""
    from . import _ffi_api

    return list(_ffi_api.ListGlobalFunctionNames())


def remove_global_func(name: str) -> bool:
    """Removes a global function; returns whether it was registered."""
    return _ffi_core._remove_global_func(name)


__all__ = [
    "Function",
    "get_global_func",
    "list_global_func_names",
    "register_func",
    "remove_global_func",
]
