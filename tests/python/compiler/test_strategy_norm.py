"""Normalisation strategies on 4 simulated TC1 cores against the op library's numpy
reference: LayerNormalization (axes, with and without B, the Mean and InvStdDev
outputs), InstanceNormalization, BatchNormalization in inference mode; rows too long
for one tile, a tensor bigger than L1, and the reasons what is left stays on the host."""
import numpy as np
import pytest

import tilecore
from tilecore import compiler
from strategy_util import check_op, rand, run_lowered, run_op


@pytest.mark.parametrize("shape,axis", [((5, 33), -1), ((2, 7, 24), -1), ((3, 4, 5, 6), 2), ((2, 3, 5), -3)])
def test_layer_norm(shape, axis):
    x = rand(shape, 1, -3, 3) + 1.5
    norm = shape[axis:] if axis >= 0 else shape[len(shape) + axis:]
    g, b = rand(norm, 2, 0.5, 1.5), rand(norm, 3, -0.5, 0.5)
    check_op("LayerNormalization", {"axis": axis, "epsilon": 1e-5}, [x, g, b], rtol=1e-4, atol=1e-5)


def test_layer_norm_without_bias_and_stats():
    x, g = rand((6, 40), 4), rand((40,), 5, 0.5, 1.5)
    check_op("LayerNormalization", {"epsilon": 1e-3}, [x, g], rtol=1e-4, atol=1e-5)


def test_layer_norm_long_rows():
    # rows of 20000: three passes over chunks with a remainder
    x = rand((2, 20000), 6, -2, 4)
    check_op("LayerNormalization", {}, [x, rand((20000,), 7, 0.5, 1.5), rand((20000,), 8)], rtol=1e-4, atol=1e-4)


def test_layer_norm_bert_bigger_than_l1():
    # BERT-base hidden states of 384 tokens: 1.5 MiB
    x = rand((1, 384, 768), 9, -2, 2)
    check_op("LayerNormalization", {"epsilon": 1e-12}, [x, rand((768,), 10, 0.8, 1.2), rand((768,), 11)],
             rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 5, 33), (3, 2, 20000)])
def test_instance_norm(shape):
    c = shape[1]
    check_op("InstanceNormalization", {"epsilon": 1e-5}, [rand(shape, 12, -1, 3), rand((c,), 13, 0.5, 1.5),
                                                          rand((c,), 14)], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 6, 17), (4, 10), (1, 3, 130, 130)])
def test_batch_norm(shape):
    c = shape[1]
    args = [rand(shape, 15), rand((c,), 16, 0.5, 1.5), rand((c,), 17), rand((c,), 18), rand((c,), 19, 0.1, 2)]
    check_op("BatchNormalization", {"epsilon": 1e-5}, args, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,act", [
    ((1, 928, 14, 14), "Relu"),  # DenseNet-121's norm1 of denselayer22: one image, tiles of its channels
    ((2, 96, 7, 7), ""),         # two images in tiles that divide the channels: each tile one image's
    ((2, 3, 5, 7), "Relu"),      # tiles across images: the per-row gather
])
def test_batch_norm_tile_of_own_channels(shape, act, hazard_checked):
    """A tile of consecutive channels of one image loads those channels' four parameters
    beside it (no scalar gather, no per-tile pass over every channel); every form does the
    same f32 steps: k = scale / sqrt(var + eps), b = B - mean * k, y = x * k + b."""
    import tilecore.ir

    c = shape[1]
    args = [rand(shape, 25, -3, 3), rand((c,), 26, 0.5, 1.5), rand((c,), 27), rand((c,), 28), rand((c,), 29, 0.1, 2)]
    attrs = {"epsilon": 1e-5, **({"tc_activation": act} if act else {})}
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in args]
    text = tilecore.ir.script(compiler.LowerOp("BatchNormalization", attrs, specs,
                                               [compiler.TensorSpec(shape, "float32")], "npu -cores=4"))
    tiles_cross_images = shape[0] > 1 and shape[1] % 2 == 1
    assert ("Kv[" in text) == tiles_cross_images  # the gather of the per-row k
    got = run_lowered("BatchNormalization", attrs, args, [np.zeros(shape, np.float32)])[0]
    x, scale, b, mean, var = args
    f = np.float32
    k = scale / np.sqrt(var + f(1e-5))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    y = x * k.reshape(bshape) + (b - mean * k).reshape(bshape)
    np.testing.assert_array_equal(got, np.maximum(y, f(0)) if act else y)
    assert hazard_checked() == []


