"""Shape buckets from the compiler (compiler/buckets.py, batch_rows.py; docs/compiler.md,
"Shape buckets"): small ONNX models with a symbolic batch or sequence length compiled for
several sizes, every bucket and a padded smaller batch against ONNX Runtime; int8 buckets
calibrated once, a batch's rows bit for bit those of batch-1 runs; models that mix the rows
of a batch refused naming the node; the file saved and loaded, and its constants once."""
import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from onnx import TensorProto, helper

import tilecore
from tilecore import runtime
from tilecore.compiler.driver import CompileError
from tilecore.compiler.verify import cosine

ort = pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.npu

RNG = np.random.default_rng(2026)
C_OUT, CLASSES = 8, 2048


def make_model(nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
                          [onnx.numpy_helper.from_array(a, n) for n, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    return m


def small_cnn():
    """x [N, 3, 8, 8] -> Conv 3x3 (8) -> Relu -> GlobalAveragePool -> Flatten -> Gemm (2048): the
    Gemm's 64 KiB of weights are most of a bucket's file."""
    rng = np.random.default_rng(11)
    inits = {"w": (rng.standard_normal((C_OUT, 3, 3, 3)) * 0.3).astype(np.float32),
             "b": (rng.standard_normal(C_OUT) * 0.1).astype(np.float32),
             "gw": (rng.standard_normal((CLASSES, C_OUT)) * 0.3).astype(np.float32),
             "gb": (rng.standard_normal(CLASSES) * 0.1).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "gw", "gb"], ["y"], name="fc", transB=1)]
    return make_model(nodes, [("x", ["N", 3, 8, 8])], [("y", ["N", CLASSES])], inits)


def ort_run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def images(n):
    return RNG.standard_normal((n, 3, 8, 8)).astype(np.float32)


@pytest.fixture(scope="module")
def cnn():
    return small_cnn()


@pytest.fixture(scope="module")
def cnn_f32(cnn):
    rep = {}
    exe = tilecore.compile(cnn, dims={"N": [1, 2, 4]}, batch="N", report=rep)
    return exe, rep


def test_f32_buckets_and_a_padded_batch_match_onnxruntime(cnn, cnn_f32):
    exe, rep = cnn_f32
    assert [b["inputs"]["x"] for b in exe.buckets] == [[1, 3, 8, 8], [2, 3, 8, 8], [4, 3, 8, 8]]
    assert [b["outputs"]["y"] for b in exe.buckets] == [[1, CLASSES], [2, CLASSES], [4, CLASSES]]
    assert exe.batch_axes == {"x": 0, "y": 0}
    assert rep["batch_axes"] == {"x": 0, "y": 0}
    assert [b["inputs"] for b in rep["buckets"]] == [{"x": [n, 3, 8, 8]} for n in (1, 2, 4)]
    for n, index in [(1, 0), (2, 1), (4, 2), (3, 2)]:
        x = images(n)
        y = exe.run({"x": x})["y"]
        assert y.shape == (n, CLASSES)
        np.testing.assert_allclose(y, ort_run(cnn, {"x": x}), rtol=1e-5, atol=1e-5)
        st = exe.stats()["bucket"]
        assert st["index"] == index and st["buckets"] == 3
        assert st.get("padded_from") == (3 if n == 3 else None)


def test_saved_and_loaded_runs_alike(tmp_path, cnn_f32):
    exe, _ = cnn_f32
    exe.save(tmp_path / "cnn.tcx")
    again = runtime.load_executable(tmp_path / "cnn.tcx")
    assert again.buckets == exe.buckets and again.batch_axes == exe.batch_axes
    for n in (1, 3, 4):
        x = images(n)
        np.testing.assert_array_equal(again.run({"x": x})["y"], exe.run({"x": x})["y"])


def test_constants_are_stored_once(cnn, cnn_f32):
    """The weights (72 KiB, incompressible) are in the file once, not once per bucket."""
    exe, _ = cnn_f32
    weights = sum(onnx.numpy_helper.to_array(t).nbytes for t in cnn.graph.initializer)
    assert weights == 4 * (C_OUT * 27 + C_OUT + CLASSES * C_OUT + CLASSES)
    size = len(exe.to_bytes())
    single = len(tilecore.compile(cnn, input_shapes={"x": [4, 3, 8, 8]}).to_bytes())
    assert weights < single
    # a second copy of the weights would not fit (the buckets' code is deflated)
    assert size < single + weights // 2, (size, single, weights)


