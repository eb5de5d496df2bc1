"""tilecore/ir/ops/_numeric.py — dtype and numerics helpers of the math op families.

ONNX element-type numbers to numpy dtypes (bfloat16, float8, float4 and the 2/4-bit
integers from ml_dtypes), the opset an op runs at, and `float_compute`, which runs
float math of narrow types (float16, bfloat16, float8) in float32 and rounds the
result back once, as ONNX Runtime does.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import numpy as np

from .registry import OpError, TensorInfo

try:  # ml_dtypes comes with onnx; without it the narrow float types are unavailable
    import ml_dtypes as _mld
except ImportError:  # pragma: no cover
    _mld = None

#: The newest opset the library implements (used when no "_opset" is given).
LATEST_OPSET = 28


def opset(attrs: dict) -> int:
    """The opset of the model the node comes from (`attrs["_opset"]`), else the newest."""
    v = attrs.get("_opset")
    return int(v) if v else LATEST_OPSET


def _ml(name: str) -> Optional[np.dtype]:
    return np.dtype(getattr(_mld, name)) if _mld is not None and hasattr(_mld, name) else None


#: ONNX TensorProto.DataType number -> numpy dtype.
ONNX_DTYPES: Dict[int, Optional[np.dtype]] = {
    1: np.dtype(np.float32), 2: np.dtype(np.uint8), 3: np.dtype(np.int8), 4: np.dtype(np.uint16),
    5: np.dtype(np.int16), 6: np.dtype(np.int32), 7: np.dtype(np.int64), 8: np.dtype(object),
    9: np.dtype(np.bool_), 10: np.dtype(np.float16), 11: np.dtype(np.float64), 12: np.dtype(np.uint32),
    13: np.dtype(np.uint64), 14: np.dtype(np.complex64), 15: np.dtype(np.complex128),
    16: _ml("bfloat16"), 17: _ml("float8_e4m3fn"), 18: _ml("float8_e4m3fnuz"), 19: _ml("float8_e5m2"),
    20: _ml("float8_e5m2fnuz"), 21: _ml("uint4"), 22: _ml("int4"), 23: _ml("float4_e2m1fn"),
    24: _ml("float8_e8m0fnu"), 25: _ml("uint2"), 26: _ml("int2"),
}
_NAMES = {16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ",
          21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2"}


def onnx_dtype(code: int, where: str) -> np.dtype:
    """The numpy dtype of ONNX element type `code`; OpError for an unknown one."""
    dt = ONNX_DTYPES.get(int(code))
    if dt is None:
        name = _NAMES.get(int(code), str(code))
        raise OpError(f"{where}: ONNX element type {name} is not supported (known: "
                      f"{sorted(k for k, v in ONNX_DTYPES.items() if v is not None)})")
    return dt


def dtype_code(dtype: np.dtype) -> int:
    """The ONNX element type number of a numpy dtype."""
    dtype = np.dtype(dtype)
    for code, dt in ONNX_DTYPES.items():
        if dt == dtype:
            return code
    raise OpError(f"dtype {dtype} has no ONNX element type")


#: Narrow float types whose math runs in float32.
NARROW_FLOATS = tuple(d for d in (np.dtype(np.float16), _ml("bfloat16"), _ml("float8_e4m3fn"),
                                  _ml("float8_e4m3fnuz"), _ml("float8_e5m2"), _ml("float8_e5m2fnuz"),
                                  _ml("float4_e2m1fn"), _ml("float8_e8m0fnu")) if d is not None)
SMALL_INTS = tuple(d for d in (_ml("int4"), _ml("uint4"), _ml("int2"), _ml("uint2")) if d is not None)


def is_float(dtype: np.dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype in NARROW_FLOATS


def is_int(dtype: np.dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind in "iu" or dtype in SMALL_INTS


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for narrow floats, the dtype itself otherwise."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype in NARROW_FLOATS else dtype


def wide(x: np.ndarray) -> np.ndarray:
    """`x` in its compute dtype (narrow floats widened to float32)."""
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype in NARROW_FLOATS else x


def float_compute(fn: Callable[..., Any], *xs: np.ndarray, out_dtype: Optional[np.dtype] = None) -> np.ndarray:
    """`fn(*xs)` with narrow floats widened to float32, the result cast to `out_dtype`
    (default: the first input's dtype)."""
    dtype = np.asarray(xs[0]).dtype if out_dtype is None else np.dtype(out_dtype)
    result = np.asarray(fn(*(wide(x) if x is not None else None for x in xs)))
    return result.astype(dtype, copy=False) if result.dtype != dtype else result


def check_dtype(where: str, info: Optional[TensorInfo], allowed: Callable[[np.dtype], bool], what: str) -> None:
    """OpError when the dtype of `info` fails `allowed` (`what` names the accepted set)."""
    if info is not None and info.dtype is not None and not allowed(np.dtype(info.dtype)):
        raise OpError(f"{where}: input of dtype {np.dtype(info.dtype)} is not supported ({what})")


def same_dtypes(where: str, *infos: Optional[TensorInfo]) -> None:
    """OpError unless every given input has one dtype."""
    given = [np.dtype(i.dtype) for i in infos if i is not None and i.dtype is not None]  # (None: not known)
    if any(d != given[0] for d in given[1:]):
        raise OpError(f"{where}: inputs must share one dtype, got {', '.join(map(str, given))}")
