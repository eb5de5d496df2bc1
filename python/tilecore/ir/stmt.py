"""Statements of the Kernel IR and the function/module containers (see docs/ir.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..ffi.object import register_object
from . import _ffi_api
from .expr import Node, _expr, _index_expr

if TYPE_CHECKING:
    from .expr import Buffer, ExprLike, Span, Var


@register_object("ir.Stmt")
class Stmt(Node):
    """Base of statements; every statement has a ``span``."""

    __slots__ = ()


@register_object("ir.BufferStore")
class BufferStore(Stmt):
    """``buffer[indices] = value``; ``predicate`` (bool vector) masks lanes of a vector store."""

    __slots__ = ()

    def __init__(self, buffer: Buffer, value: ExprLike, indices: Sequence[ExprLike], predicate: ExprLike | None = None,
                 span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(
            _ffi_api.BufferStore, buffer, _expr(value), [_index_expr(i) for i in indices], predicate, span)


@register_object("ir.LetStmt")
class LetStmt(Stmt):
    """``var = value`` for ``body``."""

    __slots__ = ()

    def __init__(self, var: Var, value: ExprLike, body: Stmt, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.LetStmt, var, _expr(value), body, span)


@register_object("ir.For")
class For(Stmt):
    """``for loop_var in range(min, min + extent): body``; ``kind`` is serial, unrolled,
    vectorized or cores."""

    __slots__ = ()

    def __init__(self, loop_var: Var, min: ExprLike, extent: ExprLike, kind: str, body: Stmt,  # noqa: A002
                 annotations: Mapping[str, Any] | None = None, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(
            _ffi_api.For, loop_var, _index_expr(min), _index_expr(extent), kind, body, annotations, span)


@register_object("ir.While")
class While(Stmt):
    """``while condition: body``."""

    __slots__ = ()

    def __init__(self, condition: ExprLike, body: Stmt, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.While, condition, body, span)


@register_object("ir.IfThenElse")
class IfThenElse(Stmt):
    """``if condition: then_case else: else_case`` (``else_case`` may be None)."""

    __slots__ = ()

    def __init__(self, condition: ExprLike, then_case: Stmt, else_case: Stmt | None = None,
                 span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.IfThenElse, condition, then_case, else_case, span)


@register_object("ir.Allocate")
class Allocate(Stmt):
    """A ``buffer`` in local (L1) or shared (L2) memory, live in ``body``."""

    __slots__ = ()

    def __init__(self, buffer: Buffer, body: Stmt, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.Allocate, buffer, body, span)


@register_object("ir.SeqStmt")
class SeqStmt(Stmt):
    """Statements ``seq`` in order."""

    __slots__ = ()

    def __init__(self, seq: Sequence[Stmt], span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.SeqStmt, list(seq), span)


@register_object("ir.Evaluate")
class Evaluate(Stmt):
    """An expression (an intrinsic call) evaluated for its effect."""

    __slots__ = ()

    def __init__(self, value: ExprLike, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.Evaluate, _expr(value), span)


@register_object("ir.PrimFunc")
class PrimFunc(Node):
    """A kernel: ``params``, ``buffer_map`` (param -> Buffer), ``body``, ``attrs``."""

    __slots__ = ()

    def __init__(self, params: Sequence[Var], body: Stmt, buffer_map: Mapping[Var, Buffer] | None = None,
                 attrs: Mapping[str, Any] | None = None, span: Span | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.PrimFunc, list(params), body, buffer_map, attrs, span)

    def with_attr(self, key: str, value: Any) -> PrimFunc:
        return _ffi_api.PrimFuncWithAttr(self, key, value)

    def with_body(self, body: Stmt) -> PrimFunc:
        return _ffi_api.PrimFuncWithBody(self, body)


@register_object("ir.IRModule")
class IRModule(Node):
    """Named kernels: ``functions`` (name -> PrimFunc) and ``attrs``."""

    __slots__ = ()

    def __init__(self, functions: Mapping[str, PrimFunc] | None = None, attrs: Mapping[str, Any] | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.IRModule, dict(functions or {}), attrs)

    def __getitem__(self, name):
        return _ffi_api.IRModuleLookup(self, name)

    @staticmethod
    def from_function(func: PrimFunc) -> IRModule:
        """A module holding ``func`` under its global_symbol (or "main")."""
        return _ffi_api.IRModuleFromFunction(func)


def seq(*stmts: Stmt | ExprLike) -> Stmt:
    """Statements in order, flattened (one statement stays itself)."""
    return _ffi_api.SeqStmtFlatten(list(stmts))
