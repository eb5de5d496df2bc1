"""The handoff between layer-group members (docs/compiler.md, "Handoff"): a member's first
loads of the group's inputs are issued by the member before it, spread over its work when
that member leaves the DDR idle (early, into L1 of their own), else after its work and before
the barrier (late). Checked bit for bit against the same group without it and against ONNX
Runtime, with every L1/L2 access ordered (the simulator's hazard mode), and for the cycles it
saves."""
import re

import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import compiler, ir, runtime
from tilecore.compiler import estimate_cost

from test_driver import make_model, ort_run

RNG = np.random.default_rng(53)
TARGET = "npu -cores=4"


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# The checker takes a strided access by its bounding range: an mm reading one column piece
# of A in L1 and the DMA bringing the next (its bounding range overlaps) are reported, in a
# group with or without the handoff; and one strided store run by two cores (each its own
# columns of the rows), as for the DDR.
COLUMN_PIECES = re.compile(r"^(RAW|WAR) hazard on l1\[\d+\] .*core \d+ (din .*`dma\.in l1:.* mm .*`mma?\.|"
                           r"mm .*`mma?\..* din .*`dma\.in l1:)")
SAME_STORE = re.compile(r"^WAW hazard on l2 .* (din|dout) pc (\d+) \(`[^`]*`\) and core \d+ \1 pc \2 ")


def ordered(messages):
    return [m for m in messages if not COLUMN_PIECES.match(m) and not SAME_STORE.match(m)]


def dense_norm_dense(rows=128, d=256, f=512):
    """x [rows, d] -> MatMul + bias -> LayerNormalization -> MatMul + bias -> y [rows, f]:
    the first dense and the norm hand their first loads on; the norm reads no weights, so
    the second dense's first weight pieces come early, during the norm."""
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="dense1"),
             helper.make_node("Add", ["m1", "b1"], ["h"], name="bias1"),
             helper.make_node("LayerNormalization", ["h", "g", "beta"], ["n"], name="norm", axis=-1, epsilon=1e-5),
             helper.make_node("MatMul", ["n", "w2"], ["m2"], name="dense2"),
             helper.make_node("Add", ["m2", "b2"], ["y"], name="bias2")]
    inits = [("w1", randn(d, d, scale=0.06)), ("b1", randn(d, scale=0.1)), ("g", 1 + randn(d, scale=0.1)),
             ("beta", randn(d, scale=0.1)), ("w2", randn(d, f, scale=0.06)), ("b2", randn(f, scale=0.1))]
    return make_model(nodes, [("x", [rows, d], np.float32)], ["y"], inits)


def compile_group(model, monkeypatch, handoff=None, **kw):
    """The model compiled, GroupKernels' handoff as the driver chooses it (None) or forced:
    (executable, report)."""
    group_kernels = compiler.GroupKernels

    def forced(*args, **kwargs):
        return group_kernels(*args, **{**kwargs, "handoff": handoff})

    if handoff is not None:
        monkeypatch.setattr(compiler, "GroupKernels", forced)
    rep = {}
    exe = tilecore.compile(model, report=rep, **kw)
    monkeypatch.setattr(compiler, "GroupKernels", group_kernels)
    return exe, rep


