"""tilecore/script/errors.py — kernel errors that name the kernel's source line.

A mistake in a kernel is reported the same way whether the parser (compile path)
or PySim finds it: the front end raises a plain ``TypeError`` / ``ValueError`` /
``IndexError`` with the message, and the path that called it re-raises a
:class:`KernelError` that also *is* the original kind (``except TypeError`` still
works) and carries where it happened::

    kernels.py:14: vadd: operand dtypes differ: int32x8 vs int16x16
        vc = S.vadd(va, vb)

PySim adds the core: ``kernels.py:14 (core 2): ...``.
"""

from __future__ import annotations

import builtins

from ..ffi.error import TilecoreError


class KernelError(TilecoreError):
    """An error in a DSL kernel. Attributes: ``message`` (the front end's text),
    ``file``, ``line``, ``source`` (the line's text), ``core`` (PySim; None when
    compiling) and ``kind`` (the builtin kind: ``"TypeError"`` ...)."""

    message = ""
    file = None
    line = 0
    source = ""
    core = None


_CLASSES = {}


def _class_for(base):
    """The KernelError subclass that is also ``base`` (cached)."""
    if base in _CLASSES:
        return _CLASSES[base]
    if issubclass(base, KernelError):
        return base
    try:
        cls = type(f"Kernel{base.__name__}", (KernelError, base), {"kind": base.__name__})
        # Must be constructible from one message string.
        cls("probe")
    except Exception:  # noqa: BLE001  (exotic exception classes: fall back)
        cls = _class_for(builtins.RuntimeError)
    _CLASSES[base] = cls
    return cls


def format_location(file: str, line: int, core: int | None = None) -> str:
    where = f"{file}:{line}"
    return where if core is None else f"{where} (core {core})"


def located(exc: BaseException, file: str, line: int, source: str = "", core: int | None = None) -> BaseException:
    """A KernelError of ``exc``'s kind, naming ``file:line`` (and the core)."""
    if isinstance(exc, KernelError):
        return exc  # already names its place
    message = str(exc)
    base = type(exc)
    if base.__module__ == "tilecore.error":
        # tilecore.error.TypeError etc.: use the builtin it stands for.
        base = getattr(builtins, base.__name__, builtins.RuntimeError)
    cls = _class_for(base)
    text = f"{format_location(file, line, core)}: {message}"
    if source:
        text += "\n    " + source.strip()
    err = cls(text)
    err.message = message
    err.file = file
    err.line = line
    err.source = source.strip()
    err.core = core
    return err
