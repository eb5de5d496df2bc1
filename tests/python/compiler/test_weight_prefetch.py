"""Weight prefetch inside layer groups (docs/compiler.md, "Weight prefetch"): a member the
DDR bounds reads its weights from L2, copied there on the DMA-out engines during earlier
members. Checked against ONNX Runtime and numpy, with every L1/L2 access ordered (the
simulator's hazard mode), for the cycles it saves, and the planner against hand-worked
budgets."""
import re

import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import compiler, ir, runtime
from tilecore.compiler import weight_prefetch as wp

from test_driver import excite_nodes, make_model, ort_run

RNG = np.random.default_rng(47)
TARGET = "npu -cores=4"


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def compute_then_ddr_bound():
    """A 3x3 Conv the matrix engine bounds, a strided 1x1 down to 4x4, then a 1x1 Conv of
    256 KiB of f32 weights over 16 positions (the DDR bounds it: 4096 cycles for its
    weights, 1024 for its MACs)."""
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ra"], name="relu0"),
             helper.make_node("Conv", ["ra", "w1"], ["b"], name="conv1", strides=[8, 8]),
             helper.make_node("Conv", ["b", "w2"], ["y"], name="conv2")]
    inits = [("w0", randn(64, 64, 3, 3, scale=0.05)), ("w1", randn(256, 64, 1, 1, scale=0.1)),
             ("w2", randn(256, 256, 1, 1, scale=0.06))]
    return make_model(nodes, [("x", [1, 64, 32, 32], np.float32)], ["y"], inits)


def test_a_ddr_bound_member_reads_its_weights_from_l2(monkeypatch, hazard_checked):
    model = compute_then_ddr_bound()
    x = randn(1, 64, 32, 32)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert [g["nodes"] for g in rep["groups"]] == [["conv0", "conv1", "conv2"]]
    pf = rep["groups"][0]["prefetch"]
    # conv1's weights (64 KiB over its DDR-heavy 1x1) may come from L2 too
    assert set(pf) <= {"w1", "w2"} and pf["w2"]["reader"] == "conv2" and pf["w2"]["bytes"] == 256 * 256 * 4
    assert set(pf["w2"]["during"]) <= {"conv0", "conv1"}
    y = exe.run({"x": x})["y"]
    np.testing.assert_allclose(y, ort_run(model, {"x": x})["y"], rtol=1e-4, atol=1e-4)
    hazards = unordered_copies(hazard_checked())
    b = exe.stats()["bytes"]
    with_cycles = exe.stats()["cycles"]

    monkeypatch.setattr(wp, "MIN_BYTES", 1 << 40)  # the same group, no prefetch
    rep2 = {}
    plain = tilecore.compile(model, report=rep2)
    assert rep2["groups"][0]["prefetch"] == {}
    y2 = plain.run({"x": x})["y"]
    np.testing.assert_allclose(y2, y, rtol=1e-5, atol=1e-5)
    b2 = plain.stats()["bytes"]
    # the copies into L2 are ordered with every access: no hazard but those the group
    # has without them (strided stores of two cores reported by their bounding ranges)
    assert not any("ddr:" in h for h in hazards)
    # (those: two cores' stores out of L1 whose bounding ranges overlap, as without them)
    assert all(h.startswith("WAW") and h.count("l1:") == 2 for h in hazards)
    assert all(h.startswith("WAW") and h.count("l1:") == 2 for h in unordered_copies(hazard_checked()))
    # the weights cross the DDR once either way, and L2 twice more (written, then read)
    assert b["ddr_read"] == b2["ddr_read"]
    assert b["l2_written"] >= b2["l2_written"] + 256 * 256 * 4
    # conv2 spent 4096 cycles on its weights over the DDR's 64 B/cycle; from L2, 1024
    assert plain.stats()["cycles"] - with_cycles > 0.4 * 4096


