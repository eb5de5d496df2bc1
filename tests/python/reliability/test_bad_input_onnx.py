"""Bad input through ONNX models: attribute-like inputs fed when the model runs (F1), Sign of
NaN (F3), indices out of range (F4), Dropout in training mode (F6), models ONNX Runtime
refuses or reads otherwise (F21) and import messages that name what and where (F18).
Each value is compared with ONNX Runtime or numpy; each refusal is a named error."""
import numpy as np
import pytest

import tilecore
from tilecore import cli
from tilecore.compiler import CompileError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

ort.set_default_logger_severity(4)


def _model(nodes, inputs, outputs, inits=(), opset=17, ir_version=8):
    """inputs/outputs: (name, TensorProto type, shape) (shape None: no type at all)."""
    def info(n, t, s):
        return helper.make_empty_tensor_value_info(n) if t is None else helper.make_tensor_value_info(n, t, s)

    g = helper.make_graph(nodes, "g", [info(*i) for i in inputs], [info(*o) for o in outputs],
                          [numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    return m


def _ort(m, feed):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


X = np.arange(2 * 3 * 3 * 5, dtype=np.float32).reshape(2, 3, 3, 5) * 0.5 - 7


# ---- F1: attribute-like inputs fed when the model runs ----------------------------------------

@pytest.mark.parametrize("keepdims, declared", [(0, [2, 3, 5]), (1, [2, 3, 1, 5])])
def test_reduce_sum_reads_its_run_time_axes_or_fails(keepdims, declared):
    # F1: axes [1] and [2] both give [2, 3, 5] with keepdims 0; with keepdims 1 axis 1 gives
    # [2, 1, 3, 5], not the declared shape: the run fails instead of returning the declared one
    m = _model([helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="rs", keepdims=keepdims)],
               [("x", TP.FLOAT, [2, 3, 3, 5]), ("axes", TP.INT64, [1])], [("y", TP.FLOAT, declared)], opset=13)
    exe = tilecore.compile(m)
    for axis in (1, 2):
        feed = {"x": X, "axes": np.array([axis], np.int64)}
        ref = _ort(m, feed)[0]
        if list(ref.shape) == declared:
            np.testing.assert_allclose(exe.run(feed)["y"], ref, rtol=1e-6)
        else:
            with pytest.raises(ValueError, match=r"`rs` \(ReduceSum\).*axes input \(1\) gives another output shape"):
                exe.run(feed)


SHAPE_CASES = {
    # op: (node, inputs, declared output, the value compiled for, a value that contradicts it)
    "Tile": (helper.make_node("Tile", ["z", "v"], ["y"], name="n"), [("z", TP.FLOAT, [2, 3])], [4, 3],
             [2, 1], [1, 2]),
    "Reshape": (helper.make_node("Reshape", ["z", "v"], ["y"], name="n"), [("z", TP.FLOAT, [2, 3])], [3, 2],
                [3, -1], [2, 3]),
    "Expand": (helper.make_node("Expand", ["z", "v"], ["y"], name="n"), [("z", TP.FLOAT, [2, 1])], [2, 4],
               [2, 4], [2, 2]),
    "OneHot": (helper.make_node("OneHot", ["i", "v", "onoff"], ["y"], name="n"), [("i", TP.INT64, [3])], [3, 5],
               [5], [7]),
    "TopK": (helper.make_node("TopK", ["z", "v"], ["y", "yi"], name="n"), [("z", TP.FLOAT, [2, 3])], [2, 2],
             [2], [1]),
    "ConstantOfShape": (helper.make_node("ConstantOfShape", ["v"], ["y"], name="n"), [], [2, 3], [2, 3], [3, 2]),
}


@pytest.mark.parametrize("op", sorted(SHAPE_CASES))
def test_a_shape_input_fed_when_the_model_runs_is_checked(op):
    # F1: Tile's repeats, OneHot's depth, Reshape's shape, ... as graph inputs
    node, inputs, declared, good, bad = SHAPE_CASES[op]
    inits = [("onoff", np.array([0, 1], np.float32))] if op == "OneHot" else []
    outputs = [("y", TP.FLOAT, declared)] + ([("yi", TP.INT64, declared)] if op == "TopK" else [])
    m = _model([node], inputs + [("v", TP.INT64, [len(good)])], outputs, inits, opset=13)
    exe = tilecore.compile(m)
    data = {"z": np.arange(6, dtype=np.float32).reshape(2, 3) if op != "Expand" else np.array([[1.0], [2.0]],
                                                                                             np.float32),
            "i": np.array([0, 4, -1], np.int64)}
    feed = {n: data[n] for n, _, _ in inputs}
    feed["v"] = np.array(good, np.int64)
    for got, ref in zip(exe.run(feed).values(), _ort(m, feed)):
        np.testing.assert_array_equal(got, ref)
    feed["v"] = np.array(bad, np.int64)
    with pytest.raises(ValueError, match=rf"node `n` \({op}\): input \d `v`: .* when the model runs"):
        exe.run(feed)


@pytest.mark.parametrize("node, inputs, good, bad, message", [
    (helper.make_node("Slice", ["x", "s", "e"], ["y"], name="n"), [("s", TP.INT64, [1]), ("e", TP.INT64, [1])],
     {"s": [0], "e": [9]}, {"s": [1], "e": [9]}, r"give the output shape \(1, 3, 3, 5\) when the model runs"),
    (helper.make_node("Pad", ["x", "p"], ["y"], name="n"), [("p", TP.INT64, [8])],
     {"p": [0] * 8}, {"p": [0, 0, 0, 1, 0, 0, 0, 0]}, r"the pads give the output shape \(2, 3, 3, 6\)"),
    (helper.make_node("CumSum", ["x", "ax"], ["y"], name="n"), [("ax", TP.INT64, [])],
     {"ax": 3}, {"ax": 4}, r"the axis input is 4 when the model runs, out of range for rank 4"),
])
def test_an_operand_fed_when_the_model_runs_is_read_or_fails_by_name(node, inputs, good, bad, message):
    # F1: Slice/Pad operands, CumSum's axis: read by the host kernel when the model runs;
    # values that give another shape than the declared one (or no axis) fail the run
    m = _model([node], [("x", TP.FLOAT, [2, 3, 3, 5])] + inputs, [("y", TP.FLOAT, [2, 3, 3, 5])], opset=13)
    exe = tilecore.compile(m)
    feed = {"x": X, **{k: np.array(v, np.int64) for k, v in good.items()}}
    np.testing.assert_allclose(exe.run(feed)["y"], _ort(m, feed)[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=rf"step 0 `n` \({node.op_type}\): {node.op_type}: .*{message}"):
        exe.run({**feed, **{k: np.array(v, np.int64) for k, v in bad.items()}})


@pytest.mark.parametrize("node, inputs, good, bad, message", [
    (helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear"), [("sc", TP.FLOAT, [4])],
     [1, 1, 2.1, 1.9], [1, 1, 2, 2], r"scales \(1, 1, 2, 2\) give the output shape \(2, 3, 6, 10\)"),
    (helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="cubic"), [("sz", TP.INT64, [4])],
     [2, 3, 6, 9], [2, 3, 6, 10], r"sizes \(2, 3, 6, 10\) give the output shape \(2, 3, 6, 10\)"),
    (helper.make_node("Upsample", ["x", "sc"], ["y"]), [("sc", TP.FLOAT, [4])],
     [1, 1, 2, 1.9], [1, 1, 2, 2], r"scales \(1, 1, 2, 2\) give the output shape \(2, 3, 6, 10\)"),
])
def test_resize_scales_and_sizes_fed_when_the_model_runs_are_read_or_fail(node, inputs, good, bad, message):
    # F1: Resize/Upsample scales and sizes are read by the host kernel; values that give
    # another output shape than the one declared fail the run naming them
    name, dtype = inputs[0][0], np.float32 if inputs[0][1] == TP.FLOAT else np.int64
    m = _model([node], [("x", TP.FLOAT, [2, 3, 3, 5])] + inputs, [("y", TP.FLOAT, [2, 3, 6, 9])],
               opset=9 if node.op_type == "Upsample" else 13)
    exe = tilecore.compile(m)
    feed = {"x": X, name: np.array(good, dtype)}
    np.testing.assert_allclose(exe.run(feed)["y"], _ort(m, feed)[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=rf"\({node.op_type}\): {node.op_type}: {message} when the model runs; "
                                         r"the model declares \[2, 3, 6, 9\]"):
        exe.run({**feed, name: np.array(bad, dtype)})


def test_range_computed_when_the_model_runs_is_checked_against_the_declared_length():
    m = _model([helper.make_node("Range", ["a", "b", "c"], ["y"], name="r")],
               [(n, TP.INT64, []) for n in "abc"], [("y", TP.INT64, [4])], opset=13)
    exe = tilecore.compile(m)
    feed = {"a": np.array(0), "b": np.array(8), "c": np.array(2)}
    np.testing.assert_array_equal(exe.run(feed)["y"], _ort(m, feed)[0])
    with pytest.raises(ValueError, match=r"`r` \(Range\): Range: start, limit and delta give 8 elements, not 4"):
        exe.run({**feed, "c": np.array(1)})


def test_col2im_block_shape_read_when_the_model_runs_is_checked():
    # F1: Col2Im reads block_shape when it runs; a block shape that does not fit the input
    # fails the run (ONNX Runtime fails it too) instead of scattering another image
    m = _model([helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], name="c")],
               [("x", TP.FLOAT, [1, 5, 5]), ("img", TP.INT64, [2]), ("blk", TP.INT64, [2])],
               [("y", TP.FLOAT, [1, 1, 5, 5])], opset=18)
    exe = tilecore.compile(m)
    x = np.arange(25, dtype=np.float32).reshape(1, 5, 5)
    for blk in ([1, 5], [5, 1]):
        feed = {"x": x, "img": np.array([5, 5], np.int64), "blk": np.array(blk, np.int64)}
        np.testing.assert_array_equal(exe.run(feed)["y"], _ort(m, feed)[0])
    for blk, words in (([2, 5], "10 elements per block"), ([0, 5], "element 0 is 0")):
        with pytest.raises(ValueError, match=rf"`c` \(Col2Im\): Col2Im: block_shape .*{words}"):
            exe.run({"x": x, "img": np.array([5, 5], np.int64), "blk": np.array(blk, np.int64)})