@pytest.fixture(scope="module")
def cnn_int8(cnn):
    rep = {}
    calib = {"x": np.random.default_rng(5).standard_normal((8, 1, 3, 8, 8)).astype(np.float32)}
    exe = tilecore.compile(cnn, dims={"N": [1, 2, 4]}, batch="N", precision="int8", calib_samples=calib, report=rep)
    return exe, rep


def test_int8_buckets_quantise_alike(cnn, cnn_int8):
    exe, rep = cnn_int8
    # one calibration (at batch 1) for every bucket: the same tensors in int8, the same ranges
    first = rep["buckets"][0]["report"]["precision"]
    assert first["assigned"] == {"conv": "int8", "fc": "int8"}
    for b in rep["buckets"][1:]:
        prec = b["report"]["precision"]
        assert prec["assigned"] == first["assigned"]
        assert prec["thresholds"] == first["thresholds"]
        assert prec["bias_correction"] == first["bias_correction"]
    x = images(4)
    y4 = exe.run({"x": x})["y"]
    for n in (1, 2, 4):
        assert cosine(exe.run({"x": x[:n]})["y"], ort_run(cnn, {"x": x[:n]})) >= 0.99
    # the rows of a batch of 4, of 2 and of 3 (padded into 4) are those of four batch-1 runs
    rows = np.concatenate([exe.run({"x": x[i:i + 1]})["y"] for i in range(4)])
    np.testing.assert_array_equal(y4, rows)
    np.testing.assert_array_equal(exe.run({"x": x[:2]})["y"], rows[:2])
    np.testing.assert_array_equal(exe.run({"x": x[:3]})["y"], rows[:3])
    assert exe.stats()["bucket"]["padded_from"] == 3


def test_without_a_batch_only_exact_shapes_run(cnn):
    exe = tilecore.compile(cnn, dims={"N": [1, 2, 4]})
    assert exe.batch_axes == {}
    with pytest.raises(ValueError, match=r"no bucket of the executable takes the inputs x: \[3, 3, 8, 8\] \(it runs "
                                         r"exact shapes only\); its buckets:\n  bucket 0: x: float32\[1, 3, 8, 8\]\n"
                                         r"  bucket 1: x: float32\[2, 3, 8, 8\]\n  bucket 2: x: float32\[4, 3, 8, 8\]"):
        exe.run({"x": images(3)})


def test_input_shapes_lists_are_buckets(cnn):
    exe = tilecore.compile(cnn, input_shapes={"x": [(2, 3, 8, 8), (1, 3, 8, 8)]}, batch={"x": 0})
    assert [b["inputs"]["x"][0] for b in exe.buckets] == [2, 1]
    assert exe.batch_axes == {"x": 0, "y": 0}
    x = images(2)
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(cnn, {"x": x}), rtol=1e-5, atol=1e-5)


# ---- models that mix the rows of a batch ------------------------------------------------------

def _mixing_models():
    x = [("x", ["N", 4, 6])]
    yield "mean_over_batch", make_model(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("ReduceMean", ["r", "axes"], ["y"], name="mean_over_batch", keepdims=1)],
        x, [("y", [1, 4, 6])], {"axes": np.array([0], np.int64)}, opset=18)
    yield "softmax_over_batch", make_model(
        [helper.make_node("Softmax", ["x"], ["y"], name="softmax_over_batch", axis=0)], x, [("y", ["N", 4, 6])], {})
    # the batch (axis 1) merged under axis 0: [2, N, 6] -> [2N, 6], rows of two images interleaved
    yield "merge_batch", make_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="merge_batch")],
        [("x", [2, "N", 6])], [("y", [None, 6])], {"shape": np.array([-1, 6], np.int64)})
    # a MatMul summing over the batch: x^T x
    yield "gram", make_model(
        [helper.make_node("Transpose", ["x"], ["xt"], name="t", perm=[1, 0]),
         helper.make_node("MatMul", ["xt", "x"], ["y"], name="gram")],
        [("x", ["N", 6])], [("y", [6, 6])], {})