def excite_then_project(size=14):
    """A squeeze-excite block at EfficientNet-B0's features.5 widths: a 1x1 expansion to 672
    channels, the gate of two 1x1 Convs over their global average times them, a projection
    to 112 channels (75,264 bytes of int8 weights) and a 1x1 Conv after it, so that the
    projection's input and output stay in the layer group's L2 and only its weights cross
    the DDR: a fifth of its cycles, all at its start."""
    c, p = 672, 112
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["a"], name="expand"),
             helper.make_node("Relu", ["a"], ["ar"], name="relu0"),
             *excite_nodes("Sigmoid"),
             helper.make_node("Conv", ["m", "wp", "bp"], ["y"], name="project"),
             helper.make_node("Conv", ["y", "wt"], ["z"], name="tail")]
    inits = [("w0", randn(c, p, 1, 1, scale=0.1)), ("b0", randn(c, scale=0.1)),
             ("w1", randn(28, c, 1, 1, scale=0.05)), ("b1", randn(28, scale=0.1)),
             ("w2", randn(c, 28, 1, 1, scale=0.2)), ("b2", randn(c, scale=0.1)),
             ("wp", randn(p, c, 1, 1, scale=0.05)), ("bp", randn(p, scale=0.1)), ("wt", randn(32, p, 1, 1, scale=0.1))]
    return make_model(nodes, [("x", [1, p, size, size], np.float32)], ["z"], inits)


def test_a_projection_waiting_for_its_weights_reads_them_from_l2(monkeypatch, hazard_checked):
    """The projection is not bound by the DDR (its DDR cycles are under READER_DDR_SHARE of
    its own), but its 75,264 bytes of weights, over FETCH_SHARE of them, are what it starts
    with: they are fetched during the members before it, the outputs the same bits as
    without (and ONNX Runtime's within int8 error), no L1 access unordered, fewer cycles."""
    model = excite_then_project()
    samples, x = {"x": randn(4, 1, 112, 14, 14)}, randn(1, 112, 14, 14)
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    assert [g["nodes"] for g in rep["groups"]] == [["expand", "squeeze", "fc1", "fc2", "project", "tail"]]
    pf = rep["groups"][0]["prefetch"]["wp/int8"]
    assert pf["reader"] == "project" and pf["bytes"] == 112 * 672 >= wp.FETCH_MIN_BYTES
    z = exe.run({"x": x})["z"]
    ref = ort_run(model, {"x": x})["z"]
    assert np.abs(z - ref).max() < 0.05 * np.abs(ref).max()
    assert hazard_checked() == []
    cycles = exe.stats()["cycles"]

    monkeypatch.setattr(wp, "FETCH_MIN_BYTES", 1 << 40)  # the rule off: the projection not asked about
    rep2 = {}
    plain = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep2)
    assert "wp/int8" not in rep2["groups"][0]["prefetch"]
    np.testing.assert_array_equal(plain.run({"x": x})["z"], z)
    # its weights took 1,176 cycles of the DDR's 64 bytes a cycle at its start
    assert plain.stats()["cycles"] - cycles > 0.5 * 112 * 672 / 64


def unordered_copies(messages):
    """Hazard messages without their program addresses (the two programs differ)."""
    return [re.sub(r"pc \d+|\[x0 \+ \d+\]", "", m) for m in messages]


def answering(cost):
    """A planner's ``in_l2`` that answers ``cost(tensors)``, and the list of the (member,
    tensors) it was asked about, in order."""
    asked = []

    def in_l2(k, ts):
        asked.append((k, ts))
        return cost(ts)

    return asked, in_l2


def member_costs(*pairs):
    return [{"cycles": c, "ddr_cycles": d} for c, d in pairs]


