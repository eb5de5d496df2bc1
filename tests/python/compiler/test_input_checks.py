"""Values the compiler needs and cannot read when compiling (the driver's partition,
compiler/input_checks.py): a reduction's axes input read when the model runs, shape
inputs (Reshape, Squeeze, ...) checked when it runs against the declared shape compiled
for, a declared shape that inference cannot confirm refused, and the data-dependent
lengths of NonMaxSuppression and Compress checked. Compared with numpy and ONNX Runtime."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tilecore
from tilecore import frontend
from tilecore.compiler.driver import CompileError

ort = pytest.importorskip("onnxruntime")


def model(node, inputs, output, inits=(), opset=18):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(*output)], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


X = np.arange(12, dtype=np.float32).reshape(3, 2, 2) * 1.5 - 4


@pytest.mark.parametrize("entry", ["bytes", "graph"])
def test_a_reduction_reads_its_axes_input_when_the_model_runs(entry):
    # the ONNX node test reduce_mean_do_not_keepdims: axes [1] is a graph input, and [3, 2]
    # is also the output shape of axes [2]: the shapes cannot tell which one is meant
    m = model(helper.make_node("ReduceMean", ["data", "axes"], ["reduced"], keepdims=0),
              [("data", TensorProto.FLOAT, [3, 2, 2]), ("axes", TensorProto.INT64, [1])],
              ("reduced", TensorProto.FLOAT, [3, 2]))
    rep = {}
    exe = tilecore.compile(frontend.from_onnx(m) if entry == "graph" else m.SerializeToString(), report=rep)
    assert [p["where"] for p in rep["placement"]] == ["host"]
    assert "axes" in rep["host_ops"][0]["reason"]
    for axes in ([1], [2], [-1], [-2]):
        got = exe.run({"data": X, "axes": np.array(axes, np.int64)})["reduced"]
        np.testing.assert_allclose(got, X.mean(axis=axes[0]), rtol=1e-6)
    with pytest.raises(ValueError, match=r"ReduceMean: the axes input \(0\) gives another output shape than \[3, 2\]"):
        exe.run({"data": X, "axes": np.array([0], np.int64)})
    with pytest.raises(ValueError, match="axis 3 .* out of range for rank 3"):
        exe.run({"data": X, "axes": np.array([3], np.int64)})


def test_a_shape_input_is_checked_when_the_model_runs():
    m = model(helper.make_node("Reshape", ["x", "shape"], ["y"], name="r"),
              [("x", TensorProto.FLOAT, [3, 2, 2]), ("shape", TensorProto.INT64, [3])],
              ("y", TensorProto.FLOAT, [4, 3, 1]))
    rep = {}
    exe = tilecore.compile(m.SerializeToString(), report=rep)
    assert [(p["op_type"], p["where"]) for p in rep["placement"]] == [("CheckInput", "host"), ("Reshape", "npu")]
    for shape in ([4, 3, 1], [-1, 3, 1], [4, 3, -1]):
        np.testing.assert_array_equal(exe.run({"x": X, "shape": np.array(shape, np.int64)})["y"], X.reshape(4, 3, 1))
    # another shape (ONNX Runtime gives (2, 6, 1)), or two -1: the run fails naming the node and the value
    with pytest.raises(ValueError, match=r"node `r` \(Reshape\): input 1 `shape`: element 0 is 2 .* needs 4 or -1"):
        exe.run({"x": X, "shape": np.array([2, 6, 1], np.int64)})
    with pytest.raises(ValueError, match="-1 may appear once"):
        exe.run({"x": X, "shape": np.array([-1, 3, -1], np.int64)})


def test_squeeze_axes_are_checked_when_the_model_runs():
    m = model(helper.make_node("Squeeze", ["x", "axes"], ["y"]),
              [("x", TensorProto.FLOAT, [1, 3, 1]), ("axes", TensorProto.INT64, [1])],
              ("y", TensorProto.FLOAT, [3, 1]))
    exe = tilecore.compile(m.SerializeToString())
    x = np.arange(3, dtype=np.float32).reshape(1, 3, 1)
    for axes in ([0], [-3]):
        np.testing.assert_array_equal(exe.run({"x": x, "axes": np.array(axes, np.int64)})["y"], x.reshape(3, 1))
    with pytest.raises(ValueError, match=r"input 1 `axes` is \(2\) when the model runs; .* needs axes \{0\}"):
        exe.run({"x": x, "axes": np.array([2], np.int64)})


def test_a_declared_shape_inference_cannot_confirm_is_refused():
    # MelWeightMatrix's shape is its inputs' values, and no kernel of it checks them
    m = model(helper.make_node("MelWeightMatrix", ["n", "d", "s", "lo", "hi"], ["y"], name="mel"),
              [(n, TensorProto.INT64, []) for n in ("n", "d", "s")] + [(n, TensorProto.FLOAT, []) for n in ("lo", "hi")],
              ("y", TensorProto.FLOAT, [9, 8]))
    with pytest.raises(CompileError, match=r"node `mel` \(MelWeightMatrix\): output `y` has only the shape the model "
                                           r"declares, f32\[9,8\].*input 0 `n` is not a constant"):
        tilecore.compile(m.SerializeToString())


def test_a_length_the_values_decide_and_no_one_declares_is_refused():
    m = model(helper.make_node("NonZero", ["x"], ["y"], name="nz"), [("x", TensorProto.FLOAT, [2, 3])],
              ("y", TensorProto.INT64, [2, "n"]))
    with pytest.raises(CompileError, match=r"node `nz` \(NonZero\): value `y` has no static shape \(i64\[2,n\]\): "
                                           r"the values of the node's inputs decide it.*declare the shape in the model"):
        tilecore.compile(m.SerializeToString())


def test_an_input_the_kernels_would_take_a_default_for_is_read_when_the_model_runs():
    # Pad's constant value, computed while the model runs: the host kernel reads it (the npu
    # kernels would pad with the value they were compiled for)
    m = model(helper.make_node("Pad", ["x", "pads", "v"], ["y"], name="pad"),
              [("x", TensorProto.FLOAT, [2, 3]), ("v", TensorProto.FLOAT, [])], ("y", TensorProto.FLOAT, [2, 5]),
              [numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")])
    rep = {}
    exe = tilecore.compile(m.SerializeToString(), report=rep)
    assert [p["where"] for p in rep["placement"]] == ["host"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for v in (0.0, 2.5):
        np.testing.assert_array_equal(exe.run({"x": x, "v": np.float32(v)})["y"],
                                      np.pad(x, ((0, 0), (1, 1)), constant_values=v))


def test_data_dependent_lengths_are_checked_when_the_model_runs():
    m = model(helper.make_node("Range", ["start", "limit", "delta"], ["y"]),
              [(n, TensorProto.FLOAT, []) for n in ("start", "limit", "delta")], ("y", TensorProto.FLOAT, [4]))
    exe = tilecore.compile(m.SerializeToString())
    f = [np.float32(v) for v in (1, 3, 0.5)]
    np.testing.assert_array_equal(exe.run(dict(zip(["start", "limit", "delta"], f)))["y"], np.arange(*f))
    with pytest.raises(ValueError, match="Range: start, limit and delta give 6 elements, not 4"):
        exe.run(dict(zip(["start", "limit", "delta"], [np.float32(v) for v in (0, 6, 1)])))

    m = model(helper.make_node("Compress", ["x", "c"], ["y"], axis=0),
              [("x", TensorProto.FLOAT, [4, 2]), ("c", TensorProto.BOOL, [4])], ("y", TensorProto.FLOAT, [2, 2]))
    exe = tilecore.compile(m.SerializeToString())
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    c = np.array([True, False, False, True])
    np.testing.assert_array_equal(exe.run({"x": x, "c": c})["y"], x[c])
    for c in (np.array([True, False, False, False]), np.array([True, True, False, True])):
        with pytest.raises(ValueError, match=f"Compress: {c.sum()} conditions are true, but the output's length"):
            exe.run({"x": x, "c": c})

    boxes = np.array([[[0, 0, 1, 1], [0, 0, 1, 1.1], [5, 5, 6, 6]]], np.float32)
    inits = [numpy_helper.from_array(np.array([3], np.int64), "m"), numpy_helper.from_array(np.array([0.5], np.float32),
                                                                                            "iou")]
    m = model(helper.make_node("NonMaxSuppression", ["boxes", "scores", "m", "iou"], ["y"]),
              [("boxes", TensorProto.FLOAT, [1, 3, 4]), ("scores", TensorProto.FLOAT, [1, 1, 3])],
              ("y", TensorProto.INT64, [2, 3]), inits, opset=13)
    exe = tilecore.compile(m.SerializeToString())
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"boxes": boxes, "scores": scores})[0]
    np.testing.assert_array_equal(exe.run({"boxes": boxes, "scores": scores})["y"], want)
    apart = boxes.copy()
    apart[0, 1] = [2, 2, 3, 3]  # three boxes apart: three selected, two rows declared
    with pytest.raises(ValueError, match="more boxes are selected than 2 rows"):
        exe.run({"boxes": apart, "scores": scores})
