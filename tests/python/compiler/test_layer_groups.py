"""Layer groups (docs/compiler.md, "Layer groups"): runs of npu steps compiled as one kernel
whose intermediates stay in L2. Checked against the same model compiled a step per node
(bit for bit: the members run the same kernels, only where their tensors live changes),
against ONNX Runtime, for the DDR traffic saved, the L2 budget, what breaks a group, and
with every L1/L2 access ordered (the simulator's hazard mode)."""
import json

import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import compiler
from tilecore.compiler import layer_groups
from tilecore.compiler.driver import CompileError

from test_driver import make_model, ort_run

RNG = np.random.default_rng(31)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def bottleneck(c=32, hw=14):
    """A ResNet bottleneck: 1x1 -> 3x3 -> 1x1 with the residual Add and Relus, then a
    global pool (a second reader of the block's output would keep it in the DDR)."""
    w1, w2, w3 = randn(c // 2, c, 1, 1, scale=0.3), randn(c // 2, c // 2, 3, 3, scale=0.1), randn(c, c // 2, 1, 1,
                                                                                                    scale=0.3)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3"),
             helper.make_node("Add", ["c3", "x"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["y"], name="relu3")]
    return make_model(nodes, [("x", [1, c, hw, hw], np.float32)], ["y"], [("w1", w1), ("w2", w2), ("w3", w3)])


def conv_chain(n, c, hw, scale):
    """n 3x3 Convs of c channels over hw x hw, each reading the last: (model, output name)."""
    nodes, prev = [], "x"
    for i in range(n):
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        prev = f"c{i}"
    inits = [(f"w{i}", randn(c, c, 3, 3, scale=scale)) for i in range(n)]
    return make_model(nodes, [("x", [1, c, hw, hw], np.float32)], [prev], inits), prev


def convnext_blocks(n, c, hw):
    """n ConvNeXt blocks as torchvision's CNBlock exports them: a 7x7 depthwise Conv, to NHWC,
    LayerNormalization, Linear (MatMul + Add), GELU (its Erf form), Linear, to NCHW, the layer
    scale (a per-channel Mul) and the residual Add: (model, output name)."""
    nodes, inits, prev = [], [], "x"
    for b in range(n):
        p = f"b{b}_"
        inits += [(p + "wdw", randn(c, 1, 7, 7, scale=0.2)), (p + "bdw", randn(c, scale=0.1)),
                  (p + "g", 1 + randn(c, scale=0.1)), (p + "be", randn(c, scale=0.1)),
                  (p + "w1", randn(c, 4 * c, scale=0.1)), (p + "b1", randn(4 * c, scale=0.1)),
                  (p + "w2", randn(4 * c, c, scale=0.05)), (p + "b2", randn(c, scale=0.1)),
                  (p + "ls", randn(c, 1, 1, scale=0.5)), (p + "sqrt2", np.array(np.sqrt(2), np.float32)),
                  (p + "one", np.array(1, np.float32)), (p + "half", np.array(0.5, np.float32))]
        node = helper.make_node
        nodes += [node("Conv", [prev, p + "wdw", p + "bdw"], [p + "dw"], name=p + "dwconv", group=c,
                       kernel_shape=[7, 7], pads=[3, 3, 3, 3]),
                  node("Transpose", [p + "dw"], [p + "t"], name=p + "to_nhwc", perm=[0, 2, 3, 1]),
                  node("LayerNormalization", [p + "t", p + "g", p + "be"], [p + "ln"], name=p + "norm", axis=-1,
                       epsilon=1e-6),
                  node("MatMul", [p + "ln", p + "w1"], [p + "m1"], name=p + "fc1"),
                  node("Add", [p + "m1", p + "b1"], [p + "h"], name=p + "fc1_bias"),
                  node("Div", [p + "h", p + "sqrt2"], [p + "hd"], name=p + "gelu_div"),
                  node("Erf", [p + "hd"], [p + "he"], name=p + "gelu_erf"),
                  node("Add", [p + "he", p + "one"], [p + "h1"], name=p + "gelu_add"),
                  node("Mul", [p + "h", p + "h1"], [p + "hm"], name=p + "gelu_mul"),
                  node("Mul", [p + "hm", p + "half"], [p + "gl"], name=p + "gelu_half"),
                  node("MatMul", [p + "gl", p + "w2"], [p + "m2"], name=p + "fc2"),
                  node("Add", [p + "m2", p + "b2"], [p + "o"], name=p + "fc2_bias"),
                  node("Transpose", [p + "o"], [p + "tb"], name=p + "to_nchw", perm=[0, 3, 1, 2]),
                  node("Mul", [p + "tb", p + "ls"], [p + "s"], name=p + "layer_scale"),
                  node("Add", [p + "s", prev], [p + "y"], name=p + "residual")]
        prev = p + "y"
    return make_model(nodes, [("x", [1, c, hw, hw], np.float32)], [prev], inits), prev


