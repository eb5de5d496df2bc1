"""A Concat inside a layer group whose inputs are each one run of its output's bytes
(docs/compiler.md, "Layer groups"): the producers of its inputs write them into its output's
place in L2, and the Concat copies nothing. Checked bit for bit against the same model
compiled a step per node (the Concat copying), against ONNX Runtime (every intermediate the
debugger reads where it is complete, too), and for what must stay a copy."""
import json

import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import compiler

from test_driver import make_model, ort_run

RNG = np.random.default_rng(47)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def fire(c=16, s=8, e=16, hw=8, axis=1, concat_out=False, o=8, bias=False):
    """SqueezeNet's fire module: squeeze 1x1 -> Relu -> (expand 1x1, expand 3x3) -> Relu each
    -> Concat -> a 1x1 Conv reading it (``o`` channels); with ``bias``, every Conv has one."""
    def conv(x, w, y, **attrs):
        return helper.make_node("Conv", [x, w] + ([f"b{w[1:]}"] if bias else []), [y], name=attrs.pop("name"), **attrs)

    nodes = [conv("x", "ws", "sq", name="squeeze"),
             helper.make_node("Relu", ["sq"], ["sr"], name="squeeze_relu"),
             conv("sr", "w1", "e1", name="expand1x1"),
             helper.make_node("Relu", ["e1"], ["r1"], name="relu1"),
             conv("sr", "w3", "e3", name="expand3x3", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["e3"], ["r3"], name="relu3"),
             helper.make_node("Concat", ["r1", "r3"], ["cat"], name="concat", axis=axis),
             conv("cat", "wo", "y", name="out")]
    inits = [("ws", randn(s, c, 1, 1, scale=0.3)), ("w1", randn(e, s, 1, 1, scale=0.3)),
             ("w3", randn(e, s, 3, 3, scale=0.1)), ("wo", randn(o, 2 * e if axis == 1 else e, 1, 1, scale=0.2))]
    if bias:
        inits += [(f"b{w[1:]}", randn(len(v), scale=0.1)) for w, v in inits]
    return make_model(nodes, [("x", [1, c, hw, hw], np.float32)], ["y"] + (["cat"] if concat_out else []), inits)


def in_place_members(exe):
    """(step, [member nodes in place]) of each group step, and its debug entry."""
    out = []
    for st in exe.describe()["steps"]:
        if "group" in st.get("debug", {}):
            g = json.loads(st["debug"]["group"])
            out.append([m["node"] for m in g["members"] if m.get("in_place")])
    return out


def with_outputs(model, names):
    """The model with ``names`` as graph outputs too (ONNX Runtime then gives them)."""
    m = type(model)()
    m.CopyFrom(model)
    m.graph.output.extend(helper.make_tensor_value_info(n, 1, None) for n in names)
    return m


@pytest.mark.parametrize("precision", ["f32", "int8"])
def test_a_fire_module_concat_is_written_in_place(precision, hazard_checked):
    model = fire()
    x = randn(1, 16, 8, 8)
    kw = {"calib_samples": {"x": randn(4, 1, 16, 8, 8)}} if precision == "int8" else {}
    grouped = tilecore.compile(model, precision=precision, **kw)
    plain = tilecore.compile(model, precision=precision, group=False, **kw)
    assert in_place_members(grouped) == [["concat"]]
    y = grouped.run({"x": x})["y"]
    np.testing.assert_array_equal(y, plain.run({"x": x})["y"])  # the same bits as the Concat copying
    assert hazard_checked() == []
    ref = ort_run(model, {"x": x})["y"]
    cos = float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref)))
    assert cos > (0.999999 if precision == "f32" else 0.99)
    # the producers' places are the Concat's, one after the other
    (step,) = grouped.describe()["steps"]
    places = {m["node"]: m for m in json.loads(step["debug"]["group"])["members"]}
    (cat,) = [p for p in places["concat"]["out"] if p["value"] == "cat"]
    (r1,) = [p for p in places["expand1x1"]["out"]]
    (r3,) = [p for p in places["expand3x3"]["out"]]
    itemsize = np.dtype(cat["dtype"]).itemsize  # (int8 or f32 between the int8 Convs: Int8Edges decides)
    assert (r1["space"], r3["space"], cat["space"]) == ("l2", "l2", "l2")
    assert r1["offset"] == cat["offset"] and r3["offset"] == cat["offset"] + 16 * 8 * 8 * itemsize


