"""tilecore/ir/ops/rnn.py — recurrent layers: RNN, GRU, LSTM.

One time loop per direction over X (seq, batch, input) — (batch, seq, input) with
layout 1 — with the gate weights of ONNX's packing (LSTM: i, o, f, c; GRU: z, r, h),
optional clip of the gate pre-activations, per-batch sequence_lens (a finished entry
keeps its state and outputs zeros; the reverse direction starts at its last valid
step) and the activation functions ONNX lists, with their alpha/beta.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._conv import accum_dtype
from ._util import fail, tensor
from .registry import Operand, Result, register_op


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_ACTIVATIONS = {
    "relu": (0, lambda x, a, b: np.maximum(x, 0)),
    "tanh": (0, lambda x, a, b: np.tanh(x)),
    "sigmoid": (0, lambda x, a, b: _sigmoid(x)),
    "affine": (2, lambda x, a, b: a * x + b),
    "leakyrelu": (1, lambda x, a, b: np.where(x >= 0, x, a * x)),
    "thresholdedrelu": (1, lambda x, a, b: np.where(x > a, x, 0)),
    "scaledtanh": (2, lambda x, a, b: a * np.tanh(b * x)),
    "hardsigmoid": (2, lambda x, a, b: np.clip(a * x + b, 0, 1)),
    "elu": (1, lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1))),
    "softsign": (0, lambda x, a, b: x / (1 + np.abs(x))),
    "softplus": (0, lambda x, a, b: np.log1p(np.exp(x))),
}
_DEFAULT_ALPHA = {"leakyrelu": 0.01, "thresholdedrelu": 1.0, "hardsigmoid": 0.2, "elu": 1.0, "affine": 1.0,
                  "scaledtanh": 1.0}
_DEFAULT_BETA = {"hardsigmoid": 0.5, "affine": 0.0, "scaledtanh": 1.0}


def _activations(op, attrs, defaults, n_dirs):
    names = attrs.get("activations") or defaults * n_dirs
    if len(names) == len(defaults):
        names = list(names) * n_dirs
    if len(names) != len(defaults) * n_dirs:
        raise fail(op, f"activations {list(names)} need {len(defaults)} per direction")
    alphas = list(attrs.get("activation_alpha") or [])
    betas = list(attrs.get("activation_beta") or [])
    funcs = []
    for name in names:
        key = name.lower()
        if key not in _ACTIVATIONS:
            raise fail(op, f"activation '{name}' is not one of {', '.join(sorted(_ACTIVATIONS))}")
        n_params, fn = _ACTIVATIONS[key]
        a = alphas.pop(0) if n_params >= 1 and alphas else _DEFAULT_ALPHA.get(key, 0.0)
        b = betas.pop(0) if n_params >= 2 and betas else _DEFAULT_BETA.get(key, 0.0)
        funcs.append(lambda x, fn=fn, a=a, b=b: fn(x, a, b))
    return [funcs[i * len(defaults):(i + 1) * len(defaults)] for i in range(n_dirs)]


def _directions(op, attrs):
    d = attrs["direction"]
    if d not in ("forward", "reverse", "bidirectional"):
        raise fail(op, f"direction '{d}' is not one of forward, reverse, bidirectional")
    return ["forward", "reverse"] if d == "bidirectional" else [d]


def _rnn_infer(op, n_states):
    def infer(attrs, inputs):
        x, w = inputs[0], inputs[1]
        hidden = attrs.get("hidden_size")
        if hidden is None and w.shape is not None:
            gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
            hidden = w.shape[1] // gates if isinstance(w.shape[1], int) else None
        dirs = len(_directions(op, attrs))
        if x.shape is None:
            return [tensor(None, x.dtype)] * (1 + n_states)
        if attrs["layout"]:
            b, s = x.shape[0], x.shape[1]
            y, h = (b, s, dirs, hidden), (b, dirs, hidden)
        else:
            s, b = x.shape[0], x.shape[1]
            y, h = (s, dirs, b, hidden), (dirs, b, hidden)
        return [tensor(y, x.dtype)] + [tensor(h, x.dtype)] * n_states
    return infer


def _prepare(op, attrs, x, w, r, b, seq_lens, initial, n_gates, n_states):
    """Common setup: x as (seq, batch, input) in the working dtype, weights per
    direction, biases (W and R halves), lengths and initial states."""
    dirs = _directions(op, attrs)
    work = accum_dtype(x.dtype)
    xs = x.astype(work)
    if attrs["layout"]:
        xs = xs.transpose(1, 0, 2)
    seq, batch, _ = xs.shape
    hidden = w.shape[1] // n_gates
    if attrs.get("hidden_size") is not None and attrs["hidden_size"] != hidden:
        raise fail(op, f"W of shape {w.shape} does not hold {n_gates} gates of hidden_size {attrs['hidden_size']}")
    if w.shape[0] != len(dirs):
        raise fail(op, f"W has {w.shape[0]} directions, direction '{attrs['direction']}' needs {len(dirs)}")
    if b is None:
        b = np.zeros((len(dirs), 2 * n_gates * hidden), work)
    lens = np.full(batch, seq, np.int64) if seq_lens is None else np.asarray(seq_lens).astype(np.int64)
    states = []
    for init in initial[:n_states]:
        if init is None:
            states.append(np.zeros((len(dirs), batch, hidden), work))
        else:
            init = init.astype(work)
            states.append(init.transpose(1, 0, 2) if attrs["layout"] else init)
    return dirs, work, xs, seq, batch, hidden, b.astype(work), lens, states


def _finish(attrs, x, ys, finals):
    y = np.stack(ys, axis=1)                                     # (seq, dirs, batch, hidden)
    finals = [np.stack(f, axis=0) for f in finals]               # (dirs, batch, hidden)
    if attrs["layout"]:
        y = y.transpose(2, 0, 1, 3)
        finals = [f.transpose(1, 0, 2) for f in finals]
    return tuple([y.astype(x.dtype)] + [f.astype(x.dtype) for f in finals])


def _run(seq, lens, reverse, step, states):
    """Runs step(t, states) -> (output, states) over time, masking finished entries."""
    out = [None] * seq
    order = range(seq - 1, -1, -1) if reverse else range(seq)
    for t in order:
        live = (t < lens)[:, None]
        y, new = step(t, states)
        states = [np.where(live, n, s) for n, s in zip(new, states)]
        out[t] = np.where(live, y, 0)
    return out, states


_RNN_COMMON = {"activation_alpha": ("floats", None), "activation_beta": ("floats", None),
               "activations": ("strings", None), "clip": ("float", None), "direction": ("string", "forward"),
               "hidden_size": ("int", None), "layout": ("int", 0)}


def _clip(attrs):
    c = attrs.get("clip")
    return (lambda v: v) if c is None else (lambda v: np.clip(v, -c, c))


@register_op("RNN", attrs=_RNN_COMMON, inputs=(3, 6), outputs=(0, 2), since_version=1,
             infer=_rnn_infer("RNN", 1))
def rnn(attrs: dict[str, Any], x: Operand, w: Operand, r: Operand, b: Operand = None, seq_lens: Operand = None,
        initial_h: Operand = None) -> Result:
    """Elman RNN: H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb); float types. Returns
    Y (seq, dirs, batch, hidden) and Y_h (dirs, batch, hidden)."""
    dirs, work, xs, seq, batch, hidden, b, lens, (h0,) = _prepare("RNN", attrs, x, w, r, b, seq_lens,
                                                                   [initial_h], 1, 1)
    acts = _activations("RNN", attrs, ["Tanh"], len(dirs))
    clip = _clip(attrs)
    ys, hs = [], []
    for d, direction in enumerate(dirs):
        wd, rd = w[d].astype(work), r[d].astype(work)
        bias = b[d, :hidden] + b[d, hidden:]
        f = acts[d][0]

        def step(t, st, wd=wd, rd=rd, bias=bias, f=f):
            h = f(clip(xs[t] @ wd.T + st[0] @ rd.T + bias))
            return h, [h]
        out, (h,) = _run(seq, lens, direction == "reverse", step, [h0[d]])
        ys.append(np.stack(out))
        hs.append(h)
    return _finish(attrs, x, ys, [hs])


@register_op("GRU", attrs=dict(_RNN_COMMON, linear_before_reset=("int", 0)), inputs=(3, 6), outputs=(0, 2),
             since_version=1, infer=_rnn_infer("GRU", 1))
def gru(attrs: dict[str, Any], x: Operand, w: Operand, r: Operand, b: Operand = None, seq_lens: Operand = None,
        initial_h: Operand = None) -> Result:
    """GRU with gates z, r, h (linear_before_reset applies r after R_h); float
    types. Returns Y and Y_h as RNN does."""
    dirs, work, xs, seq, batch, hidden, b, lens, (h0,) = _prepare("GRU", attrs, x, w, r, b, seq_lens,
                                                                   [initial_h], 3, 1)
    acts = _activations("GRU", attrs, ["Sigmoid", "Tanh"], len(dirs))
    clip = _clip(attrs)
    lbr = attrs["linear_before_reset"]
    ys, hs = [], []
    H = hidden
    for d, direction in enumerate(dirs):
        wd, rd = w[d].astype(work), r[d].astype(work)
        wb, rb = b[d, :3 * H], b[d, 3 * H:]
        f, g = acts[d]

        def step(t, st, wd=wd, rd=rd, wb=wb, rb=rb, f=f, g=g):
            h_prev = st[0]
            xw = xs[t] @ wd.T + wb
            z = f(clip(xw[:, :H] + h_prev @ rd[:H].T + rb[:H]))
            rr = f(clip(xw[:, H:2 * H] + h_prev @ rd[H:2 * H].T + rb[H:2 * H]))
            if lbr:
                hh = g(clip(xw[:, 2 * H:] + rr * (h_prev @ rd[2 * H:].T + rb[2 * H:])))
            else:
                hh = g(clip(xw[:, 2 * H:] + (rr * h_prev) @ rd[2 * H:].T + rb[2 * H:]))
            h = (1 - z) * hh + z * h_prev
            return h, [h]
        out, (h,) = _run(seq, lens, direction == "reverse", step, [h0[d]])
        ys.append(np.stack(out))
        hs.append(h)
    return _finish(attrs, x, ys, [hs])


@register_op("LSTM", attrs=dict(_RNN_COMMON, input_forget=("int", 0)), inputs=(3, 8), outputs=(0, 3),
             since_version=1, infer=_rnn_infer("LSTM", 2))
def lstm(attrs: dict[str, Any], x: Operand, w: Operand, r: Operand, b: Operand = None, seq_lens: Operand = None,
         initial_h: Operand = None, initial_c: Operand = None, p: Operand = None) -> Result:
    """LSTM with gates i, o, f, c, optional peepholes P (i, o, f) and coupled
    input-forget gate; float types. Returns Y, Y_h and Y_c."""
    dirs, work, xs, seq, batch, hidden, b, lens, (h0, c0) = _prepare("LSTM", attrs, x, w, r, b, seq_lens,
                                                                      [initial_h, initial_c], 4, 2)
    acts = _activations("LSTM", attrs, ["Sigmoid", "Tanh", "Tanh"], len(dirs))
    clip = _clip(attrs)
    H = hidden
    ys, hs, cs = [], [], []
    for d, direction in enumerate(dirs):
        wd, rd = w[d].astype(work), r[d].astype(work)
        bias = b[d, :4 * H] + b[d, 4 * H:]
        pd = np.zeros(3 * H, work) if p is None else p[d].astype(work)
        f, g, h_act = acts[d]

        def step(t, st, wd=wd, rd=rd, bias=bias, pd=pd, f=f, g=g, h_act=h_act):
            h_prev, c_prev = st
            gates = xs[t] @ wd.T + h_prev @ rd.T + bias
            i = f(clip(gates[:, :H] + pd[:H] * c_prev))
            if attrs["input_forget"]:
                fg = 1 - i
            else:
                fg = f(clip(gates[:, 2 * H:3 * H] + pd[2 * H:] * c_prev))
            cc = g(clip(gates[:, 3 * H:]))
            c = fg * c_prev + i * cc
            o = f(clip(gates[:, H:2 * H] + pd[H:2 * H] * c))
            h = o * h_act(c)
            return h, [h, c]
        out, (h, c) = _run(seq, lens, direction == "reverse", step, [h0[d], c0[d]])
        ys.append(np.stack(out))
        hs.append(h)
        cs.append(c)
    return _finish(attrs, x, ys, [hs, cs])


