"""tilecore.compile(..., verify=...) (compiler/verify.py): the executable that ships run in
the simulator's hazard mode, each step's values against the same model compiled one node a
step, and in f32 against the reference evaluator; a defect is named by its layer group,
fused node or node. Checked on torchvision's MobileNetV3 squeeze-excite block against ONNX
Runtime, and on defects put into the program on purpose."""
import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore.compiler import VerifyError, layer_groups
from tilecore.compiler import verify as V

from test_driver import make_model, ort_run
from test_weight_prefetch import squeeze_excite


def test_a_correct_group_passes_every_check():
    model = squeeze_excite()
    x = np.random.default_rng(3).standard_normal((1, 576, 7, 7)).astype(np.float32)
    rep = {}
    exe = tilecore.compile(model, verify={"x": x}, report=rep)
    v = rep["verify"]
    assert v["checks"] == {"hazards": "pass", "optimisations": "pass", "reference": "pass"}
    assert [s["members"] for s in v["steps"]] == [["act", "pool", "fc1", "fc2", "hsigmoid", "scale"]]
    assert v["steps"][0]["cosine"] > 0.99999 and v["outputs"]["y"] > 0.9999
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], rtol=1e-4, atol=1e-5)


def test_a_member_reading_the_wrong_intermediate_names_its_group(monkeypatch):
    """The HardSigmoid member's input and output swapped as the group is built (it reads
    its own output's place, never written): the group's output differs from the same
    nodes compiled one step each, and verify names the group."""
    _swap_hsigmoid(monkeypatch)
    with pytest.raises(VerifyError, match=r"layer group `act\+5` \(6 nodes: act, pool, fc1, fc2, hsigmoid, "
                                          r"scale\) writes `y` at cosine .* this optimisation changes the model"):
        tilecore.compile(squeeze_excite(), verify=True)


def test_a_wrong_node_is_named_against_the_reference(monkeypatch):
    """A node whose kernel computes something else (LeakyRelu lowered with another alpha)
    in f32: verify names it against the reference evaluator."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("LeakyRelu", ["c"], ["s"], name="leaky", alpha=0.1),
             helper.make_node("Sigmoid", ["s"], ["y"], name="sigmoid")]
    w = np.random.default_rng(4).standard_normal((8, 4, 1, 1)).astype(np.float32)
    model = make_model(nodes, [("x", [1, 4, 8, 8], np.float32)], ["y"], [("w", w)])
    from tilecore import compiler

    lower = compiler.LowerOp

    def wrong(op, attrs, ins, outs, target="npu -cores=4"):
        return lower(op, {**attrs, "alpha": 0.5} if op == "LeakyRelu" else attrs, ins, outs, target)

    monkeypatch.setattr(compiler, "LowerOp", wrong)
    with pytest.raises(VerifyError, match=r"node `leaky` \(LeakyRelu, npu\) computes `s` at cosine .* against the "
                                          r"reference evaluator"):
        tilecore.compile(model, verify=True)


def test_sample_inputs_are_seeded_and_typed():
    a = V.sample_inputs({"x": ((2, 3), "float32"), "ids": ((4,), "int64"), "m": ((2,), "bool")})
    b = V.sample_inputs({"x": ((2, 3), "float32"), "ids": ((4,), "int64"), "m": ((2,), "bool")})
    assert a["x"].dtype == np.float32 and a["ids"].dtype == np.int64 and a["m"].dtype == bool
    assert set(np.unique(a["ids"])) <= {0, 1}
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("a, b, expected", [
    ([1.0, 2.0], [2.0, 4.0], 1.0),
    ([1.0, 0.0], [0.0, 1.0], 0.0),
    ([0.0, 0.0], [0.0, 0.0], 1.0),
    ([0.0, 0.0], [0.0, 1.0], -1.0),
    ([np.nan, 1.0], [np.nan, 1.0], 1.0),
    ([np.nan, 1.0], [0.0, 1.0], -1.0),
    ([np.inf, 1.0], [-np.inf, 1.0], -1.0),
])
def test_cosine_by_hand(a, b, expected):
    assert V.cosine(np.array(a), np.array(b)) == pytest.approx(expected)


def _swap_hsigmoid(monkeypatch):
    apply = layer_groups.Groups.apply

    def swapped(self, funcs, build_group):
        def build(idx, fs, args, ins, outs):
            args = [list(a) for a in args]
            k = [self.steps[i][0].name for i in idx].index("hsigmoid")
            args[k] = args[k][::-1]
            return build_group(idx, fs, args, ins, outs)
        return apply(self, funcs, build)

    monkeypatch.setattr(layer_groups.Groups, "apply", swapped)


def test_compare_checks_the_executable_that_ships(monkeypatch):
    """`tilecore compare`'s every-intermediate program has no layer groups; the report's
    `shipped` runs the executable as compiled: right, it agrees; with a wrong group, the
    tensors of the every-intermediate program still agree, and `shipped` names the group."""
    from tilecore.compiler.compare import compare_with_onnxruntime

    model = squeeze_excite()
    x = {"x": np.random.default_rng(6).standard_normal((1, 576, 7, 7)).astype(np.float32)}
    rep = compare_with_onnxruntime(model, x)
    assert rep["first_divergent"] is None
    ship = rep["shipped"]
    assert (ship["groups"], ship["diverged"], ship["hazards"], ship["changed"]) == (1, False, [], None)
    assert ship["outputs"]["y"]["cosine"] > 0.9999
    _swap_hsigmoid(monkeypatch)
    rep = compare_with_onnxruntime(model, x)
    assert rep["first_divergent"] is None  # each node alone is right
    ship = rep["shipped"]
    assert ship["diverged"] and ship["outputs"]["y"]["cosine"] < 0.99
    assert ship["changed"]["step"] == "act+5" and ship["changed"]["value"] == "y"
    assert "layer group `act+5` (6 nodes: act, pool, fc1, fc2, hsigmoid, scale)" in ship["changed"]["message"]
