"""Conv plans with several images of a batch per work item (docs/compiler.md, "Several images
per item"): their positions side by side in the matrix engine's columns, each weight block
loaded once for all of them. ``tc_images_per_item`` forces the count; the results are checked
against numpy and, where the arithmetic is the same (int8), bit for bit against one image per
item; every L1 access ordered (the simulator's hazard mode)."""
import re

import numpy as np
import pytest

from tilecore import compiler

from strategy_util import run_lowered
from test_fuse_epilogue import int8_residual_ref
from test_precision import conv_ref

pytestmark = pytest.mark.npu

RNG = np.random.default_rng(44)
SX, ZX, SR, ZR, SY, ZY = 0.05, -3, 0.04, 5, 0.03, -7


def lowered(attrs, ins, out):
    """The kernel's text (to see the plan) and its output."""
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(out.shape, str(out.dtype))], "npu -cores=4")
    return str(f), run_lowered("Conv", attrs, ins, [np.zeros_like(out)])[0]


@pytest.mark.parametrize("nb", [2, 4])
def test_f32_3x3_with_residual(nb, hazard_checked):
    xs, ws = (4, 16, 7, 7), (32, 16, 3, 3)
    x = RNG.standard_normal(xs).astype(np.float32)
    w = (RNG.standard_normal(ws) * 0.3).astype(np.float32)
    b = RNG.standard_normal(32).astype(np.float32)
    y = conv_ref(x.astype(np.float64), w.astype(np.float64), None, 1, 1, 1, 1) + b.reshape(1, -1, 1, 1)
    r = RNG.standard_normal(y.shape).astype(np.float32)
    attrs = {"pads": [1, 1, 1, 1], "tc_residual": 1, "tc_activation": "Relu", "tc_images_per_item": nb}
    text, out = lowered(attrs, [x, w, b, r], np.zeros(y.shape, np.float32))
    # each of the nb images stored from its columns of the accumulators: [block rows, image, rows, columns]
    assert re.search(r"Cl3\d?\[0:32, %d:%d, 0:7, 0:7\]" % (nb - 1, nb), text)
    np.testing.assert_allclose(out, np.maximum(y + r, 0), rtol=1e-4, atol=1e-4)
    assert hazard_checked() == []


@pytest.mark.parametrize("nb", [2, 4])
def test_int8_3x3_matches_one_image_per_item(nb, hazard_checked):
    """int8 in, an int8 residual in its units, Relu, int8 out: integer sums, the same f32 steps."""
    xs, ws = (4, 32, 7, 7), (64, 32, 3, 3)
    xq = RNG.integers(-128, 128, xs).astype(np.int8)
    wq = RNG.integers(-127, 128, ws).astype(np.int8)
    bq = RNG.integers(-2000, 2000, 64).astype(np.int32)
    w_scale = (RNG.random(64) * 0.002 + 0.0005).astype(np.float32)
    rq = RNG.integers(-128, 128, (4, 64, 7, 7)).astype(np.int8)
    attrs = {"pads": [1, 1, 1, 1], "tc_precision": "int8", "tc_x_scale": SX, "tc_x_zero_point": ZX,
             "tc_residual": 1, "tc_residual_scale": SR, "tc_residual_zero_point": ZR, "tc_activation": "Relu",
             "tc_y_scale": SY, "tc_y_zero_point": ZY, "tc_transposed": 0}
    ins, out = [xq, wq, bq, w_scale, rq], np.zeros((4, 64, 7, 7), np.int8)
    _, one = lowered(dict(attrs, tc_images_per_item=1), ins, out)
    _, several = lowered(dict(attrs, tc_images_per_item=nb), ins, out)
    xp = np.pad(xq.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=ZX)
    acc = conv_ref(xp, wq.astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(one, int8_residual_ref(acc, w_scale, SX, rq, SR, ZR, 0.0, None, SY, ZY))
    np.testing.assert_array_equal(several, one)
    assert hazard_checked() == []


@pytest.mark.parametrize("nb,stride", [(2, 1), (4, 1), (2, 2)])
def test_int8_1x1_transposed_matches_one_image_per_item(nb, stride, hazard_checked):
    """The transposed 1x1 plan (the epilogue in the matrix engine) with whole images per item,
    a downsample's every other row and column too."""
    hw, c, m = 7, 64, 128
    xq = RNG.integers(-128, 128, (4, c, hw * stride, hw * stride)).astype(np.int8)
    wq = RNG.integers(-127, 128, (m, c, 1, 1)).astype(np.int8)
    bq = RNG.integers(-2000, 2000, m).astype(np.int32)
    w_scale = (RNG.random(m) * 0.002 + 0.0005).astype(np.float32)
    rq = RNG.integers(-128, 128, (4, m, hw, hw)).astype(np.int8)
    attrs = {"tc_precision": "int8", "tc_x_scale": SX, "tc_x_zero_point": ZX, "strides": [stride, stride],
             "tc_residual": 1, "tc_residual_scale": SR, "tc_residual_zero_point": ZR, "tc_activation": "Relu",
             "tc_y_scale": SY, "tc_y_zero_point": ZY, "tc_transposed": 1}
    ins, out = [xq, wq, bq, w_scale, rq], np.zeros((4, m, hw, hw), np.int8)
    _, one = lowered(dict(attrs, tc_images_per_item=1), ins, out)
    text, several = lowered(dict(attrs, tc_images_per_item=nb), ins, out)
    # each of the nb images stored from its positions of the transposed result
    assert "XT0" in text and re.search(r"Yt\d\[0:\d+, %d:%d\]" % ((nb - 1) * 49, nb * 49), text)
    acc = np.einsum("mc,nchw->nmhw", wq[:, :, 0, 0].astype(np.int64),
                    xq[:, :, ::stride, ::stride].astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(one, int8_residual_ref(acc, w_scale, SX, rq, SR, ZR, 0.0, None, SY, ZY))
    np.testing.assert_array_equal(several, one)
    assert hazard_checked() == []


def test_images_per_item_must_divide_the_batch():
    specs = [compiler.TensorSpec((4, 8, 7, 7), "float32"), compiler.TensorSpec((8, 8, 3, 3), "float32")]
    assert compiler.HasStrategy("Conv", {"tc_images_per_item": 2}, specs) == ""
    why = "Conv: tc_images_per_item must be a divisor of the batch (4), 1 for a depthwise Conv"
    for bad in (3, 0, 8):
        assert compiler.HasStrategy("Conv", {"tc_images_per_item": bad}, specs) == why
    # not an int: refused for its kind before the strategy sees it (compiler_attrs.h)
    assert compiler.HasStrategy("Conv", {"tc_images_per_item": "two"}, specs) == (
        "Conv: attribute `tc_images_per_item` is a string; it is an int")
    dw = [compiler.TensorSpec((4, 8, 7, 7), "float32"), compiler.TensorSpec((8, 1, 3, 3), "float32")]
    assert compiler.HasStrategy("Conv", {"group": 8, "tc_images_per_item": 2}, dw) == why
