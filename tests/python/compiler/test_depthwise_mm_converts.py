"""The int8 depthwise matrix form with its sums converted to f32 by the last mm's epilogue
(tc_depthwise_mm_converts; docs/compiler.md, "Depthwise"): bit for bit numpy's int8
depthwise Conv, no conversion pass of the sums on the vector engine, and kept by the search where the
vector engine bounds the Conv."""
import re

import numpy as np
import pytest

import tilecore
from tilecore import compiler

from strategy_util import run_lowered
from test_fuse_epilogue import check_depthwise_int8


def lowered_text(attrs, ins, out):
    return tilecore.ir.script(compiler.LowerOp("Conv", attrs, ins, [out]))


SHAPES = [
    (32, 28, 3, 1, True, False, True, "Relu"),     # int8 in and out
    (24, 20, 3, 1, True, True, True, "Clip"),      # an int8 residual
    (400, 14, 3, 1, True, False, True, "Clip"),    # blocks of 16, 16 and 9 channels
]
STRIDED = [
    (40, 14, 5, 2, False, True, False, ""),        # quantised on load, an f32 residual, 5x5 stride 2
    (16, 112, 3, 2, True, False, True, "Clip"),    # MobileNetV2's stride-2 map: row tiles at both borders
]


# (the shifted taps are for unit strides)
@pytest.mark.parametrize("c,hw,k,stride,x_int8,residual,y_int8,act,shifted",
                         [(*s, 0) for s in SHAPES + STRIDED] + [(*s, 1) for s in SHAPES])
@pytest.mark.parametrize("pipeline", [0, 1, 2])
def test_depthwise_mm_converts_is_numpy_bit_for_bit(c, hw, k, stride, x_int8, residual, y_int8, act, shifted,
                                                     pipeline, hazard_checked):
    """Column matrix or shifted taps, one, two or three stages: every block's last mm writes
    f32(acc) in place (scale 1), the epilogue's first pass scales it: numpy's result bit for
    bit, every L1 access ordered, and no i32 -> f32 conversion of the sums."""
    if residual and pipeline == 2:
        pipeline = 1
    attrs, ins, out = check_depthwise_int8(c, hw, k, stride, x_int8, residual, y_int8, act, hazard_checked,
                                           tc_depthwise_matrix=1, tc_pipeline=pipeline,
                                           tc_depthwise_shifted=shifted, tc_depthwise_mm_converts=1)
    text = lowered_text(attrs, ins, out)
    assert "tile.mm(Omatf" in text  # the mm's f32 output over its sums
    assert not re.search(r"= float32\(O\d?v", text)  # no conversion of the sums
    plan = str(compiler.LowerOp("Conv", attrs, ins, [out]).attrs["plan"])
    assert plan.endswith(" mm-converts"), plan
    assert re.search(r"= float32\(O\d?v", lowered_text({**attrs, "tc_depthwise_mm_converts": 0}, ins, out))


def test_depthwise_mm_converts_is_chosen_where_the_vector_engine_bounds_the_conv(hazard_checked):
    """MobileNetV2's stride-2 3x3 over 144 channels, 112 -> 56: the column matrix's taps and
    the epilogue bound it on the vector engine, so the search keeps the mm's conversion; the
    same bits as the vector engine's conversion in fewer simulated cycles."""
    attrs, ins, out = check_depthwise_int8(144, 112, 3, 2, True, False, True, "Clip", hazard_checked,
                                           tc_depthwise_matrix=1, tc_pipeline=2)
    plan = str(compiler.LowerOp("Conv", attrs, ins, [out]).attrs["plan"])
    assert plan.endswith(" mm-converts"), plan
    rng = np.random.default_rng(11)
    arrays = [rng.integers(-128, 128, sp.shape).astype(np.int8) if str(sp.dtype) == "int8" else
              rng.integers(-500, 500, sp.shape).astype(np.int32) if str(sp.dtype) == "int32" else
              rng.uniform(0.005, 0.02, sp.shape).astype(np.float32) for sp in ins]
    runs = []
    for converts in (1, 0):
        got = run_lowered("Conv", {**attrs, "tc_depthwise_mm_converts": converts}, arrays,
                          [np.zeros(out.shape, np.int8)])[0]
        runs.append((got, tilecore.runtime.npu_simulator(0).stats()["cycles"]))
    (on_mm, on_mm_cycles), (on_vec, on_vec_cycles) = runs
    np.testing.assert_array_equal(on_mm, on_vec)
    assert on_mm_cycles < on_vec_cycles, (on_mm_cycles, on_vec_cycles)


def test_depthwise_mm_converts_reasons():
    """Asked for where it cannot be (f16, the vector form, a dense Conv) or with another value,
    the attribute is refused with a reason naming it."""
    int8 = [compiler.TensorSpec((1, 8, 14, 14), "int8"), compiler.TensorSpec((8, 1, 3, 3), "int8"),
            compiler.TensorSpec((8,), "int32"), compiler.TensorSpec((8,), "float32")]
    base = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_x_zero_point": 0, "group": 8, "pads": [1] * 4}
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_mm_converts": 1}, int8) == ""
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_mm_converts": 0}, int8) == ""
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_mm_converts": 2}, int8) == \
        "Conv: tc_depthwise_mm_converts must be 0 or 1"
    needs = "Conv: tc_depthwise_mm_converts 1 needs the int8 depthwise matrix form"
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_mm_converts": 1, "tc_depthwise_matrix": 0},
                                int8) == needs
    f32 = [compiler.TensorSpec((1, 8, 14, 14), "float32"), compiler.TensorSpec((8, 1, 3, 3), "float32")]
    f16 = {"group": 8, "pads": [1] * 4, "tc_precision": "f16", "tc_depthwise_mm_converts": 1}
    assert compiler.HasStrategy("Conv", f16, f32) == needs
    dense = [compiler.TensorSpec((1, 8, 14, 14), "int8"), compiler.TensorSpec((8, 8, 3, 3), "int8"),
             compiler.TensorSpec((8,), "int32"), compiler.TensorSpec((8,), "float32")]
    assert compiler.HasStrategy("Conv", {**base, "group": 1, "tc_depthwise_mm_converts": 1}, dense) == needs
