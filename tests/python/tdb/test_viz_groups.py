"""`tilecore viz` of a layer group (docs/tdb.md, "Graph view and disassembly"): a cluster per
group holding its members, the values between them as edges, every ONNX node drawn once,
a failing member coloured by `--check`, the members shaded by `--stats`; and `tilecore
demo`'s table of the top layers, a group's members each a row of its own."""
import json
import os
import re
import sys

import pytest

from tilecore import cli
from tilecore.tdb import graphview
from tilecore.tdb.model import ModelTarget

sys.path.insert(0, os.path.dirname(__file__))
import tdb_group_model  # noqa: E402

STEP = "conv0+5"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("viz_groups")
    tcx, inputs, ref = tdb_group_model.build(d)
    return tcx, inputs, d


def _cluster(dot, name):
    """The lines of the DOT cluster whose label names layer group ``name``."""
    blocks = re.findall(r'^  subgraph "cluster_[^"]*" \{\n(.*?)^  \}$', dot, re.M | re.S)
    return next(b for b in blocks if f"layer group {name} " in b)


def _node_names(dot):
    """{DOT node id: the ONNX name its tooltip starts with} of every drawn node (not the model's
    inputs and outputs)."""
    return {m.group(1): m.group(2) for m in re.finditer(r'^ +"([^"]+)" \[label=.*?tooltip="([^"]*)"', dot, re.M)
            if not m.group(1).startswith(("in:", "out:"))}


def test_a_group_is_a_cluster_of_its_members_with_the_values_between_them(built, tmp_path, capsys):
    tcx, _, _ = built
    assert cli.main(["viz", str(tcx), "-o", str(tmp_path / "g.dot")]) == 0
    assert "6 nodes, 1 layer group(s)" in capsys.readouterr().out
    dot = (tmp_path / "g.dot").read_text()
    names = _node_names(dot)
    assert sorted(names.values()) == sorted(tdb_group_model.MEMBERS)  # every ONNX node once, no group box
    inside = _node_names(_cluster(dot, STEP))
    assert sorted(inside.values()) == sorted(tdb_group_model.MEMBERS)
    ids = {name: nid for nid, name in names.items()}
    edges = set(re.findall(r'^  "([^"]+)" -> "([^"]+)" \[tooltip="([^"]*)"', dot, re.M))
    chain = ["in:x"] + [ids[m] for m in tdb_group_model.MEMBERS] + ["out:s2"]
    values = ["x"] + tdb_group_model.OUTPUTS
    assert edges == set(zip(chain, chain[1:], values))


def test_check_colours_the_failing_member(built, tmp_path, capsys):
    tcx, inputs, d = built
    import numpy as np

    ref = dict(np.load(d / "ref.npz"))
    np.savez(tmp_path / "bad.npz", **dict(ref, s1=ref["s1"] + 0.5))
    assert cli.main(["check", str(tcx), "--inputs", str(inputs), "--ref_data", str(tmp_path / "bad.npz"),
                     "--report", str(tmp_path / "r.json")]) == 1
    assert cli.main(["viz", str(tcx), "-o", str(tmp_path / "g.dot"), "--check", str(tmp_path / "r.json")]) == 0
    capsys.readouterr()
    lines = {name: line for line in (tmp_path / "g.dot").read_text().splitlines()
             for name in tdb_group_model.MEMBERS if line.startswith('    "') and f'[label="{name}"' in line}
    assert f'fillcolor="{graphview.FAILED}"' in lines["tanh1"] and "penwidth=3" in lines["tanh1"]
    assert not any(graphview.FAILED in line for name, line in lines.items() if name != "tanh1")


def test_stats_shade_the_members_by_their_measured_cycles(built, tmp_path, capsys):
    tcx, inputs, _ = built
    assert cli.main(["run", str(tcx), "--inputs", str(inputs), "--stats", str(tmp_path / "st.json"),
                     "--quiet"]) == 0
    assert cli.main(["viz", str(tcx), "-o", str(tmp_path / "g.dot"), "--stats", str(tmp_path / "st.json")]) == 0
    capsys.readouterr()
    dot = (tmp_path / "g.dot").read_text()
    (op,) = json.loads((tmp_path / "st.json").read_text())["ops"]
    top = max(m["cycles"] for m in op["members"])
    for m in op["members"]:
        line = next(x for x in dot.splitlines() if f'[label="{m["node"]}"' in x)
        assert f'{m["cycles"]} cycles' in line
        assert f'fillcolor="{graphview._heat(m["cycles"] / top)}"' in line
    assert f"layer group {STEP} \u00b7 6 nodes \u00b7 npu \u00b7 {op['cycles']} cycles" in dot
    (tmp_path / "bad.json").write_text('{"ops": [{"name": "a"}]}')
    assert cli.main(["viz", str(tcx), "-o", str(tmp_path / "g.dot"), "--stats", str(tmp_path / "bad.json")]) == 1
    assert "not the statistics of a run: op entry 0" in capsys.readouterr().err


