"""tilecore/ir/ops/indexing.py — gathers, scatters and data-dependent selections:
Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, TensorScatter,
Compress, NonZero, TopK, Unique, ReverseSequence.

Indices may be negative (counted from the end of their axis) wherever ONNX allows;
an index outside its axis is an OpError. Ops whose output length depends on input
values (Compress, NonZero, Unique, TopK's K) infer it from a known constant input and
leave the dim None otherwise.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._util import INT64, fail, ints_value, is_int, tensor
from .registry import Operand, Result, TensorInfo, register_op

_FOLD_LIMIT = 64
_REDUCTIONS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _norm_indices(op, indices, dim):
    idx = np.asarray(indices).astype(np.int64)
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        raise fail(op, f"an index ({int(idx.min())}..{int(idx.max())}) is outside an axis of length {dim}")
    return np.where(idx < 0, idx + dim, idx)


def _axis(op, ax, rank):
    if not -rank <= ax < rank:
        raise fail(op, f"axis {ax} is out of range for rank {rank}")
    return ax % rank


# ---------------------------------------------------------------------------------------------- gathers


def _gather_infer(attrs, inputs):
    data, idx = inputs
    if data.shape is None or idx.shape is None:
        return [tensor(None, data.dtype)]
    ax = _axis("Gather", attrs["axis"], len(data.shape))
    out = tensor(data.shape[:ax] + tuple(idx.shape) + data.shape[ax + 1:], data.dtype)
    if data.value is not None and idx.value is not None and out.is_static \
            and int(np.prod(out.shape)) <= _FOLD_LIMIT:
        out = TensorInfo(out.shape, out.dtype, gather(attrs, data.value, idx.value))
    return [out]


@register_op("Gather", attrs={"axis": ("int", 0)}, inputs=(2, 2), since_version=1, infer=_gather_infer)
def gather(attrs: dict[str, Any], data: Operand, indices: Operand) -> Result:
    """Slices of data along `axis` picked by int32/int64 indices (negative from the
    end): out shape data[:axis] + indices + data[axis+1:]; any data dtype."""
    ax = _axis("Gather", attrs["axis"], data.ndim)
    return np.take(data, _norm_indices("Gather", indices, data.shape[ax]), axis=ax)


def _gather_elements_infer(attrs, inputs):
    data, idx = inputs
    if data.shape is not None and idx.shape is not None and len(data.shape) != len(idx.shape):
        raise fail("GatherElements", f"indices {idx.shape} must have the rank of data {data.shape}")
    return [tensor(idx.shape, data.dtype)]


@register_op("GatherElements", attrs={"axis": ("int", 0)}, inputs=(2, 2), since_version=11,
             infer=_gather_elements_infer)
def gather_elements(attrs: dict[str, Any], data: Operand, indices: Operand) -> Result:
    """out[i][j][k] = data[indices[i][j][k]][j][k] (for axis 0), indices of the rank
    of data; any data dtype."""
    ax = _axis("GatherElements", attrs["axis"], data.ndim)
    return np.take_along_axis(data, _norm_indices("GatherElements", indices, data.shape[ax]), axis=ax)


def _gather_nd_infer(attrs, inputs):
    data, idx = inputs
    b = attrs["batch_dims"]
    if data.shape is None or idx.shape is None or not is_int(idx.shape[-1]):
        return [tensor(None, data.dtype)]
    k = int(idx.shape[-1])
    if b + k > len(data.shape):
        raise fail("GatherND", f"indices of depth {k} with batch_dims {b} exceed data rank {len(data.shape)}")
    return [tensor(tuple(idx.shape[:-1]) + tuple(data.shape[b + k:]), data.dtype)]


@register_op("GatherND", attrs={"batch_dims": ("int", 0)}, inputs=(2, 2), since_version=11, infer=_gather_nd_infer)
def gather_nd(attrs: dict[str, Any], data: Operand, indices: Operand) -> Result:
    """Slices of data addressed by the last dim of int64 `indices` (k leading coords
    after batch_dims shared batch dims); out shape indices[:-1] + data[b+k:]."""
    b = attrs["batch_dims"]
    k = indices.shape[-1]
    batch = data.shape[:b]
    nb = int(np.prod(batch, dtype=np.int64))
    d = data.reshape((nb,) + data.shape[b:])
    idx = indices.reshape((nb, -1, k)).astype(np.int64)
    for j in range(k):
        idx[..., j] = _norm_indices("GatherND", idx[..., j], d.shape[1 + j])
    out = np.stack([d[i][tuple(idx[i].T)] for i in range(nb)]) if nb else \
        np.zeros((0, idx.shape[1]) + data.shape[b + k:], data.dtype)
    return out.reshape(indices.shape[:-1] + data.shape[b + k:])


# ---------------------------------------------------------------------------------------------- scatters


def _scatter_infer(attrs, inputs):
    data = inputs[0]
    return [tensor(data.shape, data.dtype)]


def _scatter_elements(op, data, indices, updates, ax, reduction):
    ax = _axis(op, ax, data.ndim)
    if indices.shape != updates.shape:
        raise fail(op, f"indices {indices.shape} and updates {updates.shape} differ in shape")
    idx = _norm_indices(op, indices, data.shape[ax])
    grid = list(np.indices(idx.shape, sparse=True))
    grid[ax] = idx
    out = data.copy()
    if reduction == "none":
        out[tuple(grid)] = updates
    elif reduction in _REDUCTIONS:
        _REDUCTIONS[reduction].at(out, tuple(np.broadcast_arrays(*grid)), updates)
    else:
        raise fail(op, f"reduction '{reduction}' is not one of none, add, mul, max, min")
    return out


@register_op("ScatterElements", attrs={"axis": ("int", 0), "reduction": ("string", "none")}, inputs=(3, 3),
             since_version=11, infer=_scatter_infer)
def scatter_elements(attrs: dict[str, Any], data: Operand, indices: Operand, updates: Operand) -> Result:
    """A copy of data with data[indices[i][j]][j] (axis 0) set to (or reduced with,
    opset 16/18: add, mul, max, min) updates[i][j]; any data dtype."""
    return _scatter_elements("ScatterElements", data, indices, updates, attrs["axis"], attrs["reduction"])


@register_op("Scatter", attrs={"axis": ("int", 0)}, inputs=(3, 3), since_version=9, infer=_scatter_infer)
def scatter(attrs: dict[str, Any], data: Operand, indices: Operand, updates: Operand) -> Result:
    """The deprecated name of ScatterElements without reduction."""
    return _scatter_elements("Scatter", data, indices, updates, attrs["axis"], "none")


@register_op("ScatterND", attrs={"reduction": ("string", "none")}, inputs=(3, 3), since_version=11,
             infer=_scatter_infer)
def scatter_nd(attrs: dict[str, Any], data: Operand, indices: Operand, updates: Operand) -> Result:
    """A copy of data with the slices addressed by the last dim of int64 indices set
    to (or reduced with: add, mul, max, min) updates; later indices win."""
    k = indices.shape[-1]
    want = indices.shape[:-1] + data.shape[k:]
    if updates.shape != want:
        raise fail("ScatterND", f"updates have shape {updates.shape}, expected {want}")
    idx = indices.reshape(-1, k).astype(np.int64)
    for j in range(k):
        idx[:, j] = _norm_indices("ScatterND", idx[:, j], data.shape[j])
    upd = updates.reshape((idx.shape[0],) + data.shape[k:])
    out = data.copy()
    red = attrs["reduction"]
    if red == "none":
        # later indices win: each position keeps its last update (numpy leaves the order of a
        # repeated index's writes open, so the repeats are dropped first)
        lin = np.ravel_multi_index(tuple(idx.T), data.shape[:k])
        _, last = np.unique(lin[::-1], return_index=True)
        keep = idx.shape[0] - 1 - last
        out[tuple(idx[keep].T)] = upd[keep]
    elif red in _REDUCTIONS:
        _REDUCTIONS[red].at(out, tuple(idx.T), upd)
    else:
        raise fail("ScatterND", f"reduction '{red}' is not one of none, add, mul, max, min")
    return out


@register_op("TensorScatter", attrs={"axis": ("int", -2), "mode": ("string", "linear")}, inputs=(2, 3),
             since_version=24, infer=_scatter_infer)
def tensor_scatter(attrs: dict[str, Any], past: Operand, update: Operand, write_indices: Operand = None) -> Result:
    """A KV-cache write: update's rows along `axis` written into a copy of past_cache
    from write_indices[batch] on (wrapping around in 'circular' mode)."""
    mode = attrs["mode"]
    if mode not in ("linear", "circular"):
        raise fail("TensorScatter", f"mode '{mode}' is not one of linear, circular")
    ax = _axis("TensorScatter", attrs["axis"], past.ndim)
    if ax == 0:
        raise fail("TensorScatter", "axis cannot be the batch axis 0")
    for i in range(past.ndim):
        if i != ax and past.shape[i] != update.shape[i] or i == ax and update.shape[i] > past.shape[i]:
            raise fail("TensorScatter", f"update {update.shape} does not fit past_cache {past.shape} on dim {i}")
    n = past.shape[0]
    starts = np.zeros(n, np.int64) if write_indices is None else np.asarray(write_indices, np.int64).reshape(n)
    length, cap = update.shape[ax], past.shape[ax]
    pos = starts[:, None] + np.arange(length)[None, :]
    if mode == "circular":
        pos %= cap
    elif pos.size and pos.max() >= cap:
        raise fail("TensorScatter", f"writing {length} rows from {int(starts.max())} overruns length {cap}")
    out = past.copy()
    moved_out = np.moveaxis(out, ax, 1)
    moved_up = np.moveaxis(update, ax, 1)
    for b in range(n):
        moved_out[b, pos[b]] = moved_up[b]
    return out


# ---------------------------------------------------------------------------------------------- selections


def _compress_infer(attrs, inputs):
    x, cond = inputs
    cv = cond.value
    ax = attrs.get("axis")
    if x.shape is None:
        return [tensor(None, x.dtype)]
    count = None
    if cv is not None:
        if ax is None:
            dim = int(np.prod(x.shape)) if x.is_static else None
        else:
            dim = x.shape[_axis("Compress", ax, len(x.shape))]
        c = np.asarray(cv).astype(bool).reshape(-1)
        count = int(c[:dim].sum()) if is_int(dim) else None
    if ax is None:
        return [tensor((count,), x.dtype)]
    ax = _axis("Compress", ax, len(x.shape))
    return [tensor(x.shape[:ax] + (count,) + x.shape[ax + 1:], x.dtype)]


@register_op("Compress", attrs={"axis": ("int", None)}, inputs=(2, 2), since_version=9, infer=_compress_infer)
def compress(attrs: dict[str, Any], x: Operand, condition: Operand) -> Result:
    """The slices of X along `axis` (X flattened when none) where the bool condition
    holds; a shorter condition leaves the rest out. Any dtype."""
    c = np.asarray(condition).astype(bool).reshape(-1)
    ax = attrs.get("axis")
    if ax is None:
        flat = x.reshape(-1)
        if c.size > flat.size:
            raise fail("Compress", f"condition of length {c.size} is longer than the {flat.size} elements")
        return flat[:c.size][c]
    ax = _axis("Compress", ax, x.ndim)
    if c.size > x.shape[ax]:
        raise fail("Compress", f"condition of length {c.size} is longer than axis {ax} ({x.shape[ax]})")
    return np.compress(c, x, axis=ax)


def _nonzero_infer(attrs, inputs):
    x = inputs[0]
    rank = len(x.shape) if x.shape is not None else None
    n = int(np.count_nonzero(x.value)) if x.value is not None else None
    return [tensor((rank, n), INT64)]


@register_op("NonZero", since_version=9, infer=_nonzero_infer)
def non_zero(attrs: dict[str, Any], x: Operand) -> Result:
    """The int64 coordinates (rank, count) of the non-zero elements, row-major order."""
    return np.asarray(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


def _topk_k(attrs, k_input):
    if attrs.get("_opset", 11) < 10 or attrs.get("k") is not None:
        return attrs["k"]
    return None if k_input is None else int(np.asarray(k_input).reshape(-1)[0])


def _topk_infer(attrs, inputs):
    x = inputs[0]
    k = _topk_k(attrs, ints_value(inputs[1]) if len(inputs) > 1 else None)
    if x.shape is None:
        return [tensor(None, x.dtype), tensor(None, INT64)]
    ax = _axis("TopK", attrs["axis"], len(x.shape))
    if k is not None and is_int(x.shape[ax]) and not 0 <= k <= x.shape[ax]:
        raise fail("TopK", f"k={k} is outside [0, {x.shape[ax]}] (axis {ax})")
    shape = x.shape[:ax] + (k,) + x.shape[ax + 1:]
    return [tensor(shape, x.dtype), tensor(shape, INT64)]


@register_op("TopK", attrs={"axis": ("int", -1), "largest": ("int", 1), "sorted": ("int", 1), "k": ("int", None)},
             inputs=(1, 2), outputs=(2, 2), since_version=1, infer=_topk_infer)
def top_k(attrs: dict[str, Any], x: Operand, k: Operand = None) -> Result:
    """The k largest (or smallest) values along `axis` and their int64 indices; equal
    values keep the lower index first. k is an attribute before opset 10."""
    kk = _topk_k(attrs, k)
    ax = _axis("TopK", attrs["axis"], x.ndim)
    n = x.shape[ax]
    if not 0 <= kk <= n:
        raise fail("TopK", f"k={kk} is outside [0, {n}] (axis {ax})")
    if attrs["largest"]:
        rev = np.flip(x, axis=ax)
        order = np.flip(np.argsort(rev, axis=ax, kind="stable"), axis=ax)
        order = n - 1 - order
    else:
        order = np.argsort(x, axis=ax, kind="stable")
    idx = np.take(order, np.arange(kk), axis=ax)
    return np.take_along_axis(x, idx, axis=ax), idx.astype(np.int64)


def _unique_infer(attrs, inputs):
    x = inputs[0]
    ax = attrs.get("axis")
    n = None
    if x.value is not None:
        n = unique(attrs, x.value)[0].shape
    if ax is None:
        y = (n[0] if n else None,)
        total = int(np.prod(x.shape)) if x.shape is not None and x.is_static else None
    else:
        if x.shape is None:
            y = None
            total = None
        else:
            a = _axis("Unique", ax, len(x.shape))
            y = tuple(x.shape[:a]) + (n[a] if n else None,) + tuple(x.shape[a + 1:])
            total = x.shape[a]
    k = y[0] if ax is None else (None if y is None else y[_axis("Unique", ax, len(x.shape))])
    return [tensor(y, x.dtype), tensor((k,), INT64), tensor((total,), INT64), tensor((k,), INT64)]


@register_op("Unique", attrs={"axis": ("int", None), "sorted": ("int", 1)}, outputs=(1, 4), since_version=11,
             infer=_unique_infer)
def unique(attrs: dict[str, Any], x: Operand) -> Result:
    """The unique elements (or slices along `axis`) of X, sorted or in order of first
    occurrence, with int64 first-occurrence indices, inverse indices and counts."""
    ax = attrs.get("axis")
    if ax is not None:
        ax = _axis("Unique", ax, x.ndim)
    y, first, inverse, counts = np.unique(x if ax is not None else x.reshape(-1), return_index=True,
                                          return_inverse=True, return_counts=True, axis=ax)
    inverse = np.asarray(inverse).reshape(-1)
    if not attrs["sorted"]:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=0 if ax is None else ax)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


def _revseq_infer(attrs, inputs):
    x = inputs[0]
    return [tensor(x.shape, x.dtype)]


@register_op("ReverseSequence", attrs={"batch_axis": ("int", 1), "time_axis": ("int", 0)}, inputs=(2, 2),
             since_version=10, infer=_revseq_infer)
def reverse_sequence(attrs: dict[str, Any], x: Operand, sequence_lens: Operand) -> Result:
    """For each batch entry b, the first sequence_lens[b] (int64) steps along
    time_axis reversed, the rest kept; any dtype."""
    b_ax, t_ax = attrs["batch_axis"], attrs["time_axis"]
    if {b_ax, t_ax} not in ({0, 1},):
        raise fail("ReverseSequence", f"batch_axis {b_ax} and time_axis {t_ax} must be 0 and 1")
    out = x.copy()
    moved = np.moveaxis(out, (b_ax, t_ax), (0, 1))
    src = np.moveaxis(x, (b_ax, t_ax), (0, 1))
    lens = np.asarray(sequence_lens).astype(np.int64).reshape(-1)
    if lens.size != src.shape[0]:
        raise fail("ReverseSequence", f"{lens.size} sequence_lens for a batch of {src.shape[0]}")
    for b, n in enumerate(lens):
        if not 0 <= n <= src.shape[1]:
            raise fail("ReverseSequence", f"sequence_lens[{b}] = {n} is outside [0, {src.shape[1]}]")
        moved[b, :n] = src[b, :n][::-1]
    return out
