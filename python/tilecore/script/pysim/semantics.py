"""tilecore/script/pysim/semantics.py — TC1's lane-wise semantics on numpy arrays.

Each function takes operand arrays in their numpy storage (see numerics.py) and the
element dtype, and returns the result array. Integer arithmetic is done in int64
(exact for every 32-bit operand here) and then wrapped or saturated; float
arithmetic in float64 and rounded once to float32, then to the dtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import types as T
from ..frontend import kind
from ..numerics import round_float, saturate, scalar_to_storage, storage, to_f64, wrap
from .values import SimValue

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..values import KernelValue


def lanes_of(x: KernelValue, dtype: str) -> np.ndarray:
    """``x`` (literal or SimValue) as an array of ``dtype``'s lanes."""
    elem, lanes = T.split(dtype)
    if kind(x) == "literal":
        return np.full(lanes, scalar_to_storage(x, elem), dtype=storage(elem))
    if x.data.ndim == 2:  # a batched value (batch.py): (iterations, lanes), broadcast as it is
        return x.data
    if x.data.shape[0] != lanes:
        return np.full(lanes, x.data[0], dtype=storage(elem))
    return x.data


_STORAGE_OF = {}


def value(data: npt.ArrayLike, dtype: str) -> SimValue:
    st = _STORAGE_OF.get(dtype)
    if st is None:
        st = _STORAGE_OF[dtype] = storage(T.split(dtype)[0])
    return SimValue(np.asarray(data, dtype=st).reshape(-1), dtype)


def _i64(a):
    return a.astype(np.int64)


def arith(op: str, a: np.ndarray, b: np.ndarray, elem: str, saturating: bool = False) -> np.ndarray:
    """``add sub mul min max`` lane-wise."""
    if elem in T.FLOAT_DTYPES:
        fa, fb = to_f64(a, elem), to_f64(b, elem)
        with np.errstate(all="ignore"):
            r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                 "min": np.minimum, "max": np.maximum}[op](fa, fb)
        return round_float(r, elem)
    if op in ("min", "max"):
        return (np.minimum if op == "min" else np.maximum)(a, b)
    if op == "mul" and T.ELEMENT_BITS[elem] == 32 and elem.startswith("u"):
        r = (a.astype(np.uint64) * b.astype(np.uint64)) & np.uint64(0xFFFFFFFF)
        return r.astype(np.uint32)
    ia, ib = _i64(a), _i64(b)
    r = {"add": ia + ib, "sub": ia - ib, "mul": ia * ib}[op]
    return saturate(r, elem) if saturating else wrap(r, elem)


def divide(op: str, a: np.ndarray, b: np.ndarray, elem: str) -> np.ndarray:
    """Scalar ``/`` (truncating for integers; TC1 div: x/0 = -1 (all ones), INT_MIN/-1 = INT_MIN),
    ``//`` and ``%`` (floor; x//0 like x/0, x%0 = x)."""
    if elem in T.FLOAT_DTYPES:
        return arith("div", a, b, elem)
    ia, ib = int(a[0]), int(b[0])
    if ib == 0:
        r = ia if op == "mod" else -1
    else:
        q = abs(ia) // abs(ib)
        if (ia < 0) != (ib < 0):
            q = -q
        if op == "truediv":
            r = q
        elif op == "floordiv":
            r = ia // ib
        else:
            r = ia % ib
    return wrap(np.array([r]), elem)


def shift(op: str, a: np.ndarray, b: np.ndarray, elem: str, saturating: bool = False) -> np.ndarray:
    bits = T.ELEMENT_BITS[elem]
    amt = _i64(b) & (bits - 1)
    if op == "shl":
        r = _i64(a) << amt
        return saturate(r, elem) if saturating else wrap(r, elem)
    return (a >> amt.astype(a.dtype)).astype(a.dtype)


def bitwise(op: str, a: np.ndarray, b: np.ndarray, elem: str) -> np.ndarray:
    if elem == "bool":
        return {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op](a, b)
    return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](a, b)


def compare(op: str, a: np.ndarray, b: np.ndarray, elem: str) -> np.ndarray:
    if elem in T.FLOAT_DTYPES:
        a, b = to_f64(a, elem), to_f64(b, elem)
    with np.errstate(invalid="ignore"):
        return {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                "eq": np.equal, "ne": np.not_equal}[op](a, b)


def reduce(op: str, a: np.ndarray, elem: str) -> np.ndarray:
    """Lane-order reduction to one value (sum wraps for integers; float sums accumulate in f32)."""
    if elem in T.FLOAT_DTYPES:
        f = to_f64(a, elem).astype(np.float32)
        if op == "sum":
            acc = np.float32(0.0)
            with np.errstate(all="ignore"):
                for v in f:
                    acc = np.float32(acc + v)
            return round_float(np.array([acc], np.float64), elem)
        with np.errstate(invalid="ignore"):
            r = np.max(f) if op == "max" else np.min(f)
        return round_float(np.array([r], np.float64), elem)
    if op == "sum":
        return wrap(np.array([int(_i64(a).sum())]), elem)
    return np.array([a.max() if op == "max" else a.min()], dtype=a.dtype)
