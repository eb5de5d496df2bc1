"""Col2Im, LRN and ReverseSequence on the host, against ONNX Runtime (Col2Im, LRN) and
numpy (ReverseSequence)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tilecore  # noqa: E402


def both(node, inputs, inits, out_shape, opset=18):
    ttype = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(k, ttype[v.dtype], list(v.shape))
                                        for k, v in inputs.items()],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    report = {}
    got = tilecore.compile(m, report=report).run(inputs)["y"]
    assert [p["where"] for p in report["placement"]] == ["host"]
    return got, want


@pytest.mark.parametrize("block,img,attrs", [((2, 3), (6, 7), {"strides": [2, 1], "pads": [1, 0, 1, 2]}),
                                             ((3, 2), (7, 8), {"dilations": [2, 3]})])
def test_col2im(block, img, attrs):
    rng = np.random.default_rng(0)
    C = 2
    S = len(img)
    st, dl = attrs.get("strides", [1] * S), attrs.get("dilations", [1] * S)
    pd = attrs.get("pads", [0] * 2 * S)
    L = int(np.prod([(img[d] + pd[d] + pd[d + S] - (dl[d] * (block[d] - 1) + 1)) // st[d] + 1 for d in range(S)]))
    x = rng.normal(size=(2, C * int(np.prod(block)), L)).astype(np.float32)
    node = helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], **attrs)
    got, want = both(node, {"x": x}, {"img": np.array(img, np.int64), "blk": np.array(block, np.int64)},
                     (2, C) + img)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size", [3, 5])  # (ONNX Runtime takes odd sizes only)
def test_lrn(size):
    x = np.random.default_rng(1).normal(size=(2, 6, 3, 3)).astype(np.float32)
    node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=0.3, beta=0.6, bias=1.5)
    got, want = both(node, {"x": x}, {}, x.shape, opset=13)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_reverse_sequence():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    lens = np.array([1, 4, 0, 2, 3], np.int64)  # batch along axis 1
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], time_axis=0, batch_axis=1)
    g = helper.make_graph([node], "rs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5]),
                                         helper.make_tensor_value_info("lens", TensorProto.INT64, [5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])])
    exe = tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    got = exe.run({"x": x, "lens": lens})["y"]
    want = x.copy()
    for b, n in enumerate(lens):
        want[:n, b] = x[:n, b][::-1]
    np.testing.assert_array_equal(got, want)
    # a length beyond the time axis is an error in ONNX (ONNX Runtime raises), not clamped
    with pytest.raises(ValueError, match="sequence_lens element 3 is 5 when the model runs"):
        exe.run({"x": x, "lens": np.array([1, 4, 0, 5, 3], np.int64)})
