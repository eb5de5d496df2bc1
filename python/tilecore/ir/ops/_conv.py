"""tilecore/ir/ops/_conv.py — the numpy convolution reference (im2col + GEMM).

This is the exact reference the NPU convolution strategies are compared with, so it
is written for clarity: one padded input, one gather of patches per kernel offset
(im2col), one matrix product per group.

Layout: x is (N, C, *spatial) with 1 to 3 (or more) spatial dims, w is
(M, C / group, *kernel). `pads` is ONNX's (begin_0, ..., begin_k, end_0, ..., end_k).

Precision: float16/bfloat16 inputs are accumulated in float32 and the result cast
back, float32 in float32 (BLAS, as ONNX Runtime), float64 in float64; integer inputs
accumulate in int64 (callers cast). This matches the ONNX node tests' expected values
within their tolerances.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np


def accum_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a convolution of `dtype` inputs accumulates in."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iub":
        return np.dtype(np.int64)
    if dtype == np.float64:
        return dtype
    return np.dtype(np.float32)


def resolve_pads(auto_pad: str, in_sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int], pads: Optional[Sequence[int]]) -> List[int]:
    """Explicit (begin..., end...) pads for `auto_pad` (NOTSET keeps `pads`).

    SAME_UPPER/SAME_LOWER pad so that out = ceil(in / stride), the odd element of the
    total going at the end (UPPER) or the beginning (LOWER); VALID pads nothing."""
    n = len(in_sizes)
    if auto_pad in ("", "NOTSET"):
        return list(pads) if pads else [0] * (2 * n)
    if auto_pad == "VALID":
        return [0] * (2 * n)
    begins, ends = [], []
    for i in range(n):
        out = -(-in_sizes[i] // strides[i])
        eff = (kernel[i] - 1) * dilations[i] + 1
        total = max(0, (out - 1) * strides[i] + eff - in_sizes[i])
        small = total // 2
        if auto_pad == "SAME_UPPER":
            begins.append(small)
            ends.append(total - small)
        else:
            begins.append(total - small)
            ends.append(small)
    return begins + ends


def out_size(size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int,
             ceil_mode: bool = False) -> int:
    """Output length of a sliding window: floor (or ceil) of
    (size + pads - effective kernel) / stride, plus one. With ceil_mode a last window
    that would start inside the end padding is dropped (ONNX/PyTorch rule)."""
    eff = (kernel - 1) * dilation + 1
    span = size + pad_begin + pad_end - eff
    if ceil_mode:
        out = -(-span // stride) + 1
        if (out - 1) * stride >= size + pad_begin:
            out -= 1
    else:
        out = span // stride + 1
    return out


def im2col(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
           out_sizes: Sequence[int]) -> np.ndarray:
    """Patches of an already padded x (N, C, *spatial): (N, C, *kernel, *out), copied in one
    pass from a strided view of x (patch element (k, o) of a spatial axis is x's element
    k * dilation + o * stride)."""
    n, c = x.shape[:2]
    spatial = x.strides[2:]
    view = np.lib.stride_tricks.as_strided(
        x, (n, c, *kernel, *out_sizes),
        x.strides[:2] + tuple(t * d for t, d in zip(spatial, dilations)) + tuple(t * s for t, s in zip(spatial, strides)),
        writeable=False)
    return np.ascontiguousarray(view)


def pad_spatial(x: np.ndarray, pads: Sequence[int], value: float = 0) -> np.ndarray:
    """x with its spatial dims padded by (begin..., end...) (negative pads crop)."""
    k = x.ndim - 2
    begins, ends = list(pads[:k]), list(pads[k:])
    crop = tuple(slice(max(0, -b), x.shape[2 + i] - max(0, -e)) for i, (b, e) in enumerate(zip(begins, ends)))
    x = x[(slice(None), slice(None)) + crop]
    widths = [(0, 0), (0, 0)] + [(max(0, b), max(0, e)) for b, e in zip(begins, ends)]
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths, mode="constant", constant_values=value)
    return x


def conv_nd(x: np.ndarray, w: np.ndarray, b: Optional[np.ndarray] = None, *, strides: Sequence[int],
            dilations: Sequence[int], pads: Sequence[int], group: int = 1,
            out_dtype: Optional[np.dtype] = None) -> np.ndarray:
    """ONNX Conv: y[n, m] = b[m] + sum over c in m's group and kernel offsets of
    x_padded[n, c, o*s + k*d] * w[m, c, k]. Returns (N, M, *out) in `out_dtype`
    (default x.dtype)."""
    acc = accum_dtype(x.dtype)
    k = x.ndim - 2
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    kernel = w.shape[2:]
    outs = tuple(out_size(x.shape[2 + i], kernel[i], strides[i], dilations[i], pads[i], pads[k + i])
                 for i in range(k))
    if group == c == m and cg == 1 and group > 1:
        xp = pad_spatial(x.astype(acc, copy=False), pads)
        y = _depthwise(xp, w.astype(acc, copy=False), strides, dilations, outs)
    else:
        cols = _patches(x.astype(acc, copy=False), kernel, strides, dilations, pads, outs)  # (N, C, *kernel, *out)
        patch = cg * int(np.prod(kernel, dtype=np.int64))
        positions = int(np.prod(outs, dtype=np.int64))
        cols = cols.reshape(n, group, patch, positions)                # channels are group-major
        wg = w.astype(acc, copy=False).reshape(group, m // group, patch)
        y = np.matmul(wg[None], cols)                                  # (N, group, M/group, P)
        y = y.reshape(n, m, *outs)
    if b is not None:  # (in place: y is the product's own array, and a fresh one costs its pages)
        y += b.astype(acc, copy=False).reshape((1, m) + (1,) * k)
    return y.astype(out_dtype or x.dtype, copy=False)


def _patches(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
             pads: Sequence[int], outs: Sequence[int]) -> np.ndarray:
    """The patches of x padded by ``pads``: (N, C, *kernel, *outs). A 1x1 window at every
    position is x itself; a 2-D float32 x with leading pads of 0 or more is copied in C++
    (ir.ReferenceIm2col2d: the padding written as zeros, where numpy made a padded copy of x
    first); others are im2col of pad_spatial."""
    k = x.ndim - 2
    unit = all(kk == 1 for kk in kernel) and all(st == 1 for st in strides) and not any(pads)
    if (not unit and k == 2 and x.dtype == np.float32 and x.size and all(o > 0 for o in outs)
            and min(pads[:2]) >= 0 and min(strides) >= 1 and min(dilations) >= 1):
        from .. import _ffi_api
        from ..graph import to_ffi_array

        cols = np.empty((*x.shape[:2], *kernel, *outs), np.float32)
        _ffi_api.ReferenceIm2col2d(to_ffi_array(np.ascontiguousarray(x)), to_ffi_array(cols),
                                   [int(s) for s in strides], [int(d) for d in dilations], [int(p) for p in pads[:2]])
        return cols
    xp = pad_spatial(x, pads)
    if all(kk == 1 for kk in kernel) and all(st == 1 for st in strides) and tuple(outs) == xp.shape[2:]:
        return np.ascontiguousarray(xp)  # a 1x1 window at every position: the patches are x itself
    return im2col(xp, kernel, strides, dilations, outs)


def _depthwise(xp: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int],
               outs: Sequence[int]) -> np.ndarray:
    """A depthwise Conv (one input channel per output channel) of an already padded xp:
    each kernel offset's window times its per-channel weight, accumulated in offset order.
    A 2-D one of float32 runs in C++ (ir.ReferenceDepthwise2d: the same sums, bit for bit,
    a channel's kept in cache over every offset); the others as _depthwise_numpy."""
    if (xp.dtype == np.float32 and w.dtype == np.float32 and xp.ndim == 4 and xp.size and all(o > 0 for o in outs)
            and all(s >= 1 for s in strides) and all(d >= 1 for d in dilations)):
        from .. import _ffi_api
        from ..graph import to_ffi_array

        y = np.empty((xp.shape[0], xp.shape[1], *outs), np.float32)
        _ffi_api.ReferenceDepthwise2d(to_ffi_array(xp), to_ffi_array(w), to_ffi_array(y),
                                      [int(s) for s in strides], [int(d) for d in dilations])
        return y
    return _depthwise_numpy(xp, w, strides, dilations, outs)


def _depthwise_numpy(xp: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int],
                     outs: Sequence[int]) -> np.ndarray:
    """_depthwise in numpy: each kernel offset a product and a sum over the whole map.
    (As one matmul per channel it is a batch of (1 x K) @ (K x P) products, which BLAS runs
    at a small fraction of its speed: ConvNeXt's 7x7 depthwise Convs took seconds.)"""
    if all(s == 1 for s in strides) and xp.ndim > 2:
        return _depthwise_flat(xp, w, dilations, outs)
    n, c = xp.shape[:2]
    y = np.zeros((n, c, *outs), dtype=xp.dtype)
    if y.size == 0:
        return y
    term = np.empty_like(y)
    lead = (slice(None), slice(None))
    for offset in np.ndindex(*w.shape[2:]):
        window = tuple(slice(k * d, k * d + (o - 1) * s + 1, s) for k, d, s, o in zip(offset, dilations, strides, outs))
        np.multiply(xp[lead + window], w[lead + offset].reshape((1, c) + (1,) * len(outs)), out=term)
        y += term
    return y


