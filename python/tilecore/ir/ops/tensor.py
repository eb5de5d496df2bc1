"""tilecore/ir/ops/tensor.py — shape and layout ops: Concat, Split, Slice, Pad,
Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand, Tile, Trilu, OneHot, Range,
ConstantOfShape, Constant, Shape, Size, Identity.

Shape inference is written out per op and keeps symbolic dims where the op leaves
them alone; where the output shape depends on an input's value (Reshape's shape,
Slice's starts/ends, Pad's pads, ...) the value is used when it is a known constant
and the dims become None otherwise. Small integer results of shape arithmetic
(Shape → Gather → Concat → Reshape chains) also carry their value, so an importer
can fold them.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ._util import (INT64, dim_add, dim_mul, dims_prod, fail, ints_of, ints_value, is_int, seq_elem, seq_length,
                    tensor)
from .infer import broadcast_shapes
from .registry import Operand, Result, SequenceInfo, TensorInfo, register_op

#: Largest integer result whose value inference carries along (shape arithmetic).
_FOLD_LIMIT = 64


def _with_value(info, reference, attrs, inputs):
    """`info` with its value when every input is a known constant and the result is
    a small integer tensor (the shape arithmetic exporters emit)."""
    if info.dtype.kind not in "iu" or not info.is_static or int(np.prod(info.shape)) > _FOLD_LIMIT:
        return info
    args = []
    for x in inputs:
        if x is None:
            args.append(None)
        elif isinstance(x, TensorInfo) and x.value is not None:
            args.append(np.asarray(x.value))
        else:
            return info
    out = reference(attrs, *args)
    out = out[0] if isinstance(out, tuple) else out
    return TensorInfo(info.shape, info.dtype, np.asarray(out))


def _axes_of(op, attrs, inputs, index, attr="axes"):
    """Axes from the attribute (old opsets) or from input `index` (int list, or None
    when the input is absent, or "unknown" when it is not a constant)."""
    if attrs.get(attr) is not None:
        return list(attrs[attr])
    if len(inputs) > index and inputs[index] is not None:
        got = ints_value(inputs[index])
        return "unknown" if got is None else got
    return None


# ---------------------------------------------------------------------------------------------- Concat


def _concat_infer(attrs, inputs):
    given = [x for x in inputs if x is not None]
    if not given:
        raise fail("Concat", "needs at least one input")
    dtype = given[0].dtype
    if any(x.dtype != dtype for x in given):
        raise fail("Concat", f"inputs mix dtypes {sorted({str(x.dtype) for x in given})}")
    ranked = [x for x in given if x.shape is not None]
    if not ranked:
        return [tensor(None, dtype)]
    rank = len(ranked[0].shape)
    if any(len(x.shape) != rank for x in ranked):
        raise fail("Concat", f"inputs have different ranks: {[x.shape for x in ranked]}")
    ax = attrs["axis"]
    if not -rank <= ax < rank:
        raise fail("Concat", f"axis {ax} is out of range for rank {rank}")
    ax %= rank
    out = []
    for i in range(rank):
        dims = [x.shape[i] for x in ranked]
        if i == ax:
            total = 0 if len(ranked) == len(given) else None
            for d in dims:
                total = dim_add(total, d)
            out.append(total)
            continue
        static = {int(d) for d in dims if is_int(d)}
        if len(static) > 1:
            raise fail("Concat", f"inputs disagree on dim {i} (outside axis {ax}): {[x.shape for x in ranked]}")
        out.append(static.pop() if static else (dims[0] if all(d == dims[0] for d in dims) else None))
    return [_with_value(tensor(out, dtype), concat, attrs, inputs)]


@register_op("Concat", attrs={"axis": ("int", None)}, inputs=(1, -1), since_version=1, infer=_concat_infer)
def concat(attrs: dict[str, Any], *xs: Operand) -> Result:
    """Joins the inputs (any one dtype, same rank) along `axis` (required from opset 4)."""
    ax = attrs["axis"] if attrs["axis"] is not None else 1
    return np.concatenate([x for x in xs if x is not None], axis=ax)


# ---------------------------------------------------------------------------------------------- Split


def _split_sizes(attrs, dim, split, n_outputs):
    """The part sizes along the axis: `split` when given, else num_outputs (opset 18,
    the last part smaller when `dim` does not divide) or the number of outputs."""
    if split is not None:
        if dim is not None and sum(split) != dim:
            raise fail("Split", f"split {list(split)} does not sum to the axis length {dim}")
        return list(split)
    n = attrs.get("num_outputs") or n_outputs
    if not n:
        raise fail("Split", "needs split, num_outputs or a known number of outputs")
    if dim is None:
        return [None] * n
    if attrs.get("num_outputs") is not None:
        part = -(-dim // n)
        sizes = [part] * (n - 1) + [dim - part * (n - 1)]
        if sizes[-1] < 0:
            raise fail("Split", f"cannot split {dim} into {n} outputs")
        return sizes
    if dim % n:
        raise fail("Split", f"axis length {dim} does not split equally into {n} outputs")
    return [dim // n] * n


def _split_arg(attrs, inputs):
    if attrs.get("split") is not None:
        return list(attrs["split"]), True
    if len(inputs) > 1 and inputs[1] is not None:
        got = ints_value(inputs[1])
        return got, got is not None
    return None, True


def _split_infer(attrs, inputs):
    x = inputs[0]
    split, known = _split_arg(attrs, inputs)
    n_out = attrs.get("_num_outputs")
    if x.shape is None:
        n = len(split) if split else (attrs.get("num_outputs") or n_out or 0)
        return [tensor(None, x.dtype)] * n
    ax = attrs["axis"]
    rank = len(x.shape)
    if not -rank <= ax < rank:
        raise fail("Split", f"axis {ax} is out of range for rank {rank}")
    ax %= rank
    dim = int(x.shape[ax]) if is_int(x.shape[ax]) else None
    if not known:
        n = inputs[1].shape[0] if inputs[1].shape and is_int(inputs[1].shape[0]) else (n_out or 0)
        sizes = [None] * n
    else:
        sizes = _split_sizes(attrs, dim, split, n_out)
    return [tensor(x.shape[:ax] + (s,) + x.shape[ax + 1:], x.dtype) for s in sizes]


@register_op("Split", attrs={"axis": ("int", 0), "split": ("ints", None), "num_outputs": ("int", None)},
             inputs=(1, 2), outputs=(1, -1), since_version=1, infer=_split_infer)
def split(attrs: dict[str, Any], x: Operand, split_in: Operand = None) -> Result:
    """Splits X along `axis` into parts of the sizes `split` (attribute before opset
    13, int64 input from 13) or into num_outputs parts (opset 18); any dtype. Equal
    parts without num_outputs need the node's output count as attrs["_num_outputs"]."""
    split_sizes = list(attrs["split"]) if attrs.get("split") is not None else (
        None if split_in is None else ints_of(split_in))
    ax = attrs["axis"] % x.ndim
    sizes = _split_sizes(attrs, x.shape[ax], split_sizes, attrs.get("_num_outputs"))
    offsets = np.cumsum([0] + sizes)
    index = [slice(None)] * x.ndim
    parts = []
    for a, b in zip(offsets[:-1], offsets[1:]):
        index[ax] = slice(int(a), int(b))
        parts.append(x[tuple(index)].copy())
    return tuple(parts)


