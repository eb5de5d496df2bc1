"""Graph IR, graph passes and the ONNX importer: round trips, passes against numpy,
canonicalisation counts, and bad input (each a named error)."""
import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tilecore  # noqa: E402
from tilecore import transform  # noqa: E402
from tilecore.frontend import evaluate, from_onnx, static_shape  # noqa: E402
from tilecore.ir.graph import GraphBuilder  # noqa: E402


def chain(n):
    b = GraphBuilder()
    x = b.input("x", ("N", 4))
    v = x
    for i in range(n):
        (v,) = b.add("Relu" if i % 2 else "Neg", [v])
    b.output(v)
    return b.build()


def test_printer_line_format():
    b = GraphBuilder()
    x = b.input("x", (1, 3, 8, 8))
    w = b.constant("w", np.ones((4, 3, 3, 3), np.float32))
    (y,) = b.add("Conv", [x, w], {"strides": [2, 2], "pads": [1, 1, 1, 1]}, name="conv1")
    b.output(y)
    g = transform.InferTypes()(b.build())
    assert '%conv1_out: f32[1,4,4,4] = Conv(%x, %w) {strides=[2,2], pads=[1,1,1,1], _opset=' not in g.text()
    assert "%conv1_out: f32[1,4,4,4] = Conv(%x, %w) {strides=[2,2],pads=[1,1,1,1]}" not in g.text()
    line = [ln.strip() for ln in g.text().splitlines() if "Conv(" in ln][0]
    assert line == '%conv1_out: f32[1,4,4,4] = Conv(%x, %w) {strides=[2,2], pads=[1,1,1,1]} @ "conv1"'


def test_big_graph_roundtrip_and_equality():
    g = chain(2000)
    text = g.text()
    js = tilecore.save_json(g)
    g2 = tilecore.load_json(js)
    assert tilecore.structural_equal(g, g2)
    assert len(text.splitlines()) == 2000 + 3
    g3 = chain(1999)
    assert not tilecore.structural_equal(g, g3)


def test_builder_names_are_the_first_free_suffix():
    b = GraphBuilder()
    x = b.input("x", (2,))
    b.constant("Neg_2", np.zeros(2, np.float32))       # taken before the chain asks for it
    names = [b.add("Neg", [x], name="Neg")[0] for _ in range(4)]
    assert [n.name for n in names] == ["Neg_out", "Neg_1_out", "Neg_3_out", "Neg_4_out"]
    assert b.fresh("") == "v" and b.fresh("") == "v_1"


def test_20000_node_chain_builds_prints_saves_and_compares():
    """No walk recurses along the chain. (Its speed is measured by
    benchmarks/graph_ir_scale.py, not asserted here.)"""
    n = 20000
    g = chain(n)
    text = g.text()
    g2 = tilecore.load_json(tilecore.save_json(g))
    assert tilecore.structural_equal(g, g2)
    lines = text.splitlines()
    assert len(lines) == n + 3
    assert len({n.name for n in g.nodes}) == n
    assert "= Neg(%x) @ \"Neg\"" in lines[1] and lines[-2].strip().startswith("return %Relu_")


def test_passes_on_big_graph():
    g = chain(2000)
    g = transform.InferTypes({"x": (2, 4)})(g)
    assert static_shape(g.outputs[0]) == (2, 4)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    got = evaluate(g, {"x": x})[g.outputs[0].name]
    want = x
    for i in range(2000):
        want = np.maximum(want, 0) if i % 2 else -want
    np.testing.assert_array_equal(got, want)


def test_fold_dce_cse_against_numpy():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    c1 = b.constant("c1", np.full((3,), 2, np.float32))
    c2 = b.constant("c2", np.full((3,), 3, np.float32))
    (k,) = b.add("Add", [c1, c2])          # folds to 5
    (a1,) = b.add("Mul", [x, k])
    (a2,) = b.add("Mul", [x, k])           # same as a1
    (dead,) = b.add("Neg", [x])            # unused
    (y,) = b.add("Add", [a1, a2])
    b.output(y)
    g = b.build()
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = evaluate(g, {"x": xv})[y.name]
    np.testing.assert_allclose(want, xv * 10)
    with transform.PassContext() as ctx:
        g2 = transform.Sequential([transform.InferTypes(), transform.FoldConstants(),
                                   transform.EliminateCommonSubexpr(), transform.EliminateDeadCode()])(g)
        stats = dict(ctx.stats.items())
    assert stats["transform.FoldConstants.folded"] == 1
    assert stats["transform.EliminateCommonSubexpr.merged"] == 1
    assert stats["transform.EliminateDeadCode.removed"] == 1
    assert [n.op_type for n in g2.nodes] == ["Mul", "Add"]
    np.testing.assert_allclose(evaluate(g2, {"x": xv})[y.name], want)