@pytest.mark.parametrize("node,model", list(_mixing_models()), ids=lambda v: v if isinstance(v, str) else "")
def test_a_model_that_mixes_rows_is_refused_naming_the_node(node, model):
    with pytest.raises(CompileError, match=rf"batch: node `{node}` \("):
        tilecore.compile(model, dims={"N": [1, 2, 4]}, batch="N")
    # without the batch declaration: buckets of exact shapes, each computing the model
    exe = tilecore.compile(model, dims={"N": [1, 2]})
    assert exe.batch_axes == {} and len(exe.buckets) == 2
    dims = model.graph.input[0].type.tensor_type.shape.dim
    x = RNG.standard_normal([2 if d.dim_param == "N" else d.dim_value for d in dims]).astype(np.float32)
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x}), rtol=1e-5, atol=1e-5)


def test_bucket_argument_errors(cnn):
    with pytest.raises(CompileError, match="batch= declares the batch of buckets"):
        tilecore.compile(cnn, input_shapes={"x": [1, 3, 8, 8]}, batch="N")
    with pytest.raises(CompileError, match="dims: `M` is no symbolic dimension of the model's inputs"):
        tilecore.compile(cnn, dims={"M": [1, 2]})
    with pytest.raises(CompileError, match=r"dims: `N` needs distinct positive sizes, got \[2, 2\]"):
        tilecore.compile(cnn, dims={"N": [2, 2]})
    with pytest.raises(CompileError, match="batch: no bucket has a batch of 2 or more"):
        tilecore.compile(cnn, dims={"N": [1]}, batch="N")
    calib = {"x": np.zeros((2, 3, 3, 8, 8), np.float32)}
    with pytest.raises(CompileError, match="calib_samples have the shapes"):
        tilecore.compile(cnn, dims={"N": [1, 2]}, precision="int8", calib_samples=calib)


# ---- a sequence length: attention and layer norm ----------------------------------------------

def small_attention(d=16):
    rng = np.random.default_rng(3)
    inits = {"wq": (rng.standard_normal((d, d)) * 0.3).astype(np.float32),
             "wk": (rng.standard_normal((d, d)) * 0.3).astype(np.float32),
             "wv": (rng.standard_normal((d, d)) * 0.3).astype(np.float32),
             "scale": np.array(1 / np.sqrt(d), np.float32),
             "gamma": (1 + 0.1 * rng.standard_normal(d)).astype(np.float32),
             "beta": (0.1 * rng.standard_normal(d)).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
             helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
             helper.make_node("MatMul", ["x", "wv"], ["v"], name="v"),
             helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
             helper.make_node("Mul", ["s", "scale"], ["ss"], name="scaled"),
             helper.make_node("Softmax", ["ss"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["o"], name="attend"),
             helper.make_node("Add", ["o", "x"], ["h"], name="residual"),
             helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["y"], name="norm", axis=-1,
                              epsilon=1e-5)]
    return make_model(nodes, [("x", [1, "seq", d])], [("y", [1, "seq", d])], inits)


def test_sequence_lengths_match_onnxruntime(tmp_path):
    model = small_attention()
    exe = tilecore.compile(model, dims={"seq": [8, 16, 32]})
    assert [b["inputs"]["x"] for b in exe.buckets] == [[1, 8, 16], [1, 16, 16], [1, 32, 16]]
    exe.save(tmp_path / "attention.tcx")
    again = runtime.load_executable(tmp_path / "attention.tcx")
    for length, index in [(8, 0), (16, 1), (32, 2)]:
        x = RNG.standard_normal((1, length, 16)).astype(np.float32)
        y = exe.run({"x": x})["y"]
        np.testing.assert_allclose(y, ort_run(model, {"x": x}), rtol=1e-4, atol=1e-5)
        assert exe.stats()["bucket"]["index"] == index
        np.testing.assert_array_equal(again.run({"x": x})["y"], y)
    with pytest.raises(ValueError, match=r"x: \[1, 12, 16\] \(it runs exact shapes only\); its buckets:\n"
                                         r"  bucket 0: x: float32\[1, 8, 16\]\n  bucket 1: x: float32\[1, 16, 16\]\n"
                                         r"  bucket 2: x: float32\[1, 32, 16\]"):
        exe.run({"x": np.zeros((1, 12, 16), np.float32)})
