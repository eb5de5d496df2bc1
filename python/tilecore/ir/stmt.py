"""Statements of the Kernel IR and the function/module containers (see docs/ir.md)."""

from __future__ import annotations

from ..ffi.object import register_object
from . import _ffi_api
from .expr import Node, _expr, _index_expr


@register_object("ir.Stmt")
class Stmt(Node):
    """Base of statements; every statement has a ``span``."""

    __slots__ = ()


@register_object("ir.BufferStore")
class BufferStore(Stmt):
    """``buffer[indices] = value``; ``predicate`` (bool vector) masks lanes of a vector store."""

    __slots__ = ()

    def __init__(self, buffer, value, indices, predicate=None, span=None) -> None:
        self.__init_handle_by_constructor__(
            _ffi_api.BufferStore, buffer, _expr(value), [_index_expr(i) for i in indices], predicate, span)


@register_object("ir.LetStmt")
class LetStmt(Stmt):
    """``var = value`` for ``body``."""

    __slots__ = ()

    def __init__(self, var, value, body, span=None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.LetStmt, var, _expr(value), body, span)


@register_object("ir.For")
class For(Stmt):
    """``for loop_var in range(min, min + extent): body``; ``kind`` is serial, unrolled,
    vectorized or cores."""

    __slots__ = ()

    def __init__(self, loop_var, min, extent, kind, body, annotations=None, span=None) -> None:  # noqa: A002
        self.__init_handle_by_constructor__(
            _ffi_api.For, loop_var, _index_expr(min), _index_expr(extent), kind, body, annotations, span)


@register_object("ir.While")
class While(Stmt):
    """``while condition: body``."""

    __slots__ = ()

    def __init__(self, condition, body, span=None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.While, condition, body, span)


@register_object("ir.IfThenElse")
class IfThenElse(Stmt):
    """``if condition: then_case else: else_case`` (``else_case`` may be None)."""

    __slots__ = ()

    def __init__(self, condition, then_case, else_case=None, span=None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.IfThenElse, condition, then_case, else_case, span)


@register_object("ir.Allocate")
class Allocate(Stmt):
    """A ``buffer`` in local (L1) or shared (L2) memory, live in ``body``."""

    __slots__ = ()

    def __init__(self, buffer, body, span=None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.Allocate, buffer, body, span)


@register_object("ir.SeqStmt")
class SeqStmt(Stmt):
    """Statements ``seq`` in order."""

    __slots__ = ()

    def __init__(self, seq, span=None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.SeqStmt, list(seq), span)


@register_object("ir.Evaluate")
class Evaluate(Stmt):
    """An expression (an intrinsic call) evaluated for its effect."""

    __slots__ = ()

    def __init__(self, value, span=None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.Evaluate, _expr(value), span)


@register_object("ir.PrimFunc")
class PrimFunc(Node):
    """A kernel: ``params``, ``buffer_map`` (param -> Buffer), ``body``, ``attrs``."""

    __slots__ = ()

    def __init__(self, params, body, buffer_map=None, attrs=None, span=None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.PrimFunc, list(params), body, buffer_map, attrs, span)

    def with_attr(self, key, value):
        return _ffi_api.PrimFuncWithAttr(self, key, value)

    def with_body(self, body):
        return _ffi_api.PrimFuncWithBody(self, body)


@register_object("ir.IRModule")
class IRModule(Node):
    """Named kernels: ``functions`` (name -> PrimFunc) and ``attrs``."""

    __slots__ = ()

    def __init__(self, functions=None, attrs=None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.IRModule, dict(functions or {}), attrs)

    def __getitem__(self, name):
        return _ffi_api.IRModuleLookup(self, name)

    @staticmethod
    def from_function(func):
        """A module holding ``func`` under its global_symbol (or "main")."""
        return _ffi_api.IRModuleFromFunction(func)


def seq(*stmts):
    """Statements in order, flattened (one statement stays itself)."""
    return _ffi_api.SeqStmtFlatten(list(stmts))
