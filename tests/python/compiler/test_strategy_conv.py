"""Conv strategy (implicit GEMM on the matrix engine) on 4 simulated TC1 cores against
the op library's numpy reference."""
import re

import numpy as np
import pytest

from tilecore import compiler, runtime
from tilecore.ir import ops
from strategy_util import check_op, fused_activation_attrs, fused_activation_ref, rand, run_lowered, run_op
from test_fuse_epilogue import int8_conv_operands

CASES = [
    # x shape, w shape, attrs, bias
    ((1, 3, 8, 8), (4, 3, 3, 3), {}, False),
    ((2, 5, 9, 7), (6, 5, 3, 3), {"pads": [1, 1, 1, 1]}, True),                  # odd sizes, padding
    ((1, 4, 11, 13), (8, 4, 3, 3), {"strides": [2, 2], "pads": [1, 0, 2, 1]}, True),  # strided, uneven pads
    ((1, 4, 12, 12), (4, 4, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}, False),  # dilated
    ((1, 6, 7, 7), (6, 2, 3, 3), {"group": 3, "pads": [1, 1, 1, 1]}, True),         # grouped
    ((1, 8, 10, 10), (8, 1, 3, 3), {"group": 8, "pads": [1, 1, 1, 1]}, True),       # depthwise
    ((1, 3, 9, 9), (5, 3, 1, 1), {}, True),                                          # pointwise
    ((1, 4, 7, 8), (3, 4, 2, 3), {"auto_pad": "SAME_UPPER"}, False),
    ((2, 3, 40), (5, 3, 5), {"pads": [2, 1], "strides": [2]}, True),                 # 1-D
    ((1, 2, 300), (3, 2, 3), {"dilations": [3]}, False),                             # 1-D, column tiles
    ((1, 130, 6, 6), (140, 130, 3, 3), {"pads": [1, 1, 1, 1]}, True),                # channel chunks, M tiles
]


@pytest.mark.parametrize("xs,ws,attrs,bias", CASES)
def test_conv(xs, ws, attrs, bias):
    inputs = [rand(xs, 1), rand(ws, 2, -0.5, 0.5)] + ([rand((ws[0],), 3)] if bias else [])
    err = check_op("Conv", attrs, inputs, rtol=1e-4, atol=1e-4)
    assert err < 1e-3


def test_conv_bigger_than_l1():
    # the input alone (32 x 64 x 64 f32 = 512 KiB per image, 2 images) exceeds a core's L1
    check_op("Conv", {"pads": [1, 1, 1, 1]}, [rand((2, 32, 64, 64), 1), rand((16, 32, 3, 3), 2, -0.2, 0.2)],
             rtol=1e-4, atol=1e-4)


def test_conv_strided_wide_patch_fits_l1():
    # ResNet-50's stride-2 1x1 downsample over 256 channels: with 256 channels per chunk
    # the input patch alone (256 x 17 x 55 f32) would take 957 KiB of the 1 MiB L1
    check_op("Conv", {"strides": [2, 2]}, [rand((1, 256, 56, 56), 1), rand((8, 256, 1, 1), 2, -0.2, 0.2)],
             rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs,ws,attrs,bias", [
    ((1, 512, 28, 28), (1024, 512, 1, 1), {"strides": [2, 2]}, True),  # ResNet-50 layer3 downsample
    ((1, 64, 56, 56), (256, 64, 1, 1), {}, True),                        # blocks of 128 channels grouped
    ((1, 48, 15, 15), (384, 48, 3, 3), {"pads": [1, 1, 1, 1]}, False),  # row tiles at both borders
])
def test_conv_channel_blocks_share_the_input(xs, ws, attrs, bias):
    """Several blocks of output channels from one loaded input (the cost model's pick among
    the grouped and double-buffered plans), a strided 1x1 Conv loading every other row,
    tiles that fit L1 once the buffers sit in whole banks."""
    ins = [rand(xs, 1), rand(ws, 2, -0.1, 0.1)]
    if bias:
        ins.append(rand((ws[0],), 3))
    check_op("Conv", attrs, ins, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs,ws,attrs,bias", [
    ((1, 37, 30, 30), (37, 1, 3, 3), {"group": 37, "pads": [1, 1, 1, 1], "strides": [2, 2]}, True),  # channel remainder
    ((2, 5, 9, 300), (5, 1, 3, 5), {"group": 5, "pads": [1, 2, 1, 2], "dilations": [2, 1]}, False),  # column tiles
    ((1, 4, 203, 203), (4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}, True),  # 5 row tiles and 3 rows: the
                                                                                  # first and last load in one DMA
    ((1, 7, 20), (7, 1, 3), {"group": 7, "pads": [1, 1], "strides": [2]}, True),                       # 1-D
    ((2, 4, 300, 300), (4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1], "strides": [2, 2]}, True),  # a core's
    # top row tile after its bottom one (the next image): the padding rows filled again
])
def test_depthwise_runs_on_the_vector_engine(xs, ws, attrs, bias):
    from strategy_util import run_op

    inputs = [rand(xs, 1), rand(ws, 2, -0.5, 0.5)] + ([rand((ws[0],), 3)] if bias else [])
    outs, refs, st = run_op("Conv", attrs, inputs)
    np.testing.assert_allclose(outs[0], refs[0], rtol=1e-4, atol=1e-4)
    assert all(c["mm"]["commands"] == 0 and c["vec"]["commands"] > 0 for c in st["cores"])