def test_fold_an_input_read_only_for_its_type():
    # CastLike(constant, x) and EyeLike(x) read x's dtype and shape only: they fold while x is
    # an input (Attention's body pads its mask with CastLike(-inf, mask): a constant value)
    b = GraphBuilder(opsets={"": 21})
    x = b.input("x", (2, 3), "float16")
    (c,) = b.add("CastLike", [b.constant("c", np.array(-np.inf, np.float32)), x])
    (e,) = b.add("EyeLike", [x])
    (y,) = b.add("Add", [x, c])
    b.output(y, e)
    g = transform.FoldConstants()(transform.InferTypes()(b.build()))
    assert [n.op_type for n in g.nodes] == ["Add"] and g.nodes[0].inputs[1].data is not None
    np.testing.assert_array_equal(g.nodes[0].inputs[1].numpy(), np.float16(-np.inf))
    np.testing.assert_array_equal(g.outputs[1].numpy(), np.eye(2, 3, dtype=np.float16))


def _shape_chain(links):
    # a Swin Transformer's window shapes: each Reshape's shape computed from the Shape of the
    # Reshape before (Gather, Mul, Div, Unsqueeze, Concat), one link after another
    b = GraphBuilder(opsets={"": 17})
    v = b.input("x", (1, 2, 4, 64))
    for i in range(links):
        (s,) = b.add("Shape", [v])
        dims = [b.add("Gather", [s, b.constant(f"i{i}_{d}", np.array(d, np.int64))])[0] for d in range(4)]
        (h,) = b.add("Mul", [dims[2], b.constant(f"two{i}", np.array(2, np.int64))])
        (w,) = b.add("Div", [dims[3], b.constant(f"half{i}", np.array(2, np.int64))])
        parts = [b.add("Unsqueeze", [d, b.constant(f"ax{i}_{j}", np.array([0], np.int64))])[0]
                 for j, d in enumerate([dims[0], dims[1], h, w])]
        (shape,) = b.add("Concat", parts, {"axis": 0})
        (v,) = b.add("Reshape", [v, shape])
        (v,) = b.add("Relu", [v])
    b.output(v)
    return b.build()


def _rounds_to_fixed_point(g, fold_constants):
    for rounds in range(1, 100):
        n = len(g.nodes)
        g = transform.FoldConstants()(transform.InferTypes({}, fold_constants=fold_constants)(g))
        if len(g.nodes) == n:
            return g, rounds
    raise AssertionError("no fixed point")


def test_infer_types_folding_learns_a_chain_of_shapes_in_one_sweep():
    g = _shape_chain(5)
    # each round of typing then folding learns one link more: 5 links, 5 rounds and 1 to see it
    plain, plain_rounds = _rounds_to_fixed_point(g, False)
    folded, folded_rounds = _rounds_to_fixed_point(g, True)
    assert (plain_rounds, folded_rounds) == (6, 2)
    assert folded.text() == plain.text()
    assert [n.op_type for n in folded.nodes] == ["Reshape", "Relu"] * 5
    # (4, 64) -> (8, 32) -> (16, 16) -> (32, 8) -> (64, 4) -> (128, 2)
    assert static_shape(folded.outputs[0]) == (1, 2, 128, 2)
    xv = np.random.default_rng(0).standard_normal((1, 2, 4, 64)).astype(np.float32)
    got = evaluate(folded, {"x": xv})[folded.outputs[0].name]
    np.testing.assert_array_equal(got, np.maximum(xv.reshape(1, 2, 128, 2), 0))


