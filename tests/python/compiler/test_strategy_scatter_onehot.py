"""ScatterElements, Scatter and OneHot with run-time int32, int64 (and, for OneHot, float)
indices on 4 simulated TC1 cores against the op library's numpy reference and numpy."""
import numpy as np
import pytest

from tilecore import compiler
from strategy_util import check_op, rand, run_lowered


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("shape,axis,k,itype", [
    ((5, 7), 0, 3, np.int64),
    ((4, 6, 9), 1, 11, np.int32),          # more updates than the axis: duplicates
    ((3, 5, 8), -1, 4, np.int64),
    ((2, 300, 700), 1, 5, np.int64),       # blocks of columns over the cores
])
def test_scatter_elements(reduction, shape, axis, k, itype):
    x = rand(shape, 1)
    ishape = list(shape)
    ishape[axis] = k
    n = shape[axis]
    idx = np.random.default_rng(3).integers(-n, n, ishape).astype(itype)
    upd = rand(tuple(ishape), 2)
    check_op("ScatterElements", {"axis": axis, "reduction": reduction}, [x, idx, upd], rtol=1e-5, atol=1e-5)


def test_duplicates_apply_in_index_order():
    # the last update of an index wins (numpy's fancy assignment does the same)
    x = np.zeros((1, 5), np.float32)
    idx = np.array([[1, 3, 1, 1]], np.int64)
    upd = np.array([[1, 2, 3, 4]], np.float32)
    out = run_lowered("ScatterElements", {"axis": 1}, [x, idx, upd], [np.zeros_like(x)])[0]
    np.testing.assert_array_equal(out, [[0, 4, 0, 2, 0]])
    check_op("Scatter", {"axis": 1}, [x, np.array([[4, 0]], np.int32), np.array([[7, 8]], np.float32)])


def test_scatter_reasons():
    f, i = compiler.TensorSpec((4, 4), "float32"), compiler.TensorSpec((2, 3), "int64")
    assert "equal" in compiler.HasStrategy("ScatterElements", {}, [f, i, compiler.TensorSpec((2, 3), "float32")])
    assert "reduction" in compiler.HasStrategy("ScatterElements", {"reduction": "xor"},
                                               [f, compiler.TensorSpec((2, 4), "int64"),
                                                compiler.TensorSpec((2, 4), "float32")])


@pytest.mark.parametrize("ishape,axis,depth", [((6,), -1, 5), ((3, 4), 0, 7), ((2, 3, 5), 1, 4),
                                               ((4, 1000), -1, 3)])
@pytest.mark.parametrize("itype", [np.int64, np.int32, np.float32])
def test_onehot(ishape, axis, depth, itype):
    # negative indices count from the end; out of range ones give a row of off values
    idx = np.random.default_rng(1).integers(-depth - 2, depth + 2, ishape).astype(itype)
    values = np.array([-1.5, 4.0], np.float32)
    check_op("OneHot", {"axis": axis}, [idx, np.array(depth, np.float32), values])
    check_op("OneHot", {"axis": axis}, [idx, np.array(depth, np.int64), values.astype(np.int32)])


def test_onehot_wide_and_fractional_indices():
    values = np.array([0, 1], np.int32)
    big = np.array([2**32 + 1, -(2**32), 2], np.int64)   # beyond int32: out of range, not 1 or 0
    out = run_lowered("OneHot", {}, [big, np.array(3, np.int64), values], [np.zeros((3, 3), np.int32)])[0]
    np.testing.assert_array_equal(out, [[0, 0, 0], [0, 0, 0], [0, 0, 1]])
    frac = np.array([1.7, -0.5, -1.2], np.float32)         # truncated toward zero: 1, 0, -1
    out = run_lowered("OneHot", {}, [frac, np.array(3, np.float32), values], [np.zeros((3, 3), np.int32)])[0]
    np.testing.assert_array_equal(out, [[0, 1, 0], [1, 0, 0], [0, 0, 1]])


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dshape,ishape", [
    ((8,), (4, 1)),                 # elements
    ((4, 4, 4), (2, 1)),            # whole matrices
    ((5, 6, 7), (3, 2, 2)),         # rows, 2-D grid of tuples
    ((3, 40000), (5, 1)),           # a slice longer than one piece
])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_scatter_nd(reduction, dshape, ishape, itype):
    rng = np.random.default_rng(6)
    q = ishape[-1]
    idx = np.stack([rng.integers(-n, n, ishape[:-1]) for n in dshape[:q]], -1).astype(itype)
    x, upd = rand(dshape, 1), rand(ishape[:-1] + dshape[q:], 2)
    check_op("ScatterND", {"reduction": reduction}, [x, idx, upd], rtol=1e-5, atol=1e-5)


def test_scatter_nd_duplicates_apply_in_order():
    x = np.zeros((4,), np.float32)
    idx = np.array([[1], [2], [1], [-3]], np.int64)           # -3 is 1 as well
    upd = np.array([5, 6, 7, 8], np.float32)
    out = run_lowered("ScatterND", {}, [x, idx, upd], [np.zeros_like(x)])[0]
    np.testing.assert_array_equal(out, [0, 8, 6, 0])
    out = run_lowered("ScatterND", {"reduction": "add"}, [x, idx, upd], [np.zeros_like(x)])[0]
    np.testing.assert_array_equal(out, [0, 20, 6, 0])