def check_handed(model, exe, plain, x, hazard_checked, min_cosine):
    """``exe`` (a group with the handoff) run on ``x`` (input name -> array): every access
    ordered, the bits of ``plain`` (the group without it), ONNX Runtime's output within
    ``min_cosine``, and fewer cycles than ``plain``, which it returns."""
    y = exe.run(x)["y"]
    assert ordered(hazard_checked()) == []
    np.testing.assert_array_equal(y, plain.run(x)["y"])
    ref = ort_run(model, x)["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > min_cosine
    runtime.npu_configure(0, TARGET)
    exe.run(x)
    with_cycles = exe.stats()["cycles"]
    plain.run(x)
    assert with_cycles < plain.stats()["cycles"]
    return with_cycles


@pytest.mark.parametrize("precision", ["int8", "f32"])
def test_handoff_keeps_the_bits_and_saves_cycles(precision, monkeypatch, hazard_checked):
    model = dense_norm_dense()
    x = randn(128, 256)
    kw = {"precision": precision}
    if precision == "int8":
        kw["calib_samples"] = {"x": randn(4, 128, 256)}
    exe, rep = compile_group(model, monkeypatch, **kw)
    plain, rep_plain = compile_group(model, monkeypatch, "none", **kw)
    assert len(rep["groups"]) == 1 and len(rep["groups"][0]["members"]) == 3
    (func,) = [f for f in rep["npu_funcs"].values() if "tc_group_member" in str(f)]
    text = str(func)
    assert "tir.drain()" in text and '"tc_handoff": 1' in text
    (func_plain,) = [f for f in rep_plain["npu_funcs"].values() if "tc_group_member" in str(f)]
    assert "tir.drain" not in str(func_plain)
    with_cycles = check_handed(model, exe, plain, {"x": x}, hazard_checked, 0.99999 if precision == "f32" else 0.999)
    # the cost model follows the handoff's fence and barriers (docs/cost_model.md)
    assert abs(estimate_cost(func, TARGET)["cycles"] / with_cycles - 1) < 0.1


def quantise_after_a_donor():
    """Member 0 (Relu of x) fetches w into L2 for member 2 (Add of w and v); member 1
    quantises the Relu's output with a scale and zero point from the DDR, which member 0
    loads for it after its own work: its small buffers lie where member 0's prefetch cursor
    was, so they must come after the last of member 0's pieces."""
    n, m = 4096, 128 << 10
    s, t = compiler.TensorSpec((1, n), "float32"), compiler.TensorSpec((1, m), "float32")
    one = compiler.TensorSpec((), "float32")
    zp = compiler.TensorSpec((), "int8")
    q = compiler.TensorSpec((1, n), "int8")
    funcs = [compiler.LowerOp("Relu", {}, [s], [s], TARGET),
             compiler.LowerOp("QuantizeLinear", {"tc_in_l2": [0]}, [s, one, zp], [q], TARGET),
             compiler.LowerOp("Add", {"tc_in_l2": [0]}, [t, t], [t], TARGET)]
    # ids: x 0, h 1, scale 2, zero point 3, q 4, w 5, v 6, y 7
    args = [[0, 1], [1, 2, 3, 4], [5, 6, 7]]
    return funcs, args, n, m


def test_a_late_handoff_follows_the_donors_pieces(hazard_checked):
    funcs, args, n, m = quantise_after_a_donor()
    rows = [[5, 0, 0, m * 4]]
    g = compiler.GroupKernels(funcs, args, [0, 2, 3, 5, 6], [4, 7], "group", rows)
    assert [[int(v) for v in r] for r in g.attrs["prefetch"]] == rows
    assert "tir.drain()" in ir.script(g.body)  # the Quantize's scale is handed to the Relu
    x, w, v = randn(1, n), randn(1, m), randn(1, m)
    scale, zero = np.array(0.02, np.float32), np.array(-3, np.int8)
    qy, y = np.zeros((1, n), np.int8), np.zeros((1, m), np.float32)
    tilecore.build(g, target=TARGET)["group"](x, scale, zero, w, v, qy, y)
    want = np.clip(np.rint(np.maximum(x, 0) / scale) - 3, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(qy, want)
    np.testing.assert_array_equal(y, w + v)
    assert hazard_checked() == []


def test_group_kernels_names_a_bad_handoff():
    funcs, args, n, m = quantise_after_a_donor()
    with pytest.raises(ValueError, match="handoff 'sometimes': one of none, late, early"):
        compiler.GroupKernels(funcs, args, [0, 2, 3, 5, 6], [4, 7], "group", handoff="sometimes")
    from tilecore.compiler import _ffi

    with pytest.raises(ValueError, match=r"handoff 5 \(0 none, 1 late, 2 early\)"):
        _ffi.GroupKernels(list(funcs), args, [0, 2, 3, 5, 6], [4, 7], "group", [], 4 << 20, 1 << 20, 5, True, 1, [])


def test_weights_in_l2_a_member_early_are_handed_into_l1(monkeypatch, hazard_checked):
    """The BERT-like layer in int8: the attention output's weights are fetched into L2
    during the QKV projection, two members before their reader, so the attention (the
    member between) loads them into L1 for it (a handoff from L2). The same bits as
    without that plan, hazard-free, and fewer cycles."""
    from tilecore import zoo
    from tilecore.compiler import weight_prefetch as wp

    path = zoo.export("bert_layer")
    calib = zoo.sample_inputs("bert_layer", 4, seed=0)
    x = {k: v[0] for k, v in zoo.sample_inputs("bert_layer", 1, seed=1).items()}
    rep = {}
    exe = tilecore.compile(path, precision="int8", calib_samples=calib, report=rep)
    monkeypatch.setattr(wp, "HANDOFF_SHARE", 0.0)  # (no plan then fetches a member earlier)
    plain = tilecore.compile(path, precision="int8", calib_samples=calib)
    (fetch,) = rep["groups"][0]["prefetch"].values()
    assert fetch["reader"] == "/attention/output/dense/MatMul"
    assert fetch["during"] == ["/attention/self/query/MatMul"]
    y = exe.run(x)
    # (the cores' strided stores of one output's columns to L2 are reported by their
    # bounding ranges, as SAME_STORE's)
    stores = re.compile(r"^WAW hazard on l2 .*`dma\.(in|out) l2:\S+ l1:.*`dma\.(in|out) l2:\S+ l1:")
    assert [m for m in ordered(hazard_checked()) if not stores.match(m)] == []
    y_plain = plain.run(x)
    for name in y:
        np.testing.assert_array_equal(y[name], y_plain[name])
    runtime.npu_configure(0, TARGET)
    exe.run(x)
    cycles = exe.stats()["cycles"]
    plain.run(x)
    assert cycles < plain.stats()["cycles"]


def test_late_handoff_spreads_its_loads_over_both_engines(monkeypatch, hazard_checked):
    """MobileNetV2's expansion then depthwise Conv in int8 on a 14x14 map: the depthwise
    Conv's weights, bias and scales (three loads from the DDR, each paying its latency) are
    handed to the expansion after its work, and go on both DMA engines (a copy on the DMA-out
    engine is a tile.dma_prefetch), not one after another on the DMA-in engine. The same bits
    as without the handoff, ONNX Runtime's result within int8's error, every access ordered,
    fewer cycles."""
    c, m = 32, 192
    nodes = [helper.make_node("Conv", ["x", "w1"], ["e"], name="expand"),
             helper.make_node("Clip", ["e", "lo", "hi"], ["r"], name="relu6"),
             helper.make_node("Conv", ["r", "w2"], ["y"], name="depthwise", group=m, pads=[1, 1, 1, 1])]
    inits = [("w1", randn(m, c, 1, 1, scale=0.2)), ("w2", randn(m, 1, 3, 3, scale=0.3)),
             ("lo", np.array(0, np.float32)), ("hi", np.array(6, np.float32))]
    model = make_model(nodes, [("x", [1, c, 14, 14], np.float32)], ["y"], inits)
    kw = {"precision": "int8", "calib_samples": {"x": randn(4, 1, c, 14, 14)}}
    exe, rep = compile_group(model, monkeypatch, "late", **kw)
    plain, _ = compile_group(model, monkeypatch, "none", **kw)
    (func,) = [f for f in rep["npu_funcs"].values() if "tc_group_member" in str(f)]
    handed = str(func).split("tir.drain()")[1].split("tc_group_member")[0]
    assert "tile.dma_copy(" in handed and "tile.dma_prefetch(" in handed
    x = randn(1, c, 14, 14)
    check_handed(model, exe, plain, {"x": x}, hazard_checked, 0.999)


def squeeze_excite(r, silu, cin=112, c=672):
    """EfficientNet's squeeze-excite at its 7x7 stage, int8: expansion, global pooling, fc1 to
    ``r`` channels (SiLU, or Relu), fc2 with the sigmoid gate, the excite in the projection:
    (model, compile keywords)."""
    act = ([helper.make_node("Sigmoid", ["f1"], ["s1"], name="silu_gate"),
            helper.make_node("Mul", ["f1", "s1"], ["h"], name="silu")] if silu else
           [helper.make_node("Relu", ["f1"], ["h"], name="fc1_relu")])
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["e"], name="expand"),
             helper.make_node("Relu", ["e"], ["a"], name="relu"),
             helper.make_node("GlobalAveragePool", ["a"], ["g"], name="squeeze"),
             helper.make_node("Conv", ["g", "w1", "b1"], ["f1"], name="fc1"), *act,
             helper.make_node("Conv", ["h", "w2", "b2"], ["f2"], name="fc2"),
             helper.make_node("Sigmoid", ["f2"], ["s"], name="gate"),
             helper.make_node("Mul", ["a", "s"], ["m"], name="excite"),
             helper.make_node("Conv", ["m", "w3", "b3"], ["y"], name="project")]
    inits = [("w0", randn(c, cin, 1, 1, scale=0.2)), ("b0", randn(c, scale=0.1)),
             ("w1", randn(r, c, 1, 1, scale=0.2)), ("b1", randn(r, scale=0.1)),
             ("w2", randn(c, r, 1, 1, scale=0.2)), ("b2", randn(c, scale=0.1)),
             ("w3", randn(cin, c, 1, 1, scale=0.1)), ("b3", randn(cin, scale=0.1))]
    model = make_model(nodes, [("x", [1, cin, 7, 7], np.float32)], ["y"], inits)
    return model, {"precision": "int8", "calib_samples": {"x": randn(4, 1, cin, 7, 7)}}


