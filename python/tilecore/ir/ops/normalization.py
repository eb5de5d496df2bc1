"""tilecore/ir/ops/normalization.py — BatchNormalization, InstanceNormalization,
LayerNormalization, GroupNormalization, RMSNormalization, LpNormalization,
MeanVarianceNormalization, LRN and Dropout.

Statistics of narrow floats are computed in float32 (LayerNorm/GroupNorm/RMSNorm: in
the `stash_type` precision) and the result is rounded to the input dtype once.
Variances are population variances (divided by N).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import check_dtype, is_float, onnx_dtype, opset, wide
from .infer import normalize_axis
from .registry import OpError, Operand, Result, TensorInfo, register_op


def _float_x(name):
    def check(x) -> None:
        check_dtype(name, x, is_float, "float types")
    return check


def _channel_shape(v, rank):
    """A per-channel vector shaped to broadcast against (N, C, D1, ...)."""
    v = wide(np.asarray(v))
    if v.ndim == 1:
        return v.reshape((-1,) + (1,) * max(rank - 2, 0))
    return v  # spatial=0 (opset < 9): already (C, D1, ...)


# ---- BatchNormalization -------------------------------------------------------------------------

def _bn_infer(attrs, inputs):
    x = inputs[0]
    _float_x("BatchNormalization")(x)
    if x.shape is not None and len(x.shape) < 1:
        raise OpError("BatchNormalization: X needs rank >= 1")
    c = x.shape[1] if x.shape is not None and len(x.shape) > 1 else None
    for i, what in enumerate(("scale", "B", "mean", "var"), 1):
        t = inputs[i]
        if t is not None and t.shape is not None and len(t.shape) == 1 and isinstance(c, int) \
                and isinstance(t.shape[0], int) and t.shape[0] != c:
            raise OpError(f"BatchNormalization: {what} has {t.shape[0]} values for {c} channels")
    outs = [TensorInfo(x.shape, x.dtype)]
    if attrs["training_mode"] and opset(attrs) >= 14:
        outs += [TensorInfo(inputs[3].shape, inputs[3].dtype), TensorInfo(inputs[4].shape, inputs[4].dtype)]
    return outs


@register_op("BatchNormalization", attrs={"epsilon": ("float", 1e-5), "momentum": ("float", 0.9),
                                          "training_mode": ("int", 0), "spatial": ("int", 1)},
             inputs=(5, 5), outputs=(1, 5), since_version=7, infer=_bn_infer)
def batch_norm(attrs: dict[str, Any], x: Operand, scale: Operand, b: Operand, mean: Operand, var: Operand) -> Result:
    """BatchNormalization(X, scale, B, mean, var): scale * (X - mean) / sqrt(var + eps) + B per
    channel (axis 1); with training_mode=1 (opset 14) the batch statistics are used and the
    running mean/var (momentum-weighted) are returned too; float types."""
    x = np.asarray(x)
    w = wide(x)
    rank = w.ndim
    eps = attrs["epsilon"]
    if attrs["training_mode"] and opset(attrs) >= 14:
        axes = tuple(i for i in range(rank) if i != 1)
        bm = w.mean(axis=axes)
        bv = w.var(axis=axes)
        y = (w - _channel_shape(bm, rank)) / np.sqrt(_channel_shape(bv, rank) + eps)
        y = y * _channel_shape(scale, rank) + _channel_shape(b, rank)
        mom = attrs["momentum"]
        rm = wide(np.asarray(mean)) * mom + bm * (1 - mom)
        rv = wide(np.asarray(var)) * mom + bv * (1 - mom)
        return (y.astype(x.dtype), rm.astype(np.asarray(mean).dtype), rv.astype(np.asarray(var).dtype))
    y = w - _channel_shape(mean, rank)  # (a new array: the steps after it may write into it)
    y = _into(y, np.divide, np.sqrt(_channel_shape(var, rank) + np.asarray(eps, w.dtype)))
    y = _into(y, np.multiply, _channel_shape(scale, rank))
    return _into(y, np.add, _channel_shape(b, rank)).astype(x.dtype, copy=False)


def _into(y: np.ndarray, op: Any, v: np.ndarray) -> np.ndarray:
    """``op(y, v)``, written into ``y`` when the result has its dtype and shape (the same
    values as a fresh array, without a temporary of the tensor's size per step)."""
    if np.result_type(y, v) == y.dtype and np.broadcast_shapes(y.shape, v.shape) == y.shape:
        return op(y, v, out=y)
    return op(y, v)


# ---- InstanceNormalization ------------------------------------------------------------------------

def _same_infer(name, rank_min=0):
    def infer(attrs, inputs):
        x = inputs[0]
        _float_x(name)(x)
        if x.shape is not None and len(x.shape) < rank_min:
            raise OpError(f"{name}: X needs rank >= {rank_min}, got shape {x.shape}")
        return [TensorInfo(x.shape, x.dtype)]
    return infer


@register_op("InstanceNormalization", attrs={"epsilon": ("float", 1e-5)}, inputs=(3, 3), since_version=6,
             infer=_same_infer("InstanceNormalization", 3))
def instance_norm(attrs: dict[str, Any], x: Operand, scale: Operand, b: Operand) -> Result:
    """InstanceNormalization(X, scale, B): per sample and channel, normalised over the spatial
    axes, then scale * . + B per channel; float types, X of rank >= 3."""
    x = np.asarray(x)
    w = wide(x)
    axes = tuple(range(2, w.ndim))
    mean = w.mean(axis=axes, keepdims=True)
    var = w.var(axis=axes, keepdims=True)
    y = (w - mean) / np.sqrt(var + np.asarray(attrs["epsilon"], w.dtype))
    return (y * _channel_shape(scale, w.ndim) + _channel_shape(b, w.ndim)).astype(x.dtype)


# ---- LayerNormalization / RMSNormalization --------------------------------------------------------

def _stash(attrs, name):
    return onnx_dtype(attrs["stash_type"], name) if attrs["stash_type"] not in (None, 1) else np.dtype(np.float32)


def _ln_infer(name, with_stats):
    def infer(attrs, inputs):
        x = inputs[0]
        _float_x(name)(x)
        outs = [TensorInfo(x.shape, x.dtype)]
        if with_stats:
            stash = _stash(attrs, name)
            if x.shape is None:
                outs += [TensorInfo(None, stash)] * 2
            else:
                axis = normalize_axis(attrs["axis"], max(len(x.shape), 1), where=name)
                stat = tuple(d if i < axis else 1 for i, d in enumerate(x.shape))
                outs += [TensorInfo(stat, stash), TensorInfo(stat, stash)]
        return outs
    return infer


@register_op("LayerNormalization", attrs={"axis": ("int", -1), "epsilon": ("float", 1e-5), "stash_type": ("int", 1)},
             inputs=(2, 3), outputs=(1, 3), since_version=17, infer=_ln_infer("LayerNormalization", True))
def layer_norm(attrs: dict[str, Any], x: Operand, scale: Operand, b: Operand = None) -> Result:
    """LayerNormalization(X, Scale, B): X normalised over the axes from `axis` on (mean, inverse
    standard deviation in `stash_type`, also returned), then * Scale + B; float types."""
    x = np.asarray(x)
    stash = _stash(attrs, "LayerNormalization")
    w = x.astype(stash)
    axis = normalize_axis(attrs["axis"], max(w.ndim, 1), where="LayerNormalization")
    axes = tuple(range(axis, w.ndim))
    mean = w.mean(axis=axes, keepdims=True)
    d = w - mean
    var = (d * d).mean(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(var + np.asarray(attrs["epsilon"], stash))
    normalized = (d * inv).astype(x.dtype)
    y = wide(normalized) * wide(np.asarray(scale))
    if b is not None:
        y = y + wide(np.asarray(b))
    return y.astype(x.dtype), mean.astype(stash), inv.astype(stash)


@register_op("RMSNormalization", attrs={"axis": ("int", -1), "epsilon": ("float", 1e-5), "stash_type": ("int", 1)},
             inputs=(2, 2), since_version=23, infer=_ln_infer("RMSNormalization", False))
def rms_norm(attrs: dict[str, Any], x: Operand, scale: Operand) -> Result:
    """RMSNormalization(X, Scale): X / sqrt(mean(X**2) + eps) over the axes from `axis` on
    (in `stash_type`), then * Scale; float types."""
    x = np.asarray(x)
    stash = _stash(attrs, "RMSNormalization")
    w = x.astype(stash)
    axis = normalize_axis(attrs["axis"], max(w.ndim, 1), where="RMSNormalization")
    axes = tuple(range(axis, w.ndim))
    rms = np.sqrt((w * w).mean(axis=axes, keepdims=True) + np.asarray(attrs["epsilon"], stash))
    normalized = (w / rms).astype(x.dtype)
    return (wide(normalized) * wide(np.asarray(scale))).astype(x.dtype)


# ---- GroupNormalization ---------------------------------------------------------------------------

def _gn_infer(attrs, inputs):
    x = inputs[0]
    _float_x("GroupNormalization")(x)
    g = attrs["num_groups"]
    if g is None or g <= 0:
        raise OpError(f"GroupNormalization: num_groups must be positive, got {g}")
    if x.shape is not None and len(x.shape) >= 2 and isinstance(x.shape[1], int) and x.shape[1] % g:
        raise OpError(f"GroupNormalization: {x.shape[1]} channels do not split into {g} groups")
    return [TensorInfo(x.shape, x.dtype)]


@register_op("GroupNormalization", attrs={"num_groups": ("int", None), "epsilon": ("float", 1e-5),
                                          "stash_type": ("int", 1)},
             inputs=(3, 3), since_version=18, infer=_gn_infer)
def group_norm(attrs: dict[str, Any], x: Operand, scale: Operand, bias: Operand) -> Result:
    """GroupNormalization(X, scale, bias): per sample, the channels in `num_groups` groups each
    normalised, then scale * . + bias — per channel from opset 21, per group before; float types."""
    x = np.asarray(x)
    g = attrs["num_groups"]
    n, c = x.shape[0], x.shape[1]
    if g is None or g <= 0 or c % g:
        raise OpError(f"GroupNormalization: {c} channels do not split into num_groups={g}")
    stash = _stash(attrs, "GroupNormalization")
    w = x.astype(stash).reshape((n, g, -1))
    mean = w.mean(axis=2, keepdims=True)
    var = w.var(axis=2, keepdims=True)
    normalized = ((w - mean) / np.sqrt(var + np.asarray(attrs["epsilon"], stash))).reshape(x.shape).astype(x.dtype)
    scale, bias = wide(np.asarray(scale)), wide(np.asarray(bias))
    if opset(attrs) < 21 and scale.size == g and g != c:
        scale, bias = np.repeat(scale, c // g), np.repeat(bias, c // g)
    rank = x.ndim
    return (wide(normalized) * _channel_shape(scale, rank) + _channel_shape(bias, rank)).astype(x.dtype)


# ---- LpNormalization, MeanVarianceNormalization, LRN ---------------------------------------------

def _lp_infer(attrs, inputs):
    x = inputs[0]
    _float_x("LpNormalization")(x)
    if attrs["p"] not in (1, 2):
        raise OpError(f"LpNormalization: p must be 1 or 2, got {attrs['p']}")
    if x.shape is not None:
        normalize_axis(attrs["axis"], max(len(x.shape), 1), where="LpNormalization")
    return [TensorInfo(x.shape, x.dtype)]


@register_op("LpNormalization", attrs={"axis": ("int", -1), "p": ("int", 2)}, since_version=1, infer=_lp_infer)
def lp_norm(attrs: dict[str, Any], x: Operand) -> Result:
    """LpNormalization(x): x / ||x||_p along `axis` (p 1 or 2), 0 where the norm is 0; float types."""
    x = np.asarray(x)
    if attrs["p"] not in (1, 2):
        raise OpError(f"LpNormalization: p must be 1 or 2, got {attrs['p']}")
    w = wide(x)
    axis = normalize_axis(attrs["axis"], max(w.ndim, 1), where="LpNormalization")
    norm = np.sum(np.abs(w), axis=axis, keepdims=True) if attrs["p"] == 1 else \
        np.sqrt(np.sum(w * w, axis=axis, keepdims=True))
    with np.errstate(all="ignore"):
        out = np.where(norm == 0, np.zeros((), w.dtype), w / np.where(norm == 0, 1, norm))
    return out.astype(x.dtype)


@register_op("MeanVarianceNormalization", attrs={"axes": ("ints", [0, 2, 3])}, since_version=9,
             infer=_same_infer("MeanVarianceNormalization"))
def mvn(attrs: dict[str, Any], x: Operand) -> Result:
    """MeanVarianceNormalization(X): (X - E[X]) / (sqrt(E[X**2] - E[X]**2) + 1e-9) over `axes`; float types."""
    x = np.asarray(x)
    w = wide(x)
    axes = tuple(sorted({normalize_axis(a, max(w.ndim, 1), where="MeanVarianceNormalization")
                         for a in attrs["axes"]}))
    mean = w.mean(axis=axes, keepdims=True)
    var = (w * w).mean(axis=axes, keepdims=True) - mean * mean
    return ((w - mean) / (np.sqrt(var) + np.asarray(1e-9, w.dtype))).astype(x.dtype)


def _lrn_infer(attrs, inputs):
    if attrs["size"] is None or attrs["size"] <= 0:
        raise OpError(f"LRN: size must be a positive int, got {attrs['size']}")
    return _same_infer("LRN", 3)(attrs, inputs)


@register_op("LRN", attrs={"size": ("int", None), "alpha": ("float", 1e-4), "beta": ("float", 0.75),
                           "bias": ("float", 1.0)}, since_version=1, infer=_lrn_infer)
def lrn(attrs: dict[str, Any], x: Operand) -> Result:
    """LRN(X): X / (bias + alpha / size * sum of X**2 over `size` neighbouring channels) ** beta;
    float types, X of shape (N, C, ...)."""
    x = np.asarray(x)
    size = attrs["size"]
    if size is None or size <= 0:
        raise OpError(f"LRN: size must be a positive int, got {size}")
    w = wide(x)
    sq = w * w
    c = w.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    total = np.zeros_like(w)
    for ch in range(c):
        total[:, ch] = sq[:, max(0, ch - lo):min(c, ch + hi + 1)].sum(axis=1)
    return (w / (attrs["bias"] + attrs["alpha"] / size * total) ** attrs["beta"]).astype(x.dtype)


# ---- Dropout --------------------------------------------------------------------------------------

def _dropout_infer(attrs, inputs):
    x = inputs[0]
    _float_x("Dropout")(x)
    return [TensorInfo(x.shape, x.dtype), TensorInfo(x.shape, np.dtype(np.bool_))]


@register_op("Dropout", attrs={"ratio": ("float", 0.5), "seed": ("int", None)}, inputs=(1, 3), outputs=(1, 2),
             since_version=7, infer=_dropout_infer)
def dropout(attrs: dict[str, Any], x: Operand, ratio: Operand = None, training_mode: Operand = None) -> Result:
    """Dropout(data, ratio, training_mode): identity with an all-True mask unless training_mode
    (opset 12) is true, then each value is zeroed with probability `ratio` and the kept ones
    scaled by 1/(1-ratio) (random numbers from `seed`); float types."""
    x = np.asarray(x)
    training = bool(np.asarray(training_mode).ravel()[0]) if training_mode is not None and opset(attrs) >= 12 else False
    r = float(np.asarray(ratio).ravel()[0]) if ratio is not None and opset(attrs) >= 12 else float(attrs["ratio"])
    if not training or r == 0:
        return x.copy(), np.ones(x.shape, np.bool_)
    if not 0 <= r < 1:
        raise OpError(f"Dropout: ratio must be in [0, 1), got {r}")
    rng = np.random.default_rng(attrs["seed"])
    mask = rng.uniform(size=x.shape) >= r
    return (wide(x) * mask / (1 - r)).astype(x.dtype), mask
