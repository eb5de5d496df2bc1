"""`tilecore compare` on what ships (docs/compiler.md, "Comparing with ONNX Runtime"): every
tensor the shipped executable exposes, layer-group members included, against ONNX Runtime,
and the bisection of the optimisations that names the wrong group. The wrong group is the
defect that once broke torchvision's mobilenet_v3_small (a prefetched weight's L2 place
read-only to a member's handoff after its last reader), brought back by its test hook."""
import json

import numpy as np
import onnx
import pytest

from tilecore import cli
from tilecore.ffi.function import get_global_func

from test_weight_prefetch import randn, squeeze_excite

MEMBERS = ["act", "pool", "fc1", "fc2", "gate", "scale"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bisect")
    onnx.save(squeeze_excite(), d / "se.onnx")
    np.savez(d / "in.npz", x=randn(1, 576, 7, 7))
    return d


@pytest.fixture
def defect():
    """The fix of the prefetched places reverted while the test runs."""
    hook = get_global_func("compiler.testing.PrefetchedPlacesReadOnlyForever")
    hook(True)
    yield
    hook(False)


def compare(files, tmp_path, *extra):
    argv = ["compare", str(files / "se.onnx"), "--inputs", str(files / "in.npz"), "--quiet",
            "--report", str(tmp_path / "r.json"), *extra]
    rc = cli.main(argv)
    return rc, json.loads((tmp_path / "r.json").read_text())


@pytest.mark.npu
def test_compare_checks_each_member_of_the_shipped_group(files, tmp_path, capsys):
    rc, rep = compare(files, tmp_path)
    out = capsys.readouterr().out
    assert rc == 0, out
    ship = rep["shipped"]
    assert [t["node"] for t in ship["tensors"]] == MEMBERS and all(t["group"] == "act+5" for t in ship["tensors"])
    assert ship["first_divergent"] is None and "bisect" not in ship
    assert min(t["cosine"] for t in ship["tensors"]) > 0.99999
    assert "the executable as compiled (1 steps, 1 layer groups, 0 other fused nodes) agrees" in out
    assert "6 tensors, layer group members included" in out


@pytest.mark.npu
def test_compare_names_the_wrong_group_and_writes_it_as_a_repro(files, tmp_path, capsys, defect):
    repro = tmp_path / "repro"
    rc, rep = compare(files, tmp_path, "--repro", str(repro))
    out = capsys.readouterr().out
    assert rc == 1, out
    assert rep["first_divergent"] is None  # every node alone is right
    ship = rep["shipped"]
    first = ship["first_divergent"]  # the Mul read the gate's place before it was written
    assert (first["node"], first["group"], first["member"]) == ("scale", "act+5", 5)
    assert first["verdict"] == "it is wrong itself: every input it read agrees"
    bis = ship["bisect"]
    assert [t["change"] for t in bis["tried"]] == ["layer groups off"] and bis["tried"][0]["right"]
    assert bis["culprit"]["kind"] == "group" and bis["culprit"]["members"] == MEMBERS
    assert ("layer group 1 `act+5` (6 members: act, pool, fc1, fc2, gate, scale) is wrong; the same nodes "
            "compiled alone are right") in out
    assert "first divergent in the executable as compiled: `y` of member `scale` (Mul)" in out
    # the repro: the group's nodes, its input as the every-intermediate run had it
    m = onnx.load(repro / "group.onnx")
    assert [n.name for n in m.graph.node] == ["act", "pool", "fc1", "relu", "fc2", "gate", "scale"]
    assert [i.name for i in m.graph.input] == ["x"] and [o.name for o in m.graph.output] == ["y"]
    assert set(np.load(repro / "inputs.npz")) == {"x"}
    assert json.loads((repro / "group.json").read_text())["index"] == 1


def test_bisection_takes_one_group_apart_at_a_time():
    """Five groups, the fourth wrong: groups off is right, then halves of the groups apart."""
    steps = [{"node": f"g{k}", "members": [f"a{k}", f"b{k}"], "fused": [], "outputs": [f"y{k}"],
              "data_inputs": [f"y{k - 1}"]} for k in range(5)]
    compiled = []  # what each compilation changed

    def compile_again(group=True, ungroup=()):
        compiled.append(list(ungroup) if group else "off")
        return group and "a3" not in ungroup  # still wrong: the fourth group is in

    from tilecore.compiler.compare import bisect_optimisations

    rep = bisect_optimisations(compile_again, lambda still_wrong: (not still_wrong, 0.5 if still_wrong else 1.0), steps, set(), 0.5)
    assert rep["culprit"]["kind"] == "group" and rep["culprit"]["index"] == 4
    assert rep["culprit"]["members"] == ["a3", "b3"]
    assert [t["change"] for t in rep["tried"]] == ["layer groups off", "layer groups 1, 2 apart",
                                                   "layer groups 3, 4, 5 apart", "layer group 3 apart",
                                                   "layer groups 4, 5 apart", "layer group 4 apart"]


@pytest.mark.npu
def test_ungroup_keeps_the_named_steps_out_of_layer_groups():
    import tilecore

    rep = {}
    tilecore.compile(squeeze_excite(), report=rep, ungroup=["fc2"])
    assert [g["nodes"] for g in rep["groups"]] == [["act", "pool", "fc1"], ["gate", "scale"]]
