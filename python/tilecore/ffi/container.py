"""Array, Map and Shape: the immutable containers C++ hands to Python.

They behave like the Python types they stand for::

    a = tilecore.convert([1, 2, 3])     # Array
    len(a), a[-1], a[0:2], list(a)      # 3, 3, Array [1, 2], [1, 2, 3]
    a == [1, 2, 3]                      # True: compares items with a list or tuple
    m = tilecore.convert({"a": 2})      # Map
    m["a"], "a" in m, dict(m.items())   # 2, True, {'a': 2}

Items are stored as tilecore values: numbers, strings and objects; nested lists
and dicts become nested Arrays and Maps.
"""

from __future__ import annotations

import operator
from typing import Any

from . import _ffi_api
from . import error
from ._base import _ffi_core
from .object import Object, TypeIndex, register_object


# A container that shares its elements (the same Array at many places) stands for a tree
# exponentially larger than itself, and a chain of nested containers may be far deeper
# than Python's recursion limit: the text is written by a loop over an explicit stack and
# cut at this many characters, as the C++ printer cuts its own.
_REPR_MAX_CHARS = 1 << 20
_TRUNCATED = "...(truncated)"


def _ne_by_eq(self, other: Any) -> Any:
    """``!=`` as the negation of the class's own ``__eq__`` (Object's would compare handles)."""
    eq = self.__eq__(other)
    return eq if eq is NotImplemented else not eq


def _repr_of(root):
    out = []
    size = 0
    # (True, text) is text to write; (False, value) a value whose text is still to come.
    todo = [(False, root)]
    while todo:
        is_text, x = todo.pop()
        if is_text:
            piece = x
        elif isinstance(x, Array):
            parts = []
            for i, e in enumerate(x):
                parts += [(True, ", "), (False, e)] if i else [(False, e)]
            todo.extend(reversed(parts + [(True, "]")]))
            piece = "["
        elif isinstance(x, Map):
            parts = []
            for i, (k, v) in enumerate(x.items()):
                parts += [(True, ", ")] if i else []
                parts += [(False, k), (True, ": "), (False, v)]
            todo.extend(reversed(parts + [(True, "}")]))
            piece = "{"
        else:
            piece = repr(x)
        out.append(piece)
        size += len(piece)
        if size > _REPR_MAX_CHARS:
            return "".join(out)[:_REPR_MAX_CHARS] + _TRUNCATED
    return "".join(out)


@register_object(TypeIndex.Array)
class Array(Object):
    """An immutable sequence of tilecore values (``ffi.Array``)."""

    __slots__ = ()

    def __len__(self) -> int:
        return _ffi_api.ArraySize(self)

    def __getitem__(self, index):
        if isinstance(index, slice):
            n = len(self)
            return _ffi_api.Array(*[_ffi_api.ArrayGetItem(self, i) for i in range(*index.indices(n))])
        i = operator.index(index)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise error.IndexError(f"Array index {index} is out of range for length {n}")
        return _ffi_api.ArrayGetItem(self, i)

    def __iter__(self):
        get = _ffi_api.ArrayGetItem
        for i in range(len(self)):
            yield get(self, i)

    def __eq__(self, other):
        if isinstance(other, (list, tuple, Array)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __ne__ = _ne_by_eq

    __hash__ = Object.__hash__

    def __repr__(self) -> str:
        return _repr_of(self)


@register_object(TypeIndex.Map)
class Map(Object):
    """An immutable hash map from tilecore values to tilecore values (``ffi.Map``)."""

    __slots__ = ()

    def __len__(self) -> int:
        return _ffi_api.MapSize(self)

    def __getitem__(self, key):
        return _ffi_api.MapGetItem(self, key)

    def __contains__(self, key) -> bool:
        return _ffi_api.MapCount(self, key) != 0

    def items(self) -> list[tuple[Any, Any]]:
        """(key, value) pairs, as a list."""
        flat = list(_ffi_api.MapItems(self))
        return list(zip(flat[0::2], flat[1::2]))

    def keys(self) -> list[Any]:
        return [k for k, _ in self.items()]

    def values(self) -> list[Any]:
        return [v for _, v in self.items()]

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __iter__(self):
        return iter(self.keys())

    def __eq__(self, other):
        if isinstance(other, (dict, Map)):
            if len(self) != len(other):
                return False
            return all(k in other and other[k] == v for k, v in self.items())
        return NotImplemented

    __ne__ = _ne_by_eq

    __hash__ = Object.__hash__

    def __repr__(self) -> str:
        return _repr_of(self)


@register_object(TypeIndex.Shape)
class Shape(Object):
    """An immutable tuple of int64 dimensions (``ffi.Shape``); behaves like a tuple."""

    __slots__ = ()

    def __new__(cls, *dims):
        if len(dims) == 1 and not isinstance(dims[0], int):
            dims = tuple(dims[0])
        return _ffi_api.Shape(*dims)

    def _tuple(self):
        return _ffi_core._shape_to_tuple(self)

    def __len__(self) -> int:
        return len(self._tuple())

    def __getitem__(self, index):
        return self._tuple()[index]

    def __iter__(self):
        return iter(self._tuple())

    def __eq__(self, other):
        if isinstance(other, (tuple, list, Shape)):
            return self._tuple() == tuple(other)
        return NotImplemented

    __ne__ = _ne_by_eq

    def __hash__(self):
        return hash(self._tuple())

    def __repr__(self) -> str:
        return f"Shape{self._tuple()!r}"


__all__ = ["Array", "Map", "Shape"]
