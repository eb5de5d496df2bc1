"""tdb's data-check and `tilecore check` on an int8 executable whose activations are stored
in int8 between ops (int8 edges, docs/precision.md): such a value is compared with ONNX
Runtime's as the values it stands for, `(q - zero point) * scale` from the step's
`quantised` debug entry, in the DDR between steps and in L2 inside a layer group; it is
not refused as an integer against a float, and a wrong reference there is still named."""
import json
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

import tilecore
from tilecore import cli

sys.path.insert(0, os.path.dirname(__file__))
from tdb_models import reference  # noqa: E402

INT8 = ["--set", "cosine=0.99", "euclid=0.9"]  # int8's rounding, against the f32 reference


def residual_blocks(blocks=2, c=8, hw=8):
    """x -> Conv -> Relu -> (Conv -> Relu -> Conv -> Add -> Relu) x blocks -> h{blocks}."""
    rng = np.random.default_rng(2)
    inits = [helper.make_tensor("w0", TensorProto.FLOAT, (c, 3, 3, 3), (rng.standard_normal((c, 3, 3, 3)) * 0.4).ravel())]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="stem", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["h0"], name="stem_relu")]
    for b in range(blocks):
        for k in "ab":
            w = rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)
            inits.append(helper.make_tensor(f"w{k}{b}", TensorProto.FLOAT, w.shape, w.ravel()))
        nodes += [helper.make_node("Conv", [f"h{b}", f"wa{b}"], [f"a{b}"], name=f"conv{b}a", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"a{b}"], [f"r{b}"], name=f"relu{b}a"),
                  helper.make_node("Conv", [f"r{b}", f"wb{b}"], [f"b{b}"], name=f"conv{b}b", pads=[1, 1, 1, 1]),
                  helper.make_node("Add", [f"b{b}", f"h{b}"], [f"s{b}"], name=f"add{b}"),
                  helper.make_node("Relu", [f"s{b}"], [f"h{b + 1}"], name=f"relu{b}")]
    g = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                          [helper.make_tensor_value_info(f"h{blocks}", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module", params=[False, True], ids=["steps", "group"])
def built(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("int8_check")
    model = residual_blocks()
    calib = {"x": np.random.default_rng(3).standard_normal((4, 1, 3, 8, 8)).astype(np.float32)}
    exe = tilecore.compile(model, precision="int8", calib_samples=calib, group=request.param)
    exe.save(str(d / "m.tcx"))
    codes = {n: c for st in exe.describe()["steps"] for n, c in json.loads(st["debug"].get("quantised", "{}")).items()}
    x = {"x": calib["x"][0]}
    np.savez(d / "in.npz", **x)
    ref = reference(model, x)
    np.savez(d / "ref.npz", **ref)
    np.savez(d / "bad.npz", **dict(ref, h1=ref["h1"] + 0.5))
    return d, codes


def test_int8_values_are_compared_as_what_they_stand_for(built, capsys):
    d, codes = built
    assert {"h0", "r0", "h1", "r1"} <= set(codes)  # stored in int8
    rc = cli.main(["check", str(d / "m.tcx"), "--inputs", str(d / "in.npz"), "--ref_data", str(d / "ref.npz"),
                   "--report", str(d / "r.json"), *INT8])
    assert rc == 0, capsys.readouterr()
    rep = json.loads((d / "r.json").read_text())
    rows = {o["name"]: o for r in rep["nodes"] for o in r["outputs"]}
    assert {"h0", "h1"} <= set(rows)
    assert all(o["status"] in ("equal", "close", "similar") for o in rows.values()), rows
    assert all(o["cosine"] > 0.99 for n, o in rows.items() if n in codes)


def test_a_wrong_reference_at_an_int8_value_is_named(built, capsys):
    d, _ = built
    rc = cli.main(["check", str(d / "m.tcx"), "--inputs", str(d / "in.npz"), "--ref_data", str(d / "bad.npz"),
                   "--report", str(d / "r.json"), *INT8])
    assert rc == 1
    rep = json.loads((d / "r.json").read_text())
    first = rep["first_divergence"]
    assert "h1" in [o["name"] for o in first["outputs"]] and first["inputs_match"] is True, first