def test_depthwise_channels_shared_evenly_over_the_cores():
    """576 channels of a 7x7 map in items of 36 channels, four a core (halving gave 14 items
    of 42: two cores ran four, 168 channels, the others three): every core's vector engine
    issues as many commands; the output the op library's."""
    inputs = [rand((1, 576, 7, 7), 1), rand((576, 1, 5, 5), 2, -0.5, 0.5), rand((576,), 3)]
    outs, refs, st = run_op("Conv", {"group": 576, "pads": [2, 2, 2, 2]}, inputs)
    np.testing.assert_allclose(outs[0], refs[0], rtol=1e-4, atol=1e-4)
    per_core = [c["vec"]["commands"] for c in st["cores"]]
    assert len(set(per_core)) == 1 and per_core[0] > 0, per_core


def test_conv_channels_shared_evenly_over_the_cores():
    """A projection to 160 channels of a 7x7 map (MobileNetV2's last blocks): halving the
    blocks of 128 gives items of 64 (three: a core idle) or 32 (five: a core runs two);
    items of 48, the cores' share rounded up to the matrix engine's 16 rows, give each core
    one. The busiest matrix engine runs one item of 48 channels (TC1's f32 block, hand
    counted); the output the op library's."""
    from tilecore.arch import params

    inputs = [rand((1, 64, 7, 7), 1), rand((160, 64, 1, 1), 2, -0.2, 0.2), rand((160,), 3)]
    outs, refs, st = run_op("Conv", {}, inputs)
    np.testing.assert_allclose(outs[0], refs[0], rtol=1e-4, atol=1e-4)
    p = params()
    blocks = lambda m: -(-m // p["mm_block_f32_m"]) * -(-49 // p["mm_block_f32_n"]) * 64  # noqa: E731
    busiest = max(c["mm"]["busy"] for c in st["cores"])
    assert busiest == p["mm_latency"] + blocks(48) < p["mm_latency"] + blocks(64), busiest


@pytest.mark.parametrize("channels,out,mms", [
    (672, 28, 1),     # one chunk of all 672 input channels, where chunks of 256 were three mms
    (960, 240, 16),   # MobileNetV3-Large's fc1 in f32: chunks of 256 (two tiles of 128 rows
                      # within a quarter of L1), four blocks of 64 rows: it fits L1
    (28, 672, 4),     # EfficientNet-B0's fc2: a block of 176 rows a core, where blocks of 128
                      # were six, two on two cores (each a chain of DDR latencies)
])
def test_conv_over_a_pooled_vector_takes_its_channels_in_few_mms(channels, out, mms):
    """A squeeze-excite's 1x1 Conv over a pooled [1, C, 1, 1] vector: its input channels in
    as few chunks as the weight tiles allow, each an mm behind its load."""
    x, w = rand((1, channels, 1, 1), 3), rand((out, channels, 1, 1), 4, -0.05, 0.05)
    outs, refs, st = run_op("Conv", {}, [x, w])
    np.testing.assert_allclose(outs[0], refs[0], rtol=1e-4, atol=1e-4)
    assert sum(c["mm"]["commands"] for c in st["cores"]) <= mms


def test_conv_reasons():
    x = compiler.TensorSpec((1, 2, 4, 4, 4), "float32")
    w = compiler.TensorSpec((1, 2, 1, 1, 1), "float32")
    assert "1-D and 2-D" in compiler.HasStrategy("Conv", {}, [x, w])
    x2 = compiler.TensorSpec((1, 4, 5, 5), "float32")
    assert "group" in compiler.HasStrategy("Conv", {"group": 3}, [x2, compiler.TensorSpec((3, 1, 3, 3), "float32")])


@pytest.mark.parametrize("xs,ws,attrs", [
    ((1, 64, 56, 56), (64, 64, 3, 3), {"pads": [1, 1, 1, 1], "tc_resident": 1}),  # ResNet-50's layer1 conv2
    ((1, 64, 28, 28), (96, 64, 1, 1), {}),  # pointwise: the patch is the column matrix (the cost model's pick)
])
def test_conv_with_resident_weights(xs, ws, attrs):
    """Weights that fit L1 are loaded once per core, not a block per chunk and item (for
    layer1 conv2 the cost model prefers items of twice the rows, which leave no room for
    them: tc_resident asks for them)."""
    specs = [compiler.TensorSpec(xs, "float32"), compiler.TensorSpec(ws, "float32")]
    oh = xs[2] + sum(attrs.get("pads", [0, 0, 0, 0])[::2]) - ws[2] + 1
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((1, ws[0], oh, oh), "float32")], "npu -cores=4")
    assert "Wres" in str(f)
    x, w = rand(xs, 1), rand(ws, 2, -0.1, 0.1)
    out = run_lowered("Conv", attrs, [x, w], [np.zeros((1, ws[0], oh, oh), np.float32)])[0]
    schema = ops.get_op("Conv")  # the op library's numpy reference
    ref = schema.reference(schema.fill_attrs({k: v for k, v in attrs.items() if k != "tc_resident"}), x, w)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs,ws,attrs,pipeline", [
    ((1, 64, 56, 56), (256, 64, 1, 1), {}, 1),                     # ResNet-50's layer1 conv3, pipelined
    ((2, 40, 30, 30), (72, 40, 3, 3), {"pads": [1, 1, 1, 1]}, 1),  # K chunks, two images, 2 or 1 items a core
    ((1, 64, 56, 56), (256, 64, 1, 1), {}, 0),
])
def test_conv_items_pipelined(xs, ws, attrs, pipeline, hazard_checked):
    """Items software-pipelined (tc_pipeline=1: the next item's loads and mms issued before
    this item's epilogue, two sets of accumulators) compute what the plain plan does, and
    every L1 access is ordered (the simulator's hazard mode)."""
    specs = [compiler.TensorSpec(xs, "float32"), compiler.TensorSpec(ws, "float32"),
             compiler.TensorSpec((ws[0],), "float32")]
    oh = xs[2] + sum(attrs.get("pads", [0, 0, 0, 0])[::2]) - ws[2] + 1
    ins = [rand(xs, 1), rand(ws, 2, -0.1, 0.1), rand((ws[0],), 3)]
    _, refs, _ = run_op("Conv", attrs, ins)  # the op library's numpy reference
    attrs = dict(attrs, tc_pipeline=pipeline)
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((xs[0], ws[0], oh, oh), "float32")],
                         "npu -cores=4")
    assert ("Cl1" in str(f)) == bool(pipeline)
    out = run_lowered("Conv", attrs, ins, [np.zeros(refs[0].shape, np.float32)])[0]
    np.testing.assert_allclose(out, refs[0], rtol=1e-4, atol=1e-4)
    assert hazard_checked() == []


