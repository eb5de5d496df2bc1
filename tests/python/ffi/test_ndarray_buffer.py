"""numpy arrays passed to packed functions through the buffer protocol
(python/csrc/ndarray_buffer.cc): the NDArray shares the array's memory with its shape,
strides, dtype and writability; what the buffer cannot describe goes through __dlpack__,
whose error reaches the caller."""
import numpy as np
import pytest

from tilecore import testing


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                   "uint64", "float16", "float32", "float64"])
def test_every_dlpack_dtype_round_trips(dtype):
    a = (np.arange(24) % 3).astype(dtype).reshape(2, 3, 4)
    r = testing.echo(a)
    assert str(r.dtype) == dtype and r.shape == (2, 3, 4)
    np.testing.assert_array_equal(r.numpy(), a)


def test_memory_is_shared_not_copied():
    a = np.arange(8, dtype=np.int32)
    r = testing.echo(a)
    assert r.data_ptr == a.ctypes.data
    a[3] = 99
    assert r.numpy()[3] == 99


def test_strided_and_zero_dim_views():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[1:, ::2]
    r = testing.echo(view)
    assert r.shape == (3, 3) and r.strides == (6, 2)
    np.testing.assert_array_equal(r.numpy(), view)
    scalar = testing.echo(np.array(2.5, dtype=np.float64))
    assert scalar.shape == () and float(scalar.numpy()) == 2.5


def test_read_only_array_stays_read_only():
    a = np.zeros(4, dtype=np.float32)
    a.flags.writeable = False
    r = testing.echo(a)
    with pytest.raises(Exception, match="read-only"):
        r.copyfrom(np.ones(4, dtype=np.float32))
    assert not a.any()


def test_what_the_buffer_cannot_describe_gets_the_dlpack_error():
    with pytest.raises(BufferError, match="byte order"):
        testing.echo(np.arange(4, dtype=">i4"))
    with pytest.raises(Exception, match="complex|dtype|DLPack|support"):
        testing.echo(np.zeros(2, dtype=np.complex64).astype("V8"))