def _depthwise_flat(xp: np.ndarray, w: np.ndarray, dilations: Sequence[int], outs: Sequence[int]) -> np.ndarray:
    """_depthwise with unit strides, the same products summed in the same order (so the
    same bits), over the padded input's flattened positions: a kernel offset's window is
    then one contiguous run of it shifted by the offset, where the strided window of each
    output row was a loop of short rows (7 elements in ConvNeXt's last stage). The sums are
    made at every padded position from the first output's to the last's and the outputs
    read out of them. Channels go innermost when they outnumber a channel's run of positions."""
    n, c = xp.shape[:2]
    spatial = xp.shape[2:]
    if n * c == 0 or any(o <= 0 for o in outs):
        return np.zeros((n, c, *outs), dtype=xp.dtype)
    step = [int(np.prod(spatial[i + 1:], dtype=np.int64)) for i in range(len(spatial))]  # (in elements)
    span = sum((o - 1) * t for o, t in zip(outs, step)) + 1
    shifts = [sum(k * d * t for k, d, t in zip(offset, dilations, step)) for offset in np.ndindex(*w.shape[2:])]
    weights = w.reshape(c, -1)
    channels_last = span < 8 * c
    if channels_last:
        flat = np.ascontiguousarray(xp.reshape(n, c, -1).transpose(0, 2, 1))  # (N, positions, C)
        weights = np.ascontiguousarray(weights.T)                              # (offsets, C)
        sums = np.zeros((n, span, c), dtype=xp.dtype)
    else:
        flat = np.ascontiguousarray(xp).reshape(n, c, -1)                      # (N, C, positions)
        weights = weights.T.reshape(-1, 1, c, 1)                               # (offsets, 1, C, 1)
        sums = np.zeros((n, c, span), dtype=xp.dtype)
    term = np.empty_like(sums)
    for j, shift in enumerate(shifts):
        window = flat[:, shift:shift + span] if channels_last else flat[:, :, shift:shift + span]
        np.multiply(window, weights[j], out=term)
        sums += term
    size = sums.itemsize
    outer = (sums.strides[0], size) if channels_last else sums.strides[:2]
    inner = tuple(t * size * (c if channels_last else 1) for t in step)
    return np.lib.stride_tricks.as_strided(sums, (n, c, *outs), outer + inner, writeable=False).copy()  # (writeable)


