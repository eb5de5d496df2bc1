"""Expressions of the Kernel IR (see docs/ir.md).

Every class here is the Python face of a C++ node (type key ``ir.<Name>``);
fields read as attributes through reflection. Nodes are built only through the
registered constructors (``ir.Add(a, b)`` calls the C++ ``ir.Add``), which check
dtypes and raise ``TypeError`` naming the node and the dtypes.

Operators on expressions build nodes: ``i * 4 + 1``, ``x < n``, ``-x``, and, as in
Python, ``a // b`` (FloorDiv) and ``a % b`` (FloorMod); ``a / b`` is Div, which
truncates integers as C and TC1 do (also :func:`truncdiv` / :func:`truncmod`). A Python number next to
an expression becomes an immediate of that expression's dtype. ``==`` stays
identity (so nodes can be dict keys); use :func:`eq` / :func:`ne` or the
``.eq()`` / ``.ne()`` methods to build comparisons.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Sequence, Union

from ..ffi.object import Object, register_object
from . import _ffi_api

if TYPE_CHECKING:
    from ..ffi.dtype import DataType


def _dtype_str(dtype):
    return str(dtype)


class Node(Object):
    """Base of IR nodes: printed as script text."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _ffi_api.AsScript(self)

    def script(self) -> str:
        """The node as script text (what repr shows)."""
        return _ffi_api.AsScript(self)


