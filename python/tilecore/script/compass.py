"""tilecore/script/compass.py — the names Compass DSL programs use to build kernels.

Compass DSL programs compile with ``aipu.tir.BuildManager().build(kernel)``. With
``from tilecore.script import compass as aipu`` such a program runs unchanged on
tilecore: ``BuildManager.build`` parses the kernel (the syntax and type check the
Compass documentation describes) and compiles it with ``tilecore.build`` for its
target (``npu`` by default), returning the module; PySim needs only the parse.
"""

from __future__ import annotations

import types as _types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .kernel import Kernel


class BuildManager:
    """``BuildManager(target="npu").build(kernel)``: parse and, if possible, compile."""

    def __init__(self, target: str = "npu") -> None:
        self.target = target

    def build(self, kernel: Kernel) -> Any:
        """Parses ``kernel`` (a ``@S.prim_func``) and compiles it with ``tilecore.build``.

        Returns the compiled module (``tilecore.runtime.Module``). Only a target kind that
        is registered without a code generator (``codegen.build_<kind>`` missing, e.g. a
        plugin's kind whose code generator is not loaded) gives back the parsed PrimFunc
        instead; an unknown kind (``npu`` in a build with ``TILECORE_ENABLE_NPU=OFF``) and
        a kernel the code generator rejects raise.
        """
        import tilecore

        from .kernel import Kernel

        if not isinstance(kernel, Kernel):
            raise RuntimeError(f"BuildManager.build: `{getattr(kernel, '__name__', kernel)}` must be decorated "
                               "by S.prim_func")
        func = kernel.prim_func
        build = getattr(tilecore, "build", None)
        if build is None:
            return func
        try:
            return build(kernel, target=self.target)
        except Exception as e:  # noqa: BLE001
            if compiler_missing(e):
                return func
            raise


def compiler_missing(exc: BaseException) -> bool:
    """Whether ``exc`` from ``tilecore.build`` says the compiler (or its target) is not there yet."""
    text = str(exc)
    return isinstance(exc, NotImplementedError) or (
        isinstance(exc, (AttributeError, ValueError))
        and any(s in text for s in ("does not register", "is not registered", "no code generator")))


tir = _types.SimpleNamespace(BuildManager=BuildManager)
