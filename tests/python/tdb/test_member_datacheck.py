"""tdb and `tilecore check` inside a layer group (docs/tdb.md, "Layer groups"): each member's
output is compared with the reference where the member completes, read from its L2 place or
DDR buffer, so a reference altered at one inner member names that member as the first
divergence; a breakpoint on a member stops where it starts, `info loc` names it and `p`
prints its output from L2."""
import io
import json
import os
import sys

import numpy as np
import pytest

from tilecore import cli
from tilecore.tdb import Debugger

sys.path.insert(0, os.path.dirname(__file__))
import tdb_group_model  # noqa: E402

INNER = "tanh1"  # writes `s1`, an L2 intermediate that conv2 reads


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("member_check")
    tcx, inputs, ref = tdb_group_model.build(d)
    bad = dict(ref, s1=ref["s1"] + 0.5)
    np.savez(d / "bad.npz", **bad)
    return tcx, inputs, d / "ref.npz", d / "bad.npz"


def test_check_passes_every_member_with_the_true_reference(built, tmp_path, capsys):
    tcx, inputs, ref, _ = built
    rc = cli.main(["check", str(tcx), "--inputs", str(inputs), "--ref_data", str(ref), "--report",
                   str(tmp_path / "r.json")])
    assert rc == 0, capsys.readouterr()
    rep = json.loads((tmp_path / "r.json").read_text())
    assert [r["onnx_name"] for r in rep["nodes"]] == tdb_group_model.MEMBERS
    assert all(r["status"] == "pass" and r["group"] == "conv0+5" for r in rep["nodes"])
    assert "6 node(s) compared with the reference, 6 passed, 0 failed" in capsys.readouterr().out


def test_check_names_the_inner_member_that_diverges(built, tmp_path, capsys):
    tcx, inputs, _, bad = built
    rc = cli.main(["check", str(tcx), "--inputs", str(inputs), "--ref_data", str(bad), "--report",
                   str(tmp_path / "r.json")])
    assert rc == 1
    rep = json.loads((tmp_path / "r.json").read_text())
    first = rep["first_divergence"]
    assert first["onnx_name"] == INNER and first["member"] == 3 and first["inputs_match"] is True
    assert [r["name"] for r in first["inputs"]] == ["c1"] and first["inputs"][0]["status"] in ("equal", "close")
    assert rep["wrong_nodes"] == [INNER] and rep["failed"] == 1 and rep["passed"] == 5
    out = capsys.readouterr().out
    assert ("first divergence: member `tanh1` (Tanh) of layer group `conv0+5` (node 1, npu): this member is "
            "wrong: its inputs match the reference") in out


def test_tdb_stops_at_the_inner_member_that_diverges(built, capsys):
    tcx, inputs, _, bad = built
    rc = cli.main(["tdb", str(tcx), "--inputs", str(inputs), "--ref_data", str(bad), "--do", "r; info loc; q"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert ("Data-check: member `tanh1` (Tanh) of layer group `conv0+5` (node 1, npu) diverges from the "
            "reference; this member is wrong: its inputs match the reference") in out
    assert "after member 4 of 6 `tanh1` (Tanh) (complete), before member 5 of 6 `conv2` (Conv)" in out
    assert "model finished" not in out


def test_a_breakpoint_on_an_inner_member_stops_where_it_starts(built):
    tcx, inputs, ref, _ = built
    out = io.StringIO()
    tdb = Debugger(str(tcx), inputs=str(inputs), stdout=out)
    tdb.run_commands(f"b {INNER}; run; info loc")
    text = out.getvalue()
    assert "Breakpoint 1: node `tanh1` (member 4 of the layer group step `conv0+5`: stops when the member starts)" \
        in text
    assert "Breakpoint 1, member 4 of 6 `tanh1` (Tanh) of layer group `conv0+5` (node 1) starts" in text
    assert "member 4 of 6 of the layer group: `tanh1`, op type Tanh; reads c1; writes s1 at l2:" in text
    g = tdb.member_at()
    assert g.name == INNER and all(tdb.sim.pc(c) <= g.begin(c) for c in g.pc)  # none of its code ran yet
    # its output is not produced yet; conv1's, its input, is complete and in its L2 place
    tdb.run_commands("p s1; p c1")
    text = out.getvalue()
    assert "`s1`: float32[1, 8, 8, 8] at l2:" in text and "NOT produced yet" in text
    assert "produced by member `conv1` (Conv) of layer group `conv0+5`, in its L2 place" in text
    np.testing.assert_allclose(tdb.namespace["_"], np.load(ref)["c1"], rtol=1e-4, atol=1e-5)
    # an op-type breakpoint stops at each member of that type; the run ends with the group's output right
    tdb.run_commands("delete; b op:Tanh; c; c; c")
    assert out.getvalue().count("of layer group `conv0+5` (node 1) starts") == 2  # tanh1 above, then tanh2
    assert tdb.finished
    np.testing.assert_allclose(tdb.model.read_value(tdb.sim, "s2"), np.load(ref)["s2"], rtol=1e-4, atol=1e-5)


def test_no_stop_inside_the_group_without_a_need(built):
    """Without a reference or member breakpoint, the group runs in one resume, as before."""
    tcx, inputs, _, _ = built
    out = io.StringIO()
    tdb = Debugger(str(tcx), inputs=str(inputs), stdout=out)
    tdb.run_commands("b conv0+5; run; c")
    assert "Breakpoint 1, node `conv0`" in out.getvalue() and tdb.finished
    assert tdb.members_complete == [] or all(tdb.members_complete)


def test_info_loc_counts_a_groups_constants_past_a_few(built, capsys, monkeypatch):
    # a layer group reads every member's weights: `info loc` names a few and counts the rest
    from tilecore.tdb import inspection

    tcx, inputs, _, _ = built
    monkeypatch.setattr(inspection, "INFO_LOC_CONSTANTS", 1)
    rc = cli.main(["tdb", str(tcx), "--inputs", str(inputs), "--do", "s; info loc; q"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "  inputs: x: float32[1, 8, 8, 8], w0: float32[8, 8, 3, 3], ... and 2 more constants (`info symbols` " \
           "lists them)" in out