@register_object("ir.Span")
class Span(Object):
    """A source location: ``file``, ``line``, ``column`` (1-based; 0 = unknown)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Span({self.file!r}, {self.line}, {self.column})"


def span(file: str, line: int, column: int = 0) -> Span:
    """Makes a :class:`Span`."""
    return _ffi_api.Span(file, line, column)


@register_object("ir.Type")
class Type(Node):
    __slots__ = ()


@register_object("ir.PrimType")
class PrimType(Type):
    __slots__ = ()


@register_object("ir.PointerType")
class PointerType(Type):
    __slots__ = ()


def prim_type(dtype: DTypeLike, span: Span | None = None) -> PrimType:
    return _ffi_api.PrimType(_dtype_str(dtype), span)


def pointer_type(dtype: DTypeLike, scope: str = "global", span: Span | None = None) -> PointerType:
    """The type of a pointer to ``dtype`` elements in ``scope`` (global, shared, local)."""
    return _ffi_api.PointerType(_dtype_str(dtype), scope, span)


def const(value: ExprLike, dtype: DTypeLike | None = None, span: Span | None = None) -> PrimExpr:
    """An immediate: ``const(1)`` is int32, ``const(1.0)`` float32, ``const(True)`` bool.

    With ``dtype`` a vector type (``"int32x8"``) the constant is broadcast.
    """
    if isinstance(value, PrimExpr):
        return value
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32"
        elif isinstance(value, float):
            dtype = "float32"
        else:
            raise TypeError(f"const: expected a bool, int or float, got {type(value).__name__}")
    if isinstance(value, bool):
        value = int(value)
    return _ffi_api.const(value, _dtype_str(dtype))


def _expr(value):
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, (bool, int, float)):
        return const(value)
    raise TypeError(f"expected an IR expression or a number, got {type(value).__name__}")


def _binary(name, a, b):
    a, b = _ffi_api._BinaryOpMatchTypes(_expr(a), _expr(b))
    return getattr(_ffi_api, name)(a, b, None)


class ExprOp:
    """Operator overloads shared by every expression."""

    __slots__ = ()

    def __add__(self, other):
        return _binary("Add", self, other)

    def __radd__(self, other):
        return _binary("Add", other, self)

    def __sub__(self, other):
        return _binary("Sub", self, other)

    def __rsub__(self, other):
        return _binary("Sub", other, self)

    def __mul__(self, other):
        return _binary("Mul", self, other)

    def __rmul__(self, other):
        return _binary("Mul", other, self)

    def __truediv__(self, other):
        return _binary("Div", self, other)

    def __rtruediv__(self, other):
        return _binary("Div", other, self)

    def __floordiv__(self, other):
        return _binary("FloorDiv", self, other)

    def __rfloordiv__(self, other):
        return _binary("FloorDiv", other, self)

    def __mod__(self, other):
        return _binary("FloorMod", self, other)

    def __rmod__(self, other):
        return _binary("FloorMod", other, self)

    def __neg__(self):
        return _binary("Sub", const(0, self.dtype), self)

    def __lt__(self, other):
        return _binary("LT", self, other)

    def __le__(self, other):
        return _binary("LE", self, other)

    def __gt__(self, other):
        return _binary("GT", self, other)

    def __ge__(self, other):
        return _binary("GE", self, other)

    def __and__(self, other):
        return _binary("And", self, other)

    def __or__(self, other):
        return _binary("Or", self, other)

    def __invert__(self):
        return _ffi_api.Not(self, None)

    def eq(self, other: ExprLike) -> PrimExpr:
        """``self == other`` as an EQ node."""
        return _binary("EQ", self, other)

    def ne(self, other: ExprLike) -> PrimExpr:
        """``self != other`` as an NE node."""
        return _binary("NE", self, other)

    def astype(self, dtype: DTypeLike) -> PrimExpr:
        """A Cast to ``dtype`` (no node when the dtype already matches)."""
        if str(self.dtype) == _dtype_str(dtype):
            return self
        return _ffi_api.Cast(_dtype_str(dtype), self, None)

    def __bool__(self) -> bool:
        raise TypeError(
            "an IR expression has no truth value while building; use ib.if_scope(cond) "
            "or ir.Select(cond, a, b)"
        )


@register_object("ir.PrimExpr")
class PrimExpr(ExprOp, Node):
    """Base of expressions; every expression has ``dtype`` and ``span``."""

    __slots__ = ()


#: An expression argument: an expression, or a Python number made a constant.
ExprLike = Union[PrimExpr, int, float, bool]
#: A dtype argument: a spelling (``"int32"``, ``"float16x8"``) or a DataType.
DTypeLike = Union[str, "DataType"]


@register_object("ir.IntImm")
class IntImm(PrimExpr):
    """An integer or bool constant: ``IntImm("int32", 5)``."""

    __slots__ = ()

    def __init__(self, dtype: DTypeLike, value: int, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.IntImm, _dtype_str(dtype), int(value), span)

    def __int__(self) -> int:
        return self.value


@register_object("ir.FloatImm")
class FloatImm(PrimExpr):
    """A float constant: ``FloatImm("float32", 0.5)``."""

    __slots__ = ()

    def __init__(self, dtype: DTypeLike, value: float, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.FloatImm, _dtype_str(dtype), float(value), span)

    def __float__(self) -> float:
        return self.value


@register_object("ir.StringImm")
class StringImm(PrimExpr):
    """A string argument of an intrinsic (dtype handle)."""

    __slots__ = ()

    def __init__(self, value: str, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.StringImm, value, span)


@register_object("ir.Var")
class Var(PrimExpr):
    """A variable: ``Var("n")`` (int32), ``Var("x", "float32")``, or a pointer
    ``Var("A", pointer_type("int8", "global"))``. Identity is the object; the name
    is a printing hint."""

    __slots__ = ()

    def __init__(self, name: str, dtype: DTypeLike = "int32", span: Span | None = None) -> None:
        if not isinstance(dtype, Type):
            dtype = _dtype_str(dtype)
        self.__init_handle_by_constructor__(_ffi_api.Var, name, dtype, span)


@register_object("ir.BinaryOp")
class BinaryOp(PrimExpr):
    """Base of the two-operand nodes (fields ``a``, ``b``)."""

    __slots__ = ()


def _binary_init(name):
    def __init__(self, a: ExprLike, b: ExprLike, span: Span | None = None) -> None:
        a, b = _ffi_api._BinaryOpMatchTypes(_expr(a), _expr(b))
        self.__init_handle_by_constructor__(getattr(_ffi_api, name), a, b, span)

    return __init__


def _binary_class(name, doc):
    cls = type(name, (BinaryOp,), {"__slots__": (), "__doc__": doc, "__init__": _binary_init(name)})
    cls.__module__ = __name__
    return register_object("ir." + name)(cls)


Add = _binary_class("Add", "``a + b``")
Sub = _binary_class("Sub", "``a - b``")
Mul = _binary_class("Mul", "``a * b``")
Div = _binary_class("Div", "``a / b``; truncating for integers (C, TC1)")
Mod = _binary_class("Mod", "``a % b``: remainder of truncating division; integers only")
FloorDiv = _binary_class("FloorDiv", "``a // b`` rounding toward negative infinity; integers only")
FloorMod = _binary_class("FloorMod", "``a - floordiv(a, b) * b``; integers only")
Min = _binary_class("Min", "``min(a, b)``")
Max = _binary_class("Max", "``max(a, b)``")
EQ = _binary_class("EQ", "``a == b`` (bool)")
NE = _binary_class("NE", "``a != b`` (bool)")
LT = _binary_class("LT", "``a < b`` (bool)")
LE = _binary_class("LE", "``a <= b`` (bool)")
GT = _binary_class("GT", "``a > b`` (bool)")
GE = _binary_class("GE", "``a >= b`` (bool)")
And = _binary_class("And", "``a and b`` on bools")
Or = _binary_class("Or", "``a or b`` on bools")


@register_object("ir.Not")
class Not(PrimExpr):
    """``not a`` on bools."""

    __slots__ = ()

    def __init__(self, a: ExprLike, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.Not, _expr(a), span)


@register_object("ir.Select")
class Select(PrimExpr):
    """``condition ? true_value : false_value`` (both evaluated)."""

    __slots__ = ()

    def __init__(self, condition: ExprLike, true_value: ExprLike, false_value: ExprLike,
                 span: Span | None = None) -> None:
        t, f = _ffi_api._BinaryOpMatchTypes(_expr(true_value), _expr(false_value))
        self.__init_handle_by_constructor__(_ffi_api.Select, _expr(condition), t, f, span)


@register_object("ir.Cast")
class Cast(PrimExpr):
    """Conversion to ``dtype`` with TC1's rounding and saturation."""

    __slots__ = ()

    def __init__(self, dtype: DTypeLike, value: ExprLike, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.Cast, _dtype_str(dtype), _expr(value), span)