def ddr_l2(exe, feeds):
    exe.run(feeds)
    b = exe.stats()["bytes"]
    return b["ddr_read"] + b["ddr_written"], b["l2_read"] + b["l2_written"]


@pytest.mark.parametrize("precision", ["f32", "int8"])
def test_group_gives_the_per_node_bits_with_less_ddr_traffic(precision, hazard_checked):
    model = bottleneck()
    x = randn(1, 32, 14, 14)
    kw = {"calib_samples": {"x": randn(4, 1, 32, 14, 14)}} if precision == "int8" else {}
    rep, rep_off = {}, {}
    grouped = tilecore.compile(model, precision=precision, report=rep, **kw)
    plain = tilecore.compile(model, precision=precision, report=rep_off, group=False, **kw)
    assert rep_off["groups"] == [] and rep_off["steps"] == 3   # conv1, conv2, conv3 (Relus and Add fused)
    assert rep["steps"] == 1 and len(rep["groups"]) == 1
    g = rep["groups"][0]
    assert g["nodes"] == ["conv1", "conv2", "conv3"] and sorted(g["internal"]) == ["r1", "r2"]
    itemsize = 1 if precision == "int8" else 4
    assert g["l2_bytes"] == 2 * 16 * 14 * 14 * itemsize
    y = grouped.run({"x": x})["y"]
    np.testing.assert_array_equal(y, plain.run({"x": x})["y"])
    ref = ort_run(model, {"x": x})["y"]
    cos = float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref)))
    assert cos > (0.999999 if precision == "f32" else 0.99)
    assert hazard_checked() == []
    (ddr_g, l2_g), (ddr_p, l2_p) = ddr_l2(grouped, {"x": x}), ddr_l2(plain, {"x": x})
    # r1 and r2 are written and read in L2 instead of DDR
    assert ddr_g <= ddr_p - 2 * g["l2_bytes"] and l2_g >= l2_p + 2 * g["l2_bytes"]


@pytest.mark.parametrize("budget,sizes", [
    (100, [2, 2, 2]),  # a member reads one intermediate and writes the next: 128 KiB live
    (160, [6]),        # no more than two live at once: the six intermediates share 128 KiB of L2
])
def test_the_l2_budget_splits_a_chain(monkeypatch, budget, sizes):
    """Intermediates of 64 KiB each, each live from its writer to its reader: the budget
    bounds the L2 live at one member, not the sum, and the group's L2 is that peak."""
    monkeypatch.setattr(layer_groups, "L2_BUDGET", budget << 10)
    model, prev = conv_chain(6, 16, 32, 0.1)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert [len(g["nodes"]) for g in rep["groups"]] == sizes
    assert all(g["l2_bytes"] == (64 << 10) * min(2, len(g["nodes"]) - 1) for g in rep["groups"])
    x = randn(1, 16, 32, 32)
    np.testing.assert_allclose(exe.run({"x": x})[prev], ort_run(model, {"x": x})[prev], rtol=1e-4, atol=1e-4)