def test_a_single_items_loads_are_handed_on_in_its_core_guard(monkeypatch, hazard_checked):
    """A squeeze-excite in int8 (EfficientNet's: expansion, global pooling, fc1 with SiLU,
    fc2 with the sigmoid gate, the excite in the projection, at its 7x7 stage): fc1 is one
    item (28 output channels over one position), which core 0 alone runs inside
    `if c == 0`, after filling its SiLU's table. Its scales, bias and weights are handed to
    the pooling before it, each in that guard (the other cores load nothing), so they are
    in L1 before fc1 starts. The same bits as without the handoff, ONNX Runtime's result
    within int8's error, every access ordered, fewer cycles."""
    model, kw = squeeze_excite(28, silu=True)
    exe, rep = compile_group(model, monkeypatch, "late", **kw)
    plain, _ = compile_group(model, monkeypatch, "none", **kw)
    (func,) = [f for f in rep["npu_funcs"].values() if "tc_group_member" in str(f)]
    text = ir.script(func)
    # (the pooling's cores loop ends with its own work drained, then core 0's loads for fc1)
    (handed,) = re.findall(r"tir\.drain\(\)\n((?:\s+if c\w* == 0:\n\s+tile\.dma_\w+\(.*\n)+)", text)
    # (its scales, bias and weights: the names the Conv gives them, a suffix the script adds)
    loaded = [re.search(r"dma_\w+\(([A-Za-z]+)", line).group(1) for line in handed.splitlines()[1::2]]
    assert loaded == ["Sl", "Bl", "Al"]
    x = randn(1, 112, 7, 7)
    check_handed(model, exe, plain, {"x": x}, hazard_checked, 0.99)