def test_int8_stem_items_pipelined_bit_exact(hazard_checked):
    """A stem (7 x 7, stride 2, three channels: K in one chunk) in int8 from an f32 input,
    items pipelined: each item has a patch and a column matrix of its own, so item t + 1's are
    loaded, quantised and unfolded (a kernel row's taps in one copy) while item t's mms run.
    Bit for bit the docs' int8 arithmetic (the f32 patch quantised on load, padding at the zero
    point; the int32 bias in the accumulator), every L1 access ordered."""
    from test_precision import conv_ref

    rng = np.random.default_rng(71)
    x = rng.standard_normal((1, 3, 48, 48)).astype(np.float32)
    wq = rng.integers(-127, 128, (16, 3, 7, 7)).astype(np.int8)
    bq = rng.integers(-3000, 3000, 16).astype(np.int32)
    w_scale = (rng.random(16) * 0.002 + 0.0005).astype(np.float32)
    sx, zx = 0.02, 3
    attrs = {"strides": [2, 2], "pads": [3, 3, 3, 3], "tc_precision": "int8", "tc_x_scale": sx,
             "tc_x_zero_point": zx, "tc_pipeline": 1}
    ins, out = [x, wq, bq, w_scale], np.zeros((1, 16, 24, 24), np.float32)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    text = str(compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(out.shape, "float32")], "npu -cores=4"))
    assert "Cl1" in text and "Col1" in text and "Xp[1:2" in text  # two of each, both used
    got = run_lowered("Conv", attrs, ins, [out])[0]
    xq = np.clip(np.rint(x * np.float32(1.0 / sx)) + zx, -128, 127)
    xp = np.pad(xq, ((0, 0), (0, 0), (3, 3), (3, 3)), constant_values=zx)
    acc = conv_ref(xp.astype(np.int64), wq.astype(np.int64), stride=2) + bq.reshape(1, -1, 1, 1)
    want = acc.astype(np.float32) * (w_scale * np.float32(sx)).reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(got, want)
    assert hazard_checked() == []


@pytest.mark.parametrize("xs,ws,attrs", [
    ((1, 512, 28, 28), (1024, 512, 1, 1), {"strides": [2, 2]}),  # ResNet-50's layer3 downsample
    ((1, 30, 17, 17), (300, 30, 3, 3), {"pads": [1, 1, 1, 1]}),  # rows that do not split over the cores
])
def test_conv_input_staged_in_l2(xs, ws, attrs, hazard_checked):
    """The input copied once into L2 by the cores (tc_stage_input=1), read from there by every
    item: the plain plan's results, every L1 and L2 access ordered."""
    specs = [compiler.TensorSpec(xs, "float32"), compiler.TensorSpec(ws, "float32")]
    ins = [rand(xs, 1), rand(ws, 2, -0.1, 0.1)]
    _, refs, _ = run_op("Conv", attrs, ins)
    attrs = dict(attrs, tc_stage_input=1)
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(refs[0].shape, "float32")], "npu -cores=4")
    assert "Xsh" in str(f) and "tir.barrier" in str(f)
    out = run_lowered("Conv", attrs, ins, [np.zeros(refs[0].shape, np.float32)])[0]
    np.testing.assert_allclose(out, refs[0], rtol=1e-4, atol=1e-4)
    assert hazard_checked() == []


@pytest.mark.parametrize("xs,ws,attrs", [
    ((1, 16, 28, 28), (64, 16, 3, 3), {"pads": [1, 1, 1, 1]}),    # a block of weights per row tile
    ((1, 30, 17, 17), (301, 30, 3, 3), {"pads": [1, 1, 1, 1]}),   # weight rows that do not split over the cores
    ((1, 40, 14, 14), (48, 40, 1, 1), {"tc_stage_input": 1}),     # with the input staged too: one barrier
])
def test_conv_weights_staged_in_l2(xs, ws, attrs, hazard_checked):
    """The weights copied once into L2 by the cores (tc_stage_weights=1), each item's block
    read from there: the plain plan's results, every L1 and L2 access ordered."""
    specs = [compiler.TensorSpec(xs, "float32"), compiler.TensorSpec(ws, "float32")]
    ins = [rand(xs, 1), rand(ws, 2, -0.1, 0.1)]
    plain = {k: v for k, v in attrs.items() if k != "tc_stage_input"}
    _, refs, _ = run_op("Conv", plain, ins)
    attrs = dict(attrs, tc_stage_weights=1)
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(refs[0].shape, "float32")], "npu -cores=4")
    assert "Wsh" in str(f) and str(f).count("tir.barrier") == 1
    out = run_lowered("Conv", attrs, ins, [np.zeros(refs[0].shape, np.float32)])[0]
    np.testing.assert_allclose(out, refs[0], rtol=1e-4, atol=1e-4)
    assert hazard_checked() == []


