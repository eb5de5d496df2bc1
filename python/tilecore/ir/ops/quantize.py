"""tilecore/ir/ops/quantize.py — linear quantisation: QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear and the integer kernels MatMulInteger, ConvInteger, QLinearMatMul,
QLinearConv.

Scales and zero points are per tensor (scalar), per axis (1-D along `axis`) or, from
opset 21, per block (`block_size` along `axis`). Quantisation rounds half to even and
saturates to the output type (int2/4/8/16/32, uint likewise, float8 per `saturate`).
Integer kernels accumulate in int32 (wrapping like the hardware); the QLinear ones
requantise the accumulator with a float32 multiplier a_scale * b_scale / y_scale.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._conv_int import conv_nd, conv_output_shape
from ._numeric import SMALL_INTS, check_dtype, is_float, onnx_dtype, opset, wide
from .cast import cast_array
from .infer import broadcast_shapes, normalize_axis
from .registry import OpError, Operand, Result, TensorInfo, register_op

if TYPE_CHECKING:
    import numpy.typing as npt


def _int_range(dt):
    dt = np.dtype(dt)
    if dt in SMALL_INTS:
        import ml_dtypes
        info = ml_dtypes.iinfo(dt)
    else:
        info = np.iinfo(dt)
    return int(info.min), int(info.max)


def _param(p, x, axis, block, name, what):
    """Scale or zero point `p` shaped to broadcast against x."""
    p = np.asarray(p)
    if p.size == 1 and block <= 0:
        return p.reshape(())
    ax = normalize_axis(axis, max(x.ndim, 1), where=name)
    if block > 0:
        if p.ndim != x.ndim:
            raise OpError(f"{name}: blocked {what} needs rank {x.ndim}, got shape {p.shape}")
        p = np.repeat(p, block, axis=ax)
        if p.shape[ax] < x.shape[ax]:
            raise OpError(f"{name}: {what} of shape {p.shape} with block_size {block} does not cover {x.shape}")
        return np.take(p, np.arange(x.shape[ax]), axis=ax)
    if p.ndim != 1 or p.shape[0] != x.shape[ax]:
        raise OpError(f"{name}: per-axis {what} needs shape ({x.shape[ax]},) along axis {ax}, got {p.shape}")
    return p.reshape([-1 if i == ax else 1 for i in range(x.ndim)])


def _out_type(attrs, zp, name):
    if zp is not None:
        return np.dtype(zp.dtype)
    if opset(attrs) >= 21 and attrs.get("output_dtype"):
        return onnx_dtype(attrs["output_dtype"], name)
    return np.dtype(np.uint8)


def _q_infer(attrs, inputs):
    x = inputs[0]
    zp = inputs[2] if len(inputs) > 2 else None
    check_dtype("QuantizeLinear", x, lambda dt: is_float(dt) or np.dtype(dt) == np.int32, "float or int32 input")
    out = _out_type(attrs, zp, "QuantizeLinear")
    if zp is not None and attrs.get("output_dtype") and onnx_dtype(attrs["output_dtype"], "QuantizeLinear") != out:
        raise OpError(f"QuantizeLinear: output_dtype disagrees with the zero point's dtype {out}")
    return [TensorInfo(x.shape, out)]


def quantize(x: npt.ArrayLike, scale: npt.ArrayLike, zp: npt.ArrayLike | None, out: npt.DTypeLike, axis: int = 1,
             block: int = 0, saturate: int = 1, name: str = "QuantizeLinear") -> np.ndarray:
    """round(x / scale) + zp, saturated to `out`."""
    x = np.asarray(x)
    s = wide(_param(scale, x, axis, block, name, "scale"))
    w = wide(x) if is_float(x.dtype) else x.astype(np.float32)
    cdt = np.float32 if s.dtype != np.float64 and w.dtype != np.float64 else np.float64
    q = w.astype(cdt) / s.astype(cdt)
    if is_float(out):
        if zp is not None:
            q = q + wide(_param(zp, x, axis, block, name, "zero point")).astype(cdt)
        return cast_array(q, out, saturate, "up", name)
    q = np.rint(q)
    if zp is not None:
        q = q + _param(zp, x, axis, block, name, "zero point").astype(np.float64)
    lo, hi = _int_range(out)
    return np.clip(q, lo, hi).astype(np.int64).astype(out)


@register_op("QuantizeLinear", attrs={"axis": ("int", 1), "saturate": ("int", 1), "block_size": ("int", 0),
                                      "output_dtype": ("int", 0), "precision": ("int", 0)},
             inputs=(2, 3), since_version=10, infer=_q_infer)
def quantize_linear(attrs: dict[str, Any], x: Operand, scale: Operand, zp: Operand = None) -> Result:
    """QuantizeLinear(x, y_scale, y_zero_point): saturate(round(x / scale) + zero_point) in the zero
    point's type (else output_dtype, else uint8); float or int32 x."""
    out = _out_type(attrs, None if zp is None else np.asarray(zp), "QuantizeLinear")
    return quantize(x, scale, zp, out, attrs["axis"] if opset(attrs) >= 13 else 1,
                    attrs["block_size"] if opset(attrs) >= 21 else 0, attrs["saturate"])


