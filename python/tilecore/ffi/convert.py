"""tilecore.convert: a Python value in its tilecore form."""

from __future__ import annotations

from typing import Any

from ._base import _ffi_core


def convert(value: Any) -> Any:
    """Converts a Python value to the form it takes when passed to C++.

    - list / tuple -> :class:`tilecore.Array` (items converted recursively)
    - dict -> :class:`tilecore.Map`
    - callable -> :class:`tilecore.Function` (C++ can call it back)
    - numpy array, PyTorch tensor, anything with ``__dlpack__`` -> :class:`tilecore.NDArray`
      sharing its memory
    - int, float, bool, None, str, bytes, Device, DataType and tilecore objects come
      back as they are (bytes/bytearray come back as bytes).
    """
    return _ffi_core._convert(value)


__all__ = ["convert"]
