"""Measured cycles per layer-group member (docs/executable.md, "Statistics"): the code
generator records each member's instructions, the driver writes them per core into the
step's debug entry `group` (`pc`), and a run attributes every instruction and command to
the member whose code issued it. Checked on a small group (dense -> norm -> dense) against
the disassembly, the simulator's own cycles for the step, the trace and the profile."""
import json
import os
import sys

import numpy as np
import pytest

import tilecore
from tilecore.arch import disassemble_word
from tilecore.cli.runtime import format_profile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "compiler"))
from test_member_handoff import dense_norm_dense  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
import tcx_edit  # noqa: E402

RNG = np.random.default_rng(71)


@pytest.fixture(scope="module")
def group_run():
    """The group compiled for 4 cores and run once: (executable, its group step, stats op)."""
    exe = tilecore.compile(dense_norm_dense(), target="npu -cores=4")
    exe.run({"x": RNG.standard_normal((128, 256)).astype(np.float32)})
    (step,) = [s for s in exe.describe()["steps"] if s["op_type"] == "Group"]
    (op,) = [o for o in exe.stats()["ops"] if o["node"] == step["node"]]
    return exe, step, op


def _members(step):
    return json.loads(step["debug"]["group"])["members"]


def test_member_code_is_disjoint_and_covers_the_group_kernel(group_run):
    exe, step, _ = group_run
    members = _members(step)
    assert [m["node"] for m in members] == ["dense1", "norm", "dense2"]
    (info,) = [f for f in exe.modules[step["module"]].info["functions"] if f["name"] == step["function"]]
    words = info["program"].words(0)
    cores = {str(c) for c in range(int(info["cores"]))}
    for core in cores:
        ranges = sorted((b, e, i) for i, m in enumerate(members) for b, e in m["pc"][core])
        assert all(b < e for b, e, _ in ranges) and [i for *_, i in ranges] == [0, 1, 2]
        for (_, end, _), (begin, _, _) in zip(ranges, ranges[1:]):
            assert end <= begin  # disjoint, in member order
            # between two members only the synchronisation opening the next one
            gap = [disassemble_word(words[pc], pc).split()[0] for pc in range(end, begin)]
            assert set(gap) <= {"fence", "barrier"}, gap
        # a member's code closes with its own synchronisation, and every cores loop's code is a member's
        assert disassemble_word(words[ranges[0][1] - 1], 0).split()[0] == "barrier"
        inside = {pc for b, e, _ in ranges for pc in range(b, e)}
        assert not [pc for pc in range(len(words)) if pc not in inside
                    and disassemble_word(words[pc], pc).split()[0] in ("mm", "mma", "dma.in", "dma.out")]
    assert all(set(m["pc"]) == cores for m in members)


def test_measured_members_add_up_to_the_group_with_their_overlap(group_run):
    _, step, op = group_run
    members = op["members"]
    assert [m["node"] for m in members] == ["dense1", "norm", "dense2"]
    est = {m["node"]: m["est_cycles"] for m in _members(step)}
    for m in members:
        assert m["cycles"] > 0 and m["end"] - m["start"] == m["cycles"] and m["end"] <= op["cycles"]
        assert m["est_cycles"] == est[m["node"]]
        assert m["est_error"] == pytest.approx((m["est_cycles"] - m["cycles"]) / m["cycles"])
        assert m["busy"]["sc"] > 0 and m["instructions"] > 0 and m["commands"] > 0
    assert members[0]["bound_by"] == members[2]["bound_by"] == "mm"
    # the identity the statistics promise, against the simulator's own count for the step
    assert op["members_cycles"] == sum(m["cycles"] for m in members)
    assert op["members_cycles"] - op["members_overlap"] + op["outside_members"] == op["cycles"]
    assert op["members_overlap"] >= 0 and 0 <= op["outside_members"] < 0.05 * op["cycles"]
    # every engine's busy cycles of the step belong to some member, except the entry's
    for agent in ("din", "dout", "mm", "vec"):
        assert sum(m["busy"][agent] for m in members) == sum(c[agent] for c in op["engine_busy"])
        for m in members:  # (a member's busy cycles per core add up to its busy cycles)
            assert sum(c[agent] for c in m["core_busy"]) == m["busy"][agent]
    # and so do the DDR cycles its DMA commands took (all of the step's in its members)
    assert sum(m["ddr_cycles"] for m in members) == op["ddr_cycles"] > 0


def test_the_trace_names_each_member_on_each_core(group_run):
    exe, step, op = group_run
    events = [e for e in exe.trace()["traceEvents"] if e.get("cat") == "member"]
    assert {(e["name"], e["pid"]) for e in events} == {(m["node"], c) for m in op["members"] for c in range(4)}
    assert all(e["args"]["group"] == step["node"] for e in events)
    begins = {e["id"]: e["ts"] for e in events if e["ph"] == "b"}
    assert all(e["ts"] >= begins[e["id"]] for e in events if e["ph"] == "e")


