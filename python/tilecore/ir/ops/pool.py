"""tilecore/ir/ops/pool.py — pooling: AveragePool, MaxPool (with indices), LpPool,
MaxUnpool, GlobalAveragePool, GlobalMaxPool.

Windows are gathered with the convolution's im2col (`_conv.im2col`) over an input
padded with the op's neutral value; ceil_mode adds the extra end padding a partial
last window needs (never counted by AveragePool, whatever count_include_pad says).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _conv
from ._util import INT64, fail, ints_of, is_int, tensor
from .conv import window_attrs, window_out_dims
from .registry import REQUIRED, Operand, Result, register_op

_POOL_ATTRS = {
    "auto_pad": ("string", "NOTSET"),
    "ceil_mode": ("int", 0),
    "dilations": ("ints", None),
    "kernel_shape": ("ints", REQUIRED),
    "pads": ("ints", None),
    "strides": ("ints", None),
}


def _geometry(op, attrs, shape):
    if attrs.get("kernel_shape") is None:
        raise fail(op, "needs the attribute 'kernel_shape'")
    k = len(shape) - 2
    if k < 1:
        raise fail(op, f"X must be (N, C, D1, ...), got shape {tuple(shape)}")
    kernel, strides, dilations, pads, auto_pad = window_attrs(op, attrs, k)
    if attrs.get("_opset", 22) < 10 and attrs.get("ceil_mode"):
        raise fail(op, "ceil_mode needs opset 10")
    return kernel, strides, dilations, pads, auto_pad


def _pool_infer(op, n_out=1):
    def infer(attrs, inputs):
        x = inputs[0]
        if x.shape is None:
            return [tensor(None, x.dtype)] + [tensor(None, INT64)] * (n_out - 1)
        kernel, strides, dilations, pads, auto_pad = _geometry(op, attrs, x.shape)
        spatial = window_out_dims(op, x.shape[2:], kernel, strides, dilations, pads, auto_pad,
                                  bool(attrs.get("ceil_mode", 0)), pool=True)
        shape = (x.shape[0], x.shape[1], *spatial)
        return [tensor(shape, x.dtype)] + [tensor(shape, INT64)] * (n_out - 1)
    return infer


def _windows(op, attrs, x):
    """(kernel, strides, dilations, explicit pads, ceil_mode end overhang, out sizes) of X."""
    kernel, strides, dilations, pads, auto_pad = _geometry(op, attrs, x.shape)
    k = x.ndim - 2
    pads = _conv.resolve_pads(auto_pad, x.shape[2:], kernel, strides, dilations, pads)
    ceil_mode = bool(attrs.get("ceil_mode", 0))
    outs = [_conv.out_size(x.shape[2 + i], kernel[i], strides[i], dilations[i], pads[i], pads[k + i], ceil_mode)
            for i in range(k)]
    if any(o <= 0 for o in outs):
        raise fail(op, f"input {x.shape} with kernel {kernel} and pads {pads} gives no output")
    extra = [max(0, (outs[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
                 - (x.shape[2 + i] + pads[i] + pads[k + i])) for i in range(k)]
    return kernel, strides, dilations, pads, extra, outs


def _gather(x, geometry, fill, extra_fill):
    kernel, strides, dilations, pads, extra, outs = geometry
    k = len(kernel)
    xp = _conv.pad_spatial(x, pads, fill)
    xp = _conv.pad_spatial(xp, [0] * k + extra, extra_fill)
    return _conv.im2col(xp, kernel, strides, dilations, outs)


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" or dtype.kind == "V" else np.iinfo(dtype).min


@register_op("AveragePool", attrs=dict(_POOL_ATTRS, count_include_pad=("int", 0)), since_version=1,
             infer=_pool_infer("AveragePool"))
def average_pool(attrs: dict[str, Any], x: Operand) -> Result:
    """Mean over each window of (N, C, D1..Dk); float types. Pads count in the
    divisor only with count_include_pad; the ceil_mode overhang never does."""
    geometry = _windows("AveragePool", attrs, x)
    k = x.ndim - 2
    acc = _conv.accum_dtype(x.dtype)
    cols = _gather(x.astype(acc), geometry, 0, 0)
    ones = np.ones((1, 1) + x.shape[2:], acc)
    inside = _gather(ones, geometry, 1 if attrs["count_include_pad"] else 0, 0)
    axes = tuple(range(2, 2 + k))
    total = cols.sum(axis=axes)
    count = inside.sum(axis=axes)
    return (total / np.maximum(count, 1)).astype(x.dtype)


@register_op("MaxPool", attrs=dict(_POOL_ATTRS, storage_order=("int", 0)), outputs=(1, 2), since_version=1,
             infer=_pool_infer("MaxPool", 2))
def max_pool(attrs: dict[str, Any], x: Operand) -> Result:
    """Max over each window of (N, C, D1..Dk); float and 8-bit int types. Indices
    (int64) are flat offsets into X, spatial dims row-major (storage_order 0) or
    column-major (1); the first maximum in window order wins."""
    geometry = _windows("MaxPool", attrs, x)
    k = x.ndim - 2
    low = _lowest(x.dtype)
    cols = _gather(x, geometry, low, low)
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    kernel, _, _, _, _, outs = geometry
    flat = cols.reshape(n, c, -1, *outs)
    y = flat.max(axis=2)
    if attrs.get("_num_outputs", 2) == 1:  # (a node without the Indices output: not computed)
        return y
    if attrs["storage_order"]:
        strides_sp = np.cumprod((1,) + tuple(spatial[:-1]))
        pos = sum(np.arange(spatial[i]).reshape((-1,) + (1,) * (k - 1 - i)) * int(strides_sp[i])
                  for i in range(k))
    else:
        pos = np.arange(int(np.prod(spatial))).reshape(spatial)
    pos = np.broadcast_to(pos, (1, 1) + tuple(spatial)).astype(np.int64)
    pcols = _gather(pos, geometry, -1, -1).reshape(1, 1, -1, *outs)
    arg = np.argmax(flat, axis=2)
    idx = np.take_along_axis(np.broadcast_to(pcols, flat.shape), arg[:, :, None], axis=2)[:, :, 0]
    base = (np.arange(n)[:, None] * c + np.arange(c)[None, :]) * int(np.prod(spatial))
    idx = idx + base.reshape((n, c) + (1,) * k)
    return y, idx.astype(np.int64)


@register_op("LpPool", attrs=dict(_POOL_ATTRS, p=("int", 2)), since_version=1, infer=_pool_infer("LpPool"))
def lp_pool(attrs: dict[str, Any], x: Operand) -> Result:
    """(sum |x|^p)^(1/p) over each window, pads contributing zero; float types."""
    geometry = _windows("LpPool", attrs, x)
    k = x.ndim - 2
    acc = _conv.accum_dtype(x.dtype)
    p = attrs["p"]
    cols = _gather(np.abs(x.astype(acc)), geometry, 0, 0)
    return np.power(np.sum(np.power(cols, p), axis=tuple(range(2, 2 + k))), 1.0 / p).astype(x.dtype)


def _global_infer(attrs, inputs):
    x = inputs[0]
    if x.shape is None:
        return [tensor(None, x.dtype)]
    if len(x.shape) < 2:
        raise fail("GlobalPool", f"X must be (N, C, ...), got shape {x.shape}")
    return [tensor(tuple(x.shape[:2]) + (1,) * (len(x.shape) - 2), x.dtype)]


@register_op("GlobalAveragePool", since_version=1, infer=_global_infer)
def global_average_pool(attrs: dict[str, Any], x: Operand) -> Result:
    """Mean over all spatial dims of (N, C, ...), kept as size-1 dims; float types."""
    axes = tuple(range(2, x.ndim))
    return x.astype(_conv.accum_dtype(x.dtype)).mean(axis=axes, keepdims=True).astype(x.dtype)


@register_op("GlobalMaxPool", since_version=1, infer=_global_infer)
def global_max_pool(attrs: dict[str, Any], x: Operand) -> Result:
    """Max over all spatial dims of (N, C, ...), kept as size-1 dims; float types."""
    return x.max(axis=tuple(range(2, x.ndim)), keepdims=True)


def _unpool_shape(attrs, x_shape, output_shape):
    k = len(x_shape) - 2
    kernel, strides, _, pads, _ = window_attrs("MaxUnpool", dict(attrs, auto_pad="NOTSET"), k)
    pads = pads or [0] * (2 * k)
    if output_shape is not None:
        return tuple(output_shape)
    spatial = [(d - 1) * strides[i] + kernel[i] - pads[i] - pads[k + i] if is_int(d) else None
               for i, d in enumerate(x_shape[2:])]
    return (x_shape[0], x_shape[1], *spatial)


def _unpool_infer(attrs, inputs):
    x = inputs[0]
    shape_in = inputs[2] if len(inputs) > 2 else None
    if shape_in is not None:
        if shape_in.value is not None:
            return [tensor([int(v) for v in shape_in.value], x.dtype)]
        n = shape_in.shape[0] if shape_in.shape else None
        return [tensor(None if not is_int(n) else [None] * n, x.dtype)]
    if x.shape is None:
        return [tensor(None, x.dtype)]
    return [tensor(_unpool_shape(attrs, x.shape, None), x.dtype)]


@register_op("MaxUnpool", attrs={"kernel_shape": ("ints", REQUIRED), "pads": ("ints", None), "strides": ("ints", None)},
             inputs=(2, 3), since_version=9, infer=_unpool_infer)
def max_unpool(attrs: dict[str, Any], x: Operand, indices: Operand, output_shape: Operand = None) -> Result:
    """Inverse of MaxPool: X scattered to the flat positions `indices` (int64) of a
    zero tensor of the default (or given) output shape."""
    shape = _unpool_shape(attrs, x.shape, None if output_shape is None else ints_of(output_shape))
    y = np.zeros(int(np.prod(shape)), x.dtype)
    flat = indices.reshape(-1).astype(np.int64)
    if flat.size and (flat.min() < 0 or flat.max() >= y.size):
        raise fail("MaxUnpool", f"an index is outside the output of shape {shape}")
    y[flat] = x.reshape(-1)
    return y.reshape(shape)