@register_object("ir.Let")
class Let(PrimExpr):
    """``let var = value in body``."""

    __slots__ = ()

    def __init__(self, var: Var, value: ExprLike, body: ExprLike, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.Let, var, _expr(value), _expr(body), span)


@register_object("ir.Ramp")
class Ramp(PrimExpr):
    """The vector ``base + stride * [0 .. lanes-1]``."""

    __slots__ = ()

    def __init__(self, base: ExprLike, stride: ExprLike, lanes: int, span: Span | None = None) -> None:
        b, s = _ffi_api._BinaryOpMatchTypes(_expr(base), _expr(stride))
        self.__init_handle_by_constructor__(_ffi_api.Ramp, b, s, int(lanes), span)


@register_object("ir.Broadcast")
class Broadcast(PrimExpr):
    """A vector of ``lanes`` copies of the scalar ``value``."""

    __slots__ = ()

    def __init__(self, value: ExprLike, lanes: int, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.Broadcast, _expr(value), int(lanes), span)


@register_object("ir.Call")
class Call(PrimExpr):
    """A call of an intrinsic: ``Call("tir.core_id", [])``; dtype from the table."""

    __slots__ = ()

    def __init__(self, op: str, args: Sequence[ExprLike], dtype: DTypeLike | None = None,
                 span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(
            _ffi_api.Call, None if dtype is None else _dtype_str(dtype), op, [_expr(a) for a in args], span)


@register_object("ir.BufferLoad")
class BufferLoad(PrimExpr):
    """``buffer[indices]``; a Ramp index loads a vector."""

    __slots__ = ()

    def __init__(self, buffer: Buffer, indices: Sequence[ExprLike], span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.BufferLoad, buffer, [_index_expr(i) for i in indices], span)


@register_object("ir.BufferRegion")
class BufferRegion(PrimExpr):
    """The window ``buffer[begin[k] : begin[k] + extents[k], ...]`` (a tile operand)."""

    __slots__ = ()

    def __init__(self, buffer: Buffer, begin: Sequence[ExprLike], extents: Sequence[ExprLike],
                 span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(
            _ffi_api.BufferRegion, buffer, [_index_expr(b) for b in begin], [_index_expr(e) for e in extents], span)


@register_object("ir.Buffer")
class Buffer(Node):
    """A multi-dimensional view of memory (``data``, ``dtype``, ``shape``, ``strides``,
    ``elem_offset``, ``scope``, ``name``).

    ``buf[i, j]`` is a BufferLoad; ``buf[0:64, k:k + 8]`` (any slice) a BufferRegion.
    """

    __slots__ = ()

    def __getitem__(self, index):
        return _index(self, index)

    def load(self, *indices: ExprLike, span: Span | None = None) -> BufferLoad:
        return _ffi_api.BufferLoad(self, [_expr(i) for i in indices], span)

    def region(self, *ranges: tuple[ExprLike, ExprLike], span: Span | None = None) -> BufferRegion:
        """The window ``[(begin, extent), ...]``; no arguments = the whole buffer."""
        if not ranges:
            ranges = [(0, s) for s in self.shape]
        begins = [_index_expr(b) for b, _ in ranges]
        extents = [_index_expr(e) for _, e in ranges]
        return _ffi_api.BufferRegion(self, begins, extents, span)


def _index_expr(v):
    if isinstance(v, PrimExpr):
        return v
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"an index or loop bound must be an int or an integer expression, got "
                        f"{type(v).__name__} {v!r} (no implicit conversions)")
    return const(operator.index(v), "int32")


def _index(buf, index):
    if not isinstance(index, tuple):
        index = (index,)
    if any(isinstance(i, slice) for i in index):
        ranges = []
        for dim, i in enumerate(index):
            if isinstance(i, slice):
                if i.step not in (None, 1):
                    raise ValueError("a buffer region takes unit-step slices only")
                start = 0 if i.start is None else i.start
                stop = buf.shape[dim] if i.stop is None else i.stop
                if isinstance(start, int) and isinstance(stop, int):
                    extent = stop - start
                else:
                    extent = _simplify(_expr(stop) - _expr(start))
                ranges.append((start, extent))
            else:
                ranges.append((i, 1))
        return buf.region(*ranges)
    return _ffi_api.BufferLoad(buf, [_index_expr(i) for i in index], None)


def _simplify(e):
    from ..ffi._base import _ffi_core

    f = _ffi_core._get_global_func("transform.SimplifyExpr")
    return f(e) if f is not None else e


# ---------------------------------------------------------------------------
# Constructors (thin wrappers over the registered C++ functions)
# ---------------------------------------------------------------------------
def var(name: str, dtype: DTypeLike = "int32", span: Span | None = None) -> Var:
    """A new variable (``var("n")`` is int32)."""
    return Var(name, dtype, span)


def ptr(name: str, dtype: DTypeLike, scope: str = "global", span: Span | None = None) -> Var:
    """A pointer variable to ``dtype`` elements in ``scope``."""
    return _ffi_api.Var(name, pointer_type(dtype, scope), span)


def cast(dtype: DTypeLike, value: ExprLike, span: Span | None = None) -> PrimExpr:
    return _ffi_api.Cast(_dtype_str(dtype), _expr(value), span)


def select(cond: ExprLike, true_value: ExprLike, false_value: ExprLike, span: Span | None = None) -> PrimExpr:
    t, f = _ffi_api._BinaryOpMatchTypes(_expr(true_value), _expr(false_value))
    return _ffi_api.Select(_expr(cond), t, f, span)


def eq(a: ExprLike, b: ExprLike) -> PrimExpr:
    return _binary("EQ", a, b)


def ne(a: ExprLike, b: ExprLike) -> PrimExpr:
    return _binary("NE", a, b)


def min(a: ExprLike, b: ExprLike) -> PrimExpr:  # noqa: A001  (mirrors the IR node)
    return _binary("Min", a, b)


def max(a: ExprLike, b: ExprLike) -> PrimExpr:  # noqa: A001
    return _binary("Max", a, b)


def floordiv(a: ExprLike, b: ExprLike) -> PrimExpr:
    return _binary("FloorDiv", a, b)


def floormod(a: ExprLike, b: ExprLike) -> PrimExpr:
    return _binary("FloorMod", a, b)


def truncdiv(a: ExprLike, b: ExprLike) -> PrimExpr:
    return _binary("Div", a, b)


def truncmod(a: ExprLike, b: ExprLike) -> PrimExpr:
    return _binary("Mod", a, b)


def ramp(base: ExprLike, stride: ExprLike, lanes: int, span: Span | None = None) -> PrimExpr:
    b, s = _ffi_api._BinaryOpMatchTypes(_expr(base), _expr(stride))
    return _ffi_api.Ramp(b, s, lanes, span)


def broadcast(value: ExprLike, lanes: int, span: Span | None = None) -> PrimExpr:
    return _ffi_api.Broadcast(_expr(value), lanes, span)


def let(v: Var, value: ExprLike, body: ExprLike, span: Span | None = None) -> PrimExpr:
    return _ffi_api.Let(v, _expr(value), _expr(body), span)


def call(op: str, *args: ExprLike, dtype: DTypeLike | None = None, span: Span | None = None) -> PrimExpr:
    """A call of intrinsic ``op`` (see :func:`list_intrinsics`); its dtype comes from the table."""
    return _ffi_api.Call(None if dtype is None else _dtype_str(dtype), op, [_expr(a) for a in args], span)


def string(value: str, span: Span | None = None) -> PrimExpr:
    return _ffi_api.StringImm(value, span)


def decl_buffer(shape: Sequence[ExprLike], dtype: DTypeLike, name: str = "buf", scope: str = "global",
                span: Span | None = None) -> Buffer:
    """A new contiguous buffer with a fresh data pointer in ``scope``."""
    return _ffi_api.DeclBuffer([_index_expr(s) for s in shape], _dtype_str(dtype), name, scope, span)


def list_intrinsics() -> list[dict[str, Any]]:
    """The intrinsic table: a list of dicts (name, args, arg_names, result, has_effect, unit, doc)."""
    return [dict(row.items()) for row in _ffi_api.ListIntrinsics()]