def test_the_profile_shows_measured_members_and_their_overlap(group_run):
    exe, _, op = group_run
    text = format_profile(exe.stats(), exe)
    rows = {ln.split()[0]: ln for ln in text.splitlines() if ln.startswith("  ") and "est" in ln}
    assert list(rows) == ["dense1", "norm", "dense2"] and "~" not in "".join(rows.values())
    for m in op["members"]:
        assert f" {m['cycles']} " in rows[m["node"]] and f"est {m['est_cycles']:>10}" in rows[m["node"]]
    assert (f"sum {op['members_cycles']} cycles" in text and f"{op['members_overlap']} overlap" in text
            and f"{op['outside_members']} with none" in text)


def test_an_executable_without_member_code_falls_back_to_estimates(group_run, tmp_path):
    """A `.tcx` written before members recorded their code: no measured members, and the
    profile splits the group by the estimates (marked ~), as it did."""
    exe, step, _ = group_run
    exe.save(tmp_path / "g.tcx")

    def drop_pc(fields):
        st = next(s for s in fields["steps"] if s["node"] == step["node"])
        group = json.loads(dict(st["debug"])["group"])
        for m in group["members"]:
            del m["pc"]
        st["debug"] = [[k, json.dumps(group) if k == "group" else v] for k, v in st["debug"]]

    tcx_edit.edit(tmp_path / "g.tcx", tmp_path / "old.tcx", drop_pc)
    old = tilecore.runtime.load_executable(tmp_path / "old.tcx")
    old.run({"x": RNG.standard_normal((128, 256)).astype(np.float32)})
    (op,) = [o for o in old.stats()["ops"] if o["node"] == step["node"]]
    assert "members" not in op
    rows = [ln for ln in format_profile(old.stats(), old).splitlines() if "(estimated)" in ln]
    assert [ln.split()[0] for ln in rows] == ["dense1", "norm", "dense2"] and all("~" in ln for ln in rows)


def test_the_profile_lists_each_node_a_step_computes_under_it():
    # every ONNX node has a row: a Relu fused into its Conv's epilogue and a BatchNormalization
    # folded into its weights are listed under the Conv
    from onnx import TensorProto, helper, numpy_helper

    w1 = numpy_helper.from_array(RNG.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.1, "w1")
    w2 = numpy_helper.from_array(RNG.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.1, "w2")
    bn = [numpy_helper.from_array((RNG.random(16) + 0.5).astype(np.float32), n) for n in ("g", "b", "mu", "var")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c0"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c0", "g", "b", "mu", "var"], ["c1"], name="bn1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["y"], name="relu2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])], [w1, w2] + bn)
    exe = tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    exe.run({"x": RNG.standard_normal((1, 8, 16, 16)).astype(np.float32)})
    lines = format_profile(exe.stats(), exe).splitlines()
    # relu fused into the epilogue; bn1 folded into conv1's weights when compiling
    rows = {ln.split()[1]: i for i, ln in enumerate(lines) if ln.split()[:1] == ["+"]}
    assert set(rows) == {"bn1", "relu1", "relu2"}, lines
    for fused, host in (("bn1", "conv1"), ("relu1", "conv1"), ("relu2", "conv2")):
        at = rows[fused]
        assert "computed by the row above" in lines[at]
        above = next(ln for ln in reversed(lines[:at]) if ln.split()[:1] != ["+"])
        assert above.split()[0] == host, above


@pytest.mark.npu
def test_a_tracing_simulator_puts_every_tile_command_in_the_trace():
    """On a device whose simulator records its commands (`tilecore run --trace --commands`),
    the trace also holds each tile command on its engine's track, inside its step: as many as
    the step's statistics count, their DDR cycles the step's. (A device of its own: tracing
    slows the simulator for whoever runs next.)"""
    dev = 3
    runtime = tilecore.runtime
    target = runtime.device_attributes(tilecore.npu(dev))["target"]
    runtime.npu_configure(dev, target + " -trace")
    try:
        exe = tilecore.compile(dense_norm_dense(), target="npu -cores=4")
        exe.run({"x": RNG.standard_normal((128, 256)).astype(np.float32)}, device=dev)
        (op,) = [o for o in exe.stats()["ops"] if o["op_type"] == "Group"]
        events = exe.trace()["traceEvents"]
        (start,) = {e["ts"] for e in events if e["ph"] == "X" and e["name"] == op["node"]}
        commands = [e for e in events if e["ph"] == "X" and "pc" in e["args"] and e["tid"] > 0]
        assert len(commands) == op["commands"] > 0
        assert {e["name"] for e in commands} >= {"mm", "dma.in", "dma.out"}
        end = start + op["cycles"] / 1000.0
        assert all(start <= e["ts"] and e["ts"] + e["dur"] <= end + 1e-9 for e in commands)
        assert sum(e["args"].get("ddr_cycles", 0) for e in commands) == op["ddr_cycles"]
        del exe
    finally:
        runtime.npu_configure(dev, target)