# ---- F3: Sign(NaN) ----------------------------------------------------------------------------

@pytest.mark.parametrize("t, dtype, where", [(TP.FLOAT, np.float32, "npu"), (TP.DOUBLE, np.float64, "host")])
def test_sign_of_nan_is_nan(t, dtype, where):
    m = _model([helper.make_node("Sign", ["a"], ["s"], name="sign")], [("a", t, [6])], [("s", t, [6])])
    a = np.array([np.nan, -2, 0, 3, -np.inf, np.inf], dtype)
    rep = {}
    got = tilecore.compile(m, report=rep).run({"a": a})["s"]
    assert [p["where"] for p in rep["placement"]] == [where]
    np.testing.assert_array_equal(got, np.sign(a))
    np.testing.assert_array_equal(got, _ort(m, {"a": a})[0])


# ---- F4: indices out of range -----------------------------------------------------------------

D = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
INDEX_CASES = {
    # name: (node, indices (in range), updates shape or None, an index out of range, its position)
    "Gather": (helper.make_node("Gather", ["x", "i"], ["y"], name="n", axis=1), np.array([1, -4], np.int64),
               None, (4, (1,))),
    "GatherElements": (helper.make_node("GatherElements", ["x", "i"], ["y"], name="n", axis=1),
                       np.full((2, 1, 3), -4, np.int64), None, (9, (1, 0, 2))),
    "GatherND": (helper.make_node("GatherND", ["x", "i"], ["y"], name="n"), np.array([[-2, -4], [1, 3]], np.int64),
                 None, (-3, (0, 0))),
    "ScatterElements": (helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="n", axis=1),
                        np.full((2, 1, 3), -4, np.int64), (2, 1, 3), (4, (0, 0, 1))),
    "ScatterND": (helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="n"), np.array([[-1, -4]], np.int64),
                  (1, 3), (4, (0, 1))),
}


