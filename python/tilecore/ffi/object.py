"""Objects: Python handles to C++ objects, and the registry of their Python classes.

Every C++ object reaches Python as an instance of :class:`Object` or of the class
registered for its type key with :func:`register_object` (or for its nearest
registered ancestor). Fields that C++ declares by reflection read as attributes::

    obj = tilecore.testing.make_test_object(1, "x", None)
    obj.value          # 1, read through the field's getter
    dir(obj)           # includes "value", "name", "payload"

``==`` and ``hash`` are by identity (two handles to one C++ object are equal); use
:func:`tilecore.structural_equal` to compare contents.
"""

from __future__ import annotations

import enum
from typing import Callable

from ._base import _ffi_core

Object = _ffi_core.Object
ObjectRValueRef = _ffi_core.ObjectRValueRef


class TypeIndex(enum.IntEnum):
    """Fixed type indices of the C ABI (TCFFITypeIndex in tilecore/ffi/c_api.h)."""

    Object = 64
    Str = 65
    Bytes = 66
    Error = 67
    Function = 68
    Shape = 69
    NDArray = 70
    Array = 71
    Map = 72
    Module = 73
    OpaquePyObject = 74


def register_object(type_key: str | int) -> Callable[[type], type]:
    """Class decorator: wrap C++ objects of ``type_key`` in the decorated class.

    :param type_key: the C++ type key (e.g. ``"testing.TestObject"``) or a fixed
        :class:`TypeIndex`. A key the library does not know yet (its extension is not
        loaded) is remembered and takes effect when such an object first appears.

    The class must derive from :class:`Object`; declaring ``__slots__ = ()`` keeps
    instances as small as the base. Objects of kinds derived from ``type_key`` that
    have no class of their own get this one too.
    """
    if isinstance(type_key, type):
        raise TypeError("use @register_object('type.key'), with the C++ type key")

    def register(cls):
        if not (isinstance(cls, type) and issubclass(cls, Object)):
            raise TypeError(f"register_object: {cls!r} must be a subclass of tilecore.Object")
        _ffi_core._register_object(int(type_key) if isinstance(type_key, int) else type_key, cls)
        if cls.__module__ != "tilecore":  # the built-in classes are immutable
            cls._type_key = type_key
        return cls

    return register


__all__ = ["Object", "ObjectRValueRef", "TypeIndex", "register_object"]