@pytest.mark.parametrize("xs,ws,attrs", [
    ((1, 64, 28, 28), (256, 64, 1, 1), {"strides": [2, 2]}),      # a strided downsample: rows skipped
    ((1, 300, 10, 10), (96, 300, 3, 3), {"pads": [1, 1, 1, 1]}),  # K in chunks, padded patches
    ((2, 40, 30, 30), (72, 40, 3, 3), {"pads": [1, 1, 1, 1], "tc_pipeline": 1}),  # pipelined items
])
def test_conv_weights_on_the_out_engine(xs, ws, attrs, hazard_checked):
    """The weight blocks loaded on the DMA-out engine (tc_weights_on_out=1), each item's first
    issued before its patch is waited for: the plain plan's results, every L1 access ordered."""
    specs = [compiler.TensorSpec(xs, "float32"), compiler.TensorSpec(ws, "float32")]
    ins = [rand(xs, 1), rand(ws, 2, -0.1, 0.1)]
    _, refs, _ = run_op("Conv", attrs, ins)  # the op library's numpy reference
    out_spec = [compiler.TensorSpec(refs[0].shape, "float32")]
    on = str(compiler.LowerOp("Conv", dict(attrs, tc_weights_on_out=1), specs, out_spec, "npu -cores=4"))
    off = str(compiler.LowerOp("Conv", dict(attrs, tc_weights_on_out=0), specs, out_spec, "npu -cores=4"))
    # (no bias and f32: the weights are the only copies on the out engine)
    assert "tile.dma_prefetch" in on and "tile.dma_prefetch" not in off
    out = run_lowered("Conv", dict(attrs, tc_weights_on_out=1), ins, [np.zeros(refs[0].shape, np.float32)])[0]
    np.testing.assert_allclose(out, refs[0], rtol=1e-4, atol=1e-4)
    assert hazard_checked() == []


def test_int8_downsample_weights_on_the_out_engine_bit_exact(hazard_checked):
    """ResNet-50's layer3 downsample in int8 (an int8 input and output, 1x1 stride 2) with its
    weight blocks on the DMA-out engine: bit for bit the docs' int8 arithmetic (codes loaded as
    they are, the int32 bias, which holds the zero point's share, in the accumulator, the
    per-channel scale, the output quantised at tc_y_scale), every L1 access ordered."""
    from test_precision import conv_ref

    rng = np.random.default_rng(72)
    xq = rng.integers(-128, 128, (1, 512, 28, 28)).astype(np.int8)
    wq = rng.integers(-127, 128, (1024, 512, 1, 1)).astype(np.int8)
    bq = rng.integers(-3000, 3000, 1024).astype(np.int32)
    w_scale = (rng.random(1024) * 0.002 + 0.0005).astype(np.float32)
    sx, zx, sy = 0.05, -128, 0.5
    attrs = {"strides": [2, 2], "tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx,
             "tc_y_scale": sy, "tc_weights_on_out": 1, "tc_transposed": 0}
    ins, out = [xq, wq, bq, w_scale], np.zeros((1, 1024, 14, 14), np.int8)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    text = str(compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(out.shape, "int8")], "npu -cores=4"))
    assert "tile.dma_prefetch(Al[" in text  # a weight block on the out engine
    got = run_lowered("Conv", attrs, ins, [out])[0]
    # (the zero point's share is in the bias: docs/precision.md, "bias")
    acc = conv_ref(xq.astype(np.int64), wq.astype(np.int64), stride=2) + bq.reshape(1, -1, 1, 1)
    y = acc.astype(np.float32) * (w_scale * np.float32(sx)).reshape(1, -1, 1, 1)
    want = np.clip(np.rint(y * np.float32(1.0 / sy)), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)
    assert hazard_checked() == []


@pytest.mark.parametrize("xs,ws,stride", [
    ((4, 256, 14, 14), (1024, 256, 1, 1), 2),  # a strided downsample at batch 4 (ResNet's, smaller)
    ((4, 256, 16, 16), (1024, 256, 1, 1), 1),  # a plain 1x1
])
def test_int8_transposed_items_of_one_x_tile_on_one_core(xs, ws, stride, hazard_checked):
    """The transposed plan with each X tile's blocks of output channels on one core
    (tc_x_major=1): bit for bit the docs' int8 arithmetic, every L1 and L2 access ordered,
    and X read from the DDR about twice (once per slot) instead of once a block."""
    from test_precision import conv_ref

    rng = np.random.default_rng(74)
    xq = rng.integers(-128, 128, xs).astype(np.int8)
    wq = rng.integers(-127, 128, ws).astype(np.int8)
    bq = rng.integers(-3000, 3000, ws[0]).astype(np.int32)
    w_scale = (rng.random(ws[0]) * 0.002 + 0.0005).astype(np.float32)
    sx, zx, sy = 0.05, -128, 0.5
    attrs = {"strides": [stride, stride], "tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx,
             "tc_y_scale": sy, "tc_transposed": 1}
    oh = (xs[2] - 1) // stride + 1
    ins, out = [xq, wq, bq, w_scale], np.zeros((xs[0], ws[0], oh, oh), np.int8)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    out_spec = [compiler.TensorSpec(out.shape, "int8")]
    ddr = {}
    for on in (0, 1):
        f = compiler.LowerOp("Conv", dict(attrs, tc_x_major=on), specs, out_spec, "npu -cores=4")
        ddr[on] = compiler.estimate_cost(f)["ddr_bytes"]
    x_bytes = xq.size // stride  # (the rows a strided 1x1 Conv reads)
    assert ddr[0] - ddr[1] >= x_bytes, ddr
    got = run_lowered("Conv", dict(attrs, tc_x_major=1), ins, [out])[0]
    acc = conv_ref(xq.astype(np.int64), wq.astype(np.int64), stride=stride) + bq.reshape(1, -1, 1, 1)
    y = acc.astype(np.float32) * (w_scale * np.float32(sx)).reshape(1, -1, 1, 1)
    want = np.clip(np.rint(y * np.float32(1.0 / sy)), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)
    assert hazard_checked() == []