@pytest.mark.parametrize("op, dtype", [(op, np.int64) for op in sorted(INDEX_CASES)] +
                         [(op, np.int32) for op in sorted(INDEX_CASES) if not op.endswith("ND")])  # (ND: int64 only)
def test_an_index_out_of_range_fails_the_run(op, dtype):
    # F4: ONNX Runtime raises; tilecore clamped (or dropped the update) and returned a tensor
    node, idx, upd, (bad, at) = INDEX_CASES[op]
    idx = idx.astype(dtype)
    t = TP.INT64 if dtype == np.int64 else TP.INT32
    inputs = [("x", TP.FLOAT, [2, 4, 3]), ("i", t, list(idx.shape))]
    feed = {"x": D, "i": idx}
    if upd is not None:
        inputs.append(("u", TP.FLOAT, list(upd)))
        feed["u"] = np.full(upd, -1, np.float32)
    m = _model([node], inputs, [("y", None, None)], opset=16)
    exe = tilecore.compile(m)
    np.testing.assert_array_equal(exe.run(feed)["y"], _ort(m, feed)[0])  # negative, in range
    feed["i"] = idx.copy()
    feed["i"][at] = bad
    with pytest.raises(Exception, match="(?i)out of data bounds|invalid ind|out of range"):
        _ort(m, feed)
    where = ", ".join(map(str, at))
    with pytest.raises(ValueError, match=rf"node `n` \({op}\): input 1 `i`: index {bad} at \({where}\) is out of "
                                         r"range when the model runs: axis \d of the data has \d elements"):
        exe.run(feed)