def _dq_infer(attrs, inputs):
    x, scale = inputs[0], inputs[1]
    out = np.dtype(scale.dtype)
    if opset(attrs) >= 23 and attrs.get("output_dtype"):
        out = onnx_dtype(attrs["output_dtype"], "DequantizeLinear")
    if np.dtype(x.dtype) == np.int32 and inputs[2:] and inputs[2] is not None:
        pass
    return [TensorInfo(x.shape, out)]


@register_op("DequantizeLinear", attrs={"axis": ("int", 1), "block_size": ("int", 0), "output_dtype": ("int", 0)},
             inputs=(2, 3), since_version=10, infer=_dq_infer)
def dequantize_linear(attrs: dict[str, Any], x: Operand, scale: Operand, zp: Operand = None) -> Result:
    """DequantizeLinear(x, x_scale, x_zero_point): (x - zero_point) * scale in the scale's dtype
    (or output_dtype, opset 23); int2/4/8/16/32, uint likewise and float8 x."""
    x = np.asarray(x)
    scale = np.asarray(scale)
    axis = attrs["axis"] if opset(attrs) >= 13 else 1
    block = attrs["block_size"] if opset(attrs) >= 21 else 0
    out = _dq_infer(attrs, [TensorInfo.of(x, False), TensorInfo.of(scale, False)])[0].dtype
    s = wide(_param(scale, x, axis, block, "DequantizeLinear", "scale"))
    cdt = np.float64 if s.dtype == np.float64 else np.float32
    v = wide(x).astype(cdt) if is_float(x.dtype) else x.astype(np.float64)
    if zp is not None:
        z = _param(zp, x, axis, block, "DequantizeLinear", "zero point")
        v = v - (wide(z).astype(v.dtype) if is_float(np.asarray(zp).dtype) else z.astype(np.float64))
    return (v.astype(cdt) * s.astype(cdt)).astype(out)


@register_op("DynamicQuantizeLinear", outputs=(3, 3), since_version=11,
             infer=lambda attrs, inputs: [TensorInfo(inputs[0].shape, np.dtype(np.uint8)),
                                          TensorInfo((), np.dtype(np.float32)), TensorInfo((), np.dtype(np.uint8))])
def dynamic_quantize_linear(attrs: dict[str, Any], x: Operand) -> Result:
    """DynamicQuantizeLinear(x): uint8 quantisation with scale (max(0, max x) - min(0, min x)) / 255 and
    zero point round(-min / scale); returns (y, scale, zero point); float32 x."""
    x = np.asarray(x, np.float32)
    lo = min(0.0, float(x.min())) if x.size else 0.0
    hi = max(0.0, float(x.max())) if x.size else 0.0
    scale = np.float32((hi - lo) / 255.0)
    if scale == 0:
        scale = np.float32(1.0)
    zp = np.uint8(np.clip(np.rint(np.float32(0 - lo) / scale), 0, 255))
    y = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.uint8)
    return y, np.asarray(scale, np.float32), np.asarray(zp, np.uint8)


