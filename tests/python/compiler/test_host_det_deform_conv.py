"""Det (against numpy.linalg.det) and DeformConv (against ONNX Runtime) on the host."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import tilecore  # noqa: E402


def compile_and_run(node, inputs, out_shape, opset):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
                                        for k, v in inputs.items()],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    report = {}
    y = tilecore.compile(m, report=report).run(inputs)["y"]
    assert [p["where"] for p in report["placement"]] == ["host"]
    return m, y


def test_det_with_pivoting_and_singular_matrices():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 4, 4)).astype(np.float32)
    x[1, 0, 0] = 0.0  # needs a row swap
    x[2, 3] = x[2, 1] * 2  # singular
    x[3] = np.triu(x[3])
    _, y = compile_and_run(helper.make_node("Det", ["x"], ["y"]), {"x": x}, (4,), 13)
    np.testing.assert_allclose(y, np.linalg.det(x.astype(np.float64)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("with_mask", [False, True])
def test_deform_conv_matches_onnxruntime(with_mask):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 4, 6, 5)).astype(np.float32)
    w = rng.normal(size=(6, 2, 3, 2)).astype(np.float32)  # group 2
    oh, ow = 3, 4  # strides [2, 1], pads [1, 0, 1, 0], dilations [1, 1]
    offset = rng.normal(0, 1.5, size=(2, 2 * 2 * 3 * 2, oh, ow)).astype(np.float32)  # offset_group 2
    inputs = {"x": x, "w": w, "off": offset, "b": rng.normal(size=6).astype(np.float32)}
    names = ["x", "w", "off", "b"]
    if with_mask:
        inputs["mask"] = rng.random((2, 2 * 3 * 2, oh, ow)).astype(np.float32)
        names.append("mask")
    node = helper.make_node("DeformConv", names, ["y"], group=2, offset_group=2, strides=[2, 1],
                            pads=[1, 0, 1, 0], kernel_shape=[3, 2])
    m, y = compile_and_run(node, inputs, (2, 6, oh, ow), 19)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
