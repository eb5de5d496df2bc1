"""tilecore/ir/ops/reduce.py — reductions (Reduce*), ArgMax/ArgMin and the scans CumSum/CumProd.

Reductions take `axes` as an attribute before opset 18 (ReduceSum: 13) and as an
optional int64 input from then on; no axes means every axis, unless
`noop_with_empty_axes=1`, which makes the op an identity. An empty reduction gives
the identity of the operation (0 for sums, 1 for ReduceProd, -inf for ReduceMax and
the logs, +inf for ReduceMin, False/True for bool ReduceMax/ReduceMin). Narrow floats
accumulate in float32; integer ReduceMean truncates.
"""
from __future__ import annotations

import numpy as np

from ._numeric import check_dtype, is_float, is_int, opset, wide
from .infer import const_value, normalize_axis
from .registry import OpError, TensorInfo, register_op


def _axes_input_opset(name: str) -> int:
    return 13 if name == "ReduceSum" else 18


def _axes(name, attrs, x_rank, axes_in):
    """(axes tuple or None for all, noop)."""
    if opset(attrs) >= _axes_input_opset(name):
        axes = None if axes_in is None else [int(a) for a in np.asarray(axes_in).ravel()]
    else:
        axes = attrs.get("axes")
    if not axes:
        return None, bool(attrs["noop_with_empty_axes"]) and opset(attrs) >= _axes_input_opset(name)
    norm = tuple(sorted({normalize_axis(a, max(x_rank, 1), where=name) for a in axes}))
    if len(norm) != len(axes):
        raise OpError(f"{name}: axes {list(axes)} repeat an axis")
    return norm, False


def _reduce_infer(name, allowed):
    def infer(attrs, inputs):
        x = inputs[0]
        check_dtype(name, x, allowed, "numeric types")
        axes_in = inputs[1] if len(inputs) > 1 else None
        if x.shape is None:
            return [TensorInfo(None, x.dtype)]
        if axes_in is not None and axes_in.value is None and axes_in.is_static and \
                int(np.prod(axes_in.shape, dtype=np.int64)) == 0:
            axes_in = None  # a statically empty axes input: no axes given
        if opset(attrs) >= _axes_input_opset(name) and axes_in is not None and axes_in.value is None:
            rank = len(x.shape) if attrs["keepdims"] else None
            return [TensorInfo(None if rank is None else (None,) * rank, x.dtype)]
        value = None if axes_in is None else const_value(axes_in, "axes", name)
        axes, noop = _axes(name, attrs, len(x.shape), value)
        if noop:
            return [TensorInfo(x.shape, x.dtype)]
        red = set(range(len(x.shape))) if axes is None else set(axes)
        shape = tuple(1 if i in red else d for i, d in enumerate(x.shape) if attrs["keepdims"] or i not in red)
        return [TensorInfo(shape, x.dtype)]
    return infer


def _lse(w, axis, keepdims):
    m = np.max(w, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(w - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _maxmin(fn, identity_float):
    def run(w, axis, keepdims):
        if w.dtype == np.bool_:
            return (np.any if fn is np.max else np.all)(w, axis=axis, keepdims=keepdims)
        if w.dtype.kind == "f":
            init = identity_float
        else:
            info = np.iinfo(w.dtype)
            init = info.min if fn is np.max else info.max
        return fn(w, axis=axis, keepdims=keepdims, initial=init)
    return run


_KINDS = {
    "ReduceSum": lambda w, ax, k: np.sum(w, axis=ax, keepdims=k, dtype=w.dtype),
    "ReduceProd": lambda w, ax, k: np.prod(w, axis=ax, keepdims=k, dtype=w.dtype),
    "ReduceMax": _maxmin(np.max, -np.inf),
    "ReduceMin": _maxmin(np.min, np.inf),
    "ReduceMean": None,
    "ReduceL1": lambda w, ax, k: np.sum(np.abs(w), axis=ax, keepdims=k, dtype=w.dtype),
    "ReduceL2": lambda w, ax, k: np.sqrt(np.sum(np.square(w), axis=ax, keepdims=k, dtype=w.dtype)),
    "ReduceSumSquare": lambda w, ax, k: np.sum(np.square(w), axis=ax, keepdims=k, dtype=w.dtype),
    "ReduceLogSum": lambda w, ax, k: np.log(np.sum(w, axis=ax, keepdims=k)),
    "ReduceLogSumExp": _lse,
}
_DOCS = {
    "ReduceSum": "sum", "ReduceProd": "product", "ReduceMax": "maximum (bool: any)",
    "ReduceMin": "minimum (bool: all)", "ReduceMean": "mean", "ReduceL1": "sum of |x|",
    "ReduceL2": "sqrt of the sum of x**2", "ReduceSumSquare": "sum of x**2", "ReduceLogSum": "log of the sum",
    "ReduceLogSumExp": "log of the sum of exp(x), computed stably",
}


def _mean(w, axis, keepdims):
    n = w.size if axis is None else int(np.prod([w.shape[a] for a in axis], dtype=np.int64))
    if w.dtype.kind in "iu":
        s = np.sum(w, axis=axis, keepdims=keepdims, dtype=np.int64 if w.dtype.kind == "i" else np.uint64)
        return (s / max(n, 1)).astype(np.float64) if n else s
    return np.sum(w, axis=axis, keepdims=keepdims, dtype=w.dtype) / np.asarray(n, w.dtype)


_KINDS["ReduceMean"] = _mean


def _register_reduce(name) -> None:
    fn = _KINDS[name]
    allowed = (lambda dt: is_float(dt) or is_int(dt) or np.dtype(dt) == np.bool_) if name in (
        "ReduceMax", "ReduceMin") else (lambda dt: is_float(dt) or is_int(dt))

    def reference(attrs, x, axes_in=None):
        x = np.asarray(x)
        axes, noop = _axes(name, attrs, x.ndim, axes_in)
        if noop:
            return x.copy()
        w = wide(x)
        keep = bool(attrs["keepdims"])
        with np.errstate(all="ignore"):
            if w.dtype.kind in "iu" and name in ("ReduceLogSum", "ReduceLogSumExp", "ReduceL2"):
                out = fn(w.astype(np.float64), axes, keep)
            else:
                out = fn(w, axes, keep)
            out = np.asarray(out)
            if x.dtype.kind in "iu" and out.dtype.kind == "f":
                out = np.trunc(out)
            return out.astype(x.dtype)
    reference.__doc__ = (f"{name}(data, axes): the {_DOCS[name]} over `axes` (all when omitted), "
                         "keepdims; numeric types" + (" and bool" if name in ("ReduceMax", "ReduceMin") else "") + ".")
    register_op(name, attrs={"axes": ("ints", None), "keepdims": ("int", 1), "noop_with_empty_axes": ("int", 0)},
                inputs=(1, 2), since_version=1, infer=_reduce_infer(name, allowed))(reference)


for _name in _KINDS:
    _register_reduce(_name)


# ---- ArgMax / ArgMin --------------------------------------------------------------------------

def _arg_infer(name):
    def infer(attrs, inputs):
        x = inputs[0]
        check_dtype(name, x, lambda dt: is_float(dt) or is_int(dt) or np.dtype(dt) == np.bool_, "numeric types")
        if x.shape is None:
            return [TensorInfo(None, np.dtype(np.int64))]
        axis = normalize_axis(attrs["axis"], max(len(x.shape), 1), where=name)
        shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape) if attrs["keepdims"] or i != axis)
        return [TensorInfo(shape, np.dtype(np.int64))]
    return infer