def test_fused_nodes_are_drawn_in_their_host_member():
    """A member's `fused` names the nodes in its epilogue; a file without it (older) puts a fused
    node in the member whose output value its name begins."""
    members = [{"node": "conv", "op": "Conv", "in": ["x"], "out": [{"value": "relu_output_0"}]},
               {"node": "pool", "op": "MaxPool", "in": ["relu_output_0"], "out": [{"value": "y"}]}]
    assert graphview._fused_hosts(members, [("relu", "Relu")]) == [[("relu", "Relu")], []]
    recorded = [dict(members[0]), dict(members[1], fused=[("relu", "Relu")])]
    assert graphview._fused_hosts(recorded, [("relu", "Relu")]) == [[], [("relu", "Relu")]]
    g = graphview.GraphSpec("m")
    g.nodes = [{"id": "n0m0", "name": "conv", "op_type": "Conv", "where": "npu", "fused": [("relu", "Relu")],
                "group": "cluster_n0"}]
    g.groups = [{"id": "cluster_n0", "name": "conv+1", "where": "npu", "nodes": ["n0m0"]}]
    dot = graphview.to_dot(g)
    assert '"n0m0" [label="conv" + "\\n" + "Conv \u00b7 npu" + "\\n+ " + "relu (Relu)"' in _cluster(dot, "conv+1")


def test_the_demo_table_lists_the_members_by_cycles(built, tmp_path):
    from tilecore.cli.runtime import top_layers

    tcx, inputs, _ = built
    assert cli.main(["run", str(tcx), "--inputs", str(inputs), "--stats", str(tmp_path / "st.json"),
                     "--quiet"]) == 0
    st = json.loads((tmp_path / "st.json").read_text())
    lines = top_layers(st, 4)
    assert lines[0].split()[0] == "layer" and lines[0].endswith("layer group")
    rows = [line.split() for line in lines[1:5]]
    members = sorted(st["ops"][0]["members"], key=lambda m: -m["cycles"])
    assert [r[0] for r in rows] == [m["node"] for m in members[:4]]
    assert all(r[-1] == STEP for r in rows) and [int(r[3]) for r in rows] == [m["cycles"] for m in members[:4]]
    assert lines[5] == "... 2 more layers (tilecore profile shows all, each group's members under it)"


def test_mobilenet_like_view_between_members_is_inside_and_connected(tmp_path):
    """A free view between two members (mobilenet_v3_small's Flatten between its global average
    pool and its Gemm) is recorded on the group's step before it: drawn in the group, read
    from the member that writes its source, read by the member after it."""
    import numpy as np
    from onnx import TensorProto, helper

    import tilecore

    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 4], np.ones((8, 4), np.float32).ravel())
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "w"], ["y"], name="fc")]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    exe = tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), target="npu -cores=1")
    spec = graphview.from_model_target(ModelTarget(exe))
    if not spec.groups:
        pytest.skip("the compiler did not group the pool and the MatMul")
    by = {n["name"]: n for n in spec.nodes}
    assert sorted(by) == ["fc", "flat", "pool"]
    assert by["flat"]["group"] == spec.groups[0]["id"] and by["flat"]["where"] == "view"
    edges = {(a, b) for a, b, _ in spec.edges}
    assert (by["pool"]["id"], by["flat"]["id"]) in edges and (by["flat"]["id"], by["fc"]["id"]) in edges


def test_a_member_records_the_nodes_fused_into_it(tmp_path):
    """The compiler writes each member's `fused`; viz draws them in its box; an entry naming a
    node the step's `fused` does not list is refused, naming the step."""
    import numpy as np
    from onnx import TensorProto, helper

    import tilecore
    from tilecore.tdb.debug_info import read_debug_info
    from tilecore.tdb.target import TargetError

    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(2):
        w = (rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32)
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, w.shape, w.ravel()))
        nodes += [helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        prev = f"r{i}"
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)], inits)
    exe = tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), target="npu -cores=1")
    desc = exe.describe()
    (sd,) = [s for s in read_debug_info(desc) if s.members]
    if not sd.fused:
        pytest.skip("the compiler did not fuse the Relus into the grouped Convs")
    assert [m.get("fused") for m in sd.members] == [[("relu0", "Relu")], [("relu1", "Relu")]]
    spec = graphview.from_model_target(ModelTarget(exe))
    assert [(n["name"], n["fused"]) for n in spec.nodes] == [("conv0", [("relu0", "Relu")]),
                                                            ("conv1", [("relu1", "Relu")])]
    step = next(s for s in desc["steps"] if "group" in s["debug"])
    entry = json.loads(step["debug"]["group"])
    entry["members"][0]["fused"] = ["relu9"]
    step["debug"]["group"] = json.dumps(entry)
    with pytest.raises(TargetError, match=f"step `{re.escape(step['node'])}`: .* member 0 whose `fused`"):
        read_debug_info(desc)
