"""Gather and GatherElements with run-time int32 and int64 indices on 4 simulated TC1 cores against the op
library's numpy reference (and np.take)."""
import numpy as np
import pytest

from tilecore import compiler
from strategy_util import check_op, rand, run_lowered, run_op


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


def test_int64_indices():
    # int64 indices (what exporters emit) are read as two int32 words and narrowed
    x = rand((9, 6), 1)
    idx = np.array([[0, 8, -1], [-9, 3, 4]], np.int64)
    check_op("Gather", {"axis": 0}, [x, idx])
    check_op("Gather", {"axis": 1}, [x, np.arange(-6, 6, dtype=np.int64)])
    check_op("Gather", {"axis": 0}, [x, np.arange(10001, dtype=np.int64) % 9])   # several chunks


def test_int64_indices_beyond_int32_stay_out_of_range():
    # an index that does not fit int32 saturates: still out of range, so it reads what an
    # out-of-range int32 index reads (the clamped end), never the slice its low word names
    # (2**32 + 1 -> 1, 2**40 -> 0)
    x = rand((9, 6), 1)
    big = np.array([2**32 + 1, -(2**32) - 1, 2**40, 3], np.int64)
    np.testing.assert_array_equal(_gather_unchecked(x, big), x[[8, 0, 8, 3]])
    np.testing.assert_array_equal(_gather_unchecked(x, np.array([2**31 - 1, -(2**31)], np.int32)), x[[8, 0]])


def _gather_unchecked(x, idx):
    """Gather on the simulator without the numpy reference (which rejects out-of-range indices)."""
    return run_lowered("Gather", {"axis": 0}, [x, idx], [np.zeros((idx.size,) + x.shape[1:], x.dtype)])[0]


def test_index_dtypes():
    x = compiler.TensorSpec((4, 4), "float32")
    assert compiler.HasStrategy("Gather", {}, [x, compiler.TensorSpec((2,), "int64")]) == ""
    assert "int32 and int64 indices" in compiler.HasStrategy("Gather", {}, [x, compiler.TensorSpec((2,), "int16")])
    # a 64-bit input the strategy does not take as indices keeps the op off the npu
    assert "64-bit" in compiler.HasStrategy("Gather", {}, [compiler.TensorSpec((4,), "int64"),
                                                         compiler.TensorSpec((2,), "int64")])


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
    assert compiler.HasStrategy("GatherElements", {}, [x, compiler.TensorSpec((4, 4), "int64")]) == ""


def test_gather_elements_int64_indices():
    x = rand((3, 5, 8), 1)
    idx = np.random.default_rng(4).integers(-5, 5, (3, 7, 8)).astype(np.int64)
    check_op("GatherElements", {"axis": 1}, [x, idx])


@pytest.mark.parametrize("dshape,ishape,batch_dims", [
    ((4, 5), (3, 2), 0),               # whole elements
    ((4, 5, 6), (2, 3, 1), 0),         # rows
    ((3, 4, 5), (3, 2, 1), 1),         # one batch dim
    ((2, 3, 4, 5), (2, 3, 7, 1), 2),   # two batch dims, several tuples per batch
    ((50, 40), (9000, 1), 0),          # several chunks over the cores
])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_gather_nd(dshape, ishape, batch_dims, itype):
    x = rand(dshape, 1)
    rng = np.random.default_rng(5)
    dims = dshape[batch_dims:batch_dims + ishape[-1]]
    idx = np.stack([rng.integers(-n, n, ishape[:-1]) for n in dims], -1).astype(itype)
    check_op("GatherND", {"batch_dims": batch_dims}, [x, idx])


def test_gather_nd_reasons():
    x = compiler.TensorSpec((4, 5), "float32")
    assert "do not fit" in compiler.HasStrategy("GatherND", {}, [x, compiler.TensorSpec((2, 3), "int64")])
    assert "batch dims" in compiler.HasStrategy("GatherND", {"batch_dims": 1},
                                                [x, compiler.TensorSpec((3, 1), "int64")])