def test_an_index_beyond_int32_fails_the_run():
    # F4: 2**40 and -5 were narrowed and clamped to the last and first rows
    m = _model([INDEX_CASES["Gather"][0]], [("x", TP.FLOAT, [2, 4, 3]), ("i", TP.INT64, [2])], [("y", None, None)])
    exe = tilecore.compile(m)
    for bad in (2**40, -5, -2**40):
        with pytest.raises(ValueError, match=rf"index {bad} at \(1\) is out of range"):
            exe.run({"x": D, "i": np.array([0, bad], np.int64)})


def test_constant_indices_out_of_range_are_refused_when_compiling():
    m = _model([INDEX_CASES["Gather"][0]], [("x", TP.FLOAT, [2, 4, 3])], [("y", None, None)],
               [("i", np.array([1, 4], np.int64))])
    with pytest.raises(CompileError, match=r"node `n` \(Gather\): input 1 `i`: index 4 at \(1\) is out of range: "
                                           r"axis 1 of the data has 4 elements, so an index must be in \[-4, 3\]"):
        tilecore.compile(m)


def _host_index_model(op):
    """(model, feed in range, the name of the index input) of a host op that reads indices."""
    if op == "NegativeLogLikelihoodLoss":
        node = helper.make_node(op, ["x", "i"], ["y"], name="n", reduction="none", ignore_index=-1)
        inputs, idx = [("x", TP.FLOAT, [3, 4]), ("i", TP.INT64, [3])], np.array([0, 3, -1], np.int64)
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
    elif op == "ReverseSequence":
        node = helper.make_node(op, ["x", "i"], ["y"], name="n", time_axis=0, batch_axis=1)
        inputs, idx = [("x", TP.FLOAT, [4, 3]), ("i", TP.INT64, [3])], np.array([4, 0, 2], np.int64)
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
    else:
        node = helper.make_node(op, ["x", "i"], ["y"], name="n", domain="ai.onnx.ml")
        inputs, idx = [("x", TP.FLOAT, [3, 4]), ("i", TP.INT64, [2])], np.array([3, 0], np.int64)
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = _model([node], inputs, [("y", None, None)], opset=17)
    if op == "ArrayFeatureExtractor":
        m.opset_import.append(helper.make_opsetid("ai.onnx.ml", 3))
    return m, {"x": x, "i": idx}


