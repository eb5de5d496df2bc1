"""tilecore/ir/ops/random.py — Bernoulli: random draws, so only the shape and dtype are
reproducible across implementations (values follow `seed` with numpy's generator)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import check_dtype, is_float, onnx_dtype, wide
from .registry import Operand, Result, TensorInfo, register_op


def _bernoulli_infer(attrs, inputs):
    x = inputs[0]
    check_dtype("Bernoulli", x, is_float, "float probabilities")
    dtype = onnx_dtype(attrs["dtype"], "Bernoulli") if attrs["dtype"] is not None else np.dtype(x.dtype)
    return [TensorInfo(x.shape, dtype)]


@register_op("Bernoulli", attrs={"dtype": ("int", None), "seed": ("float", None)}, since_version=15,
             infer=_bernoulli_infer)
def bernoulli(attrs: dict[str, Any], x: Operand) -> Result:
    """Bernoulli(input): 1 with probability input[i], else 0, element-wise; the output in `dtype`
    (default: input's); float probabilities."""
    x = np.asarray(x)
    dtype = _bernoulli_infer(attrs, [TensorInfo.of(x, False)])[0].dtype
    seed = None if attrs["seed"] is None else int(attrs["seed"])
    draws = np.random.default_rng(seed).uniform(size=x.shape)
    return (draws < wide(x)).astype(dtype)
