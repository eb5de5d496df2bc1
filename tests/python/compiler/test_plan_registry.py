"""The named plans of the Conv and Gemm strategies (docs/compiler.md, "Plans"): each family is
listed, a compile may turn one off by name (PipelineOptions(disable=...), for bisection), the
plan each member got is in the report and in `tilecore profile`, and a model compiled without a
family computes what ONNX Runtime computes (int8: the same bits as with it, the same
arithmetic)."""
import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import compiler, transform
from tilecore.compiler import CompileError
from tilecore.compiler.pipeline import PipelineOptions

from test_driver import make_model, ort_run

RNG = np.random.default_rng(29)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def pointwise_chain(c=64, hw=28):
    """Conv 1x1 -> Relu -> Conv 1x1 -> Relu: 1x1 Convs the int8 transposed plan takes."""
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="conv0"),
             helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], name="conv1"),
             helper.make_node("Relu", ["c1"], ["y"], name="relu1")]
    inits = [("w0", randn(c, c, 1, 1, scale=0.2)), ("b0", randn(c, scale=0.1)),
             ("w1", randn(c, c, 1, 1, scale=0.2)), ("b1", randn(c, scale=0.1))]
    return make_model(nodes, [("x", [1, c, hw, hw], np.float32)], ["y"], inits)


def member_plans(rep):
    return [m.get("plan", "") for g in rep["groups"] for m in g.get("members", [])]


def cosine(a, b):
    return float(np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b))


def test_the_families_are_listed():
    plans = {p["name"]: p for p in compiler.list_plans()}
    for name, op, last in [("conv.direct", "Conv", True), ("conv.transposed", "Conv", False),
                           ("conv.depthwise.vector", "Conv", True), ("conv.depthwise.matrix", "Conv", False),
                           ("gemm.tiled", "Gemm", True), ("gemm.pipelined", "Gemm", False),
                           ("gemm.columns", "Gemm", False)]:
        assert plans[name]["op"] == op and plans[name]["last_resort"] is last and plans[name]["doc"]


@pytest.fixture(scope="module")
def int8_pair():
    model = pointwise_chain()
    calib = {"x": np.abs(randn(4, 1, 64, 28, 28))}
    rep, rep_off = {}, {}
    exe = tilecore.compile(model, precision="int8", calib_samples=calib, report=rep)
    off = tilecore.compile(model, precision="int8", calib_samples=calib, report=rep_off,
                           pipeline=PipelineOptions(disable=["conv.transposed"]))
    return model, exe, off, rep, rep_off


def test_a_disabled_family_is_not_offered(int8_pair):
    model, exe, off, rep, rep_off = int8_pair
    plans, plans_off = member_plans(rep), member_plans(rep_off)
    assert any(p.startswith("conv.transposed") for p in plans), plans  # (the cost model's pick here)
    assert plans_off and all(p.startswith("conv.direct") for p in plans_off if p), plans_off
    assert 0 < rep_off["kernel_pipelines"] < rep["kernel_pipelines"]  # (fewer candidates priced)
    x = np.abs(randn(1, 64, 28, 28))
    y, y_off = exe.run({"x": x})["y"], off.run({"x": x})["y"]
    np.testing.assert_array_equal(y, y_off)  # (the same integer sums and epilogue, either plan)
    assert cosine(y, ort_run(model, {"x": x})["y"]) > 0.999


def test_the_profile_names_each_members_plan(int8_pair, tmp_path):
    _, exe, _, _, _ = int8_pair
    from tilecore.cli.runtime import format_profile

    exe.run({"x": np.abs(randn(1, 64, 28, 28))})
    text = format_profile(exe.stats(), exe)
    rows = [line for line in text.splitlines() if line.startswith("  /") or line.startswith("  conv")]
    assert any("conv.transposed tp=" in line for line in rows), text


