"""tilecore/script/types.py — the DSL's types: element dtypes, vector types, pointers.

TC1's SIMD registers are 256 bits wide, so a vector type is fixed by its element
dtype: ``int8x32``, ``int16x16``, ``int32x8``, ``float16x16``, ``float32x8`` ...
Masks (predicates) are bool vectors with the lane count of the data they govern
(``boolx8`` for ``int32x8``). Scalars are the element dtypes themselves.

Type objects are used three ways: as parameter annotations (``n: S.int32``,
``a: S.ptr("int8", "global")``), as constructors inside a kernel (``S.int32(5)``,
``S.int32x8(1)`` broadcasts), and as dtype names anywhere a dtype is expected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .values import KernelValue

#: Element dtypes TC1 knows, with their width in bits.
ELEMENT_BITS = {
    "int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
    "float16": 16, "bfloat16": 16, "float32": 32, "bool": 8,
}
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32")
FLOAT_DTYPES = ("float16", "bfloat16", "float32")
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES
REGISTER_BITS = 256
SCOPES = ("global", "shared", "local")

#: numpy storage of each element dtype (bfloat16 is kept as its uint16 bit pattern).
NP_STORAGE = {
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
    "uint32": np.uint32, "float16": np.float16, "bfloat16": np.uint16, "float32": np.float32, "bool": np.bool_,
}


def register_lanes(elem: str) -> int:
    """Lanes of one 256-bit register of ``elem`` (bool: as many as the narrowest data, 32)."""
    return REGISTER_BITS // ELEMENT_BITS[elem]


def split(dtype: str | DSLType) -> tuple[str, int]:
    """``"int32x8"`` -> ``("int32", 8)``; ``"int32"`` -> ``("int32", 1)``."""
    dtype = dtype if type(dtype) is str else str(dtype)
    r = _SPLIT_CACHE.get(dtype)
    if r is None:
        r = _SPLIT_CACHE[dtype] = _split(dtype)
    return r


_SPLIT_CACHE = {}


def _split(dtype):
    if dtype in ELEMENT_BITS:
        return dtype, 1
    for elem in ELEMENT_BITS:
        if dtype.startswith(elem + "x") and dtype[len(elem) + 1:].isdigit():
            return elem, int(dtype[len(elem) + 1:])
    raise ValueError(f"unknown dtype `{dtype}` (element dtypes: {', '.join(ELEMENT_BITS)})")


def join(elem: str, lanes: int) -> str:
    return elem if lanes == 1 else f"{elem}x{lanes}"


def is_int(dtype: str | DSLType) -> bool:
    return split(dtype)[0] in INT_DTYPES


def is_signed(dtype: str | DSLType) -> bool:
    return split(dtype)[0] in ("int8", "int16", "int32")


def is_float(dtype: str | DSLType) -> bool:
    return split(dtype)[0] in FLOAT_DTYPES


def is_bool(dtype: str | DSLType) -> bool:
    return split(dtype)[0] == "bool"


def int_range(elem: str) -> tuple[int, int]:
    bits = ELEMENT_BITS[elem]
    if elem.startswith("u"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def vector_of(elem: str) -> str:
    """The register vector type of ``elem``: ``int32`` -> ``int32x8``."""
    return join(elem, register_lanes(elem))


def dtype_name(d: str | DSLType | np.dtype) -> str:
    """A dtype given as a string, a DSL type object or a numpy dtype, as its name."""
    if isinstance(d, DSLType):
        return d.name
    if isinstance(d, (np.dtype, type)) and not isinstance(d, str):
        name = np.dtype(d).name
        if name == "bool":
            return "bool"
        return name
    name = str(d)
    split(name)  # validates
    return name


class DSLType:
    """A scalar or vector type: an annotation, a constructor and a dtype name."""

    __slots__ = ("name", "elem", "lanes")

    def __init__(self, name: str) -> None:
        self.name = name
        self.elem, self.lanes = split(name)

    def __call__(self, value: KernelValue) -> KernelValue:
        """``S.int32(5)`` a typed constant; ``S.int32x8(x)`` broadcasts a scalar."""
        from .api.vector import vbcast  # late: the API module imports this one

        if self.lanes == 1:
            from .api.misc import const

            return const(value, self.name)
        return vbcast(value, self.name)

    def __repr__(self) -> str:
        return f"S.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other):
        return str(other) == self.name

    def __hash__(self):
        return hash(self.name)


class PointerType:
    """The annotation ``S.ptr(dtype, scope)`` of a pointer parameter."""

    __slots__ = ("dtype", "scope")

    def __init__(self, dtype: str | DSLType, scope: str = "global") -> None:
        self.dtype = dtype_name(dtype)
        if split(self.dtype)[1] != 1:
            raise ValueError(f"S.ptr: the element dtype must be a scalar dtype, got {self.dtype}")
        if scope not in SCOPES:
            raise ValueError(f"S.ptr: unknown memory scope `{scope}` (expected one of {', '.join(SCOPES)})")
        self.scope = scope

    def __repr__(self) -> str:
        return f"S.ptr({self.dtype!r}, {self.scope!r})"


def ptr(dtype: str | DSLType, scope: str = "global") -> PointerType:
    """The type of a pointer parameter to ``dtype`` elements in ``scope``.

    :param dtype: one of int8 uint8 int16 uint16 int32 uint32 float16 bfloat16 float32 bool.
    :param scope: ``"global"`` (DDR), ``"shared"`` (the cluster's L2) or ``"local"`` (L1).

    A pointer indexes like a flat array (``a[i]``, ``a[i] = v``), moves by elements
    (``a + 8``), slices into a region for DMA (``a[0:64]``) and is what ``vload`` and
    ``vstore`` take. Accesses are checked against the real extent of the array
    passed for it (PySim) .
    """
    return PointerType(dtype, scope)


SCALAR_TYPES = {name: DSLType(name) for name in ELEMENT_BITS}
VECTOR_TYPES = {}
for _e in NUMERIC_DTYPES:
    _n = vector_of(_e)
    VECTOR_TYPES[_n] = DSLType(_n)
for _l in (8, 16, 32):
    VECTOR_TYPES[f"boolx{_l}"] = DSLType(f"boolx{_l}")
