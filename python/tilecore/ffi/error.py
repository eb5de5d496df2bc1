"""Errors raised by tilecore.

Every error that comes out of a tilecore call is a :class:`TilecoreError`. Errors of
a familiar kind are also the matching builtin exception, so both of these work::

    except tilecore.TilecoreError: ...
    except TypeError: ...                # tilecore.error.TypeError is a TypeError

A C++ error carries its kind (``err.kind``, e.g. ``"ValueError"``), its message and
the C++ backtrace (``err.backtrace``, also shown as a note under the Python
traceback). An exception raised by a Python callback that C++ called comes back to
the Python caller as the *same* exception object, with a note listing the C++ frames
it passed through.
"""

from __future__ import annotations

import builtins
from typing import Any

from ._base import _ffi_core


class TilecoreError(Exception):
    """Base class of the errors tilecore raises."""

    #: The error kind as C++ names it ("TypeError", "ValueError", ...).
    kind = "RuntimeError"
    #: The C++ backtrace (innermost frame last), or "" when none was captured.
    backtrace = ""


def register_error(kind: str, cls: type[BaseException] | None = None) -> Any:
    """Raises ``cls`` for C++ errors of ``kind``; usable as a class decorator.

    :param kind: the kind string C++ uses, e.g. ``"CompileError"``.
    :param cls: an exception class, normally a subclass of :class:`TilecoreError`.
    """

    def register(cls):
        cls.kind = kind
        _ffi_core._register_error_class(kind, cls)
        return cls

    return register(cls) if cls is not None else register


@register_error("TypeError")
class TypeError(TilecoreError, builtins.TypeError):  # noqa: A001
    """A value of the wrong type reached a tilecore function."""


@register_error("ValueError")
class ValueError(TilecoreError, builtins.ValueError):  # noqa: A001
    """A value of the right type but a wrong value (a bad dtype, bad JSON, ...)."""


@register_error("IndexError")
class IndexError(TilecoreError, builtins.IndexError):  # noqa: A001
    """An index out of range."""


@register_error("KeyError")
class KeyError(TilecoreError, builtins.KeyError):  # noqa: A001
    """A missing key (in a Map, a registry, ...)."""

    def __str__(self) -> str:
        # builtins.KeyError shows repr(key); a tilecore message reads better as text.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


@register_error("AttributeError")
class AttributeError(TilecoreError, builtins.AttributeError):  # noqa: A001
    """A missing attribute or field."""


@register_error("RuntimeError")
class RuntimeError(TilecoreError, builtins.RuntimeError):  # noqa: A001
    """Any other failure; also the class of C++ errors of a kind not registered here."""


@register_error("NotImplementedError")
class NotImplementedError(TilecoreError, builtins.NotImplementedError):  # noqa: A001
    """A feature that does not exist (yet)."""


@register_error("MemoryError")
class MemoryError(TilecoreError, builtins.MemoryError):  # noqa: A001
    """An allocation failed (host or device memory)."""


@register_error("OverflowError")
class OverflowError(TilecoreError, builtins.OverflowError):  # noqa: A001
    """A number does not fit (e.g. a Python int beyond int64)."""


@register_error("OSError")
class OSError(TilecoreError, builtins.OSError):  # noqa: A001
    """A file or library could not be opened."""


@register_error("PermissionError")
class PermissionError(TilecoreError, builtins.PermissionError):  # noqa: A001
    """Refused by an option (an executable with host code, or not the expected SHA-256)."""


__all__ = [
    "AttributeError",
    "IndexError",
    "KeyError",
    "MemoryError",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "PermissionError",
    "RuntimeError",
    "TilecoreError",
    "TypeError",
    "ValueError",
    "register_error",
]