# ---------------------------------------------------------------------------------------------- Slice


def _slice_params(op, rank, starts, ends, axes, steps):
    if len(starts) != len(ends):
        raise fail(op, f"starts {starts} and ends {ends} differ in length")
    axes = list(range(len(starts))) if axes is None else ints_of(axes)
    steps = [1] * len(starts) if steps is None else ints_of(steps)
    if len(axes) != len(starts) or len(steps) != len(starts):
        raise fail(op, f"axes {axes} / steps {steps} do not match starts {starts}")
    norm = []
    for a in axes:
        if not -rank <= a < rank:
            raise fail(op, f"axis {a} is out of range for rank {rank}")
        norm.append(a % rank)
    if len(set(norm)) != len(norm):
        raise fail(op, f"axes {axes} repeat an axis")
    if any(s == 0 for s in steps):
        raise fail(op, "a step is 0")
    return norm, steps


def _slice_range(dim, start, end, step):
    """(first index, count) of slicing a dim of length `dim` as ONNX clamps it."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
        count = max(0, -(-(end - start) // step))
    else:
        start = min(max(start, 0), dim - 1)
        end = min(max(end, -1), dim - 1)
        count = max(0, -(-(start - end) // -step))
    return start, count


def _slice_inputs(attrs, inputs):
    if attrs.get("_opset", 13) < 10 or attrs.get("starts") is not None:
        return attrs.get("starts"), attrs.get("ends"), attrs.get("axes"), None
    vals = [ints_value(inputs[i]) if len(inputs) > i and inputs[i] is not None else None for i in range(1, 5)]
    return vals[0], vals[1], vals[2], vals[3]


def _slice_infer(attrs, inputs):
    x = inputs[0]
    if x.shape is None:
        return [tensor(None, x.dtype)]
    starts, ends, axes, steps = _slice_inputs(attrs, inputs)
    if starts is None or ends is None or (axes is None and len(inputs) > 3 and inputs[3] is not None) \
            or (steps is None and len(inputs) > 4 and inputs[4] is not None):
        if axes is not None and (len(inputs) <= 4 or inputs[4] is None or steps is not None):
            sliced = {a % len(x.shape) for a in axes}
            return [tensor([None if i in sliced else d for i, d in enumerate(x.shape)], x.dtype)]
        return [tensor([None] * len(x.shape), x.dtype)]
    axes, steps = _slice_params("Slice", len(x.shape), starts, ends, axes, steps)
    out = list(x.shape)
    for a, s, e, st in zip(axes, starts, ends, steps):
        out[a] = _slice_range(int(x.shape[a]), s, e, st)[1] if is_int(x.shape[a]) else None
    return [_with_value(tensor(out, x.dtype), slice_, attrs, inputs)]


@register_op("Slice", attrs={"starts": ("ints", None), "ends": ("ints", None), "axes": ("ints", None)},
             inputs=(1, 5), since_version=1, infer=_slice_infer)
def slice_(attrs: dict[str, Any], x: Operand, starts: Operand = None, ends: Operand = None, axes: Operand = None,
           steps: Operand = None) -> Result:
    """x[starts:ends:steps] on `axes`, indices clamped as ONNX says; starts/ends/axes
    are attributes before opset 10, int32/int64 inputs (with steps) from 10."""
    if attrs.get("_opset", 13) < 10 or attrs.get("starts") is not None:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        starts, ends = ints_of(starts), ints_of(ends)
        axes = None if axes is None else ints_of(axes)
        steps = None if steps is None else ints_of(steps)
    axes, steps = _slice_params("Slice", x.ndim, starts, ends, axes, steps)
    index = [slice(None)] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, steps):
        first, count = _slice_range(x.shape[a], s, e, st)
        last = first + (count - 1) * st
        if count == 0:
            index[a] = slice(0, 0)
        else:
            index[a] = slice(first, None if last + (1 if st > 0 else -1) < 0 else last + (1 if st > 0 else -1), st)
    return x[tuple(index)]


# ---------------------------------------------------------------------------------------------- Pad

_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad_args(attrs, inputs_or_arrays, rank, infer: bool = False):
    """(pads per axis as (begin, end) list, or None if unknown)."""
    if attrs.get("_opset", 11) < 11 or attrs.get("pads") is not None:
        pads = list(attrs["pads"])
        axes = None
    else:
        get = (lambda i: ints_value(inputs_or_arrays[i]) if len(inputs_or_arrays) > i and inputs_or_arrays[i]
               is not None else None) if infer else \
            (lambda i: None if len(inputs_or_arrays) <= i or inputs_or_arrays[i] is None
             else [int(v) for v in np.asarray(inputs_or_arrays[i]).reshape(-1)])
        pads = get(1)
        axes = get(3)
        if pads is None:
            return None
        if axes is None and infer and len(inputs_or_arrays) > 3 and inputs_or_arrays[3] is not None:
            return None  # axes given, but known only when the model runs (not: every axis)
    if axes is None:
        axes = list(range(rank))
    axes = [a % rank if -rank <= a < rank else None for a in axes]
    if None in axes:
        raise fail("Pad", f"axes out of range for rank {rank}")
    if len(pads) != 2 * len(axes):
        raise fail("Pad", f"pads {pads} need 2 values per padded axis ({len(axes)} axes)")
    per_axis = [(0, 0)] * rank
    for i, a in enumerate(axes):
        per_axis[a] = (pads[i], pads[len(axes) + i])
    return per_axis


def _pad_infer(attrs, inputs):
    x = inputs[0]
    if attrs["mode"] not in _PAD_MODES:
        raise fail("Pad", f"mode '{attrs['mode']}' is not one of {', '.join(_PAD_MODES)}")
    if x.shape is None:
        return [tensor(None, x.dtype)]
    per_axis = _pad_args(attrs, inputs, len(x.shape), infer=True)
    if per_axis is None:
        return [tensor([None] * len(x.shape), x.dtype)]
    return [tensor([dim_add(d, b + e) if is_int(d) else (d if b + e == 0 else None)
                    for d, (b, e) in zip(x.shape, per_axis)], x.dtype)]


@register_op("Pad", attrs={"mode": ("string", "constant"), "pads": ("ints", None), "value": ("float", 0.0)},
             inputs=(1, 4), since_version=1, infer=_pad_infer)
def pad(attrs: dict[str, Any], x: Operand, pads: Operand = None, constant_value: Operand = None,
        axes: Operand = None) -> Result:
    """Pads (negative values crop) X by `pads` (begins then ends, on `axes`; an
    attribute before opset 11) with constant_value, or reflect/edge/wrap; any dtype."""
    mode = attrs["mode"]
    if mode not in _PAD_MODES:
        raise fail("Pad", f"mode '{mode}' is not one of {', '.join(_PAD_MODES)}")
    per_axis = _pad_args(attrs, (x, pads, constant_value, axes), x.ndim)
    crop = tuple(slice(max(0, -b), x.shape[i] - max(0, -e)) for i, (b, e) in enumerate(per_axis))
    x = x[crop]
    widths = [(max(0, b), max(0, e)) for b, e in per_axis]
    if mode == "constant":
        if attrs.get("_opset", 11) < 11 or attrs.get("pads") is not None:
            fill = attrs["value"]
        else:
            fill = 0 if constant_value is None or constant_value.size == 0 else constant_value.reshape(-1)[0]
        if x.dtype == object:
            fill = "" if constant_value is None else fill
        return np.pad(x, widths, mode="constant", constant_values=np.asarray(fill).astype(x.dtype))
    if any(w != (0, 0) for w, d in zip(widths, x.shape) if d == 0):
        raise fail("Pad", f"mode '{mode}' cannot pad an empty axis")
    return np.pad(x, widths, mode={"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode])


# ---------------------------------------------------------------------------------------------- Reshape


def _reshape_dims(in_shape, target, allowzero):
    """The output dims of Reshape(in_shape, target); in_shape may hold symbols/None."""
    if sum(1 for t in target if t == -1) > 1:
        raise fail("Reshape", f"shape {list(target)} has more than one -1")
    if allowzero and 0 in target and -1 in target:
        raise fail("Reshape", f"shape {list(target)} mixes 0 and -1 with allowzero")
    out = []
    for i, t in enumerate(target):
        if t == 0 and not allowzero:
            if in_shape is None or i >= len(in_shape):
                if in_shape is None:
                    out.append(None)
                    continue
                raise fail("Reshape", f"shape {list(target)} copies dim {i} that input {in_shape} lacks")
            out.append(in_shape[i])
        elif t < -1:
            raise fail("Reshape", f"shape {list(target)} has an invalid dim {t}")
        else:
            out.append(int(t))
    if -1 not in target:
        if in_shape is not None and all(is_int(d) for d in in_shape) and all(is_int(d) for d in out):
            if int(np.prod(in_shape)) != int(np.prod(out)):
                raise fail("Reshape", f"cannot reshape {tuple(in_shape)} to {tuple(out)}")
        return out
    hole = out.index(-1)
    if in_shape is None or any(d is None for d in in_shape) or any(d is None for d in out[:hole] + out[hole + 1:]):
        out[hole] = None
        return out
    rest = out[:hole] + out[hole + 1:]
    in_syms = Counter(d for d in in_shape if not is_int(d))
    out_syms = Counter(d for d in rest if not is_int(d))
    in_int = int(np.prod([d for d in in_shape if is_int(d)], dtype=np.int64))
    out_int = int(np.prod([d for d in rest if is_int(d)], dtype=np.int64))
    if out_syms - in_syms:
        out[hole] = None
    else:
        left = in_syms - out_syms
        if not left:
            if out_int == 0 or in_int % out_int:
                raise fail("Reshape", f"cannot reshape {tuple(in_shape)} to {list(target)}")
            out[hole] = in_int // out_int
        elif sum(left.values()) == 1 and in_int == out_int:
            out[hole] = next(iter(left))
        else:
            out[hole] = None
    return out


def _reshape_infer(attrs, inputs):
    x = inputs[0]
    if attrs.get("shape") is not None:
        target = list(attrs["shape"])
    else:
        target = ints_value(inputs[1]) if len(inputs) > 1 else None
    if target is None:
        n = inputs[1].shape[0] if len(inputs) > 1 and inputs[1].shape and is_int(inputs[1].shape[0]) else None
        return [tensor(None if n is None else [None] * n, x.dtype)]
    out = _reshape_dims(x.shape, target, attrs["allowzero"])
    return [_with_value(tensor(out, x.dtype), reshape, attrs, inputs)]


@register_op("Reshape", attrs={"allowzero": ("int", 0), "shape": ("ints", None)}, inputs=(1, 2), since_version=1,
             infer=_reshape_infer)
def reshape(attrs: dict[str, Any], x: Operand, shape: Operand = None) -> Result:
    """X with the shape `shape` (int64 input; attribute before opset 5): 0 copies the
    input dim (unless allowzero, opset 14), -1 takes what is left; any dtype."""
    target = list(attrs["shape"]) if attrs.get("shape") is not None else ints_of(shape)
    out = _reshape_dims(x.shape, target, attrs["allowzero"])
    return x.reshape(out)


# ---------------------------------------------------------------------------------------------- Flatten


def _flatten_infer(attrs, inputs):
    x = inputs[0]
    if x.shape is None:
        return [tensor([None, None], x.dtype)]
    rank = len(x.shape)
    ax = attrs["axis"]
    if not -rank <= ax <= rank:
        raise fail("Flatten", f"axis {ax} is out of range for rank {rank}")
    ax = ax + rank if ax < 0 else ax
    return [tensor([dims_prod(x.shape[:ax]), dims_prod(x.shape[ax:])], x.dtype)]


@register_op("Flatten", attrs={"axis": ("int", 1)}, since_version=1, infer=_flatten_infer)
def flatten(attrs: dict[str, Any], x: Operand) -> Result:
    """X as a matrix (prod(dims[:axis]), prod(dims[axis:])); any dtype."""
    ax = attrs["axis"] + x.ndim if attrs["axis"] < 0 else attrs["axis"]
    if not 0 <= ax <= x.ndim:
        raise fail("Flatten", f"axis {attrs['axis']} is out of range for rank {x.ndim}")
    return x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), -1) if x.size else \
        x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), int(np.prod(x.shape[ax:], dtype=np.int64)))


# ---------------------------------------------------------------------------------------------- Squeeze / Unsqueeze


def _squeeze_infer(attrs, inputs):
    x = inputs[0]
    axes = _axes_of("Squeeze", attrs, inputs, 1)
    if x.shape is None or axes == "unknown":
        return [tensor(None, x.dtype)]
    rank = len(x.shape)
    if axes is None:
        if any(not is_int(d) for d in x.shape):
            return [tensor(None, x.dtype)]
        return [_with_value(tensor([d for d in x.shape if d != 1], x.dtype), squeeze, attrs, inputs)]
    norm = set()
    for a in axes:
        if not -rank <= a < rank:
            raise fail("Squeeze", f"axis {a} is out of range for rank {rank}")
        a %= rank
        if is_int(x.shape[a]) and x.shape[a] != 1:
            raise fail("Squeeze", f"cannot squeeze axis {a} of size {x.shape[a]} (shape {x.shape})")
        norm.add(a)
    return [_with_value(tensor([d for i, d in enumerate(x.shape) if i not in norm], x.dtype), squeeze, attrs, inputs)]


@register_op("Squeeze", attrs={"axes": ("ints", None)}, inputs=(1, 2), since_version=1, infer=_squeeze_infer)
def squeeze(attrs: dict[str, Any], x: Operand, axes: Operand = None) -> Result:
    """Removes the size-1 `axes` (all size-1 dims when none; an attribute before
    opset 13, an int64 input from 13); any dtype."""
    ax = attrs["axes"] if attrs.get("axes") is not None else (None if axes is None else ints_of(axes))
    if ax is None:
        return np.squeeze(x)
    norm = tuple(sorted({a % x.ndim for a in ax}))
    if any(x.shape[a] != 1 for a in norm):
        raise fail("Squeeze", f"cannot squeeze axes {list(ax)} of shape {x.shape}")
    return np.squeeze(x, axis=norm)


def _unsqueeze_dims(shape, axes):
    rank = len(shape) + len(axes)
    norm = []
    for a in axes:
        if not -rank <= a < rank:
            raise fail("Unsqueeze", f"axis {a} is out of range for output rank {rank}")
        norm.append(a % rank)
    if len(set(norm)) != len(norm):
        raise fail("Unsqueeze", f"axes {list(axes)} repeat an axis")
    it = iter(shape)
    return [1 if i in norm else next(it) for i in range(rank)]


def _unsqueeze_infer(attrs, inputs):
    x = inputs[0]
    axes = _axes_of("Unsqueeze", attrs, inputs, 1)
    if axes is None:
        raise fail("Unsqueeze", "needs axes")
    if x.shape is None or axes == "unknown":
        return [tensor(None, x.dtype)]
    return [_with_value(tensor(_unsqueeze_dims(x.shape, axes), x.dtype), unsqueeze, attrs, inputs)]


@register_op("Unsqueeze", attrs={"axes": ("ints", None)}, inputs=(1, 2), since_version=1, infer=_unsqueeze_infer)
def unsqueeze(attrs: dict[str, Any], x: Operand, axes: Operand = None) -> Result:
    """Inserts size-1 dims at `axes` of the output (an attribute before opset 13, an
    int64 input from 13); any dtype."""
    ax = attrs["axes"] if attrs.get("axes") is not None else ints_of(axes)
    return x.reshape(_unsqueeze_dims(x.shape, ax))


# ---------------------------------------------------------------------------------------------- Transpose


def _perm(attrs, rank):
    perm = attrs.get("perm")
    if perm is None:
        return list(range(rank))[::-1]
    perm = [int(p) for p in perm]
    if sorted(p % rank if -rank <= p < rank else -1 for p in perm) != list(range(rank)):
        raise fail("Transpose", f"perm {perm} is not a permutation of {rank} axes")
    return [p % rank for p in perm]


def _transpose_infer(attrs, inputs):
    x = inputs[0]
    if x.shape is None:
        return [tensor(None, x.dtype)]
    return [_with_value(tensor([x.shape[p] for p in _perm(attrs, len(x.shape))], x.dtype), transpose, attrs, inputs)]


@register_op("Transpose", attrs={"perm": ("ints", None)}, since_version=1, infer=_transpose_infer)
def transpose(attrs: dict[str, Any], x: Operand) -> Result:
    """Permutes the axes of X (reversed when no perm); any dtype."""
    return np.transpose(x, _perm(attrs, x.ndim))


# ---------------------------------------------------------------------------------------------- Expand / Tile


def _expand_infer(attrs, inputs):
    x, shape = inputs[0], inputs[1]
    target = ints_value(shape)
    if target is None:
        n = shape.shape[0] if shape.shape and is_int(shape.shape[0]) else None
        if n is None or x.shape is None:
            return [tensor(None, x.dtype)]
        rank = max(n, len(x.shape))
        return [tensor([None] * rank, x.dtype)]
    return [_with_value(tensor(broadcast_shapes(x.shape, tuple(target), where="Expand"), x.dtype),
                        expand, attrs, inputs)]


@register_op("Expand", inputs=(2, 2), since_version=8, infer=_expand_infer)
def expand(attrs: dict[str, Any], x: Operand, shape: Operand) -> Result:
    """X broadcast (numpy rules, both ways) with the int64 `shape`; any dtype."""
    target = broadcast_shapes(x.shape, tuple(int(v) for v in shape), where="Expand")
    return np.broadcast_to(x, target).copy()


def _tile_infer(attrs, inputs):
    x = inputs[0]
    reps = ints_value(inputs[1])
    if x.shape is None:
        return [tensor(None, x.dtype)]
    if reps is None:
        return [tensor([None] * len(x.shape), x.dtype)]
    if len(reps) != len(x.shape):
        raise fail("Tile", f"repeats {reps} need one value per dim of {x.shape}")
    return [_with_value(tensor([dim_mul(d, r) for d, r in zip(x.shape, reps)], x.dtype), tile, attrs, inputs)]


@register_op("Tile", inputs=(2, 2), since_version=6, infer=_tile_infer)
def tile(attrs: dict[str, Any], x: Operand, repeats: Operand) -> Result:
    """X repeated `repeats` (int64, one per dim) times along each dim; any dtype."""
    reps = ints_of(repeats)
    if len(reps) != x.ndim:
        raise fail("Tile", f"repeats {reps} need one value per dim of {x.shape}")
    return np.tile(x, reps)


# ---------------------------------------------------------------------------------------------- Trilu / OneHot / Range


def _trilu_infer(attrs, inputs):
    x = inputs[0]
    if x.shape is not None and len(x.shape) < 2:
        raise fail("Trilu", f"input must have rank >= 2, got shape {x.shape}")
    return [tensor(x.shape, x.dtype)]


@register_op("Trilu", attrs={"upper": ("int", 1)}, inputs=(1, 2), since_version=14, infer=_trilu_infer)
def trilu(attrs: dict[str, Any], x: Operand, k: Operand = None) -> Result:
    """The upper (or lower) triangle of the last two dims from diagonal k (int64
    scalar, default 0), the rest zero; any dtype."""
    kk = 0 if k is None else int(np.asarray(k).reshape(-1)[0])
    if x.ndim < 2:
        raise fail("Trilu", f"input must have rank >= 2, got shape {x.shape}")
    return np.triu(x, kk) if attrs["upper"] else np.tril(x, kk)


def _onehot_infer(attrs, inputs):
    idx, depth, values = inputs
    d = ints_value(depth)
    if idx.shape is None:
        return [tensor(None, values.dtype)]
    rank = len(idx.shape) + 1
    ax = attrs["axis"]
    if not -rank <= ax < rank:
        raise fail("OneHot", f"axis {ax} is out of range for output rank {rank}")
    ax %= rank
    dims = list(idx.shape)
    dims.insert(ax, None if d is None else d[0])
    return [tensor(dims, values.dtype)]


@register_op("OneHot", attrs={"axis": ("int", -1)}, inputs=(3, 3), since_version=9, infer=_onehot_infer)
def one_hot(attrs: dict[str, Any], indices: Operand, depth: Operand, values: Operand) -> Result:
    """values[1] where the new `axis` equals the index (negative indices count from
    depth; out-of-range ones give an all-off row), values[0] elsewhere."""
    d = int(np.asarray(depth).reshape(-1)[0])
    if values.size != 2:
        raise fail("OneHot", f"values must hold [off, on], got shape {values.shape}")
    rank = indices.ndim + 1
    ax = attrs["axis"] % rank
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + d, idx)
    shape = [1] * rank
    shape[ax] = d
    hot = np.expand_dims(idx, ax) == np.arange(d).reshape(shape)
    return np.where(hot, values[1], values[0]).astype(values.dtype)


def _range_infer(attrs, inputs):
    start, limit, delta = inputs
    if any(x.value is not None for x in inputs) and all(x.value is not None for x in inputs):
        n = _range_count(start.value, limit.value, delta.value)
        return [_with_value(tensor([n], start.dtype), range_, attrs, inputs)]
    return [tensor([None], start.dtype)]


def _range_count(start, limit, delta):
    s, lim, d = (np.asarray(v).reshape(-1)[0] for v in (start, limit, delta))
    if d == 0:
        raise fail("Range", "delta is 0")
    return max(int(np.ceil((float(lim) - float(s)) / float(d))), 0)


@register_op("Range", inputs=(3, 3), since_version=11, infer=_range_infer)
def range_(attrs: dict[str, Any], start: Operand, limit: Operand, delta: Operand) -> Result:
    """start + i * delta for i in [0, ceil((limit - start) / delta)); scalars of one
    numeric dtype, output of that dtype."""
    n = _range_count(start, limit, delta)
    s, d = np.asarray(start).reshape(-1)[0], np.asarray(delta).reshape(-1)[0]
    if start.dtype.kind in "iu":
        return (int(s) + np.arange(n, dtype=np.int64) * int(d)).astype(start.dtype)
    return (np.float64(s) + np.arange(n, dtype=np.float64) * np.float64(d)).astype(start.dtype)


# ---------------------------------------------------------------------------------------------- constants


def _cos_fill(attrs):
    v = attrs.get("value")
    return np.zeros(1, np.float32) if v is None else np.asarray(v)


def _cos_infer(attrs, inputs):
    fill = _cos_fill(attrs)
    shape = ints_value(inputs[0])
    if shape is None:
        n = inputs[0].shape[0] if inputs[0].shape and is_int(inputs[0].shape[0]) else None
        return [tensor(None if n is None else [None] * n, fill.dtype)]
    if any(d < 0 for d in shape):
        raise fail("ConstantOfShape", f"shape {shape} has a negative dim")
    return [_with_value(tensor(shape, fill.dtype), constant_of_shape, attrs, inputs)]


@register_op("ConstantOfShape", attrs={"value": ("tensor", None)}, since_version=9, infer=_cos_infer)
def constant_of_shape(attrs: dict[str, Any], shape: Operand) -> Result:
    """A tensor of the int64 `shape` filled with the one-element `value` (float32 0
    by default), of value's dtype."""
    fill = _cos_fill(attrs)
    if fill.size != 1:
        raise fail("ConstantOfShape", f"value must hold one element, got shape {fill.shape}")
    return np.full(ints_of(shape), fill.reshape(-1)[0], dtype=fill.dtype)


