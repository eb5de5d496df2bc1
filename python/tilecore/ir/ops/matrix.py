"""tilecore/ir/ops/matrix.py — Det (determinants of square matrices) and EyeLike."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import check_dtype, is_float, onnx_dtype, wide
from .registry import OpError, Operand, Result, TensorInfo, register_op


def _det_infer(attrs, inputs):
    x = inputs[0]
    check_dtype("Det", x, is_float, "float types")
    if x.shape is None:
        return [TensorInfo(None, x.dtype)]
    if len(x.shape) < 2:
        raise OpError(f"Det: needs [..., M, M], got shape {x.shape}")
    m, n = x.shape[-2:]
    if isinstance(m, int) and isinstance(n, int) and m != n:
        raise OpError(f"Det: matrices must be square, got shape {x.shape}")
    return [TensorInfo(tuple(x.shape[:-2]), x.dtype)]


@register_op("Det", since_version=11, infer=_det_infer)
def det(attrs: dict[str, Any], x: Operand) -> Result:
    """Det(X): determinants of the square matrices in the last two axes of X ([..., M, M] -> [...]);
    float types (computed in float64 by LU)."""
    x = np.asarray(x)
    _det_infer(attrs, [TensorInfo.of(x, False)])
    return np.asarray(np.linalg.det(wide(x).astype(np.float64))).astype(x.dtype)


def _eye_infer(attrs, inputs):
    x = inputs[0]
    if x.shape is not None and len(x.shape) != 2:
        raise OpError(f"EyeLike: input must be 2-D, got shape {x.shape}")
    dtype = onnx_dtype(attrs["dtype"], "EyeLike") if attrs["dtype"] is not None else np.dtype(x.dtype)
    return [TensorInfo(x.shape, dtype)]


@register_op("EyeLike", attrs={"dtype": ("int", None), "k": ("int", 0)}, since_version=9, infer=_eye_infer)
def eye_like(attrs: dict[str, Any], x: Operand) -> Result:
    """EyeLike(input): a 2-D tensor of input's shape with ones on diagonal k (k > 0 above the main one),
    in `dtype` (default: input's dtype)."""
    x = np.asarray(x)
    dtype = _eye_infer(attrs, [TensorInfo.of(x, False)])[0].dtype
    return np.eye(x.shape[0], x.shape[1], k=attrs["k"]).astype(dtype)
