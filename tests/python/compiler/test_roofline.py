"""The roofline bound of each op (include/tilecore/compiler/roofline.h, docs/compiler.md
"Roofline"): the formula against figures computed here by hand from TC1's parameters
(docs/tc1.md), each step's and each layer-group member's bound in a run's statistics, and
the profile's ratio of measured cycles to the bound."""
import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore.cli.runtime import format_profile
from tilecore.compiler import _ffi

from test_driver import make_model
from test_layer_groups import bottleneck

RNG = np.random.default_rng(5)

# docs/tc1.md, "Parameters": MAC/cycle a core by precision, bandwidths in bytes/cycle
MM_PEAK = {"int8": 16 * 32 * 4, "f16": 16 * 32 * 2, "bf16": 16 * 32 * 2, "f32": 16 * 16}
DDR, L2, VEC = 64, 256, 256


@pytest.mark.parametrize("precision", ["f32", "bf16", "int8"])
def test_matrix_op_bound_by_compute_or_memory(precision):
    macs, cores = 10 ** 9, 4
    compute = macs / (MM_PEAK[precision] * cores)
    for ddr_bytes, bound in ((1000, "compute"), (10 ** 9, "memory")):
        r = _ffi.OpRoofline("mm", macs, precision, 0, ddr_bytes, 0, cores, 0)
        assert r["compute_cycles"] == compute and r["memory_cycles"] == ddr_bytes / DDR
        assert r["cycles"] == max(compute, ddr_bytes / DDR) and r["bound"] == bound


def test_vector_ops_and_levels():
    # a depthwise Conv: a multiply and an add of the 4-byte accumulator per MAC
    r = _ffi.OpRoofline("vec", 9000, "int8", 4000, 0, 0, 2, 0)
    assert r["compute_cycles"] == 9000 * 2 * 4 / (VEC * 2)
    # no MACs: one pass over the output; L2 and DDR move data at once (the larger)
    r = _ffi.OpRoofline("vec", 0, "f32", 1 << 20, 1 << 16, 1 << 20, 4, 0)
    assert r["compute_cycles"] == (1 << 20) / (VEC * 4)
    assert r["memory_cycles"] == max((1 << 16) / DDR, (1 << 20) / L2) == (1 << 12)


@pytest.mark.parametrize("precision,rows,engine,rate", [
    # a depthwise Conv: one useful row of the block's 16 (int8 2048 / 16 = 128 MAC/cycle a
    # core); in f32 the matrix engine's 256 / 16 = 16 is under the vector engine's 32
    ("int8", 1, "mm", 2048 / 16), ("bf16", 1, "mm", 1024 / 16), ("f32", 1, "vec", VEC / 8),
    # 8 output channels a group fill half the rows; 16 or more fill them all
    ("int8", 8, "mm", 2048 / 2), ("f32", 8, "mm", 256 / 2), ("f32", 24, "mm", 256),
])
def test_grouped_conv_fills_the_rows_its_groups_can(precision, rows, engine, rate):
    macs, cores = 3 * 10 ** 6, 4
    r = _ffi.OpRoofline("mm", macs, precision, 0, 0, 0, cores, rows)
    assert r["engine"] == engine and r["compute_cycles"] == pytest.approx(macs / (rate * cores))


@pytest.mark.parametrize("args,match", [
    (("tensor", 1, "f32", 0, 0, 0, 4, 0), "engine `tensor`"),
    (("mm", 1, "fp8", 0, 0, 0, 4, 0), "precision `fp8`"),
    (("mm", 1, "f32", 0, 0, 0, 0, 0), "cores"),
    (("mm", -1, "f32", 0, 0, 0, 4, 0), "negative"),
    (("mm", 1, "f32", 0, 0, 0, 4, -2), "group_rows"),
])
def test_bad_arguments_are_named(args, match):
    with pytest.raises(ValueError, match=match):
        _ffi.OpRoofline(*args)


def test_each_step_carries_its_bound_and_the_profile_the_ratio():
    # Conv 16 -> 32 channels, 3x3, 14x14, then a Tanh: two steps (no layer group; a
    # Sigmoid would be computed in the Conv's epilogue)
    w, b = RNG.standard_normal((32, 16, 3, 3)).astype(np.float32), RNG.standard_normal(32).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Tanh", ["c"], ["y"], name="tanh")]
    model = make_model(nodes, [("x", [1, 16, 14, 14], np.float32)], ["y"], [("w", w), ("b", b)])
    exe = tilecore.compile(model, group=False)
    exe.run({"x": RNG.standard_normal((1, 16, 14, 14)).astype(np.float32)})
    st = exe.stats()
    ops = {o["name"]: o for o in st["ops"]}
    macs = 32 * 16 * 9 * 14 * 14
    conv_bytes = 4 * (16 * 196 + w.size + b.size + 32 * 196)  # x, w, b, y once through DDR
    assert ops["conv"]["roofline_cycles"] == max(macs / (MM_PEAK["f32"] * 4), conv_bytes / DDR)
    y_bytes = 4 * 32 * 196
    assert ops["tanh"]["roofline_cycles"] == max(y_bytes / (VEC * 4), 2 * y_bytes / DDR)
    assert st["roofline_cycles"] == ops["conv"]["roofline_cycles"] + ops["tanh"]["roofline_cycles"]
    assert all(o["cycles"] >= o["roofline_cycles"] for o in st["ops"])  # a bound no plan beats
    text = format_profile(st, exe)
    row = next(ln for ln in text.splitlines() if ln.startswith("conv "))
    assert f"{ops['conv']['cycles'] / ops['conv']['roofline_cycles']:.1f}x" in row.split()
    assert f"took {st['cycles'] / st['roofline_cycles']:.2f}x that" in text


