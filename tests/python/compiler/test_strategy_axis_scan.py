"""CumSum, CumProd, ArgMax and ArgMin (strategy_axis_scan.cc) on 4 simulated TC1 cores
against numpy."""
import numpy as np
import pytest

from tilecore import compiler
from strategy_util import rand, run_lowered

SHAPES = [((7,), 0), ((4, 9), 1), ((5, 6, 3), 1), ((3, 4, 5), -1), ((2, 70, 900), 1)]


@pytest.mark.parametrize("shape,axis", SHAPES)
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum(shape, axis, exclusive, reverse):
    x = rand(shape, 1)
    want = np.flip(np.cumsum(np.flip(x, axis) if reverse else x, axis=axis, dtype=np.float64), axis) \
        if reverse else np.cumsum(x, axis=axis, dtype=np.float64)
    if exclusive:
        want = want - x
    outs = run_lowered("CumSum", {"axis": axis, "exclusive": exclusive, "reverse": reverse}, [x],
                       [np.zeros(x.shape, np.float32)])
    np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-4)


def test_cumsum_int32_and_cumprod():
    x = rand((6, 5), 2, -9, 9, np.int32)
    outs = run_lowered("CumSum", {"axis": 0}, [x], [np.zeros(x.shape, np.int32)])
    np.testing.assert_array_equal(outs[0], np.cumsum(x, axis=0))
    y = rand((4, 7), 3, 0.5, 1.5)
    outs = run_lowered("CumProd", {"axis": 1, "reverse": 1}, [y], [np.zeros(y.shape, np.float32)])
    np.testing.assert_allclose(outs[0], np.flip(np.cumprod(np.flip(y, 1), axis=1), 1), rtol=1e-5)
    outs = run_lowered("CumProd", {"axis": 0, "exclusive": 1}, [x], [np.zeros(x.shape, np.int32)])
    want = np.concatenate([np.ones((1, 5), np.int64), np.cumprod(x[:-1].astype(np.int64), axis=0)])
    np.testing.assert_array_equal(outs[0], want.astype(np.int32))


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("shape,axis", SHAPES)
@pytest.mark.parametrize("keepdims,last", [(1, 0), (0, 1)])
def test_arg(op, shape, axis, keepdims, last):
    # ties (a few levels of integers) tell select_last_index apart
    x = rand(shape, 4, -3, 3, np.int32).astype(np.float32)
    f = np.argmax if op == "ArgMax" else np.argmin
    want = f(np.flip(x, axis), axis=axis) if last else f(x, axis=axis)
    if last:
        want = shape[axis] - 1 - want
    if keepdims:
        want = np.expand_dims(want, axis)
    outs = run_lowered(op, {"axis": axis, "keepdims": keepdims, "select_last_index": last}, [x],
                       [np.zeros(want.shape, np.int64)])
    assert outs[0].dtype == np.int64
    np.testing.assert_array_equal(outs[0], want)


def test_reasons():
    f = compiler.TensorSpec((4, 5), "float32")
    assert "constant" in compiler.HasStrategy("CumSum", {}, [f])
    assert "range" in compiler.HasStrategy("ArgMax", {"axis": 2}, [f])
    assert "64-bit" in compiler.HasStrategy("ArgMax", {}, [compiler.TensorSpec((4,), "int64")])
    assert "float32" in compiler.HasStrategy("CumSum", {"axis": 0}, [compiler.TensorSpec((4,), "int8")])


@pytest.mark.parametrize("shape,axis,k", [((3, 4), 1, 3), ((5, 6, 7), 1, 6), ((4, 50), -1, 5), ((2, 9, 300), 1, 2)])
@pytest.mark.parametrize("largest", [1, 0])
def test_topk(shape, axis, k, largest):
    # ties (a few levels of integers) go to the lower index, as a stable sort
    x = rand(shape, 5, -4, 4, np.int32).astype(np.float32)
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    oshape = list(shape)
    oshape[axis] = k
    values, indices = run_lowered("TopK", {"axis": axis, "largest": largest}, [x],
                                  [np.zeros(oshape, np.float32), np.zeros(oshape, np.int64)])
    np.testing.assert_array_equal(indices, idx)
    np.testing.assert_array_equal(values, np.take_along_axis(x, idx, axis))
