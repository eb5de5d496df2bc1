"""Custom kernels (compiler/custom_kernel.py, docs/compiler.md "Custom kernels"): a DSL
kernel registered as the npu implementation of a custom-domain op (the runnable example
examples/custom_kernel/square_plus.py) and of a built-in op for some shapes only, compiled
inside models and checked against ONNX Runtime on the same model with the op written in
standard ONNX; kernels with the wrong signature, factories that fail and calls the kernel
declines, each refused with a named error."""
import importlib.util
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tilecore import compiler
from tilecore import script as S
from tilecore.compiler.driver import CompileError
from tilecore.compiler.verify import cosine

ort = pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.npu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def load_example():
    spec = importlib.util.spec_from_file_location(
        "square_plus_example", os.path.join(REPO, "examples", "custom_kernel", "square_plus.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EXAMPLE = load_example()  # (registers example::SquarePlus and its kernel, once)


def standard_form(model, bias):
    """The model with SquarePlus written as Mul + Add: what ONNX Runtime runs."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    nodes = []
    for nd in m.graph.node:
        if nd.op_type == "SquarePlus":
            x, y = nd.input[0], nd.output[0]
            nodes += [helper.make_node("Mul", [x, x], [y + "_sq"]),
                      helper.make_node("Add", [y + "_sq", "plus_bias"], [y])]
        else:
            nodes.append(nd)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    m.graph.initializer.append(onnx.numpy_helper.from_array(np.array(bias, np.float32), "plus_bias"))
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("", 17))
    return m


def ort_run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def images(seed, n=1):
    return np.random.default_rng(seed).standard_normal((n, 3, 16, 16)).astype(np.float32)


def test_the_example_runs_its_kernel_between_two_convs_and_matches_onnxruntime():
    model = EXAMPLE.model(bias=0.25)
    report = {}
    exe = compiler.compile(model.SerializeToString(), report=report, verify=True)
    assert report["custom_kernels"] == ["square_plus"]
    # every step's values against the numpy reference evaluator (the custom op's register_op)
    assert report["verify"]["checks"] == {"hazards": "pass", "optimisations": "pass", "reference": "pass"}
    assert all("square_plus" not in g["nodes"] for g in report["groups"])  # a step of its own
    step = next(s for s in exe.describe()["steps"] if s["node"] == "square_plus")
    assert step["kind"] == "npu" and step["function"] == "example__squareplus"
    x = images(3)
    want = ort_run(standard_form(model, 0.25), {"x": x})
    got = exe.run({"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_int8_around_the_custom_op_and_verify_pass():
    model = EXAMPLE.model(bias=-0.5)
    samples = {"x": np.stack([images(s) for s in range(8)])}
    report = {}
    exe = compiler.compile(model.SerializeToString(), precision="int8", calib_samples=samples, report=report,
                           verify=True)
    assert report["custom_kernels"] == ["square_plus"]
    assert report["verify"]["checks"] == {"hazards": "pass", "optimisations": "pass", "reference": "reported"}
    x = images(42)
    want = ort_run(standard_form(model, -0.5), {"x": x})
    assert cosine(exe.run({"x": x})["y"], want) >= 0.99


def relu_model():
    """Relu on a [4, 24] input and on a [1, 3, 5, 7] input, each added to itself."""
    g = helper.make_graph(
        [helper.make_node("Relu", ["a"], ["ra"], name="relu_2d"),
         helper.make_node("Add", ["ra", "ra"], ["ya"], name="add_2d"),
         helper.make_node("Relu", ["b"], ["rb"], name="relu_4d"),
         helper.make_node("Add", ["rb", "rb"], ["yb"], name="add_4d")], "relus",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 24]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3, 5, 7])],
        [helper.make_tensor_value_info("ya", TensorProto.FLOAT, [4, 24]),
         helper.make_tensor_value_info("yb", TensorProto.FLOAT, [1, 3, 5, 7])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_builtin_op_overridden_for_some_shapes_only():
    made = []

    def rank_two(attrs, inputs):
        return "" if len(inputs[0].shape) == 2 else "rank 2 only"

    @compiler.register_kernel("Relu", supports=rank_two)
    def relu_rows(attrs, inputs, outputs, cores):
        rows, cols = inputs[0].shape
        made.append(inputs[0].shape)
        assert cols % 8 == 0

        @S.prim_func(num_cores=1)
        def relu_npu(x: S.ptr("float32", "global"), y: S.ptr("float32", "global")):
            for i in range(0, rows * cols, 8):
                S.vstore(S.vmax(S.vload(x + i), 0.0), y + i)

        return relu_npu

    model = relu_model()
    rng = np.random.default_rng(5)
    feeds = {"a": rng.standard_normal((4, 24)).astype(np.float32),
             "b": rng.standard_normal((1, 3, 5, 7)).astype(np.float32)}
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip(["ya", "yb"], sess.run(None, feeds)))
    try:
        report = {}
        out = compiler.compile(model.SerializeToString(), report=report).run(feeds)
        assert report["custom_kernels"] == ["relu_2d"] and made == [(4, 24)]
        for k in want:
            np.testing.assert_array_equal(out[k], want[k])
    finally:
        assert compiler.remove_kernel("Relu")
    report = {}
    out = compiler.compile(model.SerializeToString(), report=report).run(feeds)  # the built-in again
    assert report["custom_kernels"] == [] and made == [(4, 24)]
    np.testing.assert_array_equal(out["ya"], want["ya"])
    assert not compiler.remove_kernel("Relu")


def one_op_model(op, domain, dtype=TensorProto.FLOAT, shape=(2, 8)):
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="custom", domain=domain)], "one",
                          [helper.make_tensor_value_info("x", dtype, list(shape))],
                          [helper.make_tensor_value_info("y", dtype, list(shape))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])


def with_kernel(factory, supports=None):
    """Registers ``factory`` for example::SquarePlus for one compile, then the example's again."""
    compiler.register_kernel("SquarePlus", "example", supports=supports)(factory)


@pytest.fixture
def restore_example():
    yield
    compiler.register_kernel("SquarePlus", "example", supports=EXAMPLE.takes)(EXAMPLE.square_plus_kernel)


@pytest.mark.parametrize("case, message", [
    ("scalar", "param 1 (output 0) is a scalar; it must be a pointer"),
    ("dtype", "param 0 (input 0) points to int32; the input 0 is float32"),
    ("count", "it takes 1 params; the op has 1 data input(s) and 1 output(s)"),
    ("not a kernel", "returned int, not a DSL kernel"),
    ("parse error", "test_custom_kernel.py:"),
])
def test_a_kernel_that_does_not_fit_the_op_is_a_named_error(restore_example, case, message):
    def factory(attrs, inputs, outputs, cores):
        if case == "scalar":
            @S.prim_func(num_cores=1)
            def k(x: S.ptr("float32", "global"), n: S.int32):
                S.vstore(S.vload(x), x)
        elif case == "dtype":
            @S.prim_func(num_cores=1)
            def k(x: S.ptr("int32", "global"), y: S.ptr("float32", "global")):
                S.vstore(S.cast(S.vload(x), "float32"), y)
        elif case == "count":
            @S.prim_func(num_cores=1)
            def k(x: S.ptr("float32", "global")):
                S.vstore(S.vload(x), x)
        elif case == "not a kernel":
            return 3
        else:
            @S.prim_func(num_cores=1)
            def k(x: S.ptr("float32", "global"), y: S.ptr("float32", "global")):
                S.no_such_function(x)  # (the error names this line)
        return k

    with_kernel(factory)
    with pytest.raises(CompileError) as e:
        compiler.compile(one_op_model("SquarePlus", "example").SerializeToString())
    assert "node `custom` (example::SquarePlus)" in str(e.value) and message in str(e.value), str(e.value)


def test_a_call_the_kernel_declines_is_named_when_nothing_else_runs_it():
    with pytest.raises(CompileError) as e:  # the example's kernel is float32 only; no host kernel
        compiler.compile(one_op_model("SquarePlus", "example", TensorProto.INT32).SerializeToString())
    assert "the kernel is float32 only, not int32" in str(e.value)


def test_a_check_that_raises_is_the_reason(restore_example):
    def supports(attrs, inputs):
        raise RuntimeError("shape table missing")

    with_kernel(EXAMPLE.square_plus_kernel, supports)
    why = compiler.HasStrategy("example::SquarePlus", {"bias": 0.0}, [compiler.TensorSpec((2, 8), "float32")])
    assert "raised" in why and "shape table missing" in why


def test_a_fusion_attribute_is_declined():
    # the kernel computes the node as the model has it: an epilogue the compiler would add is refused
    spec = compiler.TensorSpec((2, 8), "float32")
    assert compiler.HasStrategy("example::SquarePlus", {"bias": 0.0}, [spec]) == ""
    why = compiler.HasStrategy("example::SquarePlus", {"bias": 0.0, "tc_activation": "Relu"}, [spec])
    assert "tc_activation" in why


def test_register_needs_the_graph_op_first():
    with pytest.raises(ValueError, match="no graph op 'NoSuchOp' in domain 'example'"):
        compiler.register_kernel("NoSuchOp", "example")


def test_a_call_with_64_bit_tensors_stays_with_the_builtin():
    # the built-in Gather reads int64 indices as int32 words; a DSL kernel takes no 64-bit
    # tensors, so the override declines the call whatever its supports() says
    made = []

    @compiler.register_kernel("Gather")
    def gather_any(attrs, inputs, outputs, cores):
        made.append(inputs)
        raise AssertionError("not called for int64 indices")

    g = helper.make_graph([helper.make_node("Gather", ["t", "i"], ["y"], name="gather", axis=0)], "gather",
                          [helper.make_tensor_value_info("t", TensorProto.FLOAT, [6, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])],
                          [onnx.numpy_helper.from_array(np.array([4, 0, 5], np.int64), "i")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    t = np.random.default_rng(9).standard_normal((6, 8)).astype(np.float32)
    try:
        report = {}
        y = compiler.compile(model.SerializeToString(), report=report).run({"t": t})["y"]
    finally:
        compiler.remove_kernel("Gather")
    assert report["custom_kernels"] == [] and made == []
    np.testing.assert_array_equal(y, ort_run(model, {"t": t}))
