"""tilecore/script/values.py — operators on kernel values, shared by both paths.

The parser's values (IR expressions, irvalues.py) and PySim's values (numpy arrays,
pysim/values.py) inherit these mixins, so ``va + vb``, ``i * 4``, ``m & (va > 0)``,
``p[i]``, ``p + 8`` and ``buf[0:4, 0:8]`` go through the same registered APIs (and
the same front end) whether the kernel is being compiled or simulated.

Python's operators map to TC1 semantics: ``/`` on integers truncates (TC1 ``div``),
``//`` and ``%`` round toward negative infinity (as in Python); ``<<`` and ``>>``
take the shift amount modulo the bit width (``>>`` is arithmetic for signed and
logical for unsigned dtypes); ``&``, ``|``, ``^``, ``~`` are bitwise on integers and
logical on bools (masks). ``==`` builds a comparison, so kernel values are not
hashable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import registry

if TYPE_CHECKING:
    from .types import DSLType

#: A kernel value: an IR value while the parser runs a kernel (irvalues.py), numpy data
#: while PySim runs it (pysim/values.py). The DSL's functions take either, and Python
#: numbers where a scalar is meant; what they return is of the same path.
KernelValue = Any


def _api(name):
    return registry.get(name)


def _binop(name):
    def f(self, other):
        return _api(name)(self, other)

    def r(self, other):
        return _api(name)(other, self)

    f.__name__ = r.__name__ = name
    return f, r


class ValueOps:
    """Operators of scalar and vector kernel values (``dsl_kind = "value"``)."""

    __slots__ = ()
    dsl_kind = "value"
    __hash__ = None

    __add__, __radd__ = _binop("add")
    __sub__, __rsub__ = _binop("sub")
    __mul__, __rmul__ = _binop("mul")
    __truediv__, __rtruediv__ = _binop("truediv")
    __floordiv__, __rfloordiv__ = _binop("floordiv")
    __mod__, __rmod__ = _binop("mod")
    __lshift__, __rlshift__ = _binop("lshift")
    __rshift__, __rrshift__ = _binop("rshift")
    __and__, __rand__ = _binop("and_")
    __or__, __ror__ = _binop("or_")
    __xor__, __rxor__ = _binop("xor")
    __lt__, _ = _binop("lt")
    __le__, _ = _binop("le")
    __gt__, _ = _binop("gt")
    __ge__, _ = _binop("ge")
    __eq__, _ = _binop("eq")
    __ne__, _ = _binop("ne")
    del _

    def __neg__(self):
        return _api("neg")(self)

    def __pos__(self):
        return self

    def __invert__(self):
        return _api("invert")(self)

    def __abs__(self):
        return _api("vabs")(self)

    def __bool__(self) -> bool:
        return _api("truth")(self)

    def __index__(self) -> int:
        raise TypeError(f"a kernel value ({self.dtype}) is not a compile-time integer: it cannot index a "
                        "Python list or size a Python object")

    def astype(self, dtype: str | DSLType) -> KernelValue:
        """``S.cast(self, dtype)``."""
        return _api("cast")(self, dtype)


class MemoryOps:
    """Indexing of pointers, buffers and regions (``dsl_kind`` pointer / buffer)."""

    __slots__ = ()

    def __getitem__(self, index):
        return _api("load")(self, index)

    def __setitem__(self, index, value) -> None:
        _api("store")(self, index, value)

    def __add__(self, offset):
        return _api("ptr_add")(self, offset)

    __radd__ = __add__

    def __sub__(self, offset):
        return _api("ptr_add")(self, -offset if not hasattr(offset, "dsl_kind") else 0 - offset)

    def addr_of(self, *index: KernelValue) -> KernelValue:
        """A pointer to element ``index`` (flat offset of a multi-dimensional buffer)."""
        return _api("addr_of")(self, *index)
