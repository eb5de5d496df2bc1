"""tilecore.compile(..., verify=...) (compiler/verify.py): the executable that ships run in
the simulator's hazard mode, each step's values against the same model compiled one node a
step, and in f32 against the reference evaluator; a defect is named by its layer group,
fused node or node. Checked on torchvision's MobileNetV3 squeeze-excite block against ONNX
Runtime, and on defects put into the program on purpose."""
import json

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
    assert [s["members"] for s in v["steps"]] == [["act", "pool", "fc1", "fc2", "gate", "scale"]]
    assert v["steps"][0]["cosine"] > 0.99999 and v["outputs"]["y"] > 0.9999
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], rtol=1e-4, atol=1e-5)


def test_a_member_reading_the_wrong_intermediate_names_its_group(monkeypatch):
    """The gate member's input and output swapped as the group is built (it reads
    its own output's place, never written): the group's output differs from the same
    nodes compiled one step each, and verify names the group."""
    _swap_gate(monkeypatch)
    with pytest.raises(VerifyError, match=r"layer group `act\+5` \(6 nodes: act, pool, fc1, fc2, gate, "
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


def _swap_gate(monkeypatch):
    apply = layer_groups.Groups.apply

    def swapped(self, funcs, build_group):
        def build(idx, fs, args, ins, outs, *slices):
            args = [list(a) for a in args]
            k = [self.steps[i][0].name for i in idx].index("gate")
            args[k] = args[k][::-1]
            return build_group(idx, fs, args, ins, outs, *slices)
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
    _swap_gate(monkeypatch)
    rep = compare_with_onnxruntime(model, x)
    assert rep["first_divergent"] is None  # each node alone is right
    ship = rep["shipped"]
    assert ship["diverged"] and ship["outputs"]["y"]["cosine"] < 0.99
    assert ship["changed"]["step"] == "act+5" and ship["changed"]["value"] == "y"
    assert "layer group `act+5` (6 nodes: act, pool, fc1, fc2, gate, scale)" in ship["changed"]["message"]


def test_compare_in_int8_gives_the_shipped_check_onnxruntime_as_its_reference(monkeypatch):
    """In int8 the shipped executable and the every-intermediate program round in different
    places by design (int8 edges, shared quantisation: verify.first_changed), so `compare`
    gives the check ONNX Runtime's value of each shipped value: a group as near to it as the
    nodes alone is not named as changing the model. (DeepLabV3-MobileNetV3-Large's first group
    was, at cosine 0.991 against the every-intermediate program, while its output is
    bit-identical to the same nodes compiled one step each with the same int8 edges.)"""
    from tilecore.compiler.calibration import calibrate
    from tilecore.compiler.compare import compare_with_onnxruntime

    seen = {}
    first_changed = V.first_changed

    def spy(steps, plain, precision, ref=None):
        seen["names"] = {n for st in steps for n in st["values"]}
        seen["ref"] = ref
        return first_changed(steps, plain, precision, ref)

    monkeypatch.setattr(V, "first_changed", spy)
    model = squeeze_excite()
    rng = np.random.default_rng(6)
    x = {"x": rng.standard_normal((1, 576, 7, 7)).astype(np.float32)}
    table = calibrate(model, {"x": rng.standard_normal((8, 1, 576, 7, 7)).astype(np.float32)})
    rep = compare_with_onnxruntime(model, x, precision="int8", calib=table, bisect=False)
    assert rep["shipped"]["changed"] is None
    assert seen["ref"] and set(seen["ref"]) <= seen["names"] and "y" in seen["ref"]
    assert np.array_equal(seen["ref"]["y"], ort_run(model, x)["y"])  # ONNX Runtime's f32 value


def residual_net(blocks=6, c=16, hw=16, seed=5):
    """A ResNet-like stack of residual blocks (Conv, Relu, Conv, Add, Relu), seeded."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="stem", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["h0"], name="stem_relu")]
    inits = [("w0", (rng.standard_normal((c, 3, 3, 3)) * 0.4).astype(np.float32))]
    for b in range(blocks):
        for k in "ab":
            inits.append((f"w{k}{b}", (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)))
        nodes += [helper.make_node("Conv", [f"h{b}", f"wa{b}"], [f"a{b}"], name=f"conv{b}a", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"a{b}"], [f"r{b}"], name=f"relu{b}a"),
                  helper.make_node("Conv", [f"r{b}", f"wb{b}"], [f"b{b}"], name=f"conv{b}b", pads=[1, 1, 1, 1]),
                  helper.make_node("Add", [f"b{b}", f"h{b}"], [f"s{b}"], name=f"add{b}"),
                  helper.make_node("Relu", [f"s{b}"], [f"h{b + 1}"], name=f"relu{b}")]
    nodes.append(helper.make_node("GlobalAveragePool", [f"h{blocks}"], ["y"], name="pool"))
    return make_model(nodes, [("x", [1, 3, hw, hw], np.float32)], ["y"], inits)


def test_int8_edges_are_compared_as_the_values_they_stand_for():
    """An int8 model whose activations cross the DDR in int8 between steps (int8 edges,
    asymmetric after a Relu: zero point -128): each such buffer holds codes, and verify
    reads them through the step's `quantised` scale and zero point, so every value agrees
    with the one-node-a-step program, and with numpy's reference within int8 rounding."""
    from tilecore.frontend import evaluate, from_onnx

    model = residual_net()
    calib = {"x": np.random.default_rng(7).standard_normal((4, 1, 3, 16, 16)).astype(np.float32)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=calib, group=False, verify=True, report=rep)
    assert rep["verify"]["checks"] == {"hazards": "pass", "optimisations": "pass", "reference": "reported"}
    assert min(s["cosine"] for s in rep["verify"]["steps"]) > 0.999
    d = exe.describe()
    stored = {b["name"]: b["dtype"] for b in d["buffers"]}
    codes = {n: c for st in d["steps"] for n, c in json.loads(st["debug"].get("quantised", "{}")).items()}
    assert {f"h{b}" for b in range(6)} <= set(codes) and all(stored[n] == "int8" for n in codes)
    assert {c[1] for c in codes.values()} == {-128}  # after a Relu: the codes are far from the values
    feeds = {"x": calib["x"][0]}
    _, steps = V.observe(exe, feeds, "npu -cores=4")
    ref = evaluate(from_onnx(model), feeds, keep_intermediates=True)
    seen = {n: v for st in steps for n, v in st["values"].items() if n in codes}
    assert set(seen) == set(codes)
    for n, v in seen.items():
        assert v.dtype == np.float32 and V.cosine(v, ref[n]) > 0.99, n


def _steps_of(values):
    return [{"node": f"s{i}", "op_type": "Conv", "where": "npu", "values": {f"v{i}": v}, "members": [], "fused": [],
             "data_inputs": []} for i, v in enumerate(values)]


def test_in_int8_a_value_is_judged_against_the_reference():
    """Two programs that round in different places: below 0.999 against each other, each
    about as far from the reference (cosines by hand: noise of 0.2 and 0.25 of the signal).
    In f32 that is a changed model; in int8 it passes when the shipped value is at most
    twice as far from the reference as the per-node one, and a value three times as far is
    named, with both distances."""
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(10000)
    unit = lambda a: a / np.linalg.norm(a)  # noqa: E731
    e1, e2 = unit(rng.standard_normal(10000)), unit(rng.standard_normal(10000))
    alone = ref + 0.2 * np.linalg.norm(ref) * e1  # 1 - cosine against ref: about 0.0194
    near = ref + 0.25 * np.linalg.norm(ref) * e2  # about 0.0299: under twice 0.0194
    far = ref + 0.35 * np.linalg.norm(ref) * e2  # about 0.0561: over twice
    assert V.cosine(near, alone) < 0.999
    refs = {"v0": ref}
    plain = _steps_of([alone])
    rows, changed = V.first_changed(_steps_of([near]), plain, "f32", refs)
    assert changed is not None and changed["step"] == "s0"  # f32: the same arithmetic, a changed model
    rows, changed = V.first_changed(_steps_of([near]), plain, "int8", refs)
    assert changed is None
    assert rows[0]["reference"] == pytest.approx(V.cosine(near, ref)) and \
        rows[0]["alone_reference"] == pytest.approx(V.cosine(alone, ref))
    rows, changed = V.first_changed(_steps_of([far]), plain, "int8", refs)
    assert changed is not None and "the two programs round in different places in int8, but against the reference " \
        f"evaluator it is at {V.cosine(far, ref):.6f}, the nodes alone at {V.cosine(alone, ref):.6f}" in changed["message"]


def test_compare_checks_int8_edges_of_the_executable_that_ships():
    """`tilecore compare`'s check of the shipped program (read where each member completes)
    compares the values a layer group keeps in int8 with ONNX Runtime's as the values they
    stand for; none is left out as an integer tensor."""
    from tilecore.compiler.calibration import calibrate
    from tilecore.compiler.compare import compare_with_onnxruntime
    from tilecore.tdb.capture import values_where_complete

    model = residual_net()
    rng = np.random.default_rng(7)
    calib = rng.standard_normal((4, 1, 3, 16, 16)).astype(np.float32)
    rep = compare_with_onnxruntime(model, {"x": calib[0]}, precision="int8", calib=calibrate(model, {"x": calib}),
                                   read_shipped=values_where_complete)
    ship = rep["shipped"]
    seen = {t["name"]: t for t in ship["tensors"]}
    assert {f"h{b}" for b in range(6)} | {f"r{b}" for b in range(6)} <= set(seen)
    assert not set(seen) & set(ship["not_compared"])
    assert all(t["cosine"] > 0.99 and not t["diverged"] for t in seen.values())
    assert ship["first_divergent"] is None


def test_memory_an_engine_read_is_reused_only_after_it():
    """Three 1x1 int8 Convs in a layer group (MobileNetV2's 24 -> 144 -> 24 at 56x56): the
    middle one transposes its weights once into their resident place, and L1 memory
    planning gives the staging buffer's place, whose scope has ended, to the next item's
    X tile. The vector engine may still be reading the weights there when the DMA loads X:
    the code generator orders the DMA after it (the hazard mode once saw this WAR race)."""
    rng = np.random.default_rng(0)
    shapes = {"w1": (24, 3), "w2": (144, 24), "w3": (24, 144)}
    inits = [(n, (rng.standard_normal((o, i, 1, 1)) / np.sqrt(i)).astype(np.float32)) for n, (o, i) in shapes.items()]
    inits += [("lo", np.array(0.0, np.float32)), ("hi", np.array(6.0, np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="c1"),
             helper.make_node("Conv", ["a", "w2"], ["b"], name="c2"),
             helper.make_node("Clip", ["b", "lo", "hi"], ["br"], name="clip"),
             helper.make_node("Conv", ["br", "w3"], ["y"], name="c3")]
    model = make_model(nodes, [("x", [1, 3, 56, 56], np.float32)], ["y"], inits)
    calib = {"x": rng.standard_normal((4, 1, 3, 56, 56)).astype(np.float32)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=calib, verify=True, report=rep)
    assert [s["node"] for s in exe.describe()["steps"]] == ["c1+2"]
    assert rep["verify"]["checks"]["hazards"] == "pass"
    y = exe.run({"x": calib["x"][0]})["y"]
    assert V.cosine(y, ort_run(model, {"x": calib["x"][0]})["y"]) > 0.99
