"""QuantizeLinear and DequantizeLinear strategies on 4 simulated TC1 cores against the
ONNX formulas written here in numpy (bit-exact): round half to even, saturation, int8
and uint8, per tensor and per axis (rows of one channel as vector commands, or short
rows element by element), remainder tiles; and the cases it refuses."""
import numpy as np
import pytest

from tilecore import compiler
from strategy_util import run_lowered, run_op


def np_quantize(x, scale, zp, axis, dtype):
    """saturate(round_half_even(x / scale) + zp), the ONNX QuantizeLinear formula."""
    shape = [1] * x.ndim
    if scale.size > 1:
        shape[axis] = scale.size
    s = scale.reshape(shape).astype(np.float32)
    z = zp.reshape(shape).astype(np.int64)
    info = np.iinfo(dtype)
    q = np.rint((x / s).astype(np.float32)).astype(np.int64) + z
    return np.clip(q, info.min, info.max).astype(dtype)


def np_dequantize(q, scale, zp, axis):
    shape = [1] * q.ndim
    if scale.size > 1:
        shape[axis] = scale.size
    return ((q.astype(np.int64) - zp.reshape(shape).astype(np.int64)).astype(np.float32)
            * scale.reshape(shape).astype(np.float32))


def _case(shape, axis, dtype, per_axis, seed):
    rng = np.random.default_rng(seed)
    c = shape[axis] if per_axis else 1
    scale = rng.uniform(0.01, 0.1, c).astype(np.float32)
    lo, hi = (-20, 20) if dtype == np.int8 else (100, 156)
    zp = rng.integers(lo, hi, c).astype(dtype)
    if not per_axis:
        scale, zp = scale.reshape(()), zp.reshape(())
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    return x, scale, zp


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("shape,axis,per_axis", [
    ((1, 8, 33, 17), 1, False),
    ((1, 8, 33, 17), 1, True),
    ((16, 5), 0, True),          # axis 0, as per-channel weights
    ((3, 40000), -1, False),     # a tile and a remainder
    ((2, 7, 1500), -1, True),    # the last axis: the channel changes every element
    ((1, 5, 100, 70), 1, True),  # rows of 7000: two tiles of two rows and a remainder row
    ((2, 3, 40, 20), 2, True),   # rows of 20, the channel wrapping over batch and axis 1
])
def test_quantize_dequantize(dtype, shape, axis, per_axis):
    x, scale, zp = _case(shape, axis, dtype, per_axis, seed=len(shape) + shape[-1])
    # ties (x / scale = k + 0.5) and values far out of range
    s0 = float(scale.ravel()[0])
    x.flat[:6] = np.float32([0.5, 1.5, 2.5, -0.5, -2.5, 1e6]) * np.float32(s0)
    x.flat[6] = -1e6
    attrs = {"axis": axis}
    outs, _, _ = run_op("QuantizeLinear", attrs, [x, scale, zp], out_shapes=[x.shape], out_dtypes=[dtype])
    want = np_quantize(x, scale, zp, axis, dtype)
    np.testing.assert_array_equal(outs[0], want)
    info = np.iinfo(dtype)
    assert outs[0].max() == info.max and outs[0].min() == info.min  # both saturate
    outs, _, _ = run_op("DequantizeLinear", attrs, [want, scale, zp], out_shapes=[x.shape],
                        out_dtypes=[np.float32])
    np.testing.assert_array_equal(outs[0], np_dequantize(want, scale, zp, axis))


def test_dequantize_int32_bias_and_no_zero_point():
    rng = np.random.default_rng(3)
    q = rng.integers(-100000, 100000, (64,)).astype(np.int32)
    scale = np.array(0.0003, np.float32)
    outs, _, _ = run_op("DequantizeLinear", {}, [q, scale], out_shapes=[q.shape], out_dtypes=[np.float32])
    np.testing.assert_array_equal(outs[0], q.astype(np.float32) * scale)
    x = rng.standard_normal((5, 9)).astype(np.float32)
    outs, _, _ = run_op("QuantizeLinear", {}, [x, np.array(0.02, np.float32)], out_shapes=[x.shape],
                        out_dtypes=[np.uint8])  # no zero point: uint8, zero point 0
    np.testing.assert_array_equal(outs[0], np.clip(np.rint(x / np.float32(0.02)), 0, 255).astype(np.uint8))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_quantize_without_zero_point_converts_the_quotient_once(dtype):
    """No zero point (0) and an 8-bit output: the quotient converts in one pass, its rounding
    (half to even) and saturation the conversion's; several tiles over 4 cores."""
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((128, 256)) * 4).astype(np.float32)
    scale = np.array(0.03, np.float32)
    x.flat[:7] = np.float32([0.5, 1.5, 2.5, -0.5, -2.5, 1e6, -1e6]) * scale
    outs, _, _ = run_op("QuantizeLinear", {}, [x, scale], out_shapes=[x.shape], out_dtypes=[dtype])
    np.testing.assert_array_equal(outs[0], np_quantize(x, scale, np.zeros((), np.int64), 0, dtype))