def _arg(name, fn) -> None:
    def reference(attrs, x):
        x = wide(np.asarray(x))
        axis = normalize_axis(attrs["axis"], max(x.ndim, 1), where=name)
        if x.shape[axis] == 0:
            raise OpError(f"{name}: axis {axis} is empty (shape {x.shape})")
        if attrs["select_last_index"] and opset(attrs) >= 12:
            flipped = np.flip(x, axis)
            out = x.shape[axis] - 1 - fn(flipped, axis=axis)
        else:
            out = fn(x, axis=axis)
        out = out.astype(np.int64)
        return np.expand_dims(out, axis) if attrs["keepdims"] else out
    reference.__doc__ = (f"{name}(data): int64 index of the first (select_last_index=1: last) "
                         f"{'maximum' if name == 'ArgMax' else 'minimum'} along `axis`; numeric types.")
    register_op(name, attrs={"axis": ("int", 0), "keepdims": ("int", 1), "select_last_index": ("int", 0)},
                since_version=1, infer=_arg_infer(name))(reference)


_arg("ArgMax", np.argmax)
_arg("ArgMin", np.argmin)


# ---- CumSum / CumProd -------------------------------------------------------------------------

def _scan_infer(name):
    def infer(attrs, inputs):
        x, axis = inputs
        check_dtype(name, x, lambda dt: is_float(dt) or is_int(dt), "numeric types")
        if axis.shape not in (None, (), (1,)):
            raise OpError(f"{name}: axis must be a scalar, got shape {axis.shape}")
        if axis.value is not None and x.shape is not None:
            normalize_axis(int(np.asarray(axis.value).ravel()[0]), max(len(x.shape), 1), where=name)
        return [TensorInfo(x.shape, x.dtype)]
    return infer


def _scan(name, fn, identity, since) -> None:
    def reference(attrs, x, axis):
        x = np.asarray(x)
        ax = normalize_axis(int(np.asarray(axis).ravel()[0]), max(x.ndim, 1), where=name)
        w = wide(x)
        if attrs["reverse"]:
            w = np.flip(w, ax)
        with np.errstate(all="ignore"):
            out = fn(w, axis=ax, dtype=w.dtype)
        if attrs["exclusive"]:
            pad = np.full_like(np.take(out, [0], axis=ax), identity)
            out = np.concatenate([pad, np.take(out, np.arange(out.shape[ax] - 1), axis=ax)], axis=ax)
        if attrs["reverse"]:
            out = np.flip(out, ax)
        return np.ascontiguousarray(out).astype(x.dtype, copy=False)
    reference.__doc__ = (f"{name}(x, axis): running {'sum' if identity == 0 else 'product'} along `axis` "
                         "(exclusive: without the element itself; reverse: from the end); numeric types.")
    register_op(name, attrs={"exclusive": ("int", 0), "reverse": ("int", 0)}, inputs=(2, 2), since_version=since,
                infer=_scan_infer(name))(reference)


_scan("CumSum", np.cumsum, 0, 11)
_scan("CumProd", np.cumprod, 1, 26)
