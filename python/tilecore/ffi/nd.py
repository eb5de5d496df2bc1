"""N-dimensional arrays on devices, shared with numpy and PyTorch through DLPack.

    x = tilecore.nd.array(np.arange(6, dtype="float32").reshape(2, 3))   # a copy
    x.shape, x.dtype, x.device          # (2, 3), DataType('float32'), cpu(0)
    x.numpy()                           # a numpy copy
    v = tilecore.nd.from_dlpack(t)      # zero copy from a torch tensor / numpy array
    np.from_dlpack(v), torch.from_dlpack(v)   # zero copy back
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ._base import _ffi_core
from .device import Device, cpu, kDLCPU
from .object import TypeIndex, register_object

if TYPE_CHECKING:
    import numpy as np


#: dtypes numpy holds through ml_dtypes, which DLPack export/import lacks: copied by bytes.
BYTE_COPIED = frozenset({"bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                         "float8_e8m0fnu"})


def _ml_dtype(name):
    """ml_dtypes' numpy dtype for a BYTE_COPIED name, or None without ml_dtypes."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    import numpy as np

    return np.dtype(getattr(ml_dtypes, name))


@register_object(TypeIndex.NDArray)
class NDArray(_ffi_core.NDArray):
    """An n-dimensional array on a device (a DLTensor with an owner)."""

    __slots__ = ()

    def numpy(self) -> np.ndarray:
        """A numpy array holding a copy of the data (from any device)."""
        import numpy as np

        # tilecore holds dtypes numpy has no form for (int3, int8x4, float6): say so, instead of
        # numpy's "Unsupported dtype in DLTensor"; bfloat16 and float8 come through ml_dtypes.
        name = str(self.dtype)
        ml = _ml_dtype(name) if name in BYTE_COPIED else None
        try:
            ok = ml is not None or np.dtype(name).name == name
        except TypeError:
            ok = False
        if not ok:
            raise TypeError(f"NDArray.numpy: {name} has no numpy equivalent (shape {tuple(self.shape)})")
        host = self if self.device.device_type == kDLCPU else self.copyto(cpu(0))
        if ml is not None:  # numpy's DLPack import lacks these: ml_dtypes' type, by bytes
            import ctypes

            out = np.empty(tuple(host.shape), ml)
            if out.nbytes:
                ctypes.memmove(out.ctypes.data, int(host.data_ptr) + int(host.byte_offset), out.nbytes)
            return out
        try:
            return np.from_dlpack(host).copy()
        except RuntimeError as e:  # e.g. more dimensions than numpy supports
            raise ValueError(f"NDArray.numpy: numpy cannot hold a {len(self.shape)}-d {name} array ({e})") from None

    def copyto(self, target: Device | NDArray) -> NDArray:
        """Copies into ``target``: a Device (returns a new array there) or an NDArray."""
        if isinstance(target, Device):
            target = empty(self.shape, self.dtype, target)
        elif not isinstance(target, _ffi_core.NDArray):
            raise TypeError(f"copyto: expected a Device or an NDArray, got {type(target).__name__}")
        _ffi_core._ndarray_copy_from_to(self, target)
        return target

    def copyfrom(self, source: Any) -> NDArray:
        """Copies ``source`` (an NDArray, numpy array or anything array-like) into this array."""
        if not isinstance(source, _ffi_core.NDArray):
            import numpy as np

            source = from_dlpack(np.ascontiguousarray(np.asarray(source, dtype=str(self.dtype))))
        _ffi_core._ndarray_copy_from_to(source, self)
        return self

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<tilecore.NDArray shape={self.shape} dtype={self.dtype} device={self.device!r}>"


def empty(shape: int | Sequence[int], dtype: Any = "float32", device: Device | None = None) -> NDArray:
    """An uninitialised compact array.

    :param shape: a tuple of int (or an int for 1-D).
    :param dtype: a dtype spelling, numpy dtype or DataType.
    :param device: a Device (default ``cpu(0)``).
    """
    if isinstance(shape, int):
        shape = (shape,)
    return _ffi_core._ndarray_empty(tuple(shape), dtype, device if device is not None else cpu(0))


def array(data: Any, device: Device | None = None, dtype: Any = None) -> NDArray:
    """A new array on ``device`` holding a copy of ``data``.

    :param data: a numpy array, anything ``numpy.asarray`` accepts, or an NDArray.
    :param device: a Device (default ``cpu(0)``).
    :param dtype: convert to this dtype first (numpy spelling).
    """
    import numpy as np

    if isinstance(data, _ffi_core.NDArray) and dtype is None:
        return data.copyto(device if device is not None else cpu(0))
    host = np.asarray(data, dtype=dtype)
    if not host.flags.c_contiguous:  # (np.ascontiguousarray would turn a 0-d array into shape (1,))
        host = np.ascontiguousarray(host)
    if host.dtype == object:
        raise TypeError("nd.array: data of dtype object cannot become an NDArray")
    if host.dtype.name in BYTE_COPIED:  # ml_dtypes' types have no DLPack export: copied by bytes
        import ctypes

        out = empty(host.shape, host.dtype.name, device)
        if host.nbytes:
            ctypes.memmove(int(out.data_ptr) + int(out.byte_offset), host.ctypes.data, host.nbytes)
        return out
    out = empty(host.shape, str(host.dtype), device)
    _ffi_core._ndarray_copy_from_to(from_dlpack(host), out)
    return out


def from_dlpack(x: Any) -> NDArray:
    """An NDArray sharing memory with ``x`` (numpy array, torch tensor, DLPack capsule).

    No data is copied: writes through either side are visible to the other.
    """
    if isinstance(x, _ffi_core.NDArray):
        return x
    return _ffi_core._from_dlpack(x)


__all__ = ["NDArray", "array", "empty", "from_dlpack"]