_CONST_ATTRS = {"value": ("tensor", None), "sparse_value": ("tensor", None), "value_float": ("float", None),
                "value_floats": ("floats", None), "value_int": ("int", None), "value_ints": ("ints", None),
                "value_string": ("string", None), "value_strings": ("strings", None)}


def _densify(sparse):
    """The dense array of an ONNX SparseTensorProto (indices linear or one row per
    non-zero)."""
    from onnx import numpy_helper
    values = numpy_helper.to_array(sparse.values)
    indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
    dense = np.zeros(tuple(sparse.dims), values.dtype)
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    return dense


def _constant_value(attrs):
    given = [k for k in _CONST_ATTRS if attrs.get(k) is not None]
    if len(given) != 1:
        raise fail("Constant", f"needs exactly one of {', '.join(_CONST_ATTRS)}, got {given or 'none'}")
    k = given[0]
    v = attrs[k]
    if k == "sparse_value" and hasattr(v, "dims") and hasattr(v, "indices"):
        return _densify(v)
    if k in ("value", "sparse_value"):
        return np.asarray(v)
    if k == "value_float":
        return np.asarray(v, np.float32)
    if k == "value_floats":
        return np.asarray(v, np.float32).reshape(-1)
    if k == "value_int":
        return np.asarray(v, np.int64)
    if k == "value_ints":
        return np.asarray(v, np.int64).reshape(-1)
    if k == "value_string":
        return np.asarray(v, dtype=object)
    return np.asarray(list(v), dtype=object).reshape(-1)


