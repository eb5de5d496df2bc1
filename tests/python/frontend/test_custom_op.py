"""A custom graph op from an out-of-tree C++ library (examples/custom_op) and one
registered from Python, both in the domain "example", imported from ONNX and evaluated."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tilecore
import tilecore.frontend
from tilecore.ir.ops import TensorInfo, register_op

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLE = os.path.join(REPO, "examples", "custom_op")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


@pytest.fixture(scope="module")
def custom_op_library(tmp_path_factory):
    out = tmp_path_factory.mktemp("custom_op")
    if shutil.which("cmake"):
        build = out / "build"
        cmd = ["cmake", "-S", EXAMPLE, "-B", str(build), f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        subprocess.run(cmd, check=True, capture_output=True, env=_env())
        subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True, env=_env())
        lib = build / "libtilecore_custom_op.so"
    else:
        flags = subprocess.run([sys.executable, "-m", "tilecore.config", "--cxxflags", "--libs"],
                               check=True, capture_output=True, text=True, env=_env()).stdout.split()
        lib = out / "libtilecore_custom_op.so"
        subprocess.run([os.environ.get("CXX", "c++"), "-O2", "-shared", "-o", str(lib),
                        os.path.join(EXAMPLE, "src", "scaled_tanh.cc"), *flags], check=True)
    tilecore.load_library(lib)
    return lib


# The Python path: an op of the same domain, y = x * x + bias.
def _square_bias_infer(attrs, inputs):
    x = inputs[0]
    return [TensorInfo(x.shape, x.dtype)]


@register_op("SquareBias", domain="example", attrs={"bias": ("float", 0.0)}, infer=_square_bias_infer)
def _square_bias(attrs, x):
    """x * x + bias"""
    return (np.asarray(x) * np.asarray(x) + attrs["bias"]).astype(np.asarray(x).dtype)


def _model(nodes, shape=(2, "N", 4), out_shape=None, dtype=TensorProto.FLOAT):
    graph = helper.make_graph(nodes, "custom",
                              [helper.make_tensor_value_info("x", dtype, list(shape))],
                              [helper.make_tensor_value_info("y", dtype, out_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("example", 1)])


def test_cpp_op_is_registered(custom_op_library):
    op = tilecore.ir.graph.get_graph_op("ScaledTanh", "example")
    assert op is not None
    assert set(op.attrs.keys()) == {"alpha", "beta"}
    assert op.doc == "alpha * tanh(beta * x)"


def test_cpp_and_python_ops_import_and_evaluate(custom_op_library):
    nodes = [
        helper.make_node("ScaledTanh", ["x"], ["t"], name="scaled", domain="example", alpha=1.7159, beta=0.6667),
        helper.make_node("SquareBias", ["t"], ["s"], name="square", domain="example", bias=0.25),
        helper.make_node("ScaledTanh", ["s"], ["y"], name="scaled_default", domain="example"),
    ]
    graph = tilecore.frontend.from_onnx(_model(nodes), input_shapes={"x": [2, 3, 4]})
    assert tilecore.frontend.static_shape(graph.outputs[0]) == (2, 3, 4)
    assert graph.outputs[0].type.dtype == "float32"

    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    out = tilecore.frontend.evaluate(graph, {"x": x}, keep_intermediates=True)
    t = 1.7159 * np.tanh(0.6667 * x.astype(np.float64))
    s = t * t + 0.25
    y = np.tanh(s)  # alpha = beta = 1 by default
    np.testing.assert_allclose(out["t"], t, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["s"], s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-6)
    assert out["y"].dtype == np.float32


def test_cpp_op_float64(custom_op_library):
    node = helper.make_node("ScaledTanh", ["x"], ["y"], name="st", domain="example", alpha=2.0, beta=-0.5)
    graph = tilecore.frontend.from_onnx(_model([node], shape=(5,), dtype=TensorProto.DOUBLE))
    x = np.linspace(-3, 3, 5)
    y = tilecore.frontend.evaluate(graph, {"x": x})["y"]
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, 2.0 * np.tanh(-0.5 * x), rtol=1e-12)


def test_cpp_op_rejects_int_input_naming_the_op(custom_op_library):
    node = helper.make_node("ScaledTanh", ["x"], ["y"], name="st_int", domain="example")
    with pytest.raises(Exception, match="ScaledTanh.*int32"):
        tilecore.frontend.from_onnx(_model([node], shape=(3,), dtype=TensorProto.INT32))


def test_unknown_attribute_is_an_error(custom_op_library):
    node = helper.make_node("ScaledTanh", ["x"], ["y"], name="st_gamma", domain="example", gamma=1.0)
    with pytest.raises(Exception, match="gamma"):
        tilecore.frontend.from_onnx(_model([node], shape=(3,)))
