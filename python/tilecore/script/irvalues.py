"""tilecore/script/irvalues.py — the parser's kernel values, and helpers that build
Kernel IR with the span of the statement being parsed.

``IRValue`` wraps an expression (scalar or vector), ``IRPointer`` a buffer plus an
element offset, ``IRBuffer`` an allocated or viewed buffer, ``IRRegion`` a window.
The IR implementations of the DSL APIs (api/*.py) build nodes through :func:`node`,
:func:`call`, :func:`emit`, which give every node the current span.
"""

from __future__ import annotations

from .. import ir
from ..ir import _ffi_api
from . import registry
from . import types as T
from .frontend import kind, literal_value
from .values import MemoryOps, ValueOps


def cur_span():
    ctx = registry.context()
    return getattr(ctx, "span", None)


class IRValue(ValueOps):
    """A kernel value while compiling: an IR expression."""

    __slots__ = ("node",)

    def __init__(self, node) -> None:
        self.node = node

    @property
    def dtype(self):
        return str(self.node.dtype)

    def __repr__(self) -> str:
        return f"IRValue({self.node!r}: {self.dtype})"


class IRPointer(MemoryOps):
    """``buffer`` (1-D view of a pointer parameter or a flat allocation) at ``offset``."""

    __slots__ = ("buffer", "offset", "base")
    dsl_kind = "pointer"

    def __init__(self, buffer, offset, base=None) -> None:
        self.buffer = buffer
        self.offset = offset
        self.base = base  # the IRBuffer this points into, if any

    @property
    def elem(self):
        return str(self.buffer.dtype)

    @property
    def scope(self):
        return str(self.buffer.scope)

    @property
    def name(self):
        return str(self.buffer.name)


class IRBuffer(MemoryOps):
    """An N-D buffer: ``S.alloc_buffer`` or ``S.view``; ``flat`` is its 1-D alias."""

    __slots__ = ("buffer", "flat")
    dsl_kind = "buffer"

    def __init__(self, buffer, flat) -> None:
        self.buffer = buffer
        self.flat = flat

    @property
    def elem(self):
        return str(self.buffer.dtype)

    @property
    def scope(self):
        return str(self.buffer.scope)

    @property
    def shape(self):
        return tuple(int(s) for s in self.buffer.shape)

    @property
    def name(self):
        return str(self.buffer.name)


class IRRegion:
    """``buffer[begin : begin + extents]`` (a tile or DMA operand)."""

    __slots__ = ("buffer", "begin", "extents")
    dsl_kind = "region"

    def __init__(self, buffer, begin, extents) -> None:
        self.buffer = buffer
        self.begin = begin
        self.extents = extents

    @property
    def elem(self):
        return str(self.buffer.dtype)

    @property
    def scope(self):
        return str(self.buffer.scope)

    @property
    def shape(self):
        return tuple(int(e) for e in self.extents)

    def node(self):
        return _ffi_api.BufferRegion(self.buffer, [index(b) for b in self.begin], [index(e) for e in self.extents],
                                     cur_span())


# ---------------------------------------------------------------------------
# Building nodes
# ---------------------------------------------------------------------------
def const(value, dtype):
    """An immediate of ``dtype`` (broadcast for a vector dtype)."""
    elem, lanes = T.split(dtype)
    value = literal_value(value)
    if elem == "bool":
        value = int(bool(value))
    node = imm(value, elem)
    return node if lanes == 1 else _ffi_api.Broadcast(node, lanes, cur_span())


def imm(value, elem):
    """A scalar immediate of element dtype ``elem`` carrying the current span."""
    if T.is_float(elem):
        return _ffi_api.FloatImm(elem, float(value), cur_span())
    return _ffi_api.IntImm(elem, int(value), cur_span())


def operand(x, dtype):
    """``x`` (literal, scalar or vector value) as an expression of ``dtype``."""
    if kind(x) == "literal":
        return const(x, dtype)
    node = x.node
    lanes = T.split(dtype)[1]
    if lanes > 1 and node.dtype.lanes == 1:
        return _ffi_api.Broadcast(node, lanes, cur_span())
    return node


def index(x):
    """An index expression (int32) from a literal or an integer kernel value."""
    if isinstance(x, ir.PrimExpr):
        return x
    if kind(x) == "literal":
        return imm(int(x), "int32")
    node = x.node
    if str(node.dtype) != "int32":
        node = _ffi_api.Cast("int32", node, cur_span())
    return node


def node(name, *args):
    """``ir.<name>(*args, span)`` with the current span."""
    return getattr(_ffi_api, name)(*args, cur_span())


def call(op, *args, dtype=None):
    return _ffi_api.Call(dtype, op, list(args), cur_span())


def emit(stmt_or_call) -> None:
    registry.context().emit(stmt_or_call)


def wrap(n):
    return IRValue(n)