@pytest.mark.parametrize("xs,ws,extra", [
    ((1, 16, 14, 14), (32, 16, 3, 3), {}),                     # one chunk of input channels
    ((1, 64, 28, 28), (128, 64, 3, 3), {}),                    # chunks double-buffered
    ((1, 64, 28, 28), (128, 64, 3, 3), {"tc_pipeline": 1}),    # items pipelined
    ((1, 64, 14, 14), (96, 64, 1, 1), {"tc_pipeline": 0}),     # the patch in place
])
def test_int8_bias_preset_after_the_first_patch_load(xs, ws, extra, hazard_checked):
    """An int8 Conv's accumulators start at the int32 bias: the item's first patch load is
    issued before the preset waits for the bias (the front end held the patch for the bias's
    DDR latency). Bit for bit the docs' int8 arithmetic (padding at the zero point, the
    bias in the accumulator, the per-channel scale, the output quantised at tc_y_scale);
    every L1 access ordered."""
    from test_precision import conv_ref

    rng = np.random.default_rng(73)
    pad = ws[2] // 2
    xq = rng.integers(-128, 128, xs).astype(np.int8)
    wq = rng.integers(-127, 128, ws).astype(np.int8)
    bq = rng.integers(-3000, 3000, ws[0]).astype(np.int32)
    w_scale = (rng.random(ws[0]) * 0.002 + 0.0005).astype(np.float32)
    sx, zx, sy = 0.05, -3, 0.5
    # (the implicit GEMM's: the transposed plan presets no accumulator)
    attrs = {"pads": [pad] * 4, "tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx,
             "tc_y_scale": sy, "tc_transposed": 0, **extra}
    ins, out = [xq, wq, bq, w_scale], np.zeros((1, ws[0], xs[2], xs[3]), np.int8)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    text = str(compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(out.shape, "int8")], "npu -cores=4"))
    first_patch, bias_wait = text.find("tile.dma_copy(Xp"), text.find("tile.wait(5)")
    assert 0 <= first_patch < bias_wait, (first_patch, bias_wait)
    got = run_lowered("Conv", attrs, ins, [out])[0]
    xp = np.pad(xq.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=zx)
    acc = conv_ref(xp, wq.astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    y = acc.astype(np.float32) * (w_scale * np.float32(sx)).reshape(1, -1, 1, 1)
    want = np.clip(np.rint(y * np.float32(1.0 / sy)), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)
    assert hazard_checked() == []


@pytest.mark.parametrize("xs,ws,attrs", [
    ((2, 32, 64, 64), (16, 32, 3, 3), {"pads": [1, 1, 1, 1]}),                # row tiles: borders and inside
    ((1, 3, 40, 40), (8, 3, 7, 7), {"pads": [3, 3, 3, 3], "strides": [2, 2]}),  # a stem's wide window
    ((4, 8, 4, 60), (16, 8, 3, 3), {"pads": [1, 1, 1, 1], "tc_images_per_item": 2}),  # two images an item
])
def test_conv_padding_columns_filled_alone(xs, ws, attrs, hazard_checked):
    """A patch whose rows are all in the image has only its padding columns zero-filled when
    that takes fewer DMA beats (an f32 row of 66 columns: 2 beats against 5); the tiles at
    the borders fill all of it. The reference's results, every L1 access ordered."""
    specs = [compiler.TensorSpec(xs, "float32"), compiler.TensorSpec(ws, "float32")]
    ins = [rand(xs, 1), rand(ws, 2, -0.1, 0.1)]
    plain = {k: v for k, v in attrs.items() if k != "tc_images_per_item"}
    _, refs, _ = run_op("Conv", plain, ins)  # the op library's numpy reference
    text = str(compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(refs[0].shape, "float32")], "npu -cores=4"))
    fills = [line.split("]")[0].rsplit(", ", 1)[-1] for line in text.splitlines() if "tile.dma_fill(" in line]
    pl = attrs["pads"][1]
    assert f"0:{pl}" in fills and any(c.startswith("0:") and c != f"0:{pl}" for c in fills)  # columns alone, all
    out = run_lowered("Conv", attrs, ins, [np.zeros(refs[0].shape, np.float32)])[0]
    np.testing.assert_allclose(out, refs[0], rtol=1e-4, atol=1e-4)
    assert hazard_checked() == []


