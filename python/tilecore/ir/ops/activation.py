"""tilecore/ir/ops/activation.py — activation functions (Relu ... SwiGLU) and the
axis-wise Softmax, LogSoftmax and Hardmax.

Float inputs of narrow types run in float32 and are rounded back once. Before opset
13 Softmax/LogSoftmax/Hardmax flatten the input to 2-D at `axis` (default 1) and
normalise over the whole second dimension; from 13 they work along one axis (default -1).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import check_dtype, float_compute, is_float, is_int, opset, same_dtypes, wide
from .elementwise import _erf_scipy, erf_float32
from .infer import broadcast_shapes, normalize_axis
from .registry import OpError, Operand, Result, TensorInfo, register_op


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


def _float_infer(name, allow_int: bool = False):
    def infer(attrs, inputs):
        x = inputs[0]
        check_dtype(name, x, (lambda dt: is_float(dt) or is_int(dt)) if allow_int else is_float,
                    "numeric types" if allow_int else "float types")
        return [TensorInfo(x.shape, x.dtype)]
    return infer


def _act(name, fn, since, attrs, doc, allow_int: bool = False) -> None:
    def reference(a, x):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            if is_float(x.dtype):
                return float_compute(lambda w: fn(a, w), x)
            return np.asarray(fn(a, x)).astype(x.dtype, copy=False)
    reference.__doc__ = doc
    register_op(name, attrs=attrs, since_version=since, infer=_float_infer(name, allow_int))(reference)


def _f(a, x, key):
    return np.asarray(a[key], x.dtype) if x.dtype.kind == "f" else a[key]


_act("Relu", lambda a, x: np.maximum(x, np.zeros((), x.dtype)), 6, {},
     "Relu(x): max(x, 0); float types and (opset 14) signed ints.", allow_int=True)
_act("LeakyRelu", lambda a, x: np.where(x >= 0, x, x * _f(a, x, "alpha")), 6, {"alpha": ("float", 0.01)},
     "LeakyRelu(x): x for x >= 0, alpha * x below; float types.")
_act("Elu", lambda a, x: np.where(x > 0, x, _f(a, x, "alpha") * np.expm1(x)), 6, {"alpha": ("float", 1.0)},
     "Elu(x): x for x > 0, alpha * (exp(x) - 1) otherwise; float types.")
_act("Selu", lambda a, x: _f(a, x, "gamma") * np.where(x > 0, x, _f(a, x, "alpha") * np.expm1(x)), 6,
     {"alpha": ("float", 1.6732632423543772), "gamma": ("float", 1.0507009873554805)},
     "Selu(x): gamma * (x for x > 0, alpha * (exp(x) - 1) otherwise); float types.")
_act("Celu", lambda a, x: np.maximum(x, 0) + np.minimum(0, _f(a, x, "alpha") * np.expm1(x / _f(a, x, "alpha"))),
     12, {"alpha": ("float", 1.0)},
     "Celu(x): max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); float types.")
_act("Sigmoid", lambda a, x: _sigmoid(x), 6, {}, "Sigmoid(x): 1 / (1 + exp(-x)); float types.")
_act("HardSigmoid", lambda a, x: np.clip(_f(a, x, "alpha") * x + _f(a, x, "beta"), 0, 1), 6,
     {"alpha": ("float", 0.2), "beta": ("float", 0.5)},
     "HardSigmoid(x): max(0, min(1, alpha * x + beta)); float types.")
_act("HardSwish", lambda a, x: x * np.clip(x / np.asarray(6, x.dtype) + np.asarray(0.5, x.dtype), 0, 1), 14, {},
     "HardSwish(x): x * max(0, min(1, x / 6 + 0.5)); float types.")
_act("Softplus", lambda a, x: np.logaddexp(np.zeros((), x.dtype), x), 1, {},
     "Softplus(x): log(1 + exp(x)); float types.")
_act("Softsign", lambda a, x: x / (1 + np.abs(x)), 1, {}, "Softsign(x): x / (1 + |x|); float types.")
_act("Tanh", lambda a, x: np.tanh(x), 6, {}, "Tanh(x): hyperbolic tangent; float types.")
_act("Mish", lambda a, x: x * np.tanh(np.logaddexp(np.zeros((), x.dtype), x)), 18, {},
     "Mish(x): x * tanh(softplus(x)); float types.")
_act("Swish", lambda a, x: x * _sigmoid(_f(a, x, "alpha") * x), 24, {"alpha": ("float", 1.0)},
     "Swish(x): x * sigmoid(alpha * x); float types.")
_act("ThresholdedRelu", lambda a, x: np.where(x > _f(a, x, "alpha"), x, np.zeros((), x.dtype)), 10,
     {"alpha": ("float", 1.0)}, "ThresholdedRelu(x): x where x > alpha, else 0; float types.")


def _gelu(a, x):
    if a["approximate"] == "tanh":
        c = np.asarray(np.sqrt(2 / np.pi), x.dtype)
        return np.asarray(0.5, x.dtype) * x * (1 + np.tanh(c * (x + np.asarray(0.044715, x.dtype) * x ** 3)))
    if a["approximate"] != "none":
        raise OpError(f"Gelu: approximate must be 'none' or 'tanh', got {a['approximate']!r}")
    if x.dtype == np.float32 and x.size:  # (the steps below in one pass: C++)
        return erf_float32("ReferenceGelu", x, _gelu_numpy)
    return _gelu_numpy(x)


def _gelu_numpy(x):
    return (np.asarray(0.5, x.dtype) * x * (1 + _erf_scipy(x / np.asarray(np.sqrt(2), x.dtype)))).astype(x.dtype)


_act("Gelu", _gelu, 20, {"approximate": ("string", "none")},
     "Gelu(x): x * Phi(x) (approximate='none', with erf) or its tanh form; float types.")


def _shrink(a, x):
    lambd, bias = a["lambd"], a["bias"]
    if x.dtype.kind == "f":
        lambd, bias = np.asarray(lambd, x.dtype), np.asarray(bias, x.dtype)
        return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, np.zeros((), x.dtype)))
    wx = x.astype(np.float64)
    return np.where(wx < -lambd, wx + bias, np.where(wx > lambd, wx - bias, 0)).astype(x.dtype)


_act("Shrink", _shrink, 9, {"bias": ("float", 0.0), "lambd": ("float", 0.5)},
     "Shrink(x): x + bias below -lambd, x - bias above lambd, 0 between; numeric types.", allow_int=True)


def _prelu_infer(attrs, inputs):
    x, slope = inputs
    same_dtypes("PRelu", x, slope)
    check_dtype("PRelu", x, lambda dt: is_float(dt) or is_int(dt), "numeric types")
    out = broadcast_shapes(x.shape, slope.shape, where="PRelu")
    if out is not None and x.shape is not None and len(out) != len(x.shape):
        raise OpError(f"PRelu: slope of shape {slope.shape} does not broadcast to X of shape {x.shape}")
    return [TensorInfo(x.shape if x.shape is not None else out, x.dtype)]


@register_op("PRelu", inputs=(2, 2), since_version=7, infer=_prelu_infer)
def prelu(attrs: dict[str, Any], x: Operand, slope: Operand) -> Result:
    """PRelu(x, slope): x for x >= 0, slope * x below; slope broadcasts to x; numeric types."""
    x = np.asarray(x)
    return float_compute(lambda w, s: np.where(w >= 0, w, w * s), x, np.asarray(slope)) if is_float(x.dtype) \
        else np.where(x >= 0, x, x * slope).astype(x.dtype)


def _swiglu_infer(attrs, inputs):
    a, b = inputs
    same_dtypes("SwiGLU", a, b)
    check_dtype("SwiGLU", a, is_float, "float types")
    if a.shape is not None and b.shape is not None and len(a.shape) != len(b.shape):
        raise OpError(f"SwiGLU: A {a.shape} and B {b.shape} must have one shape")
    shape = None if a.shape is None else tuple(
        da if isinstance(da, int) else db for da, db in zip(a.shape, b.shape or a.shape))
    if a.shape is not None and b.shape is not None:
        for da, db in zip(a.shape, b.shape):
            if isinstance(da, int) and isinstance(db, int) and da != db:
                raise OpError(f"SwiGLU: A {a.shape} and B {b.shape} must have one shape (no broadcasting)")
    return [TensorInfo(shape, a.dtype)]


@register_op("SwiGLU", attrs={"alpha": ("float", 1.0)}, inputs=(2, 2), since_version=28, infer=_swiglu_infer)
def swiglu(attrs: dict[str, Any], a: Operand, b: Operand) -> Result:
    """SwiGLU(a, b): a * sigmoid(alpha * a) * b, a and b of one shape; float types."""
    if np.shape(a) != np.shape(b):
        raise OpError(f"SwiGLU: A {np.shape(a)} and B {np.shape(b)} must have one shape")
    return float_compute(lambda x, y: x * _sigmoid(np.asarray(attrs["alpha"], x.dtype) * x) * y, a, b)


# ---- Softmax family ---------------------------------------------------------------------------

def _axis_default(attrs):
    return attrs["axis"] if attrs["axis"] is not None else (-1 if opset(attrs) >= 13 else 1)


def _softmax_infer(name):
    def infer(attrs, inputs):
        x = inputs[0]
        check_dtype(name, x, is_float, "float types")
        if x.shape is not None:
            normalize_axis(_axis_default(attrs), max(len(x.shape), 1), where=name)
        return [TensorInfo(x.shape, x.dtype)]
    return infer


def _along_axis(attrs, x, name, fn):
    """fn(w, axis) along one axis (opset >= 13) or over the flattened tail from `axis`."""
    x = np.asarray(x)
    w = wide(x)
    axis = normalize_axis(_axis_default(attrs), max(w.ndim, 1), where=name)
    if opset(attrs) >= 13 or w.ndim == 0:
        out = fn(w, axis)
    else:
        lead = int(np.prod(w.shape[:axis], dtype=np.int64))
        out = fn(w.reshape(lead, -1), 1).reshape(w.shape)
    return np.asarray(out).astype(x.dtype, copy=False)


def _softmax(w, axis):
    e = np.exp(w - np.max(w, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _logsoftmax(w, axis):
    s = w - np.max(w, axis=axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _hardmax(w, axis):
    idx = np.expand_dims(np.argmax(w, axis=axis), axis)
    out = np.zeros_like(w)
    np.put_along_axis(out, idx, 1, axis=axis)
    return out


_SM_ATTRS = {"axis": ("int", None)}


@register_op("Softmax", attrs=dict(_SM_ATTRS), since_version=1, infer=_softmax_infer("Softmax"))
def softmax(attrs: dict[str, Any], x: Operand) -> Result:
    """Softmax(x): exp(x) / sum(exp(x)) along `axis` (see the module note on opsets < 13); float types."""
    return _along_axis(attrs, x, "Softmax", _softmax)


@register_op("LogSoftmax", attrs=dict(_SM_ATTRS), since_version=1, infer=_softmax_infer("LogSoftmax"))
def logsoftmax(attrs: dict[str, Any], x: Operand) -> Result:
    """LogSoftmax(x): x - log(sum(exp(x))) along `axis`; float types."""
    return _along_axis(attrs, x, "LogSoftmax", _logsoftmax)


@register_op("Hardmax", attrs=dict(_SM_ATTRS), since_version=1, infer=_softmax_infer("Hardmax"))
def hardmax(attrs: dict[str, Any], x: Operand) -> Result:
    """Hardmax(x): 1 at the first maximum along `axis`, 0 elsewhere; float types."""
    return _along_axis(attrs, x, "Hardmax", _hardmax)
