"""int8 MatMul / Gemm with constant weights on the pipelined plan (weights staged once in L2,
rows in chunks per core, weight blocks from L2, quantisation between mms): bit-exact against
numpy applying the same quantisation, on shapes with uneven chunks, blocks and K shares."""
import numpy as np
import pytest
from onnx import helper

import tilecore
from test_driver import make_model
from test_precision import calib_of, dequant, q_act, q_weights, randn

pytestmark = pytest.mark.npu


def compile_int8(model, calib):
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib=calib, report=rep, group=False)  # a kernel per node
    scripts = [f.script() for f in rep["npu_funcs"].values()]
    return exe, scripts


def test_matmul_int8_pipelined_bit_exact_with_saturation():
    a, w = randn(256, 640), randn(640, 320, scale=0.1)
    model = make_model([helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")],
                       [("a", [256, 640], np.float32)], ["y"], [("w", w)])
    t = float(np.abs(a).max()) * 0.7  # some activations saturate
    exe, scripts = compile_int8(model, {"a": t})
    assert any('"shared"' in s for s in scripts), "the cost model should pick the pipelined plan here"
    y = exe.run({"a": a})["y"]
    aq, sa = q_act(a, t)
    wq, sw = q_weights(w, 1)
    np.testing.assert_array_equal(y, dequant(aq @ wq, None, sa, sw, -1))


def test_batched_matmul_with_bias_uneven_blocks_bit_exact():
    """The batch folds into the rows; K = 202 does not split over 4 cores (core 0 stages the
    weights), N = 200 is not a whole number of weight blocks; the bias is folded into int32."""
    a, w, b = randn(2, 96, 202), randn(202, 200, scale=0.1), randn(200)
    nodes = [helper.make_node("MatMul", ["a", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["y"], name="add")]
    model = make_model(nodes, [("a", [2, 96, 202], np.float32)], ["y"], [("w", w), ("b", b)])
    calib = calib_of(("a", a))
    exe, scripts = compile_int8(model, calib)
    y = exe.run({"a": a})["y"]
    aq, sa = q_act(a, calib["a"])
    wq, sw = q_weights(w, 1)
    ops = [o["op_type"] for o in exe.stats()["ops"]]
    folded = "Add" not in ops  # FoldMatMulBias made the Add the int32 bias of a Gemm
    assert folded and "Gemm" in ops
    want = dequant(aq @ wq, b if folded else None, sa, sw, -1)
    np.testing.assert_array_equal(y, want if folded else want + b)


def test_matmul_after_relu_zero_point_bit_exact():
    """A Relu input is quantised over 255 steps with zero point -128 (folded into the bias)."""
    a, w = randn(128, 256), randn(256, 192, scale=0.1)
    nodes = [helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")]
    model = make_model(nodes, [("a", [128, 256], np.float32)], ["y"], [("w", w)])
    t = 2.0
    y = tilecore.compile(model, precision="int8", calib={"r": t}).run({"a": a})["y"]
    scale = np.float32(t / 255.0)
    inv = np.float32(1.0 / np.float64(scale))
    u = np.clip(np.rint(np.maximum(a, 0) * inv) - 128, -128, 127).astype(np.int64) + 128
    wq, sw = q_weights(w, 1)
    np.testing.assert_array_equal(y, dequant(u @ wq, None, scale, sw, -1))


def test_few_rows_column_plan_bit_exact():
    """Few rows (50, not a multiple of the cores: core 0 quantises all of A into L2), each core
    streaming its 130 columns of the weights from the DDR (a partial last block)."""
    a, w = randn(50, 512), randn(512, 520, scale=0.1)
    model = make_model([helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")],
                       [("a", [50, 512], np.float32)], ["y"], [("w", w)])
    calib = calib_of(("a", a))
    exe, scripts = compile_int8(model, calib)
    assert any('allocate((50, 512), "int8", "shared")' in s for s in scripts), "the column plan is expected here"
    y = exe.run({"a": a})["y"]
    aq, sa = q_act(a, calib["a"])
    wq, sw = q_weights(w, 1)
    np.testing.assert_array_equal(y, dequant(aq @ wq, None, sa, sw, -1))


@pytest.mark.parametrize("precision", ["f16", "bf16"])
def test_narrow_matmul_pipelined_matches_rounded_operands(precision):
    """f16/bf16 on the pipelined plan: A rounded by the DMA, the weights staged narrow in L2,
    f32 accumulation over K in one mm: numpy's product of the rounded operands."""
    from test_precision import rounded

    a, w = randn(256, 512), randn(512, 384, scale=0.1)
    model = make_model([helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")],
                       [("a", [256, 512], np.float32)], ["y"], [("w", w)])
    rep = {}
    exe = tilecore.compile(model, precision=precision, report=rep)
    assert any('"shared"' in f.script() for f in rep["npu_funcs"].values()), "the pipelined plan is expected here"
    y = exe.run({"a": a})["y"]
    ref = rounded(a, precision) @ rounded(w, precision)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_narrow_few_rows_column_plan_matches_rounded_operands():
    """f16 with few rows (50): A rounded by the DMA into L2, each core's columns of the
    weights streamed from the DDR."""
    from test_precision import rounded

    a, w = randn(50, 512), randn(512, 520, scale=0.1)
    model = make_model([helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")],
                       [("a", [50, 512], np.float32)], ["y"], [("w", w)])
    rep = {}
    exe = tilecore.compile(model, precision="f16", report=rep)
    assert any('allocate((50, 512), "float16", "shared")' in f.script() for f in rep["npu_funcs"].values())
    y = exe.run({"a": a})["y"]
    ref = rounded(a, "f16") @ rounded(w, "f16")
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("rows", [128, 512])
def test_f32_matmul_on_the_planned_kernels_matches_numpy(rows):
    """f32 MatMul with 2-D weights: the column plan (128 rows) or the pipelined one (512
    rows) when the cost model prefers them, against numpy's float64 product."""
    a, w = randn(rows, 768), randn(768, 256, scale=0.1)
    model = make_model([helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")],
                       [("a", [rows, 768], np.float32)], ["y"], [("w", w)])
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert any('"float32", "shared")' in f.script() for f in rep["npu_funcs"].values())
    ref = a.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(exe.run({"a": a})["y"], ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("precision", ["f32", "f16", "int8"])
def test_column_plan_reads_a_layer_group_intermediate_in_place(precision):
    """A Relu then a MatMul of few rows in one layer group: the MatMul's A is the group's
    L2 intermediate, which the column plan loads as it is (f16: rounded by the DMA; int8:
    quantised on load) with each core's columns of the weights on its DMA-out engine:
    against the compilation of one kernel per node (f32, f16: numpy's product)."""
    from test_precision import rounded

    a, w = randn(64, 1024), randn(1024, 256, scale=0.05)
    nodes = [helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")]
    model = make_model(nodes, [("a", [64, 1024], np.float32)], ["y"], [("w", w)])
    kw = {"calib": {"r": 2.0}} if precision == "int8" else {}
    rep = {}
    exe = tilecore.compile(model, precision=precision, report=rep, **kw)
    assert [g["nodes"] for g in rep["groups"]] == [["relu", "mm"]]
    group = next(iter(rep["npu_funcs"].values())).script()
    assert "tile.dma_prefetch(Bl" in group, "the column plan is expected here"
    y = exe.run({"a": a})["y"]
    alone = tilecore.compile(model, precision=precision, group=False, **kw).run({"a": a})["y"]
    if precision == "int8":
        np.testing.assert_array_equal(y, alone)
    else:
        r = np.maximum(a, 0)
        ref = r @ w if precision == "f32" else rounded(r, "f16") @ rounded(w, "f16")
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
        np.testing.assert_allclose(y, alone, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


@pytest.mark.parametrize("precision", ["f32", "int8"])
def test_streamed_column_plan_matches_numpy(precision):
    """A Neg then a MatMul and bias of 128 rows and K = 1024 in one layer group: the column
    plan streams each core's weights in pieces of rows, accumulating (int32 or f32), the
    last mm taking the bias and dequantisation in its epilogue from the sums so far; in
    int8 each core quantises the f32 A's columns of each piece itself: against numpy
    (int8: the quantised product dequantised in f32 as the epilogue does)."""
    a, w, b = randn(128, 1024), randn(1024, 256, scale=0.05), randn(256)
    nodes = [helper.make_node("Neg", ["a"], ["r"], name="neg"),
             helper.make_node("MatMul", ["r", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["y"], name="add")]
    model = make_model(nodes, [("a", [128, 1024], np.float32)], ["y"], [("w", w), ("b", b)])
    t = float(np.abs(a).max())
    rep = {}
    exe = tilecore.compile(model, precision=precision, report=rep,
                           **({"calib": {"r": t}} if precision == "int8" else {}))
    group = next(iter(rep["npu_funcs"].values())).script()
    assert "Acc[" in group and "tile.dma_prefetch(Bl" in group, "the streamed column plan is expected here"
    assert "tile.dma_copy_in(" in group  # the last block's store, half on the DMA-in engine
    if precision == "int8":  # the f32 A in L2 quantised by each core, piece by piece
        assert "Alc[" in group and "Afc[" in group
    y = exe.run({"a": a})["y"]
    if precision == "int8":
        aq, sa = q_act(-a, t)
        wq, sw = q_weights(w, 1)
        np.testing.assert_array_equal(y, dequant(aq @ wq, b, sa, sw, -1))
    else:
        ref = (-a).astype(np.float64) @ w.astype(np.float64) + b
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_streamed_column_plan_on_the_c_target_matches_numpy():
    """The streamed plan's last mm takes the bias in its epilogue from the sums stored at
    its output (tile.mm with accumulate and an epilogue): the c target's runtime gives
    numpy's product plus the bias (A marked in L2 is host memory there)."""
    from tilecore import compiler, ir

    a, b, c = randn(128, 1024), randn(1024, 256, scale=0.05), randn(256)
    specs = [compiler.TensorSpec(x.shape, x.dtype) for x in (a, b, c)]
    f = compiler.LowerOp("Gemm", {"tc_in_l2": [0]}, specs, [compiler.TensorSpec((128, 256), np.float32)],
                         "npu -cores=4")
    assert "Acc[" in ir.script(f) and "tile.dma_copy_in(" in ir.script(f), "the streamed column plan is expected here"
    y = np.zeros((128, 256), np.float32)
    tilecore.build(f, target="c")[f.attrs["global_symbol"]](a, b, c, y)
    ref = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_split_gemm_form_is_checked():
    """tc_split (sibling Gemms fused): widths that add up to N, a head width per output
    dividing its columns, the int8 form only; the column plan stores each output."""
    from tilecore import compiler

    specs = [compiler.TensorSpec(s, d) for s, d in
             (((128, 256), "int8"), ((256, 256), "int8"), ((256,), "int32"), ((256,), "float32"))]
    base = {"tc_precision": "int8", "tc_x_scale": 1.0, "tc_y_scale": 1.0, "tc_y_zero_point": 0}
    ok = dict(base, tc_split=[128, 128], tc_split_heads=[64, 0])
    assert compiler.HasStrategy("Gemm", ok, specs) == ""
    assert "add up to N" in compiler.HasStrategy("Gemm", dict(ok, tc_split=[128, 100]), specs)
    assert "must divide" in compiler.HasStrategy("Gemm", dict(ok, tc_split_heads=[48, 0]), specs)
    assert "int8 Gemm" in compiler.HasStrategy("Gemm", dict(ok, tc_y_rows_first=1), specs)
    outs = [compiler.TensorSpec((2, 128, 64), "int8"), compiler.TensorSpec((128, 128), "int8")]
    f = compiler.LowerOp("Gemm", dict(ok, tc_in_l2=[0]), specs, outs, "npu -cores=4")
    from tilecore import ir
    text = ir.script(f)
    assert "YH0[" in text and "Y1[" in text, "each output stored in its own layout"


def requantised_gemm(seed, K, extra, target):
    """An int8 Gemm of 128 rows and 1024 columns into an int8 Y (x_scale 0.05, y_scale 2,
    zero point 3) lowered with `extra` attrs and run on `target`: (its script, Y, numpy's
    requantisation: int32 sums + bias, f32 times f32(w_scale * f32(x_scale / y_scale)),
    zero point, nearest even, saturated)."""
    from tilecore import compiler, ir

    rng = np.random.default_rng(seed)
    M, N = 128, 1024
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    w = rng.integers(-127, 128, (K, N)).astype(np.int8)
    bias = rng.integers(-5000, 5000, N).astype(np.int32)
    w_scale = (rng.random(N) * 0.01 + 0.001).astype(np.float32)
    attrs = {"tc_precision": "int8", "tc_x_scale": 0.05, "tc_y_scale": 2.0, "tc_y_zero_point": 3, **extra}
    specs = [compiler.TensorSpec(x.shape, x.dtype) for x in (a, w, bias, w_scale)]
    f = compiler.LowerOp("Gemm", attrs, specs, [compiler.TensorSpec((M, N), np.int8)], "npu -cores=4")
    y = np.zeros((M, N), np.int8)
    tilecore.build(f, target=target)[f.attrs["global_symbol"]](a, w, bias, w_scale, y)
    acc = (a.astype(np.int64) @ w.astype(np.int64) + bias).astype(np.int32).astype(np.float32)
    sc = (w_scale * np.float32(np.float64(0.05) / np.float64(2.0))).astype(np.float32)
    v = (acc * sc).astype(np.float32) + np.float32(3)
    return ir.script(f), y, np.clip(np.rint(v.astype(np.float64)), -128, 127).astype(np.int8)


def test_streamed_int8_column_plan_on_the_c_target_matches_numpy():
    """int8 with an int8 Y and two blocks per core: the last mm's epilogue writes each
    block's int8 result over its int32 sums (a view of another dtype over the same
    buffer, which the c target addresses in bytes): against numpy's requantisation."""
    text, y, want = requantised_gemm(5, 512, {"tc_in_l2": [0]}, "c")
    assert "Acc[" in text and "Cf[1" in text, "the streamed column plan with two blocks is expected here"
    assert "tile.dma_copy_in(" in text  # the last block: epilogue and store per half of rows
    np.testing.assert_array_equal(y, want)


def test_middle_blocks_requantised_on_the_vector_engine_match_numpy(hazard_checked):
    """int8, 256 columns per core in blocks of 64, K = 256 streamed in pieces: the matrix
    engine bounds the plan, so the middle blocks' sums start at the bias and the
    vector engine requantises them (f32 of the sums, times the scale, plus the zero point,
    then int8 nearest even and saturated), the first and last blocks in the mm's epilogue:
    against numpy, on the npu with every L1 access ordered."""
    text, y, want = requantised_gemm(9, 256, {}, "npu -cores=4")
    assert "Af[" in text and "Acc[" in text, "the vector engine's requantisation is expected here"
    np.testing.assert_array_equal(y, want)
    assert hazard_checked() == []