def test_plan_overrides_are_0_or_1():
    specs = [compiler.TensorSpec((1, 8, 6, 6), "float32"), compiler.TensorSpec((8, 8, 3, 3), "float32")]
    for knob in ("tc_pipeline", "tc_stage_input", "tc_stage_weights", "tc_weights_on_out", "tc_transposed",
                 "tc_resident"):
        assert compiler.HasStrategy("Conv", {knob: 1}, specs) == ""
        pipe = " (2: three stages, a depthwise Conv's)" if knob == "tc_pipeline" else ""
        if knob != "tc_pipeline":
            assert compiler.HasStrategy("Conv", {knob: 2}, specs) == f"Conv: {knob} must be 0 or 1"
        assert compiler.HasStrategy("Conv", {knob: 3}, specs) == f"Conv: {knob} must be 0 or 1{pipe}"
        # not an int: refused for its kind before the strategy sees it (compiler_attrs.h)
        assert compiler.HasStrategy("Conv", {knob: "yes"}, specs) == \
            f"Conv: attribute `{knob}` is a string; it is an int"
    # 2 for tc_pipeline: three stages, which only a depthwise Conv has
    assert compiler.HasStrategy("Conv", {"tc_pipeline": 2}, specs) == \
        "Conv: tc_pipeline 2 (three stages) is a depthwise Conv's"
    dw = [compiler.TensorSpec((1, 8, 6, 6), "float32"), compiler.TensorSpec((8, 1, 3, 3), "float32")]
    assert compiler.HasStrategy("Conv", {"tc_pipeline": 2, "group": 8}, dw) == \
        ("Conv: tc_pipeline 2 (three stages) needs the matrix form (int8, f16 or bf16) without a "
            "residual")
    dw8 = [compiler.TensorSpec((1, 8, 6, 6), "int8"), compiler.TensorSpec((8, 1, 3, 3), "int8"),
           compiler.TensorSpec((8,), "int32"), compiler.TensorSpec((8,), "float32")]
    assert compiler.HasStrategy("Conv", {"tc_pipeline": 2, "group": 8, "tc_precision": "int8", "tc_x_scale": 0.1},
                                dw8) == ""


