"""tilecore/script/irvalues.py — the parser's kernel values, and helpers that build
Kernel IR with the span of the statement being parsed.

``IRValue`` wraps an expression (scalar or vector), ``IRPointer`` a buffer plus an
element offset, ``IRBuffer`` an allocated or viewed buffer, ``IRRegion`` a window.
The IR implementations of the DSL APIs (api/*.py) build nodes through :func:`node`,
:func:`call`, :func:`emit`, which give every node the current span.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .. import ir
from ..ir import _ffi_api
from . import registry
from . import types as T
from .frontend import kind, literal_value
from .values import MemoryOps, ValueOps

if TYPE_CHECKING:
    from ..ir.expr import Buffer, BufferRegion, ExprLike, PrimExpr, Span
    from ..ir.stmt import Stmt
    from .values import KernelValue


def cur_span() -> Span | None:
    ctx = registry.context()
    return getattr(ctx, "span", None)


class IRValue(ValueOps):
    """A kernel value while compiling: an IR expression."""

    __slots__ = ("node",)

    def __init__(self, node: PrimExpr) -> None:
        self.node = node

    @property
    def dtype(self) -> str:
        return str(self.node.dtype)

    def __repr__(self) -> str:
        return f"IRValue({self.node!r}: {self.dtype})"


class IRPointer(MemoryOps):
    """``buffer`` (1-D view of a pointer parameter or a flat allocation) at ``offset``."""

    __slots__ = ("buffer", "offset", "base")
    dsl_kind = "pointer"

    def __init__(self, buffer: Buffer, offset: ExprLike, base: IRBuffer | None = None) -> None:
        self.buffer = buffer
        self.offset = offset
        self.base = base  # the IRBuffer this points into, if any

    @property
    def elem(self) -> str:
        return str(self.buffer.dtype)

    @property
    def scope(self) -> str:
        return str(self.buffer.scope)

    @property
    def name(self) -> str:
        return str(self.buffer.name)


class IRBuffer(MemoryOps):
    """An N-D buffer: ``S.alloc_buffer`` or ``S.view``; ``flat`` is its 1-D alias."""

    __slots__ = ("buffer", "flat")
    dsl_kind = "buffer"

    def __init__(self, buffer: Buffer, flat: Buffer) -> None:
        self.buffer = buffer
        self.flat = flat

    @property
    def elem(self) -> str:
        return str(self.buffer.dtype)

    @property
    def scope(self) -> str:
        return str(self.buffer.scope)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.buffer.shape)

    @property
    def name(self) -> str:
        return str(self.buffer.name)


class IRRegion:
    """``buffer[begin : begin + extents]`` (a tile or DMA operand)."""

    __slots__ = ("buffer", "begin", "extents")
    dsl_kind = "region"

    def __init__(self, buffer: Buffer, begin: Sequence[ExprLike], extents: Sequence[ExprLike]) -> None:
        self.buffer = buffer
        self.begin = begin
        self.extents = extents

    @property
    def elem(self) -> str:
        return str(self.buffer.dtype)

    @property
    def scope(self) -> str:
        return str(self.buffer.scope)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(e) for e in self.extents)

    def node(self) -> BufferRegion:
        return _ffi_api.BufferRegion(self.buffer, [index(b) for b in self.begin], [index(e) for e in self.extents],
                                     cur_span())


# ---------------------------------------------------------------------------
# Building nodes
# ---------------------------------------------------------------------------
def const(value: bool | int | float, dtype: str) -> PrimExpr:
    """An immediate of ``dtype`` (broadcast for a vector dtype)."""
    elem, lanes = T.split(dtype)
    value = literal_value(value)
    if elem == "bool":
        value = int(bool(value))
    node = imm(value, elem)
    return node if lanes == 1 else _ffi_api.Broadcast(node, lanes, cur_span())


def imm(value: bool | int | float, elem: str) -> PrimExpr:
    """A scalar immediate of element dtype ``elem`` carrying the current span."""
    if T.is_float(elem):
        return _ffi_api.FloatImm(elem, float(value), cur_span())
    return _ffi_api.IntImm(elem, int(value), cur_span())


def operand(x: KernelValue, dtype: str) -> PrimExpr:
    """``x`` (literal, scalar or vector value) as an expression of ``dtype``."""
    if kind(x) == "literal":
        return const(x, dtype)
    node = x.node
    lanes = T.split(dtype)[1]
    if lanes > 1 and node.dtype.lanes == 1:
        return _ffi_api.Broadcast(node, lanes, cur_span())
    return node


def index(x: KernelValue) -> PrimExpr:
    """An index expression (int32) from a literal or an integer kernel value."""
    if isinstance(x, ir.PrimExpr):
        return x
    if kind(x) == "literal":
        return imm(int(x), "int32")
    node = x.node
    if str(node.dtype) != "int32":
        node = _ffi_api.Cast("int32", node, cur_span())
    return node


def node(name: str, *args: Any) -> Any:
    """``ir.<name>(*args, span)`` with the current span."""
    return getattr(_ffi_api, name)(*args, cur_span())


def call(op: str, *args: PrimExpr, dtype: str | None = None) -> PrimExpr:
    return _ffi_api.Call(dtype, op, list(args), cur_span())


def emit(stmt_or_call: Stmt | PrimExpr) -> None:
    registry.context().emit(stmt_or_call)


def wrap(n: PrimExpr) -> IRValue:
    return IRValue(n)
