"""tilecore.compile: small ONNX graphs compiled, run on the simulator and compared with
ONNX Runtime; free views, memory reuse, host steps, unsupported nodes and bad inputs."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import tilecore
from tilecore import compiler
from tilecore.compiler.compare import metrics
from tilecore.compiler.driver import CompileError

ort = pytest.importorskip("onnxruntime")


def make_model(nodes, inputs, outputs, inits=(), opset=17, out_dtype=np.float32):
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT if d == np.float32 else
                                                   helper.np_dtype_to_tensor_dtype(np.dtype(d)), s)
                     for n, s, d in inputs],
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(out_dtype)), None)
         for n in outputs],
        [helper.make_tensor(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape, a.flatten()) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def excite_nodes(gate="Sigmoid"):
    """A squeeze-excite over `ar`: its global average, fc1 (w1, b1) and its Relu, fc2 (w2,
    b2), the `gate` and the channel product `m`."""
    return [helper.make_node("GlobalAveragePool", ["ar"], ["g"], name="squeeze"),
            helper.make_node("Conv", ["g", "w1", "b1"], ["f1"], name="fc1"),
            helper.make_node("Relu", ["f1"], ["f1r"], name="relu1"),
            helper.make_node("Conv", ["f1r", "w2", "b2"], ["f2"], name="fc2"),
            helper.make_node(gate, ["f2"], ["s"], name="gate"),
            helper.make_node("Mul", ["ar", "s"], ["m"], name="excite")]


def se_block(randn, gate="Sigmoid", size=14):
    """A squeeze-excite block (EfficientNet's, MobileNetV3's), its weights drawn by ``randn``
    (shape, scale=): a 3x3 Conv and its Relu, the ``gate`` of two 1x1 Convs over its global
    average times it, then a 1x1 projection to fewer channels (its 512 weights against
    32 x size^2 inputs)."""
    w0, w1, w2 = randn(32, 8, 3, 3, scale=0.3), randn(8, 32, 1, 1, scale=0.3), randn(32, 8, 1, 1, scale=0.3)
    wp = randn(16, 32, 1, 1, scale=0.2)
    b1, b2, bp = randn(8, scale=0.1), randn(32, scale=0.1), randn(16, scale=0.1)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ar"], name="relu0"),
             *excite_nodes(gate),
             helper.make_node("Conv", ["m", "wp", "bp"], ["y"], name="project")]
    inits = [("w0", w0), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("wp", wp), ("bp", bp)]
    return make_model(nodes, [("x", [1, 8, size, size], np.float32)], ["y"], inits)


def ort_run(model, feeds, names=None):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


RNG = np.random.default_rng(0)


def conv_chain():
    w = (RNG.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    m = (RNG.standard_normal((8 * 6 * 6, 10)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "c"], ["a"], name="add"),
             helper.make_node("Flatten", ["a"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "m"], ["y"], name="fc")]
    return make_model(nodes, [("x", [1, 3, 6, 6], np.float32)], ["y"], [("w", w), ("b", b), ("m", m)])


def test_conv_relu_add_matmul_chain_matches_onnxruntime():
    model = conv_chain()
    rep = {}
    exe = tilecore.compile(model, report=rep, group=False)  # a step per node
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    y = exe.run({"x": x})["y"]
    ref = ort_run(model, {"x": x})["y"]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    assert rep["npu_steps"] == 4 and rep["views"] == 1 and rep["host_steps"] == 0
    st = exe.stats()
    ops = {o["name"]: o for o in st["ops"]}
    assert list(ops) == ["conv", "relu", "add", "fc"]
    assert ops["conv"]["macs"] == 8 * 6 * 6 * 3 * 3 * 3 and ops["fc"]["macs"] == 288 * 10
    assert all(o["where"] == "npu" and o["cycles"] > 0 for o in st["ops"])
    assert st["macs"] == 8 * 36 * 27 + 2880
    # the executable survives a save/load round trip and names its I/O by the ONNX names
    again = tilecore.runtime.load_executable_bytes(exe.to_bytes())
    np.testing.assert_array_equal(again.run({"x": x})["y"], y)
    assert list(again.inputs) == ["x"] and list(again.outputs) == ["y"]


def test_reshape_is_a_free_view_aliasing_its_input():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu1"),
             helper.make_node("Reshape", ["r", "shape"], ["v"], name="reshape"),
             helper.make_node("Sigmoid", ["v"], ["y"], name="sig")]
    model = make_model(nodes, [("x", [4, 6], np.float32)], ["y"], [("shape", np.array([2, 12], np.int64))])
    exe = tilecore.compile(model, group=False)  # a step per node (a layer group holds r in L2)
    d = exe.describe()
    assert [s["op_type"] for s in d["steps"]] == ["Relu", "Sigmoid"]
    names = [b["name"] for b in d["buffers"]]
    assert "v" not in names  # no buffer, no step: the Sigmoid reads the Relu's bytes
    assert d["steps"][1]["args"][0] == d["steps"][0]["args"][1]
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_view_as_graph_output_is_copied():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["y"], name="flat", axis=1)]
    model = make_model(nodes, [("x", [2, 3, 4], np.float32)], ["y"])
    exe = tilecore.compile(model)
    assert exe.outputs["y"] == ((2, 12), "float32")
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(exe.run({"x": x})["y"], np.maximum(x, 0).reshape(2, 12))


def test_memory_reuse_shrinks_the_arena():
    # A chain of 8 element-wise ops on 64 KiB tensors: two buffers' worth are live at a time.
    names = ["x"] + [f"t{i}" for i in range(7)] + ["y"]
    ops = ["Relu", "Sigmoid", "Neg", "Abs", "Relu", "Tanh", "Neg", "Abs"]
    nodes = [helper.make_node(op, [a], [b], name=f"n{i}") for i, (op, a, b) in enumerate(zip(ops, names, names[1:]))]
    model = make_model(nodes, [("x", [128, 128], np.float32)], ["y"])
    rep = {}
    exe = tilecore.compile(model, report=rep, group=False)  # a step per node
    d = exe.describe()
    total = sum(b["size"] for b in d["buffers"])
    assert total == 9 * 128 * 128 * 4
    assert d["arena_size"] == 2 * 128 * 128 * 4 < total
    assert rep["memory"]["arena_size"] == d["arena_size"] and rep["memory"]["lower_bound"] == d["arena_size"]
    for b in d["buffers"]:
        assert b["offset"] % 64 == 0
    x = RNG.standard_normal((128, 128)).astype(np.float32)
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], rtol=1e-5, atol=1e-6)
    # keep_intermediates: every value its own bytes and an output named after it
    full = tilecore.compile(model, keep_intermediates=True)
    assert full.describe()["arena_size"] >= total
    outs = full.run({"x": x})
    assert set(outs) == set(names[1:])
    ref = ort_run(model, {"x": x})
    np.testing.assert_allclose(outs["t1"], 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-5)
    np.testing.assert_allclose(outs["y"], ref["y"], rtol=1e-5, atol=1e-6)


def test_plan_memory_through_the_ffi():
    offsets, arena, total, low = compiler.PlanMemory([100, 100, 100], [0, 1, 2], [1, 2, 3])
    assert total == 3 * 128 and low == 2 * 128 and arena == 2 * 128
    assert offsets[0] == offsets[2] != offsets[1]  # 0 and 2 never meet
    with pytest.raises(ValueError, match="first after last"):
        compiler.PlanMemory([8], [3], [2])


def test_host_step_records_its_reason():
    if tilecore.get_global_func("compiler.HasHostKernel", allow_missing=True) is None:
        pytest.skip("this build has no host kernels")
    a = compiler.TensorSpec((4, 4), "float64")
    if compiler.HasStrategy("Add", {}, [a, a]) == "" or \
            str(tilecore.get_global_func("compiler.HasHostKernel")("Add", {}, [a, a])) != "":
        pytest.skip("float64 Add is not a host op in this build")
    nodes = [helper.make_node("Add", ["x", "k"], ["y"], name="add64")]
    k = RNG.standard_normal((4, 4))
    model = make_model(nodes, [("x", [4, 4], np.float64)], ["y"], [("k", k)], out_dtype=np.float64)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert rep["host_steps"] == 1 and "64-bit" in rep["host_ops"][0]["reason"]
    step = exe.describe()["steps"][0]
    assert step["kind"] == "host" and "64-bit" in step["debug"]["host_reason"]
    x = RNG.standard_normal((4, 4))
    np.testing.assert_allclose(exe.run({"x": x})["y"], x + k)
    assert exe.stats()["ops"][0]["where"] == "host"


def test_unsupported_nodes_are_named_in_one_error():
    from tilecore.ir.ops import TensorInfo, register_op

    @register_op("DriverTestOp", domain="test.driver",
                 infer=lambda attrs, inputs: [TensorInfo(inputs[0].shape, inputs[0].dtype)])
    def driver_test_op(attrs, x):
        """x, unchanged"""
        return x

    nodes = [helper.make_node("Relu", ["x"], ["r"], name="ok"),
             helper.make_node("DriverTestOp", ["r"], ["s"], name="odd1", domain="test.driver"),
             helper.make_node("DriverTestOp", ["s"], ["y"], name="odd2", domain="test.driver")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("test.driver", 1)])
    with pytest.raises(CompileError) as e:
        tilecore.compile(model)
    msg = str(e.value)
    assert "2 node(s)" in msg and "`odd1` (test.driver::DriverTestOp)" in msg and "`odd2`" in msg
    assert "no npu strategy" in msg and "`ok`" not in msg


def test_symbolic_shape_needs_input_shapes():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [("x", ["N", 8], np.float32)], ["y"])
    with pytest.raises(CompileError, match="no static shape.*input_shapes"):
        tilecore.compile(model)
    exe = tilecore.compile(model, input_shapes={"x": (3, 8)})
    assert exe.inputs == {"x": ((3, 8), "float32")}


def test_bad_precision_is_an_error():
    with pytest.raises(CompileError, match="precision `int3`"):
        tilecore.compile(conv_chain(), precision="int3")


def test_wrong_inputs_at_run_are_named_errors():
    exe = tilecore.compile(conv_chain())
    good = np.zeros((1, 3, 6, 6), np.float32)
    with pytest.raises(ValueError, match=r"expects x: float32\[1, 3, 6, 6\]"):
        exe.run({"x": np.zeros((1, 3, 6, 5), np.float32)})
    with pytest.raises(ValueError, match="x"):
        exe.run({"x": good.astype(np.float64)})
    with pytest.raises(ValueError, match="x"):
        exe.run({"input": good})
    with pytest.raises(ValueError, match="x"):
        exe.run({})


def test_graph_input_is_accepted_as_is():
    from tilecore.frontend import from_onnx

    model = conv_chain()
    g = from_onnx(model)
    exe = tilecore.compile(g, target="npu -cores=2")
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], rtol=1e-4, atol=1e-4)


def _resnet18_runs():
    a = compiler.TensorSpec((1, 64, 112, 112), "float32")
    host = tilecore.get_global_func("compiler.HasHostKernel", allow_missing=True)
    for op, attrs in (("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
                      ("GlobalAveragePool", {})):
        if compiler.HasStrategy(op, attrs, [a]) and (host is None or str(host(op, attrs, [a]))):
            return f"{op} has neither an npu strategy nor a host kernel in this build"
    return ""


def test_zoo_resnet18_matches_onnxruntime():
    why = _resnet18_runs()
    if why:
        pytest.skip(why)
    from tilecore import zoo

    path = zoo.export("resnet18")
    exe = tilecore.compile(path)
    x = {k: v[0] for k, v in zoo.sample_inputs("resnet18", 1, seed=1).items()}
    y = exe.run(x)["logits"]
    ref = ort_run(onnx.load(path), x)["logits"]
    assert metrics(y, ref)["cosine"] >= 0.9999
    st = exe.stats()
    assert st["mac_utilisation"] > 0 and all(o["where"] == "npu" for o in st["ops"])


def test_silu_recognised_by_the_passes_runs_as_sigmoid_and_mul():
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="act/Sigmoid"),
             helper.make_node("Mul", ["x", "s"], ["y"], name="act/Mul")]
    model = make_model(nodes, [("x", [2, 50], np.float32)], ["y"])
    exe = tilecore.compile(model, group=False)  # a step per node
    steps = exe.describe()["steps"]
    if [s["op_type"] for s in steps] == ["SiLU"]:
        pytest.skip("SiLU has an npu strategy in this build")
    assert [s["op_type"] for s in steps] == ["Sigmoid", "Mul"]
    x = RNG.standard_normal((2, 50)).astype(np.float32)
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_step_names_are_unique_and_inputs_may_be_outputs():
    # Gemm becomes MatMul + Add, two steps of one ONNX node (C is [M, N], not a per-column
    # bias FoldMatMulBias would give back to a Gemm); `x` is an output as well
    w = RNG.standard_normal((4, 3)).astype(np.float32)
    b = RNG.standard_normal((2, 3)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc"),
             helper.make_node("Identity", ["x"], ["xi"], name="id")]
    model = make_model(nodes, [("x", [2, 4], np.float32)], ["y", "x", "xi"], [("w", w), ("b", b)])
    exe = tilecore.compile(model, group=False)  # a step per node
    steps = exe.describe()["steps"]
    assert [(s["node"], s["source_node"], s["op_type"]) for s in steps] == [
        ("fc", "fc", "MatMul"), ("fc#2", "fc", "Add"), ("id", "id", "Identity")]
    assert steps[0]["debug"]["outputs"] != steps[1]["debug"]["outputs"] == "y"
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    out = exe.run({"x": x})
    np.testing.assert_allclose(out["y"], x @ w + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out["x"], x)
    np.testing.assert_array_equal(out["xi"], x)
    assert exe.stats()["macs"] == 2 * 4 * 3


def test_constant_inputs_reach_the_strategies_as_attributes():
    # opset 18: Slice's starts/ends/axes, Pad's pads and value, ReduceMean's axes and
    # Resize's scales are inputs; the strategies read them from attributes
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax"], ["s"], name="slice"),
             helper.make_node("Pad", ["s", "pads", "pv"], ["p"], name="pad"),
             helper.make_node("Resize", ["p", "", "scales"], ["r"], name="up", mode="nearest"),
             helper.make_node("ReduceMean", ["r", "rax"], ["y"], name="mean", keepdims=0)]
    inits = [("st", i64(1, 0)), ("en", i64(3, 5)), ("ax", i64(1, 2)), ("pads", i64(0, 0, 1, 0, 0, 0, 1, 2)),
             ("pv", np.array(0.5, np.float32)), ("scales", np.array([1, 1, 2, 2], np.float32)), ("rax", i64(2))]
    model = make_model(nodes, [("x", [2, 4, 6, 5], np.float32)], ["y"], inits, opset=18)
    rep = {}
    exe = tilecore.compile(model, report=rep, group=False)  # a step per node
    assert rep["host_steps"] == 0 and rep["npu_steps"] == 4
    x = RNG.standard_normal((2, 4, 6, 5)).astype(np.float32)
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_ops_that_run_nowhere_are_expanded_into_their_function_bodies():
    # SoftmaxCrossEntropyLoss and Attention have neither an npu strategy nor a host kernel:
    # their ONNX function bodies (simpler ops) run instead.
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    labels = np.array([0, 4, 2], np.int64)
    sce = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "labels"], ["loss"], reduction="mean")
    g = helper.make_graph([sce], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5]),
                                       helper.make_tensor_value_info("labels", TensorProto.INT64, [3])],
                          [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    report = {}
    got = tilecore.compile(model, report=report).run({"x": x, "labels": labels})["loss"]
    want = ort_run(model, {"x": x, "labels": labels})["loss"]
    assert got.shape == () and np.allclose(got, want, rtol=1e-4, atol=1e-6)
    assert "SoftmaxCrossEntropyLoss" not in {p["op_type"] for p in report["placement"]}

    q, k, v = (RNG.standard_normal((1, 2, 4, 8)).astype(np.float32) for _ in range(3))
    att = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)
    g = helper.make_graph([att], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 2, 4, 8])
                                       for n in "qkv"],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 8])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    feeds = {"q": q, "k": k, "v": v}
    got = tilecore.compile(model).run(feeds)["y"]
    assert np.allclose(got, ort_run(model, feeds)["y"], rtol=1e-4, atol=1e-5)


def _entry_models():
    """(model, feeds): an op run as its function body, a GRU unrolled, a QOperator node."""
    q, k, v = (RNG.standard_normal((1, 2, 3, 4)).astype(np.float32) for _ in range(3))
    att = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)
    g = helper.make_graph([att], "att", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 2, 3, 4])
                                         for n in "qkv"], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    yield helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]), {"q": q, "k": k, "v": v}
    w, r = RNG.standard_normal((1, 6, 3)).astype(np.float32), RNG.standard_normal((1, 6, 2)).astype(np.float32)
    gru = helper.make_node("GRU", ["x", "w", "r"], ["y"], hidden_size=2)
    yield (make_model([gru], [("x", [3, 1, 3], np.float32)], ["y"], inits=[("w", w), ("r", r)], opset=14),
           {"x": RNG.standard_normal((3, 1, 3)).astype(np.float32)})
    b = RNG.integers(0, 255, (4, 3)).astype(np.uint8)
    scales = [("a_s", np.array(0.05, np.float32)), ("a_z", np.array(120, np.uint8)), ("b", b),
              ("b_s", np.array(0.02, np.float32)), ("b_z", np.array(128, np.uint8)),
              ("y_s", np.array(0.5, np.float32)), ("y_z", np.array(100, np.uint8))]
    qmm = helper.make_node("QLinearMatMul", ["a", "a_s", "a_z", "b", "b_s", "b_z", "y_s", "y_z"], ["y"])
    yield (make_model([qmm], [("a", [2, 4], np.uint8)], ["y"], inits=scales, opset=13, out_dtype=np.uint8),
           {"a": RNG.integers(0, 255, (2, 4)).astype(np.uint8)})


def test_every_entry_point_runs_the_same_pipeline(tmp_path):
    # a Graph (frontend.from_onnx), a path, bytes and a ModelProto: function bodies, recurrent
    # unrolling and QOperator nodes are expanded on the Graph, whatever came in
    from tilecore import frontend

    for i, (model, feeds) in enumerate(_entry_models()):
        want = ort_run(model, feeds)["y"]
        path = tmp_path / f"m{i}.onnx"
        onnx.save(model, path)
        entries = [frontend.from_onnx(model), model.SerializeToString()] + ([path, model] if i == 0 else [])
        for m in entries:
            got = tilecore.compile(m).run(feeds)["y"]
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-4, atol=1.001,
                                       err_msg=f"{type(m).__name__} of {model.graph.name}")
            if got.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_graph_built_by_hand_compiles_with_the_graph_opsets():
    # no `_opset` on the nodes: Hardmax at opset 11 works on x flattened to 2-D at axis 1
    from tilecore.ir.graph import GraphBuilder

    b = GraphBuilder(opsets={"": 11})
    x = b.input("x", (2, 3, 4))
    b.output(*b.add("Hardmax", [x], {"axis": 1}))
    xs = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    got = tilecore.compile(b.build()).run({"x": xs})
    flat = xs.reshape(2, 12)
    want = (np.arange(12) == flat.argmax(1)[:, None]).astype(np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(next(iter(got.values())), want)


def test_scalar_inputs_and_constant_scalar_outputs_keep_their_rank():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    lo, hi = np.array(-0.5, np.float32), np.array(0.25, np.float32)
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"]), helper.make_node("Size", ["x"], ["n"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                       helper.make_tensor_value_info("lo", TensorProto.FLOAT, []),
                                       helper.make_tensor_value_info("hi", TensorProto.FLOAT, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    got = tilecore.compile(model).run({"x": x, "lo": lo, "hi": hi})
    assert np.array_equal(got["y"], np.clip(x, lo, hi))
    assert got["n"].shape == () and int(got["n"]) == x.size


def test_cumsum_axis_input_is_read_when_compiling():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], reverse=1)
    model = make_model([node], [("x", [3, 4], np.float32)], ["y"], inits=[("axis", np.array(1, np.int64))],
                       opset=14)
    got = tilecore.compile(model).run({"x": x})["y"]
    assert np.allclose(got, np.flip(np.cumsum(np.flip(x, 1), 1), 1), rtol=1e-5, atol=1e-6)


def test_values_computed_from_shapes_fold_before_partition():
    # Slice's starts come from Shape(x)[2] - 2: known only after shape folding, yet a
    # compile-time value of the host/npu Slice.
    x = RNG.standard_normal((2, 3, 7)).astype(np.float32)
    nodes = [helper.make_node("Shape", ["x"], ["len"], start=2, end=3),
             helper.make_node("Sub", ["len", "two"], ["start"]),
             helper.make_node("Slice", ["x", "start", "len", "axes"], ["y"])]
    model = make_model(nodes, [("x", [2, 3, 7], np.float32)], ["y"],
                       inits=[("two", np.array([2], np.int64)), ("axes", np.array([2], np.int64))], opset=17)
    got = tilecore.compile(model).run({"x": x})["y"]
    assert np.array_equal(got, x[:, :, 5:])


def test_a_required_output_left_empty_is_refused_at_import():
    # TopK's values are not optional in its ONNX schema (ONNX Runtime: "output 0 is marked
    # single but has an empty string"); an optional output left empty is test_an_lstm_... below
    k = np.array([2], np.int64)
    node = helper.make_node("TopK", ["x", "k"], ["", "i"], axis=1)
    model = make_model([node], [("x", [3, 6], np.float32)], ["i"], inits=[("k", k)], opset=14, out_dtype=np.int64)
    with pytest.raises(ValueError, match=r"\(TopK, opset 14\): output 0 \(Values\) is required and left empty"):
        tilecore.compile(model)


def test_an_lstm_with_its_first_output_omitted_is_unrolled():
    w = RNG.standard_normal((1, 8, 3)).astype(np.float32)
    r = RNG.standard_normal((1, 8, 2)).astype(np.float32)
    node = helper.make_node("LSTM", ["x", "w", "r"], ["", "y_h"], hidden_size=2)
    model = make_model([node], [("x", [4, 1, 3], np.float32)], ["y_h"], inits=[("w", w), ("r", r)], opset=14)
    x = RNG.standard_normal((4, 1, 3)).astype(np.float32)
    got = tilecore.compile(model).run({"x": x})["y_h"]
    np.testing.assert_allclose(got, ort_run(model, {"x": x})["y_h"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trigonometric_ops_run_on_the_npu_in_float32_and_on_the_host_in_float64(dtype):
    fns = {"Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan,
           "Sinh": np.sinh, "Cosh": np.cosh, "Asinh": np.arcsinh, "Acosh": np.arccosh, "Atanh": np.arctanh}
    x = RNG.uniform(-0.9, 0.9, (3, 4)).astype(dtype)
    x1 = (1.5 + np.abs(x)).astype(dtype)  # Acosh's domain
    nodes = [helper.make_node(op, ["x1" if op == "Acosh" else "x"], [op.lower()]) for op in fns]
    model = make_model(nodes, [("x", [3, 4], dtype), ("x1", [3, 4], dtype)], [op.lower() for op in fns],
                       opset=13, out_dtype=dtype)
    report = {}
    got = tilecore.compile(model, report=report).run({"x": x, "x1": x1})
    for op, f in fns.items():
        want = f(x1 if op == "Acosh" else x)
        assert got[op.lower()].dtype == dtype
        assert np.allclose(got[op.lower()], want, rtol=1e-6, atol=1e-6), op
    where = "npu" if dtype == np.float32 else "host"
    assert {p["op_type"]: p["where"] for p in report["placement"]} == {op: where for op in fns}


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumprod(exclusive, reverse):
    x = RNG.uniform(0.5, 1.5, (2, 5, 3)).astype(np.float32)
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    model = make_model([node], [("x", [2, 5, 3], np.float32)], ["y"], inits=[("axis", np.array(1, np.int64))],
                       opset=26)
    got = tilecore.compile(model).run({"x": x})["y"]
    v = np.flip(x, 1) if reverse else x
    want = np.cumprod(v, 1)
    if exclusive:
        want = np.concatenate([np.ones_like(want[:, :1]), want[:, :-1]], 1)
    want = np.flip(want, 1) if reverse else want
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6)


def test_bfloat16_inputs_and_outputs_cross_the_run_boundary():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    nodes = [helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16),
             helper.make_node("Cast", ["b"], ["y"], to=TensorProto.FLOAT)]
    model = make_model(nodes, [("x", [3, 4], np.float32)], ["b", "y"], opset=13)
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.BFLOAT16
    got = tilecore.compile(model).run({"x": x})
    want = x.astype(ml_dtypes.bfloat16)
    assert got["b"].dtype == ml_dtypes.bfloat16 and np.array_equal(got["b"].view(np.uint16), want.view(np.uint16))
    assert np.array_equal(got["y"], want.astype(np.float32))
    from tilecore import nd
    assert np.array_equal(nd.array(want).numpy().view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("equation,shapes,dtype", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], np.float32),
    ("...ii->...i", [(2, 3, 3)], np.float32),
    ("ij->", [(3, 4)], np.float64),
    ("i,i", [(5,), (5,)], np.int32),
    ("ij,jk", [(2, 3), (3, 2)], np.float32),
    ("...j,j->...", [(2, 1, 3), (3,)], np.float32),
])
def test_einsum_runs_on_the_host(equation, shapes, dtype):
    xs = [(RNG.standard_normal(s) * 3).astype(dtype) for s in shapes]
    want = np.einsum(equation, *xs)
    names = [f"x{i}" for i in range(len(xs))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    model = make_model([node], [(n, list(s), dtype) for n, s in zip(names, shapes)], ["y"], opset=12,
                       out_dtype=dtype)
    got = tilecore.compile(model).run(dict(zip(names, xs)))["y"]
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)


def test_einsum_with_a_bad_equation_is_a_named_error():
    node = helper.make_node("Einsum", ["x"], ["y"], equation="ijk->i")
    model = make_model([node], [("x", [2, 3], np.float32)], ["y"], opset=12)
    with pytest.raises((CompileError, ValueError), match="Einsum"):
        tilecore.compile(model)


@pytest.mark.parametrize("mode,padding,align", [("linear", "zeros", 0), ("nearest", "border", 1),
                                                ("cubic", "zeros", 0), ("linear", "border", 0)])
def test_grid_sample_runs_on_the_host(mode, padding, align):
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    grid = RNG.uniform(-1.3, 1.3, (1, 2, 3, 2)).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding, align_corners=align)
    model = make_model([node], [("x", [1, 2, 3, 4], np.float32), ("grid", [1, 2, 3, 2], np.float32)], ["y"], opset=20)
    got = tilecore.compile(model).run({"x": x, "grid": grid})["y"]
    want = ort_run(model, {"x": x, "grid": grid})["y"]
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)


def test_shapes_computed_block_after_block_are_static():
    """Each block pads its input to a multiple of 4 rows, the pads computed from the Shape
    of the block before (as a Swin Transformer pads to its window): one more link becomes
    constant per round of folding and type inference, so eight blocks need eight rounds;
    the compiled model is ONNX Runtime's."""
    nodes, x = [], "x"
    inits = [("zero", np.array([0], np.int64)), ("one", np.array([1], np.int64)),
             ("four", np.array(4, np.int64)), ("three", np.array(3, np.int64))]
    for k in range(8):
        nodes += [helper.make_node("Shape", [x], [f"s{k}"]),
                  helper.make_node("Gather", [f"s{k}", "zero"], [f"n{k}"], axis=0),
                  helper.make_node("Add", [f"n{k}", "three"], [f"m{k}"]),
                  helper.make_node("Div", [f"m{k}", "four"], [f"q{k}"]),
                  helper.make_node("Mul", [f"q{k}", "four"], [f"w{k}"]),
                  helper.make_node("Sub", [f"w{k}", f"n{k}"], [f"e{k}"]),
                  helper.make_node("Cast", [f"e{k}"], [f"c{k}"], to=TensorProto.INT64),
                  helper.make_node("Concat", ["zero", "zero", f"c{k}", "zero"], [f"pads{k}"], axis=0),
                  helper.make_node("Pad", [x, f"pads{k}"], [f"p{k}"]),
                  helper.make_node("Relu" if k % 2 else "Sigmoid", [f"p{k}"], [f"a{k}"]),
                  helper.make_node("Slice", [f"a{k}", "one", f"m{k}", "zero"], [f"x{k}"])]
        x = f"x{k}"
    model = make_model(nodes, [("x", [6, 4], np.float32)], [x], inits)
    feeds = {"x": RNG.standard_normal((6, 4)).astype(np.float32)}
    y = tilecore.compile(model).run(feeds)[x]
    np.testing.assert_allclose(y, ort_run(model, feeds)[x], rtol=1e-5, atol=1e-6)