def test_infer_types_folding_leaves_a_failing_reference_to_fold_constants():
    # a node whose inference passes and whose reference raises: typing with folding keeps it,
    # FoldConstants names it as it did before
    from tilecore.ir.ops import TensorInfo, register_op
    from tilecore.ir.ops.registry import OpError

    @register_op("FoldTestBoom", domain="test.fold", override=True,
                 infer=lambda attrs, inputs: [TensorInfo(inputs[0].shape, inputs[0].dtype)])
    def boom(attrs, x):
        """raises"""
        raise OpError("FoldTestBoom: a bad constant")

    b = GraphBuilder(opsets={"": 17, "test.fold": 1})
    x = b.input("x", (3,))
    (c,) = b.add("FoldTestBoom", [b.constant("c", np.arange(3, dtype=np.float32))], domain="test.fold", name="boom")
    b.output(b.add("Add", [x, c])[0])
    typed = transform.InferTypes({}, fold_constants=True)(b.build())
    assert [n.op_type for n in typed.nodes] == ["FoldTestBoom", "Add"] and typed.nodes[0].outputs[0].data is None
    with pytest.raises(ValueError, match=r"FoldConstants: node `boom` \(test.fold::FoldTestBoom\) \(opset 1\): "
                                         r"FoldTestBoom: a bad constant"):
        transform.FoldConstants()(typed)


def test_the_compiler_folds_while_typing(monkeypatch):
    # the fold to a fixed point takes two rounds of a five-link chain, not six
    from tilecore.compiler import driver

    rounds = []
    real = transform.FoldConstants
    monkeypatch.setattr(transform, "FoldConstants", lambda: rounds.append(1) or real())
    g = driver._fold_to_fixed_point(_shape_chain(5))
    assert len(rounds) == 2 and [n.op_type for n in g.nodes] == ["Reshape", "Relu"] * 5


def _counts(g, p):
    with transform.PassContext() as ctx:
        out = p(g)
        return out, dict(ctx.stats.items())


