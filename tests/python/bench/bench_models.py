"""tests/python/bench/bench_models.py — the bench tests' tiny ONNX models and helpers,
imported by the test modules under this name (a name of its own: a `from conftest import`
picks whichever folder's conftest pytest loaded last when several folders are run)."""
import os

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FAULTY_OPS = os.path.join(HERE, "faulty_ops.py")


def tiny_weights():
    return np.random.default_rng(7).standard_normal((16, 8)).astype(np.float32)


def write_tiny(path, weights=None):
    """y = Relu(x @ W): x (4, 16), W (16, 8) seeded."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(tiny_weights() if weights is None else weights, "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                          "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def write_faulty(path, op):
    """x -> test.bench::op -> y (faulty_ops.py registers Crash and Hang)."""
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], domain="test.bench")], op.lower(),
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("test.bench", 1)]),
              path)
    return path


def import_ray():
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            raise  # CI installs ray: a missing one is a broken setup, not a reason to skip
        pytest.skip("ray is not installed (pip install 'tilecore[ray]')")
    return ray
