"""tilecore/script/control.py — loop forms for kernels.

- ``for i in range(a, b[, step])``: a loop that runs on the NPU (the IR has a ``For``);
  ``i`` is an int32 kernel value. Bounds may be kernel values; ``step`` a positive
  literal.
- ``for i in S.unroll(a, b[, step])``: the same, marked for the compiler to unroll.
- ``for i in S.static_range(a, b[, step])`` (or over any Python list/tuple): unrolled
  while the kernel is *parsed*; ``i`` is a Python int, so it can index Python
  lists (lookup tables) and size vectors.

PySim runs the kernel with ``range`` bound to :func:`sim_range`, so the loop variable
is an int32 kernel value there too and ``i / 2`` truncates as on TC1.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Iterable, Iterator

from . import frontend as fe
from .pysim import semantics as sem

if TYPE_CHECKING:
    from .values import KernelValue


def static_range(*args: KernelValue) -> range:
    """``range`` unrolled at compile time: the loop variable is a Python int."""
    return builtins.range(*[fe.const_int("static_range", "bound", a) for a in args])


def _bound(x):
    if fe.kind(x) == "literal":
        return int(x)
    fe.require(fe.kind(x) == "value" and x.dtype == "int32",
               f"range: bounds must be int32 scalars or literals, got {fe.describe(x)}")
    return int(x.data[0])


def sim_range(*args: KernelValue) -> Iterator[KernelValue]:
    """PySim's ``range``: yields int32 kernel values."""
    fe.require(1 <= len(args) <= 3, f"range: expected 1 to 3 arguments, got {len(args)}")
    if len(args) == 3:
        fe.const_int("range", "step", args[2], lo=1)
    for i in builtins.range(*[_bound(a) for a in args]):
        yield sem.value([i], "int32")


def unroll(*args: KernelValue) -> Iterable[KernelValue]:
    """``range`` that the compiler unrolls (a ``For`` of kind ``unrolled``)."""
    return sim_range(*args)
