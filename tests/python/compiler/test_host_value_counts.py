"""Host kernels whose output length the values decide (src/compiler/host_value_counts.cc:
NonZero, Unique) compiled for the declared length, and TensorScatter's cache update;
compared with ONNX Runtime, and a run whose values give another length fails naming it."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import tilecore

ort = pytest.importorskip("onnxruntime")


def model(node, inputs, outputs, opset=18):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def ort_run(m, feeds):
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_nonzero_lists_coordinates_for_the_declared_count():
    m = model(helper.make_node("NonZero", ["x"], ["y"], name="nz"), [("x", TensorProto.FLOAT, [3, 4])],
              [("y", TensorProto.INT64, [2, 5])])
    exe = tilecore.compile(m.SerializeToString())
    x = np.zeros((3, 4), np.float32)
    x[0, 1], x[1, 0], x[1, 3], x[2, 2], x[2, 3] = 1, -2, 0.5, np.nan, 3
    np.testing.assert_array_equal(exe.run({"x": x})["y"], ort_run(m, {"x": x})[0])
    x[0, 0] = 7
    with pytest.raises(ValueError, match="NonZero: the input has 6 non-zero elements when the model runs; "
                                         "the model declares 5"):
        exe.run({"x": x})


@pytest.mark.parametrize("sorted_", [1, 0])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_unique_matches_onnx_runtime(sorted_, axis):
    x = np.array([[2, 1, 2], [0, 5, 0], [2, 1, 2], [0, 5, 1]], np.float32)
    kw = {} if axis is None else {"axis": axis}
    want_y = np.unique(x, axis=axis)
    if axis is None:
        shape = [len(want_y)]
    else:
        shape = list(want_y.shape)
    n_in = x.size if axis is None else x.shape[axis]
    m = model(helper.make_node("Unique", ["x"], ["y", "i", "v", "c"], sorted=sorted_, **kw),
              [("x", TensorProto.FLOAT, [4, 3])],
              [("y", TensorProto.FLOAT, shape), ("i", TensorProto.INT64, [shape[0 if axis is None else axis]]),
               ("v", TensorProto.INT64, [n_in]), ("c", TensorProto.INT64, [shape[0 if axis is None else axis]])],
              opset=11)
    got = tilecore.compile(m.SerializeToString()).run({"x": x})
    for name, w in zip("yivc", ort_run(m, {"x": x})):
        np.testing.assert_array_equal(got[name], w, err_msg=name)


def test_unique_fails_when_the_values_give_another_count():
    m = model(helper.make_node("Unique", ["x"], ["y"]), [("x", TensorProto.INT64, [6])],
              [("y", TensorProto.INT64, [3])], opset=11)
    exe = tilecore.compile(m.SerializeToString())
    np.testing.assert_array_equal(exe.run({"x": np.array([5, 1, 5, 3, 1, 3])})["y"], [1, 3, 5])
    with pytest.raises(ValueError, match="Unique: the input has 4 distinct elements when the model runs; the "
                                         "model declares 3"):
        exe.run({"x": np.array([5, 1, 5, 3, 1, 2])})


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_writes_each_batch_entry_from_its_index(mode):
    m = model(helper.make_node("TensorScatter", ["past", "upd", "w"], ["y"], mode=mode, axis=2),
              [("past", TensorProto.FLOAT, [2, 3, 5, 4]), ("upd", TensorProto.FLOAT, [2, 3, 2, 4]),
               ("w", TensorProto.INT64, [2])], [("y", TensorProto.FLOAT, [2, 3, 5, 4])], opset=24)
    rng = np.random.default_rng(1)
    feeds = {"past": rng.standard_normal((2, 3, 5, 4)).astype(np.float32),
             "upd": rng.standard_normal((2, 3, 2, 4)).astype(np.float32),
             "w": np.array([1, 4 if mode == "circular" else 3], np.int64)}
    exe = tilecore.compile(m.SerializeToString())
    np.testing.assert_array_equal(exe.run(feeds)["y"], ort_run(m, feeds)[0])
    if mode == "linear":  # a write past the end of the cache axis
        with pytest.raises(ValueError, match="TensorScatter: batch entry 1 writes position 5 when the model runs"):
            exe.run({**feeds, "w": np.array([0, 4], np.int64)})
