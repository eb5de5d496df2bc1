"""A LayerNormalization reading a Conv's int8 output (docs/precision.md, "int8 between ops"):
ConvNeXt's depthwise Conv -> Transpose -> LayerNorm stores the Conv's result in int8, the
Transpose moves int8 and the LayerNorm normalises the codes (shift- and scale-invariant:
epsilon / scale^2). The strategy near numpy's LayerNorm of the dequantised values, its reasons,
and a ConvNeXt block near ONNX Runtime in fewer bytes."""
import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import compiler

from strategy_util import run_lowered
from test_driver import make_model, ort_run


def layernorm_ref(x, gamma, beta, eps):
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps) * gamma + beta


@pytest.mark.parametrize("rows,width,scale,zp", [(3136, 96, 0.05, -7), (196, 384, 0.0123, 0), (64, 768, 0.3, 20)])
def test_layernorm_of_int8_codes_is_the_layernorm_of_their_values(rows, width, scale, zp, hazard_checked):
    rng = np.random.default_rng(width)
    q = rng.integers(-128, 128, (1, rows, width)).astype(np.int8)
    gamma = rng.uniform(0.5, 1.5, width).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, width).astype(np.float32)
    attrs = {"axis": -1, "epsilon": 1e-6, "tc_x_scale": scale, "tc_x_zero_point": zp}
    y = run_lowered("LayerNormalization", attrs, [q, gamma, beta], [np.zeros(q.shape, np.float32)])[0]
    values = (q.astype(np.float64) - zp) * scale
    np.testing.assert_allclose(y, layernorm_ref(values, gamma, beta, 1e-6), rtol=1e-4, atol=1e-4)
    assert hazard_checked() == []


def test_layernorm_int8_input_reasons():
    i8 = compiler.TensorSpec((1, 64, 96), "int8")
    f32 = compiler.TensorSpec((1, 64, 96), "float32")
    p = compiler.TensorSpec((96,), "float32")
    base = {"axis": -1, "tc_x_scale": 0.05, "tc_x_zero_point": 3}
    assert compiler.HasStrategy("LayerNormalization", base, [i8, p, p]) == ""
    pairs = "LayerNormalization: an int8 input goes with tc_x_scale (its code), another without"
    assert compiler.HasStrategy("LayerNormalization", {"axis": -1}, [i8, p, p]) == pairs
    assert compiler.HasStrategy("LayerNormalization", base, [f32, p, p]) == pairs
    assert "without tc_skip" in compiler.HasStrategy("LayerNormalization", {**base, "tc_skip": 1}, [i8, p, p, i8])
    assert "is a LayerNormalization's" in compiler.HasStrategy("RMSNormalization", base, [i8, p])
    few = compiler.TensorSpec((1, 8, 96), "int8")
    assert "rows or more" in compiler.HasStrategy("LayerNormalization", base, [few, p, p])
    assert "beyond float32" in compiler.HasStrategy("LayerNormalization", {**base, "tc_x_scale": 1e-30}, [i8, p, p])


def convnext_block(c=32, hw=14):
    """ConvNeXt's block without its residual: a 7x7 depthwise Conv, NCHW -> NHWC, LayerNorm
    over the channels, a Linear to 4c, GELU, a Linear back, NHWC -> NCHW."""
    rng = np.random.default_rng(5)
    w = lambda *s, scale=0.2: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "dw", "dwb"], ["d"], name="dwconv", group=c, pads=[3] * 4),
             helper.make_node("Transpose", ["d"], ["dt"], name="to_nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("LayerNormalization", ["dt", "g", "b"], ["n"], name="norm", axis=-1, epsilon=1e-6),
             helper.make_node("MatMul", ["n", "w1"], ["h"], name="pw1"),
             helper.make_node("Gelu", ["h"], ["ha"], name="gelu", domain=""),
             helper.make_node("MatMul", ["ha", "w2"], ["o"], name="pw2"),
             helper.make_node("Transpose", ["o"], ["y"], name="to_nchw", perm=[0, 3, 1, 2])]
    inits = [("dw", w(c, 1, 7, 7)), ("dwb", w(c)), ("g", 1 + w(c, scale=0.1)), ("b", w(c, scale=0.1)),
             ("w1", w(c, 4 * c)), ("w2", w(4 * c, c, scale=0.1))]
    return make_model(nodes, [("x", [1, c, hw, hw], np.float32)], ["y"], inits, opset=20)


def test_convnext_block_normalises_the_conv_codes(monkeypatch):
    """int8: the depthwise Conv stores its result in int8 (its own calibrated range), the
    Transpose moves int8, the LayerNorm reads the codes; every step agrees with the model
    compiled a node a step (verify), the output is near ONNX Runtime's, and the block reads
    fewer bytes than with the LayerNorm's input in f32."""
    from tilecore.compiler import int8_edges

    model = convnext_block()
    rng = np.random.default_rng(9)
    samples = {"x": rng.standard_normal((8, 1, 32, 14, 14)).astype(np.float32)}
    x = rng.standard_normal((1, 32, 14, 14)).astype(np.float32)
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, verify={"x": x}, report=rep)
    assert {"d", "dt"} <= set(rep["int8_edges"]), rep["int8_edges"]
    assert rep["verify"]["checks"] == {"hazards": "pass", "optimisations": "pass", "reference": "reported"}
    got, ref = exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"]
    assert float((got * ref).sum() / np.linalg.norm(got) / np.linalg.norm(ref)) > 0.995
    moved = exe.stats()["bytes"]
    monkeypatch.setattr(int8_edges, "DEQUANTISING_OPS",
                        tuple(op for op in int8_edges.DEQUANTISING_OPS if op != "LayerNormalization"))
    rep_f32 = {}
    wide = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep_f32)
    assert "dt" not in rep_f32["int8_edges"]
    wide.run({"x": x})
    wide_moved = wide.stats()["bytes"]
    assert sum(moved[k] for k in ("ddr_read", "l2_read")) < sum(wide_moved[k] for k in ("ddr_read", "l2_read"))