def test_canonicalisation_counts_against_numpy():
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", (1, 3, 5, 5))
    w = b.constant("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    (c,) = b.add("Conv", [x, w], {"pads": [1, 1, 1, 1]})
    bn = [b.constant(n, v) for n, v in [("s", rng.random(4).astype(np.float32) + 0.5),
                                         ("bb", rng.standard_normal(4).astype(np.float32)),
                                         ("m", rng.standard_normal(4).astype(np.float32)),
                                         ("v", rng.random(4).astype(np.float32) + 0.5)]]
    (y,) = b.add("BatchNormalization", [c] + bn)
    (s,) = b.add("Sigmoid", [y])
    (z,) = b.add("Mul", [y, s])                       # SiLU
    (f,) = b.add("Flatten", [z])
    gw = b.constant("gw", rng.standard_normal((6, 100)).astype(np.float32))
    (m,) = b.add("Gemm", [f, gw], {"transB": 1, "alpha": 0.5})
    half = b.constant("half", np.float32(0.5))
    sq2 = b.constant("sq2", np.float32(np.sqrt(2)))
    one = b.constant("one", np.float32(1))
    (d,) = b.add("Div", [m, sq2])
    (e,) = b.add("Erf", [d])
    (t,) = b.add("Add", [e, one])
    (p,) = b.add("Mul", [m, t])
    (out,) = b.add("Mul", [p, half])                  # GELU (erf)
    b.output(out)
    g = transform.InferTypes()(b.build())
    xv = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    want = evaluate(g, {"x": xv})[out.name]
    g2, stats = _counts(g, transform.CanonicalizeGraph())
    assert stats["transform.FoldBatchNorm.folded"] == 1
    assert stats["transform.GemmToMatMul.rewritten"] == 1
    assert stats["transform.RecognizeActivations.silu"] == 1
    assert stats["transform.RecognizeActivations.gelu_erf"] == 1
    ops = [n.op_type for n in g2.nodes]
    assert "BatchNormalization" not in ops and "Gemm" not in ops and "Erf" not in ops
    np.testing.assert_allclose(evaluate(g2, {"x": xv})[out.name], want, rtol=1e-4, atol=1e-5)


def _layer_scale(rng, gamma_shape, bias_shape=(6,), transpose=True, extra_use=False):
    """x (1, 4, 4, 5) @ W (5, 6) + b, [to NCHW,] times gamma: (graph, output, numpy's result)."""
    b = GraphBuilder()
    x = b.input("x", (1, 4, 4, 5))
    w = rng.standard_normal((5, 6)).astype(np.float32)
    bias = rng.standard_normal(bias_shape).astype(np.float32)
    gamma = rng.standard_normal(gamma_shape).astype(np.float32)
    (m,) = b.add("MatMul", [x, b.constant("w", w)])
    (a,) = b.add("Add", [m, b.constant("b", bias)])
    y = a
    if transpose:
        (y,) = b.add("Transpose", [a], {"perm": [0, 3, 1, 2]})
    (out,) = b.add("Mul", [y, b.constant("gamma", gamma)])
    b.output(out)
    if extra_use:
        b.output(y)
    xv = rng.standard_normal((1, 4, 4, 5)).astype(np.float32)
    ref = xv.astype(np.float64) @ w + bias
    ref = (ref.transpose(0, 3, 1, 2) if transpose else ref) * gamma
    return transform.InferTypes()(b.build()), out, xv, ref


@pytest.mark.parametrize("gamma_shape,bias_shape,transpose", [
    ((6, 1, 1), (6,), True),      # ConvNeXt's layer scale: Linear, to NCHW, times gamma (C, 1, 1)
    ((1, 6, 1, 1), (1, 6), True),
    ((), (), True),               # a scalar scale and a one-element bias (it gets the channel axis)
    ((6,), (), False),            # no Transpose: gamma along the MatMul's last axis
])
def test_channel_scale_folds_into_the_weights_against_numpy(gamma_shape, bias_shape, transpose):
    rng = np.random.default_rng(7)
    g, out, xv, ref = _layer_scale(rng, gamma_shape, bias_shape, transpose)
    g2, stats = _counts(g, transform.FoldChannelScale())
    assert stats["transform.FoldChannelScale.folded"] == 1
    assert [n.op_type for n in g2.nodes] == ["MatMul", "Add"] + (["Transpose"] if transpose else [])
    assert g2.nodes[-1].outputs[0].name == out.name  # the Mul's output, written by the last node
    np.testing.assert_allclose(evaluate(g2, {"x": xv})[out.name], ref, rtol=1e-5, atol=1e-5)


def test_channel_scale_folds_into_a_conv_against_numpy():
    rng = np.random.default_rng(8)
    b = GraphBuilder()
    x = b.input("x", (1, 3, 5, 5))
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    cb = rng.standard_normal(4).astype(np.float32)
    gamma = rng.standard_normal((4, 1, 1)).astype(np.float32)
    (c,) = b.add("Conv", [x, b.constant("w", w), b.constant("cb", cb)], {"pads": [1, 1, 1, 1]})
    (out,) = b.add("Mul", [b.constant("gamma", gamma), c])
    b.output(out)
    g = transform.InferTypes()(b.build())
    xv = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    xp = np.pad(xv.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 4, 5, 5))
    for i in range(5):
        for j in range(5):
            ref[0, :, i, j] = np.tensordot(w, xp[0, :, i:i + 3, j:j + 3], axes=3) + cb
    ref *= gamma
    g2, stats = _counts(g, transform.FoldChannelScale())
    assert stats["transform.FoldChannelScale.folded"] == 1 and [n.op_type for n in g2.nodes] == ["Conv"]
    np.testing.assert_allclose(evaluate(g2, {"x": xv})[out.name], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("gamma_shape,extra_use", [
    ((1, 1, 4, 1), False),  # varies along a spatial axis, not the channels
    ((2, 6, 1, 1), False),  # would grow the result (two images from one)
    ((6, 1, 1), True),      # the Transpose's output is also a graph output
])
def test_channel_scale_is_left_alone(gamma_shape, extra_use):
    rng = np.random.default_rng(9)
    g, out, xv, ref = _layer_scale(rng, gamma_shape, extra_use=extra_use)
    g2, stats = _counts(g, transform.FoldChannelScale())
    assert "transform.FoldChannelScale.folded" not in stats and [n.op_type for n in g2.nodes][-1] == "Mul"
    np.testing.assert_allclose(evaluate(g2, {"x": xv})[out.name], ref, rtol=1e-5, atol=1e-5)


def test_nan_mask_becomes_replace_nan_against_numpy():
    # Where(IsNaN(x), c, x) -> tilecore::ReplaceNaN(x; value=c); not when the mask has another
    # use, c is not a constant, or c (one element) has more dims than x (it broadcasts x)
    x_v = np.array([[1.5, np.nan, -2.0], [np.nan, np.inf, 0.0]], np.float32)
    for shared, const in ((False, True), (True, True), (False, False), (False, "rank3")):
        b = GraphBuilder()
        x = b.input("x", (2, 3))
        c = (b.constant("c", np.full((1, 1, 1), -7.0, np.float32)) if const == "rank3" else
             b.constant("c", np.float32(-7.0)) if const else b.input("c", ()))
        (m,) = b.add("IsNaN", [x])
        (y,) = b.add("Where", [m, c, x])
        b.output(y, m) if shared else b.output(y)
        g, stats = _counts(transform.InferTypes()(b.build()), transform.CanonicalizeGraph())
        ops = [n.op_type for n in g.nodes]
        feed = {"x": x_v} if const else {"x": x_v, "c": np.float32(-7.0)}
        got = evaluate(g, feed)[y.name]
        want = np.where(np.isnan(x_v), np.full((1, 1, 1) if const == "rank3" else (), -7.0, np.float32), x_v)
        np.testing.assert_array_equal(got, want)
        if shared or const is not True:
            assert "ReplaceNaN" not in ops and "transform.RecognizeActivations.nan_mask" not in stats
        else:
            assert ops == ["ReplaceNaN"] and stats["transform.RecognizeActivations.nan_mask"] == 1
            assert float(g.nodes[0].attrs["value"]) == -7.0


def test_softmax_and_layernorm_recognised():
    rng = np.random.default_rng(2)
    b = GraphBuilder(opsets={"": 13})
    x = b.input("x", (2, 8))
    (mx,) = b.add("ReduceMax", [x], {"axes": [-1]})
    (sb,) = b.add("Sub", [x, mx])
    (ex,) = b.add("Exp", [sb])
    (sm,) = b.add("ReduceSum", [ex, b.constant("ax", np.array([-1], np.int64))])
    (y,) = b.add("Div", [ex, sm])
    (mean,) = b.add("ReduceMean", [y], {"axes": [-1]})
    (dd,) = b.add("Sub", [y, mean])
    (sq,) = b.add("Pow", [dd, b.constant("two", np.float32(2))])
    (var,) = b.add("ReduceMean", [sq], {"axes": [-1]})
    (ve,) = b.add("Add", [var, b.constant("eps", np.float32(1e-5))])
    (sd,) = b.add("Sqrt", [ve])
    (nn,) = b.add("Div", [dd, sd])
    (gm,) = b.add("Mul", [nn, b.constant("gamma", rng.random(8).astype(np.float32))])
    (out,) = b.add("Add", [gm, b.constant("beta", rng.random(8).astype(np.float32))])
    b.output(out)
    g = transform.InferTypes()(b.build())
    xv = rng.standard_normal((2, 8)).astype(np.float32)
    want = evaluate(g, {"x": xv})[out.name]
    g2, stats = _counts(g, transform.RecognizeNormalization())
    assert stats["transform.RecognizeNormalization.softmax"] == 1
    assert stats["transform.RecognizeNormalization.layer_norm"] == 1
    assert [n.op_type for n in g2.nodes] == ["Softmax", "LayerNormalization"]
    np.testing.assert_allclose(evaluate(g2, {"x": xv})[out.name], want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("order", ["gamma_first", "gamma_last"])
def test_rms_norm_recognised(order):
    """Llama's RMSNorm as the dynamo exporter writes torch.rsqrt: gamma * (x * Reciprocal(
    Sqrt(ReduceMean(x^2) + eps))), x read by the residual too: one RMSNormalization, the
    same values (numpy: x / sqrt(mean(x^2) + eps) * gamma)."""
    rng = np.random.default_rng(3)
    b = GraphBuilder(opsets={"": 18})
    x = b.input("x", (4, 16))
    (sq,) = b.add("Pow", [x, b.constant("two", np.float32(2))])
    (var,) = b.add("ReduceMean", [sq, b.constant("ax", np.array([-1], np.int64))], {"keepdims": 1})
    (ve,) = b.add("Add", [var, b.constant("eps", np.float32(1e-6))])
    (sd,) = b.add("Sqrt", [ve])
    (r,) = b.add("Reciprocal", [sd])
    (nx,) = b.add("Mul", [x, r] if order == "gamma_last" else [r, x])
    gamma = b.constant("gamma", rng.random(16).astype(np.float32) + 0.5)
    (y,) = b.add("Mul", [nx, gamma] if order == "gamma_last" else [gamma, nx])
    (out,) = b.add("Add", [y, x])  # (the residual: x has another reader)
    b.output(out)
    g = transform.InferTypes()(b.build())
    xv = rng.standard_normal((4, 16)).astype(np.float32)
    g2, stats = _counts(g, transform.RecognizeNormalization())
    assert stats["transform.RecognizeNormalization.rms_norm"] == 1
    assert [n.op_type for n in g2.nodes] == ["RMSNormalization", "Add"]
    x64 = xv.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * g2.nodes[0].inputs[1].numpy() + x64
    np.testing.assert_allclose(evaluate(g2, {"x": xv})[out.name], want, rtol=1e-5, atol=1e-6)


def test_rms_norm_not_recognised_over_another_axis():
    """The mean over the first axis is not an RMSNorm over the last: the nodes stay."""
    b = GraphBuilder(opsets={"": 13})
    x = b.input("x", (4, 16))
    (sq,) = b.add("Mul", [x, x])
    (var,) = b.add("ReduceMean", [sq], {"axes": [0]})
    (ve,) = b.add("Add", [var, b.constant("eps", np.float32(1e-6))])
    (sd,) = b.add("Sqrt", [ve])
    (r,) = b.add("Reciprocal", [sd])
    (nx,) = b.add("Mul", [x, r])
    (y,) = b.add("Mul", [nx, b.constant("gamma", np.ones(16, np.float32))])
    b.output(y)
    g2, stats = _counts(transform.InferTypes()(b.build()), transform.RecognizeNormalization())
    assert "transform.RecognizeNormalization.rms_norm" not in stats
    assert "RMSNormalization" not in [n.op_type for n in g2.nodes]


# ---------------------------------------------------------------------------
# ONNX import and bad input
# ---------------------------------------------------------------------------
def small_model(op="Relu", extra_init=True, out_shape=(2, 3)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))
    nodes = [helper.make_node("Add", ["x", "b"], ["t"], name="add0"), helper.make_node(op, ["t"], ["y"], name="act")]
    inits = [numpy_helper.from_array(np.ones(3, np.float32), "b")] if extra_init else []
    g = helper.make_graph(nodes, "g", [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_import_and_evaluate(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(small_model(), str(path))
    g = from_onnx(str(path), input_shapes={"x": (2, 3)})
    assert static_shape(g.outputs[0]) == (2, 3)
    xv = np.array([[-2, 0, 1], [3, -4, 5]], np.float32)
    np.testing.assert_array_equal(evaluate(g, {"x": xv})["y"], np.maximum(xv + 1, 0))
    assert 'Relu(%t) @ "act"' in g.text()


def test_unsupported_op_is_named():
    with pytest.raises(NotImplementedError, match=r"node 'act' \(NoSuchOp, opset 17\).*unsupported op type 'NoSuchOp'"):
        from_onnx(small_model("NoSuchOp"))


def test_missing_initializer_is_named():
    with pytest.raises(ValueError, match=r"node 'add0'.*input 1 'b'.*missing initializer"):
        from_onnx(small_model(extra_init=False))


def test_inconsistent_shape_is_named():
    with pytest.raises(ValueError, match=r"inconsistent shape: node `act` \(Relu\).*f32\[2,3\].*declares f32\[2,4\]"):
        from_onnx(small_model(out_shape=(2, 4)), input_shapes={"x": (2, 3)})


def test_truncated_and_corrupted_files_are_named(tmp_path):
    data = small_model().SerializeToString()
    trunc = tmp_path / "trunc.onnx"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="trunc.onnx"):
        from_onnx(str(trunc))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\xfe not a model" * 10)
    with pytest.raises(ValueError, match="bad.onnx"):
        from_onnx(str(bad))
    with pytest.raises(ValueError, match="missing.onnx"):
        from_onnx(str(tmp_path / "missing.onnx"))


FUZZ = r'''
import random, sys, numpy as np
sys.path[:0] = {paths!r}
import onnx
from onnx import TensorProto, helper, numpy_helper
import tilecore
from tilecore.frontend import from_onnx
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
nodes = [helper.make_node("Add", ["x", "b"], ["t"], name="add0"), helper.make_node("Relu", ["t"], ["u"], name="act"),
         helper.make_node("Reshape", ["u", "s"], ["y"], name="rs")]
inits = [numpy_helper.from_array(np.ones(3, np.float32), "b"), numpy_helper.from_array(np.array([-1], np.int64), "s")]
data = bytearray(helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                                   opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
rng = random.Random({seed})
named = 0
for i in range({n}):
    d = bytearray(data)
    kind = rng.random()
    if kind < 0.3:
        d = d[: rng.randrange(len(d))]
    else:
        for _ in range(rng.randint(1, 8)):
            d[rng.randrange(len(d))] = rng.randrange(256)
    try:
        from_onnx(bytes(d))
    except (tilecore.TilecoreError, ValueError, TypeError, NotImplementedError, KeyError) as e:
        assert str(e), "an error without a message"
        named += 1
print("ok", named)
'''


def test_importer_fuzz_never_crashes():
    code = FUZZ.format(paths=[os.path.abspath(p) for p in sys.path if p], seed=1234, n=300)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok")
