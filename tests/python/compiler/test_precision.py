"""Precision modes of tilecore.compile (docs/precision.md): Conv, MatMul and Gemm in f16 and
bf16 against numpy with the operands rounded the same way, and in int8 bit-exact against a
numpy reference applying the same quantisation (written here, independently of the
compiler's), plus the quantised-node form given in the graph, qtables and errors."""
import json

import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore.compiler.driver import CompileError

from test_driver import make_model

ml_dtypes = pytest.importorskip("ml_dtypes")  # bfloat16 in numpy (onnx depends on it)

RNG = np.random.default_rng(12)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def rounded(a, precision):
    """f32 -> f16/bf16 (nearest even) -> float64, as the DMA converts."""
    t = np.float16 if precision == "f16" else ml_dtypes.bfloat16
    return np.asarray(a, np.float32).astype(t).astype(np.float64)


def conv_ref(x, w, b=None, stride=1, pad=0, dilation=1, group=1):
    """A direct NCHW convolution in float64 (or int64 for integer operands)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    mg = m // group
    out = np.zeros((n, m, oh, ow), dtype=np.result_type(x.dtype, w.dtype))
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                win = xs[:, :, i * dilation:i * dilation + stride * oh:stride, j * dilation:j * dilation + stride * ow:stride]
                out[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", win, w[g * mg:(g + 1) * mg, :, i, j])
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def conv_model(xshape, w, b, **attrs):
    ins = ["x", "w"] + (["b"] if b is not None else [])
    inits = [("w", w)] + ([("b", b)] if b is not None else [])
    node = helper.make_node("Conv", ins, ["y"], name="conv", **attrs)
    return make_model([node], [("x", list(xshape), np.float32)], ["y"], inits)


CONVS = [  # (x shape, w shape, attrs) on the matrix engine, the last two on the vector engine
    ((1, 8, 10, 10), (16, 8, 3, 3), dict(pads=[1, 1, 1, 1])),
    ((2, 40, 9, 9), (24, 40, 3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2])),   # K = 360: two K chunks
    ((1, 12, 11, 11), (18, 4, 3, 3), dict(group=3, dilations=[2, 2])),          # grouped, dilated
    ((1, 16, 7, 7), (160, 16, 1, 1), {}),                                       # M = 160: two M tiles
    ((1, 8, 5, 5), (300, 8, 1, 1), {}),                                         # M = 300: three M tiles
    ((1, 24, 13, 13), (24, 1, 3, 3), dict(group=24, pads=[1, 1, 1, 1], strides=[2, 2])),  # depthwise
    ((2, 10, 9, 9), (10, 1, 5, 5), dict(group=10, pads=[2, 2, 2, 2], dilations=[2, 2])),  # depthwise 5x5
]


@pytest.mark.parametrize("precision", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv_narrow_matches_rounded_operands(precision, case):
    xs, ws, attrs = CONVS[case]
    x, w, b = randn(*xs), randn(*ws, scale=0.2), randn(ws[0])
    exe = tilecore.compile(conv_model(xs, w, b, **attrs), precision=precision)
    y = exe.run({"x": x})["y"]
    ref = conv_ref(rounded(x, precision), rounded(w, precision), b.astype(np.float64),
                   stride=attrs.get("strides", [1])[0], pad=attrs.get("pads", [0])[0],
                   dilation=attrs.get("dilations", [1])[0], group=attrs.get("group", 1))
    # f32 accumulation of exact products: only the summation order differs from float64
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    # and the rounding matters: f32 operands give a visibly different result
    full = conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                    stride=attrs.get("strides", [1])[0], pad=attrs.get("pads", [0])[0],
                    dilation=attrs.get("dilations", [1])[0], group=attrs.get("group", 1))
    assert np.abs(full - ref).max() > 10 * np.abs(y - ref).max()


@pytest.mark.parametrize("precision", ["f16", "bf16"])
def test_matmul_and_gemm_narrow(precision):
    a, w = randn(2, 70, 300), randn(300, 150, scale=0.1)       # batched, K and N over one tile
    q, k = randn(1, 2, 33, 40), randn(1, 2, 40, 17)             # two activations
    g, gw, gc = randn(20, 48), randn(24, 48, scale=0.2), randn(24)
    nodes = [helper.make_node("MatMul", ["a", "w"], ["y1"], name="mm"),
             helper.make_node("MatMul", ["q", "k"], ["y2"], name="qk"),
             helper.make_node("Gemm", ["g", "gw", "gc"], ["y3"], name="gemm", transB=1)]
    model = make_model(nodes, [("a", [2, 70, 300], np.float32), ("q", [1, 2, 33, 40], np.float32),
                               ("k", [1, 2, 40, 17], np.float32), ("g", [20, 48], np.float32)],
                       ["y1", "y2", "y3"], [("w", w), ("gw", gw), ("gc", gc)])
    rep = {}
    out = tilecore.compile(model, precision=precision, report=rep).run({"a": a, "q": q, "k": k, "g": g})
    assert set(rep["precision"]["assigned"].values()) == {precision}
    r = lambda v: rounded(v, precision)
    for got, ref in ((out["y1"], r(a) @ r(w)), (out["y2"], r(q) @ r(k)), (out["y3"], r(g) @ r(gw).T + gc)):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_narrow_weights_are_stored_narrow(tmp_path):
    w = randn(64, 64, 3, 3)
    model = conv_model((1, 64, 8, 8), w, None, pads=[1, 1, 1, 1])
    consts = {}
    for p in ("f32", "bf16"):
        exe = tilecore.compile(model, precision=p)
        exe.save(str(tmp_path / f"{p}.tcx"))
        d = exe.describe()
        (consts[p],) = [d["buffers"][c["buffer"]] for c in d["constants"]]
    # the file sizes also hold the kernels' code, which differs with the plan each
    # precision gets: compare the stored weights
    assert consts["f32"]["size"] == w.nbytes and consts["f32"]["dtype"] == "float32"
    assert consts["bf16"]["size"] == w.nbytes // 2 and consts["bf16"]["dtype"] == "bfloat16"
    from tilecore import runtime

    x = randn(1, 64, 8, 8)
    loaded = runtime.load_executable(tmp_path / "bf16.tcx")
    np.testing.assert_array_equal(loaded.run({"x": x})["y"], tilecore.compile(model, precision="bf16").run({"x": x})["y"])


# ---- int8: an independent numpy reference -------------------------------------------------

def q_act(x, threshold):
    """Symmetric per-tensor int8 on load: scale = f32(t / 127), q = sat(round_even(x * f32(1/scale)))."""
    scale = np.float32(threshold / 127.0)
    inv = np.float32(1.0 / np.float64(scale))
    return np.clip(np.rint(np.asarray(x, np.float32) * inv), -128, 127).astype(np.int64), scale


def q_weights(w, axis):
    red = tuple(i for i in range(w.ndim) if i != axis)
    scale = (np.abs(w).max(axis=red).astype(np.float64) / 127).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    return np.clip(np.rint(w / scale.astype(np.float64).reshape(shape)), -127, 127).astype(np.int64), scale


def dequant(acc, bias_f32, x_scale, w_scale, axis):
    """f32(acc + round_even(b / (sx * sw))) * f32(sx * sw), per channel along `axis`."""
    shape = [1] * acc.ndim
    shape[axis] = -1
    if bias_f32 is not None:
        qb = np.rint(bias_f32.astype(np.float64) / (np.float64(x_scale) * w_scale.astype(np.float64)))
        acc = acc + qb.astype(np.int64).reshape(shape)
    s = (w_scale * x_scale).astype(np.float32)
    return acc.astype(np.float32) * s.reshape(shape)


def calib_of(*pairs):
    return {name: float(np.abs(v).max()) for name, v in pairs}


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv_int8_bit_exact(case):
    xs, ws, attrs = CONVS[case]
    x, w, b = randn(*xs), randn(*ws, scale=0.2), randn(ws[0])
    t = float(np.abs(x).max()) * 0.8  # some values saturate
    exe = tilecore.compile(conv_model(xs, w, b, **attrs), precision="int8", calib={"x": t})
    y = exe.run({"x": x})["y"]
    xq, sx = q_act(x, t)
    wq, sw = q_weights(w, 0)
    acc = conv_ref(xq, wq, stride=attrs.get("strides", [1])[0], pad=attrs.get("pads", [0])[0],
                   dilation=attrs.get("dilations", [1])[0], group=attrs.get("group", 1))
    np.testing.assert_array_equal(y, dequant(acc, b, sx, sw, 1))


def test_conv_int8_after_relu_uses_the_whole_range_bit_exact():
    """A value >= 0 by construction is quantised over 255 steps: scale t / 255, zero point
    -128 folded into the int32 bias."""
    x, w, b = randn(1, 8, 9, 9), randn(12, 8, 3, 3, scale=0.2), randn(12)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    model = make_model(nodes, [("x", [1, 8, 9, 9], np.float32)], ["y"], [("w", w), ("b", b)])
    t = 2.0
    y = tilecore.compile(model, precision="int8", calib={"r": t}).run({"x": x})["y"]
    r = np.maximum(x, 0)
    scale = np.float32(t / 255.0)
    inv = np.float32(1.0 / np.float64(scale))
    u = np.clip(np.rint(r * inv) - 128, -128, 127).astype(np.int64) + 128  # what the int8 value stands for
    wq, sw = q_weights(w, 0)
    acc = conv_ref(u, wq, pad=1)
    np.testing.assert_array_equal(y, dequant(acc, b, scale, sw, 1))


@pytest.mark.parametrize("act,lo", [("SiLU", -0.27846454), ("HardSwish", -0.375)])
def test_conv_int8_after_silu_or_hardswish_uses_the_range_from_its_minimum(act, lo):
    """A SiLU's output is >= -0.2785 and a HardSwish's >= -0.375 whatever the input: the
    256 codes span [lo, t] (scale (t - lo) / 254, the zero point that puts the lowest code at
    or below lo) instead of [-t, t], bit exact against numpy doing those steps."""
    x, w, b = randn(1, 8, 9, 9, scale=2.0), randn(12, 8, 3, 3, scale=0.2), randn(12)
    if act == "SiLU":
        acts = [helper.make_node("Sigmoid", ["x"], ["sg"], name="sigmoid"),
                helper.make_node("Mul", ["x", "sg"], ["r"], name="act")]
        r = (x.astype(np.float64) / (1 + np.exp(-x.astype(np.float64))))
    else:
        acts = [helper.make_node("HardSwish", ["x"], ["r"], name="act")]
        r = x.astype(np.float64) * np.clip(x.astype(np.float64) / 6 + 0.5, 0, 1)
    nodes = [*acts, helper.make_node("Conv", ["r", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    model = make_model(nodes, [("x", [1, 8, 9, 9], np.float32)], ["y"], [("w", w), ("b", b)])
    t = 3.0
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib={"r": t}, report=rep, keep_intermediates=True)
    scale = np.float32((t - lo) / 254.0)
    zp = -128 + int(np.ceil(-lo / np.float64(scale)))
    assert -128 < zp < -90  # few codes below zero
    outs = exe.run({"x": x})
    r = outs["r"]  # the activation as the npu computed it (f32)
    np.testing.assert_allclose(r, (x / (1 + np.exp(-x)) if act == "SiLU" else
                                   x * np.clip(x / 6 + 0.5, 0, 1)), rtol=1e-5, atol=1e-6)
    inv = np.float32(1.0 / np.float64(scale))
    q = np.clip(np.rint((r * inv).astype(np.float32) + np.float32(zp)), -128, 127).astype(np.int64)
    assert float((r * inv).min()) + zp >= -128.5  # nothing saturates below: lo is below every value
    wq, sw = q_weights(w, 0)
    acc = conv_ref(q - zp, wq, pad=1)
    np.testing.assert_array_equal(outs["y"], dequant(acc, b, scale, sw, 1))


def test_reference_of_the_int8_form_matches_the_npu_for_matmul():
    """A MatMul in the int8 form with a zero point (its input comes from a Relu), evaluated
    by the op library's reference and compiled: the same numbers."""
    from tilecore.compiler import precision as P
    from tilecore.ir.graph import Graph, Node, TensorType, Value, evaluate

    a, w = randn(6, 40), randn(40, 24, scale=0.2)
    wq, ws = P.quantise_weights(w, 1)
    sx = P.activation_scale(3.0, unsigned=True)
    bq = (128 * wq.astype(np.int64).sum(axis=0)).astype(np.int32)  # zero point -128 folded
    av = Value("a", TensorType([6, 40]))
    rv = Value("r", TensorType([6, 40]))
    yv = Value("y", TensorType([6, 24]))
    consts = [Value(n, TensorType(list(v.shape), str(v.dtype)), v) for n, v in (("wq", wq), ("bq", bq), ("ws", ws))]
    nodes = [Node("Relu", [av], [rv], {}, "relu", ""),
             Node("MatMul", [rv] + consts, [yv], {"tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": -128},
                  "mm", "")]
    graph = Graph("g", [av], [yv], nodes, {"": 17})
    got = tilecore.compile(graph).run({"a": a})["y"]
    np.testing.assert_array_equal(evaluate(graph, {"a": a})["y"], got)


