"""tilecore/ir/ops/logical.py — comparisons, boolean logic, Where, IsInf/IsNaN and the
bitwise ops (BitShift, BitwiseAnd/Or/Xor/Not).

Comparisons broadcast like numpy and give bool; NaN compares unequal to everything.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import check_dtype, is_float, is_int, same_dtypes, wide
from .infer import broadcast_shapes
from .registry import OpError, Operand, Result, TensorInfo, register_op


def _any(dt) -> bool:
    return True


def _is_bool(dt):
    return np.dtype(dt) == np.bool_


def _binary(name, fn, since, doc, allowed, what, out_bool) -> None:
    def infer(attrs, inputs):
        a, b = inputs
        same_dtypes(name, a, b)
        check_dtype(name, a, allowed, what)
        return [TensorInfo(broadcast_shapes(a.shape, b.shape, where=name),
                           np.dtype(np.bool_) if out_bool else a.dtype)]

    def reference(attrs, a, b):
        a, b = np.asarray(a), np.asarray(b)
        out = np.asarray(fn(wide(a), wide(b)))
        return out if out_bool else out.astype(a.dtype, copy=False)
    reference.__doc__ = doc
    register_op(name, since_version=since, inputs=(2, 2), infer=infer)(reference)


def _num_or_bool(dt):
    return is_float(dt) or is_int(dt) or _is_bool(dt)


for _name, _fn, _since, _sym in [("Equal", np.equal, 7, "=="), ("Greater", np.greater, 7, ">"),
                                  ("Less", np.less, 7, "<"), ("GreaterOrEqual", np.greater_equal, 12, ">="),
                                  ("LessOrEqual", np.less_equal, 12, "<=")]:
    _allowed = (lambda dt: _num_or_bool(dt) or np.dtype(dt) == object) if _name == "Equal" else _num_or_bool
    _binary(_name, _fn, _since, f"{_name}(a, b): a {_sym} b with broadcasting, as bool; numeric, bool"
            f"{' and string' if _name == 'Equal' else ''} inputs of one dtype.", _allowed, "numeric or bool", True)

for _name, _fn in [("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)]:
    _binary(_name, _fn, 7, f"{_name}(a, b): logical {_name.lower()} of two bool tensors with broadcasting.",
            _is_bool, "bool", True)

for _name, _fn in [("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or), ("BitwiseXor", np.bitwise_xor)]:
    _binary(_name, _fn, 18, f"{_name}(a, b): bitwise {_name[7:].lower()} with broadcasting; integer types.",
            lambda dt: np.dtype(dt).kind in "iu", "integer types", False)


@register_op("Not", infer=lambda attrs, inputs: [TensorInfo(inputs[0].shape, np.dtype(np.bool_))])
def not_(attrs: dict[str, Any], x: Operand) -> Result:
    """Not(x): logical negation of a bool tensor."""
    return np.logical_not(x)


def _bitwise_not_infer(attrs, inputs):
    check_dtype("BitwiseNot", inputs[0], lambda dt: np.dtype(dt).kind in "iu", "integer types")
    return [TensorInfo(inputs[0].shape, inputs[0].dtype)]


@register_op("BitwiseNot", since_version=18, infer=_bitwise_not_infer)
def bitwise_not(attrs: dict[str, Any], x: Operand) -> Result:
    """BitwiseNot(x): ~x element-wise; integer types."""
    return np.invert(x)


def _bitshift_infer(attrs, inputs):
    if attrs["direction"] not in ("LEFT", "RIGHT"):
        raise OpError(f"BitShift: direction must be LEFT or RIGHT, got {attrs['direction']!r}")
    a, b = inputs
    same_dtypes("BitShift", a, b)
    check_dtype("BitShift", a, lambda dt: np.dtype(dt).kind in "iu", "integer types")
    return [TensorInfo(broadcast_shapes(a.shape, b.shape, where="BitShift"), a.dtype)]


@register_op("BitShift", attrs={"direction": ("string", None)}, inputs=(2, 2), since_version=11,
             infer=_bitshift_infer)
def bitshift(attrs: dict[str, Any], x: Operand, y: Operand) -> Result:
    """BitShift(x, y): x << y (direction LEFT) or x >> y (RIGHT), with broadcasting; integer types
    (signed from opset 28: right shifts are arithmetic). A shift below 0 or by at least the width
    leaves only the sign fill: -1 for a right shift of a negative x, else 0."""
    x, y = np.asarray(x), np.asarray(y)
    bits = x.dtype.itemsize * 8
    if attrs["direction"] not in ("LEFT", "RIGHT"):
        raise OpError(f"BitShift: direction must be LEFT or RIGHT, got {attrs['direction']!r}")
    over = (y < 0) | (y >= bits) if y.dtype.kind == "i" else (y >= bits)
    ys = np.where(over, 0, y).astype(x.dtype)
    with np.errstate(all="ignore"):
        out = np.left_shift(x, ys) if attrs["direction"] == "LEFT" else np.right_shift(x, ys)
    fill = np.zeros((), x.dtype)
    if attrs["direction"] == "RIGHT" and x.dtype.kind == "i":
        fill = np.where(x < 0, np.asarray(-1, x.dtype), fill)
    return np.where(over, fill, out).astype(x.dtype)


def _isx_infer(name):
    def infer(attrs, inputs):
        check_dtype(name, inputs[0], is_float, "float types")
        return [TensorInfo(inputs[0].shape, np.dtype(np.bool_))]
    return infer


@register_op("IsNaN", since_version=9, infer=_isx_infer("IsNaN"))
def isnan(attrs: dict[str, Any], x: Operand) -> Result:
    """IsNaN(x): bool, true where x is NaN; float types (float8 included)."""
    return np.isnan(wide(x))


@register_op("IsInf", attrs={"detect_negative": ("int", 1), "detect_positive": ("int", 1)}, since_version=10,
             infer=_isx_infer("IsInf"))
def isinf(attrs: dict[str, Any], x: Operand) -> Result:
    """IsInf(x): bool, true at +inf (if detect_positive) and -inf (if detect_negative); float types."""
    x = wide(x)
    out = np.zeros(x.shape, np.bool_)
    if attrs["detect_positive"]:
        out |= np.isposinf(x)
    if attrs["detect_negative"]:
        out |= np.isneginf(x)
    return out


def _where_infer(attrs, inputs):
    c, x, y = inputs
    if np.dtype(c.dtype) != np.bool_:
        raise OpError(f"Where: condition must be bool, got {np.dtype(c.dtype)}")
    same_dtypes("Where", x, y)
    return [TensorInfo(broadcast_shapes(c.shape, x.shape, y.shape, where="Where"), x.dtype)]


@register_op("Where", inputs=(3, 3), since_version=9, infer=_where_infer)
def where(attrs: dict[str, Any], c: Operand, x: Operand, y: Operand) -> Result:
    """Where(cond, x, y): x where cond else y, the three broadcast together; any dtype."""
    x = np.asarray(x)
    return np.where(c, x, y).astype(x.dtype, copy=False)
