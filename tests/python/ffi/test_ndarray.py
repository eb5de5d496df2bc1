"""NDArray and DLPack: zero copy with numpy and PyTorch, both ways (seed 003)."""
import numpy as np
import pytest

import tilecore
from tilecore import testing

torch = pytest.importorskip("torch")


def test_array_copies_numpy_data():
    a = np.random.randn(1337)
    x = tilecore.nd.array(a)
    assert isinstance(x, tilecore.NDArray)
    assert x.shape == (1337,) and x.dtype == "float64" and x.device == tilecore.cpu(0)
    np.testing.assert_equal(x.numpy(), a)
    a[0] = 123.0
    assert x.numpy()[0] != 123.0  # nd.array made a copy


def test_array_from_list_and_properties():
    x = tilecore.nd.array([[1, 2, 3], [4, 5, 6]], dtype="int32")
    assert x.shape == (2, 3) and x.ndim == 2 and x.strides is None
    assert x.dtype == tilecore.DataType("int32") and x.dtype.itemsize == 4
    assert len(x) == 2
    np.testing.assert_equal(np.asarray(x), [[1, 2, 3], [4, 5, 6]])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64", "bool"])
def test_dtypes_round_trip(dtype):
    a = (np.arange(12) % 2).astype(dtype).reshape(3, 4)
    np.testing.assert_equal(tilecore.nd.array(a).numpy(), a)


def test_empty_and_copyto():
    x = tilecore.nd.empty((2, 2), "float32", tilecore.cpu(0))
    x.copyfrom(np.ones((2, 2), dtype="float32"))
    y = x.copyto(tilecore.cpu(0))
    assert not y.same_as(x)
    np.testing.assert_equal(y.numpy(), np.ones((2, 2)))
    z = tilecore.nd.empty((2, 2), "float32")
    assert x.copyto(z) is z
    np.testing.assert_equal(z.numpy(), np.ones((2, 2)))


def test_copy_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="shape|rank"):
        tilecore.nd.empty((2,), "float32").copyto(tilecore.nd.empty((3,), "float32"))


def test_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    x = tilecore.nd.from_dlpack(a)
    assert x.data_ptr == a.ctypes.data
    a[0, 0] = 42.0
    back = np.from_dlpack(x)
    assert back[0, 0] == 42.0
    back[1, 2] = -1.0
    assert a[1, 2] == -1.0
    assert np.shares_memory(a, back)


def test_torch_shares_memory_both_ways():
    t = torch.rand(56, 56)
    x = tilecore.nd.from_dlpack(t)
    assert x.data_ptr == t.data_ptr()
    np.testing.assert_equal(t.numpy(), x.numpy())
    y = tilecore.nd.from_dlpack(x)
    assert y is x
    t2 = torch.from_dlpack(x)
    assert t2.data_ptr() == t.data_ptr()
    t2[0, 0] = 7.0
    assert t[0, 0] == 7.0
    # Legacy capsule path (torch.utils.dlpack.to_dlpack) as in the seed.
    z = tilecore.nd.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    assert z.data_ptr == t.data_ptr()
    np.testing.assert_equal(torch.utils.dlpack.from_dlpack(z.__dlpack__()).numpy(), t.numpy())


def test_tvm_style_round_trip_through_capsules():
    a = np.random.randn(1337)
    tvm_a = tilecore.nd.array(a)
    np.testing.assert_equal(tilecore.nd.from_dlpack(tvm_a.__dlpack__()).numpy(), a)


def test_versioned_and_legacy_capsules():
    x = tilecore.nd.array(np.arange(4, dtype="int32"))
    assert "dltensor_versioned" in repr(x.__dlpack__(max_version=(1, 1)))
    assert "dltensor_versioned" not in repr(x.__dlpack__())
    assert x.__dlpack_device__() == (1, 0)
    unused = x.__dlpack__(max_version=(1, 0))  # never consumed: freed by the capsule
    del unused


def test_dlpack_copy_flag():
    x = tilecore.nd.array(np.arange(4, dtype="int32"))
    c = np.from_dlpack(x, copy=True)
    c[0] = 100
    assert x.numpy()[0] == 0


def test_arrays_as_arguments_are_zero_copy():
    a = np.zeros(4, dtype="float32")
    t = torch.zeros(4)

    def fill(x, y):
        assert isinstance(x, tilecore.NDArray) and isinstance(y, tilecore.NDArray)
        np.from_dlpack(x)[:] = 1.0
        torch.from_dlpack(y)[:] = 2.0

    testing.apply(fill, a, t)
    assert (a == 1.0).all() and (t == 2.0).all()


def test_ndarray_args_use_count():
    def check(arr):
        assert testing.object_use_count(arr) == 2

    fcheck = tilecore.convert(check)
    x = tilecore.nd.array([1, 2, 3])
    fcheck(x)
    assert testing.object_use_count(x) == 1


def test_python_hook_fills_output_like_an_extern_op(unique_name):
    # The seed's my_tvm_addone: C++ calls a registered Python function with two arrays.
    @tilecore.register_func(unique_name)
    def addone(x, y):
        tilecore.nd.array(x.numpy() + 1).copyto(y)

    a = tilecore.nd.array(np.random.uniform(size=10).astype("float32"))
    b = tilecore.nd.empty((10,), "float32")
    testing.apply(tilecore.get_global_func(unique_name), a, b)
    np.testing.assert_allclose(b.numpy(), a.numpy() + 1, rtol=1e-5)


def test_torch_tensors_through_a_function():
    xx = torch.rand(37, 37)
    yy = torch.rand(37, 37)
    zz2 = torch.empty(37, 37)

    def matmul(x, y, z):
        np.matmul(np.from_dlpack(x), np.from_dlpack(y), out=np.from_dlpack(z))

    testing.apply(matmul, xx, yy, zz2)
    np.testing.assert_allclose(xx.mm(yy).numpy(), zz2.numpy(), rtol=1e-4, atol=1e-4)


def test_npu_device_object():
    dev = tilecore.npu(0)
    assert dev.device_type == 12 and dev.device_id == 0 and repr(dev) == "npu(0)"
    try:
        x = tilecore.nd.empty((4,), "int32", dev)
    except tilecore.TilecoreError as e:
        assert "npu" in str(e)  # no npu device registered in this build
    else:
        assert x.device == dev
        np.testing.assert_equal(tilecore.nd.array(np.arange(4, dtype="int32"), device=dev).numpy(), np.arange(4))