@pytest.mark.parametrize("op, bad, words", [
    ("NegativeLogLikelihoodLoss", 4, r"target 4 \(element 1\) is out of range when the model runs: a class must be "
                                     r"in \[0, 3\] or ignore_index -1"),
    ("ReverseSequence", 5, r"sequence_lens element 1 is 5 when the model runs; a length must be in \[0, 4\]"),
    ("ArrayFeatureExtractor", 4, r"index 4 \(element 1\) is out of range when the model runs: the last axis has 4"),
])
def test_a_host_kernel_fails_a_run_whose_indices_are_out_of_range(op, bad, words):
    # F4's class on the host: NegativeLogLikelihoodLoss read beyond the row (ONNX Runtime's
    # result is garbage), ReverseSequence clamped the length, ArrayFeatureExtractor wrapped
    m, feed = _host_index_model(op)
    exe = tilecore.compile(m)
    np.testing.assert_allclose(exe.run(feed)["y"], _ort(m, feed)[0])
    feed["i"][1] = bad
    with pytest.raises(ValueError, match=rf"step 0 `n` \((ai.onnx.ml::)?{op}\): .*{words}"):
        exe.run(feed)


# ---- F6: Dropout in training mode -------------------------------------------------------------

def _dropout(training=None, ratio=0.5):
    inits = ([] if ratio is None else [("r", np.array(ratio, np.float32))]) + \
        ([] if training is None else [("t", np.array(training))])
    inputs = [("x", TP.FLOAT, [3, 4])] + ([("t", TP.BOOL, [])] if training is None else []) + \
        ([("r", TP.FLOAT, [])] if ratio is None else [])
    return _model([helper.make_node("Dropout", ["x", "r", "t"], ["y", "m"], name="d")], inputs,
                  [("y", TP.FLOAT, [3, 4]), ("m", TP.BOOL, [3, 4])], inits, opset=13)


def test_dropout_in_training_mode_is_refused():
    with pytest.raises(CompileError, match=r"node `d` \(Dropout\).*training mode with a ratio other than 0 draws "
                                           "random numbers"):
        tilecore.compile(_dropout(True))


@pytest.mark.parametrize("training, ratio", [(False, 0.5), (True, 0.0)])
def test_dropout_at_inference_or_with_ratio_0_is_the_input(training, ratio):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = tilecore.compile(_dropout(training, ratio)).run({"x": x})
    for g, r in zip((got["y"], got["m"]), _ort(_dropout(training, ratio), {"x": x})):
        np.testing.assert_array_equal(g, r)


def test_dropout_training_mode_and_ratio_fed_when_the_model_runs_are_read():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = _dropout(None, None)
    exe = tilecore.compile(m)
    for t, r in ((False, 0.5), (True, 0.0)):
        feed = {"x": x, "t": np.array(t), "r": np.array(r, np.float32)}
        for g, w in zip((exe.run(feed)["y"], exe.run(feed)["m"]), _ort(m, feed)):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(ValueError, match=r"step 0 `d` \(Dropout\): Dropout: training mode with ratio 0.5 when the "
                                         "model runs draws random numbers"):
        exe.run({"x": x, "t": np.array(True), "r": np.array(0.5, np.float32)})


