"""tilecore/script/frontend.py — type inference, promotion and argument checks, shared by
the compiler (parser -> IR) and PySim.

Every DSL API's front end calls these helpers, then hands a plan to the IR or the
Python implementation (registry.py). The helpers see values only through their
*kind* and *dtype*:

=========  ==========================================================================
kind       what
=========  ==========================================================================
literal    a Python bool, int or float (a compile-time constant)
value      a kernel value: scalar (``int32``) or vector (``int32x8``, masks ``boolx8``)
pointer    a pointer (``elem``, ``scope``): a parameter, ``p + k``, ``buf.addr_of(i)``
buffer     an ``S.alloc_buffer`` / ``S.view`` buffer (``elem``, ``shape``, ``scope``)
region     a window of a buffer or pointer (``elem``, ``shape``, ``scope``): ``buf[0:4, 0:8]``
=========  ==========================================================================

Promotion is deliberately small (TC1 has no implicit conversions): a literal takes
the dtype of the kernel value next to it (it must fit: ``300`` next to ``int8`` is
an error, and a float literal next to an integer is an error); a scalar next to a
vector of the same element dtype is broadcast; anything else that differs is a
``TypeError`` that names both dtypes. Use ``S.cast`` to convert.
"""

from __future__ import annotations

import numbers
from types import SimpleNamespace as Plan
from typing import Any, Collection, Sequence

import numpy as np

from . import types as T

__all__ = ["Plan", "kind", "dtype_of", "binary", "require", "const_int", "literal_value"]


def kind(x: Any) -> str:
    """``literal``, ``value``, ``pointer``, ``buffer``, ``region`` or ``python``."""
    t = type(x)
    if t is int or t is float or t is bool:
        return "literal"
    k = getattr(x, "dsl_kind", None)
    if k is not None:
        return k
    if isinstance(x, (bool, np.bool_, numbers.Integral, numbers.Real)) and not isinstance(x, complex):
        return "literal"
    return "python"


def literal_value(x: Any) -> bool | int | float:
    """A literal as a Python bool/int/float."""
    t = type(x)
    if t is int or t is float or t is bool:
        return x
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, numbers.Integral):
        return int(x)
    return float(x)


def dtype_of(x: Any) -> str | None:
    return x.dtype if kind(x) == "value" else None


def describe(x: Any) -> str:
    k = kind(x)
    if k == "value":
        return x.dtype
    if k == "literal":
        return f"the literal {literal_value(x)!r}"
    if k in ("pointer", "buffer", "region"):
        return f"a {k} to {x.elem}"
    return f"a Python {type(x).__name__}"


def require(cond: Any, message: str, exc: type[Exception] = TypeError) -> None:
    if not cond:
        raise exc(message)


def check_literal(op: str, value: bool | int | float, elem: str) -> bool | int | float:
    """Checks that literal ``value`` can stand next to ``elem`` values; returns it."""
    value = literal_value(value)
    if elem == "bool":
        require(isinstance(value, bool) or value in (0, 1),
                f"{op}: the literal {value!r} is not a bool")
        return bool(value)
    if T.is_float(elem):
        return float(value) if not isinstance(value, bool) else float(int(value))
    require(not isinstance(value, float),
            f"{op}: the float literal {value!r} cannot stand next to an {elem} value (use S.cast)")
    value = int(value)
    lo, hi = T.int_range(elem)
    require(lo <= value <= hi, f"{op}: the literal {value} does not fit {elem} ({lo} .. {hi})", ValueError)
    return value


def const_int(op: str, name: str, x: Any, lo: int | None = None, hi: int | None = None) -> int:
    """A compile-time integer argument (a literal), checked against [lo, hi]."""
    if type(x) is int and lo is None and hi is None:
        return x
    if kind(x) != "literal" or isinstance(literal_value(x), float):
        raise TypeError(f"{op}: `{name}` must be a compile-time integer, got {describe(x)}")
    v = int(literal_value(x))
    if lo is not None and v < lo or hi is not None and v > hi:
        raise ValueError(f"{op}: `{name}` = {v} is out of range [{lo}, {hi}]")
    return v


