"""Device and DataType values (seed 003: device functions)."""
import pickle

import numpy as np
import pytest

import tilecore
from tilecore import testing


def test_device_function_both_ways():
    def test_device_func(dev):
        assert tilecore.npu(7) == dev
        return tilecore.cpu(0)

    x = testing.apply(test_device_func, tilecore.npu(7))
    assert x == tilecore.cpu(0)
    x = tilecore.npu(10)
    assert testing.device_test(x, x.device_type, x.device_id) == tilecore.npu(10)


def test_device_construction_and_hash():
    assert tilecore.Device("npu", 1) == tilecore.npu(1)
    assert tilecore.Device("npu:2") == tilecore.npu(2)
    assert tilecore.device("cpu") == tilecore.cpu(0)
    assert tilecore.device("npu:1") == tilecore.npu(1)  # the id in the name is kept
    assert tilecore.device("npu:1", 3) == tilecore.npu(3) and tilecore.device(12, 2) == tilecore.npu(2)
    assert hash(tilecore.npu(3)) == hash(tilecore.Device(12, 3))
    assert tilecore.npu(0) != tilecore.cpu(0)
    assert pickle.loads(pickle.dumps(tilecore.npu(5))) == tilecore.npu(5)
    with pytest.raises(TypeError):
        tilecore.Device(1.5)


def test_dtype_values():
    f32 = tilecore.DataType("float32")
    assert str(f32) == "float32" and f32 == "float32" and f32 != "int8"
    assert (f32.type_code, f32.bits, f32.lanes) == (2, 32, 1)
    assert tilecore.DataType(np.float32) == f32
    assert tilecore.DataType(np.dtype("float32")) == f32
    assert tilecore.dtype("int8x4").lanes == 4
    assert testing.echo(f32) == f32
    assert pickle.loads(pickle.dumps(f32)) == f32
    with pytest.raises(ValueError):
        tilecore.DataType("floaty")
