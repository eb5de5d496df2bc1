"""Epilogue fusion (docs/compiler.md, step 5) and int8 activations between int8 Convs
(docs/precision.md, "int8 between ops"): the Conv strategy's fused residual, Relu/Clip,
int8 data, int8 residual and int8 output against numpy references written here; whole
models against ONNX Runtime and bit for bit against the unfused compilation."""
import re
import zlib

import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import compiler

from strategy_util import CLIP_BOUNDS, fused_activation_attrs, fused_activation_ref, run_lowered
from test_driver import make_model, ort_run
from test_driver import se_block as shared_se_block
from test_precision import conv_ref

RNG = np.random.default_rng(21)


@pytest.fixture(autouse=True)
def _seeded(request):
    """Each test draws from a generator seeded by its own name: its data does not depend on
    which tests ran before it on its worker."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def int8_residual_ref(acc, w_scale, sx, rq, sr, zr, lo, hi, sy=None, zy=0):
    """docs/precision.md, "Int8 residuals": an int8 residual added in its own units, each
    step rounded to f32; the output scaled from those units after (int8 when sy is given)."""
    f, d = np.float32, np.float64
    rs = f(sr)
    u = acc.astype(f) * (w_scale * f(d(f(sx)) / d(rs))).reshape(1, -1, 1, 1)
    u = u + rq.astype(f)
    u = u + f(-zr)
    if lo is not None:
        u = np.maximum(u, f(lo / d(rs)))
    if hi is not None:
        u = np.minimum(u, f(hi / d(rs)))
    if sy is None:
        return u * rs
    t = u * f(d(rs) / d(f(sy))) + f(zy)
    return np.clip(np.rint(t), -128, 127).astype(np.int8)


def int8_conv_operands(x_shape, x_int8, w_shape, y_shape):
    """Random operands of an int8 Conv in the quantised-node form: X (int8, or f32 to
    quantise on load), int8 W, the int32 bias, w_scale, and an int8 and an f32 residual."""
    m = w_shape[0]
    x = RNG.integers(-128, 128, x_shape).astype(np.int8) if x_int8 else randn(*x_shape)
    wq = RNG.integers(-127, 128, w_shape).astype(np.int8)
    bq = RNG.integers(-2000, 2000, m).astype(np.int32)
    w_scale = (RNG.random(m) * 0.002 + 0.0005).astype(np.float32)
    rq = RNG.integers(-128, 128, y_shape).astype(np.int8)
    return x, wq, bq, w_scale, rq, randn(*y_shape)


# ---- the Conv strategy ---------------------------------------------------------------


@pytest.mark.parametrize("xs,ws,attrs,act", [
    ((1, 8, 10, 10), (16, 8, 3, 3), dict(pads=[1, 1, 1, 1]), {"tc_activation": "Relu"}),
    ((2, 40, 9, 9), (24, 40, 3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2]), {}),       # two K chunks
    ((1, 16, 7, 7), (160, 16, 1, 1), {}, {"tc_activation": "Clip", "tc_clip_min": -0.5, "tc_clip_max": 0.75}),
    ((1, 12, 9, 9), (12, 1, 3, 3), dict(group=12, pads=[1, 1, 1, 1]),                   # depthwise
     {"tc_activation": "Clip", "tc_clip_min": 0.0, "tc_clip_max": 6.0}),
])
def test_conv_residual_and_activation_f32(xs, ws, attrs, act):
    x, w, b = randn(*xs), randn(*ws, scale=0.3), randn(ws[0])
    y = conv_ref(x.astype(np.float64), w.astype(np.float64), None, attrs.get("strides", [1])[0],
                 attrs.get("pads", [0])[0], 1, attrs.get("group", 1)) + b.reshape(1, -1, 1, 1)
    r = randn(*y.shape)
    ref = y + r
    if act:
        ref = np.clip(ref, act.get("tc_clip_min", 0.0), act.get("tc_clip_max", np.inf))
    out = run_lowered("Conv", dict(attrs, tc_residual=1, **act), [x, w, b, r], [np.zeros(y.shape, np.float32)])[0]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("hw,m,pipeline,stage,c", [
    (8, 40, None, None, 24),   # one item: the cost model's plan
    (56, 160, 1, 0, 24),       # items pipelined: 14 row tiles x 2 channel blocks over 4 cores, 4 or 3 items a core
    (56, 160, 0, 0, 24),       # the same, never pipelined
    (56, 160, 1, 1, 24),       # pipelined, the int8 input read from L2
    (28, 128, None, None, 64),  # 3 chunks of input channels, each unfolded while the last one multiplies
])
def test_conv_int8_in_int8_residual_int8_out(hw, m, pipeline, stage, c, hazard_checked):
    """Every int8 path at once, bit-exact against numpy doing the same f32 steps; every L1
    access ordered (the simulator's hazard mode)."""
    xs, ws = (1, c, hw, hw), (m, c, 3, 3)
    xq = RNG.integers(-128, 128, xs).astype(np.int8)
    wq = RNG.integers(-127, 128, ws).astype(np.int8)
    bq = RNG.integers(-2000, 2000, ws[0]).astype(np.int32)
    w_scale = (RNG.random(ws[0]) * 0.002 + 0.0005).astype(np.float32)
    rq = RNG.integers(-128, 128, (1, m, hw, hw)).astype(np.int8)
    sx, zx, sr, zr, sy, zy = 0.05, -3, 0.04, 5, 0.03, -7
    attrs = {"pads": [1, 1, 1, 1], "tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx,
             "tc_residual": 1, "tc_residual_scale": sr, "tc_residual_zero_point": zr, "tc_activation": "Relu",
             "tc_y_scale": sy, "tc_y_zero_point": zy}
    if pipeline is not None:
        attrs["tc_pipeline"] = pipeline
        attrs["tc_stage_input"] = stage
        specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in (xq, wq, bq, w_scale, rq)]
        f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((1, m, hw, hw), "int8")], "npu -cores=4")
        assert ("Cl1" in str(f)) == bool(pipeline)  # the second set of accumulators
        assert ("Xsh" in str(f)) == bool(stage)    # the input in L2
    if c > 28:  # the column matrix double-buffered (two chunks of 28 channels and one of 8)
        attrs["tc_transposed"] = 0  # (the implicit GEMM's: the transposed plan unfolds no chunks)
        specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in (xq, wq, bq, w_scale, rq)]
        f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((1, m, hw, hw), "int8")], "npu -cores=4")
        assert "Col1" in str(f) and str(f).count("tile.mm") >= 3
    out = run_lowered("Conv", attrs, [xq, wq, bq, w_scale, rq], [np.zeros((1, m, hw, hw), np.int8)])[0]
    f = np.float32
    xp = np.pad(xq.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=zx)  # padding is the zero point
    acc = conv_ref(xp, wq.astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(out, int8_residual_ref(acc, w_scale, sx, rq, sr, zr, 0.0, None, sy, zy))
    assert hazard_checked() == []


@pytest.mark.parametrize("c,m,hw,stride,x_int8,residual,y_int8,act", [
    (64, 256, 56, 1, True, True, True, "Relu"),     # a bottleneck's conv3: int8 in, int8 residual, Relu, int8 out
    (24, 144, 56, 1, False, False, False, "Clip"),  # f32 in and out, Clip; 144 channels and 3136 positions:
                                                    # four segments of tile sizes, one after another
    (48, 40, 7, 1, True, False, True, ""),          # one small item
    (256, 512, 28, 2, True, False, True, ""),       # a downsample: every other row and column
    (40, 24, 9, 2, False, True, False, "Relu"),     # strided, f32 in, f32 residual
    (512, 1024, 7, 1, True, False, True, "Relu"),   # weights over 256 KiB: a block loaded and transposed per item
    (128, 512, 28, 1, False, True, False, "Relu"),  # K = 128: the f32 residual and Relu on the vector engine
    (128, 512, 28, 1, True, True, True, "Relu"),    # the int8 residual (1 byte an element) in the mm epilogue
])
def test_conv_1x1_transposed_plan(c, m, hw, stride, x_int8, residual, y_int8, act, hazard_checked):
    """The transposed 1x1 plan (the epilogue in the matrix engine) against numpy doing the
    vector epilogue's f32 steps, and bit for bit against the plan it replaces; every L1
    access ordered."""
    xs, ws = (1, c, hw * stride, hw * stride), (m, c, 1, 1)
    x, wq, bq, w_scale, rq, rf = int8_conv_operands(xs, x_int8, ws, (1, m, hw, hw))
    sx, zx, sr, zr, sy, zy = 0.05, -3, 0.04, 5, 0.03, -7
    attrs = {"tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx, "strides": [stride, stride]}
    ins = [x, wq, bq, w_scale]
    if residual:
        attrs["tc_residual"] = 1
        if x_int8:
            attrs.update(tc_residual_scale=sr, tc_residual_zero_point=zr)
        ins.append(rq if x_int8 else rf)
    attrs.update(fused_activation_attrs(act))
    if y_int8:
        attrs.update(tc_y_scale=sy, tc_y_zero_point=zy)
    out = np.zeros((1, m, hw, hw), np.int8 if y_int8 else np.float32)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    f = compiler.LowerOp("Conv", dict(attrs, tc_transposed=1), specs, [compiler.TensorSpec(out.shape, str(out.dtype))],
                         "npu -cores=4")
    # the transposed X tile: per item, or once per core when an item covers every position
    assert "XT0" in str(f) or ("XTr" in str(f) and hw * hw <= 128)
    if c == 128 and x_int8:  # an int8 residual streams through the matrix engine at a byte an element
        assert "ResidualSum" not in str(f)
    if c == 64 and m == 256:  # the weights copied into L2 once, each item's block read there
        f2 = compiler.LowerOp("Conv", dict(attrs, tc_transposed=1, tc_stage_weights=1), specs,
                              [compiler.TensorSpec(out.shape, str(out.dtype))], "npu -cores=4")
        assert "Wsh" in str(f2) and "XT0" in str(f2)
        staged = run_lowered("Conv", dict(attrs, tc_transposed=1, tc_stage_weights=1), ins, [np.zeros_like(out)])[0]
        np.testing.assert_array_equal(staged, run_lowered("Conv", dict(attrs, tc_transposed=0), ins,
                                                          [np.zeros_like(out)])[0])
    got = run_lowered("Conv", dict(attrs, tc_transposed=1), ins, [np.zeros_like(out)])[0]
    other = run_lowered("Conv", dict(attrs, tc_transposed=0), ins, [np.zeros_like(out)])[0]
    np.testing.assert_array_equal(got, other)
    # the weight blocks on the DMA-out engine (beside the X tiles and residuals): the same bits
    on_out = dict(attrs, tc_transposed=1, tc_weights_on_out=1)
    text = str(compiler.LowerOp("Conv", on_out, specs, [compiler.TensorSpec(out.shape, str(out.dtype))],
                                "npu -cores=4"))
    assert "tile.dma_prefetch(Wl0" in text or "WTall" in text  # (kept whole in L1: no blocks)
    np.testing.assert_array_equal(run_lowered("Conv", on_out, ins, [np.zeros_like(out)])[0], other)
    scales = dict(sx=sx, zx=zx, sr=sr, zr=zr, sy=sy, zy=zy)
    np.testing.assert_array_equal(got, conv_1x1_int8_ref(x, wq, bq, w_scale, stride, ins[4:], act, y_int8, **scales))
    assert hazard_checked() == []


def conv_1x1_int8_ref(x, wq, bq, w_scale, stride, residual, act, y_int8, sx, zx, sr, zr, sy, zy):
    """numpy's int8 1x1 Conv (docs/precision.md): X quantised on load (an f32 X), the int64
    sums with the int32 bias, the vector epilogue's f32 steps; an int8 residual (`residual`,
    [] or [R]) in its own units, an f32 one added before the activation; y int8 or f32."""
    f = np.float32
    if x.dtype == np.int8:
        xq = x.astype(np.int64)
    else:
        inv = f(1.0 / np.float64(f(sx)))
        xq = np.clip(np.rint((x * inv).astype(f) + f(zx)), -128, 127).astype(np.int64)
    xq = xq[:, :, ::stride, ::stride]
    # the int32 bias of the quantised-node form already holds -zx * sum W (docs/precision.md)
    acc = np.einsum("mc,nchw->nmhw", wq[:, :, 0, 0].astype(np.int64), xq) + bq.reshape(1, -1, 1, 1)
    if residual and residual[0].dtype == np.int8:  # in the residual's units
        lo, hi = {"Relu": (0.0, None), "Clip": CLIP_BOUNDS}.get(act, (None, None))
        return int8_residual_ref(acc, w_scale, sx, residual[0], sr, zr, lo, hi, *((sy, zy) if y_int8 else ()))
    y = acc.astype(f) * (w_scale * f(sx)).reshape(1, -1, 1, 1)
    if residual:
        y = y + residual[0]
    y = fused_activation_ref(y, act)
    if y_int8:
        return np.clip(np.rint(y * f(1.0 / sy) + f(zy)), -128, 127).astype(np.int8)
    return y


@pytest.mark.parametrize("c,m,hw,residual,y_int8,act,share", [
    (64, 256, 56, "int8", True, "Relu", (1, 3)),  # ResNet-50's layer1 conv3: K = 64, an int8 residual
    (128, 512, 28, "int8", False, "Clip", (1, 2)),  # the f32 output scaled from the residual's units
    (64, 160, 28, "", True, "Clip", (1, 4)),        # no residual: channel blocks of 64, 64, 32
    (96, 48, 40, "f32", True, "Relu", (2, 3)),      # an f32 residual added on the vector engine
    (32, 33, 40, "", False, "", (1, 1)),             # all (but each core's last): a block of one channel
])
def test_conv_1x1_transposed_plan_with_channel_major_items(c, m, hw, residual, y_int8, act, share, hazard_checked):
    """The transposed 1x1 plan with a share of each core's items computed channel-major (W x
    X in the matrix engine, the epilogue on the vector engine, beside the others' epilogue in
    the matrix engine): bit for bit numpy's int8 arithmetic and the plans without such items;
    every L1 access ordered."""
    xs, ws = (1, c, hw, hw), (m, c, 1, 1)
    x, wq, bq, w_scale, rq, rf = int8_conv_operands(xs, True, ws, (1, m, hw, hw))
    sx, zx, sr, zr, sy, zy = 0.05, -3, 0.04, 5, 0.03, -7
    attrs = {"tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx, **fused_activation_attrs(act)}
    ins = [x, wq, bq, w_scale]
    if residual:
        attrs["tc_residual"] = 1
        if residual == "int8":
            attrs.update(tc_residual_scale=sr, tc_residual_zero_point=zr)
        ins.append(rq if residual == "int8" else rf)
    if y_int8:
        attrs.update(tc_y_scale=sy, tc_y_zero_point=zy)
    out = np.zeros((1, m, hw, hw), np.int8 if y_int8 else np.float32)
    mixed = dict(attrs, tc_transposed=1, tc_implicit_items=list(share))
    text = str(compiler.LowerOp("Conv", mixed, [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins],
                                [compiler.TensorSpec(out.shape, str(out.dtype))], "npu -cores=4"))
    assert "Sm0" in text and "XT0" in text  # channel-major items beside transposed ones
    def matrix_busy():  # (of the run just made, all cores)
        return sum(core["mm"]["busy"] for core in tilecore.runtime.npu_simulator(0).stats()["cores"])

    got = run_lowered("Conv", mixed, ins, [np.zeros_like(out)])[0]
    mixed_busy = matrix_busy()
    assert hazard_checked() == []
    want = conv_1x1_int8_ref(x, wq, bq, w_scale, 1, ins[4:], act, y_int8, sx=sx, zx=zx, sr=sr, zr=zr, sy=sy, zy=zy)
    np.testing.assert_array_equal(got, want)
    plain = {"tc_transposed": 1, "tc_implicit_items": [0, 1]}
    np.testing.assert_array_equal(got, run_lowered("Conv", dict(attrs, **plain), ins, [np.zeros_like(out)])[0])
    # some items ran channel-major: their products carry no epilogue through the matrix engine
    assert mixed_busy < matrix_busy()
    np.testing.assert_array_equal(got, run_lowered("Conv", dict(attrs, tc_transposed=0), ins, [np.zeros_like(out)])[0])


@pytest.mark.parametrize("n,c,m,hw,stride,x_int8,residual", [
    (2, 2048, 1024, 7, 1, True, False),  # weight blocks of 64 channels (K = 2048): 16 items a tile
    (2, 1536, 768, 4, 2, False, True),   # strided, f32 X quantised on load, an f32 residual: 12
])
def test_conv_1x1_transposed_items_of_one_tile_load_it_twice_per_core(n, c, m, hw, stride, x_int8, residual,
                                                                      hazard_checked):
    """The transposed 1x1 plan when a core runs more than two items of one X tile (many
    blocks of output channels): only its first two (one per slot) load and transpose the
    tile, the others use it from their slot; bit for bit numpy's f32 steps and the plan it
    replaces, every L1 access ordered."""
    xs = (n, c, hw * stride, hw * stride)
    rng = np.random.default_rng(7)  # (its own: the module's stream stays as the tests after it expect)
    x = rng.integers(-128, 128, xs).astype(np.int8) if x_int8 else rng.standard_normal(xs).astype(np.float32)
    wq = rng.integers(-127, 128, (m, c, 1, 1)).astype(np.int8)
    bq = rng.integers(-2000, 2000, m).astype(np.int32)
    w_scale = (rng.random(m) * 0.002 + 0.0005).astype(np.float32)
    rf = rng.standard_normal((n, m, hw, hw)).astype(np.float32)
    sx, zx, sy, zy = 0.05, -3, 0.03, -7
    attrs = {"tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx, "strides": [stride, stride],
             "tc_activation": "Relu", "tc_transposed": 1}
    ins = [x, wq, bq, w_scale] + ([rf] if residual else [])
    if residual:
        attrs["tc_residual"] = 1
    else:
        attrs.update(tc_y_scale=sy, tc_y_zero_point=zy)
    out = np.zeros((n, m, hw, hw), np.float32 if residual else np.int8)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    text = tilecore.ir.script(compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(out.shape, str(out.dtype))],
                                               "npu -cores=4"))
    blocks = re.search(r"% (\d+) < 8:\n\s+tile.dma_copy\(Xl0", text)  # the first two items of a tile load it
    assert blocks and int(blocks.group(1)) > 8, "no X tile shared by a core's items"
    got = run_lowered("Conv", attrs, ins, [np.zeros_like(out)])[0]
    np.testing.assert_array_equal(got, run_lowered("Conv", dict(attrs, tc_transposed=0), ins, [np.zeros_like(out)])[0])
    f = np.float32
    if x_int8:
        xq = x.astype(np.int64)
    else:
        xq = np.clip(np.rint((x * f(1.0 / np.float64(f(sx)))).astype(f) + f(zx)), -128, 127).astype(np.int64)
    xq = xq[:, :, ::stride, ::stride]
    acc = np.einsum("mc,nchw->nmhw", wq[:, :, 0, 0].astype(np.int64), xq) + bq.reshape(1, -1, 1, 1)
    y = acc.astype(f) * (w_scale * f(sx)).reshape(1, -1, 1, 1)
    if residual:
        np.testing.assert_array_equal(got, np.maximum(y + rf, f(0)))
    else:
        t = np.maximum(y, f(0)) * f(1.0 / sy) + f(zy)
        np.testing.assert_array_equal(got, np.clip(np.rint(t), -128, 127).astype(np.int8))
    assert hazard_checked() == []


def test_conv_1x1_small_map_reads_its_input_once_per_core(hazard_checked):
    """MobileNetV2's 64 -> 384 expansion on its 14x14 map: an item takes every position, so
    each core loads and transposes X once and its items (32 output channels each: 64 would
    leave cores without an item) only load their weights; bit for bit numpy's f32 steps."""
    c, m, hw = 64, 384, 14
    x, wq, bq, w_scale, _, _ = int8_conv_operands((1, c, hw, hw), True, (m, c, 1, 1), (1, m, hw, hw))
    sx, zx, sy, zy = 0.05, -3, 0.03, -7
    attrs = {"tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx, "tc_activation": "Clip",
             "tc_clip_min": 0.0, "tc_clip_max": 6.0, "tc_y_scale": sy, "tc_y_zero_point": zy}
    ins = [x, wq, bq, w_scale]
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    text = str(compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((1, m, hw, hw), "int8")],
                                "npu -cores=4"))
    assert "XTr" in text and "XT0" not in text  # X transposed once, not per item
    assert "WT0 = allocate((64, 32)" in text    # items of 32 output channels
    got = run_lowered("Conv", attrs, ins, [np.zeros((1, m, hw, hw), np.int8)])[0]
    f = np.float32
    acc = np.einsum("mc,nchw->nmhw", wq[:, :, 0, 0].astype(np.int64), x.astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    y = np.minimum(np.maximum(acc.astype(f) * (w_scale * f(sx)).reshape(1, -1, 1, 1), f(0)), f(6))
    np.testing.assert_array_equal(got, np.clip(np.rint(y * f(1.0 / sy) + f(zy)), -128, 127).astype(np.int8))
    assert hazard_checked() == []


@pytest.mark.parametrize("c,hw,k,stride,x_int8,residual,y_int8,act", [
    (32, 28, 3, 1, True, False, True, "Clip"),     # MobileNetV2's depthwise: int8 in and out, ReLU6
    (24, 29, 3, 2, False, False, False, "Relu"),   # strided, f32 in (quantised on load) and out
    (40, 14, 5, 1, True, True, True, "Relu"),      # 5x5, the int8 residual in its units, int8 out
    (37, 15, 3, 1, False, True, False, ""),        # an f32 residual; 37 channels: a remainder tile
    (16, 20, 3, 1, True, True, False, "Clip"),     # int8 residual, f32 out
    (16, 112, 3, 2, True, False, True, "Clip"),    # MobileNetV2's stride-2 map: row tiles at both
                                                   # borders (padding filled once, its rows again)
])
@pytest.mark.parametrize("matrix,pipeline", [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)])
def test_depthwise_int8(c, hw, k, stride, x_int8, residual, y_int8, act, matrix, pipeline, hazard_checked):
    """A depthwise Conv in the int8 form (docs/precision.md), its taps accumulated in i32 by
    the vector engine or, in the matrix form, by the matrix engine (block-diagonal weights
    times the column matrix of the taps), then the implicit GEMM's epilogue steps:
    bit-exact against numpy; every L1 access ordered. Pipelined, the next item's loads
    (two sets of buffers, an event each) run beside this item's compute; in three stages
    (the matrix form without a residual) the matrix engine multiplies item i while the
    vector engine unfolds item i + 1's taps and converts item i - 1's result."""
    check_depthwise_int8(c, hw, k, stride, x_int8, residual, y_int8, act, hazard_checked,
                         tc_depthwise_matrix=matrix, tc_pipeline=pipeline)