def test_plan_takes_idle_ddr_from_the_members_just_before_the_reader():
    """Member 2 is DDR-bound and reads weight 5 (300,000 bytes); members 0 and 1 leave
    8,000 DDR cycles idle each, of which SHARES[0] (plan's default share) may go to the prefetch: member 1, nearest
    the reader, gives all it may (in whole 4 KiB), member 0 the rest, first bytes first."""
    costs = member_costs((10000, 2000), (10000, 2000), (20000, 19000))
    rows = [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    asked, in_l2 = answering(lambda ts: (12000, 100))

    out = wp.plan(costs, rows, {1: 60000, 3: 60000, 5: 300000}, [0, 0, 0], 4 << 20, in_l2)
    per_member = int(8000 * wp.SHARES[0] * 64) // 4096 * 4096
    assert per_member < 300000 < 2 * per_member
    assert out == [(5, 0, 0, 300000 - per_member), (5, 1, 300000 - per_member, 300000)]
    # members 0 and 1 are not bound by the DDR, and their weights are under FETCH_MIN_BYTES:
    # not asked
    assert asked == [(2, (5,))]
    # a larger share: member 1 alone gives it all (8,000 x 0.6 x 64 bytes > 300,000)
    assert wp.plan(costs, rows, {1: 60000, 3: 60000, 5: 300000}, [0, 0, 0], 4 << 20, in_l2, share=0.6) == \
        [(5, 1, 0, 300000)]


def test_plan_fetches_an_input_for_its_second_reader():
    """Input 0 (128 KiB, an activation) is read by member 0 and again by the DDR-bound
    member 2: fetched during member 1 for member 2; as a weight (constant) it could not be,
    its first reader being member 0."""
    costs = member_costs((4000, 3000), (10000, 1000), (5000, 4000))
    rows = [[0, 1], [1, 2], [2, 0, 3]]
    asked, in_l2 = answering(lambda ts: (3000, 500))

    out = wp.plan(costs, rows, {}, [0, 0, 0], 4 << 20, in_l2, 0.5, inputs={0: 128 << 10})
    assert out == [(0, 1, 0, 128 << 10)] and asked == [(2, (0,))]
    assert wp.plan(costs, rows, {0: 128 << 10}, [0, 0, 0], 4 << 20, in_l2, 0.5) == []
    # the donors come after the first reader: member 0, idle as it is, gives nothing here
    # (fetched before its first reader, the copy would be that reader's, not member 3's)
    costs = member_costs((20000, 1000), (5000, 4000), (5000, 4000), (5000, 4000))
    rows = [[5, 6], [0, 6, 7], [7, 8], [8, 0, 9]]
    assert wp.plan(costs, rows, {}, [0] * 4, 4 << 20, in_l2, 0.5, inputs={0: 128 << 10}) == []


def test_plan_fetches_two_tensors_for_one_member():
    """Member 2 reads weights 5 (300,000 bytes) and 6 (100,000): the larger is planned first,
    then the other (the member still bound by the DDR), the cost model asked with both in
    L2; member 1 (nearest) gives what its
    share allows (8,000 idle cycles x 0.6 x 64 bytes = 307,200), member 0 the rest."""
    costs = member_costs((10000, 2000), (10000, 2000), (20000, 19000))
    rows = [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    # (still DDR-bound after one)
    asked, in_l2 = answering(lambda ts: (20000 - 4000 * len(ts), 19000 - 8000 * len(ts)))

    out = wp.plan(costs, rows, {5: 300000, 6: 100000}, [0, 0, 0], 4 << 20, in_l2, share=0.6)
    assert asked == [(2, (5,)), (2, (5, 6))]
    # member 1 has 7,200 bytes left after weight 5: 4,096 of them in whole 4 KiB
    assert out == [(5, 1, 0, 300000), (6, 0, 0, 95904), (6, 1, 95904, 100000)]


@pytest.mark.parametrize("case", ["fits_not", "gain_small", "compute_bound", "donors_ddr_bound", "small"])
def test_plan_declines(case):
    costs = member_costs((10000, 2000), (10000, 2000), (20000, 19000))
    weights, live, free, faster = {5: 300000}, [0, 0, 0], 4 << 20, 12000
    if case == "fits_not":
        live = [0, 0, (4 << 20) - 200000]  # the reader's own L2 leaves no room for the weight
    elif case == "gain_small":
        faster = 19500  # under MIN_GAIN of 20,000 cycles
    elif case == "compute_bound":  # (its weight's fetch, 4,688 cycles, under FETCH_SHARE of it)
        costs[2] = {"cycles": 60000, "ddr_cycles": 5000}
    elif case == "donors_ddr_bound":
        costs[0]["ddr_cycles"] = costs[1]["ddr_cycles"] = 9000
    else:
        weights = {5: wp.MIN_BYTES - 1}
    out = wp.plan(costs, [[0, 1, 2], [2, 3, 4], [4, 5, 6]], weights, live, free, lambda k, t: (faster, 100))
    assert out == []


def test_plan_asks_about_a_weight_whose_fetch_its_reader_waits_for():
    """Member 2's DDR cycles are a third of its 9,000 (under READER_DDR_SHARE), but its weight
    5 (300,000 bytes: 4,688 DDR cycles, over FETCH_SHARE of them) is what it starts with:
    asked about and fetched; a weight under FETCH_MIN_BYTES in its place is not asked about."""
    costs = member_costs((10000, 2000), (10000, 2000), (9000, 3000))
    rows = [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    asked, in_l2 = answering(lambda ts: (7000, 100))

    per_member = int(8000 * wp.SHARES[0] * 64) // 4096 * 4096
    out = wp.plan(costs, rows, {5: 300000}, [0, 0, 0], 4 << 20, in_l2)
    assert asked == [(2, (5,))]
    assert out == [(5, 0, 0, 300000 - per_member), (5, 1, 300000 - per_member, 300000)]
    small = wp.FETCH_MIN_BYTES - 1
    assert small / 64 >= wp.FETCH_SHARE * 9000  # (its fetch alone would be enough)
    assert wp.plan(costs, rows, {5: small}, [0, 0, 0], 4 << 20, in_l2) == [] and len(asked) == 1


def test_plan_gives_a_faster_member_idle_ddr_to_the_next():
    """Member 1's weights from L2 (10,000 cycles, no DDR) leave its DDR idle, which
    fetches member 2's with what member 0 has left."""
    costs = member_costs((80000, 1000), (20000, 19000), (20000, 19000))
    rows = [[0, 1], [1, 2, 3], [3, 4, 5]]
    out = wp.plan(costs, rows, {2: 500000, 4: 500000}, [0, 0, 0], 4 << 20, lambda k, t: (10000, 0))
    from_1 = int(10000 * wp.SHARES[0] * 64) // 4096 * 4096
    assert int(79000 * wp.SHARES[0] * 64) - 500000 >= 500000 - from_1  # member 0 has the rest
    assert out == [(2, 0, 0, 500000), (4, 0, 0, 500000 - from_1), (4, 1, 500000 - from_1, 500000)]


def relu_then_add(n, m):
    """Member 0: Relu x -> h (n elements, a group output); member 1: Add(w, v) -> y (m
    elements); ids x 0, h 1, w 2, v 3, y 4."""
    s, t = compiler.TensorSpec((1, n), "float32"), compiler.TensorSpec((1, m), "float32")
    relu = compiler.LowerOp("Relu", {}, [s], [s], TARGET)
    add = compiler.LowerOp("Add", {"tc_in_l2": [0]}, [t, t], [t], TARGET)
    return [relu, add], [[0, 1], [2, 3, 4]]


@pytest.mark.parametrize("l2_bytes,kept", [(4 << 20, True), (300 << 10, False)])
def test_group_kernels_prefetch_and_what_does_not_fit(l2_bytes, kept, hazard_checked):
    """The Relu has no matrix command and one tile: the pieces of w (1 MiB in 32 KiB
    pieces, 8 per core) all go out after its copies. With too little L2 the prefetch is
    dropped and the Add reads w from the DDR: the same sums."""
    n, m = 4096, 256 << 10
    funcs, args = relu_then_add(n, m)
    rows = [[2, 0, 0, 100 << 10], [2, 0, 100 << 10, m * 4]]
    g = compiler.GroupKernels(funcs, args, [0, 2, 3], [1, 4], "group", rows, l2_bytes)
    assert [[int(x) for x in r] for r in g.attrs["prefetch"]] == (rows if kept else [])
    mod = tilecore.build(g, target=TARGET)
    x, w, v = randn(1, n), randn(1, m), randn(1, m)
    h, y = np.zeros((1, n), np.float32), np.zeros((1, m), np.float32)
    mod["group"](x, w, v, h, y)
    np.testing.assert_array_equal(h, np.maximum(x, 0))
    np.testing.assert_array_equal(y, w + v)
    assert hazard_checked() == []


def test_the_short_last_piece_goes_to_the_last_core(hazard_checked):
    """A copy of w that is not whole pieces (1 MiB + 1 KiB over 4 cores: 32 KiB pieces dealt
    from core 0 on, then 1 KiB): the last core, which has the fewest pieces and items, issues
    the short one at the start (on core 0 it held that core's first loads by a DDR latency).
    The same sums, every access ordered."""
    n, m = 4096, (256 << 10) + 256
    funcs, args = relu_then_add(n, m)
    g = compiler.GroupKernels(funcs, args, [0, 2, 3], [1, 4], "group", [[2, 0, 0, m * 4]])
    text = ir.script(g)
    # (the tail: the 1 KiB at 32 pieces of 32 KiB)
    tails = re.findall(r"if c\w* == (\d+):\n\s+tile\.dma_\w+\(l2\[0 \+ 32 \* 32768:[^\n]*\+ 1024\]", text)
    assert [int(k) for k in tails] == [3], tails
    mod = tilecore.build(g, target=TARGET)
    x, w, v = randn(1, n), randn(1, m), randn(1, m)
    h, y = np.zeros((1, n), np.float32), np.zeros((1, m), np.float32)
    mod["group"](x, w, v, h, y)
    np.testing.assert_array_equal(y, w + v)
    assert hazard_checked() == []


def test_one_core_waits_for_its_pieces():
    """On one core no fence ends a cores loop: the fetching member waits for its pieces
    before the reader reads them."""

    n, m = 4096, 256 << 10
    s, t = compiler.TensorSpec((1, n), "float32"), compiler.TensorSpec((1, m), "float32")
    one = "npu -cores=1"
    funcs = [compiler.LowerOp("Relu", {}, [s], [s], one), compiler.LowerOp("Add", {"tc_in_l2": [0]}, [t, t], [t], one)]
    g = compiler.GroupKernels(funcs, [[0, 1], [2, 3, 4]], [0, 2, 3], [1, 4], "group", [[2, 0, 0, m * 4]])
    runtime.npu_configure(0, one)
    try:
        mod = tilecore.build(g, target=one)
        x, w, v = randn(1, n), randn(1, m), randn(1, m)
        h, y = np.zeros((1, n), np.float32), np.zeros((1, m), np.float32)
        mod["group"](x, w, v, h, y)
        np.testing.assert_array_equal(y, w + v)
    finally:
        runtime.npu_configure(0, TARGET)


def test_pieces_go_between_a_pipelined_members_matrix_commands(hazard_checked):
    """A pipelined Conv (1x1, 512 -> 160 channels at 7 x 7: three items of 64, 64 and 32
    channels over four cores) fetches the Add's 128 KiB of w. The pipelined items' loops run
    a count that depends on the core; its matrix commands are counted for the core that runs
    fewest of those that run any, so its pieces go out between them. Counted as if every
    loop ran once and every branch were taken, the pieces waited for the end of its work
    and the group took longer with the prefetch than without it. The same sums as numpy."""
    tgt = TARGET
    xs, ws, ys, m = (1, 512, 7, 7), (160, 512, 1, 1), (1, 160, 7, 7), 32 << 10
    s = compiler.TensorSpec
    conv = compiler.LowerOp("Conv", {"tc_pipeline": 1}, [s(xs, "float32"), s(ws, "float32")], [s(ys, "float32")],
                            tgt)
    x, w = randn(*xs), randn(*ws, scale=0.05)
    a, b = randn(1, m), randn(1, m)
    cycles = {}
    for rows in ([], [[3, 0, 0, m * 4]]):
        t = s((1, m), "float32")
        add = compiler.LowerOp("Add", {"tc_in_l2": [0]} if rows else {}, [t, t], [t], tgt)
        g = compiler.GroupKernels([conv, add], [[0, 1, 2], [3, 4, 5]], [0, 1, 3, 4], [2, 5], "group", rows)
        y, z = np.zeros(ys, np.float32), np.zeros((1, m), np.float32)
        tilecore.build(g, target=tgt)["group"](x, w, a, b, y, z)
        cycles[bool(rows)] = runtime.npu_simulator(0).stats()["cycles"]
        np.testing.assert_allclose(y, np.einsum("mc,nchw->nmhw", w[:, :, 0, 0], x), rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(z, a + b)
    assert cycles[True] < cycles[False], cycles
    assert hazard_checked() == []


def test_a_core_with_fewer_items_issues_its_pieces_during_its_work():
    """A 1x1 Conv over 7 x 7 positions whose items do not split evenly over the cores (448
    output channels: one core runs half the matrix commands of the others) fetches the
    Add's 192 KiB of w. The commands a core runs are counted round by round of its
    items (a round's guard depends on the round), so every core's pieces start before its
    last matrix command ends: none is left to after the core's work, where it would hold
    the member's end. The same sums as numpy."""
    import json

    channels = 448
    xs, ws, ys, m = (1, 256, 7, 7), (channels, 256, 1, 1), (1, channels, 7, 7), 48 << 10
    s = compiler.TensorSpec
    conv = compiler.LowerOp("Conv", {}, [s(xs, "float32"), s(ws, "float32")], [s(ys, "float32")], TARGET)
    t = s((1, m), "float32")
    add = compiler.LowerOp("Add", {"tc_in_l2": [0]}, [t, t], [t], TARGET)
    g = compiler.GroupKernels([conv, add], [[0, 1, 2], [3, 4, 5]], [0, 1, 3, 4], [2, 5], "group",
                              [[3, 0, 0, m * 4]])
    x, w, a, b = randn(*xs), randn(*ws, scale=0.05), randn(1, m), randn(1, m)
    y, z = np.zeros(ys, np.float32), np.zeros((1, m), np.float32)
    runtime.npu_configure(0, TARGET + " -trace")
    try:
        tilecore.build(g, target=TARGET)["group"](x, w, a, b, y, z)
        events = [e for e in json.loads(runtime.npu_simulator(0).trace())["traceEvents"] if e.get("ph") == "X"]
    finally:
        runtime.npu_configure(0, TARGET)
    np.testing.assert_allclose(y, np.einsum("mc,nchw->nmhw", w[:, :, 0, 0], x), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(z, a + b)
    mms = {c: [e for e in events if e["pid"] == c and e["tid"] == 3] for c in range(4)}
    assert len({len(v) for v in mms.values() if v}) > 1, "the cores run as many items: not the case asked for"
    for c, core_mms in mms.items():
        if not core_mms:
            continue
        work_end = max(e["ts"] + e["dur"] for e in core_mms)
        # (DDR -> L2 copies on the core's DMA engines: its pieces, and the Conv's own staging)
        pieces = [e for e in events if e["pid"] == c and e["tid"] in (1, 2)
                  and e["args"].get("ddr_cycles", 0) > 0 and e["args"].get("l2_cycles", 0) > 0]
        assert pieces and all(e["ts"] < work_end for e in pieces), (c, work_end, [e["ts"] for e in pieces])


def test_an_input_read_early_is_fetched_for_its_later_reader(hazard_checked):
    """x is read by member 0 (Relu) and again by member 2 (Add, a residual): fetched into
    L2 during member 1, member 0 still reads it from the DDR and member 2 from L2."""
    n = 64 << 10
    s = compiler.TensorSpec((1, n), "float32")
    funcs = [compiler.LowerOp("Relu", {}, [s], [s], TARGET), compiler.LowerOp("Relu", {}, [s], [s], TARGET),
             compiler.LowerOp("Add", {"tc_in_l2": [0, 1]}, [s, s], [s], TARGET)]
    args = [[0, 1], [1, 2], [2, 0, 3]]  # x 0, a 1, b 2, y 3
    x = randn(1, n)
    l2_read = []
    for rows in ([[0, 1, 0, n * 4]], []):
        g = compiler.GroupKernels(funcs, args, [0], [3], "group", rows)
        assert [[int(v) for v in r] for r in g.attrs["prefetch"]] == rows
        y = np.zeros((1, n), np.float32)
        tilecore.build(g, target=TARGET)["group"](x, y)
        np.testing.assert_array_equal(y, np.maximum(x, 0) + x)
        l2_read.append(runtime.npu_simulator(0).stats()["bytes"]["l2_read"])
    assert l2_read[0] - l2_read[1] == n * 4  # member 2's read of x, from L2
    assert hazard_checked() == []


def test_group_kernels_names_bad_prefetches():
    funcs, args = relu_then_add(1024, 1024)
    bad = {"not an input": [[1, 0, 0, 64]], "not before its last reader": [[2, 1, 0, 64]],
           r"bytes \[0, 8192\)": [[2, 0, 0, 8192]], "tensor, member, begin, end": [[2, 0, 0]],
           "do not cover its 4096 bytes once": [[2, 0, 0, 64]],   # the reader would read the rest unset
           "overlap at byte 2048": [[2, 0, 0, 2048], [2, 0, 1024, 4096]]}
    for message, rows in bad.items():
        with pytest.raises(ValueError, match=message):
            compiler.GroupKernels(funcs, args, [0, 2, 3], [1, 4], "group", rows)


def two_masked_matmuls():
    """Two MatMuls of 16 rows by 256 KiB weights, each followed by a Where choosing per column
    between its output and a broadcast row, and a Relu: (model, the second MatMul's weights)."""
    wq, wk = randn(256, 256, scale=0.1), randn(256, 256, scale=0.1)
    mask = np.arange(256) % 3 == 0
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
             helper.make_node("Where", ["mask", "q", "bq"], ["qb"], name="q_bias"),
             helper.make_node("Relu", ["qb"], ["qr"], name="q_relu"),
             helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
             helper.make_node("Where", ["mask", "k", "bk"], ["kb"], name="k_bias"),
             helper.make_node("Relu", ["kb"], ["kr"], name="k_relu")]
    model = make_model(nodes, [("x", [16, 256], np.float32)], ["q", "qr", "k", "kr"],
                       [("wq", wq), ("bq", randn(256)), ("wk", wk), ("bk", randn(256)), ("mask", mask)])
    return model, wk


def test_a_member_lowered_from_a_shared_kernel_keeps_its_own_local_buffers(monkeypatch):
    """Two Wheres choosing per column between a MatMul's output and a broadcast row, of
    one shape, are one kernel; the first fetches the second MatMul's weights, so it alone
    has a prefetch cursor in L1. Each member's buffers must be placed for its own body:
    placed once for both, the row the first loads lands on its cursor, and the cursor,
    read back as garbage, stops the copies (the MatMul then reads an L2 that holds
    something else). (Where's select is front-end code: slow enough, with the DDR idle,
    for the cost model to keep the prefetch, the MatMul of 16 rows bound by its weights.)"""
    model, wk = two_masked_matmuls()
    planned = []

    def plan(members, rows, weights, live, free_l2, in_l2, share=wp.SHARES[0], inputs=None, gap=0, wait=0):
        # wk (the 256 KiB weight read by member 3) fetched during the first Add (member 1)
        wk_id = next(t for t in rows[3] if weights.get(t) == wk.nbytes)
        planned.append(in_l2(3, (wk_id,)))
        return [(wk_id, 1, 0, wk.nbytes)]

    monkeypatch.setattr(wp, "plan", plan)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert planned and [g["nodes"] for g in rep["groups"]] == [["q", "q_bias", "q_relu", "k", "k_bias", "k_relu"]]
    assert rep["groups"][0]["prefetch"]["wk"]["during"] == ["q_bias"]
    x = randn(16, 256)
    got, want = exe.run({"x": x}), ort_run(model, {"x": x})
    for name in ("q", "qr", "k", "kr"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-4, err_msg=name)


def squeeze_excite(c=576, hw=7, squeezed=144):
    """MobileNetV3's squeeze-excite block (torchvision's mobilenet_v3_small, features.11):
    an activation, its mean per channel through two 1x1 Convs of 324 KiB of weights each,
    then the activation's output scaled by their gate. The two Convs read their weights
    from L2, fetched during the members before them; the arena then gives those weights'
    places to the gate's output. (The activation is an Elu, whose select is front-end code:
    slow enough, the DDR idle, for the cost model to keep the prefetches, as MobileNetV3's
    HardSwish was before it ran on the vector engine. The gate is a Tanh, a member of its
    own: MobileNetV3's HardSigmoid is computed in fc2's epilogue.)"""
    nodes = [helper.make_node("Elu", ["x"], ["h"], name="act"),
             helper.make_node("GlobalAveragePool", ["h"], ["p"], name="pool"),
             helper.make_node("Conv", ["p", "w1", "b1"], ["f1"], name="fc1"),
             helper.make_node("Relu", ["f1"], ["r1"], name="relu"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["f2"], name="fc2"),
             helper.make_node("Tanh", ["f2"], ["s"], name="gate"),
             helper.make_node("Mul", ["s", "h"], ["y"], name="scale")]
    inits = [("w1", randn(squeezed, c, 1, 1, scale=0.05)), ("b1", randn(squeezed, scale=0.1)),
             ("w2", randn(c, squeezed, 1, 1, scale=0.1)), ("b2", randn(c, scale=0.1))]
    return make_model(nodes, [("x", [1, c, hw, hw], np.float32)], ["y"], inits)


def test_a_place_a_prefetched_weight_left_is_not_read_only_to_the_handoff(hazard_checked):
    """The Mul's first load reads the gate's output where fc1's prefetched weights
    were. Those weights are read-only only until fc1 has read them: handed early to the
    gate (which writes that place), the load read the place before it was written
    (a WAR hazard in L2, and outputs at cosine 0.07)."""
    model = squeeze_excite()
    x = randn(1, 576, 7, 7)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert [g["nodes"] for g in rep["groups"]] == [["act", "pool", "fc1", "fc2", "gate", "scale"]]
    assert {"w1", "w2"} & set(rep["groups"][0]["prefetch"])
    y = exe.run({"x": x})["y"]
    np.testing.assert_allclose(y, ort_run(model, {"x": x})["y"], rtol=1e-4, atol=1e-5)
    assert hazard_checked() == []


def test_plan_takes_the_wait_of_its_pieces_off_each_donor():
    """With ``wait`` (the DDR's latency each donor's pieces wait on their engine), a donor gives
    its share of idle cycles less the wait. Member 1 is short (700 cycles, 600 idle: 180 at
    SHARES[0]): without the wait it gives 8 KiB (600 x 0.3 x 64 bytes, in whole 4 KiB), which
    its end would wait for; with it none, and member 0 ((38,000 x 0.3 - 200) x 64 bytes) all
    250,000."""
    costs = member_costs((40000, 2000), (700, 100), (20000, 19000))
    rows = [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    asked, in_l2 = answering(lambda ts: (12000, 100))
    assert wp.plan(costs, rows, {5: 250000}, [0, 0, 0], 4 << 20, in_l2) == \
        [(5, 0, 0, 250000 - 8192), (5, 1, 250000 - 8192, 250000)]
    assert wp.plan(costs, rows, {5: 250000}, [0, 0, 0], 4 << 20, in_l2, wait=wp.DDR_LATENCY) == [(5, 0, 0, 250000)]
    assert int((38000 * wp.SHARES[0] - wp.DDR_LATENCY) * 64) >= 250000


@pytest.mark.parametrize("fetching_share,larger_planned", [(wp.SHARES[-1], True), (wp.SHARES[0], False)])
def test_the_larger_shares_are_planned_when_the_largest_share_was_fastest(monkeypatch, fetching_share,
                                                                          larger_planned):
    """The driver plans the group's prefetches with each of SHARES, and with MORE_SHARES only
    when the largest of SHARES gave the fastest group (the group's cycles do not follow the
    share smoothly). Here only one share's plan fetches anything (the 256 KiB weight of a
    MatMul bound by it, during the Where before it), so that plan is the fastest. A plan
    that repeats one built before is not built again."""
    model, wk = two_masked_matmuls()
    planned, built = [], []

    def plan_for(fetching):  # wk fetched during member 1 by the shares `fetching` says yes to
        def plan(members, rows, weights, live, free_l2, in_l2, share=wp.SHARES[0], inputs=None, gap=0, wait=0):
            planned.append((share, wait))
            wk_id = next(t for t in rows[3] if weights.get(t) == wk.nbytes)
            in_l2(3, (wk_id,))
            return [(wk_id, 1, 0, wk.nbytes)] if fetching(share) else []
        return plan

    group_kernels = compiler.GroupKernels

    def counted(funcs, args, inputs, outputs, name="group", prefetch=(), *rest, **kw):
        if prefetch:
            built.append([tuple(r) for r in prefetch])
        return group_kernels(funcs, args, inputs, outputs, name, prefetch, *rest, **kw)

    monkeypatch.setattr(compiler, "GroupKernels", counted)
    monkeypatch.setattr(wp, "plan", plan_for(lambda share: share == fetching_share))
    rep = {}
    tilecore.compile(model, report=rep)
    assert rep["groups"][0]["prefetch"]["wk"]["during"] == ["q_bias"]
    shares = {s for s, _ in planned}
    assert set(wp.SHARES) <= shares
    assert (set(wp.MORE_SHARES) <= shares) == larger_planned
    assert not larger_planned or not set(wp.MORE_SHARES) & {s for s, _ in planned[:2 * len(wp.SHARES)]}
    # every share plans the same rows: built once
    planned.clear(), built.clear()
    monkeypatch.setattr(wp, "plan", plan_for(lambda share: True))
    tilecore.compile(model)
    assert len(planned) > 1 and len(built) == 1