def test_matmul_and_gemm_int8_bit_exact():
    a, w = randn(2, 70, 300), randn(300, 150, scale=0.1)
    q, k = randn(1, 2, 33, 40), randn(1, 2, 40, 17)
    g, gw, gc = randn(20, 48), randn(24, 48, scale=0.2), randn(24)
    nodes = [helper.make_node("MatMul", ["a", "w"], ["y1"], name="mm"),
             helper.make_node("MatMul", ["q", "k"], ["y2"], name="qk"),
             helper.make_node("Gemm", ["g", "gw", "gc"], ["y3"], name="gemm", transB=1, alpha=0.5)]
    model = make_model(nodes, [("a", [2, 70, 300], np.float32), ("q", [1, 2, 33, 40], np.float32),
                               ("k", [1, 2, 40, 17], np.float32), ("g", [20, 48], np.float32)],
                       ["y1", "y2", "y3"], [("w", w), ("gw", gw), ("gc", gc)])
    calib = calib_of(("a", a), ("q", q), ("k", k), ("g", g))
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib=calib, report=rep, group=False)  # steps named
    out = exe.run({"a": a, "q": q, "k": k, "g": g})
    # the driver may have turned the Gemm into MatMul + Add: either way int8 is bit-exact here
    assert rep["precision"]["fallbacks"] == []
    aq, sa = q_act(a, calib["a"])
    wq, sw = q_weights(w, 1)
    np.testing.assert_array_equal(out["y1"], dequant(aq @ wq, None, sa, sw, -1))
    qq, sq = q_act(q, calib["q"])
    kq, sk = q_act(k, calib["k"])
    np.testing.assert_array_equal(out["y2"], (qq @ kq).astype(np.float32) * np.float32(sq * sk))
    gq, sg = q_act(g, calib["g"])
    gwq, sgw = q_weights(gw * np.float32(0.5), 0)
    ref = dequant(gq @ gwq.T, None, sg, sgw, -1)
    if "gemm" in rep["precision"]["assigned"] and not any(s["op_type"] == "Add" for s in exe.stats()["ops"]):
        ref = dequant(gq @ gwq.T, gc, sg, sgw, -1)  # the bias folded into int32
    else:
        ref = ref + gc
    np.testing.assert_array_equal(out["y3"], ref)