@pytest.mark.parametrize("shifted", [0, 1])
def test_depthwise_int8_matrix_zeroes_its_weights_on_the_vector_engine(shifted, hazard_checked):
    """The int8 matrix form zeroes its block-diagonal weights once with A - A on the vector
    engine (a DMA fill held the DMA-in engine, and the front end, ahead of the first loads):
    bit-exact against numpy, every L1 access ordered; an f16 form keeps the fill (its A - A
    may be NaN)."""
    attrs, ins, out = check_depthwise_int8(32, 28, 3, 1, True, False, True, "Relu", hazard_checked,
                                           tc_depthwise_matrix=1, tc_pipeline=2, tc_depthwise_shifted=shifted)
    text = tilecore.ir.script(compiler.LowerOp("Conv", attrs, ins, [out]))
    assert "tile.vec_sub(Abd" in text and "tile.dma_fill(Abd" not in text
    f16 = {k: v for k, v in attrs.items() if not k.startswith(("tc_x_", "tc_y_"))}
    f16.update(tc_precision="f16")
    specs = [compiler.TensorSpec((1, 32, 28, 28), "float32"), compiler.TensorSpec((32, 1, 3, 3), "float32")]
    text = tilecore.ir.script(compiler.LowerOp("Conv", f16, specs, [compiler.TensorSpec((1, 32, 28, 28), "float32")]))
    assert "tile.dma_fill(Abd" in text and "tile.vec_sub(Abd" not in text


@pytest.mark.parametrize("forms", [dict(tc_depthwise_matrix=0, tc_pipeline=1),
                                   dict(tc_depthwise_matrix=1, tc_pipeline=2, tc_depthwise_col_channels=16)])
def test_depthwise_int8_wide_patch_fills_only_its_padding_columns(forms, hazard_checked):
    """MobileNetV3-Small's first depthwise Conv (16 channels, 3x3 stride 2 at 112 x 112): a
    patch row is 113 int8, two DMA beats, its padding one column. A slot's first item fills
    that column (one beat a row), not the whole patch; the padding rows are filled by each
    item that has them. Bit-exact against numpy, every L1 access ordered."""
    attrs, ins, out = check_depthwise_int8(16, 112, 3, 2, True, False, True, "Clip", hazard_checked, **forms)
    text = tilecore.ir.script(compiler.LowerOp("Conv", attrs, ins, [out]))
    fills = re.findall(r"tile\.dma_fill\(Xl\w*\[0:\d+, 0:(\d+), (\d+):(\d+)\]", text)
    assert any((c0, c1) == ("0", "1") and int(rows) > 1 for rows, c0, c1 in fills), fills


def test_depthwise_int8_row_tiles_of_equal_rows(hazard_checked):
    """The same Conv's 56 output rows as two row tiles of 28, not 32 + 24: one segment of
    items (a patch of 57 input rows), where the second segment's first loads waited for the
    first's stores to drain (its buffers may take their places). Bit-exact against numpy,
    every L1 access ordered."""
    attrs, ins, out = check_depthwise_int8(16, 112, 3, 2, True, False, True, "Clip", hazard_checked,
                                           tc_depthwise_matrix=1, tc_pipeline=2, tc_depthwise_col_channels=16)
    text = tilecore.ir.script(compiler.LowerOp("Conv", attrs, ins, [out]))
    patches = set(re.findall(r"(Xl\w*) = allocate\(\((\d+), (\d+), 113\)", text))
    assert {rows for _, _, rows in patches} == {"57"} and {name for name, _, _ in patches} == {"Xl0", "Xl1"}


@pytest.mark.parametrize("c,hw,k,stride,x_int8,residual,y_int8,act", [
    (400, 14, 3, 1, True, False, True, "Clip"),   # items of 41 channels: blocks of 16, 16 and 9
    (288, 14, 5, 2, True, False, True, "Relu"),   # MNASNet's 5x5 stride 2 to 7x7: two blocks an item
    (264, 7, 3, 1, False, True, False, ""),       # an f32 residual; a last item of 8 channels
])
@pytest.mark.parametrize("blocks,pipeline", [(2, 2), (4, 0), (4, 1), (4, 2), (16, 2)])
def test_depthwise_int8_items_of_several_blocks(c, hw, k, stride, x_int8, residual, y_int8, act, blocks,
                                                pipeline, hazard_checked):
    """The matrix form with few output positions: an item of several blocks of 16 channels,
    an mm each over its rows of one column matrix, one epilogue and store for all (docs/
    compiler.md): bit-exact against numpy, every L1 access ordered."""
    if residual and pipeline == 2:
        pipeline = 1
    attrs, ins, out = check_depthwise_int8(c, hw, k, stride, x_int8, residual, y_int8, act, hazard_checked,
                                           tc_depthwise_matrix=1, tc_pipeline=pipeline,
                                           tc_depthwise_blocks=blocks)
    text = tilecore.ir.script(compiler.LowerOp("Conv", attrs, ins, [out]))
    abd = re.findall(r"Abd\d? = allocate\(\((\d+), ", text)
    assert abd and max(int(v) for v in abd) > 16  # an item's weights: more channels than a block


@pytest.mark.parametrize("c,hw,k,x_int8,residual,y_int8,act", [
    (16, 56, 7, False, False, False, ""),      # ConvNeXt's 7x7: f32 in (quantised on load) and out
    (24, 28, 5, True, True, True, "Relu"),     # MNASNet's 5x5, an int8 residual
])
@pytest.mark.parametrize("col", [4, 8])
@pytest.mark.parametrize("pipeline", [0, 1, 2])
def test_depthwise_int8_column_matrix_of_fewer_channels(c, hw, k, x_int8, residual, y_int8, act, col, pipeline,
                                                        hazard_checked):
    """The matrix form's column matrix sized for 4 or 8 channels: items of fewer channels
    and more output positions, so fewer rows of their patches are loaded twice (docs/
    compiler.md): bit-exact against numpy, every L1 access ordered."""
    if residual and pipeline == 2:
        pipeline = 1
    attrs, ins, out = check_depthwise_int8(c, hw, k, 1, x_int8, residual, y_int8, act, hazard_checked,
                                           tc_depthwise_matrix=1, tc_pipeline=pipeline,
                                           tc_depthwise_col_channels=col, tc_depthwise_shifted=0)
    def cols(a):
        text = tilecore.ir.script(compiler.LowerOp("Conv", a, ins, [out]))
        return [(int(r), int(p)) for r, p in re.findall(r"Col\d? = allocate\(\((\d+), (\d+)\)", text)]

    fewer, sixteen = cols(attrs), cols({**attrs, "tc_depthwise_col_channels": 16})
    assert max(r for r, _ in fewer) <= col * k * k      # an item's channels x taps
    assert max(p for _, p in fewer) > max(p for _, p in sixteen)  # more positions an item


@pytest.mark.parametrize("c,hw,k,x_int8,residual,y_int8,act", [
    (32, 28, 3, True, False, True, "Relu"),    # EfficientNet's first 3x3: int8 in and out
    (40, 14, 5, False, True, False, ""),       # quantised on load, an f32 residual, 5x5
    (24, 20, 3, True, True, True, "Clip"),     # an int8 residual
    (400, 14, 3, True, False, True, "Clip"),   # items of 41 channels: blocks of 16, 16 and 9
])
@pytest.mark.parametrize("pipeline", [0, 1, 2])
def test_depthwise_int8_shifted_taps(c, hw, k, x_int8, residual, y_int8, act, pipeline, hazard_checked):
    """The matrix form with its taps read in place (tc_depthwise_shifted 1): an mm a tap, its
    columns the patch from the tap's offset, no column matrix (docs/compiler.md): bit-exact
    against numpy, every L1 access ordered."""
    if residual and pipeline == 2:
        pipeline = 1
    attrs, ins, out = check_depthwise_int8(c, hw, k, 1, x_int8, residual, y_int8, act, hazard_checked,
                                           tc_depthwise_matrix=1, tc_pipeline=pipeline, tc_depthwise_shifted=1)
    text = tilecore.ir.script(compiler.LowerOp("Conv", attrs, ins, [out]))
    assert "Col" not in text and text.count("tile.mm(") >= k * k  # an mm a tap, no column matrix
    assert "shifted" in str(compiler.LowerOp("Conv", attrs, ins, [out]).attrs["plan"]).split()


def test_depthwise_shifted_taps_take_larger_items_where_the_cost_model_finds_them_faster(hazard_checked):
    """MobileNetV2's 3x3 over 144 channels at 56 x 56: the shifted form issues an mm a tap an
    item, each paying the matrix engine's pipeline fill, so the search also prices items of up
    to 32,768 outputs (docs/compiler.md, "Depthwise"): taken here, bit-exact against numpy,
    every L1 access ordered, and fewer simulated cycles than the items of 8,192 the column
    channels' attribute keeps."""
    forms = dict(tc_depthwise_matrix=1, tc_pipeline=2, tc_depthwise_shifted=1)
    attrs, ins, out = check_depthwise_int8(144, 56, 3, 1, True, False, True, "Clip", hazard_checked, **forms)
    plan = str(compiler.LowerOp("Conv", attrs, ins, [out]).attrs["plan"])
    assert " shifted tile=32768" in plan, plan
    rng = np.random.default_rng(7)
    arrays = [rng.integers(-128, 128, sp.shape).astype(np.int8) if str(sp.dtype) == "int8" else
              rng.integers(-500, 500, sp.shape).astype(np.int32) if str(sp.dtype) == "int32" else
              rng.uniform(0.005, 0.02, sp.shape).astype(np.float32) for sp in ins]
    cycles = []
    for a in (attrs, {**attrs, "tc_depthwise_col_channels": 16}):
        cycles.append((run_lowered("Conv", a, arrays, [np.zeros(out.shape, np.int8)])[0],
                       tilecore.runtime.npu_simulator(0).stats()["cycles"]))
    (larger, larger_cycles), (smaller, smaller_cycles) = cycles
    np.testing.assert_array_equal(larger, smaller)  # the same taps in the same order
    assert larger_cycles < smaller_cycles, (larger_cycles, smaller_cycles)


@pytest.mark.parametrize("c,h,w,kernel,dil,pads,precision", [
    (24, 14, 14, (3, 3), (2, 2), [2, 2, 2, 2], "int8"),     # dilated: the offsets and the skipped columns x dw
    (24, 14, 14, (3, 3), (2, 2), [2, 2, 2, 2], "f16"),
    (16, 3, 300, (1, 3), (1, 1), [0, 1, 0, 1], "int8"),     # 300 columns: tiles of 256 and 44 (tw < OW)
    (16, 3, 300, (1, 3), (1, 1), [0, 1, 0, 1], "bf16"),
    (20, 12, 9, (5, 1), (1, 1), [2, 0, 2, 0], "int8"),      # a 5x1 kernel: no column is skipped
    (20, 11, 13, (3, 3), (1, 1), [0, 1, 2, 0], "int8"),     # asymmetric pads
    (20, 11, 13, (3, 3), (1, 1), [0, 1, 2, 0], "f16"),      # no bias preset: the first tap's mm writes
])
def test_depthwise_shifted_taps_match_the_other_forms(c, h, w, kernel, dil, pads, precision, hazard_checked):
    """The shifted taps over dilations, column tiles, one-row and one-column kernels and
    asymmetric pads: int8 bit for bit the column-matrix form (numpy-checked above), f16/bf16 the
    vector form (numpy-checked in test_precision.py), in one, two and three stages; with
    tc_depthwise_shifted 1 alone the matrix form is taken."""
    oh = h + pads[0] + pads[2] - dil[0] * (kernel[0] - 1)
    ow = w + pads[1] + pads[3] - dil[1] * (kernel[1] - 1)
    base = {"group": c, "kernel_shape": list(kernel), "dilations": list(dil), "pads": pads,
            "tc_precision": precision}
    if precision == "int8":
        x, wq, bq, w_scale, _, _ = int8_conv_operands((1, c, h, w), True, (c, 1, *kernel), (1, c, oh, ow))
        base.update(tc_x_scale=0.05, tc_x_zero_point=-3, tc_y_scale=0.03, tc_y_zero_point=2,
                    tc_activation="Relu")
        ins, out = [x, wq, bq, w_scale], np.zeros((1, c, oh, ow), np.int8)
        other = dict(tc_depthwise_matrix=1, tc_depthwise_shifted=0)
    else:
        ins, out = [randn(1, c, h, w), randn(c, 1, *kernel, scale=0.3)], np.zeros((1, c, oh, ow), np.float32)
        other = dict(tc_depthwise_matrix=0)
    for pipeline in (0, 1, 2):
        want = run_lowered("Conv", dict(base, tc_pipeline=pipeline if "tc_depthwise_shifted" in other else 0,
                                        **other), ins, [out.copy()])[0]
        got = run_lowered("Conv", dict(base, tc_pipeline=pipeline, tc_depthwise_shifted=1), ins, [out.copy()])[0]
        np.testing.assert_array_equal(got, want)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    f = compiler.LowerOp("Conv", dict(base, tc_depthwise_shifted=1), specs, [compiler.TensorSpec(out.shape, str(out.dtype))])
    assert str(f.attrs["plan"]).startswith("conv.depthwise.matrix") and "shifted" in str(f.attrs["plan"]).split()
    assert hazard_checked() == []