def test_an_item_a_cores_loads_are_handed_early_in_their_guard(monkeypatch, hazard_checked):
    """The same squeeze-excite with fc1 to 48 channels: two items of 24, one each on cores
    0 and 1 inside `if c < 2`. Its scales, bias and weights are handed early to the pooling
    before it (which reads no weights), spread over its work in that guard, so the cores
    that run fc1's items have them in L1 when it starts; handed late they are not taken
    (after the pooling drained, they gained fc1 less than they cost the pooling). The same
    bits as without the handoff, ONNX Runtime's result within int8's error, every access
    ordered, fewer cycles."""
    model, kw = squeeze_excite(48, silu=False)
    exe, rep = compile_group(model, monkeypatch, "early", **kw)
    plain, _ = compile_group(model, monkeypatch, "none", **kw)
    (func,) = [f for f in rep["npu_funcs"].values() if "tc_group_member" in str(f)]
    pooling = ir.script(func).split("for c_2 in cores")[0].split("for c_1 in cores")[1]
    for buffer in ("Sl", "Bl"):  # fc1's scales and bias, each in its guard, before the drain
        assert re.search(r"if c_1 < 2:\n\s+tile\.dma_\w+\(" + buffer + r"\[0:24", pooling.split("tir.drain()")[0])
    _, rep_late = compile_group(model, monkeypatch, "late", **kw)
    (func_late,) = [f for f in rep_late["npu_funcs"].values() if "tc_group_member" in str(f)]
    assert "if c_1 < 2" not in ir.script(func_late).split("for c_2 in cores")[0]
    x = randn(1, 112, 7, 7)
    check_handed(model, exe, plain, {"x": x}, hazard_checked, 0.99)