def test_batch_norm_in_a_dense_block_matches_onnx_runtime():
    """A DenseNet layer and the BatchNormalization after its Concat, in one layer group
    (the parameters' loads handed to the member before, or prefetched into L2): the tiles
    of channels read the right parameters (f32, against ONNX Runtime)."""
    from onnx import helper
    from test_driver import make_model, ort_run

    rng = np.random.default_rng(3)
    f = np.float32
    nodes, inits = [], []

    def bn(name, x, y, c):
        nodes.append(helper.make_node("BatchNormalization", [x] + [f"{name}_{p}" for p in "sbmv"], [y]))
        inits.extend([(f"{name}_s", (rng.random(c) + 0.5).astype(f)), (f"{name}_b", (rng.standard_normal(c) * 0.2).astype(f)),
                      (f"{name}_m", (rng.standard_normal(c) * 0.1).astype(f)), (f"{name}_v", (rng.random(c) + 0.5).astype(f))])

    bn("n1", "x", "b1", 64)
    nodes += [helper.make_node("Relu", ["b1"], ["r1"]), helper.make_node("Conv", ["r1", "w1"], ["c1"])]
    bn("n2", "c1", "b2", 128)
    nodes += [helper.make_node("Relu", ["b2"], ["r2"]), helper.make_node("Conv", ["r2", "w2"], ["c2"], pads=[1, 1, 1, 1]),
              helper.make_node("Concat", ["x", "c2"], ["cat"], axis=1)]
    bn("n3", "cat", "b3", 96)
    nodes += [helper.make_node("Relu", ["b3"], ["r3"]), helper.make_node("Conv", ["r3", "w3"], ["y"])]
    inits += [("w1", (rng.standard_normal((128, 64, 1, 1)) * 0.1).astype(f)),
              ("w2", (rng.standard_normal((32, 128, 3, 3)) * 0.05).astype(f)),
              ("w3", (rng.standard_normal((128, 96, 1, 1)) * 0.1).astype(f))]
    model = make_model(nodes, [("x", [1, 64, 56, 56], f)], ["y"], inits)
    x = np.abs(rng.standard_normal((1, 64, 56, 56))).astype(f)
    report = {}
    y = tilecore.compile(model, report=report).run({"x": x})["y"].ravel().astype(np.float64)
    want = ort_run(model, {"x": x})["y"].ravel().astype(np.float64)
    assert y @ want / np.linalg.norm(y) / np.linalg.norm(want) > 0.99999
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_reasons():
    x = compiler.TensorSpec((2, 3, 4), "float32")
    c = compiler.TensorSpec((3,), "float32")
    four = compiler.TensorSpec((4,), "float32")
    assert compiler.HasStrategy("LayerNormalization", {}, [x, four]) == ""
    assert "broadcast" in compiler.HasStrategy("LayerNormalization", {}, [x, compiler.TensorSpec((1,), "float32")])
    assert "axis" in compiler.HasStrategy("LayerNormalization", {"axis": 3}, [x, four])
    assert "stash_type" in compiler.HasStrategy("LayerNormalization", {"stash_type": 11}, [x, four])
    assert "training" in compiler.HasStrategy("BatchNormalization", {"training_mode": 1}, [x, c, c, c, c])
    assert "per channel" in compiler.HasStrategy("InstanceNormalization", {}, [x, four, four])
    assert "64-bit" in compiler.HasStrategy("InstanceNormalization", {}, [compiler.TensorSpec((2, 3, 4), "float64"), c, c])


@pytest.mark.parametrize("shape,axis", [((5, 33), -1), ((2, 3, 20000), 2), ((2, 3, 4), 1)])
def test_rms_norm(shape, axis):
    x = rand(shape, 20, -2, 2)
    g = rand(shape[axis:] if axis >= 0 else shape[len(shape) + axis:], 21, 0.5, 1.5)
    check_op("RMSNormalization", {"axis": axis, "epsilon": 1e-6}, [x, g], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,groups,opset", [
    ((2, 6, 5, 7), 3, 21),         # per-channel scale and bias
    ((1, 8, 33), 2, 18),           # per-group scale and bias (before opset 21)
    ((1, 4, 100, 100), 2, 21),     # a group of 20000: chunks of whole channels
])
def test_group_norm(shape, groups, opset):
    c = shape[1]
    n = c if opset >= 21 else groups
    args = [rand(shape, 22, -1, 3), rand((n,), 23, 0.5, 1.5), rand((n,), 24)]
    check_op("GroupNormalization", {"num_groups": groups, "epsilon": 1e-5, "_opset": opset}, args, rtol=1e-4,
             atol=1e-4)
    assert "split" in compiler.HasStrategy("GroupNormalization", {"num_groups": 5},
                                           [compiler.TensorSpec(shape, "float32")] + [compiler.TensorSpec((n,), "float32")] * 2)


