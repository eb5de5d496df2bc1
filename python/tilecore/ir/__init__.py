"""tilecore.ir: the Kernel IR — nodes, the IRBuilder and the script printer.

See docs/ir.md. Every node is a C++ object (type key ``ir.<Name>``); this package
gives them Python classes whose constructors call the registered C++ functions
(``ir.Add(a, b)`` calls ``ir.Add``), operator overloads, and an IRBuilder.
"""

from __future__ import annotations

from . import _ffi_api
from .expr import (
    Add, And, BinaryOp, Broadcast, Buffer, BufferLoad, BufferRegion, Call, Cast, Div, EQ, ExprOp, FloatImm,
    FloorDiv, FloorMod, GE, GT, IntImm, LE, LT, Let, Max, Min, Mod, Mul, NE, Node, Not, Or, PointerType,
    PrimExpr, PrimType, Ramp, Select, Span, StringImm, Sub, Type, Var,
    broadcast, call, cast, const, decl_buffer, eq, floordiv, floormod, let, list_intrinsics, max, min, ne,
    pointer_type, prim_type, ptr, ramp, select, span, string, truncdiv, truncmod, var,
)
from .stmt import (
    Allocate, BufferStore, Evaluate, For, IfThenElse, IRModule, LetStmt, PrimFunc, SeqStmt, Stmt, While, seq,
)
from .builder import BufferProxy, IRBuilder


def script(node: Node) -> str:
    """The node as script text (Python-like, like TVMScript)."""
    return _ffi_api.AsScript(node)
from . import graph  # noqa: E402
from .graph import (  # noqa: E402,F401
    Graph, GraphBuilder, GraphOpDef, OptionalType, QuantParams, SequenceType, TensorType, Value,
)
from .graph import Node as GraphNode  # noqa: E402,F401  (ir.Node is the Kernel IR's base class)

graph.install_registry_bridge()
