"""tilecore/script/numerics.py — TC1's numeric rules in numpy, for PySim.

The rules are those of docs/tc1.md ("Numerics"), which the simulator implements in
``arch/numeric.h``:

- float to float rounds to nearest even; overflow gives +-Inf; NaN stays NaN
  (canonical quiet NaN 0x7E00 for float16, 0x7FC0 for bfloat16);
- float to int rounds to nearest even and saturates; NaN gives 0;
- int to int saturates; int to float rounds to nearest even;
- to bool is ``x != 0`` (NaN gives 0); from bool is 0 or 1;
- float arithmetic is computed exactly (here: in float64, exact for + - * of
  float32 operands up to the final rounding) and rounded once to float32, then to
  the dtype.

Arrays hold each dtype in its numpy storage type (``types.NP_STORAGE``); bfloat16
is kept as its uint16 bit pattern.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .types import NP_STORAGE, int_range

if TYPE_CHECKING:
    import numpy.typing as npt

_F16_QNAN = np.uint16(0x7E00)
_BF16_QNAN = np.uint16(0x7FC0)


def storage(elem: str) -> type:
    return NP_STORAGE[elem]


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16(x: npt.ArrayLike) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    return np.where(np.isnan(x), _BF16_QNAN, out).astype(np.uint16)


def to_f64(arr: np.ndarray, elem: str) -> np.ndarray:
    """Values of a float array (in its storage) as float64."""
    if elem == "bfloat16":
        return bf16_to_f32(arr).astype(np.float64)
    return np.asarray(arr).astype(np.float64)


def round_float(x: npt.ArrayLike, elem: str) -> np.ndarray:
    """float64 values rounded once to float32, then to ``elem`` (float16/bfloat16/float32)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f32 = np.asarray(x, dtype=np.float64).astype(np.float32)
        if elem == "float32":
            return f32
        if elem == "float16":
            h = f32.astype(np.float16)
            return np.where(np.isnan(f32), _F16_QNAN.view(np.float16), h).astype(np.float16)
        return f32_to_bf16(f32)


def saturate(x: npt.ArrayLike, elem: str) -> np.ndarray:
    """Integers (any int dtype or Python ints) clamped to ``elem``'s range."""
    lo, hi = int_range(elem)
    return np.clip(np.asarray(x, dtype=np.int64), lo, hi).astype(storage(elem))


def wrap(x: npt.ArrayLike, elem: str) -> np.ndarray:
    """Integers reduced to ``elem`` two's complement (the low bits)."""
    return np.asarray(x, dtype=np.int64).astype(storage(elem))


def convert(arr: npt.ArrayLike, src: str, dst: str) -> np.ndarray:
    """TC1 conversion of an array from element dtype ``src`` to ``dst``."""
    from .types import FLOAT_DTYPES, INT_DTYPES

    arr = np.asarray(arr)
    if src == dst:
        return arr.astype(storage(dst))
    if dst == "bool":
        if src in FLOAT_DTYPES:
            v = to_f64(arr, src)
            return (v != 0) & ~np.isnan(v)
        return arr != 0
    if src == "bool":
        arr = arr.astype(np.int64)
        src = "int32"
    if src in INT_DTYPES:
        if dst in INT_DTYPES:
            return saturate(arr.astype(np.int64), dst)
        # int -> float: rounds to nearest even (float64 holds every 32-bit int exactly).
        return round_float(arr.astype(np.float64), dst) if dst != "float32" else arr.astype(np.float32)
    v = to_f64(arr, src)
    if dst in FLOAT_DTYPES:
        if src == "float32" or dst == "float32":
            return round_float(v, dst)
        return round_float(v, dst)
    lo, hi = int_range(dst)
    with np.errstate(invalid="ignore"):
        r = np.rint(v)
        r = np.where(np.isnan(r), 0, np.clip(r, lo, hi))
    return r.astype(np.int64).astype(storage(dst))


def scalar_to_storage(value: float | int | bool, elem: str) -> np.generic:
    """A Python number as a one-element value of ``elem`` (TC1 conversion from int/float)."""
    if isinstance(value, (bool, np.bool_)):
        return convert(np.array([int(value)], np.int64), "int32", elem)[0] if elem != "bool" else np.bool_(value)
    if isinstance(value, (int, np.integer)):
        if elem in ("float16", "float32", "bfloat16"):
            return round_float(np.array([float(value)]), elem)[0]
        if elem == "bool":
            return np.bool_(value != 0)
        return saturate(np.array([int(value)]), elem)[0]
    return convert(np.array([float(value)], np.float64).astype(np.float32), "float32", elem)[0] \
        if elem != "float32" else np.float32(value)