def test_a_group_that_does_not_build_is_grouped_again_at_the_safe_budget(monkeypatch):
    """Intermediates of 2 MiB each: a run at a budget without limit takes the six Convs, whose
    kernel does not build (two live at once and the Convs' own buffers pass the 4 MiB of
    L2); grouped again at L2_BUDGET_SAFE it is three groups of two, not halves of halves, and
    the budget's second try is no fallback (strict compiles it)."""
    monkeypatch.setattr(layer_groups, "L2_BUDGET", 1 << 40)
    model, prev = conv_chain(6, 32, 128, 0.05)
    rep = {}
    exe = tilecore.compile(model, report=rep, strict=True)
    assert [s["nodes"] for s in rep["groups_regrouped"]] == [[f"conv{i}" for i in range(6)]]
    assert "overflows" in rep["groups_regrouped"][0]["reason"] and rep["group_splits"] == []
    assert [g["nodes"] for g in rep["groups"]] == [[f"conv{i}", f"conv{i + 1}"] for i in (0, 2, 4)]
    x = randn(1, 32, 128, 128)
    np.testing.assert_allclose(exe.run({"x": x})[prev], ort_run(model, {"x": x})[prev], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("limit,sizes", [(5, [3, 3]), (4, [2, 2, 2]), (256, [6])])
def test_a_run_ends_before_it_would_take_more_parameters_than_a_kernel(monkeypatch, limit, sizes):
    """Each Conv of the chain adds its weights to the run's parameters (the input, the
    weights, the output): a run ends where the next step would pass the limit, instead of
    being built and split in halves (no group_splits)."""
    monkeypatch.setattr(layer_groups, "max_params", lambda: limit)
    model, prev = conv_chain(6, 8, 8, 0.2)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert [len(g["nodes"]) for g in rep["groups"]] == sizes and rep["group_splits"] == []
    for st in exe.describe()["steps"]:
        assert len(st["args"]) <= limit
    x = randn(1, 8, 8, 8)
    np.testing.assert_allclose(exe.run({"x": x})[prev], ort_run(model, {"x": x})[prev], rtol=1e-4, atol=1e-4)


def test_the_parameter_limit_is_the_npu_kernels():
    assert layer_groups.max_params() == 256  # docs/tc1.md: a kernel takes at most 256 arguments


def test_a_free_view_inside_a_group_and_a_graph_output():
    """conv -> conv2 -> Flatten -> MatMul: the view is an alias inside the group (conv2's
    output stays in L2, read by the MatMul in its flattened shape, and the view is recorded
    on the group's step); a value that is also a graph output is written to the DDR, not
    kept in L2. A view whose output another step reads leaves its input in the DDR."""
    w, m = randn(8, 3, 3, 3, scale=0.3), randn(8 * 6 * 6, 10, scale=0.1)
    w2 = randn(8, 8, 1, 1, scale=0.3)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "w2"], ["d"], name="conv2"),
             helper.make_node("Flatten", ["d"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "m"], ["y"], name="fc")]
    model = make_model(nodes, [("x", [1, 3, 6, 6], np.float32)], ["y", "c"], [("w", w), ("w2", w2), ("m", m)])
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert [g["nodes"] for g in rep["groups"]] == [["conv", "conv2", "fc"]]
    assert rep["groups"][0]["internal"] == ["d"]   # c is a graph output; f is d's bytes
    steps = exe.describe()["steps"]
    assert len(steps) == 1 and json.loads(steps[0]["debug"]["views"])[0][:4] == ["flat", "Flatten", "d", "f"]
    x = randn(1, 3, 6, 6)
    out, ref = exe.run({"x": x}), ort_run(model, {"x": x})
    for k in ("y", "c"):
        np.testing.assert_allclose(out[k], ref[k], rtol=1e-4, atol=1e-4)
    # the flattened value also read by a host step (a float64 cast): d goes to the DDR
    nodes2 = nodes + [helper.make_node("Cast", ["f"], ["f64"], name="cast", to=11),
                      helper.make_node("Cast", ["f64"], ["fi"], name="back", to=1)]
    model2 = make_model(nodes2, [("x", [1, 3, 6, 6], np.float32)], ["y", "c", "fi"],
                        [("w", w), ("w2", w2), ("m", m)])
    rep2 = {}
    exe2 = tilecore.compile(model2, report=rep2)
    assert all("d" not in g["internal"] for g in rep2["groups"])
    out2, ref2 = exe2.run({"x": x}), ort_run(model2, {"x": x})
    np.testing.assert_allclose(out2["y"], ref2["y"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out2["fi"], ref2["fi"], rtol=1e-4, atol=1e-4)


def test_group_kernels_names_bad_lists():
    s = compiler.TensorSpec((1, 8), "float32")
    f = compiler.LowerOp("Relu", {}, [s], [s], "npu -cores=4")
    with pytest.raises(ValueError, match="2 params, given 3 tensors"):
        compiler.GroupKernels([f], [[0, 1, 2]], [0], [1])
    with pytest.raises(ValueError, match="tensor 5 is used by no kernel"):
        compiler.GroupKernels([f], [[0, 1]], [0, 5], [1])
    with pytest.raises(ValueError, match="tensor 0 is listed twice"):
        compiler.GroupKernels([f], [[0, 1]], [0, 0], [1])


def test_a_group_with_more_parameters_than_a_kernel_takes_is_refused_before_it_is_planned():
    """129 members, each with an input and an output of the group's: 258 parameters, more
    than an npu kernel takes; GroupKernels refuses it with the build's own error (the
    driver then splits the group instead of planning and pricing one that cannot build)."""
    s = compiler.TensorSpec((1, 8), "float32")
    f = compiler.LowerOp("Relu", {}, [s], [s], "npu -cores=4")
    n = 129
    with pytest.raises(ValueError, match=r"kernel `group` has 258 parameters \(at most \d+\)"):
        compiler.GroupKernels([f] * n, [[2 * i, 2 * i + 1] for i in range(n)], [2 * i for i in range(n)],
                              [2 * i + 1 for i in range(n)], "group")


def test_tdb_names_the_group_a_node_runs_in(tmp_path):
    """tdb on a grouped executable: a breakpoint on a member node says which group step
    runs it and stops where the member starts inside that step (the step records each
    member's code); one on the group's step stops before the step."""
    import io

    from tilecore.tdb import Debugger

    model = bottleneck(c=8, hw=6)
    tilecore.compile(model).save(str(tmp_path / "g.tcx"))
    np.savez(tmp_path / "in.npz", x=randn(1, 8, 6, 6))
    out = io.StringIO()
    tdb = Debugger(str(tmp_path / "g.tcx"), inputs=str(tmp_path / "in.npz"), stdout=out)
    tdb.onecmd("break conv2")
    assert "Breakpoint 1: node `conv2` (member 2 of the layer group step `conv1+2`: stops when the member starts" \
        in out.getvalue()
    tdb.onecmd("break conv1+2")
    tdb.onecmd("run")
    assert "Breakpoint 2, node `conv1` (layer group of 3 nodes: `conv1`, `conv2`, `conv3`; npu) is next" \
        in out.getvalue()
    tdb.onecmd("continue")
    assert "Breakpoint 1, member 2 of 3 `conv2` (Conv) of layer group `conv1+2` (node 1) starts" in out.getvalue()


def test_a_group_that_does_not_build_is_split(monkeypatch):
    """A group's kernel that fails to build (here: any of more than two members) is split
    in halves until the parts build; the model still computes the same."""
    real = compiler.GroupKernels

    def picky(funcs, *a, **k):
        if len(funcs) > 2:
            raise ValueError("PlanLocalMemory: shared memory (L2) overflows")
        return real(funcs, *a, **k)

    monkeypatch.setattr(compiler, "GroupKernels", picky)
    model, prev = conv_chain(6, 8, 10, 0.2)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert [g["nodes"] for g in rep["groups"]] == [["conv1", "conv2"], ["conv4", "conv5"]] and rep["steps"] == 4
    # each split named with its nodes and why: the whole chain, then its first half of three
    assert [(s["nodes"], s["reason"]) for s in rep["group_splits"]][:2] == [
        ([f"conv{k}" for k in range(6)], "PlanLocalMemory: shared memory (L2) overflows"),
        (["conv0", "conv1", "conv2"], "PlanLocalMemory: shared memory (L2) overflows")]
    x = randn(1, 8, 10, 10)
    np.testing.assert_allclose(exe.run({"x": x})[prev], ort_run(model, {"x": x})[prev], rtol=1e-4, atol=1e-4)
    assert rep["plan_fallbacks"] == []
    # strict: each split is an error, named
    with pytest.raises(CompileError, match=r"(?s)strict: the compiler fell back from the plans it chose:\n"
                                           r"  conv0, conv1, conv2, conv3, conv4, conv5: the layer group, split in "
                                           r"halves \(PlanLocalMemory: shared memory \(L2\) overflows\)"):
        tilecore.compile(model, strict=True)


@pytest.mark.parametrize("where", ["GroupKernels", "LowerOp"])
def test_a_defect_in_the_compiler_is_raised_not_taken_for_a_plan_that_failed(monkeypatch, where):
    """A TypeError raised in the compiler's Python while a group is built (a stale call, a
    missing argument) is a defect: it reaches the caller, where a plan that does not fit (an
    FFI error, a ValueError) is split or falls back. The same error from C++ (the FFI's
    TypeError) is a plan that failed, and the group falls back as before."""
    from tilecore.ffi import error as ffi_error

    real = getattr(compiler, where)

    def broken(*a, **k):
        if where == "GroupKernels" or "tc_in_l2" in a[1]:
            raise TypeError("plan() takes 9 positional arguments but 10 were given")
        return real(*a, **k)

    monkeypatch.setattr(compiler, where, broken)
    model, prev = conv_chain(3, 8, 10, 0.2)
    with pytest.raises(TypeError, match="positional arguments"):
        tilecore.compile(model)

    def failed(*a, **k):
        if where == "GroupKernels" or "tc_in_l2" in a[1]:
            raise ffi_error.TypeError("Conv: an operand of the wrong type")
        return real(*a, **k)

    monkeypatch.setattr(compiler, where, failed)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    fell_back = rep["group_splits"] if where == "GroupKernels" else rep["plan_fallbacks"]
    assert fell_back and all(f["reason"] == "Conv: an operand of the wrong type" for f in fell_back)
    x = randn(1, 8, 10, 10)
    np.testing.assert_allclose(exe.run({"x": x})[prev], ort_run(model, {"x": x})[prev], rtol=1e-4, atol=1e-4)


def test_a_member_whose_l2_plan_fails_is_recorded(monkeypatch):
    """A member lowered again for its tensors in L2 that fails falls back to its DDR plan (a
    correct program): recorded in plan_fallbacks, an error with strict."""
    real = compiler.LowerOp

    def no_l2(op, attrs, *a, **k):
        if "tc_in_l2" in attrs and op == "Conv":
            raise ValueError("Conv: no plan for these tensors in L2")
        return real(op, attrs, *a, **k)

    monkeypatch.setattr(compiler, "LowerOp", no_l2)
    model, prev = conv_chain(3, 8, 10, 0.2)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert rep["plan_fallbacks"] and all(f["reason"] == "Conv: no plan for these tensors in L2"
                                         for f in rep["plan_fallbacks"])
    assert {n for f in rep["plan_fallbacks"] for n in f["nodes"]} <= {f"conv{k}" for k in range(3)}
    x = randn(1, 8, 10, 10)
    np.testing.assert_allclose(exe.run({"x": x})[prev], ort_run(model, {"x": x})[prev], rtol=1e-4, atol=1e-4)
    with pytest.raises(CompileError, match="its plan for the DDR instead"):
        tilecore.compile(model, strict=True)


def test_tdb_stops_before_the_step_that_computes_a_fused_node(tmp_path):
    """A breakpoint on a node fused into a Conv's epilogue, by op type or by name, stops
    before that Conv's step and says which fused node it computes."""
    import io

    from tilecore.tdb import Debugger

    model = bottleneck(c=8, hw=6)
    report = {}
    tilecore.compile(model, group=False, report=report).save(str(tmp_path / "f.tcx"))
    fused = {n for e in report["fused"] for n in e["fused"]}
    assert "add" in fused  # the residual Add is computed by conv3
    np.savez(tmp_path / "in.npz", x=randn(1, 8, 6, 6))
    for spec in ("op:Add", "add"):
        out = io.StringIO()
        tdb = Debugger(str(tmp_path / "f.tcx"), inputs=str(tmp_path / "in.npz"), stdout=out)
        tdb.onecmd(f"break {spec}")
        tdb.onecmd("run")
        assert "Breakpoint 1, node `conv3` (Conv, npu, computes `add` (Add)" in out.getvalue(), out.getvalue()


@pytest.mark.parametrize("key,entry", [
    ("fused", "[[\"add\", \"Add\""), ("fused", "[[\"add\"]]"), ("fused", "{\"add\": \"Add\"}"),
    ("fused", "[[1, 2]]"), ("group", "{\"nodes\": \"conv1\"}"), ("group", "[1]"), ("group", "{"),
    ("views", "[[\"r\", \"Reshape\", \"a\", \"b\"]]"), ("views", "[[\"r\", \"Reshape\", \"a\", \"b\", [\"2\"]]]"),
    ("views", "null x")])
def test_tdb_names_a_bad_debug_entry(key, entry):
    """A .tcx whose step debug entry `fused`, `group` or `views` is not JSON of its form (a
    hand-edited file) gets a TargetError naming the step and the entry, not a crash."""
    from tilecore.tdb.model import ModelTarget
    from tilecore.tdb.target import TargetError

    exe = tilecore.compile(bottleneck(c=8, hw=6), group=False)

    class Edited:  # the executable with one debug entry changed, as a hand-edited file would be
        modules = exe.modules

        @staticmethod
        def describe():
            d = exe.describe()
            d["steps"][-1]["debug"][key] = entry
            return d

    with pytest.raises(TargetError, match=rf"step `conv3`: its debug entry `{key}` is not"):
        ModelTarget(Edited())


def _int8_conv_1x1(c, m, hw, extra):
    """An int8 1x1 Conv with int8 input and output (a ResNet layer3 conv1 at c=1024, m=256,
    hw=14) lowered for 4 cores: its PrimFunc."""
    attrs = {"tc_precision": "int8", "tc_x_scale": 0.05, "tc_x_zero_point": 0, "tc_y_scale": 0.03,
             "tc_y_zero_point": 0, "tc_activation": "Relu", **extra}
    specs = [compiler.TensorSpec((1, c, hw, hw), "int8"), compiler.TensorSpec((m, c, 1, 1), "int8"),
             compiler.TensorSpec((m,), "int32"), compiler.TensorSpec((m,), "float32")]
    return compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((1, m, 1 * hw, hw), "int8")], "npu -cores=4")