@pytest.mark.parametrize("k", [40, 256, 300])
def test_matmul_of_two_activations_with_a_nonnegative_a_bit_exact(k):
    """A MatMul of two activations whose A is >= 0 by construction (attention's
    probabilities, here a Relu's output) quantises A over 255 steps with zero point -128:
    the kernel adds 128 times B's column sums in the epilogue of its one K step. Checked
    against numpy, and the whole range must beat the symmetric 127 steps (the zero point
    is what makes it worth it). Beyond one K step (K > 256) A stays symmetric."""
    p, v = randn(2, 33, k), randn(2, k, 24)
    nodes = [helper.make_node("Relu", ["p"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "v"], ["y"], name="pv")]
    model = make_model(nodes, [("p", [2, 33, k], np.float32), ("v", [2, k, 24], np.float32)], ["y"], [])
    r = np.maximum(p, 0)
    calib = calib_of(("r", r), ("v", v))
    rep = {}
    y = tilecore.compile(model, precision="int8", calib=calib, report=rep, group=False).run({"p": p, "v": v})["y"]
    vq, sv = q_act(v, calib["v"])
    rq, sr = q_act(r, calib["r"])
    symmetric = (rq @ vq).astype(np.float32) * np.float32(sr * sv)
    if k > 256:
        np.testing.assert_array_equal(y, symmetric)
        return
    sp = np.float32(calib["r"] / 255.0)
    inv = np.float32(1.0 / np.float64(sp))
    u = np.clip(np.rint(r * inv) - 128, -128, 127).astype(np.int64) + 128  # what the int8 value stands for
    want = (u @ vq).astype(np.float32) * np.float32(sp * sv)
    np.testing.assert_array_equal(y, want)
    exact = r.astype(np.float64) @ v.astype(np.float64)
    assert np.abs(y - exact).mean() < 0.9 * np.abs(symmetric - exact).mean()


