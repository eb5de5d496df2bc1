"""Where each layer-group member's output lives (docs/executable.md, the `group` entry's
`out`): the compiler records an L2 intermediate's place (offset, dtype, shape) and a group
output's DDR buffer; the bytes there, once every core has passed the member's pc ranges,
are the member's output; a malformed `out` is refused by name."""
import json
import os
import sys

import numpy as np
import pytest

import tilecore
from tilecore.tdb import Debugger
from tilecore.tdb.core import ffi
from tilecore.tdb.model import ModelTarget
from tilecore.tdb.target import TargetError

sys.path.insert(0, os.path.dirname(__file__))
import tdb_group_model  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
import tcx_edit  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return tdb_group_model.build(tmp_path_factory.mktemp("member_places"))


def _members(path):
    (step,) = tilecore.runtime.load_executable(str(path)).describe()["steps"]
    return step, json.loads(step["debug"]["group"])["members"]


def test_intermediates_are_in_l2_and_the_group_output_in_the_ddr(built):
    path, _, _ = built
    step, members = _members(path)
    assert [m["node"] for m in members] == tdb_group_model.MEMBERS
    assert [[p["value"] for p in m["out"]] for m in members] == [[v] for v in tdb_group_model.OUTPUTS]
    assert [m["in"][0] for m in members] == ["x"] + tdb_group_model.OUTPUTS[:-1]
    *inner, last = [m["out"][0] for m in members]
    assert all(p["space"] == "l2" and p["dtype"] == "float32" and p["shape"] == [1, 8, 8, 8] for p in inner)
    # a value and the one it is computed from are live at once: their places differ
    assert all(a["offset"] != b["offset"] for a, b in zip(inner, inner[1:]))
    assert last == {"value": "s2", "space": "ddr", "buffer": step["args"][-1]}
    sd = ModelTarget(str(path))  # the checks pass
    assert sd.nodes[0].members[0][0] == "conv0"


def test_each_place_holds_the_members_output_once_it_is_complete(built):
    """Run to the end of each member's pc ranges on every core: the bytes at its place are
    ONNX Runtime's value."""
    path, inputs, ref = built
    _, members = _members(path)
    tdb = Debugger(str(path), inputs=str(inputs), stdout=open(os.devnull, "w"))
    tdb.run_commands("start")
    for m in members[:-1]:
        for core, ranges in m["pc"].items():
            end = max(e for _, e in ranges)
            while tdb.sim.pc(int(core)) < end:
                pcs = [[] for _ in range(tdb.sim.cores)]
                pcs[int(core)] = [end]
                assert dict(ffi.Resume(tdb.engine, 0, 0, pcs).items())["reason"] == "transient"
        (place,) = m["out"]
        got = tdb.sim.read("l2", place["offset"], tuple(place["shape"]), place["dtype"])
        np.testing.assert_allclose(got, ref[place["value"]], rtol=1e-4, atol=1e-5)


def _edited(built, tmp_path, change):
    path, _, _ = built

    def edit(fields):
        (st,) = fields["steps"]
        group = json.loads(dict(st["debug"])["group"])
        change(group["members"])
        st["debug"] = [[k, json.dumps(group) if k == "group" else v] for k, v in st["debug"]]

    tcx_edit.edit(path, tmp_path / "bad.tcx", edit)
    return str(tmp_path / "bad.tcx")


def _drop_out(members):
    del members[2]["out"]
    del members[2]["in"]


def _ddr_elsewhere(members):
    members[5]["out"][0]["buffer"] = 0  # the model input's buffer, not written by the step


def _bad_dtype(members):
    members[1]["out"][0]["dtype"] = "float33"


def _no_offset(members):
    del members[1]["out"][0]["offset"]


@pytest.mark.parametrize("change, words", [
    (_drop_out, "member 2 without `in` and `out`"),
    (_ddr_elsewhere, "`s2` in the DDR) has `buffer` 0, not one of the buffers the step writes"),
    (_bad_dtype, "has the dtype 'float33', which is no dtype"),
    (_no_offset, "needs `offset` (bytes >= 0), `dtype` (a name) and `shape` (sizes >= 0)"),
])
def test_a_malformed_out_is_refused_by_name(built, tmp_path, change, words):
    with pytest.raises(TargetError) as e:
        ModelTarget(_edited(built, tmp_path, change))
    assert "step `conv0+5`: its debug entry `group` has member" in str(e.value) and words in str(e.value)
