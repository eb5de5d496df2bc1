"""Resize (nearest as DMA copies, linear as two matrix products per plane, or on the front
end when the matrices do not fit L1) and Upsample on 4 simulated
TC1 cores against the op library's numpy reference. Scales and sizes reach the
strategy as attributes; the reference gets them as inputs."""
import numpy as np
import pytest

import tilecore
from tilecore import compiler
from tilecore.ir import ops
from strategy_util import TARGET, rand


def run_resize(attrs, x, scales=None, sizes=None, op="Resize", rtol=0, atol=0):
    schema = ops.get_op(op)
    if op == "Resize":
        consts = [np.zeros(0, np.float32), np.array(scales if scales is not None else [], np.float32)]
        if sizes is not None:
            consts.append(np.array(sizes, np.int64))
    else:
        consts = [np.array(scales, np.float32)]
    ref = np.asarray(schema.reference(schema.fill_attrs(dict(attrs)), x, *consts))
    full = dict(attrs)
    if scales is not None:
        full["scales"] = [float(s) for s in scales]
    if sizes is not None:
        full["sizes"] = list(sizes)
    specs = [compiler.TensorSpec(x.shape, x.dtype)] + [compiler.TensorSpec(c.shape, c.dtype) for c in consts]
    assert compiler.HasStrategy(op, full, specs) == ""
    out = np.zeros(ref.shape, ref.dtype)
    f = compiler.LowerOp(op, full, specs, [compiler.TensorSpec(out.shape, out.dtype)], TARGET)
    tilecore.build(f, target=TARGET)[f.attrs["global_symbol"]](x, out)
    if rtol or atol:
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(out, ref)
    return out


COORD = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


@pytest.mark.parametrize("ct", COORD)
@pytest.mark.parametrize("nm", NEAREST)
def test_nearest_modes(ct, nm):
    x = rand((1, 2, 5, 7), 1)
    run_resize({"mode": "nearest", "coordinate_transformation_mode": ct, "nearest_mode": nm}, x,
               scales=[1.0, 1.0, 2.0, 1.5])


