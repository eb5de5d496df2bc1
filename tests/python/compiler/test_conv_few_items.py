"""A Conv with fewer work items than cores (a projection to 40 channels over 14 x 14
positions: one or two blocks of output channels, all its rows in one item) also has plans
with fewer rows per item, so that every core takes a share of the positions; the cost model
picks them over leaving cores idle. Checked against numpy (f32) and bit for bit against the
docs' int8 arithmetic, every L1 access ordered (the simulator's hazard mode)."""
import numpy as np
import pytest

from tilecore import compiler

from strategy_util import run_lowered
from test_fuse_epilogue import int8_residual_ref
from test_precision import conv_ref

pytestmark = pytest.mark.npu

RNG = np.random.default_rng(45)
TARGET = "npu -cores=4"
SX, ZX, SR, ZR, SY, ZY = 0.05, -3, 0.04, 5, 0.03, -7


def busy_cores(attrs, ins, out):
    """How many cores the chosen plan gives matrix work (the cost model's engine_busy)."""
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(out.shape, str(out.dtype))], TARGET)
    return sum(core["mm"] > 0 for core in compiler.estimate_cost(f, TARGET)["engine_busy"])


def test_f32_projection_uses_every_core(hazard_checked):
    x = RNG.standard_normal((1, 96, 14, 14)).astype(np.float32)
    w = (RNG.standard_normal((40, 96, 1, 1)) * 0.2).astype(np.float32)
    b = RNG.standard_normal(40).astype(np.float32)
    out = np.zeros((1, 40, 14, 14), np.float32)
    assert busy_cores({}, [x, w, b], out) == 4
    got = run_lowered("Conv", {}, [x, w, b], [out])[0]
    want = conv_ref(x.astype(np.float64), w.astype(np.float64)) + b.reshape(1, -1, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert hazard_checked() == []


def test_int8_projection_with_residual_uses_every_core(hazard_checked):
    """int8 in and out, an int8 residual in its units (MobileNetV3's projections)."""
    xq = RNG.integers(-128, 128, (1, 240, 14, 14)).astype(np.int8)
    wq = RNG.integers(-127, 128, (40, 240, 1, 1)).astype(np.int8)
    bq = RNG.integers(-2000, 2000, 40).astype(np.int32)
    w_scale = (RNG.random(40) * 0.002 + 0.0005).astype(np.float32)
    rq = RNG.integers(-128, 128, (1, 40, 14, 14)).astype(np.int8)
    attrs = {"tc_precision": "int8", "tc_x_scale": SX, "tc_x_zero_point": ZX, "tc_residual": 1,
             "tc_residual_scale": SR, "tc_residual_zero_point": ZR, "tc_y_scale": SY, "tc_y_zero_point": ZY}
    ins, out = [xq, wq, bq, w_scale, rq], np.zeros((1, 40, 14, 14), np.int8)
    assert busy_cores(attrs, ins, out) == 4
    got = run_lowered("Conv", attrs, ins, [out])[0]
    # (the bias carries the zero point's share of the sums: the kernel sums the stored codes)
    acc = conv_ref(xq.astype(np.int64), wq.astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(got, int8_residual_ref(acc, w_scale, SX, rq, SR, ZR, None, None, SY, ZY))
    assert hazard_checked() == []


def test_int8_squeeze_excite_expansion_takes_one_block_a_core(hazard_checked):
    """A squeeze-excite's fc2 (48 to 1,152 channels over one position): blocks of 32 split
    evenly over the cores (36 items, nine chains of latencies a core); the cost model takes
    one block of 288 channels a core instead, checked bit for bit against the docs' int8
    arithmetic."""
    xq = RNG.integers(-128, 128, (1, 48, 1, 1)).astype(np.int8)
    wq = RNG.integers(-127, 128, (1152, 48, 1, 1)).astype(np.int8)
    bq = RNG.integers(-2000, 2000, 1152).astype(np.int32)
    w_scale = (RNG.random(1152) * 0.002 + 0.0005).astype(np.float32)
    attrs = {"tc_precision": "int8", "tc_x_scale": SX, "tc_x_zero_point": ZX}
    ins, out = [xq, wq, bq, w_scale], np.zeros((1, 1152, 1, 1), np.float32)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(out.shape, "float32")], TARGET)
    assert "tm=288" in str(f.attrs["plan"])
    got = run_lowered("Conv", attrs, ins, [out])[0]
    acc = conv_ref(xq.astype(np.int64), wq.astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    want = acc.astype(np.float32) * (w_scale * np.float32(SX)).reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(got, want)
    assert hazard_checked() == []