def test_a_member_is_planned_for_its_tensors_in_l2():
    """In the DDR, reading the input once per block of 64 channels on each of 4 cores costs
    more than leaving two cores idle; with the input in L2 (tc_in_l2) all four work."""
    ddr = compiler.estimate_cost(_int8_conv_1x1(1024, 256, 14, {}))
    l2 = compiler.estimate_cost(_int8_conv_1x1(1024, 256, 14, {"tc_in_l2": [0]}))
    busy = lambda e: sum(1 for c in e["engine_busy"] if c["mm"] > 0)  # noqa: E731
    assert busy(ddr) == 2 and busy(l2) == 4
    ideal = 1024 * 256 * 14 * 14 // (4 * 2048)  # the MACs at the int8 peak of 4 cores
    assert l2["cycles"] < 0.6 * ddr["cycles"] and l2["cycles"] < 2 * ideal
    with pytest.raises(ValueError, match="tc_in_l2 names param 5; the kernel has 5"):
        _int8_conv_1x1(1024, 256, 14, {"tc_in_l2": [5]})


def test_the_profile_measures_a_group_by_its_members():
    from tilecore.cli.runtime import format_profile

    rep = {}
    exe = tilecore.compile(bottleneck(), report=rep)
    exe.run({"x": randn(1, 32, 14, 14)})
    members = rep["groups"][0]["members"]
    # MACs counted by hand: M x C/group x KH x KW x OH x OW
    assert [(m["node"], m["op"], m["macs"]) for m in members] == [
        ("conv1", "Conv", 16 * 32 * 196), ("conv2", "Conv", 16 * 16 * 9 * 196), ("conv3", "Conv", 32 * 16 * 196)]
    (step,) = exe.stats()["ops"]
    est = sum(m["est_cycles"] for m in members)
    assert 0.85 * step["cycles"] < est < 1.15 * step["cycles"]  # the cost model against the simulator
    rows = [ln for ln in format_profile(exe.stats(), exe).splitlines() if ln.startswith("  conv")]
    assert [ln.split()[0] for ln in rows] == ["conv1", "conv2", "conv3"]
    measured = [int(ln.split()[2]) for ln in rows]  # the simulator's cycles of each member's code
    assert measured == [m["cycles"] for m in step["members"]]
    assert step["members_cycles"] - step["members_overlap"] + step["outside_members"] == step["cycles"]
    assert measured[1] > measured[0]  # the 3x3 Conv has 4.5x the MACs