def test_nearest_upsample_x2_is_one_copy_per_plane_axis():
    # the yolo neck: asymmetric floor, scale 2 (and numpy's repeat as a second reference)
    x = rand((1, 8, 9, 11), 2)
    out = run_resize({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
                     x, scales=[1.0, 1.0, 2.0, 2.0])
    np.testing.assert_array_equal(out, x.repeat(2, axis=2).repeat(2, axis=3))


def test_nearest_down_sizes_int8():
    x = rand((2, 3, 9, 10), 3, -100, 100, np.int8)
    run_resize({"mode": "nearest"}, x, sizes=[2, 3, 4, 3])


def test_nearest_bigger_than_l1():
    x = rand((4, 64, 32, 32), 4)   # 1 MiB in, 4 MiB out
    run_resize({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
               x, scales=[1.0, 1.0, 2.0, 2.0])


@pytest.mark.parametrize("ct", COORD)
def test_linear(ct):
    x = rand((1, 3, 6, 7), 5)
    run_resize({"mode": "linear", "coordinate_transformation_mode": ct}, x, scales=[1.0, 1.0, 2.0, 1.5],
               rtol=1e-5, atol=1e-5)
    run_resize({"mode": "linear", "coordinate_transformation_mode": ct}, x, sizes=[1, 3, 4, 5],
               rtol=1e-5, atol=1e-5)


def test_linear_upsampling_runs_on_the_matrix_engine():
    # DeepLabV3's head: 21 class planes upsampled 8x, bilinear (half_pixel, as PyTorch's
    # align_corners=False): two matrix products per plane, against ONNX Runtime, and the
    # simulator finds the step bound by an engine, not by the front end
    from onnx import helper
    from test_driver import make_model, ort_run

    x = rand((1, 21, 33, 33), 8)
    sizes = np.array([1, 21, 264, 264], np.int64)
    model = make_model([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="up", mode="linear")],
                       [("x", list(x.shape), np.float32)], ["y"], [("sizes", sizes)])
    exe = tilecore.compile(model)
    y = exe.run({"x": x})["y"]
    np.testing.assert_allclose(y, ort_run(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)
    st = exe.stats()
    (op,) = st["ops"]
    assert op["bound_by"] != "sc", op
    # the interpolation matrices are computed when compiling: per core the front end
    # stores their nonzeros (2 x 264 a matrix), some 2 k instructions; computing them
    # took some 100 instructions an output index, 50 k
    sim = tilecore.runtime.npu_simulator(0).stats()
    assert sim["instructions"] / len(sim["cores"]) < 10_000, sim["instructions"]


@pytest.mark.parametrize("ct", COORD)
def test_linear_of_one_element_planes_is_their_copy(ct):
    # DeepLabV3's pooled branch: 256 planes of 1 x 1 upsampled (bilinear) to the map. Both
    # taps of every output clamp to the one element, so each output is that element, exactly
    # as the reference and ONNX Runtime give it: the nearest DMA copy, bound by no front end
    x = rand((1, 256, 1, 1), 10, -3, 3)
    x[0, :4, 0, 0] = [1e-38, -7.1, 3.3333333, 65504.0]
    out = run_resize({"mode": "linear", "coordinate_transformation_mode": ct}, x, sizes=[1, 256, 16, 12])
    np.testing.assert_array_equal(out, np.broadcast_to(x, (1, 256, 16, 12)))
    specs = [compiler.TensorSpec(x.shape, "float32")]
    f = compiler.LowerOp("Resize", {"mode": "linear", "coordinate_transformation_mode": ct, "sizes": [1, 256, 16, 12]},
                         specs, [compiler.TensorSpec((1, 256, 16, 12), "float32")], TARGET)
    assert compiler.estimate_cost(f, TARGET)["bound_by"] != "sc"


def test_linear_rows_too_long_for_the_matrices_in_l1():
    # a [600, 1800] column matrix is beyond half of L1: the front-end form. Its source
    # coordinates are f32, a * o + b with a = f32(1 / scale): near column 1800 they are
    # off by up to 1e-4 of a column, and so is the interpolation
    run_resize({"mode": "linear"}, rand((1, 2, 4, 600), 9), scales=[1.0, 1.0, 2.0, 3.0], rtol=0, atol=3e-4)


def test_linear_one_axis():
    run_resize({"mode": "linear"}, rand((2, 5, 9), 6), scales=[1.0, 1.0, 3.0], rtol=1e-5, atol=1e-5)


def test_upsample():
    x = rand((1, 2, 3, 4), 7)
    run_resize({"mode": "nearest"}, x, scales=[1.0, 1.0, 2.0, 3.0], op="Upsample")
    run_resize({"mode": "linear"}, x, scales=[1.0, 1.0, 2.0, 2.0], op="Upsample", rtol=1e-5, atol=1e-5)


def test_host_reasons():
    x = compiler.TensorSpec((1, 1, 4, 4), "float32")
    roi, sc = compiler.TensorSpec((0,), "float32"), compiler.TensorSpec((4,), "float32")
    assert "known when compiling" in compiler.HasStrategy("Resize", {}, [x, roi, sc])
    assert "cubic" in compiler.HasStrategy("Resize", {"mode": "cubic", "scales": [1, 1, 2, 2]}, [x, roi, sc])
    assert "tf_crop_and_resize" in compiler.HasStrategy(
        "Resize", {"coordinate_transformation_mode": "tf_crop_and_resize", "scales": [1, 1, 2, 2]}, [x, roi, sc])


def test_too_many_nearest_copies_go_to_host():
    # an irregular scale on both axes: thousands of segments per axis
    x = compiler.TensorSpec((1, 1, 3000, 3000), "float32")
    why = compiler.HasStrategy("Resize", {"mode": "nearest", "scales": [1.0, 1.0, 1.37, 1.37]}, [x])
    assert "copies" in why
    assert compiler.HasStrategy("Resize", {"mode": "nearest", "sizes": [1, 1, 6000, 6000]}, [x]) == ""