# ---- F21: models ONNX Runtime refuses or reads otherwise ---------------------------------------

def _add(opset=17, ir_version=8):
    """y = x + b, x [4, 16], b a constant [16]."""
    return _model([helper.make_node("Add", ["x", "b"], ["y"], name="add")], [("x", TP.FLOAT, [4, 16])],
                  [("y", TP.FLOAT, [4, 16])], [("b", np.linspace(-1, 1, 16, dtype=np.float32))], opset, ir_version)


def _edited(edit, **kw):
    m = _add(**kw)
    edit(m)
    return m


def test_an_initializer_shadowing_an_input_keeps_its_onnx_meaning_or_is_refused():
    # F21: from IR version 4 the initializer is the input's default, which a caller may replace;
    # it was frozen into a constant (an executable of 0 steps without the input)
    def shadow(m):
        m.graph.input.append(helper.make_tensor_value_info("b", TP.FLOAT, [16]))

    with pytest.raises(NotImplementedError, match="graph input 'b' has an initializer of the same name: at IR "
                                                  "version 8 .* default value"):
        tilecore.compile(_edited(shadow))
    # before IR version 4 every initializer is listed as an input, and is a constant (ONNX Runtime too)
    m = _edited(shadow, ir_version=3)
    x = np.ones((4, 16), np.float32)
    exe = tilecore.compile(m)
    assert list(exe.inputs) == ["x"]
    np.testing.assert_allclose(exe.run({"x": x})["y"], _ort(m, {"x": x})[0])


def _dup_init(m):
    m.graph.initializer.append(numpy_helper.from_array(np.zeros(16, np.float32), "b"))


def _neg_dim(m):
    m.graph.initializer[0].dims[:] = [-16]


def _dup_input(m):
    m.graph.input.append(helper.make_tensor_value_info("x", TP.FLOAT, [4, 16]))


def _undefined_output(m):
    m.graph.output[0].type.tensor_type.elem_type = 0


@pytest.mark.parametrize("edit, words", [
    (_dup_init, "initializer 'b' is defined twice"),
    (_neg_dim, r"initializer 'b' has a negative dimension \(\[-16\]\)"),
    (_dup_input, "graph input 'x' is listed twice"),
    (_undefined_output, r"graph output 'y' has element type 0 \(UNDEFINED\)"),
    (lambda m: setattr(m, "ir_version", 0), "IR version 0 is not supported"),
    (lambda m: setattr(m, "ir_version", 2**62), f"IR version {2**62} is not supported"),
])
def test_a_model_onnx_refuses_is_refused_by_name(edit, words):
    m = _edited(edit)
    with pytest.raises(Exception):  # the reference: ONNX Runtime (or onnx.checker) refuses it too
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        onnx.checker.check_model(m, full_check=True)
    with pytest.raises(ValueError, match=words):
        tilecore.compile(m.SerializeToString())


@pytest.mark.parametrize("opset", [1, 6])
def test_an_op_older_than_its_implementation_is_refused_naming_the_opset(opset):
    # F21: Add before opset 7 broadcast only with its broadcast/axis attributes
    with pytest.raises(NotImplementedError, match=rf"\(Add, opset {opset}\): opset {opset} defines Add as its "
                                                  rf"version {opset}, .* the version 7 tilecore implements"):
        tilecore.compile(_add(opset=opset))
    x = np.ones((4, 16), np.float32)
    np.testing.assert_allclose(tilecore.compile(_add(opset=7)).run({"x": x})["y"], _ort(_add(opset=7), {"x": x})[0])


# ---- F18: import messages ---------------------------------------------------------------------

