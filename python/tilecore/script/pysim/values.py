"""tilecore/script/pysim/values.py — PySim's kernel values: numpy data with a DSL dtype.

``SimValue`` is a scalar or vector (``data`` is always a 1-D array of its lanes, in
the dtype's numpy storage); ``Memory`` is one array the kernel can reach (a
parameter, an allocation) with its real extent; ``SimPointer`` / ``SimBuffer`` /
``SimRegion`` point into a Memory. Every access is checked against the Memory's
extent, so an out-of-bounds kernel fails at the access that goes out, not later.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import types as T
from ..values import MemoryOps, ValueOps


class SimValue(ValueOps):
    __slots__ = ("data", "dtype")

    def __init__(self, data: np.ndarray, dtype: str) -> None:
        self.data = data
        self.dtype = dtype

    def item(self) -> bool | int | float:
        """The Python value of a scalar (for printing and conditions)."""
        from ..numerics import to_f64

        elem = T.split(self.dtype)[0]
        v = self.data[0]
        if elem == "bfloat16":
            return float(to_f64(self.data[:1], elem)[0])
        if elem == "bool":
            return bool(v)
        return float(v) if T.is_float(elem) else int(v)

    def values(self) -> list:
        """The lanes as a list of Python numbers."""
        from ..numerics import to_f64

        elem = T.split(self.dtype)[0]
        if elem == "bfloat16":
            return [float(x) for x in to_f64(self.data, elem)]
        return self.data.tolist()

    def __repr__(self) -> str:
        if T.split(self.dtype)[1] == 1:
            return f"{self.dtype}({self.item()})"
        return f"{self.dtype}({self.values()})"

    __str__ = __repr__

    def __int__(self) -> int:
        return int(self.item())

    def __float__(self) -> float:
        return float(self.item())


class Memory:
    """One array reachable by the kernel: a pointer parameter or an allocation."""

    __slots__ = ("array", "elem", "scope", "name")

    def __init__(self, array: np.ndarray, elem: str, scope: str, name: str) -> None:
        self.array = array  # 1-D, storage dtype
        self.elem = elem
        self.scope = scope
        self.name = name

    @property
    def extent(self) -> int:
        return self.array.shape[0]

    def check(self, op: str, first: int, count: int, what: str | None = None) -> None:
        """Raises IndexError unless elements [first, first + count) lie in this memory."""
        if count <= 0:
            return
        if first < 0 or first + count > self.extent:
            span = f"element {first}" if count == 1 else f"elements [{first}, {first + count})"
            raise IndexError(f"{op}: {what or self.name} accesses {span} of `{self.name}`, which has "
                             f"{self.extent} elements ({self.scope})")


def memory_field(field: str) -> property:
    """A read-only property that reads ``field`` (elem, scope, name) of the value's Memory."""

    def get(self) -> str:
        return getattr(self.mem, field)

    return property(get, doc=f"The {field} of the Memory this value points into.")


class SimPointer(MemoryOps):
    __slots__ = ("mem", "offset")
    dsl_kind = "pointer"

    def __init__(self, mem: Memory, offset: int) -> None:
        self.mem = mem
        self.offset = int(offset)

    elem = memory_field("elem")
    scope = memory_field("scope")
    name = memory_field("name")

    def __repr__(self) -> str:
        return f"ptr({self.mem.name} + {self.offset})"


class SimBuffer(MemoryOps):
    """An N-D buffer over ``mem`` starting at element ``offset`` (row-major)."""

    __slots__ = ("mem", "offset", "shape")
    dsl_kind = "buffer"

    def __init__(self, mem: Memory, offset: int, shape: Sequence[int]) -> None:
        self.mem = mem
        self.offset = int(offset)
        self.shape = tuple(int(s) for s in shape)

    elem = memory_field("elem")
    scope = memory_field("scope")
    name = memory_field("name")


    def ndarray(self) -> np.ndarray:
        n = int(np.prod(self.shape))
        return self.mem.array[self.offset:self.offset + n].reshape(self.shape)

    def numpy(self) -> np.ndarray:
        """A copy of the contents (for printing and debugging)."""
        return self.ndarray().copy()

    def __repr__(self) -> str:
        return f"Buffer({self.mem.name}: {self.elem}{list(self.shape)} {self.scope})"


class SimRegion:
    """A window of a buffer or pointer: ``view`` is the numpy view of its elements."""

    __slots__ = ("mem", "view", "text")
    dsl_kind = "region"

    def __init__(self, mem: Memory, view: np.ndarray, text: str) -> None:
        self.mem = mem
        self.view = view
        self.text = text

    elem = memory_field("elem")
    scope = memory_field("scope")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.view.shape

    def __repr__(self) -> str:
        return self.text