# ---- integer kernels ----------------------------------------------------------------------------

def _matmul_shape(a, b, name):
    if a.shape is None or b.shape is None:
        return None
    sa, sb = list(a.shape), list(b.shape)
    if len(sa) == 0 or len(sb) == 0:
        raise OpError(f"{name}: operands must have rank >= 1, got {a.shape} and {b.shape}")
    va, vb = len(sa) == 1, len(sb) == 1
    if va:
        sa = [1] + sa
    if vb:
        sb = sb + [1]
    k1, k2 = sa[-1], sb[-2]
    if isinstance(k1, int) and isinstance(k2, int) and k1 != k2:
        raise OpError(f"{name}: inner dimensions differ: {a.shape} @ {b.shape}")
    batch = broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2]), where=name)
    out = list(batch) + ([] if va else [sa[-2]]) + ([] if vb else [sb[-1]])
    return tuple(out)


def _zp_rows(zp, a):
    """A zero point of A: scalar, or one per row (M) of A."""
    z = np.asarray(zp).astype(np.int64)
    return z.reshape(()) if z.size == 1 else z.reshape(-1, 1)


def _mmi_infer(attrs, inputs):
    a, b = inputs[0], inputs[1]
    for t in (a, b):
        check_dtype("MatMulInteger", t, lambda dt: np.dtype(dt) in (np.int8, np.uint8), "int8 or uint8")
    return [TensorInfo(_matmul_shape(a, b, "MatMulInteger"), np.dtype(np.int32))]


@register_op("MatMulInteger", inputs=(2, 4), since_version=10, infer=_mmi_infer)
def matmul_integer(attrs: dict[str, Any], a: Operand, b: Operand, a_zp: Operand = None, b_zp: Operand = None) -> Result:
    """MatMulInteger(A, B, a_zero_point, b_zero_point): (A - a_zp) @ (B - b_zp) in int32; int8/uint8
    operands, a_zp per tensor or per row of A, b_zp per tensor or per column of B."""
    a64 = np.asarray(a).astype(np.int64)
    b64 = np.asarray(b).astype(np.int64)
    if a_zp is not None:
        a64 = a64 - _zp_rows(a_zp, a64)
    if b_zp is not None:
        b64 = b64 - np.asarray(b_zp).astype(np.int64).reshape(-1 if np.size(b_zp) > 1 else ())
    return np.matmul(a64, b64).astype(np.int32)


def _requant(acc, multiplier, y_zp, out):
    lo, hi = _int_range(out)
    y = np.rint(acc.astype(np.float32) * multiplier.astype(np.float32)).astype(np.float64)
    y = y + np.asarray(y_zp).astype(np.float64)
    return np.clip(y, lo, hi).astype(out)


def _qlmm_infer(attrs, inputs):
    a, b, y_zp = inputs[0], inputs[3], inputs[7]
    return [TensorInfo(_matmul_shape(a, b, "QLinearMatMul"), np.dtype(y_zp.dtype))]


@register_op("QLinearMatMul", inputs=(8, 8), since_version=10, infer=_qlmm_infer)
def qlinear_matmul(attrs: dict[str, Any], a: Operand, a_scale: Operand, a_zp: Operand, b: Operand, b_scale: Operand,
                   b_zp: Operand, y_scale: Operand, y_zp: Operand) -> Result:
    """QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): the quantised product
    requantised to y's scale and zero point; int8/uint8, scales per tensor (b: or per column)."""
    a64 = np.asarray(a).astype(np.int64) - _zp_rows(a_zp, np.asarray(a))
    bz = np.asarray(b_zp).astype(np.int64)
    b64 = np.asarray(b).astype(np.int64) - (bz.reshape(()) if bz.size == 1 else bz.reshape(-1))
    acc = np.matmul(a64, b64)
    a_s = wide(np.asarray(a_scale)).astype(np.float32)
    a_s = a_s.reshape(()) if a_s.size == 1 else a_s.reshape(-1, 1)
    b_s = wide(np.asarray(b_scale)).astype(np.float32)
    b_s = b_s.reshape(()) if b_s.size == 1 else b_s.reshape(-1)
    mult = a_s * b_s / wide(np.asarray(y_scale)).astype(np.float32).reshape(())
    y_zp = np.asarray(y_zp)
    return _requant(acc, np.asarray(mult), y_zp.reshape(()), y_zp.dtype)