def _constant_infer(attrs, inputs):
    v = _constant_value(attrs)
    return [TensorInfo(tuple(v.shape), v.dtype, v)]


@register_op("Constant", attrs=_CONST_ATTRS, inputs=(0, 0), since_version=1, infer=_constant_infer)
def constant(attrs: dict[str, Any]) -> Result:
    """The tensor held by whichever one of the value attributes is set."""
    return _constant_value(attrs).copy()


# ---------------------------------------------------------------------------------------------- Shape / Size / Identity


def _shape_range(attrs, rank):
    start, end = attrs.get("start") or 0, attrs.get("end")
    end = rank if end is None else end
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return start, max(start, end)


def _shape_infer(attrs, inputs):
    x = inputs[0]
    if x.shape is None:
        return [tensor([None], INT64)]
    a, b = _shape_range(attrs, len(x.shape))
    dims = x.shape[a:b]
    val = np.asarray([int(d) for d in dims], np.int64) if all(is_int(d) for d in dims) else None
    return [TensorInfo((b - a,), INT64, val)]


@register_op("Shape", attrs={"start": ("int", 0), "end": ("int", None)}, since_version=1, infer=_shape_infer)
def shape(attrs: dict[str, Any], x: Operand) -> Result:
    """The dims [start, end) (clamped, opset 15) of X as an int64 vector."""
    a, b = _shape_range(attrs, x.ndim)
    return np.asarray(x.shape[a:b], dtype=np.int64)


def _size_infer(attrs, inputs):
    x = inputs[0]
    n = dims_prod(x.shape) if x.shape is not None else None
    return [TensorInfo((), INT64, np.asarray(n, np.int64) if is_int(n) else None)]


@register_op("Size", since_version=1, infer=_size_infer)
def size(attrs: dict[str, Any], x: Operand) -> Result:
    """The number of elements of X as an int64 scalar."""
    return np.asarray(x.size, dtype=np.int64)


def _identity_infer(attrs, inputs):
    x = inputs[0]
    if x is None:
        return [None]
    if isinstance(x, (list, SequenceInfo)):
        return [SequenceInfo(seq_elem(x), seq_length(x), x.value if isinstance(x, SequenceInfo) else None)]
    return [x]


@register_op("Identity", since_version=1, infer=_identity_infer)
def identity(attrs: dict[str, Any], x: Operand) -> Result:
    """X itself: a tensor, a sequence (opset 14) or an optional (opset 16)."""
    if isinstance(x, list):
        return list(x)
    return None if x is None else x.copy()


