"""The `pc` of a layer group's members in a step's debug entry `group` (tdb/debug_info.py):
what the compiler writes passes, and a crafted `.tcx` whose `pc` is malformed, outside the
program, on a core that does not run the kernel, shared by two members or given to some
members only is refused by name, by tdb and by `tilecore profile` alike."""
import json
import os
import sys

import numpy as np
import pytest

import tilecore
from tilecore import cli
from tilecore.tdb.model import ModelTarget
from tilecore.tdb.target import TargetError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "compiler"))
from test_member_handoff import dense_norm_dense  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
import tcx_edit  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("member_pc")
    exe = tilecore.compile(dense_norm_dense(rows=32, d=64, f=64), target="npu -cores=4")
    exe.save(str(d / "g.tcx"))
    np.savez(d / "in.npz", x=np.random.default_rng(5).standard_normal((32, 64)).astype(np.float32))
    (step,) = [s for s in exe.describe()["steps"] if s["op_type"] == "Group"]
    (info,) = [f for f in exe.modules[step["module"]].info["functions"] if f["name"] == step["function"]]
    return d, step["node"], info["program"].sections[0]["words"]


def _with_pc(files, name, change):
    """g.tcx with `change(members)` applied to the group entry's members."""
    d, node, _ = files

    def edit(fields):
        st = next(s for s in fields["steps"] if s["node"] == node)
        group = json.loads(dict(st["debug"])["group"])
        change(group["members"])
        st["debug"] = [[k, json.dumps(group) if k == "group" else v] for k, v in st["debug"]]

    tcx_edit.edit(d / "g.tcx", d / name, edit)
    return str(d / name)


def _set(member, pc):
    def change(members):
        members[member]["pc"] = pc
    return change


def _overlap(members):
    members[1]["pc"]["0"] = [members[0]["pc"]["0"][0]]


def test_the_compilers_pc_passes(files):
    d, node, words = files
    target = ModelTarget(str(d / "g.tcx"))
    assert target.grouped  # the group's members are shown inside it
    from tilecore.tdb.debug_info import read_debug_info

    exe = tilecore.runtime.load_executable(str(d / "g.tcx"))
    (sd,) = [s for s in read_debug_info(exe.describe(), exe.modules) if s.members]
    assert all(sorted(m["pc"]) == [0, 1, 2, 3] for m in sd.members)
    assert all(0 <= b < e <= words for m in sd.members for r in m["pc"].values() for b, e in r)


BAD_PC = [
    (_set(0, [[0, 4]]), "member 0 with `pc` that is not an object {core: [[begin, end], ...]}"),
    (_set(1, {"x": [[0, 4]]}), "member 1 with `pc` for core 'x' (cores are decimal numbers)"),
    (_set(0, {"9": [[0, 4]]}), "member 0 with `pc` for core 9, which does not run the step's kernel (cores 0, 1, 2, 3 do)"),
    (_set(2, {"0": [[3, "7"]]}), "member 2 with `pc` on core 0 that is not a list of [begin, end] pairs of integers >= 0"),
    (_set(2, {"0": [[-3, 7]]}), "member 2 with `pc` on core 0 that is not a list of [begin, end] pairs"),
    (_set(0, {"0": [[7, 7]]}), "member 0 with `pc` [7, 7) on core 0, not a range inside its program of"),
    (_set(0, {"1": [[0, 10 ** 9]]}), "member 0 with `pc` [0, 1000000000) on core 1, not a range inside its program of"),
    (_overlap, "member 1 with `pc` ["),
    (lambda members: members[1].pop("pc"), "member 1 without `pc` (member 0 has one: every member or none)"),
]


@pytest.mark.parametrize("change,words", BAD_PC)
def test_a_malformed_pc_is_refused_by_name(files, change, words):
    path = _with_pc(files, "bad.tcx", change)
    with pytest.raises(TargetError) as e:
        ModelTarget(path)
    assert str(e.value).startswith(f"{path}: step `{files[1]}`: its debug entry `group` has ") and words in str(
        e.value), str(e.value)
    if change is _overlap:
        assert "which overlaps member 0's [" in str(e.value)


def test_profile_refuses_it_too_and_run_still_runs(files, capsys):
    d, node, _ = files
    path = _with_pc(files, "bad_profile.tcx", _set(0, {"0": [[7, 7]]}))
    assert cli.main(["profile", path, "--inputs", str(d / "in.npz"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count(path) == 1 and f"step `{node}`: its debug entry `group` has member 0 with `pc` [7, 7)" in err
    # the debug info does not change what runs: a run measures no member of the group
    exe = tilecore.runtime.load_executable(path)
    exe.run({"x": np.load(d / "in.npz")["x"]})
    (op,) = [o for o in exe.stats()["ops"] if o["node"] == node]
    assert op["cycles"] > 0 and "members" not in op