def test_int8_thresholds_from_samples_by_min_max():
    xs, ws, attrs = CONVS[0]
    w, b = randn(*ws, scale=0.2), randn(ws[0])
    samples = {"x": randn(3, *xs)}
    model = conv_model(xs, w, b, **attrs)
    a = tilecore.compile(model, precision="int8", calib_samples=samples, bias_correction=False)
    c = tilecore.compile(model, precision="int8", calib={"x": float(np.abs(samples["x"]).max())})

    class Table:  # anything with .thresholds
        thresholds = {"x": float(np.abs(samples["x"]).max())}

    d = tilecore.compile(model, precision="int8", calib=Table())
    x = randn(*xs)
    np.testing.assert_array_equal(a.run({"x": x})["y"], c.run({"x": x})["y"])
    np.testing.assert_array_equal(d.run({"x": x})["y"], c.run({"x": x})["y"])


def test_quantised_node_form_given_in_the_graph():
    """int8 weights, int32 bias and w_scale made outside the compiler (as an importer of a
    quantised model does), with a zero point folded into the bias."""
    from tilecore.ir.graph import Graph, Node, TensorType, Value

    x = randn(1, 8, 6, 6)
    wq = RNG.integers(-127, 128, (4, 8, 3, 3)).astype(np.int8)
    ws = (RNG.random(4) * 0.01 + 0.001).astype(np.float32)
    bq = RNG.integers(-500, 500, 4).astype(np.int32)
    sx, zp = 0.02, 3
    xv = Value("x", TensorType([1, 8, 6, 6]))
    yv = Value("y", TensorType([1, 4, 6, 6]))
    consts = [Value(n, TensorType(list(a.shape), str(a.dtype)), a) for n, a in (("wq", wq), ("bq", bq), ("ws", ws))]
    node = Node("Conv", [xv] + consts, [yv], {"pads": [1, 1, 1, 1], "tc_precision": "int8", "tc_x_scale": sx,
                                              "tc_x_zero_point": zp}, "conv", "")
    graph = Graph("g", [xv], [yv], [node], {"": 17})
    rep = {}
    y = tilecore.compile(graph, report=rep).run({"x": x})["y"]
    assert rep["precision"]["assigned"] == {"conv": "int8"}
    inv = np.float32(1.0 / np.float64(np.float32(sx)))
    xq = np.clip(np.rint(x * inv) + zp, -128, 127).astype(np.int64)
    xq = np.pad(xq, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=zp)  # padding quantises to zp
    acc = conv_ref(xq, wq.astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(y, acc.astype(np.float32) * (ws * np.float32(sx)).reshape(1, -1, 1, 1))
    # the op library's reference of the form (what tilecore compare and evaluate use) agrees
    from tilecore.ir.graph import evaluate

    np.testing.assert_array_equal(evaluate(graph, {"x": x})["y"], y)


def test_qtable_and_errors(tmp_path):
    from tilecore.compiler.precision import load_qtable

    w = randn(16, 16, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="first"),
             helper.make_node("Conv", ["c", "w"], ["y"], name="second")]
    model = make_model(nodes, [("x", [1, 16, 4, 4], np.float32)], ["y"], [("w", w)])
    (tmp_path / "t.txt").write_text("# per node\nsecond bf16\n")
    (tmp_path / "t.json").write_text(json.dumps({"second": "bf16"}))
    assert load_qtable(str(tmp_path / "t.txt")) == load_qtable(str(tmp_path / "t.json")) == {"second": "bf16"}
    rep = {}
    tilecore.compile(model, qtable={"second": "bf16"}, report=rep)
    assert rep["precision"]["assigned"] == {"second": "bf16"}
    with pytest.raises(CompileError, match="precision `f8`"):
        tilecore.compile(model, precision="f8")
    with pytest.raises(CompileError, match="qtable: node `first` has precision `int4`"):
        tilecore.compile(model, qtable={"first": "int4"})
    with pytest.raises(CompileError, match="calib_samples"):
        tilecore.compile(model, precision="int8")
    with pytest.raises(CompileError, match="calib"):
        tilecore.compile(model, precision="int8", calib=3.0)
    with pytest.raises(CompileError, match=r"thresholds must be finite and >= 0 \(0: zero on every sample\): `x` = nan"):
        tilecore.compile(model, precision="int8", calib={"x": float("nan")})
    with pytest.raises(CompileError, match="qtable: no node named `third`"):
        tilecore.compile(model, qtable={"third": "bf16"})


