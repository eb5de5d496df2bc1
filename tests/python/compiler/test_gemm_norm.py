"""A LayerNormalization in its int8 Gemm's epilogue (docs/compiler.md, "Gemm and norm"): the
fused Gemm gives the bits of the two ops apart, in a layer group and alone, with every L1/L2
access ordered (the simulator's hazard mode), and matches ONNX Runtime; the driver fuses only
where the cost model finds it faster and the plan only where the weights every core reads
stay under the intermediate it saves; bad forms are named."""
import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import compiler
from tilecore.compiler import gemm_norm

from test_driver import make_model, ort_run
from test_member_handoff import ordered

RNG = np.random.default_rng(71)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def dense_dense_norm(rows=128, d=256, k=256, reader=True):
    """x [rows, d] -> dense1 (to k) -> dense2 (back to d) -> + x -> LayerNormalization -> y,
    and (``reader``) y -> dense3 -> z: dense1's output is int8 (only dense2 reads it), so
    dense2 takes the norm; dense3 reads y in int8, so the norm writes that copy too."""
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="dense1"),
             helper.make_node("Add", ["m1", "b1"], ["h"], name="bias1"),
             helper.make_node("MatMul", ["h", "w2"], ["m2"], name="dense2"),
             helper.make_node("Add", ["m2", "b2"], ["o"], name="bias2"),
             helper.make_node("Add", ["o", "x"], ["r"], name="residual"),
             helper.make_node("LayerNormalization", ["r", "g", "beta"], ["y"], name="norm", axis=-1,
                              epsilon=1e-5)]
    inits = [("w1", randn(d, k, scale=0.06)), ("b1", randn(k, scale=0.1)), ("w2", randn(k, d, scale=0.06)),
             ("b2", randn(d, scale=0.1)), ("g", 1 + randn(d, scale=0.1)), ("beta", randn(d, scale=0.1))]
    outputs = ["y"]
    if reader:
        nodes.append(helper.make_node("MatMul", ["y", "w3"], ["z"], name="dense3"))
        inits.append(("w3", randn(d, d, scale=0.06)))
        outputs.append("z")
    return make_model(nodes, [("x", [rows, d], np.float32)], outputs, inits)


CALIB = {"x": randn(4, 128, 256)}


def compile_both(model, monkeypatch, **kw):
    """(fused executable, its report, the executable with the two ops apart)."""
    calib = CALIB
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=calib, report=rep, **kw)
    monkeypatch.setattr(gemm_norm, "fuse", lambda *a, **k: [])
    apart = tilecore.compile(model, precision="int8", calib_samples=calib, **kw)
    monkeypatch.undo()
    return exe, rep, apart


@pytest.mark.parametrize("group", [True, False])
def test_norm_in_gemm_keeps_the_bits(group, monkeypatch, hazard_checked):
    model = dense_dense_norm()
    exe, rep, apart = compile_both(model, monkeypatch, group=group)
    assert any(e["node"] == "dense2" and "norm" in e["fused"] for e in rep["fused"]), rep["fused"]
    x = randn(128, 256)
    got = exe.run({"x": x})
    assert ordered(hazard_checked()) == []
    want = apart.run({"x": x})
    for name in ("y", "z"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    ref = ort_run(model, {"x": x})
    for name in ("y", "z"):
        a, b = got[name].ravel(), ref[name].ravel()
        assert float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) > 0.999, name


@pytest.mark.parametrize("norm", ["LayerNormalization", "RMSNormalization"])
def test_norm_without_residual_or_bias(norm, monkeypatch, hazard_checked):
    """The norm alone after the Gemm (no residual Add, no B; RMSNormalization has no mean):
    the fused Gemm gives the bits apart, and the norm's formula in numpy from the Gemm's own
    f32 output (compiled with that output kept) within f32 rounding."""
    d = 256
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="dense1"),
             helper.make_node("MatMul", ["m1", "w2"], ["o"], name="dense2"),
             helper.make_node(norm, ["o", "g"], ["y"], name="norm", axis=-1, epsilon=1e-5)]
    g = 1 + randn(d, scale=0.1)
    model = make_model(nodes, [("x", [128, d], np.float32)], ["y"],
                       [("w1", randn(d, d, scale=0.06)), ("w2", randn(d, d, scale=0.06)), ("g", g)],
                       opset=23 if norm == "RMSNormalization" else 17)
    exe, rep, apart = compile_both(model, monkeypatch)
    assert any(e["node"] == "dense2" and "norm" in e["fused"] for e in rep["fused"]), rep["fused"]
    x = randn(128, 256)
    got = exe.run({"x": x})["y"]
    assert ordered(hazard_checked()) == []
    np.testing.assert_array_equal(got, apart.run({"x": x})["y"])
    # the reference: the norm in numpy over the Gemm's f32 output as the npu computes it
    kept = tilecore.compile(model, precision="int8", calib_samples=CALIB, keep_intermediates=True)
    o = kept.run({"x": x})["o"].astype(np.float64)
    if norm == "LayerNormalization":
        o = o - o.mean(-1, keepdims=True)
    want = o / np.sqrt((o * o).mean(-1, keepdims=True) + 1e-5) * g
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_norm_in_gemm_is_faster_alone(monkeypatch):
    """Outside a layer group the fused Gemm saves the f32 intermediate's DDR round trip and
    hides its mms behind the norm's vector work."""
    exe, _, apart = compile_both(dense_dense_norm(reader=False), monkeypatch, group=False)
    x = randn(128, 256)
    exe.run({"x": x})
    apart.run({"x": x})
    assert exe.stats()["cycles"] < 0.8 * apart.stats()["cycles"]


