"""tilecore/ir/ops/infer.py — shape-inference helpers shared by the op library.

Dimensions are ints (static), strs (symbolic, e.g. "batch") or None (unknown); a
shape of None means even the rank is unknown. The helpers keep symbols where ONNX's
rules allow (broadcasting a symbol with 1 keeps the symbol) and give None otherwise.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from .registry import OpError, TensorInfo

Shape = Optional[Tuple[Any, ...]]


def broadcast_shapes(*shapes: Shape, where: str = "") -> Shape:
    """Multidirectional (numpy) broadcasting of `shapes`; OpError when two static
    dimensions disagree."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out: List[Any] = []
    for axis in range(rank):
        dims = [s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0]
        static = {d for d in dims if isinstance(d, (int, np.integer)) and d != 1}
        if len(static) > 1:
            raise OpError(f"{where + ': ' if where else ''}shapes {', '.join(map(str, shapes))} "
                          f"do not broadcast (axis {axis}: {sorted(static)})")
        if static:
            out.append(int(static.pop()))
            continue
        others = [d for d in dims if not (isinstance(d, (int, np.integer)) and d == 1)]
        if not others:
            out.append(1)
        elif all(d == others[0] for d in others):
            out.append(others[0])
        else:
            out.append(None)
    return tuple(out)


def normalize_axis(axis: int, rank: int, where: str = "") -> int:
    """`axis` in [-rank, rank) made non-negative; OpError outside it."""
    if not -rank <= axis < rank:
        raise OpError(f"{where + ': ' if where else ''}axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def same_as_input(index: int = 0) -> Callable[[dict, list], List[TensorInfo]]:
    """Inference for ops whose single output has the shape and dtype of input `index`."""
    def infer(attrs: dict, inputs: list) -> List[TensorInfo]:
        x = inputs[index]
        return [TensorInfo(x.shape, x.dtype)]
    return infer


def elementwise(dtype: Optional[Any] = None) -> Callable[[dict, list], List[TensorInfo]]:
    """Inference for broadcasting element-wise ops: the broadcast shape of every
    given input, and `dtype` (default: the first input's dtype)."""
    def infer(attrs: dict, inputs: list) -> List[TensorInfo]:
        given = [x for x in inputs if x is not None]
        shape = broadcast_shapes(*(x.shape for x in given))
        return [TensorInfo(shape, np.dtype(dtype) if dtype is not None else given[0].dtype)]
    return infer


def static_dims(info: TensorInfo, where: str = "") -> Tuple[int, ...]:
    """The shape of `info` as ints; OpError when a dimension is not static."""
    if not info.is_static:
        raise OpError(f"{where + ': ' if where else ''}needs a static shape, got {info.shape}")
    return tuple(int(d) for d in info.shape)


def const_value(info: Optional[TensorInfo], what: str, where: str = "") -> np.ndarray:
    """The constant value of an input that inference needs (a shape, axes, pads);
    OpError when it is only known at run time."""
    if info is None or info.value is None:
        raise OpError(f"{where + ': ' if where else ''}{what} must be a constant for shape inference")
    return np.asarray(info.value)


def from_reference(reference: Callable[..., Any]) -> Callable[[dict, list], List[TensorInfo]]:
    """Inference by running the reference on zero-filled inputs of the given static
    shapes (constants passed as they are). For ops whose output shape depends only on
    input shapes and constant inputs, where writing the rule out adds nothing; costs
    one evaluation, so use only for small, rarely used ops."""
    def infer(attrs: dict, inputs: list) -> List[TensorInfo]:
        args = []
        for x in inputs:
            if x is None:
                args.append(None)
            elif isinstance(x, TensorInfo):
                args.append(x.value if x.value is not None else np.zeros(static_dims(x), x.dtype))
            else:
                args.append(x.value)
        out = reference(attrs, *args)
        outs: Sequence[Any] = out if isinstance(out, (tuple, list)) and not isinstance(out, np.ndarray) else (out,)
        return [TensorInfo.of(np.asarray(o), keep_value=False) for o in outs]
    return infer