def test_the_member_after_an_in_place_concat_has_its_first_loads_issued_by_the_member_before_it(hazard_checked):
    """The Concat has no code: the 1x1 Conv reading it gets its first loads (bias, scales)
    from expand3x3, the member before with code (member_handoff.h), not from the Concat,
    where they would run alone (SqueezeNet's fire3 -> fire4 squeeze, int8)."""
    model, x = fire(c=64, s=16, e=64, hw=55, o=16, bias=True), randn(1, 64, 55, 55)
    kw = {"precision": "int8", "calib_samples": {"x": randn(4, 1, 64, 55, 55)}}
    grouped = tilecore.compile(model, **kw)
    group_kernels = compiler.GroupKernels
    try:  # the same group, no member issuing another's loads
        compiler.GroupKernels = lambda *a, **k: group_kernels(*a, **{**k, "handoff": "none"})
        plain = tilecore.compile(model, **kw)
    finally:
        compiler.GroupKernels = group_kernels
    assert in_place_members(grouped) == [["concat"]]
    y = grouped.run({"x": x})["y"]
    assert hazard_checked() == []
    (op,) = grouped.stats()["ops"]
    member = {m["node"]: m for m in op["members"]}["concat"]
    assert member["cycles"] == 0 and member["instructions"] == 0
    np.testing.assert_array_equal(y, plain.run({"x": x})["y"])
    assert grouped.stats()["cycles"] < plain.stats()["cycles"]
    ref = ort_run(model, {"x": x})["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.99


def test_the_in_place_concat_costs_nothing_and_the_profile_says_why():
    from tilecore.cli.runtime import format_profile

    from tilecore.compiler.pipeline import PipelineOptions

    model, x = fire(hw=16), randn(1, 16, 16, 16)
    grouped = tilecore.compile(model)
    grouped.run({"x": x})
    (op,) = grouped.stats()["ops"]
    member = {m["node"]: m for m in op["members"]}["concat"]
    assert member["cycles"] == 0 and member["instructions"] == 0
    rows = [ln for ln in format_profile(grouped.stats(), grouped).splitlines() if ln.startswith("  concat")]
    assert len(rows) == 1 and "in place: its inputs' producers wrote its bytes (no copy)" in rows[0]
    # the L2 traffic of the copy (its bytes read and written) is gone
    b = grouped.stats()["bytes"]
    compiler_off = tilecore.compile(model, pipeline=PipelineOptions(disable=["ConcatInPlace"]))
    assert in_place_members(compiler_off) == [[]]
    compiler_off.run({"x": x})
    b_off = compiler_off.stats()["bytes"]
    cat_bytes = 32 * 16 * 16 * 4
    assert b_off["l2_read"] + b_off["l2_written"] - (b["l2_read"] + b["l2_written"]) >= 2 * cat_bytes
    assert grouped.stats()["cycles"] < compiler_off.stats()["cycles"]
    np.testing.assert_array_equal(grouped.run({"x": x})["y"], compiler_off.run({"x": x})["y"])


def test_a_dense_block_chain_of_concats_shares_one_place():
    """DenseNet's dense block: each layer concatenates every feature map before it (the first
    of them alone), so each Concat's output is the first bytes of the next one's: all of them
    in place, every feature map written once."""
    c, k, hw = 16, 16, 8
    nodes = [helper.make_node("Conv", ["x", "w0"], ["f0"], name="stem", pads=[1, 1, 1, 1])]
    inits = [("w0", randn(c, 3, 3, 3, scale=0.3))]
    feats, width = ["f0"], c
    for i in range(1, 4):
        nodes.append(helper.make_node("Concat", list(feats), [f"cat{i}"], name=f"concat{i}", axis=1))
        nodes.append(helper.make_node("Relu", [f"cat{i}"], [f"a{i}"], name=f"relu{i}"))
        nodes.append(helper.make_node("Conv", [f"a{i}", f"w{i}"], [f"f{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        inits.append((f"w{i}", randn(k, width, 3, 3, scale=0.1)))
        feats.append(f"f{i}")
        width += k
    nodes.append(helper.make_node("Concat", list(feats), ["cat4"], name="concat4", axis=1))
    nodes.append(helper.make_node("GlobalAveragePool", ["cat4"], ["y"], name="pool"))
    model = make_model(nodes, [("x", [1, 3, hw, hw], np.float32)], ["y"], inits)
    x = randn(1, 3, hw, hw)
    grouped, plain = tilecore.compile(model), tilecore.compile(model, group=False)
    assert in_place_members(grouped) == [["concat1", "concat2", "concat3", "concat4"]]
    y = grouped.run({"x": x})["y"]
    np.testing.assert_array_equal(y, plain.run({"x": x})["y"])
    np.testing.assert_allclose(y, ort_run(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)
    # every feature map where the last Concat puts it
    (step,) = grouped.describe()["steps"]
    places = {p["value"]: p for m in json.loads(step["debug"]["group"])["members"] for p in m["out"]}
    base = places["cat4"]["offset"]
    assert [places[f]["offset"] - base for f in feats] == [0, c * hw * hw * 4] + [
        (c + i * k) * hw * hw * 4 for i in (1, 2)]
    assert all(places[f"cat{i}"]["offset"] == base for i in (1, 2, 3))


def test_the_debugger_reads_each_value_where_it_is_complete():
    """What `tilecore compare` checks the shipped program with: each member's outputs read
    as the member completes; the in-place Concat's after its inputs' producers, all equal to
    ONNX Runtime's values."""
    from tilecore.tdb.capture import values_where_complete

    model, x = fire(), randn(1, 16, 8, 8)
    exe = tilecore.compile(model)
    assert in_place_members(exe) == [["concat"]]
    rows = values_where_complete(exe, {"x": x})
    order = [r["value"] for r in rows]
    assert order.index("cat") > max(order.index("r1"), order.index("r3"))
    names = ["sr", "r1", "r3", "cat"]
    ref = ort_run(with_outputs(model, names), {"x": x})
    got = {r["value"]: r["array"] for r in rows}
    for n in names + ["y"]:
        np.testing.assert_allclose(got[n], ref[n], rtol=1e-5, atol=1e-5)


def test_tdb_stops_at_the_in_place_concat_where_its_inputs_are_complete(tmp_path):
    """The Concat has no code: a breakpoint on it stops where the member before it completes,
    and its value printed there is ONNX Runtime's."""
    import io

    from tilecore.tdb import Debugger

    model, x = fire(), randn(1, 16, 8, 8)
    tilecore.compile(model).save(str(tmp_path / "f.tcx"))
    np.savez(tmp_path / "in.npz", x=x)
    out = io.StringIO()
    tdb = Debugger(str(tmp_path / "f.tcx"), inputs=str(tmp_path / "in.npz"), stdout=out)
    tdb.onecmd("break concat")
    tdb.onecmd("run")
    assert "Breakpoint 1, member 4 of 5 `concat` (Concat) of layer group `squeeze+4` (node 1) starts" in out.getvalue()
    tdb.onecmd("p cat")
    assert "produced by member `concat` (Concat) of layer group `squeeze+4`, in its L2 place" in out.getvalue()
    ref = ort_run(with_outputs(model, ["cat"]), {"x": x})["cat"]
    np.testing.assert_allclose(tdb.namespace["_"], ref, rtol=1e-5, atol=1e-5)
    tdb.onecmd("continue")
    assert "model finished" in out.getvalue()


@pytest.mark.parametrize("case", ["last_axis", "graph_output", "unaligned", "same_input_twice"])
def test_what_stays_a_copy(case):
    """A Concat along an axis with a dim before it > 1 (its inputs interleave), whose output
    is a graph output (its bytes are the caller's), whose inputs do not start at 64-byte
    boundaries, or that reads one input twice copies as before, and computes the same."""
    if case == "last_axis":
        model = fire(axis=3)
    elif case == "graph_output":
        model = fire(concat_out=True)
    elif case == "unaligned":
        model = fire(s=8, e=5, hw=3)  # 5 x 3 x 3 floats: 180 bytes
    else:
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
                 helper.make_node("Concat", ["c", "c"], ["cat"], name="concat", axis=1),
                 helper.make_node("Conv", ["cat", "w2"], ["y"], name="out")]
        model = make_model(nodes, [("x", [1, 16, 8, 8], np.float32)], ["y"],
                           [("w", randn(16, 16, 1, 1, scale=0.3)), ("w2", randn(8, 32, 1, 1, scale=0.2))])
    x = randn(*[d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim])
    exe = tilecore.compile(model)
    assert in_place_members(exe) == [[]]  # a group, its Concat copying
    out, ref = exe.run({"x": x}), ort_run(model, {"x": x})
    for k in ref:
        np.testing.assert_allclose(out[k], ref[k], rtol=1e-5, atol=1e-5)


def test_group_kernels_copies_when_the_shared_place_does_not_fit():
    """GroupKernels itself: the Concat member in place (attr in_place_concats) when its
    arena fits; given too little L2 for it, the Concat copies (the members' own plans)."""
    s_in = compiler.TensorSpec((1, 16, 8, 8), "float32")
    s_cat = compiler.TensorSpec((1, 32, 8, 8), "float32")
    target = "npu -cores=4"
    relu = compiler.LowerOp("Relu", {}, [s_in], [s_in], target)
    concat = compiler.LowerOp("Concat", {"axis": 1}, [s_in, s_in], [s_cat], target)
    assert list(concat.attrs["concat_offsets"]) == [0, 16 * 64]
    tail = compiler.LowerOp("Relu", {}, [s_cat], [s_cat], target)
    funcs, args = [relu, relu, concat, tail], [[0, 1], [0, 2], [1, 2, 3], [3, 4]]
    g = compiler.GroupKernels(funcs, args, [0], [4], "group")
    assert list(g.attrs["in_place_concats"]) == [2]
    places = {int(t): int(off) for t, off, *_ in g.attrs["l2_places"]}
    assert places[1] == places[3] and places[2] == places[3] + 16 * 64 * 4
    small = compiler.GroupKernels(funcs, args, [0], [4], "group", l2_bytes=int(g.attrs["arena_bytes"]) - 64)
    assert list(small.attrs["in_place_concats"]) == []


@pytest.mark.parametrize("member,value", [("expand1x1", True), ("concat", 1), ("concat", "yes")])
def test_a_bad_in_place_flag_is_a_named_error(member, value):
    """A hand-edited .tcx whose group entry marks a member in place that is no Concat, or with
    a value other than true, gets a TargetError naming the step and the member."""
    from tilecore.tdb.model import ModelTarget
    from tilecore.tdb.target import TargetError

    exe = tilecore.compile(fire())

    class Edited:  # the executable with its group entry changed, as a hand-edited file would be
        modules = exe.modules

        @staticmethod
        def describe():
            d = exe.describe()
            g = json.loads(d["steps"][0]["debug"]["group"])
            for m in g["members"]:
                m.pop("in_place", None)
                if m["node"] == member:
                    m["in_place"] = value
            d["steps"][0]["debug"]["group"] = json.dumps(g)
            return d

    index = [m["node"] for m in json.loads(exe.describe()["steps"][0]["debug"]["group"])["members"]].index(member)
    with pytest.raises(TargetError, match=rf"step `squeeze\+4`: its debug entry `group` has member {index} with "
                                          r"`in_place` .* \(only a Concat member has it, true\)"):
        ModelTarget(Edited())