def value_dtype(op: str, name: str, x: Any, allowed: Collection[str] | None = None, vector: bool | None = None) -> str:
    """The dtype of kernel value ``x`` (checked); literals are not accepted here."""
    if kind(x) != "value":
        raise TypeError(f"{op}: `{name}` must be a kernel value, got {describe(x)}")
    elem, lanes = T.split(x.dtype)
    if vector is True:
        require(lanes > 1, f"{op}: `{name}` must be a vector, got {x.dtype}")
    if vector is False:
        require(lanes == 1, f"{op}: `{name}` must be a scalar, got {x.dtype}")
    if allowed is not None:
        require(elem in allowed, f"{op}: `{name}` has dtype {x.dtype}; accepted element dtypes: "
                                 f"{' '.join(allowed)}")
    return x.dtype


# Operator and vector-op families: which element dtypes they accept.
NUMERIC = T.NUMERIC_DTYPES
INTEGER = T.INT_DTYPES
ANY = T.NUMERIC_DTYPES + ("bool",)


def binary(op: str, a: Any, b: Any, allowed: Collection[str] = NUMERIC, result: str = "same",
           scalar_only: bool = False) -> Plan:
    """Type inference for a two-operand operation.

    Returns a plan with ``a``, ``b`` (literals converted to Python numbers checked to
    fit), ``dtype`` (the operand dtype after promotion; a scalar next to a vector is
    broadcast) and ``result`` (``dtype``, or the bool mask type for comparisons).
    """
    ka, kb = kind(a), kind(b)
    if ka not in ("value", "literal") or kb not in ("value", "literal"):
        raise TypeError(f"{op}: operands must be kernel values or numbers, got {describe(a)} and {describe(b)}")
    if ka == "literal" and kb == "literal":
        raise TypeError(f"{op}: at least one operand must be a kernel value")
    if ka == "literal":
        dtype = b.dtype
        a = check_literal(op, a, T.split(dtype)[0])
    elif kb == "literal":
        dtype = a.dtype
        b = check_literal(op, b, T.split(dtype)[0])
    else:
        (ea, la), (eb, lb) = T.split(a.dtype), T.split(b.dtype)
        if a.dtype == b.dtype:
            dtype = a.dtype
        elif ea == eb and (la == 1 or lb == 1):
            dtype = a.dtype if la > 1 else b.dtype
        else:
            hint = " (use S.cast)" if la == lb else ""
            raise TypeError(f"{op}: operand dtypes differ: {a.dtype} vs {b.dtype}{hint}")
    elem, lanes = T.split(dtype)
    if elem not in allowed:
        raise TypeError(f"{op}: does not accept {dtype} (accepted element dtypes: {' '.join(allowed)})")
    if scalar_only:
        require(lanes == 1, f"{op}: scalars only, got {dtype}{scalar_only if isinstance(scalar_only, str) else ''}")
    res = T.join("bool", lanes) if result == "bool" else dtype
    return Plan(op=op, a=a, b=b, dtype=dtype, result=res, elem=elem, lanes=lanes)


def mask_for(op: str, mask: Any, lanes: int) -> Any:
    """Checks an optional ``mask=`` argument: a bool vector of ``lanes`` lanes (or None)."""
    if mask is None:
        return None
    if kind(mask) != "value" or T.split(mask.dtype) != ("bool", lanes):
        raise TypeError(f"{op}: `mask` must be a boolx{lanes} mask, got {describe(mask)}")
    return mask


def condition(op: str, c: Any) -> Any:
    """A condition of if / while / select: a scalar bool kernel value or a literal."""
    if kind(c) == "literal":
        return bool(c)
    require(kind(c) == "value" and c.dtype == "bool",
            f"{op}: the condition must be a scalar bool (a comparison), got {describe(c)}")
    return c


def memory_operand(op: str, name: str, x: Any, kinds: Sequence[str] = ("pointer",)) -> Any:
    require(kind(x) in kinds, f"{op}: `{name}` must be a {' or '.join(kinds)}, got {describe(x)}")
    return x


def same_shape(op: str, names: Sequence[str], operands: Sequence[Any]) -> tuple[int, ...]:
    shapes = [tuple(int(s) for s in o.shape) for o in operands]
    for n, s in zip(names[1:], shapes[1:]):
        require(s == shapes[0], f"{op}: `{n}` has shape {list(s)} but `{names[0]}` has {list(shapes[0])}",
                ValueError)
    return shapes[0]
