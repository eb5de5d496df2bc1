"""tilecore/script/kernel.py — ``@S.prim_func``: a kernel that compiles and simulates.

The decorated function becomes a :class:`Kernel`:

- ``kernel.prim_func`` parses it into Kernel IR (once; cached) — what
  ``tilecore.build(kernel, target=...)`` compiles; ``kernel.mod`` is an IRModule
  holding it; ``kernel.script()`` prints it.
- ``kernel(*arrays)`` runs it in PySim (pysim/runner.py).
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import TYPE_CHECKING, Any, Callable

from .. import ir
from . import types as T
from .parser import parse

if TYPE_CHECKING:
    from ..ir.stmt import IRModule, PrimFunc


class Kernel:
    """A DSL kernel (see the module docstring). ``num_cores`` cores run it (default 4)."""

    def __init__(self, func: Callable[..., Any], num_cores: int = 4, name: str | None = None) -> None:
        if not 1 <= int(num_cores) <= 16:
            raise ValueError(f"S.prim_func: num_cores must be 1..16 (TC1 clusters), got {num_cores}")
        self.py_func = func
        self.num_cores = int(num_cores)
        self.name = name or func.__name__
        self._prim_func = None
        self._lock = threading.Lock()
        functools.update_wrapper(self, func)
        self.params = self._params()

    def _params(self):
        sig = inspect.signature(self.py_func)
        try:
            hints = {k: v for k, v in self.py_func.__annotations__.items()}
        except AttributeError:
            hints = {}
        params = []
        for name, p in sig.parameters.items():
            ann = hints.get(name, inspect.Parameter.empty)
            if isinstance(ann, str):
                try:
                    ann = eval(ann, self.py_func.__globals__)  # noqa: S307  (postponed annotations)
                except Exception as e:  # noqa: BLE001  (reported with the parameter's name)
                    raise TypeError(f"S.prim_func `{self.py_func.__name__}`: parameter `{name}` has annotation "
                                    f"{ann!r}, which does not evaluate here ({type(e).__name__}: {e}); "
                                    "expected S.ptr(dtype, scope) or a scalar type such as S.int32") from None
            if ann is inspect.Parameter.empty:
                raise TypeError(f"S.prim_func `{self.py_func.__name__}`: parameter `{name}` needs a type "
                                "annotation (S.ptr(dtype, scope) or a scalar type such as S.int32)")
            if isinstance(ann, T.PointerType):
                params.append((name, ann))
                continue
            try:
                t = T.DSLType(T.dtype_name(ann))
            except (ValueError, TypeError):
                raise TypeError(f"S.prim_func `{self.py_func.__name__}`: parameter `{name}` has annotation "
                                f"{ann!r}; expected S.ptr(dtype, scope) or a scalar type") from None
            if t.lanes != 1:
                raise TypeError(f"S.prim_func `{self.py_func.__name__}`: parameter `{name}`: vector parameters "
                                f"are not supported ({t.name}); pass a pointer")
            params.append((name, t))
        return params

    @property
    def prim_func(self) -> PrimFunc:
        """The kernel as a Kernel IR PrimFunc (parsed on first use)."""
        with self._lock:
            if self._prim_func is None:
                self._prim_func = parse(self.py_func, self.params, self.num_cores, self.name)
            return self._prim_func

    @property
    def mod(self) -> IRModule:
        """An IRModule holding :attr:`prim_func`."""
        return ir.IRModule.from_function(self.prim_func)

    def script(self) -> str:
        """The Kernel IR as script text."""
        return ir.script(self.prim_func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the kernel in PySim on numpy arrays (see tilecore.script.pysim).

        ``seed=N`` runs the cores in the seeded interleaving N (as ``TILECORE_PYSIM_SEED``;
        the trace is then ``self.pysim_trace``); ``racecheck=True`` reports data races (as
        ``TILECORE_PYSIM_RACECHECK=1``). A kernel parameter of either name takes precedence."""
        from .pysim.runner import run

        names = {n for n, _ in self.params}
        opts = {k: kwargs.pop(k) for k in ("seed", "racecheck") if k in kwargs and k not in names}
        return run(self, args, kwargs, **opts)

    def __repr__(self) -> str:
        return f"<S.prim_func {self.name} ({self.num_cores} cores)>"


def prim_func(func: Callable[..., Any] | None = None, *, num_cores: int = 4,
              name: str | None = None) -> Kernel | Callable[[Callable[..., Any]], Kernel]:
    """Decorates a kernel: ``@S.prim_func`` or ``@S.prim_func(num_cores=2)``.

    Parameters must be annotated: ``S.ptr(dtype, scope)`` for pointers, a scalar type
    (``S.int32``, ``S.float32`` ...) for scalars. The body runs on every core.
    """

    def deco(f):
        if not inspect.isfunction(f):
            raise TypeError(f"S.prim_func decorates a Python function (def ...), got {type(f).__name__} {f!r}; "
                            "for options write @S.prim_func(num_cores=..., name=...)")
        return Kernel(f, num_cores=num_cores, name=name)

    return deco(func) if func is not None else deco
