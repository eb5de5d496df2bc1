"""``tilecore.build``: Kernel IR -> a runtime Module for a target.

    mod = tilecore.build(prim_func, target="npu -cores=4")   # TC1 code, runs on the simulator
    mod = tilecore.build(prim_func, target="c")              # C, compiled and loaded
    mod["kernel_name"](a, b, out)                            # numpy arrays or NDArrays

The code generator is the global function ``codegen.build_<kind>``; a kind added out
of tree plugs in by registering one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ffi._base import _ffi_core
from .target import Target

if TYPE_CHECKING:
    from .runtime import Module


def build(func: Any, target: str | Target = "npu") -> Module:
    """Compiles a PrimFunc, an IRModule or a DSL kernel (``@S.prim_func``) for ``target``
    (a Target or a target string).

    :returns: a :class:`tilecore.runtime.Module`.
    :raises ValueError: for a bad target string, or no code generator for its kind.
    """
    # A DSL kernel (@S.prim_func): its parsed Kernel IR. Looked up on the type, so an error
    # raised while parsing the kernel (an AttributeError among them) reaches the caller.
    if isinstance(getattr(type(func), "prim_func", None), property) and not hasattr(func, "handle"):
        func = func.prim_func
    target = Target(target)
    return _ffi_core._get_global_func("target.Build")(func, target)


__all__ = ["build"]