@pytest.mark.parametrize("shape,axes", [((1, 3, 5, 7), [0, 2, 3]), ((4, 6, 33), [2]), ((2, 20000), [-1])])
def test_mean_variance_normalization(shape, axes):
    check_op("MeanVarianceNormalization", {"axes": axes}, [rand(shape, 25, -1, 3)], rtol=1e-4, atol=1e-4)
    assert "trailing" in compiler.HasStrategy("MeanVarianceNormalization", {"axes": [0, 2, 3]},
                                              [compiler.TensorSpec((2, 3, 4, 5), "float32")])


@pytest.mark.parametrize("op,shape,bias", [("LayerNormalization", (128, 256), True), ("LayerNormalization", (2, 96, 160), False),
                                           ("RMSNormalization", (192, 128), False),
                                           ("LayerNormalization", (20, 2048), True)])  # 10 tiles: 2 or 3 a core
def test_row_norm_pipelined(op, shape, bias, hazard_checked):
    """Y alone, rows enough for several tiles per core: the tiles are software-pipelined (load
    of tile i + 1, vector passes of tile i, store of tile i - 1), so the engines overlap and
    the op runs within 20% of the time its DDR bytes take at 64 B/cycle (one tile per core,
    load then compute then store, took 1.39 times that)."""
    x = rand(shape, 30, -2, 3) + 0.5
    ins = [x, rand(shape[-1:], 31, 0.5, 1.5)] + ([rand(shape[-1:], 32)] if bias else [])
    attrs = {"epsilon": 1e-5}
    check_op(op, attrs, ins, rtol=1e-4, atol=1e-5, out_shapes=[shape], out_dtypes=[np.float32])
    _, _, st = run_op(op, attrs, ins, out_shapes=[shape], out_dtypes=[np.float32])
    ddr_cycles = (st["bytes"]["ddr_read"] + st["bytes"]["ddr_written"]) / 64
    assert st["cycles"] < 1.2 * ddr_cycles
    assert hazard_checked() == []  # the slots' loads, passes and stores ordered


def test_layer_norm_skip_pipelined(hazard_checked):
    """tc_skip in the pipelined form: LayerNormalization of X + S against numpy."""
    x, s = rand((64, 128), 33), rand((64, 128), 34)
    g, b = rand((128,), 35, 0.5, 1.5), rand((128,), 36)
    y = run_lowered("LayerNormalization", {"epsilon": 1e-5, "tc_skip": 1}, [x, g, b, s],
                    [np.zeros((64, 128), np.float32)])[0]
    h = (x + s).astype(np.float64)
    ref = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    assert hazard_checked() == []


def test_few_rows_take_fewer_longer_tiles(hazard_checked):
    """A vision transformer's 65 rows of 128: the cost model ranks tiles of 5, 13 rows (a
    divisor of 65 near four, two or one tile a core); thirteen tiles of 5 rows paid twelve
    vector commands' fill each, 156 in all. Any choice computes each row alike, against
    numpy here."""
    x = rand((1, 65, 128), 37, -2, 3)
    g, b = rand((128,), 38, 0.5, 1.5), rand((128,), 39)
    attrs = {"epsilon": 1e-12, "axis": -1}
    outs, _, st = run_op("LayerNormalization", attrs, [x, g, b], out_shapes=[x.shape], out_dtypes=[np.float32])
    h = x.astype(np.float64)
    ref = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-12) * g + b
    np.testing.assert_allclose(outs[0], ref, rtol=1e-4, atol=1e-4)
    vec = sum(c["vec"]["commands"] for c in st["cores"])
    assert vec <= 5 * 14, vec  # five tiles of 13 rows, a dozen passes each (not 13 x 12)
    assert hazard_checked() == []