@pytest.mark.parametrize("xs,ws,attrs,x_int8,act,y_int8", [
    # a stem: f32 X quantised on load, 3x3/2, no padding (SqueezeNet's)
    ((1, 3, 33, 33), (64, 3, 3, 3), {"strides": [2, 2]}, False, "Relu", True),
    # a stem with padding rows and columns (MobileNetV2's), Clip, the f32 result
    ((1, 3, 32, 32), (32, 3, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, False, "Clip", False),
    # ResNet's 7x7/2 stem window, K = 147
    ((1, 3, 40, 40), (64, 3, 7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}, False, "Relu", True),
    # a 1x3 window, padded left and right only
    ((1, 8, 20, 20), (16, 8, 1, 3), {"pads": [0, 1, 0, 1]}, False, "Relu", True),
    # an int8 X padded with its zero point, several row items (SqueezeNet's expand 3x3)
    ((1, 16, 27, 27), (64, 16, 3, 3), {"pads": [1, 1, 1, 1]}, True, "Relu", True),
    # uneven pads, dilation, an odd output
    ((1, 8, 19, 21), (24, 8, 3, 3), {"pads": [0, 2, 2, 1], "dilations": [2, 1]}, True, "", True),
    # a 1x1 stride 2 over an odd map (its rows do not split evenly by the stride)
    ((1, 32, 15, 15), (48, 32, 1, 1), {"strides": [2, 2]}, True, "Relu", True),
    # 1-D (wav2vec2's feature encoder)
    ((1, 32, 101), (32, 32, 3), {"strides": [2]}, True, "", False),
    # the weights copied into L2 once, by a share of each core, the items' blocks read there
    ((1, 16, 20, 20), (96, 16, 3, 3), {"pads": [1, 1, 1, 1], "tc_stage_weights": 1}, True, "Relu", True),
    # two images, each item's rows from its own
    ((2, 8, 14, 14), (32, 8, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}, False, "Relu", True),
    # a wide stem (items of whole rows beyond 512 positions), padded, its first patches early
    ((1, 3, 180, 180), (16, 3, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}, False, "Relu", True),
])
def test_int8_conv_taps_unfolded_for_the_transposed_plan(xs, ws, attrs, x_int8, act, y_int8, hazard_checked):
    """The transposed plan for a Conv wider than 1x1 (or padded, or strided unevenly): each
    item's patch of input rows (the zero point where the padding is) unfolded tap by tap into
    [positions, K], the epilogue in the matrix engine. Bit for bit the docs' int8 arithmetic,
    computed here from the quantised X, and the plan it replaces; every L1 access ordered."""
    from test_precision import conv_ref

    rng = np.random.default_rng(91)
    one_d = len(xs) == 3
    m = ws[0]
    x = rng.integers(-128, 128, xs).astype(np.int8) if x_int8 else (rng.standard_normal(xs) * 3).astype(np.float32)
    wq = rng.integers(-127, 128, ws).astype(np.int8)
    bq = rng.integers(-3000, 3000, m).astype(np.int32)
    w_scale = (rng.random(m) * 0.002 + 0.0005).astype(np.float32)
    sx, zx, sy, zy = 0.05, -3, 0.25, 4
    base = {"tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": zx, **attrs, **fused_activation_attrs(act)}
    conv_attrs = {k: v for k, v in attrs.items() if not k.startswith("tc_")}
    if y_int8:
        base.update(tc_y_scale=sy, tc_y_zero_point=zy)
    # the reference: X quantised as on load, padded with the zero point, the int64 sums
    f = np.float32
    xq = x.astype(np.int64) if x_int8 else np.clip(np.rint((x * f(1.0 / np.float64(f(sx)))).astype(f) + f(zx)),
                                                    -128, 127).astype(np.int64)
    x4, w4 = (xq[:, :, None, :], wq[:, :, None, :]) if one_d else (xq, wq)
    pads = conv_attrs.get("pads", [0] * (2 if one_d else 4))
    pt, pl, pb, pr = (0, pads[0], 0, pads[1]) if one_d else pads
    xp = np.pad(x4, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=zx)
    dil = conv_attrs.get("dilations", [1, 1])
    strides = conv_attrs.get("strides", [1, 1])
    if one_d:
        dil, strides = [1, dil[0]], [1, strides[0]]
    # (conv_ref takes one stride and dilation: the rows' here by taking every sh-th row of its output)
    acc = conv_ref(xp, w4.astype(np.int64), stride=1, dilation=1) if dil == [1, 1] else None
    if acc is None:  # dilated rows: the taps by hand
        kh, kw = w4.shape[2:]
        oh = xp.shape[2] - dil[0] * (kh - 1)
        ow = xp.shape[3] - dil[1] * (kw - 1)
        acc = sum(np.einsum("nchw,mc->nmhw", xp[:, :, i * dil[0]:i * dil[0] + oh, j * dil[1]:j * dil[1] + ow],
                            w4[:, :, i, j].astype(np.int64)) for i in range(kh) for j in range(kw))
    acc = acc[:, :, ::strides[0], ::strides[1]] + bq.reshape(1, -1, 1, 1)
    y = fused_activation_ref(acc.astype(f) * (w_scale * f(sx)).reshape(1, -1, 1, 1), act)
    want = np.clip(np.rint(y * f(1.0 / sy) + f(zy)), -128, 127).astype(np.int8) if y_int8 else y
    if one_d:
        want = want[:, :, 0, :]
    ins, out = [x, wq, bq, w_scale], np.zeros(want.shape, want.dtype)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    text = str(compiler.LowerOp("Conv", dict(base, tc_transposed=1), specs,
                                [compiler.TensorSpec(out.shape, str(out.dtype))], "npu -cores=4"))
    assert "XT0" in text and "Col" not in text  # unfolded into the transposed tile, not a column matrix
    assert "Wsh" in text or "tc_stage_weights" not in attrs  # (then the weights in L2)
    got = run_lowered("Conv", dict(base, tc_transposed=1), ins, [out])[0]
    np.testing.assert_array_equal(got, want)
    implicit = {k: v for k, v in base.items() if k != "tc_stage_weights"}
    np.testing.assert_array_equal(got, run_lowered("Conv", dict(implicit, tc_transposed=0), ins,
                                                   [np.zeros_like(out)])[0])
    assert hazard_checked() == []


def test_int8_grouped_conv_keeps_every_channels_scales_and_bias_in_l1(hazard_checked):
    """A grouped int8 Conv of many small items (RegNetY's 3x3 over groups of 8 channels at
    7 x 7: an item a group): every channel's scales and int32 bias are loaded into L1 once a
    core and each item copies its own from there, not from the DDR, whose latency each item
    paid twice. Bit for bit the docs' int8 arithmetic, computed here; every L1 access
    ordered. A Conv of few items (a squeeze-excite's 48 -> 1152 at 1 x 1) loads them per item."""
    import tilecore.ir

    c, hw, cg = 128, 7, 8
    x, wq, bq, w_scale, _, _ = int8_conv_operands((1, c, hw, hw), True, (c, cg, 3, 3), (1, c, hw, hw))
    sx, zx, sy, zy = 0.05, -3, 0.25, 4
    attrs = {"group": c // cg, "pads": [1, 1, 1, 1], "tc_precision": "int8", "tc_x_scale": sx,
             "tc_x_zero_point": zx, "tc_y_scale": sy, "tc_y_zero_point": zy, "tc_activation": "Relu",
             "tc_transposed": 0}
    ins, out = [x, wq, bq, w_scale], np.zeros((1, c, hw, hw), np.int8)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in ins]
    text = tilecore.ir.script(compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec(out.shape, "int8")],
                                               "npu -cores=4"))
    assert re.search(r"tile\.dma_prefetch\(Spar\[0:128\]", text) and re.search(r"tile\.dma_copy\(Bpar\[0:128\]", text)
    got = run_lowered("Conv", attrs, ins, [out])[0]
    f = np.float32
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=zx)
    acc = np.zeros((c, hw, hw), np.int64)
    for m in range(c):
        g0 = m // cg * cg
        for i in range(3):
            for j in range(3):
                acc[m] += np.einsum("chw,c->hw", xp[0, g0:g0 + cg, i:i + hw, j:j + hw], wq[m, :, i, j].astype(np.int64))
    y = np.maximum((acc + bq.reshape(-1, 1, 1)).astype(f) * (w_scale * f(sx)).reshape(-1, 1, 1), f(0))
    np.testing.assert_array_equal(got[0], np.clip(np.rint(y * f(1.0 / sy) + f(zy)), -128, 127).astype(np.int8))
    assert hazard_checked() == []
    few = [compiler.TensorSpec((1, 48, 1, 1), "int8"), compiler.TensorSpec((1152, 48, 1, 1), "int8"),
           compiler.TensorSpec((1152,), "int32"), compiler.TensorSpec((1152,), "float32")]
    text = tilecore.ir.script(compiler.LowerOp("Conv", {k: v for k, v in attrs.items() if k not in ("group", "pads")},
                                               few, [compiler.TensorSpec((1, 1152, 1, 1), "int8")], "npu -cores=4"))
    assert "Spar" not in text


def test_int8_transposed_border_items_load_their_rows_in_the_image_as_one_block():
    """A padded stem in the transposed plan (MobileNetV2's 3x3/2, pads 1, at 32 x 32: items of
    8 output rows, a patch of 17 input rows): the first item's rows inside the image, 0 to 15,
    are one DMA into patch rows 1 to 16 (its row 0 is the padding), not a DMA a row, each of
    which paid the DDR's latency (numerics: the stem case of the test above)."""
    import tilecore.ir

    specs = [compiler.TensorSpec((1, 3, 32, 32), "float32"), compiler.TensorSpec((32, 3, 3, 3), "int8"),
             compiler.TensorSpec((32,), "int32"), compiler.TensorSpec((32,), "float32")]
    attrs = {"tc_precision": "int8", "tc_x_scale": 0.05, "tc_x_zero_point": -3, "strides": [2, 2],
             "pads": [1, 1, 1, 1], "tc_transposed": 1}
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((1, 32, 16, 16), "float32")], "npu -cores=4")
    text = tilecore.ir.script(f)
    assert str(f.attrs["plan"]).startswith("conv.transposed tp=128 ")  # items of 8 rows of 16
    assert re.search(r"tile\.dma_copy\(Patch\w*\[0:3, 1:17, 1:33\], X4\[[^\]]*, 0:3, 0:16, 0:32\]", text)