_CONV_ATTRS = {"auto_pad": ("string", "NOTSET"), "dilations": ("ints", None), "group": ("int", 1),
               "kernel_shape": ("ints", None), "pads": ("ints", None), "strides": ("ints", None)}


def _conv_infer(name, x_i, w_i, dtype_of):
    def infer(attrs, inputs):
        x, w = inputs[x_i], inputs[w_i]
        out = dtype_of(inputs)
        if x.shape is None or w.shape is None:
            return [TensorInfo(None, out)]
        if len(x.shape) != len(w.shape) or len(x.shape) < 3:
            raise OpError(f"{name}: x {x.shape} and w {w.shape} need one rank >= 3")
        return [TensorInfo(conv_output_shape(attrs, x.shape, w.shape, name), out)]
    return infer


def _w_zp(w_zp, m, rank):
    z = np.asarray(w_zp).astype(np.int64)
    return z.reshape(()) if z.size == 1 else z.reshape((m,) + (1,) * (rank - 1))


@register_op("ConvInteger", attrs=dict(_CONV_ATTRS), inputs=(2, 4), since_version=10,
             infer=_conv_infer("ConvInteger", 0, 1, lambda inputs: np.dtype(np.int32)))
def conv_integer(attrs: dict[str, Any], x: Operand, w: Operand, x_zp: Operand = None, w_zp: Operand = None) -> Result:
    """ConvInteger(x, w, x_zero_point, w_zero_point): convolution of the zero-point-shifted int8/uint8
    operands in int32 (w_zp per tensor or per output channel)."""
    x64 = np.asarray(x).astype(np.int64)
    w64 = np.asarray(w).astype(np.int64)
    if x_zp is not None:
        x64 = x64 - np.asarray(x_zp).astype(np.int64).reshape(())
    if w_zp is not None:
        w64 = w64 - _w_zp(w_zp, w64.shape[0], w64.ndim)
    return conv_nd(attrs, x64, w64, "ConvInteger").astype(np.int32)


@register_op("QLinearConv", attrs=dict(_CONV_ATTRS), inputs=(8, 9), since_version=10,
             infer=_conv_infer("QLinearConv", 0, 3, lambda inputs: np.dtype(inputs[7].dtype)))
def qlinear_conv(attrs: dict[str, Any], x: Operand, x_scale: Operand, x_zp: Operand, w: Operand, w_scale: Operand,
                 w_zp: Operand, y_scale: Operand, y_zp: Operand, bias: Operand = None) -> Result:
    """QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): quantised convolution plus the
    int32 bias, requantised to y's scale and zero point; w_scale/w_zp per tensor or per output channel."""
    x64 = np.asarray(x).astype(np.int64) - np.asarray(x_zp).astype(np.int64).reshape(())
    w64 = np.asarray(w).astype(np.int64)
    w64 = w64 - _w_zp(w_zp, w64.shape[0], w64.ndim)
    acc = conv_nd(attrs, x64, w64, "QLinearConv")
    if bias is not None:
        acc = acc + np.asarray(bias).astype(np.int64).reshape((1, -1) + (1,) * (acc.ndim - 2))
    ws = wide(np.asarray(w_scale)).astype(np.float32)
    ws = ws.reshape(()) if ws.size == 1 else ws.reshape((1, -1) + (1,) * (acc.ndim - 2))
    mult = wide(np.asarray(x_scale)).astype(np.float32).reshape(()) * ws / \
        wide(np.asarray(y_scale)).astype(np.float32).reshape(())
    y_zp = np.asarray(y_zp)
    return _requant(acc, np.asarray(mult), y_zp.reshape(()), y_zp.dtype)
