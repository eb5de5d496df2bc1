"""tilecore/ir/ops/sequence.py — sequences and optionals: SequenceEmpty,
SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalHasElement,
OptionalGetElement.

A sequence value is a Python list of arrays; an empty optional is None (the
evaluator's representation). Inference describes a sequence with SequenceInfo
(element type, length when known); it also accepts the Python lists an evaluator
passes when it infers on values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._util import INT64, fail, ints_of, ints_value, is_int, onnx_dtype, seq_elem, seq_length, tensor
from .registry import REQUIRED, Operand, Result, SequenceInfo, TensorInfo, register_op


def _position(op, pos, length, insert: bool = False):
    p = int(np.asarray(pos).reshape(-1)[0])
    hi = length if insert else length - 1
    if not -length <= p <= hi:
        raise fail(op, f"position {p} is outside [{-length}, {hi}] for a sequence of {length}")
    return p + length if p < 0 else p


def _seq(elem, length=None):
    return SequenceInfo(elem, length)


@register_op("SequenceEmpty", attrs={"dtype": ("int", None)}, inputs=(0, 0), since_version=11,
             infer=lambda attrs, inputs: [_seq(TensorInfo(None, onnx_dtype(attrs.get("dtype") or 1,
                                                                            "SequenceEmpty")), 0)])
def sequence_empty(attrs: dict[str, Any]) -> Result:
    """An empty sequence of tensors of `dtype` (float32 by default)."""
    onnx_dtype(attrs.get("dtype") or 1, "SequenceEmpty")
    return []


def _construct_infer(attrs, inputs):
    dtypes = {x.dtype for x in inputs}
    if len(dtypes) > 1:
        raise fail("SequenceConstruct", f"inputs mix dtypes {sorted(map(str, dtypes))}")
    shapes = {x.shape for x in inputs}
    elem = TensorInfo(shapes.pop() if len(shapes) == 1 else None, inputs[0].dtype)
    return [_seq(elem, len(inputs))]


@register_op("SequenceConstruct", inputs=(1, -1), since_version=11, infer=_construct_infer)
def sequence_construct(attrs: dict[str, Any], *xs: Operand) -> Result:
    """A sequence of the input tensors (one dtype)."""
    return list(xs)


def _insert_infer(attrs, inputs):
    n = seq_length(inputs[0])
    return [_seq(seq_elem(inputs[0]) or TensorInfo(None, inputs[1].dtype), None if n is None else n + 1)]


@register_op("SequenceInsert", inputs=(2, 3), since_version=11, infer=_insert_infer)
def sequence_insert(attrs: dict[str, Any], seq: Operand, x: Operand, position: Operand = None) -> Result:
    """The sequence with `x` inserted at `position` (int scalar, negative from the
    end; appended when absent)."""
    out = list(seq)
    p = len(out) if position is None else _position("SequenceInsert", position, len(out), insert=True)
    out.insert(p, x)
    return out


def _at_infer(attrs, inputs):
    elem = seq_elem(inputs[0])
    if isinstance(inputs[0], list) and inputs[1].value is not None:
        a = np.asarray(inputs[0][_position("SequenceAt", inputs[1].value, len(inputs[0]))])
        return [TensorInfo(tuple(a.shape), a.dtype)]
    return [elem if elem is not None else TensorInfo(None, np.dtype(np.float32))]


@register_op("SequenceAt", inputs=(2, 2), since_version=11, infer=_at_infer)
def sequence_at(attrs: dict[str, Any], seq: Operand, position: Operand) -> Result:
    """The tensor at `position` (int scalar, negative from the end)."""
    return seq[_position("SequenceAt", position, len(seq))]


def _erase_infer(attrs, inputs):
    n = seq_length(inputs[0])
    return [_seq(seq_elem(inputs[0]), None if n is None else n - 1)]


@register_op("SequenceErase", inputs=(1, 2), since_version=11, infer=_erase_infer)
def sequence_erase(attrs: dict[str, Any], seq: Operand, position: Operand = None) -> Result:
    """The sequence without the tensor at `position` (the last when absent)."""
    out = list(seq)
    if not out:
        raise fail("SequenceErase", "the sequence is empty")
    del out[len(out) - 1 if position is None else _position("SequenceErase", position, len(out))]
    return out


def _length_infer(attrs, inputs):
    n = seq_length(inputs[0])
    return [TensorInfo((), INT64, None if n is None else np.asarray(n, np.int64))]


@register_op("SequenceLength", since_version=11, infer=_length_infer)
def sequence_length(attrs: dict[str, Any], seq: Operand) -> Result:
    """The number of tensors in the sequence, an int64 scalar."""
    return np.asarray(len(seq), dtype=np.int64)


def _split_sizes(op, dim, split):
    if split is None:
        return [1] * dim
    split = np.asarray(split).astype(np.int64)
    if split.ndim == 0:
        size = int(split)
        if size <= 0:
            raise fail(op, f"split size {size} must be positive")
        return [size] * (dim // size) + ([dim % size] if dim % size else [])
    sizes = ints_of(split)
    if sum(sizes) != dim:
        raise fail(op, f"split {sizes} does not sum to the axis length {dim}")
    return sizes


def _split_seq_infer(attrs, inputs):
    x = inputs[0]
    split = inputs[1] if len(inputs) > 1 else None
    if x.shape is None:
        return [_seq(TensorInfo(None, x.dtype))]
    ax = attrs["axis"] % len(x.shape)
    dim = x.shape[ax]
    if split is None:
        shape = x.shape[:ax] + ((1,) if attrs["keepdims"] else ()) + x.shape[ax + 1:]
        return [_seq(TensorInfo(shape, x.dtype), int(dim) if is_int(dim) else None)]
    sizes = ints_value(split) if split.value is not None else None
    if sizes is not None and is_int(dim):
        sizes = _split_sizes("SplitToSequence", int(dim), split.value)
        same = len(set(sizes)) == 1
        return [_seq(TensorInfo(x.shape[:ax] + ((sizes[0] if same else None),) + x.shape[ax + 1:], x.dtype),
                     len(sizes))]
    return [_seq(TensorInfo(x.shape[:ax] + (None,) + x.shape[ax + 1:], x.dtype))]


@register_op("SplitToSequence", attrs={"axis": ("int", 0), "keepdims": ("int", 1)}, inputs=(1, 2),
             since_version=11, infer=_split_seq_infer)
def split_to_sequence(attrs: dict[str, Any], x: Operand, split: Operand = None) -> Result:
    """X split along `axis` into a sequence: parts of the sizes in the 1-D `split`,
    chunks of the scalar `split` (last one shorter), or size-1 slices (squeezed
    unless keepdims) when `split` is absent."""
    ax = attrs["axis"]
    if not -x.ndim <= ax < x.ndim:
        raise fail("SplitToSequence", f"axis {ax} is out of range for rank {x.ndim}")
    ax %= x.ndim
    sizes = _split_sizes("SplitToSequence", x.shape[ax], split)
    parts = np.split(x, np.cumsum(sizes)[:-1], axis=ax)
    if split is None and not attrs["keepdims"]:
        parts = [np.squeeze(p, axis=ax) for p in parts]
    return [p.copy() for p in parts]


def _concat_seq_infer(attrs, inputs):
    elem = seq_elem(inputs[0])
    if isinstance(inputs[0], list) and inputs[0]:
        out = concat_from_sequence(attrs, inputs[0])
        return [TensorInfo(tuple(out.shape), out.dtype)]
    if elem is None or elem.shape is None:
        return [tensor(None, elem.dtype if elem else np.float32)]
    rank = len(elem.shape) + (1 if attrs["new_axis"] else 0)
    ax = attrs["axis"] % rank
    shape = list(elem.shape)
    if attrs["new_axis"]:
        shape.insert(ax, seq_length(inputs[0]))
    else:
        shape[ax] = None
    return [tensor(shape, elem.dtype)]


@register_op("ConcatFromSequence", attrs={"axis": ("int", REQUIRED), "new_axis": ("int", 0)}, since_version=11,
             infer=_concat_seq_infer)
def concat_from_sequence(attrs: dict[str, Any], seq: Operand) -> Result:
    """The sequence's tensors joined along `axis` (stacked on a new axis when
    new_axis is 1)."""
    if not seq:
        raise fail("ConcatFromSequence", "the sequence is empty")
    if attrs["axis"] is None:
        raise fail("ConcatFromSequence", "needs the attribute 'axis'")
    if attrs["new_axis"]:
        return np.stack(seq, axis=attrs["axis"])
    return np.concatenate(seq, axis=attrs["axis"])


def _map_infer(attrs, inputs):
    body = attrs.get("body")
    if body is not None and hasattr(body, "infer"):
        elems = [seq_elem(x) if isinstance(x, (list, SequenceInfo)) else x for x in inputs]
        return [_seq(e, seq_length(inputs[0])) for e in body.infer(elems)]
    return []


@register_op("SequenceMap", attrs={"body": ("graph", REQUIRED)}, inputs=(1, -1), outputs=(1, -1), since_version=17,
             infer=_map_infer)
def sequence_map(attrs: dict[str, Any], seq: Operand, *extra: Operand) -> Result:
    """Runs `body` on each element of the input sequence (and the matching element
    of each extra sequence, or the extra tensor itself); one output sequence per
    body output."""
    body = attrs["body"]
    n = len(seq)
    for e in extra:
        if isinstance(e, list) and len(e) != n:
            raise fail("SequenceMap", f"sequences differ in length ({n} and {len(e)})")
    results = [body(seq[i], *[e[i] if isinstance(e, list) else e for e in extra]) for i in range(n)]
    if not results:
        return []
    outs = tuple([list(r[j] for r in results) for j in range(len(results[0]))])
    return outs[0] if len(outs) == 1 else outs


def _optional_infer(attrs, inputs):
    x = inputs[0] if inputs else None
    if x is None:
        return [None]
    if isinstance(x, (list, SequenceInfo)):
        return [_seq(seq_elem(x), seq_length(x))]
    return [x]


@register_op("Optional", attrs={"type": ("string", None)}, inputs=(0, 1), since_version=15, infer=_optional_infer)
def optional(attrs: dict[str, Any], x: Operand = None) -> Result:
    """An optional holding the input (a tensor or sequence), or an empty optional
    (None) of `type` when there is no input. The `type` attribute is an ONNX
    TypeProto, kept as given."""
    return x


def _has_infer(attrs, inputs):
    return [TensorInfo((), np.dtype(bool))]


@register_op("OptionalHasElement", inputs=(0, 1), since_version=15, infer=_has_infer)
def optional_has_element(attrs: dict[str, Any], x: Operand = None) -> Result:
    """A bool scalar: true when the optional (or, from opset 18, plain tensor or
    sequence) input holds a value."""
    return np.asarray(x is not None)


def _get_infer(attrs, inputs):
    return _optional_infer(attrs, inputs)


@register_op("OptionalGetElement", since_version=15, infer=_get_infer)
def optional_get_element(attrs: dict[str, Any], x: Operand) -> Result:
    """The value held by the optional input (a plain tensor or sequence passes
    through, opset 18); an empty optional is an error."""
    if x is None:
        raise fail("OptionalGetElement", "the optional is empty")
    return x
