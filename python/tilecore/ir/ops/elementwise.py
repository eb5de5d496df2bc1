"""tilecore/ir/ops/elementwise.py — element-wise math: unary functions, the broadcasting
arithmetic (Add Sub Mul Div Mod Pow), the variadic Max/Min/Mean/Sum and Clip.

Float math of narrow types (float16, bfloat16) runs in float32 and is rounded back
once; integer arithmetic wraps around like C (two's complement), Div of integers
truncates toward zero, Mod follows `fmod`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._numeric import check_dtype, float_compute, is_float, is_int, opset, same_dtypes, wide
from .infer import broadcast_shapes
from .registry import OpError, Operand, Result, TensorInfo, register_op


def _erf(x):
    """The error function: of a float32 array, :func:`erf_float32`; else scipy's, imported
    when first needed (importing scipy.special takes longer than most compiles' other
    imports together)."""
    if isinstance(x, np.ndarray) and x.dtype == np.float32 and x.size:
        return erf_float32("ReferenceErf", x, _erf_scipy)
    return _erf_scipy(x)


def _erf_scipy(x):
    try:
        from scipy.special import erf
    except ImportError:  # pragma: no cover
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    return erf(x)


def erf_float32(name: str, x: np.ndarray, exact: Any) -> np.ndarray:
    """``ir.<name>`` (src/ir/reference_erf.cc: ReferenceErf or ReferenceGelu) of a float32
    array: the values scipy's float32 erf gives, several times faster, without importing
    scipy. NaN arguments (it leaves them NaN and counts them) are ``exact`` of theirs, and so
    are, where long double is no wider than double, the few elements it cannot round surely."""
    from .. import _ffi_api
    from ..graph import to_ffi_array

    shape = np.shape(x)
    x = np.ascontiguousarray(x).reshape(shape)  # (a 0-d array stays 0-d)
    y = np.empty(shape, np.float32)
    if getattr(_ffi_api, name)(to_ffi_array(x), to_ffi_array(y)):
        at = np.flatnonzero(np.isnan(y))  # (and NaN arguments, whose payloads exact passes on)
        y.reshape(-1)[at] = exact(x.reshape(-1)[at])
    return y


def _is_num(dt):
    return is_float(dt) or is_int(dt)


def _unary_infer(name, allowed, what):
    def infer(attrs, inputs):
        x = inputs[0]
        check_dtype(name, x, allowed, what)
        return [TensorInfo(x.shape, x.dtype)]
    return infer


def _unary_float(name, fn, since, doc) -> None:
    def reference(attrs, x):
        return float_compute(fn, x)
    reference.__doc__ = doc
    register_op(name, since_version=since, infer=_unary_infer(name, is_float, "float types"))(reference)


for _name, _fn, _since, _what in [
    ("Acos", np.arccos, 7, "arc cosine"), ("Acosh", np.arccosh, 9, "inverse hyperbolic cosine"),
    ("Asin", np.arcsin, 7, "arc sine"), ("Asinh", np.arcsinh, 9, "inverse hyperbolic sine"),
    ("Atan", np.arctan, 7, "arc tangent"), ("Atanh", np.arctanh, 9, "inverse hyperbolic tangent"),
    ("Sin", np.sin, 7, "sine"), ("Cos", np.cos, 7, "cosine"), ("Tan", np.tan, 7, "tangent"),
    ("Sinh", np.sinh, 9, "hyperbolic sine"), ("Cosh", np.cosh, 9, "hyperbolic cosine"),
    ("Sqrt", np.sqrt, 6, "square root (NaN below 0)"), ("Exp", np.exp, 6, "e**x"),
    ("Log", np.log, 6, "natural logarithm (-inf at 0, NaN below 0)"),
    ("Ceil", np.ceil, 6, "rounded up"), ("Floor", np.floor, 6, "rounded down"),
    ("Round", np.round, 11, "rounded half to even"), ("Erf", lambda x: _erf(x).astype(x.dtype), 9, "error function"),
    ("Reciprocal", lambda x: np.asarray(1, x.dtype) / x, 6, "1/x"),
]:
    _unary_float(_name, _fn, _since, f"{_name}(x): {_what}, element-wise; float16/bfloat16/float/double.")


def _unary_num(name, fn, since, doc) -> None:
    def reference(attrs, x):
        x = np.asarray(x)
        return float_compute(fn, x) if is_float(x.dtype) else np.asarray(fn(x)).astype(x.dtype, copy=False)
    reference.__doc__ = doc
    register_op(name, since_version=since, infer=_unary_infer(name, _is_num, "numeric types"))(reference)


_unary_num("Abs", np.abs, 6, "Abs(x): |x| element-wise; numeric types (ints wrap: Abs(-128 int8) = -128).")
_unary_num("Neg", np.negative, 6, "Neg(x): -x element-wise; signed ints (wrapping) and floats.")
_unary_num("Sign", np.sign, 9, "Sign(x): -1, 0 or 1 (NaN stays NaN), element-wise; numeric types.")


# ---- broadcasting binary arithmetic -------------------------------------------------------------

def _binary_infer(name, allowed=_is_num, what="numeric types", same: bool = True):
    def infer(attrs, inputs):
        a, b = inputs
        if same:
            same_dtypes(name, a, b)
        check_dtype(name, a, allowed, what)
        return [TensorInfo(broadcast_shapes(a.shape, b.shape, where=name), a.dtype)]
    return infer


def _int_div(a, b):
    """C integer division (truncation toward zero); 0 where b is 0."""
    dtype = np.result_type(a, b)
    with np.errstate(all="ignore"):
        safe = np.where(b == 0, np.ones_like(b), b)
        q = np.floor_divide(a, safe)
        if dtype.kind == "i":
            r = np.mod(a, safe)
            q = np.where((r != 0) & ((a < 0) != (safe < 0)), q + 1, q)
        return np.where(b == 0, np.zeros_like(q), q).astype(dtype, copy=False)


def _arith(name, fn, doc) -> None:
    def reference(attrs, a, b):
        a, b = np.asarray(a), np.asarray(b)
        if is_float(a.dtype):
            return float_compute(fn, a, b)
        with np.errstate(all="ignore"):
            if name == "Div":
                return _int_div(a, b)
            return np.asarray(fn(a, b)).astype(a.dtype, copy=False)
    reference.__doc__ = doc
    register_op(name, since_version=7, inputs=(2, 2), infer=_binary_infer(name))(reference)


_arith("Add", np.add, "Add(a, b): a + b with numpy broadcasting; numeric types, ints wrap around.")
_arith("Sub", np.subtract, "Sub(a, b): a - b with numpy broadcasting; numeric types, ints wrap around.")
_arith("Mul", np.multiply, "Mul(a, b): a * b with numpy broadcasting; numeric types, ints wrap around.")
_arith("Div", np.divide, "Div(a, b): a / b with numpy broadcasting; ints truncate toward zero (x/0 gives 0).")


@register_op("Mod", attrs={"fmod": ("int", 0)}, inputs=(2, 2), since_version=10, infer=_binary_infer("Mod"))
def mod(attrs: dict[str, Any], a: Operand, b: Operand) -> Result:
    """Mod(a, b): remainder with broadcasting; fmod=0 (ints only) takes the divisor's sign,
    fmod=1 the dividend's (C fmod). x mod 0 is 0 for ints, NaN for floats."""
    a, b = np.asarray(a), np.asarray(b)
    if is_float(a.dtype):  # fmod=0 on floats (opset 28): Python's %, the divisor's sign
        return float_compute(np.fmod if attrs["fmod"] else np.mod, a, b)
    with np.errstate(all="ignore"):
        safe = np.where(b == 0, np.ones_like(b), b)
        r = np.fmod(a, safe) if attrs["fmod"] else np.mod(a, safe)
        return np.where(b == 0, np.zeros_like(r), r).astype(a.dtype, copy=False)