def test_a_group_whose_descriptors_do_not_fit_beside_its_spread_buffers_is_packed_not_split(hazard_checked):
    """Two ConvNeXt blocks of its first stage (96 channels, 56 x 56) in int8 are one layer
    group of thirteen members (each layer scale folded into its Linear). Its kernel holds every member's descriptors above the buffers of
    the depthwise Conv, which PlanLocalMemory spreads a bank apiece over all but 7 KiB of L1:
    the npu build lowers the kernel again for the L1 below the descriptors (the buffers
    packed) instead of the group being split, which sent a Gemm's input through the DDR."""
    model, out = convnext_blocks(2, 96, 56)
    calib = {"x": randn(4, 1, 96, 56, 56)}
    rep = {}
    grouped = tilecore.compile(model, precision="int8", report=rep, calib_samples=calib)
    assert rep["group_splits"] == [] and rep["plan_fallbacks"] == []
    assert [len(g["nodes"]) for g in rep["groups"]] == [13]
    plain = tilecore.compile(model, precision="int8", group=False, calib_samples=calib)
    x = randn(1, 96, 56, 56)
    y = grouped.run({"x": x})[out]
    np.testing.assert_array_equal(y, plain.run({"x": x})[out])
    ref = ort_run(model, {"x": x})[out]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.999
    assert hazard_checked() == []
