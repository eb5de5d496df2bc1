"""Resize and Upsample on the host (src/compiler/host_resize.cc): roi, scales and sizes given
as graph inputs are read when the model runs, in every mode ONNX defines, and a run whose
values give another output shape than the one compiled fails naming them.

Compared with ONNX's reference (onnx.reference.ReferenceEvaluator) and ONNX Runtime. Two
known differences set the tolerances: both compute the cubic weights in float32 (the
evaluator passes cubic_coeff_a as np.float32), tilecore in float64, so cubic results agree to
about 1e-6; and tilecore, as ONNX Runtime and PyTorch, maps align_corners coordinates with
the integer output length where ONNX's reference uses scale * input length, so align_corners
with a fractional scale * length is checked against ONNX Runtime only."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import tilecore
from tilecore import compiler

ort = pytest.importorskip("onnxruntime")

F, I64 = TensorProto.FLOAT, TensorProto.INT64
X = np.random.default_rng(1).standard_normal((1, 2, 5, 6)).astype(np.float32)


def model(node, inputs, output, opset=19, inits=()):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*output)], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def compiled(m):
    rep = {}
    exe = tilecore.compile(m.SerializeToString(), report=rep)
    assert [p["where"] for p in rep["placement"]] == ["host"], rep["placement"]
    return exe


def check(m, exe, feeds, ref=True, onnxruntime=True, tol=0.0):
    got = exe.run(feeds)["y"]
    oracles = []
    if ref:
        oracles.append(("reference", ReferenceEvaluator(m).run(None, feeds)[0]))
    if onnxruntime:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        oracles.append(("onnxruntime", sess.run(None, feeds)[0]))
    for name, want in oracles:
        assert got.shape == want.shape and got.dtype == want.dtype, name
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=max(tol, 5e-7),
                                   err_msg=f"{name}: {feeds.get('s', feeds.get('sz'))}")


# each is compiled once for [1, 2, 8, 3] and run with three scales that give that shape
MODES = [
    dict(mode="nearest"),
    dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    dict(mode="nearest", coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil"),
    dict(mode="nearest", nearest_mode="ceil"),
    dict(mode="nearest", coordinate_transformation_mode="half_pixel_symmetric"),
    dict(mode="linear"),
    dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
    dict(mode="linear", coordinate_transformation_mode="asymmetric"),
    dict(mode="linear", coordinate_transformation_mode="align_corners"),
    dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"),
    dict(mode="cubic"),
    dict(mode="cubic", coordinate_transformation_mode="asymmetric", cubic_coeff_a=-0.5, exclude_outside=1),
    dict(mode="linear", antialias=1),
    dict(mode="cubic", antialias=1, exclude_outside=1, cubic_coeff_a=-0.5),
]


@pytest.mark.parametrize("attrs", MODES, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_resize_reads_its_scales_when_the_model_runs(attrs):
    m = model(helper.make_node("Resize", ["x", "", "s"], ["y"], **attrs), [("x", F, [1, 2, 5, 6]), ("s", F, [4])],
              ("y", F, [1, 2, 8, 3]))
    exe = compiled(m)
    aligned = attrs.get("coordinate_transformation_mode") == "align_corners"
    for scales in ([1, 1, 1.7, 0.6], [1, 1, 1.75, 0.55], [1, 1, 1.6, 0.5]):
        check(m, exe, {"x": X, "s": np.array(scales, np.float32)}, ref=not aligned or scales[3] == 0.5,
              tol=1e-5 if attrs["mode"] == "cubic" else 0.0)


@pytest.mark.parametrize("policy,out,sizes", [
    ("stretch", [1, 2, 3, 9], [[9, 3]]),
    ("not_larger", [1, 2, 10, 12], [[12, 10], [12, 13], [14, 10]]),   # the smaller ratio decides
    ("not_smaller", [1, 2, 3, 4], [[3, 3], [4, 1], [4, 2]]),
])
def test_resize_reads_its_sizes_with_axes_and_the_aspect_ratio_policy(policy, out, sizes):
    m = model(helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear", axes=[3, 2],
                               keep_aspect_ratio_policy=policy),
              [("x", F, [1, 2, 5, 6]), ("sz", I64, [2])], ("y", F, out))
    exe = compiled(m)
    for s in sizes:
        check(m, exe, {"x": X, "sz": np.array(s, np.int64)})


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_tf_crop_and_resize_reads_roi_and_sizes(mode):
    m = model(helper.make_node("Resize", ["x", "roi", "", "sz"], ["y"], mode=mode,
                               coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=10.0),
              [("x", F, [1, 2, 5, 6]), ("roi", F, [8]), ("sz", I64, [4])], ("y", F, [1, 2, 4, 3]))
    exe = compiled(m)
    # (rois exact in binary: the reference computes roi[0] * (length - 1) in float32, ONNX Runtime
    # every coordinate, which moves a nearest coordinate such as 0.6f * 5 + 0.5 across its tie)
    for roi in ([0, 0, 0.375, 0.625, 1, 1, 0.625, 0.875], [0, 0, -0.25, 0.125, 1, 1, 1.25, 0.875],
                [0, 0, 0.5, 0.5, 1, 1, 0.5, 0.5]):
        check(m, exe, {"x": X, "roi": np.array(roi, np.float32), "sz": np.array([1, 2, 4, 3], np.int64)},
              tol=1e-5 if mode == "cubic" else 0.0)


def test_integer_outputs_round_half_to_even_and_saturate():
    # cubic overshoots past 0 and 255 next to the steps; the reference rounds and clips
    x = np.tile(np.array([0, 0, 255, 255, 0, 255, 3], np.uint8), (1, 1, 3, 1))
    m = model(helper.make_node("Resize", ["x", "", "s"], ["y"], mode="cubic"),
              [("x", TensorProto.UINT8, [1, 1, 3, 7]), ("s", F, [4])], ("y", TensorProto.UINT8, [1, 1, 3, 17]))
    exe = compiled(m)
    check(m, exe, {"x": x, "s": np.array([1, 1, 1, 2.5], np.float32)}, onnxruntime=False)
    y = exe.run({"x": x, "s": np.array([1, 1, 1, 2.5], np.float32)})["y"]
    assert y.min() == 0 and y.max() == 255
    xi = np.arange(-15, 15, dtype=np.int32).reshape(1, 1, 5, 6) * 1000003
    m = model(helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest"),
              [("x", TensorProto.INT32, [1, 1, 5, 6]), ("s", F, [4])], ("y", TensorProto.INT32, [1, 1, 8, 3]))
    check(m, compiled(m), {"x": xi, "s": np.array([1, 1, 1.7, 0.6], np.float32)})


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_reads_its_scales_when_the_model_runs(mode):
    m = model(helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode), [("x", F, [1, 2, 5, 6]), ("s", F, [4])],
              ("y", F, [1, 2, 10, 9]), opset=9)
    exe = compiled(m)
    for scales in ([1, 1, 2, 1.5], [1, 1, 2.1, 1.6]):
        check(m, exe, {"x": X, "s": np.array(scales, np.float32)}, ref=False)


def test_resize_10_reads_its_scales_from_input_1():
    # (the kernel alone: Resize-10's scales are its input 1, where later opsets have roi)
    x, scales = X[:, :1], np.array([1, 1, 0.6, 1.7], np.float32)
    m = model(helper.make_node("Resize", ["x", "s"], ["y"], mode="nearest"), [("x", F, [1, 1, 5, 6]), ("s", F, [4])],
              ("y", F, [1, 1, 3, 10]), opset=10)
    specs = [compiler.TensorSpec(x.shape, x.dtype), compiler.TensorSpec(scales.shape, scales.dtype)]
    f = compiler.LowerHostOp("Resize", {"mode": "nearest", "_opset": 10}, specs,
                             [compiler.TensorSpec((1, 1, 3, 10), np.float32)])
    assert int(f.attrs["input_params"]) == 2
    y = np.zeros((1, 1, 3, 10), np.float32)
    tilecore.build(f, target="c")[f.attrs["global_symbol"]](x, scales, y)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x, "s": scales})
    np.testing.assert_array_equal(y, want[0])


def test_constant_scales_of_a_mode_the_npu_lacks_run_on_the_host():
    m = model(helper.make_node("Resize", ["x", "", "s"], ["y"], mode="cubic", antialias=1), [("x", F, [1, 2, 5, 6])],
              ("y", F, [1, 2, 8, 3]), inits=[numpy_helper.from_array(np.array([1, 1, 1.7, 0.6], np.float32), "s")])
    check(m, compiled(m), {"x": X}, tol=1e-5)


def test_scales_that_give_another_shape_fail_the_run_naming_them():
    m = model(helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear"), [("x", F, [1, 2, 5, 6]), ("s", F, [4])],
              ("y", F, [1, 2, 8, 3]))
    exe = compiled(m)
    with pytest.raises(ValueError, match=r"Resize: scales \(1, 1, 2, 0.6\) give the output shape \(1, 2, 10, 3\) "
                                         r"when the model runs; the model declares \[1, 2, 8, 3\]"):
        exe.run({"x": X, "s": np.array([1, 1, 2, 0.6], np.float32)})
    with pytest.raises(ValueError, match=r"Resize: scales \(1, 1, 0, 0.6\) when the model runs: every scale must "
                                         r"be positive"):
        exe.run({"x": X, "s": np.array([1, 1, 0, 0.6], np.float32)})


def test_sizes_that_give_another_shape_fail_the_run_naming_them():
    m = model(helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="nearest", axes=[2, 3],
                               keep_aspect_ratio_policy="not_larger"),
              [("x", F, [1, 2, 5, 6]), ("sz", I64, [2])], ("y", F, [1, 2, 10, 12]))
    exe = compiled(m)
    with pytest.raises(ValueError, match=r"Resize: sizes \(10, 10\) \(keep_aspect_ratio_policy not_larger\) give "
                                         r"the output shape \(1, 2, 8, 10\) when the model runs; the model declares"):
        exe.run({"x": X, "sz": np.array([10, 10], np.int64)})


def test_tf_crop_and_resize_without_roi_is_refused():
    m = model(helper.make_node("Resize", ["x", "", "", "sz"], ["y"], coordinate_transformation_mode="tf_crop_and_resize"),
              [("x", F, [1, 2, 5, 6]), ("sz", I64, [4])], ("y", F, [1, 2, 4, 3]))
    with pytest.raises(compiler.CompileError, match="tf_crop_and_resize needs roi"):
        tilecore.compile(m.SerializeToString())
