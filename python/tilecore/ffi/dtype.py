"""Element data types: ``DataType("float32")``, ``"int8x4"``, ``"bool"``, ``"bfloat16"``.

A :class:`DataType` compares equal to its spelling (``arr.dtype == "float32"``) and
accepts numpy dtypes and scalar types (``DataType(np.float32)``).
"""

from __future__ import annotations

from typing import Any

from ._base import _ffi_core

DataType = _ffi_core.DataType


def dtype(spec: str | DataType | Any) -> DataType:
    """The :class:`DataType` for a spelling, numpy dtype or DataType."""
    return DataType(spec)


__all__ = ["DataType", "dtype"]