def test_depthwise_shifted_items_keep_the_mms_column_limit(hazard_checked):
    """An item's mm a tap runs over whole patch rows, (rows - 1) x patch width + width columns:
    a 1x3 f16 Conv over 112-wide rows sized for 4 channels would take 36 rows, 4,102 columns,
    above the mm's 4,096; the item takes fewer rows. Bit for bit the vector form."""
    from tilecore.arch import params

    c, h, w = 4, 112, 112
    x, wt = randn(1, c, h, w), randn(c, 1, 1, 3, scale=0.3)
    base = {"group": c, "kernel_shape": [1, 3], "pads": [0, 1, 0, 1], "tc_precision": "f16"}
    shifted = dict(base, tc_depthwise_matrix=1, tc_depthwise_shifted=1, tc_depthwise_col_channels=4, tc_pipeline=0)
    specs = [compiler.TensorSpec(a.shape, "float32") for a in (x, wt)]
    text = tilecore.ir.script(compiler.LowerOp("Conv", shifted, specs, [compiler.TensorSpec((1, c, h, w), "float32")]))
    columns = [int(n) for n in re.findall(r"O\d? = allocate\(\(\d+, (\d+)\)", text)]
    assert columns and max(columns) <= params()["max_mm_dim"]
    want = run_lowered("Conv", dict(base, tc_depthwise_matrix=0, tc_pipeline=0), [x, wt], [np.zeros((1, c, h, w), np.float32)])[0]
    got = run_lowered("Conv", shifted, [x, wt], [np.zeros((1, c, h, w), np.float32)])[0]
    np.testing.assert_array_equal(got, want)
    assert hazard_checked() == []


def _int8_depthwise_3x3():
    """The input specs and attributes of an int8 3x3 depthwise Conv over 8 channels, for the
    checks of its knobs."""
    specs = [compiler.TensorSpec((1, 8, 14, 14), "int8"), compiler.TensorSpec((8, 1, 3, 3), "int8"),
             compiler.TensorSpec((8,), "int32"), compiler.TensorSpec((8,), "float32")]
    return specs, {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_x_zero_point": 0, "group": 8, "pads": [1] * 4}


def test_depthwise_shifted_reasons():
    specs, base = _int8_depthwise_3x3()
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_shifted": 1}, specs) == ""
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_shifted": 2}, specs) == \
        "Conv: tc_depthwise_shifted must be 0 or 1"
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_shifted": 1, "strides": [2, 2]}, specs) == \
        "Conv: tc_depthwise_shifted 1 needs unit strides"
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_shifted": 1, "tc_depthwise_matrix": 0},
                                specs) == "Conv: tc_depthwise_shifted is the depthwise matrix form's (int8, f16 or bf16)"
    f32 = [compiler.TensorSpec((1, 8, 14, 14), "float32"), compiler.TensorSpec((8, 1, 3, 3), "float32")]
    assert compiler.HasStrategy("Conv", {"group": 8, "pads": [1] * 4, "tc_depthwise_shifted": 1}, f32) == \
        "Conv: tc_depthwise_shifted is the depthwise matrix form's (int8, f16 or bf16)"


def test_depthwise_column_channels_reasons():
    specs, base = _int8_depthwise_3x3()
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_col_channels": 4}, specs) == ""
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_col_channels": 5}, specs) == \
        "Conv: tc_depthwise_col_channels must be 4, 8 or 16"
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_col_channels": 4, "tc_depthwise_matrix": 0},
                                specs) == "Conv: tc_depthwise_col_channels is the depthwise matrix form's " \
                                          "(int8, f16 or bf16)"
    assert compiler.HasStrategy("Conv", {**base, "tc_depthwise_col_channels": 8, "tc_depthwise_blocks": 2},
                                specs) == "Conv: tc_depthwise_col_channels below 16 is for items of one " \
                                          "block (tc_depthwise_blocks 1)"


@pytest.mark.parametrize("c,hw,k,residual", [(576, 7, 5, False), (192, 7, 3, True)])
@pytest.mark.parametrize("matrix,pipeline", [(0, 0), (1, 1), (1, 2)])
def test_depthwise_int8_small_map_keeps_only_its_cores_weights(c, hw, k, residual, matrix, pipeline,
                                                               hazard_checked):
    """On a 7x7 map the items are blocks of channels alone, as many on every core: each core
    keeps the weights, bias and scales of its own blocks (t, t + 4, ...), read from the DDR
    once by the four cores together, not four times; bit-exact against numpy, every L1
    access ordered."""
    if residual and pipeline == 2:
        pipeline = 1
    attrs, ins, out = check_depthwise_int8(c, hw, k, 1, True, residual, True, "Clip", hazard_checked,
                                           tc_depthwise_matrix=matrix, tc_pipeline=pipeline)
    text = tilecore.ir.script(compiler.LowerOp("Conv", attrs, ins, [out]))
    assert re.search(rf"Wall = allocate\(\({c // 4}, {k * k}\)", text)  # a quarter of the channels


def activation_table(act, s_in, s_out, z_out):
    """docs/precision.md: table[q] = sat_i8(round_half_even(f(s_in * q) / s_out) + z_out), f
    in float64 (SiLU x sigmoid(x), HardSwish x relu6(x + 3) / 6), indexed by q's byte."""
    x = np.float64(s_in) * np.arange(-128, 128, dtype=np.float64)
    y = x / (1 + np.exp(-x)) if act == "SiLU" else x * np.clip(x / 6 + 0.5, 0, 1)
    table = np.clip(np.rint(y / np.float64(s_out)) + z_out, -128, 127).astype(np.int8)
    return np.roll(table, -128)  # byte 0 is q = 0, byte 255 is q = -1


