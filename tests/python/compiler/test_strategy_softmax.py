"""Softmax and LogSoftmax strategies on 4 simulated TC1 cores against the op library's
numpy reference: odd sizes, inner axes (a broadcast of the row statistics), negative
axes, the pre-13 flattening, a row too long for one tile and large inputs (stability)."""
import numpy as np
import pytest

from tilecore import compiler
from strategy_util import check_op, rand, run_lowered, run_op


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape,axis", [
    ((7,), 0),
    ((5, 33), -1),          # odd rows
    ((3, 17, 6), 1),        # an inner axis: the statistics broadcast over the last dim
    ((2, 3, 5, 7), -3),     # negative axis
    ((4, 9, 5), 0),
])
def test_softmax(op, shape, axis):
    check_op(op, {"axis": axis}, [rand(shape, 1, -4, 4)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_long_rows_in_chunks(op):
    # a row of 40000 elements does not fit one tile: three passes over chunks, with a remainder
    check_op(op, {"axis": -1}, [rand((2, 40000), 2, -6, 6)], rtol=1e-4, atol=1e-8)


def test_bigger_than_l1():
    # 1.5 MiB in, 1.5 MiB out; rows of 1000 over many tiles and cores
    check_op("Softmax", {"axis": 1}, [rand((384, 1000), 3, -3, 3)], rtol=1e-5, atol=1e-7)


def test_stable_for_large_inputs():
    x = rand((4, 50), 4, 500, 900)
    check_op("Softmax", {"axis": -1}, [x], rtol=1e-4, atol=1e-7)
    check_op("LogSoftmax", {"axis": -1}, [x], rtol=1e-4, atol=1e-3)


def test_legacy_flattening():
    check_op("Softmax", {"axis": 1, "_opset": 11}, [rand((3, 4, 5), 5)], rtol=1e-5, atol=1e-7)


def test_reasons():
    f64 = compiler.TensorSpec((4, 4), "float64")
    assert "64-bit" in compiler.HasStrategy("Softmax", {}, [f64])
    i32 = compiler.TensorSpec((4, 4), "int32")
    assert "int32" in compiler.HasStrategy("Softmax", {}, [i32])
    f = compiler.TensorSpec((4, 4), "float32")
    assert "axis" in compiler.HasStrategy("LogSoftmax", {"axis": 2}, [f])
    assert "axis" in compiler.HasStrategy("LogSoftmax", {"axis": -3}, [f])


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("shape,axis", [((5, 33), -1), ((3, 17, 6), 1), ((2, 40000), 1)])
def test_lp_normalization(p, shape, axis):
    x = rand(shape, 6, -3, 3)
    x[0] = 0.0  # a zero norm gives zeros
    check_op("LpNormalization", {"axis": axis, "p": p}, [x], rtol=1e-5, atol=1e-7)
    assert "p must be 1 or 2" in compiler.HasStrategy("LpNormalization", {"p": 3},
                                                      [compiler.TensorSpec(shape, "float32")])


def test_over_channels_of_a_wide_map():
    # a short axis before a long one: whole rows in a tile, columns split over the cores
    check_op("Softmax", {"axis": 1}, [rand((1, 5, 70000), 7, -3, 3)], rtol=1e-5, atol=1e-7)


def test_empty():
    check_op("Softmax", {"axis": 1}, [np.zeros((0, 5), np.float32)])


@pytest.mark.parametrize("shape,axis", [((5, 33), -1), ((3, 17, 6), 1), ((2, 20000), 1)])
def test_hardmax(shape, axis):
    x = np.round(rand(shape, 8, -3, 3))  # ties: the first maximum wins
    check_op("Hardmax", {"axis": axis}, [x])


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_rows_pipelined(op, hazard_checked):
    """BERT's attention probabilities (4 heads of 128 x 128): tiles of whole rows, four per
    core, software-pipelined (the load of tile i + 1, the passes of tile i and the store of
    tile i - 1 at once): four loads and four stores on every core."""
    x = rand((4, 128, 128), 5, -6, 6)
    check_op(op, {"axis": -1}, [x], rtol=1e-5, atol=1e-6)
    _, _, st = run_op(op, {"axis": -1}, [x])
    assert all(c["din"]["commands"] == 4 and c["dout"]["commands"] == 4 for c in st["cores"])
    # 20 rows of 1000: tiles of 2 rows, 2 or 3 a core
    check_op(op, {"axis": -1}, [rand((20, 1000), 6, -6, 6)], rtol=1e-5, atol=1e-6)
    assert hazard_checked() == []


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_rows_pipelined_with_a_shorter_last_tile(op, hazard_checked):
    """4 x 199 rows (an audio transformer's attention over 199 frames) have no divisor near
    the 20 rows a tile that give each core four tiles: tiles of 20 rows, pipelined, and the
    16 left over one shorter tile on the next core (the loads, stores and passes overlapped,
    where one tile a core ran them one after another)."""
    x = rand((1, 4, 199, 199), 7, -6, 6)
    outs, refs, st = run_op(op, {"axis": -1}, [x])
    np.testing.assert_allclose(outs[0], refs[0], rtol=1e-5, atol=1e-6)
    loads = sorted(c["din"]["commands"] for c in st["cores"])
    assert sum(loads) == 796 // 20 + 1 and loads[-1] - loads[0] <= 1, loads
    assert hazard_checked() == []


@pytest.mark.parametrize("zero_point", [0, -3])
def test_rows_pipelined_store_int8(zero_point, hazard_checked):
    """tc_y_scale: the probabilities quantised on store as a reader would on load
    (p times f32(1 / scale), plus the zero point, rounded to nearest even, saturated)."""
    x = rand((64, 48), 6, -5, 5)
    scale = 1 / 127
    attrs = {"axis": -1, "tc_y_scale": scale, "tc_y_zero_point": zero_point}
    y = run_lowered("Softmax", attrs, [x], [np.zeros((64, 48), np.int8)])[0]
    e = np.exp(x - x.max(-1, keepdims=True))
    p = (e * (np.float32(1) / e.sum(-1, keepdims=True, dtype=np.float32))).astype(np.float32)
    q = np.clip(np.rint(p * np.float32(1 / scale) + np.float32(zero_point)), -128, 127)
    assert np.abs(y.astype(np.int32) - q.astype(np.int32)).max() <= 1
    assert np.mean(y == q) > 0.99
    assert hazard_checked() == []