def test_int8_wide_stem_loads_its_first_patches_before_its_constants_wait():
    """A stem is bound by the DDR reading its f32 image. Its items are 6 output rows of a
    wide map (MobileNets' 3x3/2 at 224: 672 positions; 512 re-read an input row in 9), each
    core's first two patches are loaded before it waits for the bias, scales and weights
    (on the DMA-out engine, their own event: a stem's first mm started 800 cycles late), and
    a border item fills only its padding row, not its whole patch (which held the DMA-in
    engine for 550 cycles). Numerics: the wide
    stem of the test above."""
    import tilecore.ir

    specs = [compiler.TensorSpec((1, 3, 224, 224), "float32"), compiler.TensorSpec((16, 3, 3, 3), "int8"),
             compiler.TensorSpec((16,), "int32"), compiler.TensorSpec((16,), "float32")]
    attrs = {"tc_precision": "int8", "tc_x_scale": 0.05, "tc_x_zero_point": 0, "strides": [2, 2],
             "pads": [1, 1, 1, 1], "tc_y_scale": 0.1, "tc_transposed": 1}
    f = compiler.LowerOp("Conv", attrs, specs, [compiler.TensorSpec((1, 16, 112, 112), "int8")], "npu -cores=4")
    text = tilecore.ir.script(f)
    tp = int(re.match(r"conv\.transposed tp=(\d+) ", str(f.attrs["plan"])).group(1))
    assert tp > 512 and tp % 112 == 0, tp
    first_patch, constants_wait = text.find("tile.dma_copy(Patch"), text.find("tile.wait(4)")
    assert 0 <= first_patch < constants_wait, (first_patch, constants_wait)
    assert re.search(r"tile\.dma_prefetch\(Ball\[0:1, 0:16\]", text[:first_patch])
    assert re.search(r"tile\.dma_copy\(Patch_1", text[:constants_wait])  # (the second slot's too)
    # the top item: its padding row filled (then its rows in the image); the whole patch
    # only before the row by row fallback (more border items than the chain of tests takes)
    lines = text[:constants_wait].splitlines()
    assert any(re.search(r"tile\.dma_fill\(Patch\[0:3, 0:1, 1:225\]", x) for x in lines)
    rows = 2 * tp // 112 + 1
    for i, x in enumerate(lines):
        if re.search(rf"tile\.dma_fill\(Patch\w*\[0:3, 0:{rows}, 0:225\]", x):
            assert lines[i - 1].strip() == "else:" and "for rr" in lines[i + 1], lines[i - 1:i + 2]


def test_int8_transposed_channel_blocks_of_a_share_when_32_leaves_a_remainder(hazard_checked):
    """SqueezeNet's classifier (1x1, 512 -> 1000 channels at 13 x 13) in the transposed plan
    (the cost model's pick when its weights are in L2): blocks of 32, 64 or 128 channels
    leave a narrower last block, which one core runs after its other items; blocks of 125
    (the cores' share, twice) give every core two items of the same size. The matrix engines
    each run two such items, counted by hand from TC1's int8 block and epilogue rates; the
    output bit for bit the int8 arithmetic."""
    from tilecore.arch import params

    rng = np.random.default_rng(29)
    m, c, hw = 1000, 512, 13
    x = rng.integers(-128, 128, (1, c, hw, hw)).astype(np.int8)
    wq = rng.integers(-127, 128, (m, c, 1, 1)).astype(np.int8)
    bq = rng.integers(-3000, 3000, m).astype(np.int32)
    w_scale = (rng.random(m) * 0.002 + 0.0005).astype(np.float32)
    sx, sy, zy = 0.05, 0.2, -128
    attrs = {"tc_precision": "int8", "tc_x_scale": sx, "tc_x_zero_point": -128, "tc_activation": "Relu",
             "tc_y_scale": sy, "tc_y_zero_point": zy, "tc_transposed": 1}
    got = run_lowered("Conv", attrs, [x, wq, bq, w_scale], [np.zeros((1, m, hw, hw), np.int8)])[0]
    busy = [core["mm"]["busy"] for core in runtime.npu_simulator(0).stats()["cores"]]
    p = params()
    up = lambda a, b: -(-a // b)  # noqa: E731
    # an item: its product (positions the rows, 125 channels the columns, all of K) and the
    # epilogue (an element each, and the per-channel scales)
    item = (p["mm_latency"] + up(hw * hw, p["mm_block_i8_m"]) * up(125, p["mm_block_i8_n"]) * up(c, p["mm_block_i8_k"])
            + up(hw * hw * 125, p["mm_epilogue_elems_per_cycle"]) + up(4 * 125, p["mm_epilogue_elems_per_cycle"]))
    assert busy == [2 * item] * 4, (busy, item)
    acc = np.einsum("mc,nchw->nmhw", wq[:, :, 0, 0].astype(np.int64), x.astype(np.int64)) + bq.reshape(1, -1, 1, 1)
    y = np.maximum(acc.astype(np.float32) * (w_scale * np.float32(sx)).reshape(1, -1, 1, 1), np.float32(0))
    want = np.clip(np.rint(y * np.float32(1.0 / sy) + np.float32(zy)), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)
    assert hazard_checked() == []
