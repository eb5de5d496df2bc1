"""A node that neither an npu strategy nor a host kernel takes as it is typed runs as its
ONNX function body (compiler/expand_functions.py), though its op runs for other shapes or
attributes: MeanVarianceNormalization over axes that are not the trailing ones.
Compared with ONNX Runtime."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import tilecore

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("axes", [[0, 2, 3], [2, 3]])
def test_mean_variance_normalization_over_any_axes(axes):
    g = helper.make_graph([helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=axes)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4, 5, 6])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    x = np.random.default_rng(5).standard_normal((3, 4, 5, 6)).astype(np.float32)
    rep = {}
    got = tilecore.compile(m.SerializeToString(), report=rep).run({"x": x})["y"]
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    ops = {p["op_type"] for p in rep["placement"]}
    assert ("MeanVarianceNormalization" in ops) == (axes == [2, 3])  # the trailing axes: its own kernel