def test_a_step_outside_a_group_says_its_plan_too():
    model = pointwise_chain(c=64, hw=28)
    calib = {"x": np.abs(randn(2, 1, 64, 28, 28))}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=calib, group=False, report=rep)
    from tilecore.cli.runtime import format_profile

    plans = {step: str(f.attrs["plan"]) for step, f in rep["npu_funcs"].items() if "plan" in f.attrs}
    assert len(plans) == 2 and all(p.startswith("conv.") for p in plans.values()), plans
    exe.run({"x": np.abs(randn(1, 64, 28, 28))})
    text = format_profile(exe.stats(), exe)
    for p in plans.values():
        assert p in text, text


def test_a_plan_that_cannot_be_disabled_or_does_not_exist_is_named():
    model = pointwise_chain(c=16, hw=8)
    with pytest.raises(CompileError, match="plan of last resort"):
        tilecore.compile(model, pipeline=PipelineOptions(disable=["conv.direct"]))
    with pytest.raises(CompileError, match="no pass or plan `conv.nope`.*conv.transposed"):
        tilecore.compile(model, pipeline=PipelineOptions(disable=["conv.nope"]))
    # (set on the PassContext: named before any strategy reads it, not left to a fallback)
    with transform.PassContext(config={"compiler.disabled_plans": "conv.transposed,conv.nope"}):
        with pytest.raises(CompileError, match="compiler.disabled_plans: no plan `conv.nope`"):
            tilecore.compile(model)
    spec = compiler.TensorSpec
    args = ("Conv", {"kernel_shape": [1, 1]}, [spec([1, 16, 8, 8], "float32"), spec([16, 16, 1, 1], "float32")],
            [spec([1, 16, 8, 8], "float32")])
    with transform.PassContext(config={"compiler.disabled_plans": "gemm.tiled"}):
        with pytest.raises(Exception, match="plan of last resort"):
            compiler.LowerOp(*args)


def test_an_attribute_that_asks_for_a_disabled_plan_is_an_error():
    spec = compiler.TensorSpec
    ins = [spec([1, 64, 28, 28], "int8"), spec([64, 64, 1, 1], "int8"), spec([64], "int32"), spec([64], "float32")]
    attrs = {"kernel_shape": [1, 1], "tc_precision": "int8", "tc_x_scale": 0.02, "tc_x_zero_point": 0,
             "tc_y_scale": 0.05, "tc_y_zero_point": 0, "tc_x_major": 1}
    with transform.PassContext(config={"compiler.disabled_plans": "conv.transposed"}):
        with pytest.raises(Exception, match="tc_x_major 1 .* conv.transposed, which compiler.disabled_plans"):
            compiler.LowerOp("Conv", attrs, ins, [spec([1, 64, 28, 28], "int8")])
    dw = [spec([1, 32, 28, 28], "int8"), spec([32, 1, 3, 3], "int8"), spec([32], "int32"), spec([32], "float32")]
    dw_attrs = {"group": 32, "pads": [1] * 4, "tc_precision": "int8", "tc_x_scale": 0.02, "tc_x_zero_point": 0,
                "tc_depthwise_shifted": 1}
    with transform.PassContext(config={"compiler.disabled_plans": "conv.depthwise.matrix"}):
        with pytest.raises(Exception, match="tc_depthwise_shifted 1 asks for conv.depthwise.matrix, which compiler.disabled_plans"):
            compiler.LowerOp("Conv", dw_attrs, dw, [spec([1, 32, 28, 28], "float32")])


def test_a_matmul_without_its_pipelined_and_column_plans_is_tiled():
    a, w = randn(64, 512), randn(512, 256, scale=0.05)
    model = make_model([helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")], [("a", [64, 512], np.float32)],
                       ["y"], [("w", w)])
    spec = compiler.TensorSpec
    args = ("MatMul", {}, [spec([64, 512], "float32"), spec([512, 256], "float32")], [spec([64, 256], "float32")])
    with transform.PassContext(config={"compiler.disabled_plans": "gemm.pipelined,gemm.columns"}):
        assert str(compiler.LowerOp(*args).attrs["plan"]) == "gemm.tiled"
    assert str(compiler.LowerOp(*args).attrs["plan"]).startswith("gemm.")  # (the search again, all offered)
    exe = tilecore.compile(model, pipeline=PipelineOptions(disable=["gemm.pipelined", "gemm.columns"]))
    np.testing.assert_allclose(exe.run({"a": a})["y"], a.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