@pytest.mark.parametrize("c,m,k,group,forms", [
    (16, 96, 1, 1, {"tc_transposed": 1}),                # an expand Conv, its epilogue in the matrix engine
    (16, 96, 1, 1, {"tc_transposed": 0}),                # the same on the vector engine
    (3, 32, 3, 1, {}),                                   # a stem: 3x3, f32 in
    (24, 24, 3, 24, {"tc_depthwise_matrix": 0}),         # depthwise, taps on the vector engine
    (24, 24, 3, 24, {"tc_depthwise_matrix": 1, "tc_pipeline": 2}),  # three stages
])
@pytest.mark.parametrize("act", ["SiLU", "HardSwish"])
def test_conv_int8_activation_as_a_table(c, m, k, group, forms, act, hazard_checked):
    """``tc_lut``: the int8 result of the Conv without its activation, quantised with
    tc_y_scale, looked up in the activation's table (numpy's, here) before it is stored;
    every L1 access ordered."""
    hw = 20
    x, wq, bq, w_scale, _, _ = int8_conv_operands((2, c, hw, hw), c != 3, (m, c // group, k, k),
                                                  (2, m, hw, hw))
    s_pre, s_out, z_out = 0.04, 0.025, -9
    attrs = {"tc_precision": "int8", "tc_x_scale": 0.05, "tc_x_zero_point": -3, "group": group,
             "pads": [k // 2] * 4, "tc_y_scale": s_pre, "tc_y_zero_point": 0, **forms}
    lut = {"tc_lut": act, "tc_lut.tc_x_scale": s_pre, "tc_lut.tc_x_zero_point": 0, "tc_lut.tc_y_scale": s_out,
           "tc_lut.tc_y_zero_point": z_out}
    ins = [x, wq, bq, w_scale]
    pre = run_lowered("Conv", attrs, ins, [np.zeros((2, m, hw, hw), np.int8)])[0]
    got = run_lowered("Conv", {**attrs, **lut}, ins, [np.zeros((2, m, hw, hw), np.int8)])[0]
    assert len(np.unique(pre)) > 100  # most of the table is read
    np.testing.assert_array_equal(got, activation_table(act, s_pre, s_out, z_out)[pre.view(np.uint8)])
    assert hazard_checked() == []


@pytest.mark.parametrize("group,k,forms", [(1, 1, {"tc_transposed": 1}), (24, 3, {"tc_depthwise_matrix": 1})])
def test_conv_table_is_stored_while_the_first_loads_wait(group, k, forms):
    """The front end's 64 stores of the table come after the kernel's first loads (the bias,
    the scales, the weights), which then wait on their latency meanwhile, and stay where a
    layer group's handoff takes them: first in the cores loop."""
    c, m, hw = 24, 24 if group > 1 else 96, 14
    specs = [compiler.TensorSpec(s, d) for s, d in (((1, c, hw, hw), "int8"), ((m, c // group, k, k), "int8"),
                                                    ((m,), "int32"), ((m,), "float32"))]
    attrs = {"tc_precision": "int8", "tc_x_scale": 0.05, "tc_x_zero_point": -3, "group": group,
             "pads": [k // 2] * 4, "tc_y_scale": 0.04, "tc_y_zero_point": 0, "tc_lut": "HardSwish",
             "tc_lut.tc_x_scale": 0.04, "tc_lut.tc_x_zero_point": 0, "tc_lut.tc_y_scale": 0.025,
             "tc_lut.tc_y_zero_point": -9, **forms}
    text = str(compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((1, m, hw, hw), "int8")], "npu -cores=4"))
    body = text.split("cores(0, 4):")[1]
    first = [ln.strip() for ln in body.splitlines() if ln.strip() and "allocate(" not in ln]
    assert first[0].startswith("tile.dma_copy(")
    assert body.index("LutWords[0] =") > body.index("tile.dma_copy(")


def test_tc_lut_of_a_conv_is_checked():
    x, w = compiler.TensorSpec((1, 8, 6, 6), "int8"), compiler.TensorSpec((4, 8, 1, 1), "int8")
    bias, scale = compiler.TensorSpec((4,), "int32"), compiler.TensorSpec((4,), "float32")
    base = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_y_scale": 0.05}
    lut = {"tc_lut": "SiLU", "tc_lut.tc_x_scale": 0.05, "tc_lut.tc_y_scale": 0.01}
    assert compiler.HasStrategy("Conv", {**base, **lut}, [x, w, bias, scale]) == ""
    assert "without tc_activation" in compiler.HasStrategy("Conv", {**base, **lut, "tc_activation": "SiLU"},
                                                           [x, w, bias, scale])
    assert "int8 output" in compiler.HasStrategy("Conv", {"tc_precision": "int8", "tc_x_scale": 0.1, **lut},
                                                 [x, w, bias, scale])
    assert "lookup-table" in compiler.HasStrategy("Conv", {**base, **lut, "tc_lut": "Exp2"}, [x, w, bias, scale])


@pytest.mark.parametrize("act", ["SiLU", "HardSwish"])
def test_int8_conv_activation_between_int8_convs_is_a_table(act, hazard_checked):
    """Conv -> SiLU (x * Sigmoid(x)) or HardSwish -> Conv in int8: the first Conv's fused
    activation becomes its table (the report's ``activation_tables``), bit for bit the
    Conv and the table op compiled apart (the Conv's output quantised with the activation
    input's threshold), close to ONNX Runtime."""
    w1, b1, w2 = randn(32, 8, 3, 3, scale=0.3), randn(32, scale=0.5), randn(16, 32, 1, 1, scale=0.2)
    if act == "SiLU":
        acts = [helper.make_node("Sigmoid", ["h"], ["sg"], name="sigmoid"),
                helper.make_node("Mul", ["h", "sg"], ["a"], name="act")]
    else:
        acts = [helper.make_node("HardSwish", ["h"], ["a"], name="act")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["h"], name="conv1", pads=[1, 1, 1, 1]), *acts,
             helper.make_node("Conv", ["a", "w2"], ["y"], name="conv2")]
    model = make_model(nodes, [("x", [1, 8, 24, 24], np.float32)], ["y"], [("w1", w1), ("b1", b1), ("w2", w2)],
                       opset=17)
    samples = {"x": randn(8, 1, 8, 24, 24)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    apart = tilecore.compile(model, precision="int8", calib_samples=samples, fuse=False)
    assert rep["activation_tables"] == [{"node": "conv1", "fused": ["act"]}]  # (x * Sigmoid(x): one SiLU)
    x = randn(1, 8, 24, 24)
    y = exe.run({"x": x})["y"]
    np.testing.assert_array_equal(y, apart.run({"x": x})["y"])
    ref = ort_run(model, {"x": x})["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.999
    assert hazard_checked() == []


@pytest.mark.parametrize("c,m,k,group", [(16, 96, 1, 1), (3, 32, 3, 1), (24, 24, 3, 24), (32, 64, 3, 1)])
@pytest.mark.parametrize("precision", ["bf16", "f16"])
def test_narrow_conv_stores_an_int8_output(c, m, k, group, precision, hazard_checked):
    """A Conv in f16/bf16 (mixed precision's wider node) with tc_y_scale quantises its f32
    result as an int8 reader would on load: bit for bit numpy's quantisation of its f32
    output; every L1 access ordered."""
    hw = 20
    x, w, b = randn(1, c, hw, hw), randn(m, c // group, k, k, scale=0.3), randn(m)
    attrs = {"tc_precision": precision, "group": group, "pads": [k // 2] * 4, "tc_activation": "Relu"}
    y = run_lowered("Conv", attrs, [x, w, b], [np.zeros((1, m, hw, hw), np.float32)])[0]
    sy, zy = 0.02, -128
    q = run_lowered("Conv", dict(attrs, tc_y_scale=sy, tc_y_zero_point=zy), [x, w, b],
                    [np.zeros((1, m, hw, hw), np.int8)])[0]
    inv = np.float32(1.0 / sy)
    np.testing.assert_array_equal(q, np.clip(np.rint((y * inv).astype(np.float32) + np.float32(zy)), -128,
                                             127).astype(np.int8))
    assert len(np.unique(q)) > 100  # (not saturated)
    assert hazard_checked() == []


def test_an_int8_output_in_a_narrow_precision_is_a_convs_only():
    a, w = compiler.TensorSpec((8, 16), "float32"), compiler.TensorSpec((16, 4), "float32")
    assert "a Conv's only" in compiler.HasStrategy("MatMul", {"tc_precision": "bf16", "tc_y_scale": 0.1}, [a, w])
    x, wc = compiler.TensorSpec((1, 8, 6, 6), "float32"), compiler.TensorSpec((4, 8, 1, 1), "float32")
    assert compiler.HasStrategy("Conv", {"tc_precision": "bf16", "tc_y_scale": 0.1}, [x, wc]) == ""
    assert "positive" in compiler.HasStrategy("Conv", {"tc_precision": "bf16", "tc_y_scale": 0.0}, [x, wc])


def test_a_wider_conv_between_int8_convs_stores_int8(hazard_checked):
    """int8 Conv -> Conv moved to bf16 (a qtable, as auto_mixed does) -> int8 Conv: the bf16
    Conv stores its output in int8 for its int8 reader (an int8 edge: a quarter of the bytes
    in L2 or the DDR), bit for bit the compilation whose reader quantises the f32 value on
    load; close to ONNX Runtime."""
    w1, w2, w3 = randn(16, 8, 3, 3, scale=0.3), randn(32, 16, 3, 3, scale=0.2), randn(8, 32, 1, 1, scale=0.2)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ar"], name="relu1"),
             helper.make_node("Conv", ["ar", "w2"], ["b"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["b"], ["br"], name="relu2"),
             helper.make_node("Conv", ["br", "w3"], ["y"], name="conv3")]
    model = make_model(nodes, [("x", [1, 8, 20, 20], np.float32)], ["y"], [("w1", w1), ("w2", w2), ("w3", w3)])
    samples = {"x": randn(8, 1, 8, 20, 20)}
    rep = {}
    kw = dict(precision="int8", calib_samples=samples, qtable={"conv2": "bf16"})
    exe = tilecore.compile(model, report=rep, **kw)
    kept = tilecore.compile(model, keep_intermediates=True, **kw)
    assert rep["precision"]["assigned"]["conv2"] == "bf16"
    assert "br" in rep["int8_edges"]
    x = randn(1, 8, 20, 20)
    y = exe.run({"x": x})["y"]
    np.testing.assert_array_equal(y, kept.run({"x": x})["y"])
    ref = ort_run(model, {"x": x})["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.99
    assert hazard_checked() == []


@pytest.mark.parametrize("c,hw,k,stride", [(32, 28, 3, 1), (40, 15, 5, 2), (37, 14, 3, 1)])
@pytest.mark.parametrize("precision", ["bf16", "f16"])
def test_narrow_depthwise_matrix_form(c, hw, k, stride, precision, hazard_checked):
    """A depthwise Conv in f16/bf16 on the matrix engine (block-diagonal narrow weights
    times the narrow column matrix, or with unit strides an mm a tap read in place; f32 sums,
    the bias after them): bit for bit the vector form (whose products are exact and sums f32
    in the same order, numpy-checked in test_precision.py), one, two and three stages; the
    cost model's pick at MobileNet's first depthwise shape."""
    x, w, b = randn(1, c, hw, hw), randn(c, 1, k, k, scale=0.3), randn(c)
    oh = (hw + 2 * (k // 2) - k) // stride + 1
    base = {"tc_precision": precision, "group": c, "pads": [k // 2] * 4, "strides": [stride, stride],
            "tc_activation": "Relu"}
    out = np.zeros((1, c, oh, oh), np.float32)
    vector = run_lowered("Conv", dict(base, tc_depthwise_matrix=0, tc_pipeline=0), [x, w, b], [out.copy()])[0]
    for pipeline in (0, 1, 2):
        for shifted in (0, 1) if stride == 1 else (0,):  # (the taps read in place: unit strides)
            forms = dict(tc_depthwise_matrix=1, tc_pipeline=pipeline, tc_depthwise_shifted=shifted)
            got = run_lowered("Conv", dict(base, **forms), [x, w, b], [out.copy()])[0]
            np.testing.assert_array_equal(got, vector)
    assert hazard_checked() == []
    specs = [compiler.TensorSpec(s, "float32") for s in ((1, 32, 112, 112), (32, 1, 3, 3), (32,))]
    # (in a layer group: the input and output in L2, so the engines, not the DDR, bound it)
    f = compiler.LowerOp("Conv", {"tc_precision": precision, "group": 32, "pads": [1] * 4, "tc_in_l2": [0, 3]},
                         specs, [compiler.TensorSpec((1, 32, 112, 112), "float32")], "npu -cores=4")
    assert "Abd" in str(f)  # the block-diagonal weights: the matrix form


def test_a_wider_conv_read_as_a_residual_stays_f32():
    """A bf16 Conv whose output an int8 Conv adds as its residual: the value stays f32 (an
    int8 residual would change the numbers the wider node was kept for); close to ONNX
    Runtime."""
    w1, w2, w3 = randn(16, 8, 3, 3, scale=0.3), randn(16, 16, 3, 3, scale=0.2), randn(16, 16, 1, 1, scale=0.2)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ar"], name="relu1"),
             helper.make_node("Conv", ["ar", "w2"], ["b"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["ar", "w3"], ["c"], name="conv3"),
             helper.make_node("Add", ["c", "b"], ["y"], name="add")]
    model = make_model(nodes, [("x", [1, 8, 16, 16], np.float32)], ["y"], [("w1", w1), ("w2", w2), ("w3", w3)])
    samples = {"x": randn(8, 1, 8, 16, 16)}
    rep = {}
    kw = dict(precision="int8", calib_samples=samples, qtable={"conv2": "bf16"})
    exe = tilecore.compile(model, report=rep, **kw)
    assert {"node": "conv3", "fused": ["add"]} in rep["fused"] or {"node": "conv2", "fused": ["add"]} in rep["fused"]
    assert "b" not in rep["int8_edges"]
    x = randn(1, 8, 16, 16)
    ref = ort_run(model, {"x": x})["y"]
    y = exe.run({"x": x})["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.99


def test_depthwise_blocks_reasons():
    x, w = compiler.TensorSpec((1, 32, 7, 7), "float32"), compiler.TensorSpec((32, 1, 3, 3), "float32")
    dw = {"group": 32, "pads": [1] * 4}
    assert compiler.HasStrategy("Conv", {**dw, "tc_depthwise_blocks": 3}, [x, w]) == \
        "Conv: tc_depthwise_blocks must be 1, 2, 4 or 16"
    assert compiler.HasStrategy("Conv", {**dw, "tc_depthwise_blocks": 4}, [x, w]) == \
        "Conv: tc_depthwise_blocks above 1 is the depthwise matrix form's (int8, f16 or bf16)"
    assert compiler.HasStrategy("Conv", {**dw, "tc_depthwise_blocks": 1}, [x, w]) == ""


def check_depthwise_int8(c, hw, k, stride, x_int8, residual, y_int8, act, hazard_checked, **forms):
    """Runs an int8 depthwise Conv in the forms ``forms`` (tc_* attributes) against numpy;
    returns (attrs, input specs, output spec)."""
    matrix, pipeline = forms["tc_depthwise_matrix"], forms["tc_pipeline"]
    pad = k // 2
    oh = (hw + 2 * pad - k) // stride + 1
    xs, ws = (1, c, hw, hw), (c, 1, k, k)
    x, wq, bq, w_scale, rq, rf = int8_conv_operands(xs, x_int8, ws, (1, c, oh, oh))
    sx, zx, sr, zr, sy, zy = 0.05, -3, 0.04, 5, 0.03, -7
    attrs = {"tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx, "group": c,
             "pads": [pad] * 4, "strides": [stride, stride], **forms}
    ins = [x, wq, bq, w_scale]
    if residual:
        attrs["tc_residual"] = 1
        if x_int8:
            attrs.update(tc_residual_scale=sr, tc_residual_zero_point=zr)
        ins.append(rq if x_int8 else rf)
    lo, hi = {"Relu": (0.0, None), "Clip": (0.0, 6.0 if not residual else 0.75)}.get(act, (None, None))
    if act == "Relu":
        attrs["tc_activation"] = "Relu"
    elif act == "Clip":
        attrs.update(tc_activation="Clip", tc_clip_min=lo, tc_clip_max=hi)
    if y_int8:
        attrs.update(tc_y_scale=sy, tc_y_zero_point=zy)
    out = np.zeros((1, c, oh, oh), np.int8 if y_int8 else np.float32)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    if pipeline == 2 and residual:  # its post would read the residual after the next item's loads
        assert compiler.HasStrategy("Conv", attrs, specs) == \
            ("Conv: tc_pipeline 2 (three stages) needs the matrix form (int8, f16 or bf16) without a "
            "residual")
        return
    assert compiler.HasStrategy("Conv", attrs, specs) == ""
    got, = run_lowered("Conv", attrs, ins, [out])
    if pipeline == 2:  # two slots of the column matrix (shifted: of the weights) beside each other
        f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(out.shape, str(out.dtype))])
        text = str(f)
        # (the form asked for, else the cost model's: the plan names it)
        shifted = forms.get("tc_depthwise_shifted", " shifted" in str(f.attrs["plan"]))
        two = {"Abd0", "Abd1"} if shifted else {"Col0", "Col1"}
        assert two <= set(re.findall(r"(?:Col|Abd)\w*", text))
    st = tilecore.runtime.npu_simulator(0).stats()
    # every pass a vector command (the integer taps too: tile_no_overflow): a scalar loop over
    # the taps would retire an instruction per tap and output, k * k * out.size in all
    assert all((c["mm"]["commands"] > 0) == bool(matrix) and c["vec"]["commands"] > 0 for c in st["cores"])
    assert st["instructions"] < 2 * out.size, st["instructions"]
    f = np.float32
    if x_int8:
        xq = x.astype(np.int64)
    else:
        inv = f(1.0 / np.float64(f(sx)))
        xq = np.clip(np.rint((x * inv).astype(f) + f(zx)), -128, 127).astype(np.int64)
    xp = np.pad(xq, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=zx)  # padding is the zero point
    acc = conv_ref(xp, wq.astype(np.int64), stride=stride, group=c) + bq.reshape(1, -1, 1, 1)
    if residual and x_int8:  # in the residual's units
        ref = int8_residual_ref(acc, w_scale, sx, rq, sr, zr, lo, hi, *((sy, zy) if y_int8 else ()))
        np.testing.assert_array_equal(got, ref)
        assert hazard_checked() == []
        return attrs, specs, compiler.TensorSpec(out.shape, str(out.dtype))
    y = acc.astype(f) * (w_scale * f(sx)).reshape(1, -1, 1, 1)
    if residual:
        y = y + rf
    if lo is not None:
        y = np.maximum(y, f(lo))
    if hi is not None:
        y = np.minimum(y, f(hi))
    if y_int8:
        t = y * f(1.0 / sy) + f(zy)
        np.testing.assert_array_equal(got, np.clip(np.rint(t), -128, 127).astype(np.int8))
    else:
        np.testing.assert_array_equal(got, y)
    assert hazard_checked() == []
    return attrs, specs, compiler.TensorSpec(out.shape, str(out.dtype))


def test_fused_epilogue_reasons():
    x, w = compiler.TensorSpec((1, 8, 6, 6), "float32"), compiler.TensorSpec((4, 8, 1, 1), "float32")
    r = compiler.TensorSpec((1, 4, 6, 6), "float32")
    assert compiler.HasStrategy("Conv", {"tc_residual": 1}, [x, w, None, r]) == ""
    assert "after the bias" in compiler.HasStrategy("Conv", {"tc_residual": 1}, [x, w, r])
    assert "residual input's shape" in compiler.HasStrategy(
        "Conv", {"tc_residual": 1}, [x, w, None, compiler.TensorSpec((1, 4, 6, 1), "float32")])
    assert "int8 in an int8 Conv" in compiler.HasStrategy(
        "Conv", {"tc_residual": 1}, [x, w, None, compiler.TensorSpec((1, 4, 6, 6), "int8")])
    i8 = compiler.TensorSpec((1, 4, 6, 6), "int8")
    q = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_residual": 1}
    wq, s = compiler.TensorSpec((4, 8, 1, 1), "int8"), compiler.TensorSpec((4,), "float32")
    assert compiler.HasStrategy("Conv", dict(q, tc_residual_scale=0.1), [x, wq, None, s, i8]) == ""
    assert "positive tc_residual_scale" in compiler.HasStrategy("Conv", q, [x, wq, None, s, i8])
    assert "tc_residual_zero_point out of the int8 range" in compiler.HasStrategy(
        "Conv", dict(q, tc_residual_scale=0.1, tc_residual_zero_point=300), [x, wq, None, s, i8])
    assert "tc_y_scale must be positive" in compiler.HasStrategy(
        "Conv", {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_y_scale": -1.0}, [x, wq, None, s])
    assert "tc_y_zero_point out of the int8 range" in compiler.HasStrategy(
        "Conv", {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_y_scale": 0.1, "tc_y_zero_point": -129},
        [x, wq, None, s])
    with pytest.raises(ValueError, match="an int8 output needs tc_y_scale"):
        compiler.LowerOp("Conv", {}, [x, w], [compiler.TensorSpec((1, 4, 6, 6), "int8")], "npu -cores=4")
    assert "tc_activation `Gelu`" in compiler.HasStrategy("Conv", {"tc_activation": "Gelu"}, [x, w])
    assert "tc_clip_min is above" in compiler.HasStrategy(
        "Conv", {"tc_activation": "Clip", "tc_clip_min": 1.0, "tc_clip_max": 0.0}, [x, w])
    mm_ins = [compiler.TensorSpec((4, 8), "int8"), compiler.TensorSpec((8, 4), "int8"), None,
              compiler.TensorSpec((4,), "float32")]
    mm_q = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_y_scale": 0.1}
    assert compiler.HasStrategy("MatMul", mm_q, mm_ins) == ""  # int8 in and out (docs/precision.md)
    assert "tc_y_scale must be positive" in compiler.HasStrategy("MatMul", dict(mm_q, tc_y_scale=0.0), mm_ins)
    with pytest.raises(ValueError, match="an int8 output needs tc_y_scale"):
        compiler.LowerOp("MatMul", mm_q, mm_ins, [compiler.TensorSpec((4, 4), "float32")], "npu -cores=4")


# ---- whole models --------------------------------------------------------------------


def residual_model():
    """A ResNet basic block with a downsample branch exported after the main one (so the
    fused Conv must run after the residual's producer), a Relu6 and a Conv output that is
    also a graph output (not fused)."""
    w1, w2 = randn(16, 8, 3, 3, scale=0.2), randn(16, 16, 3, 3, scale=0.1)
    wd, w3 = randn(16, 8, 1, 1, scale=0.3), randn(16, 16, 1, 1, scale=0.2)
    b1, b2 = randn(16), randn(16)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "wd"], ["d"], name="down"),
             helper.make_node("Add", ["c2", "d"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
             helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3"),
             helper.make_node("Clip", ["c3", "lo", "hi"], ["y"], name="relu6"),
             helper.make_node("Conv", ["y", "w3"], ["z"], name="conv4"),
             helper.make_node("Relu", ["z"], ["zr"], name="relu4")]
    inits = [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("wd", wd), ("w3", w3),
             ("lo", np.array(0.0, np.float32)), ("hi", np.array(6.0, np.float32))]
    return make_model(nodes, [("x", [1, 8, 10, 10], np.float32)], ["y", "zr", "z"], inits)


def test_fusion_matches_onnxruntime_and_the_unfused_bits():
    model = residual_model()
    rep, rep_off = {}, {}
    fused = tilecore.compile(model, report=rep, group=False)  # steps counted
    plain = tilecore.compile(model, report=rep_off, fuse=False)
    assert rep["fused"] == [{"node": "conv1", "fused": ["relu1"]}, {"node": "conv2", "fused": ["add", "relu2"]},
                            {"node": "conv3", "fused": ["relu6"]}]  # conv4: z is an output
    assert rep_off["fused"] == [] and rep_off["npu_steps"] == 10 and rep["npu_steps"] == 6
    assert [p["where"] for p in rep["placement"] if p["name"] in ("add", "relu2")] == ["dropped", "dropped"]
    x = randn(1, 8, 10, 10)
    a, b = fused.run({"x": x}), plain.run({"x": x})
    ref = ort_run(model, {"x": x})
    for k in ("y", "zr", "z"):
        np.testing.assert_array_equal(a[k], b[k])  # the same f32 operations in the same order
        np.testing.assert_allclose(a[k], ref[k], rtol=1e-4, atol=1e-4)


def silu_block(act):
    """EfficientNet's (SiLU: x * Sigmoid(x)) or MobileNetV3's (HardSwish) inverted residual:
    a 1x1 expansion and a 3x3 depthwise Conv, each followed by the activation, a 1x1
    projection and the residual Add."""
    w1, wd, w2 = randn(48, 16, 1, 1, scale=0.3), randn(48, 1, 3, 3, scale=0.4), randn(16, 48, 1, 1, scale=0.2)
    b1, bd, b2 = randn(48, scale=0.1), randn(48, scale=0.1), randn(16, scale=0.1)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["e"], name="expand")]
    def activation(x, y, name):
        if act == "SiLU":
            return [helper.make_node("Sigmoid", [x], [y + "_s"], name=name + "_sig"),
                    helper.make_node("Mul", [x, y + "_s"], [y], name=name)]
        return [helper.make_node("HardSwish", [x], [y], name=name)]
    nodes += activation("e", "ea", "act1")
    nodes += [helper.make_node("Conv", ["ea", "wd", "bd"], ["d"], name="dw", group=48, pads=[1, 1, 1, 1])]
    nodes += activation("d", "da", "act2")
    nodes += [helper.make_node("Conv", ["da", "w2", "b2"], ["p"], name="project"),
              helper.make_node("Add", ["p", "x"], ["y"], name="add")]
    inits = [("w1", w1), ("b1", b1), ("wd", wd), ("bd", bd), ("w2", w2), ("b2", b2)]
    return make_model(nodes, [("x", [1, 16, 12, 12], np.float32)], ["y"], inits, opset=17)


def fused_against_unfused(model, shape, out, precision):
    """``model`` (input ``x`` of ``shape``) compiled with and without fusion, its output
    ``out`` checked: in f32 the bits of the unfused compile and ONNX Runtime's values; in
    int8 (unfused, an activation between int8 tensors may be a lookup table of the quantised
    input, int8_edges.py; fused, it acts on the f32 result before the one quantisation), over
    a few samples a cosine above 0.999 and no further from ONNX Runtime (mean squared error).
    Returns the two compile reports."""
    x = randn(*shape)
    kw = {"calib_samples": {"x": np.stack([randn(*shape) for _ in range(4)])}} if precision == "int8" else {}
    rep, rep_off = {}, {}
    fused = tilecore.compile(model, precision=precision, report=rep, **kw)
    plain = tilecore.compile(model, precision=precision, report=rep_off, fuse=False, **kw)
    if precision == "f32":
        got = fused.run({"x": x})[out]
        np.testing.assert_array_equal(got, plain.run({"x": x})[out])
        np.testing.assert_allclose(got, ort_run(model, {"x": x})[out], rtol=1e-4, atol=1e-4)
        return rep, rep_off
    mse = {"fused": 0.0, "plain": 0.0}
    for xi in [x] + [randn(*shape) for _ in range(3)]:
        r = ort_run(model, {"x": xi})[out]
        for key, exe in (("fused", fused), ("plain", plain)):
            y = exe.run({"x": xi})[out]
            mse[key] += float(((y - r) ** 2).mean())
            assert float((y * r).sum() / np.linalg.norm(y) / np.linalg.norm(r)) > 0.999
    assert mse["fused"] <= 1.02 * mse["plain"], mse
    return rep, rep_off


@pytest.mark.parametrize("act", ["SiLU", "HardSwish"])
@pytest.mark.parametrize("precision", ["f32", "int8"])
def test_silu_and_hardswish_fuse_into_the_conv_bit_identical(act, precision):
    """The activation's passes (activation_passes.h) in the Conv's epilogue, the dense and
    the depthwise one: in f32 the bits of the separate op and ONNX Runtime's values; in int8
    every Conv stays int8 and the result is at least as close to ONNX Runtime's."""
    rep, rep_off = fused_against_unfused(silu_block(act), (1, 16, 12, 12), "y", precision)
    names = {e["node"]: e["fused"] for e in rep["fused"]}
    assert names["expand"] == ["act1"] and names["dw"] == ["act2"], rep["fused"]
    if precision == "int8":
        assert set(rep["precision"]["assigned"].values()) == {"int8"} and not rep["precision"]["fallbacks"]
        specs = {p["name"]: p for p in rep["placement"]}
        assert specs["act1"]["where"] == "dropped" and specs["act2"]["where"] == "dropped"


def gate_block(act):
    """A squeeze-excite gate (EfficientNet's with Sigmoid, MobileNetV3's with HardSigmoid of
    alpha 1/6): global average pool, a 1x1 Conv, Relu, a 1x1 Conv and the gate, which scales
    the input channels before a 1x1 projection; and a spatial gate, a depthwise 3x3 Conv
    whose gate multiplies the projection."""
    w1, b1 = randn(8, 32, 1, 1, scale=0.3), randn(8, scale=0.1)
    w2, b2 = randn(32, 8, 1, 1, scale=0.3), randn(32, scale=0.1)
    wp, bp = randn(24, 32, 1, 1, scale=0.2), randn(24, scale=0.1)
    wd, bd = randn(24, 1, 3, 3, scale=0.4), randn(24, scale=0.1)
    gate = {"op_type": act} if act == "Sigmoid" else {"op_type": act, "alpha": 1.0 / 6.0}
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"], name="pool"),
             helper.make_node("Conv", ["p", "w1", "b1"], ["f1"], name="fc1"),
             helper.make_node("Relu", ["f1"], ["r1"], name="relu"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["f2"], name="fc2"),
             helper.make_node(inputs=["f2"], outputs=["g"], name="gate", **gate),
             helper.make_node("Mul", ["x", "g"], ["xs"], name="scale"),
             helper.make_node("Conv", ["xs", "wp", "bp"], ["y"], name="project"),
             helper.make_node("Conv", ["y", "wd", "bd"], ["d"], name="dw", group=24, pads=[1, 1, 1, 1]),
             helper.make_node(inputs=["d"], outputs=["dg"], name="dw_gate", **gate),
             helper.make_node("Mul", ["y", "dg"], ["z"], name="spatial")]
    inits = [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("wp", wp), ("bp", bp), ("wd", wd), ("bd", bd)]
    return make_model(nodes, [("x", [1, 32, 14, 14], np.float32)], ["z"], inits, opset=17)


@pytest.mark.parametrize("act", ["Sigmoid", "HardSigmoid"])
@pytest.mark.parametrize("precision", ["f32", "int8"])
def test_sigmoid_and_hardsigmoid_fuse_into_the_conv(act, precision):
    """A gate's Sigmoid (one vector command) or HardSigmoid (its passes with the node's
    alpha and beta) in the epilogue of the Conv before it, dense and depthwise: in f32 the
    bits of the separate op and ONNX Runtime's values; in int8 as close to ONNX Runtime."""
    rep, rep_off = fused_against_unfused(gate_block(act), (1, 32, 14, 14), "z", precision)
    names = {e["node"]: e["fused"] for e in rep["fused"]}
    assert names["fc2"] == ["gate"] and names["dw"] == ["dw_gate"], rep["fused"]
    assert "dw" not in {e["node"] for e in rep_off["fused"]}


def test_curved_activations_are_refused_after_an_int8_residual():
    """An int8 residual is added in its own units, where only bounds have a form."""
    x, s = compiler.TensorSpec((1, 8, 6, 6), "float32"), compiler.TensorSpec((4,), "float32")
    wq, i8 = compiler.TensorSpec((4, 8, 1, 1), "int8"), compiler.TensorSpec((1, 4, 6, 6), "int8")
    q = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_residual": 1, "tc_residual_scale": 0.1}
    assert compiler.HasStrategy("Conv", dict(q, tc_activation="Relu"), [x, wq, None, s, i8]) == ""
    for act in ("Sigmoid", "HardSigmoid", "SiLU"):
        assert f"tc_activation {act} after an int8 residual" in compiler.HasStrategy(
            "Conv", dict(q, tc_activation=act), [x, wq, None, s, i8])


def yolo_bottleneck(rng, depthwise=False):
    """YOLOv5's C3 bottleneck: x + SiLU(Conv3x3(SiLU(Conv1x1(x)))) (the residual after the
    activation); ``depthwise``: the 3x3 Conv depthwise."""
    def r(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w1, b1 = r(16, 16, 1, 1, scale=0.3), r(16, scale=0.1)
    w2, b2 = r(16, 1 if depthwise else 16, 3, 3, scale=0.2), r(16, scale=0.1)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="cv1"),
             helper.make_node("Sigmoid", ["c1"], ["s1"], name="cv1_sig"),
             helper.make_node("Mul", ["c1", "s1"], ["a1"], name="cv1_act"),
             helper.make_node("Conv", ["a1", "w2", "b2"], ["c2"], name="cv2", pads=[1, 1, 1, 1],
                              group=16 if depthwise else 1),
             helper.make_node("Sigmoid", ["c2"], ["s2"], name="cv2_sig"),
             helper.make_node("Mul", ["c2", "s2"], ["a2"], name="cv2_act"),
             helper.make_node("Add", ["x", "a2"], ["y"], name="add")]
    return make_model(nodes, [("x", [1, 16, 12, 12], np.float32)], ["y"],
                      [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)], opset=17)


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("precision", ["f32", "f16", "int8"])
def test_a_residual_after_the_activation_fuses_into_the_conv(depthwise, precision):
    """Conv -> SiLU -> Add: the Add in the Conv's epilogue after the SiLU (tc_residual_last),
    bit for bit the separate nodes and close to ONNX Runtime; in int8 (the residual is added in
    the matrix engine's epilogue, before any activation) the Add stays a node of its own."""
    rng = np.random.default_rng(71)  # (its own: the module's draws stay the other tests')
    model = yolo_bottleneck(rng, depthwise)
    x = rng.standard_normal((1, 16, 12, 12)).astype(np.float32)
    kw = {"calib_samples": {"x": rng.standard_normal((4, 1, 16, 12, 12)).astype(np.float32)}} \
        if precision == "int8" else {}
    rep = {}
    fused = tilecore.compile(model, precision=precision, report=rep, **kw)
    plain = tilecore.compile(model, precision=precision, fuse=False, **kw)
    names = {e["node"]: e["fused"] for e in rep["fused"]}
    got, ref = fused.run({"x": x})["y"], ort_run(model, {"x": x})["y"]
    if precision == "int8":
        assert names["cv2"] == ["cv2_act"], rep["fused"]
        assert float((got * ref).sum() / np.linalg.norm(got) / np.linalg.norm(ref)) > 0.999
        return
    assert names["cv2"] == ["cv2_act", "add"], rep["fused"]
    np.testing.assert_array_equal(got, plain.run({"x": x})["y"])
    tol = 1e-4 if precision == "f32" else 2e-2
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_a_residual_after_the_activation_is_checked():
    x, w = compiler.TensorSpec((1, 8, 6, 6), "float32"), compiler.TensorSpec((8, 8, 1, 1), "float32")
    r = compiler.TensorSpec((1, 8, 6, 6), "float32")
    last = {"tc_activation": "SiLU", "tc_residual_last": 1}
    assert "tc_residual_last without tc_residual" in compiler.HasStrategy("Conv", last, [x, w])
    assert compiler.HasStrategy("Conv", dict(last, tc_residual=1), [x, w, None, r]) == ""
    xi, wi = compiler.TensorSpec((1, 8, 6, 6), "int8"), compiler.TensorSpec((8, 8, 1, 1), "int8")
    s = compiler.TensorSpec((8,), "float32")
    int8 = dict(last, tc_residual=1, tc_precision="int8", tc_x_scale=0.1)
    assert "a residual after the activation (tc_residual_last) is float32, in a Conv not in int8" in \
        compiler.HasStrategy("Conv", int8, [xi, wi, None, s, r])


def se_block():
    """test_driver's squeeze-excite block, 8 channels at 14 x 14, its weights this module's."""
    return shared_se_block(randn)


@pytest.mark.parametrize("precision", ["f32", "int8"])
def test_squeeze_excite_scale_moves_into_the_consumer_conv(precision, monkeypatch):
    """The excite Mul done by the projection Conv on its loaded patches (tc_channel_scale):
    the same f32 products, so the bits of the separate Mul (in int8 too: the Conv quantises
    the scaled f32 patch as it quantised the Mul's output), the other fusions alike."""
    from tilecore.compiler import fuse_epilogue, int8_edges

    # (the activation stays f32: stored int8 it is another program, the next test's)
    monkeypatch.setattr(int8_edges, "DEQUANTISING_OPS", ())
    model = se_block()
    x = randn(1, 8, 14, 14)
    kw = {"calib_samples": {"x": np.stack([randn(1, 8, 14, 14) for _ in range(4)])}} if precision == "int8" else {}
    rep = {}
    fused = tilecore.compile(model, precision=precision, report=rep, **kw)
    monkeypatch.setattr(fuse_epilogue, "_fold_channel_scales", lambda *a: [])
    plain = tilecore.compile(model, precision=precision, **kw)
    assert {"node": "project", "fused": ["excite"]} in rep["fused"], rep["fused"]
    assert {p["name"]: p["where"] for p in rep["placement"]}["excite"] == "dropped"
    got = fused.run({"x": x})["y"]
    np.testing.assert_array_equal(got, plain.run({"x": x})["y"])
    if precision == "f32":
        np.testing.assert_allclose(got, ort_run(model, {"x": x})["y"], rtol=1e-4, atol=1e-4)


def test_squeeze_excite_reads_its_activation_in_int8(monkeypatch):
    """int8: the activation that only the squeeze (a global pooling) and the excite (the
    projection's channel-scale prologue) read is stored int8, its Relu's range [0, max] in
    the 256 codes; both readers dequantise it. Every step agrees with the model compiled a
    node a step (verify), the output with ONNX Runtime, and the block moves fewer bytes than
    with the activation in f32."""
    from tilecore.compiler import int8_edges

    model = se_block()
    samples = {"x": np.stack([randn(1, 8, 14, 14) for _ in range(4)])}
    x = randn(1, 8, 14, 14)
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, verify={"x": x}, report=rep)
    assert "ar" in rep["int8_edges"], rep["int8_edges"]
    assert {"node": "project", "fused": ["excite"]} in rep["fused"], rep["fused"]
    # (int8's reference check reports its cosines, the output's checked below)
    assert rep["verify"]["checks"] == {"hazards": "pass", "optimisations": "pass", "reference": "reported"}
    got, ref = exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"]
    assert float((got * ref).sum() / np.linalg.norm(got) / np.linalg.norm(ref)) > 0.995
    moved = exe.stats()["bytes"]
    monkeypatch.setattr(int8_edges, "DEQUANTISING_OPS", ())
    rep_f32 = {}
    wide = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep_f32)
    assert "ar" not in rep_f32["int8_edges"]
    wide.run({"x": x})
    wide_moved = wide.stats()["bytes"]
    assert (sum(moved[k] for k in ("ddr_read", "l2_read")) < sum(wide_moved[k] for k in ("ddr_read", "l2_read")))


@pytest.mark.parametrize("zero_point", [0, -128, 7])
def test_channel_scale_of_int8_data_is_that_of_its_values(zero_point):
    """A Conv's channel-scale prologue over int8 data (its code tc_channel_scale.tc_x_scale, a
    power of two here so that the dequantised values and the folded scales are exact in f32)
    gives the bits of the same Conv over those values in f32: the same f32 products
    quantised the same way. A padded 3x3 Conv too (its padding the code's zero point)."""
    rng = np.random.default_rng(200 + zero_point)
    for kernel, pads in ((1, [0, 0, 0, 0]), (3, [1, 1, 1, 1])):
        q = rng.integers(-128, 128, (1, 24, 9, 9)).astype(np.int8)
        code_scale = 2.0 ** -5
        values = ((q.astype(np.float32) - zero_point) * np.float32(code_scale)).astype(np.float32)
        w = rng.integers(-127, 128, (16, 24, kernel, kernel)).astype(np.int8)
        bias = rng.integers(-500, 500, 16).astype(np.int32)
        w_scale = (rng.random(16) * 0.01 + 0.001).astype(np.float32)
        scale = rng.random((1, 24, 1, 1)).astype(np.float32)
        attrs = {"tc_precision": "int8", "tc_x_scale": 0.03, "tc_x_zero_point": 3, "tc_channel_scale": 1,
                 "pads": pads, "kernel_shape": [kernel, kernel]}
        outs = []
        for data, extra in ((q, {"tc_channel_scale.tc_x_scale": code_scale,
                                 "tc_channel_scale.tc_x_zero_point": zero_point}), (values, {})):
            y = np.zeros((1, 16, 9, 9), np.float32)
            run_lowered("Conv", dict(attrs, **extra), [data, w, bias, w_scale, scale], [y])
            outs.append(y)
        np.testing.assert_array_equal(outs[0], outs[1])
        assert np.abs(outs[0]).max() > 0


def test_channel_scale_is_checked():
    x, w = compiler.TensorSpec((1, 8, 6, 6), "float32"), compiler.TensorSpec((4, 8, 1, 1), "float32")
    s = compiler.TensorSpec((1, 8, 1, 1), "float32")
    cs = {"tc_channel_scale": 1}
    assert compiler.HasStrategy("Conv", cs, [x, w, None, s]) == ""
    assert "input 3, after the operands" in compiler.HasStrategy("Conv", cs, [x, w, None])
    assert "one value per input channel" in compiler.HasStrategy(
        "Conv", cs, [x, w, None, compiler.TensorSpec((1, 4, 1, 1), "float32")])
    assert "one group" in compiler.HasStrategy(
        "Conv", dict(cs, group=8), [x, compiler.TensorSpec((8, 1, 3, 3), "float32"), None, s])
    assert "f32 data" in compiler.HasStrategy("Conv", dict(cs, tc_precision="bf16"), [x, w, None, s])
    xi, wi = compiler.TensorSpec((1, 8, 6, 6), "int8"), compiler.TensorSpec((4, 8, 1, 1), "int8")
    ws, int8 = compiler.TensorSpec((4,), "float32"), dict(cs, tc_precision="int8", tc_x_scale=0.1)
    code = {"tc_channel_scale.tc_x_scale": 0.05}
    assert compiler.HasStrategy("Conv", dict(int8, **code), [xi, wi, None, ws, s]) == ""
    assert "goes with tc_channel_scale.tc_x_scale" in compiler.HasStrategy("Conv", int8, [xi, wi, None, ws, s])
    assert "goes with tc_channel_scale.tc_x_scale" in compiler.HasStrategy("Conv", dict(int8, **code),
                                                                         [x, wi, None, ws, s])
    assert "must be positive" in compiler.HasStrategy(
        "Conv", dict(int8, **{"tc_channel_scale.tc_x_scale": 0.0}), [xi, wi, None, ws, s])
    assert "in [-128, 127]" in compiler.HasStrategy(
        "Conv", dict(int8, **code, **{"tc_channel_scale.tc_x_zero_point": 200}), [xi, wi, None, ws, s])


def test_silu_after_an_int8_residual_is_refused():
    x, w = compiler.TensorSpec((1, 8, 6, 6), "int8"), compiler.TensorSpec((8, 8, 1, 1), "int8")
    s, r = compiler.TensorSpec((8,), "float32"), compiler.TensorSpec((1, 8, 6, 6), "int8")
    attrs = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_residual": 1, "tc_residual_scale": 0.1,
             "tc_activation": "SiLU"}
    assert "SiLU after an int8 residual" in compiler.HasStrategy("Conv", attrs, [x, w, None, s, r])
    assert "expected Relu, Clip, Sigmoid, SiLU, HardSwish or HardSigmoid" in compiler.HasStrategy(
        "Conv", {"tc_activation": "Gelu"}, [compiler.TensorSpec((1, 8, 6, 6), "float32"),
                                            compiler.TensorSpec((8, 8, 1, 1), "float32")])


def test_not_fused():
    """A broadcast Add (a bias), a Conv read twice, a Clip bound computed at run time."""
    w = randn(4, 4, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Add", ["c", "bias"], ["a"], name="bias_add"),
             helper.make_node("Conv", ["a", "w"], ["c2"], name="conv2"),
             helper.make_node("Relu", ["c2"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "c2"], ["y"], name="twice"),
             helper.make_node("Conv", ["y", "w"], ["c3"], name="conv3"),
             helper.make_node("Clip", ["c3", "lo"], ["z"], name="clip")]
    lo_node = helper.make_node("ReduceMin", ["x"], ["lo"], name="lo", keepdims=0)
    model = make_model([lo_node] + nodes, [("x", [1, 4, 5, 5], np.float32)], ["z"],
                       [("w", w), ("bias", randn(1, 4, 1, 1))])
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert rep["fused"] == []
    x = randn(1, 4, 5, 5)
    np.testing.assert_allclose(exe.run({"x": x})["z"], ort_run(model, {"x": x})["z"], rtol=1e-4, atol=1e-4)


def test_int8_edges():
    """int8 between int8 Convs: without a residual the bits are those of the f32 edge
    (the producer quantises as its reader did on load); the residual block is read in
    int8 (the downsample's output too, with its own threshold), close to the f32-edge
    compilation and to ONNX Runtime."""
    model = residual_model()
    samples = {"x": randn(4, 1, 8, 10, 10)}
    rep, rep_kept = {}, {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep_kept, keep_intermediates=True)
    # d (the downsample) is read only as the residual: quantised with its own threshold
    assert sorted(rep["int8_edges"]) == ["d", "r1", "r2"] and rep_kept["int8_edges"] == []
    assert sorted(rep["precision"]["assigned"]) == ["conv1", "conv2", "conv3", "conv4", "down"]
    x = samples["x"][0]
    a, b = exe.run({"x": x}), kept.run({"x": x})
    ref = ort_run(model, {"x": x})

    def cos(u, v):
        u, v = u.ravel().astype(np.float64), v.ravel().astype(np.float64)
        return u @ v / (np.linalg.norm(u) * np.linalg.norm(v))

    for k in ("y", "zr", "z"):
        assert cos(a[k], b[k]) > 0.999 and cos(a[k], ref[k]) > 0.99, k
    # conv1 -> relu1 -> conv2 alone: no residual, so the int8 edge gives the same bits
    chain = make_model([helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
                        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
                        helper.make_node("Conv", ["r1", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])],
                       [("x", [1, 8, 10, 10], np.float32)], ["y"],
                       [("w1", randn(16, 8, 3, 3, scale=0.2)), ("b1", randn(16)), ("w2", randn(8, 16, 3, 3))])
    rep = {}
    e1 = tilecore.compile(chain, precision="int8", calib_samples=samples, report=rep)
    e2 = tilecore.compile(chain, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert rep["int8_edges"] == ["r1"]
    np.testing.assert_array_equal(e1.run({"x": x})["y"], e2.run({"x": x})["y"])


def test_int8_edges_through_maxpool():
    """Conv -> Relu -> MaxPool -> Conv: both edges int8 (the pool in int8), the same bits
    as the f32 edges (the max of quantised values is the quantised max)."""
    model = make_model([helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[3, 3, 3, 3],
                                         strides=[2, 2]),
                        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
                        helper.make_node("MaxPool", ["r1"], ["p"], name="pool", kernel_shape=[3, 3],
                                         strides=[2, 2], pads=[1, 1, 1, 1]),
                        helper.make_node("Conv", ["p", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])],
                       [("x", [1, 3, 32, 32], np.float32)], ["y"],
                       [("w1", randn(16, 3, 7, 7, scale=0.1)), ("w2", randn(8, 16, 3, 3, scale=0.1))])
    samples = {"x": randn(3, 1, 3, 32, 32)}
    rep = {}
    e1 = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    e2 = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert rep["int8_edges"] == ["r1", "p"]
    x = samples["x"][0]
    y1 = e1.run({"x": x})["y"]
    np.testing.assert_array_equal(y1, e2.run({"x": x})["y"])
    ref = ort_run(model, {"x": x})["y"]
    cos = float(y1.ravel() @ ref.ravel() / (np.linalg.norm(y1) * np.linalg.norm(ref)))
    assert cos > 0.99


def test_int8_edges_through_a_concat():
    """An Inception block: three branches (1x1 Conv, 3x3 Conv, MaxPool then 1x1 Conv), their
    Concat read by a Conv and a MaxPool then a Conv: every branch quantises in its epilogue
    at the one scale of the Concat's readers, the Concat and the MaxPool after it move int8;
    the same bits as the f32 edges, close to ONNX Runtime."""
    nodes = [helper.make_node("Conv", ["x", "w0"], ["s"], name="stem", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["s"], ["sr"], name="stem_relu"),
             helper.make_node("Conv", ["sr", "w1"], ["a"], name="b1"),
             helper.make_node("Relu", ["a"], ["ar"], name="b1_relu"),
             helper.make_node("Conv", ["sr", "w2"], ["b"], name="b2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["b"], ["br"], name="b2_relu"),
             helper.make_node("MaxPool", ["sr"], ["p"], name="b3_pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p", "w3"], ["c"], name="b3"),
             helper.make_node("Relu", ["c"], ["cr"], name="b3_relu"),
             helper.make_node("Concat", ["ar", "br", "cr"], ["cat"], name="cat", axis=1),
             helper.make_node("Conv", ["cat", "w4"], ["y1"], name="next1"),
             helper.make_node("MaxPool", ["cat"], ["q"], name="next_pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["q", "w5"], ["y2"], name="next2")]
    model = make_model(nodes, [("x", [1, 8, 14, 14], np.float32)], ["y1", "y2"],
                       [("w0", randn(16, 8, 3, 3, scale=0.2)), ("w1", randn(8, 16, 1, 1, scale=0.3)),
                        ("w2", randn(16, 16, 3, 3, scale=0.1)), ("w3", randn(8, 16, 1, 1, scale=0.3)),
                        ("w4", randn(16, 32, 1, 1, scale=0.2)), ("w5", randn(16, 32, 1, 1, scale=0.2))])
    samples = {"x": randn(4, 1, 8, 14, 14)}
    rep = {}
    e1 = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    e2 = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert {"ar", "br", "cr", "cat", "q"} <= set(rep["int8_edges"]), rep["int8_edges"]
    x = samples["x"][0]
    a, b, ref = e1.run({"x": x}), e2.run({"x": x}), ort_run(model, {"x": x})
    for k in ("y1", "y2"):
        np.testing.assert_array_equal(a[k], b[k])
        cos = float(a[k].ravel() @ ref[k].ravel() / (np.linalg.norm(a[k]) * np.linalg.norm(ref[k])))
        assert cos > 0.99, (k, cos)


@pytest.mark.parametrize("zy", [-128, -7])
def test_relu_before_int8_output_saturation(zy, hazard_checked):
    """A Relu before an int8 output whose zero point is -128 is the quantisation's own
    saturation: the plan drops its pass (docs/precision.md, "int8 between ops") and gives
    the bits numpy gets with the Relu."""
    xq = RNG.integers(-128, 128, (1, 16, 12, 12)).astype(np.int8)
    wq = RNG.integers(-127, 128, (32, 16, 3, 3)).astype(np.int8)
    bq = RNG.integers(-2000, 2000, 32).astype(np.int32)
    w_scale = (RNG.random(32) * 0.002 + 0.0005).astype(np.float32)
    sx, zx, sy = 0.05, -3, 0.03
    attrs = {"pads": [1, 1, 1, 1], "tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx,
             "tc_activation": "Relu", "tc_y_scale": sy, "tc_y_zero_point": zy}
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in (xq, wq, bq, w_scale)]
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((1, 32, 12, 12), "int8")], "npu -cores=4")
    assert ("max(" in str(f)) == (zy != -128)
    out = run_lowered("Conv", attrs, [xq, wq, bq, w_scale], [np.zeros((1, 32, 12, 12), np.int8)])[0]
    f32 = np.float32
    xp = np.pad(xq.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=zx)
    acc = conv_ref(xp, wq.astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    y = np.maximum(acc.astype(f32) * (w_scale * f32(sx)).reshape(1, -1, 1, 1), f32(0))
    t = y * f32(1.0 / sy) + f32(zy)
    np.testing.assert_array_equal(out, np.clip(np.rint(t), -128, 127).astype(np.int8))
    assert hazard_checked() == []


@pytest.mark.parametrize("act,attrs", [("Gelu", {}), ("Sigmoid", {}), ("Tanh", {})])
def test_int8_edges_through_a_lookup_table(act, attrs):
    """MatMul + bias -> activation -> MatMul (a transformer's feed-forward block): both edges
    int8, the activation one table lookup per element, close to ONNX Runtime and to the
    f32-edge compilation."""
    w1, b1, w2 = randn(64, 256, scale=0.15), randn(256, scale=0.5), randn(256, 32, scale=0.1)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="dense1"),
             helper.make_node("Add", ["m1", "b1"], ["h"], name="bias1"),
             helper.make_node(act, ["h"], ["g"], name="act", **attrs),
             helper.make_node("MatMul", ["g", "w2"], ["y"], name="dense2")]
    model = make_model(nodes, [("x", [48, 64], np.float32)], ["y"], [("w1", w1), ("b1", b1), ("w2", w2)],
                       opset=20)
    samples = {"x": randn(8, 48, 64)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert "g" in rep["int8_edges"] and len(rep["int8_edges"]) >= 2
    x = randn(48, 64)
    y, y_kept = exe.run({"x": x})["y"], kept.run({"x": x})["y"]
    ref = ort_run(model, {"x": x})["y"]

    def cos(u, v):
        u, v = u.ravel().astype(np.float64), v.ravel().astype(np.float64)
        return u @ v / (np.linalg.norm(u) * np.linalg.norm(v))

    assert cos(y, ref) > 0.999 and cos(y, y_kept) > 0.999
    # the activation's input is quantised too: the error stays near the f32 edges'
    assert np.abs(y - ref).max() < 3 * np.abs(y_kept - ref).max() + 1e-3


@pytest.mark.parametrize("act,attrs,rows,cols", [("Gelu", {}, [48], 256), ("Sigmoid", {}, [48], 256),
                                                 ("LeakyRelu", {"alpha": 0.2}, [48], 256),
                                                 ("Gelu", {"approximate": "tanh"}, [300], 250),
                                                 ("Gelu", {}, [2, 24], 256)])
def test_int8_matmul_applies_a_lookup_table_in_its_epilogue(act, attrs, rows, cols, hazard_checked):
    """MatMul + bias -> activation with an int8 output only the table op reads: the MatMul
    looks its int8 results up in the op's table before storing them (``tc_lut``), bit for
    bit the separate lookup, which is gone from the steps; the column plan, the tiled plan
    (250 columns do not split over the 4 cores, so no column plan), and a batch of sequences
    (the bias fold's Reshape between the two)."""
    w1, b1, w2 = randn(64, cols, scale=0.15), randn(cols, scale=0.5), randn(cols, 32, scale=0.1)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="dense1"),
             helper.make_node("Add", ["m1", "b1"], ["h"], name="bias1"),
             helper.make_node(act, ["h"], ["g"], name="act", **attrs),
             helper.make_node("MatMul", ["g", "w2"], ["y"], name="dense2")]
    model = make_model(nodes, [("x", [*rows, 64], np.float32)], ["y"], [("w1", w1), ("b1", b1), ("w2", w2)],
                       opset=20)
    samples = {"x": randn(8, *rows, 64)}
    rep, rep_apart = {}, {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    apart = tilecore.compile(model, precision="int8", calib_samples=samples, fuse=False, report=rep_apart)
    fused = [f for f in rep["fused"] if f["fused"] == ["act"]]
    assert len(fused) == 1
    where = {p["name"]: p["where"] for p in rep["placement"]}
    where_apart = {p["name"]: p["where"] for p in rep_apart["placement"]}
    assert where["act"] == "dropped" and where_apart["act"] == "npu"
    x = randn(*rows, 64)
    y = exe.run({"x": x})["y"]
    np.testing.assert_array_equal(y, apart.run({"x": x})["y"])
    ref = ort_run(model, {"x": x})["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.999
    assert hazard_checked() == []


@pytest.mark.parametrize("heads,seq,d", [(4, 128, 64), (2, 48, 16),
                                         (2, 67, 16)])  # rows prime: the last item overlaps the one before
def test_int8_attention_scores_take_their_softmax(heads, seq, d, hazard_checked):
    """softmax(q k / sqrt(d)) v with int8 edges: the scores MatMul computes the Softmax
    itself (``tc_softmax``) and stores the int8 probabilities the second MatMul reads, bit
    for bit the separate Softmax, which is gone from the steps; close to ONNX Runtime."""
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="scores"),
             helper.make_node("Div", ["s", "d"], ["t"], name="scale"),
             helper.make_node("Softmax", ["t"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"], name="context")]
    shapes = {"q": [1, heads, seq, d], "k": [1, heads, d, seq], "v": [1, heads, seq, d]}
    model = make_model(nodes, [(n, s, np.float32) for n, s in shapes.items()], ["y"],
                       [("d", np.array(np.sqrt(d), np.float32))])
    samples = {n: randn(4, *s) for n, s in shapes.items()}
    rep, rep_apart = {}, {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    apart = tilecore.compile(model, precision="int8", calib_samples=samples, fuse=False, report=rep_apart)
    assert {"node": "scores", "fused": ["softmax"]} in rep["fused"]
    where = {p["name"]: p["where"] for p in rep["placement"]}
    assert where["softmax"] == "dropped" and {p["name"]: p["where"] for p in rep_apart["placement"]}["softmax"] == "npu"
    feeds = {n: randn(*s) for n, s in shapes.items()}
    y = exe.run(feeds)["y"]
    np.testing.assert_array_equal(y, apart.run(feeds)["y"])
    ref = ort_run(model, feeds)["y"]  # (random q, k and v in int8: 0.998)
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.995
    assert hazard_checked() == []


@pytest.mark.parametrize("masked,dropped", [(np.finfo(np.float32).min, True), (-np.inf, False)])
def test_a_nan_mask_after_a_softmax_of_finite_scores_is_dropped(masked, dropped, hazard_checked):
    """A dynamo-exported attention: Softmax(q k + causal mask), then Where(IsNaN(p), 0, p).
    The scores of an int8 MatMul are bounded and a mask of float32's lowest is finite, so no
    row holds NaN: the Softmax writes the output the NaN mask wrote, which is dropped (the
    same values as with it). A mask of -inf keeps it."""
    heads, seq, d = 2, 16, 8
    mask = np.triu(np.full((seq, seq), masked, np.float32), 1).reshape(1, 1, seq, seq)
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="scores"),
             helper.make_node("Add", ["s", "mask"], ["sm"], name="causal"),
             helper.make_node("Softmax", ["sm"], ["p"], name="softmax", axis=-1),
             helper.make_node("IsNaN", ["p"], ["nan"], name="isnan"),
             helper.make_node("Where", ["nan", "zero", "p"], ["pz"], name="nan_mask"),
             helper.make_node("MatMul", ["pz", "v"], ["y"], name="context")]
    shapes = {"q": [1, heads, seq, d], "k": [1, heads, d, seq], "v": [1, heads, seq, d]}
    model = make_model(nodes, [(n, sh, np.float32) for n, sh in shapes.items()], ["y"],
                       [("mask", mask), ("zero", np.array(0.0, np.float32))])
    samples = {n: randn(4, *sh) for n, sh in shapes.items()}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    apart = tilecore.compile(model, precision="int8", calib_samples=samples, fuse=False)
    assert ({"node": "softmax", "fused": ["nan_mask"]} in rep["fused"]) == dropped
    feeds = {n: randn(*sh) for n, sh in shapes.items()}
    y = exe.run(feeds)["y"]
    np.testing.assert_array_equal(y, apart.run(feeds)["y"])
    ref = ort_run(model, feeds)["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.995
    assert hazard_checked() == []


@pytest.mark.parametrize("heads,seq", [(2, 32), (3, 37)])  # 37 rows: the last item overlaps
def test_int8_attention_scores_take_their_causal_mask(heads, seq, hazard_checked):
    """Softmax(q k + mask) v with a constant causal mask: the scores MatMul adds the mask's
    rows to its scores itself (``tc_softmax.tc_mask``) before the Softmax's passes and
    multiplies the probabilities by V: the Add, the Softmax and the context MatMul are gone
    from the steps, bit for bit the unfused compile, close to ONNX Runtime."""
    d = 16
    mask = np.triu(np.full((seq, seq), np.finfo(np.float32).min, np.float32), 1).reshape(1, 1, seq, seq)
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="scores"),
             helper.make_node("Add", ["s", "mask"], ["sm"], name="causal"),
             helper.make_node("Softmax", ["sm"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"], name="context")]
    shapes = {"q": [1, heads, seq, d], "k": [1, heads, d, seq], "v": [1, heads, seq, d]}
    model = make_model(nodes, [(n, sh, np.float32) for n, sh in shapes.items()], ["y"], [("mask", mask)])
    samples = {n: randn(4, *sh) for n, sh in shapes.items()}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    apart = tilecore.compile(model, precision="int8", calib_samples=samples, fuse=False)
    assert {"node": "scores", "fused": ["causal", "softmax"]} in rep["fused"]
    where = {p["name"]: p["where"] for p in rep["placement"]}
    assert where["causal"] == where["softmax"] == "dropped"
    feeds = {n: randn(*sh) for n, sh in shapes.items()}
    y = exe.run(feeds)["y"]
    np.testing.assert_array_equal(y, apart.run(feeds)["y"])
    ref = ort_run(model, feeds)["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.995
    assert hazard_checked() == []


def test_tc_softmax_is_checked():
    q, k = compiler.TensorSpec((1, 4, 128, 64), "int8"), compiler.TensorSpec((1, 4, 64, 128), "int8")
    base = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_b_scale": 0.1, "tc_softmax": 1}
    assert compiler.HasStrategy("MatMul", {**base, "tc_softmax.tc_y_scale": 1 / 127}, [q, k]) == ""
    assert "positive" in compiler.HasStrategy("MatMul", {**base, "tc_softmax.tc_y_scale": -1.0}, [q, k])
    f = compiler.TensorSpec((1, 4, 128, 64), "float32")
    assert compiler.HasStrategy("MatMul", base, [f, k]) == ""  # quantised on load
    assert "two activations" in compiler.HasStrategy("MatMul", {"tc_precision": "f16", "tc_softmax": 1}, [f, f])
    assert "tc_y_scale" in compiler.HasStrategy("MatMul", {**base, "tc_y_scale": 0.1}, [q, k])
    q256, wide = compiler.TensorSpec((1, 4, 128, 256), "int8"), compiler.TensorSpec((1, 1, 256, 3000), "int8")
    assert "fit" in compiler.HasStrategy("MatMul", base, [q256, wide])
    # one mm per row block: N within the matrix engine's 4096, K at least 1
    q4, k6000 = compiler.TensorSpec((1, 1, 8, 4), "int8"), compiler.TensorSpec((1, 1, 4, 6000), "int8")
    assert "N <= 4096" in compiler.HasStrategy("MatMul", base, [q4, k6000])
    q0, k0 = compiler.TensorSpec((1, 1, 8, 0), "int8"), compiler.TensorSpec((1, 1, 0, 8), "int8")
    assert "1 <= K" in compiler.HasStrategy("MatMul", base, [q0, k0])


@pytest.mark.parametrize("precision", ["f32", "int8"])
@pytest.mark.parametrize("S,H,D,view", [(96, 4, 16, False), (50, 3, 2, False), (96, 4, 16, True)])
def test_attention_head_transposes_fold_into_the_matmuls(precision, S, H, D, view, hazard_checked):
    """x -> dense + bias -> Reshape [1, S, H, D] -> Transpose (0, 2, 1, 3): the dense layer
    stores its tiles straight into [1, H, S, D] (``tc_y_heads``); ctx [1, H, S, D] ->
    Transpose (0, 2, 1, 3) -> Reshape: the batched MatMul stores its rows interleaved
    (``tc_y_rows_first``), also through a Reshape to its own shape before the Transpose
    (`view`: transformers' exports have one). The Transposes are gone; the values are the
    unfused ones. 3 heads of 2 (6 columns, not a multiple of the 4 cores) take the tiled
    plan's store."""
    w, b = randn(64, H * D, scale=0.2), randn(H * D, scale=0.3)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="dense"),
             helper.make_node("Add", ["m", "b"], ["h"], name="bias"),
             helper.make_node("Reshape", ["h", "heads"], ["hr"], name="split"),
             helper.make_node("Transpose", ["hr"], ["q"], name="to_heads", perm=[0, 2, 1, 3]),
             helper.make_node("MatMul", ["q", "v"], ["c0" if view else "c"], name="context")]
    if view:
        nodes.append(helper.make_node("Reshape", ["c0", "same"], ["c"], name="same_view"))
    nodes += [helper.make_node("Transpose", ["c"], ["ct"], name="to_rows", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ct", "merged"], ["y"], name="merge")]
    model = make_model(nodes, [("x", [1, S, 64], np.float32), ("v", [1, H, D, 32], np.float32)], ["y"],
                       [("w", w), ("b", b), ("heads", np.array([1, S, H, D], np.int64)),
                        ("same", np.array([1, H, S, 32], np.int64)),
                        ("merged", np.array([1, S, H * 32], np.int64))])
    kw = {"precision": precision}
    if precision == "int8":
        kw["calib_samples"] = {"x": randn(4, 1, S, 64), "v": randn(4, 1, H, D, 32)}
    rep = {}
    exe = tilecore.compile(model, report=rep, **kw)
    fused = {f["node"]: f["fused"] for f in rep["fused"]}
    assert "to_heads" in fused["dense"] and fused["context"] == (["same_view", "to_rows"] if view else ["to_rows"])
    feeds = {"x": randn(1, S, 64), "v": randn(1, H, D, 32)}
    y = exe.run(feeds)["y"]
    if precision == "f32":
        np.testing.assert_allclose(y, ort_run(model, feeds)["y"], rtol=1e-4, atol=1e-4)
    else:
        np.testing.assert_array_equal(y, tilecore.compile(model, fuse=False, **kw).run(feeds)["y"])
    # (the cores' strided stores of one command into L2 are checked by their bounding ranges,
    # which overlap: those WAW reports are left out, as for the DDR)
    same_store = re.compile(r"^WAW hazard on l2 .* dout pc (\d+) \(`dma\.out .* dout pc \1 \(`dma\.out ")
    assert [h for h in hazard_checked() if not same_store.match(h)] == []


def test_output_layouts_are_checked():
    a, b = compiler.TensorSpec((96, 64), "float32"), compiler.TensorSpec((64, 64), "float32")
    assert compiler.HasStrategy("Gemm", {"tc_y_heads": 16}, [a, b]) == ""
    assert "must divide" in compiler.HasStrategy("Gemm", {"tc_y_heads": 24}, [a, b])
    q, v = compiler.TensorSpec((1, 4, 96, 16), "float32"), compiler.TensorSpec((1, 4, 16, 32), "float32")
    assert "without batch" in compiler.HasStrategy("MatMul", {"tc_y_heads": 16}, [q, v])
    assert compiler.HasStrategy("MatMul", {"tc_y_rows_first": 1}, [q, v]) == ""
    assert "neither" in compiler.HasStrategy("MatMul", {"tc_y_rows_first": 1, "tc_y_heads": 16}, [q, v])


def test_tc_lut_is_checked():
    a, w = compiler.TensorSpec((8, 16), "int8"), compiler.TensorSpec((16, 4), "int8")
    bias, scale = compiler.TensorSpec((4,), "int32"), compiler.TensorSpec((4,), "float32")
    base = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_y_scale": 0.05}
    lut = {"tc_lut": "Sigmoid", "tc_lut.tc_x_scale": 0.05, "tc_lut.tc_y_scale": 0.01}
    assert compiler.HasStrategy("MatMul", {**base, **lut}, [a, w, bias, scale]) == ""
    assert "lookup-table" in compiler.HasStrategy("MatMul", {**base, **lut, "tc_lut": "Exp2"}, [a, w, bias, scale])
    assert "int8 output" in compiler.HasStrategy("MatMul", {"tc_precision": "int8", "tc_x_scale": 0.1, **lut},
                                                 [a, w, bias, scale])
    assert "positive finite" in compiler.HasStrategy("MatMul", {**base, **lut, "tc_lut.tc_y_scale": 0.0},
                                                     [a, w, bias, scale])


@pytest.mark.parametrize("divisor,folded", [(8.0, True), (0.25, True), (3.0, False), (-8.0, False)])
def test_int8_matmul_takes_a_division_by_a_power_of_two(divisor, folded):
    """Attention's scores over sqrt(d): the int8 MatMul of two activations scales by 1/8 in
    its epilogue, bit for bit what the Div after it computed; a divisor that is not a
    positive power of two keeps its Div."""
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="scores"),
             helper.make_node("Div", ["s", "d"], ["y"], name="scale")]
    model = make_model(nodes, [("q", [2, 32, 64], np.float32), ("k", [2, 64, 32], np.float32)], ["y"],
                       [("d", np.array(divisor, np.float32))])
    samples = {"q": randn(4, 2, 32, 64), "k": randn(4, 2, 64, 32)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert ({"node": "scores", "fused": ["scale"]} in rep["fused"]) == folded
    feeds = {"q": samples["q"][0], "k": samples["k"][0]}
    y = exe.run(feeds)["y"]
    np.testing.assert_array_equal(y, kept.run(feeds)["y"])
    ref = ort_run(model, feeds)["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.999
    # f32 keeps the Div (the float epilogue has no scale)
    rep = {}
    tilecore.compile(model, report=rep)
    assert rep["fused"] == []


def test_tc_out_scale_is_checked():
    specs = [compiler.TensorSpec((4, 8), "float32"), compiler.TensorSpec((8, 4), "float32")]
    assert "int8 form" in compiler.HasStrategy("MatMul", {"tc_out_scale": 0.5}, specs)
    int8 = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_b_scale": 0.1}
    assert compiler.HasStrategy("MatMul", dict(int8, tc_out_scale=0.5), specs) == ""
    assert compiler.HasStrategy("MatMul", dict(int8, tc_out_scale=0.3), specs) == ""
    assert "positive" in compiler.HasStrategy("MatMul", dict(int8, tc_out_scale=-0.5), specs)


def test_one_quantisation_for_several_int8_readers():
    """Query, key and value projections of one input: the input is quantised once (a
    QuantizeLinear step with the readers' own steps) and the three int8 Gemms read its int8
    bytes: bit for bit the compilation that quantises on every load, close to ONNX Runtime."""
    d = 128
    ws = {f"w{k}": randn(d, d, scale=0.1) for k in "qkv"}
    nodes = [helper.make_node("MatMul", ["x", f"w{k}"], [k], name=f"proj_{k}") for k in "qkv"]
    nodes += [helper.make_node("Add", ["q", "k"], ["qk"], name="add_qk"),
              helper.make_node("Add", ["qk", "v"], ["y"], name="add_v"),
              helper.make_node("Add", ["y", "x"], ["z"], name="residual")]  # x also read in f32
    model = make_model(nodes, [("x", [64, d], np.float32)], ["z"], list(ws.items()))
    samples = {"x": randn(8, 64, d)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert rep["shared_quantisation"] == ["x"]
    assert [p["op_type"] for p in rep["placement"]].count("QuantizeLinear") == 1
    x = randn(64, d)
    z, z_kept, ref = exe.run({"x": x})["z"], kept.run({"x": x})["z"], ort_run(model, {"x": x})["z"]

    def cos(u, v):
        u, v = u.ravel().astype(np.float64), v.ravel().astype(np.float64)
        return u @ v / (np.linalg.norm(u) * np.linalg.norm(v))

    assert cos(z, ref) > 0.9999
    np.testing.assert_array_equal(z, z_kept)


def test_the_shared_quantisation_copies_the_input_for_its_other_reader():
    """As above at 128 x 256 (four tiles per core): the QuantizeLinear also writes x as it
    loaded it (``tc_copy_input``) and the residual Add reads that copy, in L2 inside the
    layer group: the same bits as the compilation that keeps every intermediate."""
    d = 256
    ws = {f"w{k}": randn(d, d, scale=0.06) for k in "qkv"}
    nodes = [helper.make_node("MatMul", ["x", f"w{k}"], [k], name=f"proj_{k}") for k in "qkv"]
    nodes += [helper.make_node("Add", ["q", "k"], ["qk"], name="add_qk"),
              helper.make_node("Add", ["qk", "v"], ["y"], name="add_v"),
              helper.make_node("Add", ["y", "x"], ["z"], name="residual")]
    model = make_model(nodes, [("x", [128, d], np.float32)], ["z"], list(ws.items()))
    samples = {"x": randn(8, 128, d)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert rep["shared_quantisation"] == ["x"] and rep["copied_inputs"] == ["x"]
    x = randn(128, d)
    z = exe.run({"x": x})["z"]
    np.testing.assert_array_equal(z, kept.run({"x": x})["z"])
    ref = ort_run(model, {"x": x})["z"]
    assert np.corrcoef(z.ravel(), ref.ravel())[0, 1] > 0.9999


@pytest.mark.parametrize("rows,folded", [(64, True), (4, False)])
def test_a_layer_norm_quantises_for_its_int8_reader(rows, folded):
    """A transformer's first FFN: an int8 MatMul reads a LayerNormalization's output, which the
    residual reads in f32 too. With rows enough to pipeline, the norm writes the int8 bytes
    as a second output (no QuantizeLinear step) and the MatMul loads them as they are; with
    too few rows it quantises on load as before. Both bit for bit the compilation that keeps
    every intermediate, and close to ONNX Runtime."""
    d = 128
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["h"], name="ln", axis=-1),
             helper.make_node("MatMul", ["h", "w"], ["f"], name="ffn"),
             helper.make_node("Add", ["f", "h"], ["z"], name="residual")]
    model = make_model(nodes, [("x", [rows, d], np.float32)], ["z"],
                       [("g", randn(d, scale=0.5) + 1), ("b", randn(d, scale=0.1)), ("w", randn(d, d, scale=0.1))])
    samples = {"x": randn(8, rows, d)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert rep["shared_quantisation"] == (["h"] if folded else [])
    assert "QuantizeLinear" not in [p["op_type"] for p in rep["placement"]]
    x = randn(rows, d)
    z, z_kept, ref = exe.run({"x": x})["z"], kept.run({"x": x})["z"], ort_run(model, {"x": x})["z"]
    np.testing.assert_array_equal(z, z_kept)
    cos = float(z.ravel() @ ref.ravel() / (np.linalg.norm(z) * np.linalg.norm(ref)))
    assert cos > 0.999


def test_a_layer_norm_read_only_in_int8_stores_no_f32():
    """A pre-norm block: the LayerNormalization's output is read only by int8 projections, so
    the norm writes their int8 bytes and nothing else (``tc_q_alone``: its f32 Y is neither an
    output nor stored); bit for bit the compilation that keeps every intermediate, close to
    ONNX Runtime."""
    import io

    from tilecore.compiler.pipeline import PipelineOptions

    d = 128
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["h"], name="ln", axis=-1),
             helper.make_node("MatMul", ["h", "w1"], ["a"], name="proj_a"),
             helper.make_node("MatMul", ["h", "w2"], ["c"], name="proj_c"),
             helper.make_node("Add", ["a", "c"], ["s"], name="sum"),
             helper.make_node("Add", ["s", "x"], ["z"], name="residual")]
    model = make_model(nodes, [("x", [64, d], np.float32)], ["z"],
                       [("g", randn(d, scale=0.5) + 1), ("b", randn(d, scale=0.1)),
                        ("w1", randn(d, d, scale=0.1)), ("w2", randn(d, d, scale=0.1))])
    samples = {"x": randn(8, 64, d)}
    rep, text = {}, io.StringIO()
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep,
                           pipeline=PipelineOptions(print_after=["ShareQuantisation"], stream=text))
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert rep["shared_quantisation"] == ["h"]
    ln = [line for line in text.getvalue().splitlines() if "= LayerNormalization(" in line][-1]
    assert "tc_q_alone=1" in ln and ln.lstrip().startswith("%h/int8: i8")  # (the int8 Y alone)
    x = randn(64, d)
    z, z_kept, ref = exe.run({"x": x})["z"], kept.run({"x": x})["z"], ort_run(model, {"x": x})["z"]
    np.testing.assert_array_equal(z, z_kept)
    assert float(z.ravel() @ ref.ravel() / (np.linalg.norm(z) * np.linalg.norm(ref))) > 0.999


def test_int8_edges_through_a_transpose_into_both_operands_of_a_matmul():
    """Attention's shape: a projection, its transpose, and the MatMul of the two (A and B both
    activations): the projection stores int8, the Transpose moves int8 and the MatMul loads
    both operands as they are; close to ONNX Runtime and to quantising on every load."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["a"], name="proj"),
             helper.make_node("Transpose", ["a"], ["at"], name="tr", perm=[1, 0]),
             helper.make_node("MatMul", ["a", "at"], ["s"], name="scores")]
    model = make_model(nodes, [("x", [64, 128], np.float32)], ["s"], [("w", randn(128, 96, scale=0.1))])
    samples = {"x": randn(8, 64, 128)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert sorted(rep["int8_edges"]) == ["a", "at"]
    x = randn(64, 128)
    s, s_kept, ref = exe.run({"x": x})["s"], kept.run({"x": x})["s"], ort_run(model, {"x": x})["s"]

    def cos(u, v):
        u, v = u.ravel().astype(np.float64), v.ravel().astype(np.float64)
        return u @ v / (np.linalg.norm(u) * np.linalg.norm(v))

    assert cos(s, ref) > 0.999 and cos(s, s_kept) > 0.9999


@pytest.mark.parametrize("with_bias", [True, False])
def test_layernorm_takes_the_residual_add_before_it(with_bias):
    """Add(h, x) -> LayerNormalization, the Add read by nothing else: the LayerNormalization
    adds them itself (tc_skip), bit for bit the unfused pair; resident rows (256) and rows in
    chunks (6000)."""
    for width in (256, 6000):
        ins = ["s", "gamma"] + (["beta"] if with_bias else [])
        nodes = [helper.make_node("Relu", ["h"], ["hr"], name="relu"),  # so the Add's inputs are computed
                 helper.make_node("Add", ["hr", "x"], ["s"], name="residual"),
                 helper.make_node("LayerNormalization", ins, ["y"], name="ln", axis=-1, epsilon=1e-5)]
        inits = [("gamma", randn(width)), ("beta", randn(width))][:2 if with_bias else 1]
        model = make_model(nodes, [("h", [2, 8, width], np.float32), ("x", [2, 8, width], np.float32)], ["y"],
                           inits)
        rep = {}
        exe = tilecore.compile(model, report=rep)
        assert {"node": "ln", "fused": ["residual"]} in rep["fused"]
        feeds = {"h": randn(2, 8, width), "x": randn(2, 8, width)}
        y = exe.run(feeds)["y"]
        np.testing.assert_array_equal(y, tilecore.compile(model, keep_intermediates=True).run(feeds)["y"])
        np.testing.assert_allclose(y, ort_run(model, feeds)["y"], rtol=1e-4, atol=1e-4)


def test_tc_skip_is_checked():
    x, p = compiler.TensorSpec((4, 64), "float32"), compiler.TensorSpec((64,), "float32")
    assert compiler.HasStrategy("LayerNormalization", {"tc_skip": 1}, [x, p, p, x]) == ""
    assert "tc_skip" in compiler.HasStrategy("LayerNormalization", {"tc_skip": 1}, [x, p, p, p])
    assert "tc_skip" in compiler.HasStrategy("LayerNormalization", {"tc_skip": 1}, [x, p])



def test_tc_q_scale_is_checked():
    x, p = compiler.TensorSpec((64, 64), "float32"), compiler.TensorSpec((64,), "float32")
    assert compiler.HasStrategy("LayerNormalization", {"tc_q_scale": 0.1, "tc_q_zero_point": 3}, [x, p, p]) == ""
    assert "positive" in compiler.HasStrategy("LayerNormalization", {"tc_q_scale": 0.0}, [x, p, p])
    assert "outside int8" in compiler.HasStrategy("LayerNormalization",
                                                  {"tc_q_scale": 0.1, "tc_q_zero_point": 200}, [x, p, p])
    bn = [compiler.TensorSpec((1, 4, 8, 8), "float32")] + [compiler.TensorSpec((4,), "float32")] * 4
    assert "tc_q_scale" in compiler.HasStrategy("BatchNormalization", {"tc_q_scale": 0.1}, bn)
    assert "needs tc_q_scale" in compiler.HasStrategy("LayerNormalization", {"tc_q_alone": 1}, [x, p, p])
    # the int8 output is the pipelined form's: too few rows to pipeline are refused when lowered
    few = compiler.TensorSpec((4, 64), "float32")
    with pytest.raises(Exception, match="tc_q_scale"):
        compiler.LowerOp("LayerNormalization", {"tc_q_scale": 0.1}, [few, p, p],
                         [few, compiler.TensorSpec((4, 64), "int8")])

@pytest.mark.parametrize("keys", [64, 9000])
def test_softmax_stores_int8_for_an_int8_reader(keys):
    """Attention's probabilities: the Softmax quantises them on store with the very steps its
    int8 MatMul reader used on load, so the result is bit for bit the f32 edge's (rows in one
    tile, and rows of 9000 in chunks)."""
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"], name="context")]
    model = make_model(nodes, [("q", [2, 64, 32], np.float32), ("k", [2, 32, keys], np.float32),
                               ("v", [2, keys, 32], np.float32)], ["y"])
    samples = {"q": randn(4, 2, 64, 32), "k": randn(4, 2, 32, keys), "v": randn(4, 2, keys, 32)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, keep_intermediates=True)
    assert rep["int8_edges"] == ["p"]
    feeds = {k: v[0] for k, v in samples.items()}
    y = exe.run(feeds)["y"]
    np.testing.assert_array_equal(y, kept.run(feeds)["y"])
    ref = ort_run(model, feeds)["y"]
    # (9000 probabilities of about 1e-4 each lose most of their bits to int8 either way)
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > (0.999 if keys < 100 else 0.99)
    spec = [compiler.TensorSpec((4, 64), "float32")]
    assert "Softmax's only" in compiler.HasStrategy("LogSoftmax", {"tc_y_scale": 0.1}, spec)


def test_the_scores_matmul_takes_the_keys_transpose():
    """Attention's keys: a projection viewed to [1, M, H, D] and transposed to [1, H, D, M]
    for the scores MatMul, which computes the Softmax too. The MatMul reads the keys'
    rows as they lie (tc_b_heads) and turns each head in L1: no Transpose step, bit for
    bit the compilation without the fusions (fuse=False: the same int8 values between the
    ops), close to ONNX Runtime."""
    m, h, d = 64, 2, 32
    shape = ("shape", np.array([1, m, h, d], np.int64))
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q2"], name="proj_q"),
             helper.make_node("MatMul", ["x", "wk"], ["k2"], name="proj_k"),
             helper.make_node("Reshape", ["q2", "shape"], ["q4"], name="view_q"),
             helper.make_node("Reshape", ["k2", "shape"], ["k4"], name="view_k"),
             helper.make_node("Transpose", ["q4"], ["qh"], name="heads_q", perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["k4"], ["kt"], name="heads_k", perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["qh", "kt"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["y"], name="softmax", axis=-1)]
    model = make_model(nodes, [("x", [m, h * d], np.float32)], ["y"],
                       [("wq", randn(h * d, h * d, scale=0.05)), ("wk", randn(h * d, h * d, scale=0.05)), shape],
                       opset=13)
    samples = {"x": randn(8, m, h * d)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    apart = tilecore.compile(model, precision="int8", calib_samples=samples, fuse=False)
    assert {"node": "scores", "fused": ["heads_k"]} in rep["fused"]
    assert [p["where"] for p in rep["placement"] if p["name"] == "heads_k"] == ["dropped"]
    x = randn(m, h * d)
    y, ref = exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"]
    np.testing.assert_array_equal(y, apart.run({"x": x})["y"])
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.999


def test_tc_b_heads_is_checked():
    a, kh = compiler.TensorSpec((1, 2, 64, 32), "int8"), compiler.TensorSpec((1, 64, 2, 32), "int8")
    sm = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_b_scale": 0.1, "tc_softmax": 1, "tc_b_heads": 1}
    assert compiler.HasStrategy("MatMul", sm, [a, kh]) == ""
    assert "tc_softmax alone" in compiler.HasStrategy("MatMul", {k: v for k, v in sm.items() if k != "tc_softmax"},
                                                      [a, kh])
    assert "tc_b_heads needs" in compiler.HasStrategy("MatMul", sm, [a, compiler.TensorSpec((1, 64, 2, 32), "float32")])
    assert "tc_b_heads needs" in compiler.HasStrategy("MatMul", sm, [a, compiler.TensorSpec((2, 64, 2, 32), "int8")])


def attention_model(dense, m, h=2, d=32, scale=None):
    """Attention whole: projections, heads, scores, Softmax, the context MatMul, transposed
    back to rows (and, with `dense`, the output projection reading it). `scale` = (op, c):
    the queries and the keys each go through op (Mul or Div) by c before the scores (the
    scaled dot-product attention export)."""
    heads = ("heads", np.array([1, m, h, d], np.int64))
    rows = ("rows", np.array([m, h * d], np.int64))
    nodes = [helper.make_node("MatMul", ["x", f"w{k}"], [f"{k}2"], name=f"proj_{k}") for k in "qkv"]
    nodes += [helper.make_node("Reshape", [f"{k}2", "heads"], [f"{k}4"], name=f"view_{k}") for k in "qkv"]
    nodes += [helper.make_node("Transpose", ["q4"], ["qh"], name="heads_q", perm=[0, 2, 1, 3]),
              helper.make_node("Transpose", ["k4"], ["kt"], name="heads_k", perm=[0, 2, 3, 1]),
              helper.make_node("Transpose", ["v4"], ["vh"], name="heads_v", perm=[0, 2, 1, 3])]
    consts = []
    if scale is not None:
        nodes += [helper.make_node(scale[0], ["qh", "sc"], ["qs"], name="scale_q"),
                  helper.make_node(scale[0], ["kt", "sc"], ["ks"], name="scale_k")]
        consts.append(("sc", np.array(scale[1], np.float32)))
    q, k = ("qs", "ks") if scale is not None else ("qh", "kt")
    nodes += [helper.make_node("MatMul", [q, k], ["s"], name="scores"),
              helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "vh"], ["c"], name="context"),
              helper.make_node("Transpose", ["c"], ["ct"], name="back", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ct", "rows"], ["merged" if dense else "y"], name="merge")]
    if dense:
        nodes.append(helper.make_node("MatMul", ["merged", "wo"], ["y"], name="dense"))
    return make_model(nodes, [("x", [m, h * d], np.float32)], ["y"],
                      [(f"w{k}", randn(h * d, h * d, scale=0.05)) for k in "qkvo"] + [heads, rows] + consts,
                      opset=13)


@pytest.mark.parametrize("scale,exact", [(("Mul", 0.5), True), (("Div", 4.0), True), (("Mul", 0.42), False),
                                         (("Mul", -0.5), None)])
def test_int8_attention_operand_scales_fold_into_the_scores_matmul(scale, exact, hazard_checked):
    """Queries and keys each scaled by a constant before their product (the scaled
    dot-product attention export: q * d^-1/4, k^T * d^-1/4): the scores MatMul reads the
    unscaled operands, their quantisation scales divided by it and its product multiplied
    by both, and the keys' Transpose is then fused into it. With a power of two the bits
    are the Muls' apart; with another constant close to them; a negative one stays a Mul."""
    folds = exact is not None
    model = attention_model(True, 37, 2, 16, scale)
    samples = {"x": randn(8, 37, 32)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    apart = tilecore.compile(model, precision="int8", calib_samples=samples, fuse=False)
    scores = next(e["fused"] for e in rep["fused"] if e["node"] == "scores")
    assert ("scale_q" in scores and "scale_k" in scores) == folds
    where = {p["name"]: p["where"] for p in rep["placement"]}
    assert (where["scale_q"] == where["scale_k"] == where["heads_k"] == "dropped") == folds
    x = randn(37, 32)
    y = exe.run({"x": x})["y"]
    y_apart = apart.run({"x": x})["y"]
    if exact:
        np.testing.assert_array_equal(y, y_apart)
    else:  # (a code moved by a step here and there)
        assert float(y.ravel() @ y_apart.ravel() / (np.linalg.norm(y) * np.linalg.norm(y_apart))) > 0.9999
    ref = ort_run(model, {"x": x})["y"]
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.995
    assert hazard_checked() == []


@pytest.mark.parametrize("dense,m", [(False, 64), (True, 64), (False, 37)])  # 37 rows: items overlap
def test_the_scores_matmul_takes_the_context_matmul(dense, m):
    """The scores MatMul multiplies its probabilities by V itself (tc_context) and stores
    the context (int8 with `dense`): no probabilities in memory, bit for bit the
    compilation without the fusions (fuse=False: the same int8 values between the ops), and
    close to ONNX Runtime."""
    h, d = 2, 32
    model = attention_model(dense, m, h, d)
    samples = {"x": randn(8, m, h * d)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    apart = tilecore.compile(model, precision="int8", calib_samples=samples, fuse=False)
    assert {"node": "scores", "fused": ["context"]} in rep["fused"]
    assert [p["where"] for p in rep["placement"] if p["name"] in ("softmax", "context")] == ["dropped"] * 2
    x = randn(m, h * d)
    y, ref = exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"]
    np.testing.assert_array_equal(y, apart.run({"x": x})["y"])
    assert float(y.ravel() @ ref.ravel() / (np.linalg.norm(y) * np.linalg.norm(ref))) > 0.995  # (int8 through four matrix ops)


def test_overlapping_last_rows_are_stored_once():
    """37 query rows in items of fewer rows: the last item ends at row 37 and computes
    again rows of the item before it, which another core computes at the same time. In a
    layer group the context is an L2 intermediate the output projection reads: the last
    item stores only its new rows, so no two cores write the same L2 bytes unordered (the
    simulator's hazard mode, run by verify, once saw that WAW race in wav2vec2's encoder)."""
    model = attention_model(True, 37)
    samples = {"x": randn(8, 37, 64)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, verify={"x": samples["x"][0]}, report=rep)
    assert any(st["op_type"] == "Group" for st in exe.describe()["steps"])
    assert rep["verify"]["checks"]["hazards"] == "pass"


def test_tc_context_is_checked():
    a, b = compiler.TensorSpec((1, 2, 64, 32), "int8"), compiler.TensorSpec((1, 2, 32, 64), "int8")
    v = compiler.TensorSpec((1, 2, 64, 16), "int8")
    sm = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_b_scale": 0.1, "tc_softmax": 1,
          "tc_softmax.tc_y_scale": 0.01, "tc_context": 1, "tc_context.tc_x_scale": 0.01,
          "tc_context.tc_b_scale": 0.1, "tc_context.tc_y_scale": 0.05}
    assert compiler.HasStrategy("MatMul", sm, [a, b, v]) == ""
    assert "V come after A and B" in compiler.HasStrategy("MatMul", sm, [a, b])
    # a causal mask: input 2, one [M, N] matrix for every head; V then input 3
    mask, masked = compiler.TensorSpec((1, 1, 64, 64), "float32"), dict(sm, **{"tc_softmax.tc_mask": 1})
    assert compiler.HasStrategy("MatMul", masked, [a, b, mask, v]) == ""
    assert "tc_mask needs" in compiler.HasStrategy("MatMul", masked, [a, b, compiler.TensorSpec((1, 2, 64, 64),
                                                                                                "float32"), v])
    assert "mask and tc_context's V come after" in compiler.HasStrategy("MatMul", masked, [a, b, v])
    assert "int8 V" in compiler.HasStrategy("MatMul", sm, [a, b, compiler.TensorSpec((1, 2, 32, 16), "int8")])
    assert "int8 V" in compiler.HasStrategy("MatMul", sm, [a, b, compiler.TensorSpec((1, 3, 64, 16), "int8")])
    # the probabilities' zero point: the Softmax's, and -zp an int8 (V's column sums times it)
    zp = {"tc_softmax.tc_y_zero_point": -128, "tc_context.tc_x_zero_point": -128}
    assert compiler.HasStrategy("MatMul", dict(sm, **zp), [a, b, v]) == ""
    assert "must be the probabilities'" in compiler.HasStrategy(
        "MatMul", dict(sm, **{"tc_context.tc_x_zero_point": 3}), [a, b, v])
    assert "int8 probabilities" in compiler.HasStrategy(
        "MatMul", {k: x for k, x in sm.items() if k != "tc_softmax.tc_y_scale"}, [a, b, v])
    assert "scores take an A of zero point 0" in compiler.HasStrategy(
        "MatMul", dict(sm, tc_x_zero_point=-128), [a, b, v])
    two = {"tc_precision": "int8", "tc_x_scale": 0.1, "tc_b_scale": 0.1}
    assert compiler.HasStrategy("MatMul", dict(two, tc_x_zero_point=-128), [a, b]) == ""
    long_k = [compiler.TensorSpec((1, 2, 64, 300), "int8"), compiler.TensorSpec((1, 2, 300, 64), "int8")]
    assert "K at most 256, not 300" in compiler.HasStrategy("MatMul", dict(two, tc_x_zero_point=-128), long_k)


@pytest.mark.parametrize("act", ["Relu", "Clip"])
@pytest.mark.parametrize("width", [12, 80])
def test_batchnorm_takes_the_activation_after_it(act, width):
    """A pre-activation block (DenseNet's): Concat -> BatchNormalization -> Relu (or Clip)
    -> Conv, the BatchNormalization read by nothing else: it applies the activation to each
    tile before its store, bit for bit the two separate nodes; one tile per row (12x12) and
    rows in chunks (80x80)."""
    bn_in = ["cat", "scale", "shift", "mean", "var"]
    after = (helper.make_node("Relu", ["bn"], ["a"], name="act") if act == "Relu" else
             helper.make_node("Clip", ["bn", "lo", "hi"], ["a"], name="act"))
    nodes = [helper.make_node("Concat", ["x", "h"], ["cat"], name="concat", axis=1),
             helper.make_node("BatchNormalization", bn_in, ["bn"], name="bn", epsilon=1e-5),
             after,
             helper.make_node("Conv", ["a", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    inits = [("scale", randn(12)), ("shift", randn(12)), ("mean", randn(12, scale=0.1)),
             ("var", (RNG.random(12) + 0.5).astype(np.float32)), ("w", randn(8, 12, 3, 3, scale=0.2)),
             ("lo", np.array(-0.5, np.float32)), ("hi", np.array(1.5, np.float32))]
    model = make_model(nodes, [("x", [1, 4, width, width], np.float32), ("h", [1, 8, width, width], np.float32)],
                       ["y"], inits)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert {"node": "bn", "fused": ["act"]} in rep["fused"]
    feeds = {"x": randn(1, 4, width, width), "h": randn(1, 8, width, width)}
    y = exe.run(feeds)["y"]
    np.testing.assert_array_equal(y, tilecore.compile(model, fuse=False).run(feeds)["y"])
    np.testing.assert_allclose(y, ort_run(model, feeds)["y"], rtol=1e-4, atol=1e-4)


def test_tc_activation_of_a_norm_is_checked():
    bn = [compiler.TensorSpec((1, 4, 8, 8), "float32")] + [compiler.TensorSpec((4,), "float32")] * 4
    assert compiler.HasStrategy("BatchNormalization", {"tc_activation": "Relu"}, bn) == ""
    clip = {"tc_activation": "Clip", "tc_clip_min": 0.0, "tc_clip_max": 6.0}
    assert compiler.HasStrategy("BatchNormalization", clip, bn) == ""
    assert "tc_activation" in compiler.HasStrategy("BatchNormalization", {"tc_activation": "SiLU"}, bn)
    assert "tc_clip_min" in compiler.HasStrategy("BatchNormalization", dict(clip, tc_clip_min=7.0), bn)
    x, p = compiler.TensorSpec((4, 64), "float32"), compiler.TensorSpec((64,), "float32")
    assert "tc_activation" in compiler.HasStrategy("LayerNormalization", {"tc_activation": "Relu"}, [x, p, p])
