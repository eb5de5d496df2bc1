"""IRBuilder: write a kernel as nested Python ``with`` blocks.

    from tilecore import ir
    ib = ir.IRBuilder("add_one")
    A = ib.buffer_param("A", (128,), "int32")
    B = ib.buffer_param("B", (128,), "int32")
    with ib.for_range(0, 128, name="i") as i:
        B[i] = A[i] + 1
    func = ib.get()                     # a PrimFunc with global_symbol "add_one"

Scopes: ``for_range`` (kinds serial, unrolled, vectorized, cores), ``while_loop``,
``if_scope`` / ``else_scope``. ``allocate`` and ``let`` cover the rest of the
enclosing scope. ``emit`` appends a statement, or an intrinsic call (wrapped in
Evaluate). Buffers returned by the builder accept ``A[i] = v`` stores.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator, Sequence

from . import _ffi_api
from .expr import Buffer, PrimExpr, _expr, _index, _index_expr, call, const, decl_buffer, ptr, var
from .stmt import Stmt

if TYPE_CHECKING:
    from .expr import BufferRegion, DTypeLike, ExprLike, Span, Var
    from .stmt import PrimFunc


class BufferProxy:
    """A buffer bound to a builder: ``A[i]`` loads (or a region, with slices);
    ``A[i] = v`` emits a store into the builder's current scope."""

    __slots__ = ("buffer", "_ib")

    def __init__(self, buffer: Buffer, ib: IRBuilder) -> None:
        self.buffer = buffer
        self._ib = ib

    def __getitem__(self, index):
        return _index(self.buffer, index)

    def __setitem__(self, index, value) -> None:
        if not isinstance(index, tuple):
            index = (index,)
        self._ib.store(self.buffer, index, value)

    def region(self, *ranges: tuple[ExprLike, ExprLike]) -> BufferRegion:
        return self.buffer.region(*ranges)

    def __getattr__(self, name):
        return getattr(self.buffer, name)

    def __repr__(self) -> str:
        return f"BufferProxy({self.buffer.name}: {self.buffer.dtype}{list(self.buffer.shape)} {self.buffer.scope})"


def _unwrap(b):
    return b.buffer if isinstance(b, BufferProxy) else b