def test_a_grouped_conv_step_is_bound_by_the_rows_its_groups_fill():
    # 256 -> 256 channels in 32 groups of 8, 5x5: the matrix engine fills 8 rows of 16
    w = RNG.standard_normal((256, 8, 5, 5)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=32, pads=[2, 2, 2, 2])]
    model = make_model(nodes, [("x", [1, 256, 28, 28], np.float32)], ["y"], [("w", w)])
    exe = tilecore.compile(model, group=False)
    exe.run({"x": RNG.standard_normal((1, 256, 28, 28)).astype(np.float32)})
    conv = next(o for o in exe.stats()["ops"] if o["name"] == "conv")
    macs = 256 * 8 * 25 * 28 * 28
    assert 4 * (2 * 256 * 784 + w.size) / DDR < macs / (MM_PEAK["f32"] / 2 * 4)  # compute-bound
    assert conv["roofline_cycles"] == macs / (MM_PEAK["f32"] / 2 * 4)


def test_a_group_member_reads_its_intermediates_from_l2():
    rep = {}
    exe = tilecore.compile(bottleneck(), report=rep)
    exe.run({"x": RNG.standard_normal((1, 32, 14, 14)).astype(np.float32)})
    (step,) = exe.stats()["ops"]
    members = {m["node"]: m for m in step["members"]}
    # conv2 (16 -> 16, 3x3) reads conv1's Relu output and writes its own in L2; only its
    # weights come from DDR, with any later member's it fetches into L2
    act = 4 * 16 * 14 * 14
    w2 = 4 * 16 * 16 * 9
    macs = 16 * 16 * 9 * 14 * 14
    fetched = sum(e["bytes_during"].get("conv2", 0) for e in rep["groups"][0]["prefetch"].values())
    assert members["conv2"]["roofline_cycles"] == max(macs / (MM_PEAK["f32"] * 4), (w2 + fetched) / DDR,
                                                      (2 * act + fetched) / L2)
    assert step["roofline_cycles"] == pytest.approx(sum(m["roofline_cycles"] for m in step["members"]))
    assert all(m["cycles"] >= m["roofline_cycles"] for m in step["members"])


def test_prefetched_weights_count_at_l2_for_their_reader():
    """conv2's 256 KiB of weights, copied into L2 while conv0 and conv1 run, reach conv2 at
    L2's bandwidth: its bound counts them there, and stays below what it measures. The
    members they are copied during count them at the DDR (and written into L2), so that the
    sum of the bounds keeps every byte read from the DDR."""
    from test_weight_prefetch import compute_then_ddr_bound

    rep = {}
    exe = tilecore.compile(compute_then_ddr_bound(), report=rep)
    pf = rep["groups"][0]["prefetch"]
    assert pf["w2"]["bytes"] == 256 * 256 * 4
    assert sum(pf["w2"]["bytes_during"].values()) == pf["w2"]["bytes"]
    assert set(pf["w2"]["bytes_during"]) == set(pf["w2"]["during"])
    exe.run({"x": RNG.standard_normal((1, 64, 32, 32)).astype(np.float32)})
    (step,) = exe.stats()["ops"]
    members = {m["node"]: m for m in step["members"]}
    conv2 = members["conv2"]
    macs, w2 = 256 * 256 * 16, 256 * 256 * 4
    b, y = 4 * 256 * 16, 4 * 256 * 16  # its input (conv1's output, in L2) and the group's output
    assert conv2["roofline_cycles"] == max(macs / (MM_PEAK["f32"] * 4), y / DDR, (b + w2) / L2)
    assert conv2["cycles"] >= conv2["roofline_cycles"]
    # conv0 (64 -> 64, 3x3 over 32 x 32): x and w0 from the DDR, its output to L2, and what
    # of w1 and w2 it fetches
    x, w0, a = 4 * 64 * 32 * 32, 4 * 64 * 64 * 9, 4 * 64 * 32 * 32
    fetched = sum(e["bytes_during"].get("conv0", 0) for e in pf.values())
    assert fetched > 0
    conv0_macs = 64 * 64 * 9 * 32 * 32
    assert members["conv0"]["roofline_cycles"] == max(conv0_macs / (MM_PEAK["f32"] * 4), (x + w0 + fetched) / DDR,
                                                      (a + fetched) / L2)
    assert members["conv0"]["cycles"] >= members["conv0"]["roofline_cycles"]


def test_a_depthwise_member_counts_its_macs():
    """A MobileNet block as one layer group: the depthwise member reports its MACs
    (channels x taps x positions) although no matrix command computes them, and its bound
    counts them at the vector engine's peak (f32)."""
    c, hw = 32, 14
    w1, wd, w2 = (RNG.standard_normal(s).astype(np.float32) * 0.2 for s in ((c, 16, 1, 1), (c, 1, 3, 3), (16, c, 1, 1)))
    nodes = [helper.make_node("Conv", ["x", "w1"], ["e"], name="expand"),
             helper.make_node("Conv", ["e", "wd"], ["d"], name="dw", group=c, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["d", "w2"], ["y"], name="project")]
    model = make_model(nodes, [("x", [1, 16, hw, hw], np.float32)], ["y"], [("w1", w1), ("wd", wd), ("w2", w2)])
    exe = tilecore.compile(model)
    exe.run({"x": RNG.standard_normal((1, 16, hw, hw)).astype(np.float32)})
    (step,) = exe.stats()["ops"]
    dw = next(m for m in step["members"] if m["node"] == "dw")
    macs = c * 9 * hw * hw
    assert dw["macs"] == macs
    act = 4 * c * hw * hw
    assert dw["roofline_cycles"] == max(macs * 2 * 4 / (VEC * 4), 4 * wd.size / DDR, 2 * act / L2)
