"""HoistActivations: an activation that reads a Conv's output through layout ops only moves
before them, where the Conv's epilogue computes it (a YOLO head: Conv -> Reshape ->
Transpose -> Sigmoid). Outputs against ONNX Runtime and bit for bit against the compile
without the pass; what must not move (a layout value or the Conv's output read twice, an
activation after a non-Conv) stays where it was."""
import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import transform
from tilecore.compiler import pipeline as P
from tilecore.frontend import from_onnx
from test_driver import make_model, ort_run

pytestmark = pytest.mark.npu
RNG = np.random.default_rng(11)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def yolo_head(act="Sigmoid", conv_also_out=False, view_also_out=False, producer="Conv"):
    """x [1, 16, 10, 10] -> 1x1 Conv to 3 x 7 channels -> Reshape [1, 3, 7, 10, 10] ->
    Transpose [1, 3, 10, 10, 7] -> the activation -> y; the Conv's output (``c``) or the
    Reshape's (``r``) also a graph output when asked; ``producer`` "Relu": a Relu instead
    of the Conv (nothing to fuse into)."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c0"], name="conv")]
    if producer == "Relu":
        nodes.append(helper.make_node("Relu", ["c0"], ["c"], name="pre"))
    else:
        nodes[0].output[0] = "c"
    nodes += [helper.make_node("Reshape", ["c", "shape"], ["r"], name="reshape"),
              helper.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[0, 1, 3, 4, 2])]
    attrs = {"alpha": 1.0 / 6.0} if act == "HardSigmoid" else {}
    nodes.append(helper.make_node(act, ["t"], ["y"], name="act", **attrs))
    outs = ["y"] + (["c"] if conv_also_out else []) + (["r"] if view_also_out else [])
    inits = [("w", randn(21, 16, 1, 1, scale=0.3)), ("b", randn(21, scale=0.2)),
             ("shape", np.array([1, 3, 7, 10, 10], np.int64))]
    return make_model(nodes, [("x", [1, 16, 10, 10], np.float32)], outs, inits)


@pytest.mark.parametrize("act", ["Sigmoid", "HardSigmoid", "Relu"])
def test_the_activation_moves_into_the_conv_and_gives_the_same_bits(act):
    model = yolo_head(act)
    rep, rep_off = {}, {}
    exe = tilecore.compile(model, report=rep)
    off = tilecore.compile(model, report=rep_off, pipeline=P.PipelineOptions(disable=["HoistActivations"]))
    assert {"node": "conv", "fused": ["act"]} in rep["fused"]
    assert "HoistActivations" in [p["pass"] for p in rep["passes"]]
    assert not any("act" in e["fused"] for e in rep_off["fused"])
    x = randn(1, 16, 10, 10)
    y = exe.run({"x": x})["y"]
    np.testing.assert_array_equal(y, off.run({"x": x})["y"])  # the same f32 operations
    np.testing.assert_allclose(y, ort_run(model, {"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_not_in_int8():
    """An int8 Conv stores its output int8 and the activation is a table of it: the pass does
    not run (moved into the Conv, the activation's f32 result would be stored instead)."""
    model = yolo_head()
    kw = {"calib_samples": {"x": randn(8, 1, 16, 10, 10)}}
    rep = {}
    exe = tilecore.compile(model, precision="int8", report=rep, **kw)
    assert "HoistActivations" not in [p["pass"] for p in rep["passes"]]
    assert not any("act" in e["fused"] for e in rep["fused"])
    for _ in range(3):
        x = randn(1, 16, 10, 10)
        y, r = exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"]
        assert float((y * r).sum() / np.linalg.norm(y) / np.linalg.norm(r)) > 0.999


def ops_after_pass(model):
    g = transform.HoistActivations()(from_onnx(model))
    return [(str(n.op_type), [str(v.name) for v in n.inputs if v is not None], [str(v.name) for v in n.outputs])
            for n in g.nodes]


def test_the_graph_after_the_pass():
    """The nodes keep their names and order of roles; the activation's output keeps its
    name; the values between, which now hold the activation's results, get new names."""
    ops = ops_after_pass(yolo_head())
    assert [o[0] for o in ops] == ["Conv", "Sigmoid", "Reshape", "Transpose"]
    (_, _, conv_out), (_, sig_in, sig_out), (_, rs_in, rs_out), (_, tr_in, tr_out) = ops
    assert sig_in == conv_out == ["c"] and rs_in[0] == sig_out[0] != "c"
    assert tr_in == rs_out and rs_out[0] != "r" and tr_out == ["y"]


@pytest.mark.parametrize("kw", [{"conv_also_out": True}, {"view_also_out": True}, {"producer": "Relu"}])
def test_what_must_not_move_stays(kw):
    """The Conv's output or a layout value read elsewhere (it would be computed twice, or
    the other reader would see the activation's values), or no Conv to take it."""
    model = yolo_head(**kw)
    ops = ops_after_pass(model)
    assert [o[0] for o in ops][-1] == "Sigmoid"
    exe = tilecore.compile(model)
    x = randn(1, 16, 10, 10)
    got, ref = exe.run({"x": x}), ort_run(model, {"x": x})
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-5, atol=1e-5)
