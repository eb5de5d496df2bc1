"""tilecore/ir/ops/loss.py — NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Inputs are (N, C) or (N, C, d1, ...) scores with (N) or (N, d1, ...) integer targets;
a target equal to `ignore_index` contributes nothing (weight 0). reduction "none" keeps
the per-element loss, "sum" adds it, "mean" divides the sum by the sum of the weights
of the targets used.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import check_dtype, is_float, wide
from .registry import OpError, Operand, Result, TensorInfo, register_op

_REDUCTIONS = ("none", "sum", "mean")


def _check(name, attrs, x, target):
    check_dtype(name, x, is_float, "float types")
    check_dtype(name, target, lambda dt: np.dtype(dt).kind in "iu", "integer targets")
    if attrs["reduction"] not in _REDUCTIONS:
        raise OpError(f"{name}: reduction must be one of {_REDUCTIONS}, got {attrs['reduction']!r}")
    if x.shape is not None and len(x.shape) < 2:
        raise OpError(f"{name}: input needs shape (N, C, ...), got {x.shape}")
    if x.shape is not None and target.shape is not None and len(target.shape) != len(x.shape) - 1:
        raise OpError(f"{name}: target of shape {target.shape} does not match input of shape {x.shape}")


def _loss_shape(attrs, target):
    return target.shape if attrs["reduction"] == "none" else ()


def _nll(attrs, logp, target, weight, name):
    """Per-element losses reduced by attrs['reduction']; logp is (N, C, ...) in the compute dtype."""
    target = np.asarray(target).astype(np.int64)
    c = logp.shape[1]
    ignore = attrs["ignore_index"]
    valid = np.ones(target.shape, bool) if ignore is None else target != ignore
    safe = np.where(valid, target, 0)
    if ((safe < 0) | (safe >= c)).any():
        raise OpError(f"{name}: a target is outside [0, {c}) and is not ignore_index")
    picked = np.take_along_axis(logp, np.expand_dims(safe, 1), axis=1).squeeze(1)
    w = np.ones(target.shape, logp.dtype) if weight is None else wide(np.asarray(weight))[safe].astype(logp.dtype)
    w = np.where(valid, w, np.zeros((), logp.dtype))
    loss = -picked * w
    if attrs["reduction"] == "none":
        return loss
    if attrs["reduction"] == "sum":
        return np.asarray(loss.sum(), logp.dtype)
    with np.errstate(all="ignore"):
        return np.asarray(loss.sum() / w.sum(), logp.dtype)


def _nll_infer(attrs, inputs):
    x, target = inputs[0], inputs[1]
    _check("NegativeLogLikelihoodLoss", attrs, x, target)
    return [TensorInfo(_loss_shape(attrs, target), x.dtype)]


@register_op("NegativeLogLikelihoodLoss", attrs={"reduction": ("string", "mean"), "ignore_index": ("int", None)},
             inputs=(2, 3), since_version=12, infer=_nll_infer)
def nll_loss(attrs: dict[str, Any], x: Operand, target: Operand, weight: Operand = None) -> Result:
    """NegativeLogLikelihoodLoss(input, target, weight): -input[n, target[n, ...], ...] * weight[target],
    reduced by `reduction`; float input, int32/int64 target."""
    x = np.asarray(x)
    return _nll(attrs, wide(x), target, weight, "NegativeLogLikelihoodLoss").astype(x.dtype)


def _sce_infer(attrs, inputs):
    x, target = inputs[0], inputs[1]
    _check("SoftmaxCrossEntropyLoss", attrs, x, target)
    return [TensorInfo(_loss_shape(attrs, target), x.dtype), TensorInfo(x.shape, x.dtype)]


@register_op("SoftmaxCrossEntropyLoss", attrs={"reduction": ("string", "mean"), "ignore_index": ("int", None)},
             inputs=(2, 3), outputs=(1, 2), since_version=12, infer=_sce_infer)
def sce_loss(attrs: dict[str, Any], scores: Operand, labels: Operand, weights: Operand = None) -> Result:
    """SoftmaxCrossEntropyLoss(scores, labels, weights): NegativeLogLikelihoodLoss of the log-softmax
    of `scores` over axis 1; also returns that log-probability; float scores, int labels."""
    scores = np.asarray(scores)
    w = wide(scores)
    s = w - w.max(axis=1, keepdims=True)
    logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    loss = _nll(attrs, logp, labels, weights, "SoftmaxCrossEntropyLoss")
    return loss.astype(scores.dtype), logp.astype(scores.dtype)
