"""Operands read when the model runs (the driver's RUN_TIME_INPUTS): Slice's starts, ends,
axes and steps, Pad's pads, constant value and axes, and CumSum's / CumProd's axis given as
graph inputs run on the host, which reads them, computes what ONNX does with them and fails
the run, naming the values, when they give another output shape than the one compiled.
Compared with ONNX Runtime on the same inputs."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import tilecore
from tilecore import frontend

ort = pytest.importorskip("onnxruntime")


def model(node, inputs, output, opset=18):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(*output)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def compiled(m, entry="bytes"):
    rep = {}
    exe = tilecore.compile(frontend.from_onnx(m) if entry == "graph" else m.SerializeToString(), report=rep)
    assert [p["where"] for p in rep["placement"]] == ["host"], rep["placement"]
    return exe


def ort_run(m, feeds):
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0]


X = (np.arange(60, dtype=np.float32).reshape(3, 4, 5) * 0.5 - 7).astype(np.float32)
I64 = TensorProto.INT64


@pytest.mark.parametrize("entry", ["bytes", "graph"])
def test_slice_reads_starts_ends_axes_and_steps_when_the_model_runs(entry):
    m = model(helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"], name="sl"),
              [("x", TensorProto.FLOAT, [3, 4, 5]), ("s", I64, [2]), ("e", I64, [2]), ("a", I64, [2]),
               ("t", I64, [2])], ("y", TensorProto.FLOAT, [2, 2, 5]))
    exe = compiled(m, entry)
    big = np.iinfo(np.int64).max
    # each gives [2, 2, 5]: plain, negative indices, out-of-range ends clamped, negative steps,
    # axes named from the end and in another order
    for s, e, a, t in [([0, 1], [2, 3], [0, 1], [1, 1]), ([-3, -3], [-1, -1], [0, 1], [1, 1]),
                       ([1, 0], [big, 4], [0, 1], [1, 2]), ([2, 3], [0, 0], [0, 1], [-1, -2]),
                       ([0, -1], [4, -big], [-2, -3], [2, -2]), ([0, 1], [3, 3], [1, 0], [2, 1])]:
        feeds = {"x": X, "s": np.array(s, np.int64), "e": np.array(e, np.int64), "a": np.array(a, np.int64),
                 "t": np.array(t, np.int64)}
        want = ort_run(m, feeds)
        np.testing.assert_array_equal(exe.run(feeds)["y"], want, err_msg=str((s, e, a, t)))


def test_slice_fails_naming_the_shape_its_values_give():
    m = model(helper.make_node("Slice", ["x", "s", "e"], ["y"]),
              [("x", TensorProto.FLOAT, [3, 4, 5]), ("s", I64, [1]), ("e", I64, [1])], ("y", TensorProto.FLOAT, [2, 4, 5]))
    exe = compiled(m)
    np.testing.assert_array_equal(exe.run({"x": X, "s": np.array([1], np.int64), "e": np.array([3], np.int64)})["y"],
                                  X[1:3])
    with pytest.raises(ValueError, match=r"Slice: starts, ends, axes and steps give the output shape \(1, 4, 5\) "
                                         r"when the model runs; the model declares \[2, 4, 5\]"):
        exe.run({"x": X, "s": np.array([2], np.int64), "e": np.array([3], np.int64)})


def test_slice_refuses_a_zero_step_and_a_repeated_axis_when_the_model_runs():
    m = model(helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"]),
              [("x", TensorProto.FLOAT, [3, 4, 5]), ("s", I64, [2]), ("e", I64, [2]), ("a", I64, [2]),
               ("t", I64, [2])], ("y", TensorProto.FLOAT, [3, 4, 5]))
    exe = compiled(m)
    feeds = {"x": X, "s": np.array([0, 0], np.int64), "e": np.array([9, 9], np.int64),
             "a": np.array([0, 1], np.int64), "t": np.array([1, 0], np.int64)}
    with pytest.raises(ValueError, match="Slice: step 1 is 0"):
        exe.run(feeds)
    with pytest.raises(ValueError, match="Slice: axis -3 is named twice"):
        exe.run({**feeds, "a": np.array([0, -3], np.int64), "t": np.array([1, 1], np.int64)})
    with pytest.raises(ValueError, match=r"Slice: axis 3 \(element 1\) is out of range for rank 3"):
        exe.run({**feeds, "a": np.array([0, 3], np.int64), "t": np.array([1, 1], np.int64)})


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_reads_pads_value_and_axes_when_the_model_runs(mode):
    m = model(helper.make_node("Pad", ["x", "p", "v", "a"], ["y"], mode=mode),
              [("x", TensorProto.FLOAT, [3, 4, 5]), ("p", I64, [4]), ("v", TensorProto.FLOAT, []),
               ("a", I64, [2])], ("y", TensorProto.FLOAT, [3, 7, 6]))
    exe = compiled(m)
    for p, a in [([1, 0, 2, 1], [1, 2]), ([0, 1, 1, 2], [-1, -2]), ([2, -1, 1, 2], [1, 2])]:
        feeds = {"x": X, "p": np.array(p, np.int64), "v": np.array(2.5, np.float32), "a": np.array(a, np.int64)}
        np.testing.assert_array_equal(exe.run(feeds)["y"], ort_run(m, feeds), err_msg=str((p, a)))
    with pytest.raises(ValueError, match=r"Pad: the pads give the output shape \(3, 8, 6\) when the model runs"):
        exe.run({"x": X, "p": np.array([2, 0, 2, 1], np.int64), "v": np.array(0, np.float32),
                 "a": np.array([1, 2], np.int64)})


@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 1)])
def test_a_cumulative_op_reads_its_axis_when_the_model_runs(op, exclusive, reverse):
    m = model(helper.make_node(op, ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse),
              [("x", TensorProto.FLOAT, [3, 4, 5]), ("axis", TensorProto.INT32, [])], ("y", TensorProto.FLOAT, [3, 4, 5]),
              opset=26 if op == "CumProd" else 18)
    exe = compiled(m)
    x = (X / 8).astype(np.float32)
    for axis in (0, 1, 2, -1, -3):
        feeds = {"x": x, "axis": np.array(axis, np.int32)}
        np.testing.assert_allclose(exe.run(feeds)["y"], ort_run(m, feeds), rtol=1e-5, atol=1e-6, err_msg=str(axis))
    with pytest.raises(ValueError, match=f"{op}: the axis input is 3 when the model runs, out of range for rank 3"):
        exe.run({"x": x, "axis": np.array(3, np.int32)})


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_with_constant_pads_that_crop_one_side_and_pad_the_other(mode):
    # ONNX crops (negative pads) before it pads: wrap wraps within what is left
    pads = helper.make_tensor("p", I64, [6], [0, 2, -1, 0, 1, 2])
    g = helper.make_graph([helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7, 6])], [pads])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    got = tilecore.compile(m.SerializeToString()).run({"x": X})["y"]
    np.testing.assert_array_equal(got, ort_run(m, {"x": X}))


def test_a_shape_declared_downstream_reaches_a_reduction_with_run_time_axes():
    # ReduceL2's expanded form: ReduceSum(x * x, axes) -> Sqrt -> CastLike; only the graph
    # output's shape is declared. Inference carries it back to the ReduceSum, whose host
    # kernel checks it when the model runs: axes that give another shape fail the run.
    nodes = [helper.make_node("Mul", ["x", "x"], ["sq"]), helper.make_node("ReduceSum", ["sq", "axes"], ["s"]),
             helper.make_node("Cast", ["s"], ["d"], to=TensorProto.DOUBLE), helper.make_node("Sqrt", ["d"], ["r"]),
             helper.make_node("CastLike", ["r", "x"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5]),
                                       helper.make_tensor_value_info("axes", I64, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 1, 5])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    exe = tilecore.compile(m.SerializeToString())
    for axes in ([1], [-2]):
        feeds = {"x": X, "axes": np.array(axes, np.int64)}
        np.testing.assert_allclose(exe.run(feeds)["y"], ort_run(m, feeds), rtol=1e-6)
    with pytest.raises(ValueError, match="ReduceSum: the axes input .* gives another output shape than"):
        exe.run({"x": X, "axes": np.array([2], np.int64)})


def test_a_window_whose_size_is_a_graph_input_is_compiled_for_the_declared_length():
    # HannWindow runs as its ONNX function body; compiled for size 10 (the declared length),
    # with a check step that fails a run feeding another size
    m = model(helper.make_node("HannWindow", ["n"], ["w"], name="win"), [("n", I64, [])],
              ("w", TensorProto.FLOAT, [10]), opset=17)
    exe = tilecore.compile(m.SerializeToString())
    feeds = {"n": np.array(10, np.int64)}
    np.testing.assert_allclose(exe.run(feeds)["w"], ort_run(m, feeds), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"node `win` \(HannWindow\): input 0 `n`: element 0 is 7 .* needs 10"):
        exe.run({"n": np.array(7, np.int64)})


def test_center_crop_pad_whose_shape_is_a_graph_input_is_compiled_for_the_declared_shape():
    m = model(helper.make_node("CenterCropPad", ["x", "s"], ["y"], name="ccp", axes=[1, 2]),
              [("x", TensorProto.FLOAT, [3, 4, 5]), ("s", I64, [2])], ("y", TensorProto.FLOAT, [3, 6, 3]))
    exe = tilecore.compile(m.SerializeToString())
    feeds = {"x": X, "s": np.array([6, 3], np.int64)}
    np.testing.assert_array_equal(exe.run(feeds)["y"], ort_run(m, feeds))
    with pytest.raises(ValueError, match=r"node `ccp` \(CenterCropPad\): input 1 `s`: element 1 is 4"):
        exe.run({"x": X, "s": np.array([6, 4], np.int64)})


def test_an_if_whose_condition_folds_runs_the_branch_it_takes():
    # no kernel runs an If: the taken branch's nodes replace it (compiler/inline_if.py)
    then_b = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3, 4, 5])])
    else_b = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3, 4, 5])])
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Size", ["s"], ["r"]),
             helper.make_node("Constant", [], ["three"], value=helper.make_tensor("three", I64, [], [3])),
             helper.make_node("Equal", ["r", "three"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=else_b)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4, 5])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    rep = {}
    got = tilecore.compile(m.SerializeToString(), report=rep).run({"x": X})["y"]
    assert "If" not in {p["op_type"] for p in rep["placement"]}
    np.testing.assert_array_equal(got, ort_run(m, {"x": X}))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_10_reads_its_scales_input_when_the_model_runs(mode):
    # before opset 11, Resize's input 1 is the scales (later opsets: roi)
    m = model(helper.make_node("Resize", ["x", "s"], ["y"], mode=mode),
              [("x", TensorProto.FLOAT, [3, 4, 5]), ("s", TensorProto.FLOAT, [3])], ("y", TensorProto.FLOAT, [3, 6, 2]),
              opset=10)
    m.ir_version = 8
    exe = tilecore.compile(m.SerializeToString())
    feeds = {"x": X, "s": np.array([1, 1.5, 0.5], np.float32)}
    np.testing.assert_allclose(exe.run(feeds)["y"], ort_run(m, feeds), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match=r"Resize: scales \(1, 2, 2\) give the output shape \(3, 8, 10\)"):
        exe.run({**feeds, "s": np.array([1, 2, 2], np.float32)})


def test_two_ifs_whose_branches_use_the_same_names_are_both_inlined():
    def branch(op, name):
        return helper.make_graph([helper.make_node(op, ["x"], ["t"])], name, [],
                                 [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3, 4, 5])])
    nodes = [helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True])),
             helper.make_node("If", ["c"], ["a"], then_branch=branch("Neg", "n1"), else_branch=branch("Abs", "a1")),
             helper.make_node("If", ["c"], ["b"], then_branch=branch("Relu", "r2"), else_branch=branch("Abs", "a2")),
             helper.make_node("Sub", ["a", "b"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4, 5])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    np.testing.assert_array_equal(tilecore.compile(m.SerializeToString()).run({"x": X})["y"], ort_run(m, {"x": X}))