def test_nan_mask_of_attention_is_one_pass_and_matches_onnxruntime():
    # Where(IsNaN(Softmax(s)), 0, Softmax(s)), as dynamo exports attention: rows masked whole
    # are NaN after the Softmax and become 0. The graph pass makes it one tilecore::ReplaceNaN
    # step (no bool tensor); the outputs are ONNX Runtime's.
    zero = np.zeros((), np.float32)
    nodes = [helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("IsNaN", ["p"], ["nan"], name="isnan"),
             helper.make_node("Where", ["nan", "zero", "p"], ["y"], name="where")]
    model = make_model(nodes, [("s", [2, 4, 16, 16], np.float32)], ["y"], [("zero", zero)])
    s = RNG.standard_normal((2, 4, 16, 16)).astype(np.float32)
    s[0, 1, 3, :] = -np.inf  # a row masked whole: NaN after the Softmax
    s[1, 2, :, 5] = -np.inf  # a masked column: an ordinary row
    s[1, 3, 7, 2] = np.nan
    want = ort_run(model, {"s": s})["y"]
    assert np.isnan(want).sum() == 0 and np.all(want[0, 1, 3] == 0)
    exe = tilecore.compile(model.SerializeToString())
    got = exe.run({"s": s})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.all(got[0, 1, 3] == 0) and np.all(got[1, 3, 7] == 0)
    exe.run({"s": s})
    ops = [m["op_type"] for op in exe.stats()["ops"] for m in (op.get("members") or [op])]
    assert "ReplaceNaN" in ops and "IsNaN" not in ops and "Where" not in ops, ops