def conv_transpose_nd(x: np.ndarray, w: np.ndarray, b: Optional[np.ndarray] = None, *,
                      strides: Sequence[int], dilations: Sequence[int], pads: Sequence[int],
                      group: int = 1) -> np.ndarray:
    """ONNX ConvTranspose (the adjoint of conv_nd): every input pixel scatters
    x[n, c, i] * w[c, m, k] to output position i*s + k*d - pad_begin. `pads` may hold
    negative ends (extra zero rows, as an explicit output_shape asks); output
    padding is expressed the same way by the caller."""
    acc = accum_dtype(x.dtype)
    k = x.ndim - 2
    n, c = x.shape[:2]
    mg = w.shape[1]
    kernel = w.shape[2:]
    m = mg * group
    ins = x.shape[2:]
    full = tuple((ins[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 for i in range(k))
    cg = c // group
    xg = x.astype(acc, copy=False).reshape(n, group, cg, -1)                     # (N, G, C/G, P)
    wg = w.astype(acc, copy=False).reshape(group, cg, mg * int(np.prod(kernel, dtype=np.int64)))
    cols = np.matmul(np.swapaxes(wg, 1, 2)[None], xg)                           # (N, G, M/G*K, P)
    cols = cols.reshape(n, m, *kernel, *ins)
    y = np.zeros((n, m) + full, dtype=acc)
    for offset in np.ndindex(*kernel):
        window = tuple(slice(o * d, o * d + (i - 1) * s + 1, s)
                       for o, d, s, i in zip(offset, dilations, strides, ins))
        y[(slice(None), slice(None)) + window] += cols[(slice(None), slice(None)) + offset]
    y = pad_spatial(y, [-p for p in pads])
    if b is not None:
        y = y + b.astype(acc, copy=False).reshape((1, m) + (1,) * k)
    return y.astype(x.dtype, copy=False)


def conv_transpose_pads(auto_pad: str, in_sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                        dilations: Sequence[int], pads: Optional[Sequence[int]],
                        output_padding: Sequence[int], output_shape: Optional[Sequence[int]]
                        ) -> Tuple[List[int], List[int]]:
    """(pads, output sizes) of a ConvTranspose: an explicit output_shape (or
    SAME_* auto_pad, which asks for in * stride) fixes the total padding, split
    as ONNX says (SAME_UPPER puts the odd element at the end); else the given pads
    and output_padding decide. The returned pads fold output_padding in as a
    negative end pad."""
    k = len(in_sizes)
    full = [(in_sizes[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 for i in range(k)]
    if output_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [in_sizes[i] * strides[i] for i in range(k)]
    if output_shape is not None:
        begins, ends = [], []
        for i in range(k):
            total = full[i] + output_padding[i] - output_shape[i]
            if auto_pad == "SAME_UPPER":
                begins.append(total // 2)
                ends.append(total - total // 2)
            else:
                begins.append(total - total // 2)
                ends.append(total // 2)
        ends = [e - op for e, op in zip(ends, output_padding)]
        return begins + ends, list(output_shape)
    if auto_pad == "VALID" or not pads:
        pads = [0] * (2 * k)
    begins, ends = list(pads[:k]), [pads[k + i] - output_padding[i] for i in range(k)]
    outs = [full[i] - begins[i] - ends[i] for i in range(k)]
    return begins + ends, outs


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


__all__ = ["accum_dtype", "resolve_pads", "out_size", "im2col", "pad_spatial", "conv_nd",
           "conv_transpose_nd", "conv_transpose_pads", "ceil_div"]