def _mm(nodes, x_type=None):
    x = helper.make_tensor_value_info("x", TP.FLOAT, [4, 16]) if x_type is None else helper.make_value_info("x", x_type)
    g = helper.make_graph(nodes, "g", [x], [helper.make_empty_tensor_value_info("y")],
                          [numpy_helper.from_array(np.ones((16, 8), np.float32), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("model, words", [
    (_mm([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
          helper.make_node("Softmax", ["h"], ["y"], name="sm", axis="x")]),
     r"node 'sm' \(Softmax, opset 17\): attribute 'axis' is of type STRING; Softmax takes INT"),
    (_mm([helper.make_node("MatMul", ["x"], ["y"], name="mm")]), r"node 'mm' \(MatMul, opset 17\): 1 input; MatMul "
                                                                 "takes 2"),
    (_mm([helper.make_node("MatMul", ["x", ""], ["y"], name="mm")]), r"input 1 \(B\) is required and left empty"),
    (_mm([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
         helper.make_sequence_type_proto(helper.make_tensor_type_proto(TP.FLOAT, [4, 16]))),
     r"node 'mm' \(MatMul, opset 17\): input 0 \(A\) takes a tensor, not a sequence: 'x' is seq"),
    (_mm([helper.make_node("SequenceConstruct", ["x", "x"], ["s"]), helper.make_node("MatMul", ["s", "w"], ["y"],
                                                                                     name="mm")]),
     r"node `mm` \(MatMul\) \(opset 17\): MatMul: input 0 \(A\) takes a tensor, not a sequence"),
])
def test_an_ill_formed_node_is_named_at_import(model, words, tmp_path, capsys):
    # F18: were "'<=' not supported between instances of 'int' and 'str'", "list index out of
    # range" and "'SequenceInfo' object has no attribute 'shape'"
    with pytest.raises(ValueError, match=words):
        tilecore.compile(model)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    try:
        rc = cli.main(["compile", str(path), "-o", str(tmp_path / "m.tcx"), "--quiet"])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err and ("'mm'" in err or "`mm`" in err or "'sm'" in err), err


@pytest.mark.parametrize("node, words", [
    (helper.make_node("Cast", ["x"], ["y"], name="c"), r"node 'c' \(Cast, opset 17\): attribute 'to' is required and "
                                                       r"missing"),
    (helper.make_node("Concat", ["x", "x"], ["y"], name="c"), r"node 'c' \(Concat, opset 17\): attribute 'axis' is "
                                                              r"required and missing"),
])
def test_a_missing_required_attribute_is_named(node, words):
    # Found by benchmarks/importer_fuzz.py: were "int() argument must be ... not 'NoneType'"
    # and "'<=' not supported between instances of 'int' and 'NoneType'".
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TP.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    with pytest.raises(ValueError, match=words):
        tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))


def test_a_conv_transpose_weight_of_another_rank_is_named():
    # Found by benchmarks/importer_fuzz.py: was "tuple index out of range".
    w = np.ones((16, 1), np.float32)
    g = helper.make_graph([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct")], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [1, 16, 4, 4])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                          [helper.make_tensor("w", TP.FLOAT, w.shape, w.ravel())])
    with pytest.raises(ValueError, match=r"ConvTranspose.*W of shape .*16, 1.* does not have the rank of X"):
        tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))


@pytest.mark.parametrize("dtype", [TP.FLOAT, TP.FLOAT16])
def test_an_empty_name_in_a_variadic_input_list_is_named(dtype):
    # Found by benchmarks/importer_fuzz.py: Min(x, x, "") in float16 crashed the process in a
    # host kernel's check (ONNX Runtime 1.32 dies on it too); only an optional input may be empty.
    g = helper.make_graph([helper.make_node("Min", ["x", "x", ""], ["y"], name="m")], "g",
                          [helper.make_tensor_value_info("x", dtype, [4, 16])],
                          [helper.make_tensor_value_info("y", dtype, [4, 16])])
    with pytest.raises(ValueError, match=r"node 'm' \(Min, opset 17\): input 2 \(data_0\) is left empty; only an "
                                         r"optional input may be"):
        tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
