"""Fixtures of the deployment tests: the installed runtime library and the ThreadSanitizer
build that scripts/test_deploy.sh prepares, and small models compiled by tilecore, with
their inputs as `.npy`/`.npz` files and their outputs as Python's Executable.run gives them."""
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "runtime"))


def _env_dir(name):
    value = os.environ.get(name)
    if not value or not os.path.isdir(value):
        pytest.fail(f"tests/deploy needs ${name} (scripts/test_deploy.sh builds it and runs these tests)")
    return value


@pytest.fixture(scope="session")
def prefix():
    """The runtime library's install prefix (lib/, include/, lib/pkgconfig, lib/cmake)."""
    return _env_dir("TILECORE_RUNTIME_PREFIX")


@pytest.fixture(scope="session")
def tsan_build():
    """A runtime-only build under ThreadSanitizer, with the example applications."""
    return _env_dir("TILECORE_TSAN_BUILD")


def _classifier():
    """A small image classifier (two strided Convs, global pooling, a Gemm to 100 classes,
    Softmax), seeded weights: ONNX's own builders, no framework."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    w = {"w1": rng.normal(0, 0.3, (16, 3, 3, 3)), "b1": rng.normal(0, 0.1, 16),
         "w2": rng.normal(0, 0.2, (32, 16, 3, 3)), "b2": rng.normal(0, 0.1, 32),
         "wf": rng.normal(0, 0.3, (100, 32)), "bf": rng.normal(0, 0.1, 100)}
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in w.items()]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    graph = helper.make_graph(nodes, "classifier",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 100])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _mlp():
    """A two-layer perceptron: MatMul, Add, Relu, MatMul, Add."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    w = {"w1": rng.normal(0, 0.2, (64, 128)), "b1": rng.normal(0, 0.1, 128),
         "w2": rng.normal(0, 0.2, (128, 10)), "b2": rng.normal(0, 0.1, 10)}
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in w.items()]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class Compiled:
    """A model compiled by tilecore: its files and Python's outputs for its one input."""

    def __init__(self, folder, name, exe, x, model=None):
        if model is not None:
            import onnx

            self.onnx = os.path.join(folder, name + ".onnx")
            onnx.save(model, self.onnx)
        self.tcx = os.path.join(folder, name + ".tcx")
        exe.save(self.tcx)
        self.input_name = exe.describe()["inputs"][0]["name"]
        self.x = x
        self.npy = os.path.join(folder, name + "_input.npy")
        np.save(self.npy, x)
        self.npz = os.path.join(folder, name + "_input.npz")
        np.savez(self.npz, **{self.input_name: x})
        self.outputs = exe.run({self.input_name: x})


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """name -> Compiled: `classifier` and `mlp` (f32, compiled by tilecore.compile) and
    `pipeline` (the executable tests' hand-built one: int8 in, int32 out, a host step)."""
    import exe_pipeline

    import tilecore

    folder = str(tmp_path_factory.mktemp("models"))
    rng = np.random.default_rng(3)
    out = {}
    for name, model, shape in (("classifier", _classifier(), (1, 3, 32, 32)), ("mlp", _mlp(), (4, 64))):
        exe = tilecore.compile(model.SerializeToString(), precision="f32")
        out[name] = Compiled(folder, name, exe, rng.normal(0, 1, shape).astype(np.float32), model)
    x = rng.integers(-128, 128, (exe_pipeline.M, exe_pipeline.K)).astype(np.int8)
    out["pipeline"] = Compiled(folder, "pipeline", exe_pipeline.build(), x)
    return out


def run(cmd, **kw):
    """Runs `cmd`, returning the CompletedProcess; its output is shown when a check fails."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 600), **kw)
    return p
