"""tilecore/script/api/operators.py — Python operators on kernel values.

``a + b``, ``a < b``, ``m & n``, ``~x``, ``-x``, ``x if c else y``, ``min(a, b)`` ...
Each operator is a registered API (front end + IR + PySim), reached through the
dunder methods of values.py or, for ``and``/``or``/``not``/``if-else``/``min``/``max``,
from the parser and from PySim's builtins. See values.py for the semantics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import frontend as fe
from .. import irvalues as irv
from .. import types as T
from ..pysim import semantics as sem
from ..registry import api

if TYPE_CHECKING:
    from ..frontend import Plan
    from ..values import KernelValue

_ARITH_NODE = {"add": "Add", "sub": "Sub", "mul": "Mul", "truediv": "Div", "floordiv": "FloorDiv",
               "mod": "FloorMod", "min": "Min", "max": "Max",
               "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE", "eq": "EQ", "ne": "NE"}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "lshift": "<<",
           "rshift": ">>", "and_": "&", "or_": "|", "xor": "^", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
           "eq": "==", "ne": "!=", "min": "min", "max": "max"}


def _ir_binary(p, node_name):
    a, b = irv.operand(p.a, p.dtype), irv.operand(p.b, p.dtype)
    return irv.wrap(irv.node(node_name, a, b))


def _py_operands(p):
    return sem.lanes_of(p.a, p.dtype), sem.lanes_of(p.b, p.dtype)


def _def_arith(name, sem_op):
    sym = _SYMBOL[name]

    def front(a: KernelValue, b: KernelValue) -> Plan:
        return fe.binary(f"`{sym}`", a, b, allowed=fe.NUMERIC)

    front.__name__ = name
    front.__doc__ = f"``a {sym} b`` lane-wise (integers wrap; floats round to nearest even)."
    f = api(name)(front)
    f.ir(lambda p: _ir_binary(p, _ARITH_NODE[name]))
    f.py(lambda p: sem.value(sem.arith(sem_op, *_py_operands(p), p.elem), p.dtype))
    return f


add = _def_arith("add", "add")
sub = _def_arith("sub", "sub")
mul = _def_arith("mul", "mul")


def _def_div(name):
    sym = _SYMBOL[name]
    allowed = fe.NUMERIC if name == "truediv" else fe.INTEGER

    def front(a: KernelValue, b: KernelValue) -> Plan:
        return fe.binary(f"`{sym}`", a, b, allowed=allowed,
                         scalar_only=" (TC1's SIMD unit has no divide; use S.tile_div on the vector engine)")

    front.__name__ = name
    f = api(name)(front)
    f.ir(lambda p: _ir_binary(p, _ARITH_NODE[name]))
    f.py(lambda p: sem.value(sem.divide(name, *_py_operands(p), p.elem), p.dtype))
    return f


truediv = _def_div("truediv")
floordiv = _def_div("floordiv")
mod = _def_div("mod")


def _def_compare(name):
    sym = _SYMBOL[name]
    allowed = fe.ANY if name in ("eq", "ne") else fe.NUMERIC

    def front(a: KernelValue, b: KernelValue) -> Plan:
        return fe.binary(f"`{sym}`", a, b, allowed=allowed, result="bool")

    front.__name__ = name
    f = api(name)(front)
    f.ir(lambda p: _ir_binary(p, _ARITH_NODE[name]))
    f.py(lambda p: sem.value(sem.compare(name, *_py_operands(p), p.elem), p.result))
    return f


lt = _def_compare("lt")
le = _def_compare("le")
gt = _def_compare("gt")
ge = _def_compare("ge")
eq = _def_compare("eq")
ne = _def_compare("ne")


def _def_minmax(name):
    def front(a: KernelValue, b: KernelValue) -> Plan:
        return fe.binary(name, a, b, allowed=fe.NUMERIC)

    front.__name__ = name
    f = api(name)(front)
    f.ir(lambda p: _ir_binary(p, _ARITH_NODE[name]))
    f.py(lambda p: sem.value(sem.arith(name, *_py_operands(p), p.elem), p.dtype))
    return f


min_ = _def_minmax("min")
max_ = _def_minmax("max")

_BIT_INTRIN = {"and_": "tir.bitwise_and", "or_": "tir.bitwise_or", "xor": "tir.bitwise_xor"}
_BOOL_NODE = {"and_": "And", "or_": "Or", "xor": "NE"}


def _def_bitwise(name):
    sym = _SYMBOL[name]

    def front(a: KernelValue, b: KernelValue) -> Plan:
        return fe.binary(f"`{sym}`", a, b, allowed=fe.INTEGER + ("bool",))

    front.__name__ = name
    f = api(name)(front)

    @f.ir
    def _ir(p):
        if p.elem == "bool":
            return _ir_binary(p, _BOOL_NODE[name])
        a, b = irv.operand(p.a, p.dtype), irv.operand(p.b, p.dtype)
        return irv.wrap(irv.call(_BIT_INTRIN[name], a, b))

    f.py(lambda p: sem.value(sem.bitwise(name.rstrip("_"), *_py_operands(p), p.elem), p.dtype))
    return f


and_ = _def_bitwise("and_")
or_ = _def_bitwise("or_")
xor = _def_bitwise("xor")


def _def_shift(name, op):
    sym = _SYMBOL[name]

    def front(a: KernelValue, b: KernelValue) -> Plan:
        return fe.binary(f"`{sym}`", a, b, allowed=fe.INTEGER)

    front.__name__ = name
    f = api(name)(front)
    intrin = "tir.shift_left" if op == "shl" else "tir.shift_right"
    f.ir(lambda p: irv.wrap(irv.call(intrin, irv.operand(p.a, p.dtype), irv.operand(p.b, p.dtype))))
    f.py(lambda p: sem.value(sem.shift(op, *_py_operands(p), p.elem), p.dtype))
    return f


lshift = _def_shift("lshift", "shl")
rshift = _def_shift("rshift", "shr")


@api("neg")
def neg(a: KernelValue) -> Plan:
    """``-a`` = ``0 - a`` (integers wrap: -INT_MIN is INT_MIN)."""
    return fe.binary("unary `-`", 0, a, allowed=fe.NUMERIC)


neg.ir(lambda p: _ir_binary(p, "Sub"))
neg.py(lambda p: sem.value(sem.arith("sub", *_py_operands(p), p.elem), p.dtype))


@api("invert")
def invert(a: KernelValue) -> Plan:
    """``~a``: bitwise not of integers, logical not of bools (masks)."""
    dt = fe.value_dtype("`~`", "a", a, allowed=fe.INTEGER + ("bool",))
    return fe.Plan(a=a, dtype=dt, elem=T.split(dt)[0])


@invert.ir
def _invert_ir(p):
    if p.elem == "bool":
        return irv.wrap(irv.node("Not", p.a.node))
    return irv.wrap(irv.call("tir.bitwise_not", p.a.node))


@invert.py
def _invert_py(p):
    return sem.value(np.logical_not(p.a.data) if p.elem == "bool" else np.invert(p.a.data), p.dtype)


def _def_logic(name, node_name, np_fn):
    def front(a: KernelValue, b: KernelValue) -> Plan:
        pa = fe.condition(name, a) if fe.kind(a) != "value" or T.split(a.dtype)[1] == 1 else a
        pb = fe.condition(name, b) if fe.kind(b) != "value" or T.split(b.dtype)[1] == 1 else b
        return fe.binary(f"`{name}`", pa, pb, allowed=("bool",))

    front.__name__ = f"logical_{name}"
    f = api(f"logical_{name}")(front)
    f.ir(lambda p: _ir_binary(p, node_name))
    f.py(lambda p: sem.value(np_fn(*_py_operands(p)), p.dtype))
    return f


logical_and = _def_logic("and", "And", np.logical_and)
logical_or = _def_logic("or", "Or", np.logical_or)


@api("logical_not")
def logical_not(a: KernelValue) -> Plan:
    """``not a`` for a scalar bool kernel value."""
    c = fe.condition("`not`", a)
    return fe.Plan(a=c)


logical_not.ir(lambda p: irv.wrap(irv.node("Not", p.a.node)))
logical_not.py(lambda p: sem.value(np.logical_not(p.a.data), "bool"))


@api("select")
def select(cond: KernelValue, a: KernelValue, b: KernelValue) -> Plan:
    """``a if cond else b`` with a kernel-value condition (both sides are evaluated)."""
    c = fe.condition("`if-else` expression", cond)
    p = fe.binary("`if-else` expression", a, b, allowed=fe.ANY)
    p.cond = c
    return p


select.ir(lambda p: irv.wrap(irv.node("Select", p.cond.node, irv.operand(p.a, p.dtype),
                                      irv.operand(p.b, p.dtype))))
select.py(lambda p: sem.value(np.where(p.cond.data[0], *_py_operands(p)), p.dtype))


@api("truth")
def truth(x: KernelValue) -> Plan:
    """The truth value of a kernel value in Python code that PySim runs (``if x:`` in a helper)."""
    return fe.Plan(c=fe.condition("condition", x))


@truth.ir
def _truth_ir(p):
    raise TypeError("a kernel value has no truth value while compiling: conditions on kernel values belong "
                    "in the kernel's own if / while / and / or / not / x-if-c-else-y (the parser turns them "
                    "into IR), not in Python helper functions")


truth.py(lambda p: p.c if isinstance(p.c, bool) else bool(p.c.data[0]))