def test_wide_k_keeps_them_apart(monkeypatch):
    """K = 1024 on 4 cores: each core would read 4 x 256 KiB of weights to save a 128 KiB
    intermediate, so the plan is not offered and the ops stay apart."""
    rep = {}
    tilecore.compile(dense_dense_norm(k=1024, reader=False), precision="int8",
                     calib_samples={"x": randn(2, 128, 256)}, report=rep)
    assert not any("norm" in e["fused"] and e["node"] == "dense2" for e in rep["fused"])


def row_norm_specs(a="int8", skip=(128, 256)):
    t = compiler.TensorSpec
    specs = [t((128, 256), a), t((256, 256), "int8"), t((256,), "int32"), t((256,), "float32"),
             t((256,), "float32"), t((256,), "float32"), None if skip is None else t(skip, "float32")]
    return specs


ATTRS = {"tc_precision": "int8", "tc_x_scale": 0.05, "tc_row_norm": "LayerNormalization", "tc_norm_epsilon": 1e-5}


@pytest.mark.parametrize("attrs, specs, says", [
    ({**ATTRS, "tc_row_norm": "Softmax"}, row_norm_specs(), "tc_row_norm must be LayerNormalization"),
    (ATTRS, row_norm_specs()[:5], "tc_row_norm expects inputs A, W, bias"),
    (ATTRS, row_norm_specs(a="float32"), "of an int8 A"),
    (ATTRS, row_norm_specs(skip=(128, 255)), "input 6 (skip) must be 32768 float32 values"),
    ({**ATTRS, "tc_y_scale": 0.1}, row_norm_specs(), "does not combine with tc_y_scale"),
    ({**ATTRS, "tc_norm_q_scale": -1.0}, row_norm_specs(), "tc_norm_q_scale must be positive"),
    ({**ATTRS, "tc_b_scale": 0.1}, row_norm_specs(), "does not combine with tc_b_scale"),
    ({**ATTRS, "alpha": 2.0}, row_norm_specs(), "alpha = beta = 1"),
])
def test_row_norm_names_a_bad_form(attrs, specs, says):
    why = compiler.HasStrategy("Gemm", attrs, specs)
    assert says in why, why


def test_row_norm_lowers_without_skip_and_names_bad_outputs():
    t = compiler.TensorSpec
    y = t((128, 256), "float32")
    f = compiler.LowerOp("Gemm", ATTRS, row_norm_specs(skip=None), [y])
    assert "Bsh" in str(f)  # the weights in the DDR: staged once through L2
    with pytest.raises(Exception, match="tc_row_norm writes Y"):
        compiler.LowerOp("Gemm", ATTRS, row_norm_specs(), [t((128, 255), "float32")])
    # 130 rows do not split over 4 cores: the plan says so
    specs = [t((130, 256), "int8")] + row_norm_specs(skip=None)[1:]
    with pytest.raises(Exception, match="no plan takes 130 rows on 4 cores"):
        compiler.LowerOp("Gemm", ATTRS, specs, [t((130, 256), "float32")])


def test_row_norm_wide_rows_build():
    """BERT-base's width (N = 768) in at most four weight blocks: the kernel's DMA events stay
    within TC1's 16, so it builds."""
    t = compiler.TensorSpec
    specs = [t((512, 768), "int8"), t((768, 768), "int8"), t((768,), "int32"), t((768,), "float32"),
             t((768,), "float32"), t((768,), "float32"), t((512, 768), "float32")]
    f = compiler.LowerOp("Gemm", ATTRS, specs, [t((512, 768), "float32")])
    assert tilecore.build(f, "npu -cores=4") is not None
