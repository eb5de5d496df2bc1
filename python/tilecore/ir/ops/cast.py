"""tilecore/ir/ops/cast.py — dtype conversion: Cast, CastLike and BitCast.

Conversions follow ONNX: float to int truncates toward zero, ints wrap (200 int16 ->
-56 int8), anything nonzero is True; float8 targets saturate to the largest finite
value unless `saturate=0` (then out of range gives NaN, or inf for E5M2); FLOAT8E8M0
rounds the exponent by `round_mode`; strings parse "1e-5", "INF", "-inf", "NaN".
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import NARROW_FLOATS, SMALL_INTS, _ml, onnx_dtype, opset, wide
from .registry import OpError, Operand, Result, TensorInfo, register_op

_F8 = tuple(d for d in (_ml("float8_e4m3fn"), _ml("float8_e4m3fnuz"), _ml("float8_e5m2"), _ml("float8_e5m2fnuz"))
            if d is not None)
_E8M0 = _ml("float8_e8m0fnu")


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """float32 -> FLOAT8E8M0 (a biased power-of-two exponent byte)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    exp = ((bits >> 23) & 0xFF).astype(np.int32)
    special = exp == 0xFF
    frac = bits & 0x7FFFFF
    if round_mode == "up":
        up = frac > 0
    elif round_mode == "nearest":
        up = ((bits & 0x400000) > 0) & (((bits & 0x200000) > 0) | ((bits & 0x1FFFFF) > 0) | (exp > 0))
    elif round_mode == "down":
        up = np.zeros(exp.shape, bool)
    else:
        raise OpError(f"Cast: round_mode must be 'up', 'down' or 'nearest', got {round_mode!r}")
    if saturate:
        up &= exp != 0xFE
    exp = np.where(special, 0xFF, exp + up)
    return (exp & 0xFF).astype(np.uint8).view(_E8M0)


def _parse(s: str) -> float:
    t = s.strip()
    low = t.lower()
    if low in ("inf", "+inf", "infinity", "+infinity"):
        return np.inf
    if low in ("-inf", "-infinity"):
        return -np.inf
    if low in ("nan", "+nan", "-nan"):
        return np.nan
    return float(t)


def cast_array(x: np.ndarray, to: np.dtype, saturate: int = 1, round_mode: str = "up",
               where: str = "Cast") -> np.ndarray:
    """`x` converted to numpy dtype `to` with ONNX's rules (see the module docstring)."""
    x = np.asarray(x)
    to = np.dtype(to)
    if to == object:
        if x.dtype == object:
            return x.copy()
        if x.dtype in NARROW_FLOATS or x.dtype.kind == "f":
            flat = [_fmt_float(v) for v in wide(x).ravel()]
        else:
            flat = [str(v) for v in x.ravel().tolist()]
        return np.array(flat, dtype=object).reshape(x.shape)
    if x.dtype == object:
        try:
            if to.kind in "iub" or to in SMALL_INTS:
                vals = [int(s) if _is_int_text(s) else int(_parse(s)) for s in x.ravel()]
                return np.array(vals, dtype=np.int64).reshape(x.shape).astype(to)
            return cast_array(np.array([_parse(s) for s in x.ravel()], np.float64).reshape(x.shape).astype(np.float32)
                              if to != np.float64 else
                              np.array([_parse(s) for s in x.ravel()], np.float64).reshape(x.shape),
                              to, saturate, round_mode, where)
        except ValueError as exc:
            raise OpError(f"{where}: cannot convert a string to {to}: {exc}") from None
    if to == _E8M0 and _E8M0 is not None:
        return _to_e8m0(wide(x).astype(np.float32), bool(saturate), round_mode)
    if to in _F8:
        w = wide(x)
        if saturate:
            big = float(_finfo_max(to))
            w = np.clip(w, -big, big) if w.dtype.kind == "f" else np.clip(w.astype(np.float64), -big, big)
        if x.dtype.kind in "iub":
            w = w.astype(np.float64)
        return w.astype(to)
    if x.dtype in NARROW_FLOATS and (to.kind in "iub" or to in SMALL_INTS):
        x = x.astype(np.float32)
    if x.dtype.kind == "f" and (to.kind in "iu" or to in SMALL_INTS):
        with np.errstate(all="ignore"):
            t = np.trunc(x)
            if to in SMALL_INTS:  # through int64 so out-of-range values wrap like the wider ints
                return t.astype(np.int64).astype(to)
            return t.astype(to)
    with np.errstate(all="ignore"):
        return x.astype(to)


def _finfo_max(dt):
    import ml_dtypes
    return ml_dtypes.finfo(dt).max


def _is_int_text(s: str) -> bool:
    t = s.strip()
    return t.lstrip("+-").isdigit()


def _fmt_float(v: float) -> str:
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "INF" if v > 0 else "-INF"
    return str(v)  # numpy's shortest round-trip text of the value in its own dtype


def _cast_infer(attrs, inputs):
    to = onnx_dtype(attrs["to"], "Cast")
    return [TensorInfo(inputs[0].shape, to)]


@register_op("Cast", attrs={"to": ("int", None), "saturate": ("int", 1), "round_mode": ("string", "up")},
             since_version=6, infer=_cast_infer)
def cast(attrs: dict[str, Any], x: Operand) -> Result:
    """Cast(x): x converted to the ONNX element type `to`; every numeric type, bool, string,
    bfloat16, float8/float4 and 2/4-bit ints (rules in the module docstring)."""
    if attrs["to"] is None:
        raise OpError("Cast needs the attribute 'to'")
    return cast_array(x, onnx_dtype(attrs["to"], "Cast"), attrs["saturate"] if opset(attrs) >= 19 else 1,
                      attrs["round_mode"], "Cast")


@register_op("CastLike", attrs={"saturate": ("int", 1), "round_mode": ("string", "up")}, inputs=(2, 2),
             since_version=15, infer=lambda attrs, inputs: [TensorInfo(inputs[0].shape, inputs[1].dtype)])
def cast_like(attrs: dict[str, Any], x: Operand, like: Operand) -> Result:
    """CastLike(x, like): x converted to the dtype of `like` with Cast's rules."""
    return cast_array(x, np.asarray(like).dtype, attrs["saturate"], attrs["round_mode"], "CastLike")


def _bits(dt: np.dtype) -> int:
    dt = np.dtype(dt)
    if dt in SMALL_INTS:
        return 2 if "2" in dt.name else 4
    if dt.name.startswith("float4"):
        return 4
    return dt.itemsize * 8


def _bitcast_infer(attrs, inputs):
    to = onnx_dtype(attrs["to"], "BitCast")
    src = np.dtype(inputs[0].dtype)
    if src == object or to == object:
        raise OpError("BitCast: strings have no bit pattern to reinterpret")
    if _bits(src) != _bits(to):
        raise OpError(f"BitCast: {src} ({_bits(src)} bits) and {to} ({_bits(to)} bits) differ in width")
    return [TensorInfo(inputs[0].shape, to)]


@register_op("BitCast", attrs={"to": ("int", None)}, since_version=26, infer=_bitcast_infer)
def bitcast(attrs: dict[str, Any], x: Operand) -> Result:
    """BitCast(x): the bits of x read as the ONNX element type `to` of the same width; not strings."""
    x = np.asarray(x)
    to = _bitcast_infer(attrs, [TensorInfo.of(x, keep_value=False)])[0].dtype
    return np.ascontiguousarray(x).view(to).reshape(x.shape)