def test_auto_mixed_moves_the_most_sensitive_node_first():
    """Two Convs; the first one's input has one huge outlier in the calibration samples, so
    its int8 steps are coarse: auto_mixed must move that Conv to bf16 first (and say so).
    (Data of its own: the shared generator's state depends on which tests ran before.)"""
    rng = np.random.default_rng(0)

    def randn(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w1, w2 = randn(16, 16, 1, 1, scale=0.3), randn(16, 16, 1, 1, scale=0.3)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="coarse"),
             helper.make_node("Conv", ["c", "w2"], ["y"], name="fine")]
    model = make_model(nodes, [("x", [1, 16, 6, 6], np.float32)], ["y"], [("w1", w1), ("w2", w2)])
    samples = {"x": randn(4, 1, 16, 6, 6)}
    samples["x"][:, :, 0, 0, 0] = 400.0  # the outlier sets x's threshold: the rest rounds to a few levels
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, auto_mixed=0.999, report=rep)
    info = rep["auto_mixed"]
    assert info["moved"] == ["coarse"] and info["met"] and info["cosine"] >= 0.999
    assert info["rounds"][0]["cosine"] < 0.999 and rep["precision"]["assigned"]["coarse"] == "bf16"
    assert rep["precision"]["assigned"]["fine"] == "int8"
    ref = make_model(nodes, [("x", [1, 16, 6, 6], np.float32)], ["y"], [("w1", w1), ("w2", w2)])
    x = samples["x"][0]
    want = tilecore.compile(ref).run({"x": x})["y"]
    got = exe.run({"x": x})["y"]
    from tilecore.compiler.compare import metrics
    assert metrics(got, want)["cosine"] >= 0.999


@pytest.mark.parametrize("precision", ["f16", "bf16"])
def test_conv_transpose_narrow_matches_onnxruntime_on_rounded_operands(precision):
    import onnxruntime as ort

    x, w, b = randn(1, 6, 7, 7), randn(6, 4, 3, 3, scale=0.3), randn(4)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", strides=[2, 2], pads=[1, 1, 1, 1])
    model = make_model([node], [("x", [1, 6, 7, 7], np.float32)], ["y"], [("w", w), ("b", b)])
    rep = {}
    y = tilecore.compile(model, precision=precision, report=rep).run({"x": x})["y"]
    assert rep["precision"]["assigned"] == {"up": precision}
    r32 = lambda a: rounded(a, precision).astype(np.float32)
    ref_model = make_model([node], [("x", [1, 6, 7, 7], np.float32)], ["y"], [("w", r32(w)), ("b", b)])
    sess = ort.InferenceSession(ref_model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": r32(x)})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    full = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(full - ref).max() > 10 * np.abs(y - ref).max()
