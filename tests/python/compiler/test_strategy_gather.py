"""Gather with run-time int32 indices on 4 simulated TC1 cores against the op
library's numpy reference (and np.take)."""
import numpy as np
import pytest

from tilecore import compiler
from strategy_util import check_op, rand, run_op


@pytest.mark.parametrize("shape,axis,ishape", [
    ((7, 5), 0, (3,)),
    ((3, 11, 4), 1, (2, 5)),      # 2-D indices
    ((4, 6, 5), -1, (9,)),        # negative axis, repeated indices
    ((13,), 0, ()),               # scalar index
    ((9, 3), 0, (10001,)),        # several chunks and a remainder chunk over the cores
])
def test_gather(shape, axis, ishape):
    x = rand(shape, 1)
    n = shape[axis]
    idx = np.random.default_rng(2).integers(-n, n, ishape).astype(np.int32)
    check_op("Gather", {"axis": axis}, [x, idx])


def test_gather_dtypes_and_embedding():
    table = rand((1000, 96), 3, -100, 100, np.int32)          # an embedding table
    ids = np.array([[5, 999, 0, 17, -1]], np.int32)
    check_op("Gather", {"axis": 0}, [table, ids])
    check_op("Gather", {"axis": 1}, [rand((4, 9), 4, 0, 9, np.uint8), np.array([8, 0, 3], np.int32)])


def test_gather_bigger_than_l1():
    x = rand((600, 1024), 5)   # 2.4 MiB
    idx = np.arange(599, -1, -3, dtype=np.int32)
    check_op("Gather", {"axis": 0}, [x, idx])


def test_int64_indices_go_to_host():
    x = compiler.TensorSpec((4, 4), "float32")
    assert "64-bit" in compiler.HasStrategy("Gather", {}, [x, compiler.TensorSpec((2,), "int64")])
    assert "int32 indices" in compiler.HasStrategy("Gather", {}, [x, compiler.TensorSpec((2,), "int16")])


@pytest.mark.parametrize("shape,axis,k", [
    ((5, 7), 0, 3),
    ((4, 6, 9), 1, 11),           # more indices than the axis
    ((3, 5, 8), -1, 4),           # last axis, negative
    ((2, 300, 700), 1, 5),        # 1.7 MB of data: blocks of columns over the cores
])
def test_gather_elements(shape, axis, k):
    x = rand(shape, 1)
    ishape = list(shape)
    ishape[axis] = k
    n = shape[axis]
    idx = np.random.default_rng(3).integers(-n, n, ishape).astype(np.int32)
    want = np.take_along_axis(x, np.where(idx < 0, idx + n, idx), axis=axis)
    outs, refs, _ = run_op("GatherElements", {"axis": axis}, [x, idx])
    np.testing.assert_array_equal(outs[0], refs[0])
    np.testing.assert_array_equal(outs[0], want)


def test_gather_elements_reasons():
    x = compiler.TensorSpec((4, 4), "float32")
    assert "equal" in compiler.HasStrategy("GatherElements", {"axis": 0}, [x, compiler.TensorSpec((2, 3), "int32")])
    assert "64-bit" in compiler.HasStrategy("GatherElements", {}, [x, compiler.TensorSpec((4, 4), "int64")])