@pytest.mark.parametrize("zp", [0, -128])
@pytest.mark.parametrize("shape", [(64, 300), (128, 256)])
def test_quantize_in_the_load_form(zp, shape, hazard_checked):
    """tc_load_scale: what an int8 matrix op does on load, x * f32(1 / scale) + zp rounded
    half to even once and saturated (ONNX's formula rounds x / scale, then adds zp); a
    tile per core, or (128 x 256: four tiles of 2048 per core) software-pipelined."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    scale = np.float32(0.0371)
    inv = np.float32(1.0 / np.float64(scale))
    attrs = {"tc_load_scale": float(scale), "tc_load_zero_point": zp}
    outs = run_lowered("QuantizeLinear", attrs, [x, np.array(scale), np.array(zp, np.int8)],
                       [np.zeros(x.shape, np.int8)])
    t = (x * inv).astype(np.float32) + np.float32(zp)
    np.testing.assert_array_equal(outs[0], np.clip(np.rint(t), -128, 127).astype(np.int8))
    assert hazard_checked() == []


def test_the_load_form_copies_its_input(hazard_checked):
    """tc_copy_input: output 1 is x as each tile was loaded (a transformer's residual, read
    again later), beside the same int8 output as without it."""
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((128, 256)) * 4).astype(np.float32)
    scale, zp = np.float32(0.0371), -3
    inv = np.float32(1.0 / np.float64(scale))
    attrs = {"tc_load_scale": float(scale), "tc_load_zero_point": zp, "tc_copy_input": 1}
    outs = run_lowered("QuantizeLinear", attrs, [x, np.array(scale), np.array(zp, np.int8)],
                       [np.zeros(x.shape, np.int8), np.full(x.shape, np.nan, np.float32)])
    t = (x * inv).astype(np.float32) + np.float32(zp)
    np.testing.assert_array_equal(outs[0], np.clip(np.rint(t), -128, 127).astype(np.int8))
    np.testing.assert_array_equal(outs[1], x)
    assert hazard_checked() == []
    spec = compiler.TensorSpec
    ins = [spec((128, 256), "float32"), spec((), "float32"), spec((), "int8")]
    assert "for the load form" in compiler.HasStrategy("QuantizeLinear", {"tc_copy_input": 1}, ins)
    with pytest.raises(ValueError, match="tc_copy_input needs four tiles per core"):
        compiler.LowerOp("QuantizeLinear", attrs, [spec((64, 300), "float32")] + ins[1:],
                         [spec((64, 300), "int8"), spec((64, 300), "float32")], "npu -cores=4")
    # the copy's output must be x's size in float32; without the attribute, one output only
    for extra, a in [(spec((128, 256), "int8"), attrs), (spec((64, 256), "float32"), attrs),
                     (spec((128, 256), "float32"), {k: v for k, v in attrs.items() if k != "tc_copy_input"})]:
        with pytest.raises(ValueError, match="expects one output"):
            compiler.LowerOp("QuantizeLinear", a, ins, [spec((128, 256), "int8"), extra], "npu -cores=4")
    with pytest.raises(ValueError, match="float32 copy of x; given 1"):
        compiler.LowerOp("QuantizeLinear", attrs, ins, [spec((128, 256), "int8")], "npu -cores=4")


@pytest.mark.parametrize("attrs,why", [({"tc_load_scale": 0.0}, "positive and finite"),
                                       ({"tc_load_scale": float("inf")}, "positive and finite"),
                                       ({"tc_load_scale": 0.1, "tc_load_zero_point": 300}, "int8 range")])
def test_the_load_form_checks_its_attributes(attrs, why):
    specs = [compiler.TensorSpec((4, 8), "float32"), compiler.TensorSpec((), "float32"),
             compiler.TensorSpec((), "int8")]
    assert why in compiler.HasStrategy("QuantizeLinear", attrs, specs)
    per_axis = [specs[0], compiler.TensorSpec((8,), "float32")]
    assert "per tensor" in compiler.HasStrategy("QuantizeLinear", {"tc_load_scale": 0.1, "axis": 1}, per_axis)


def test_refusals_name_the_reason():
    spec = compiler.TensorSpec
    f, i8 = "float32", "int8"
    assert "block_size" in compiler.HasStrategy("QuantizeLinear", {"block_size": 4},
                                                [spec((8, 8), f), spec((8, 2), f), spec((8, 2), i8)])
    assert "elements" in compiler.HasStrategy("QuantizeLinear", {"axis": 1},
                                              [spec((2, 8), f), spec((3,), f), spec((3,), i8)])
    assert "int8, uint8 or int32" in compiler.HasStrategy("DequantizeLinear", {},
                                                          [spec((2, 8), f), spec((), f)])
    assert "zero point" in compiler.HasStrategy("QuantizeLinear", {},
                                                [spec((2, 8), f), spec((), f), spec((), "int32")])