class IRBuilder:
    """Builds one PrimFunc. ``name`` becomes its ``global_symbol``."""

    def __init__(self, name: str = "main") -> None:
        self.name = name
        self._params = []
        self._buffer_map = {}
        self._scopes = [[]]
        self._span = None

    # -- parameters -----------------------------------------------------------
    def scalar_param(self, name: str, dtype: DTypeLike = "int32") -> Var:
        """A scalar parameter (a Var)."""
        v = var(name, dtype)
        self._params.append(v)
        return v

    def pointer_param(self, name: str, dtype: DTypeLike, scope: str = "global") -> Var:
        """A raw pointer parameter (no buffer view)."""
        v = ptr(name, dtype, scope)
        self._params.append(v)
        return v

    def buffer_param(self, name: str, shape: Sequence[ExprLike], dtype: DTypeLike,
                     scope: str = "global") -> BufferProxy:
        """A pointer parameter with a buffer view of ``shape``; returns a BufferProxy."""
        buf = decl_buffer(shape, dtype, name, scope)
        self._params.append(buf.data)
        self._buffer_map[buf.data] = buf
        return BufferProxy(buf, self)

    # -- emitting ---------------------------------------------------------------
    def set_span(self, span: Span | None) -> None:
        """Spans given to statements emitted from now on (None to stop)."""
        self._span = span

    def emit(self, stmt_or_expr: Stmt | PrimExpr) -> None:
        """Appends a statement; an expression (intrinsic call) is wrapped in Evaluate."""
        if isinstance(stmt_or_expr, PrimExpr):
            stmt_or_expr = _ffi_api.Evaluate(stmt_or_expr, self._span)
        if not isinstance(stmt_or_expr, Stmt):
            raise TypeError(f"emit: expected a statement or an expression, got {type(stmt_or_expr).__name__}")
        self._scopes[-1].append(stmt_or_expr)

    def call(self, op: str, *args: ExprLike) -> None:
        """Emits ``Evaluate(call(op, *args))``; regions may be given as BufferProxy slices."""
        self.emit(call(op, *[_unwrap(a) for a in args]))

    def store(self, buffer: Buffer | BufferProxy, indices: Sequence[ExprLike], value: ExprLike,
              predicate: ExprLike | None = None) -> None:
        buffer = _unwrap(buffer)
        idx = [_index_expr(i) for i in indices]
        # A Python number takes the buffer's dtype, if it is of the same kind: an int for an
        # integer or float buffer, a float for a float buffer. There are no other implicit
        # conversions: an expression of another dtype is a TypeError (BufferStore's check).
        dtype = str(buffer.dtype)
        if isinstance(value, (bool, int, float)) and not isinstance(value, PrimExpr):
            if isinstance(value, float) and not dtype.startswith(("float", "bfloat")):
                raise TypeError(f"store: the float literal {value!r} cannot be stored into a {dtype} buffer "
                                "(no implicit conversions; write int(...) or a cast)")
            value = const(value, dtype)
        value = _expr(value)
        self.emit(_ffi_api.BufferStore(buffer, value, idx, predicate, self._span))

    def let(self, name: str, value: ExprLike) -> Var:
        """Binds ``value`` to a new variable for the rest of the current scope."""
        value = _expr(value)
        v = var(name, str(value.dtype))
        self._scopes[-1].append(("let", v, value, self._span))
        return v

    def allocate(self, dtype: DTypeLike, shape: Sequence[ExprLike], name: str = "buf",
                 scope: str = "local") -> BufferProxy:
        """Allocates a buffer (local = L1, shared = L2) for the rest of the current scope."""
        buf = decl_buffer(shape, dtype, name, scope)
        self._scopes[-1].append(("alloc", buf, None, self._span))
        return BufferProxy(buf, self)

    # -- scopes -------------------------------------------------------------------
    def _push(self) -> None:
        self._scopes.append([])

    def _pop(self):
        return self._seal(self._scopes.pop())

    def _seal(self, items):
        body = None
        rest = []
        for item in reversed(items):
            if isinstance(item, tuple):
                kind, a, b, span = item
                inner = _ffi_api.SeqStmtFlatten(list(reversed(rest))) if rest else _ffi_api.Evaluate(const(0), None)
                if kind == "let":
                    body = _ffi_api.LetStmt(a, b, inner, span)
                else:
                    body = _ffi_api.Allocate(a, inner, span)
                rest = [body]
            else:
                rest.append(item)
        if not rest:
            return _ffi_api.Evaluate(const(0), None)
        return _ffi_api.SeqStmtFlatten(list(reversed(rest)))

    @contextlib.contextmanager
    def for_range(self, begin: ExprLike, end: ExprLike, name: str = "i", kind: str = "serial",
                  dtype: DTypeLike = "int32") -> Iterator[Var]:
        """``for name in range(begin, end)``; kind: serial, unrolled, vectorized, cores."""
        begin_e, end_e = _index_expr(begin), _index_expr(end)
        loop_var = var(name, dtype)
        if isinstance(begin, int) and isinstance(end, int):
            extent = const(end - begin, dtype)
        elif isinstance(begin, int) and begin == 0:
            extent = end_e
        else:
            extent = end_e - begin_e
        span = self._span
        self._push()
        yield loop_var
        body = self._pop()
        self.emit(_ffi_api.For(loop_var, begin_e, extent, kind, body, None, span))

    @contextlib.contextmanager
    def while_loop(self, condition: ExprLike) -> Iterator[None]:
        span = self._span
        self._push()
        yield
        self.emit(_ffi_api.While(condition, self._pop(), span))

    @contextlib.contextmanager
    def if_scope(self, condition: ExprLike) -> Iterator[None]:
        """``if condition:``; may be followed by ``with ib.else_scope():``."""
        span = self._span
        self._push()
        yield
        self.emit(_ffi_api.IfThenElse(condition, self._pop(), None, span))

    @contextlib.contextmanager
    def else_scope(self) -> Iterator[None]:
        scope = self._scopes[-1]
        if not scope or not isinstance(scope[-1], Stmt) or scope[-1].__class__.__name__ != "IfThenElse" \
                or scope[-1].else_case is not None:
            raise ValueError("else_scope must follow an if_scope (without an else yet)")
        prev = scope.pop()
        self._push()
        yield
        else_case = self._pop()
        self.emit(_ffi_api.IfThenElse(prev.condition, prev.then_case, else_case, prev.span))

    # -- result ---------------------------------------------------------------------
    def get_body(self) -> Stmt:
        if len(self._scopes) != 1:
            raise ValueError("IRBuilder.get: a with-scope is still open")
        return self._seal(self._scopes[0])

    def get(self) -> PrimFunc:
        """The PrimFunc built so far."""
        return _ffi_api.PrimFunc(self._params, self.get_body(), self._buffer_map,
                                 {"global_symbol": self.name}, None)


__all__ = ["BufferProxy", "IRBuilder", "Buffer"]
