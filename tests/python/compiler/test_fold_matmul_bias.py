"""FoldMatMulBias: a constant per-column bias after a MatMul with constant weights becomes
Gemm's C (the mm epilogue adds it); outputs against ONNX Runtime in f32 and f16, and what
must not fold (a bias along another axis, a product used twice) stays as it was."""
import numpy as np
import pytest
from onnx import helper

import tilecore
from test_driver import make_model, ort_run

pytestmark = pytest.mark.npu
RNG = np.random.default_rng(7)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def mm_add(a_shape, w, b, bias_first=False, extra_use=False):
    nodes = [helper.make_node("MatMul", ["a", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["b", "m"] if bias_first else ["m", "b"], ["t"], name="add"),
             helper.make_node("Relu", ["t"], ["y"], name="relu")]
    outs = ["y"]
    if extra_use:
        nodes.append(helper.make_node("Neg", ["m"], ["z"], name="neg"))
        outs.append("z")
    return make_model(nodes, [("a", list(a_shape), np.float32)], outs, [("w", w), ("b", b)])


def op_types(exe, feeds):
    exe.run(feeds)
    return [o["op_type"] for o in exe.stats()["ops"]]


@pytest.mark.parametrize("a_shape,bias_shape,bias_first", [
    ((1, 128, 256), (192,), False),      # BERT-like: the batch folds into the rows (Reshape views)
    ((96, 200), (1, 160), True),         # 2-D A, the bias first, [1, N]
])
def test_folded_bias_matches_onnxruntime_f32(a_shape, bias_shape, bias_first):
    k, n = a_shape[-1], bias_shape[-1]
    w, b, a = randn(k, n, scale=0.1), randn(*bias_shape), randn(*a_shape)
    model = mm_add(a_shape, w, b, bias_first)
    exe = tilecore.compile(model, group=False)  # a step per node
    ops = op_types(exe, {"a": a})
    assert "Add" not in ops and "Gemm" in ops and "MatMul" not in ops
    want = ort_run(model, {"a": a})["y"]
    np.testing.assert_allclose(exe.run({"a": a})["y"], want, rtol=1e-4, atol=1e-4)


def test_folded_bias_f16_pipelined_epilogue():
    """f16 operands on the pipelined or column plan (the cost model's pick): the f32 bias is
    added by the mm epilogue to the f32 accumulator."""
    a, w, b = randn(256, 384), randn(384, 256, scale=0.1), randn(256)
    model = mm_add(a.shape, w, b)
    rep = {}
    exe = tilecore.compile(model, precision="f16", report=rep, group=False)  # a step per node
    scripts = [f.script() for f in rep["npu_funcs"].values()]
    assert any('"shared"' in s for s in scripts), "a pipelined or column plan is expected here"
    a16 = a.astype(np.float16).astype(np.float32)
    w16 = w.astype(np.float16).astype(np.float32)
    want = np.maximum(a16.astype(np.float64) @ w16 + b, 0)
    np.testing.assert_allclose(exe.run({"a": a})["y"], want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("case", ["row_bias", "product_used_twice"])
def test_not_folded(case):
    a, w = randn(64, 96), randn(96, 32, scale=0.1)
    if case == "row_bias":  # [M, 1]: broadcast along the rows, not a per-column bias
        model = mm_add(a.shape, w, randn(64, 1))
    else:
        model = mm_add(a.shape, w, randn(32), extra_use=True)
    exe = tilecore.compile(model, group=False)  # a step per node
    ops = op_types(exe, {"a": a})
    assert "Gemm" not in ops and "Add" in ops
    want = ort_run(model, {"a": a})
    got = exe.run({"a": a})
    for name, v in want.items():
        np.testing.assert_allclose(got[name], v, rtol=1e-4, atol=1e-4)
