"""tilecore/ir/ops/_util.py — small helpers shared by the structural op families
(conv, pool, tensor, indexing, image, sequence, control): dimension arithmetic that
keeps symbolic dims where it can, constant-input access and attribute checks."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from .registry import OpError, SequenceInfo, TensorInfo

INT64 = np.dtype(np.int64)


def is_int(d: Any) -> bool:
    """True for a static dimension."""
    return isinstance(d, (int, np.integer)) and not isinstance(d, bool)


def dim_add(a: Any, b: Any) -> Any:
    if is_int(a) and is_int(b):
        return int(a) + int(b)
    if is_int(b) and b == 0:
        return a
    if is_int(a) and a == 0:
        return b
    return None


def dim_mul(a: Any, b: Any) -> Any:
    if is_int(a) and is_int(b):
        return int(a) * int(b)
    if is_int(b) and b == 1:
        return a
    if is_int(a) and a == 1:
        return b
    return None


def dims_prod(dims: Sequence[Any]) -> Any:
    out: Any = 1
    for d in dims:
        out = dim_mul(out, d)
    return out


def value(info: Any) -> Optional[np.ndarray]:
    """The constant value of an input (TensorInfo, or a list for a sequence), or None."""
    if info is None:
        return None
    if isinstance(info, (TensorInfo, SequenceInfo)):
        return info.value
    return None


def ints_value(info: Any) -> Optional[List[int]]:
    v = value(info)
    return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def shape_of(info: Any) -> Any:
    return None if info is None else info.shape


def tensor(shape: Any, dtype: Any, val: Optional[np.ndarray] = None) -> TensorInfo:
    """A TensorInfo; a dtype of None stays unknown (np.dtype(None) would make it float64)."""
    return TensorInfo(None if shape is None else tuple(shape), None if dtype is None else np.dtype(dtype), val)


def seq_elem(info: Any) -> Optional[TensorInfo]:
    """The element description of a sequence input (SequenceInfo, or a Python list of
    arrays when the caller evaluates values)."""
    if info is None:
        return None
    if isinstance(info, SequenceInfo):
        return info.elem
    if isinstance(info, list):
        if not info:
            return None
        shapes = {tuple(np.asarray(a).shape) for a in info}
        first = np.asarray(info[0])
        if len(shapes) == 1:
            return TensorInfo(tuple(first.shape), first.dtype)
        ranks = {len(s) for s in shapes}
        if len(ranks) == 1:
            return TensorInfo(tuple(first.shape[i] if len({s[i] for s in shapes}) == 1 else None
                                    for i in range(first.ndim)), first.dtype)
        return TensorInfo(None, first.dtype)
    return None


def seq_length(info: Any) -> Optional[int]:
    if isinstance(info, list):
        return len(info)
    if isinstance(info, SequenceInfo):
        return info.length
    return None


def fail(op: str, message: str) -> OpError:
    return OpError(f"{op}: {message}")


def need_rank(op: str, what: str, info: TensorInfo, ranks: Sequence[int]) -> None:
    if info is not None and info.shape is not None and len(info.shape) not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise fail(op, f"{what} must have rank {want}, got shape {tuple(info.shape)}")


def axis(op: str, ax: int, rank: int) -> int:
    if not -rank <= ax < rank:
        raise fail(op, f"axis {ax} is out of range for rank {rank}")
    return ax + rank if ax < 0 else ax


def outputs(result: Any) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def onnx_dtype(code: int, op: str = "") -> np.dtype:
    """The numpy dtype of an ONNX TensorProto data type number."""
    table = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
             8: object, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}
    if code == 16:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    if code not in table:
        raise fail(op or "dtype", f"ONNX data type {code} is not supported here")
    return np.dtype(table[code])


def ints_of(array: Any) -> List[int]:
    """The values of an integer input (scalar or any shape) as a flat list of ints."""
    return [int(v) for v in np.asarray(array).reshape(-1)]
