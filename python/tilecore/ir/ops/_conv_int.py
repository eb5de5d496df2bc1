"""tilecore/ir/ops/_conv_int.py — the N-d convolution under ConvInteger and QLinearConv.

`conv_nd` accumulates in the dtype of its (already zero-point-shifted) inputs, int64
for the quantised ops; `conv_output_shape` is the matching shape rule (with
`auto_pad`), shared by reference and inference.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from .registry import OpError


def conv_pads(attrs: dict, in_sizes: Sequence[int], kernel: Sequence[int], where: str) -> List[int]:
    """Begin and end pads (ONNX order: every begin, then every end) of a convolution."""
    nd = len(kernel)
    strides = list(attrs.get("strides") or [1] * nd)
    dil = list(attrs.get("dilations") or [1] * nd)
    mode = attrs.get("auto_pad") or "NOTSET"
    if mode == "NOTSET":
        pads = list(attrs.get("pads") or [0] * (2 * nd))
        if len(pads) != 2 * nd:
            raise OpError(f"{where}: pads needs {2 * nd} values, got {pads}")
        return pads
    if mode == "VALID":
        return [0] * (2 * nd)
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise OpError(f"{where}: auto_pad {mode!r} is not NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    begins, ends = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dil):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return begins + ends


def conv_output_shape(attrs: dict, x_shape: Sequence, w_shape: Sequence, where: str) -> Tuple:
    """(N, M, out...) of a convolution; None for dimensions that are not static."""
    nd = len(x_shape) - 2
    kernel = list(attrs.get("kernel_shape") or w_shape[2:])
    if any(not isinstance(k, (int, np.integer)) for k in kernel):
        return (x_shape[0], w_shape[0]) + (None,) * nd
    strides = list(attrs.get("strides") or [1] * nd)
    dil = list(attrs.get("dilations") or [1] * nd)
    spatial = list(x_shape[2:])
    if any(not isinstance(d, (int, np.integer)) for d in spatial):
        return (x_shape[0], w_shape[0]) + (None,) * nd
    pads = conv_pads(attrs, spatial, kernel, where)
    out = []
    for i in range(nd):
        eff = (kernel[i] - 1) * dil[i] + 1
        size = (spatial[i] + pads[i] + pads[i + nd] - eff) // strides[i] + 1
        if size < 1:
            raise OpError(f"{where}: kernel {kernel} does not fit input {tuple(x_shape)} with pads {pads}")
        out.append(int(size))
    return (x_shape[0], w_shape[0]) + tuple(out)


def conv_nd(attrs: dict, x: np.ndarray, w: np.ndarray, where: str) -> np.ndarray:
    """Cross-correlation of x (N, C, ...) with w (M, C/group, ...), with ONNX's pads, strides,
    dilations and group."""
    nd = x.ndim - 2
    group = int(attrs.get("group") or 1)
    n, c = x.shape[:2]
    m = w.shape[0]
    if c % group or m % group or w.shape[1] != c // group:
        raise OpError(f"{where}: input channels {c} and weight {w.shape} do not fit group={group}")
    kernel = list(w.shape[2:])
    strides = list(attrs.get("strides") or [1] * nd)
    dil = list(attrs.get("dilations") or [1] * nd)
    pads = conv_pads(attrs, x.shape[2:], kernel, where)
    out_shape = conv_output_shape(attrs, x.shape, w.shape, where)[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)])
    y = np.zeros((n, m) + tuple(out_shape), dtype=np.result_type(x, w))
    cg, mg = c // group, m // group
    for offset in np.ndindex(*kernel):
        sl = tuple(slice(o * d, o * d + s * (size - 1) + 1, s)
                   for o, d, s, size in zip(offset, dil, strides, out_shape))
        window = xp[(slice(None), slice(None)) + sl]
        for g in range(group):
            wk = w[(slice(g * mg, (g + 1) * mg), slice(None)) + tuple(offset)]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", window[:, g * cg:(g + 1) * cg], wk)
    return y
