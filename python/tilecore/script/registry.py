"""tilecore/script/registry.py — one registry of DSL APIs, each with two implementations.

Every DSL function (``S.vadd``, ``S.dma_copy``, the operators on kernel values ...)
is one :class:`Api` with three parts:

- the **front end** (the function written under ``@api``): its signature and
  docstring are the public ones; it checks and normalises the arguments (types,
  promotion, constants) with ``frontend.py`` and returns a plan;
- the **IR implementation** (``@f.ir``): builds Kernel IR from the plan, used while
  the parser compiles a kernel;
- the **Python implementation** (``@f.py``): computes the plan with numpy, used by PySim.

Because both paths run the same front end, PySim rejects exactly what the compiler
rejects, with the same message. :func:`check_complete` (run when ``tilecore.script``
is imported) fails if any API lacks either implementation.

The path is chosen per thread: the parser and each PySim core thread enter
:func:`mode` (``"ir"`` or ``"py"``) with their context object; outside both, a DSL
call is an error that says so. PySim's batched loops (pysim/batch.py) enter mode
``"batch"``, whose context dispatches each call itself.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, Iterator

_APIS = {}
_state = threading.local()


class Api:
    """A DSL function: front end + IR implementation + Python implementation."""

    def __init__(self, name: str, front: Callable[..., Any]) -> None:
        self.name = name
        self.front = front
        self.ir_impl = None
        self.py_impl = None
        functools.update_wrapper(self, front)

    def ir(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if self.ir_impl is not None:
            raise RuntimeError(f"S.{self.name}: a second IR implementation was registered")
        self.ir_impl = fn
        return fn

    def py(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if self.py_impl is not None:
            raise RuntimeError(f"S.{self.name}: a second Python implementation was registered")
        self.py_impl = fn
        return fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        m = getattr(_state, "mode", None)
        if m == "batch":
            return _state.context.call(self, args, kwargs)  # pysim/batch.py
        if m is None:
            raise RuntimeError(
                f"S.{self.name} can only be called inside a @S.prim_func kernel (while it is compiled or "
                "run by PySim)")
        if m == "py":
            ctx = _state.context  # runner.CoreContext
            ctx.tick(self.name)  # PySim's budget and scheduling point
            plan = self.front(*args, **kwargs)
            if ctx.race is not None:  # pysim/racecheck.py
                after = ctx.race.operation(ctx.core, self.name, plan)
                r = self.py_impl(plan)
                if after is not None:
                    after()
                return r
            return self.py_impl(plan)
        return self.ir_impl(self.front(*args, **kwargs))

    def __repr__(self) -> str:
        return f"<DSL API S.{self.name}>"


def api(name: str | None = None) -> Callable[[Callable[..., Any]], Api]:
    """Registers the decorated front end as DSL API ``name`` (default: its __name__)."""

    def deco(front):
        n = name or front.__name__
        if n in _APIS:
            raise RuntimeError(f"S.{n}: registered twice")
        a = Api(n, front)
        _APIS[n] = a
        return a

    return deco


def get(name: str) -> Api:
    return _APIS[name]


def all_apis() -> dict[str, Api]:
    return dict(_APIS)


def check_complete() -> None:
    """Raises ImportError naming every API without both implementations."""
    missing = [f"S.{n} (no {'IR' if a.ir_impl is None else 'Python'} implementation)"
               for n, a in _APIS.items() if a.ir_impl is None or a.py_impl is None]
    if missing:
        raise ImportError("tilecore.script: incomplete DSL APIs: " + ", ".join(missing))


@contextlib.contextmanager
def mode(kind: str, context: Any) -> Iterator[None]:
    """Runs DSL calls of this thread in ``kind`` ("ir" or "py") with ``context``."""
    old = getattr(_state, "mode", None), getattr(_state, "context", None)
    _state.mode, _state.context = kind, context
    try:
        yield context
    finally:
        _state.mode, _state.context = old


def current_mode() -> str | None:
    return getattr(_state, "mode", None)


def context() -> Any:
    """The parser (mode "ir") or the PySim core (mode "py") of this thread."""
    return getattr(_state, "context", None)
