"""tilecore/ir/ops/precision_form.py — Conv, MatMul and Gemm in a precision's form
(docs/precision.md): the attributes ``tc_precision``, ``tc_x_scale``,
``tc_x_zero_point`` and ``tc_b_scale`` and, in int8, inputs (X, W int8, bias int32 or
omitted, w_scale f32). The reference computes what the npu strategies compute: f16/bf16
round the operands (nearest even) and accumulate in float64 (the products are exact in
f32); int8 quantises X on load (an int8 X is taken as it is: quantised by its producer),
accumulates exactly and dequantises per channel. An int8 output (``tc_y_scale``) is a form
of the compiler's own nodes (docs/precision.md, "int8 between ops"), not a Graph IR
attribute.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from ._util import fail

if TYPE_CHECKING:
    import numpy.typing as npt

PRECISION_ATTRS = {
    "tc_precision": ("string", "f32"),
    "tc_x_scale": ("float", 0.0),
    "tc_x_zero_point": ("int", 0),
    "tc_b_scale": ("float", 0.0),
}


def in_precision_form(attrs: Mapping[str, Any]) -> bool:
    return attrs.get("tc_precision", "f32") not in ("f32", "", None)


def _rounded(a, precision):
    if precision == "bf16":
        import ml_dtypes

        return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float64)


def quantise_on_load(x: npt.ArrayLike, scale: float, zero_point: int = 0) -> np.ndarray:
    """sat_i8(round_half_even(f32(x) * f32(1 / scale)) + zero_point) as float64."""
    inv = np.float32(1.0 / np.float64(np.float32(scale)))
    return np.clip(np.rint(np.asarray(x, np.float32) * inv) + zero_point, -128, 127).astype(np.float64)


def reference(op: str, attrs: Mapping[str, Any], compute: Callable[..., np.ndarray], channel_axis: int,
              weight_sums: Callable[[np.ndarray], np.ndarray], x: np.ndarray, w: np.ndarray,
              b: np.ndarray | None = None, w_scale: np.ndarray | None = None) -> np.ndarray:
    """Y of a node in the precision form. ``compute(x, w, b)`` is the float64 op (b may be
    None); ``channel_axis`` the output's channel axis; ``weight_sums(w)`` the per-channel
    sum of W (for a zero point)."""
    p = attrs["tc_precision"]
    if p in ("f16", "bf16"):
        bb = None if b is None else np.asarray(b, np.float64)
        return compute(_rounded(x, p), _rounded(w, p), bb).astype(np.float32)
    if p != "int8":
        raise fail(op, f"tc_precision `{p}` (expected f32, f16, bf16 or int8)")
    sx = np.float32(attrs["tc_x_scale"])
    zp = int(attrs["tc_x_zero_point"])
    if not sx > 0:
        raise fail(op, "int8 needs a positive tc_x_scale")
    x_int = np.asarray(x, np.float64) if np.asarray(x).dtype == np.int8 else quantise_on_load(x, sx, zp)
    xq = x_int - zp  # the kernel pads with zp: (zp - zp) contributes nothing
    if attrs["tc_b_scale"] > 0:  # two activations
        sb = np.float32(attrs["tc_b_scale"])
        bq = np.asarray(w, np.float64) if np.asarray(w).dtype == np.int8 else quantise_on_load(w, sb)
        acc = compute(xq, bq, None)
        return acc.astype(np.float32) * np.float32(sx * sb)
    if w_scale is None or np.asarray(w).dtype != np.int8:
        raise fail(op, "int8 takes W in int8 and w_scale as input 3")
    w64 = np.asarray(w, np.float64)
    acc = compute(xq, w64, None)
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    corr = np.zeros(np.shape(w_scale), np.float64) if b is None else np.asarray(b, np.float64)
    corr = corr + zp * weight_sums(w64)  # the bias holds -zp * sum W: undo it on the zp-free sum
    acc = acc + corr.reshape(shape)
    s = (np.asarray(w_scale, np.float32) * sx).astype(np.float32)
    return acc.astype(np.float32) * s.reshape(shape)