def _pow_infer(attrs, inputs):
    x, y = inputs
    check_dtype("Pow", x, _is_num, "numeric base")
    check_dtype("Pow", y, _is_num, "numeric exponent")
    if opset(attrs) < 12:
        same_dtypes("Pow", x, y)
    return [TensorInfo(broadcast_shapes(x.shape, y.shape, where="Pow"), x.dtype)]


@register_op("Pow", inputs=(2, 2), since_version=7, infer=_pow_infer)
def pow_(attrs: dict[str, Any], x: Operand, y: Operand) -> Result:
    """Pow(x, y): x ** y with broadcasting; the result has x's dtype (from opset 12 y may
    have another numeric dtype); integer bases are computed in float64 and truncated."""
    x, y = np.asarray(x), np.asarray(y)
    if is_float(x.dtype):
        w = wide(x)
        return np.power(w, wide(y).astype(w.dtype)).astype(x.dtype, copy=False)
    if is_int(y.dtype):
        with np.errstate(all="ignore"):
            yy = y.astype(np.int64)
            if (yy >= 0).all():
                return np.power(x.astype(np.int64), yy).astype(x.dtype)
    with np.errstate(all="ignore"):
        return np.power(x.astype(np.float64), wide(y).astype(np.float64)).astype(x.dtype)


