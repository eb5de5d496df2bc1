"""tilecore/ir/ops/training.py — the optimiser steps of `ai.onnx.preview.training`:
Adagrad, Adam and Momentum. Each takes the learning rate R and the step count T, then
the tensors to optimise, their gradients and their optimiser states (all X's, then all
G's, ...), and returns the new tensors followed by the new states."""
from __future__ import annotations

from typing import Any

import numpy as np

from .registry import OpError, Operand, Result, TensorInfo, register_op

TRAINING = "ai.onnx.preview.training"


def _groups(name, inputs, k):
    rest = list(inputs[2:])
    if len(rest) % k:
        raise OpError(f"{name}: after R and T it needs {k} inputs per optimised tensor, got {len(rest)}")
    n = len(rest) // k
    return [rest[i * n:(i + 1) * n] for i in range(k)]


def _infer(name, k_in, k_out):
    def infer(attrs, inputs):
        groups = _groups(name, inputs, k_in)
        xs, states = groups[0], groups[2:]
        outs = [TensorInfo(x.shape, x.dtype) for x in xs]
        for group in states[:k_out - 1]:
            outs += [TensorInfo(s.shape, s.dtype) for s in group]
        return outs
    return infer


def _scalar(v):
    return np.asarray(v).ravel()[0]


@register_op("Adagrad", domain=TRAINING, attrs={"decay_factor": ("float", 0.0), "epsilon": ("float", 1e-6),
                                                 "norm_coefficient": ("float", 0.0)},
             inputs=(2, -1), outputs=(1, -1), since_version=1, infer=_infer("Adagrad", 3, 2))
def adagrad(attrs: dict[str, Any], r: Operand, t: Operand, *rest: Operand) -> Result:
    """Adagrad(R, T, X..., G..., H...): X - r * G' / (sqrt(H + G'**2) + eps) with G' = G + norm * X and
    r = R / (1 + T * decay_factor); returns the new X's then the new H's; float types."""
    xs, gs, hs = _groups("Adagrad", (r, t) + rest, 3)
    rate = float(_scalar(r)) / (1 + float(_scalar(t)) * attrs["decay_factor"])
    new_x, new_h = [], []
    for x, g, h in zip(xs, gs, hs):
        g2 = attrs["norm_coefficient"] * x + g
        h2 = h + g2 * g2
        new_x.append((x - rate * g2 / (np.sqrt(h2) + attrs["epsilon"])).astype(x.dtype))
        new_h.append(h2.astype(h.dtype))
    return tuple(new_x + new_h)


@register_op("Momentum", domain=TRAINING, attrs={"alpha": ("float", None), "beta": ("float", None),
                                                  "mode": ("string", None), "norm_coefficient": ("float", None)},
             inputs=(2, -1), outputs=(1, -1), since_version=1, infer=_infer("Momentum", 3, 2))
def momentum(attrs: dict[str, Any], r: Operand, t: Operand, *rest: Operand) -> Result:
    """Momentum(R, T, X..., G..., V...): V' = alpha * V + beta' * G' (beta' = 1 at T = 0), G' = G + norm * X;
    X - R * V' (mode "standard") or X - R * (G' + alpha * V') ("nesterov"); returns X's then V's."""
    for a in ("alpha", "beta", "mode", "norm_coefficient"):
        if attrs[a] is None:
            raise OpError(f"Momentum needs the attribute '{a}'")
    if attrs["mode"] not in ("standard", "nesterov"):
        raise OpError(f"Momentum: mode must be 'standard' or 'nesterov', got {attrs['mode']!r}")
    xs, gs, vs = _groups("Momentum", (r, t) + rest, 3)
    rate = float(_scalar(r))
    beta = attrs["beta"] if _scalar(t) > 0 else 1.0
    new_x, new_v = [], []
    for x, g, v in zip(xs, gs, vs):
        g2 = attrs["norm_coefficient"] * x + g
        v2 = attrs["alpha"] * v + beta * g2
        step = v2 if attrs["mode"] == "standard" else g2 + attrs["alpha"] * v2
        new_x.append((x - rate * step).astype(x.dtype))
        new_v.append(v2.astype(v.dtype))
    return tuple(new_x + new_v)


@register_op("Adam", domain=TRAINING, attrs={"alpha": ("float", 0.9), "beta": ("float", 0.999),
                                              "epsilon": ("float", 1e-6), "norm_coefficient": ("float", 0.0),
                                              "norm_coefficient_post": ("float", 0.0)},
             inputs=(2, -1), outputs=(1, -1), since_version=1, infer=_infer("Adam", 4, 3))
def adam(attrs: dict[str, Any], r: Operand, t: Operand, *rest: Operand) -> Result:
    """Adam(R, T, X..., G..., V..., H...): first and second moments V, H of G' = G + norm * X, the
    bias-corrected step R * sqrt(1 - beta**T) / (1 - alpha**T) (R at T = 0), X scaled by
    (1 - norm_coefficient_post) after the step; returns X's, V's, H's; float types."""
    xs, gs, vs, hs = _groups("Adam", (r, t) + rest, 4)
    a, b, eps = attrs["alpha"], attrs["beta"], attrs["epsilon"]
    step_count = float(_scalar(t))
    rate = float(_scalar(r))
    if step_count > 0:
        rate = rate * np.sqrt(1 - b ** step_count) / (1 - a ** step_count)
    new_x, new_v, new_h = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        g2 = attrs["norm_coefficient"] * x + g
        v2 = a * v + (1 - a) * g2
        h2 = b * h + (1 - b) * g2 * g2
        x2 = (x - rate * v2 / (np.sqrt(h2) + eps)) * (1 - attrs["norm_coefficient_post"])
        new_x.append(x2.astype(x.dtype))
        new_v.append(v2.astype(v.dtype))
        new_h.append(h2.astype(h.dtype))
    return tuple(new_x + new_v + new_h)