# ---- variadic ---------------------------------------------------------------------------------

def _variadic_infer(name, allowed=_is_num, what="numeric types"):
    def infer(attrs, inputs):
        given = [x for x in inputs if x is not None]
        if not given:
            raise OpError(f"{name}: needs at least one input")
        same_dtypes(name, *given)
        check_dtype(name, given[0], allowed, what)
        return [TensorInfo(broadcast_shapes(*(x.shape for x in given), where=name), given[0].dtype)]
    return infer


def _variadic(name, fn, doc, final=None, allowed=_is_num) -> None:
    def reference(attrs, *xs):
        xs = [np.asarray(x) for x in xs if x is not None]
        dtype = xs[0].dtype
        acc = wide(xs[0])
        with np.errstate(all="ignore"):
            for x in xs[1:]:
                acc = fn(acc, wide(x))
            if final is not None:
                acc = final(acc, len(xs))
            return np.broadcast_to(acc, np.broadcast_shapes(*(x.shape for x in xs))).astype(dtype)
    reference.__doc__ = doc
    register_op(name, since_version=6, inputs=(1, -1), infer=_variadic_infer(name, allowed))(reference)


_variadic("Max", np.maximum, "Max(x0, x1, ...): element-wise maximum with broadcasting; NaN propagates.")
_variadic("Min", np.minimum, "Min(x0, x1, ...): element-wise minimum with broadcasting; NaN propagates.")
_variadic("Sum", np.add, "Sum(x0, x1, ...): element-wise sum with broadcasting; float types.",
          allowed=is_float)
_variadic("Mean", np.add, "Mean(x0, x1, ...): element-wise mean with broadcasting; float types.",
          final=lambda acc, n: acc / np.asarray(n, acc.dtype), allowed=is_float)


# ---- Clip -------------------------------------------------------------------------------------

def _clip_infer(attrs, inputs):
    x = inputs[0]
    check_dtype("Clip", x, _is_num, "numeric types")
    for i, bound in enumerate(inputs[1:3], 1):
        if bound is not None:
            same_dtypes("Clip", x, bound)
            if bound.shape is not None and len(bound.shape) > 0 and bound.shape not in ((1,),):
                raise OpError(f"Clip: input {i} ({'min' if i == 1 else 'max'}) must be a scalar, "
                              f"got shape {bound.shape}")
    return [TensorInfo(x.shape, x.dtype)]


@register_op("Clip", attrs={"min": ("float", None), "max": ("float", None)}, inputs=(1, 3), since_version=6,
             infer=_clip_infer)
def clip(attrs: dict[str, Any], x: Operand, lo: Operand = None, hi: Operand = None) -> Result:
    """Clip(x, min, max): min(max(x, min), max) element-wise, so every value becomes max
    when min > max; NaN stays NaN. min/max are attributes before opset 11, scalar inputs after."""
    x = np.asarray(x)
    if opset(attrs) < 11:
        lo = attrs["min"] if attrs["min"] is not None else -np.inf
        hi = attrs["max"] if attrs["max"] is not None else np.inf
    w = wide(x)
    if lo is not None:
        lo = wide(np.asarray(lo)).reshape(())
        w = np.where(w < lo, lo, w)
    if hi is not None:
        hi = wide(np.asarray(hi)).reshape(())
        w = np.where(w > hi, hi, w)
    return np.asarray(w).astype(x.dtype, copy=False)
