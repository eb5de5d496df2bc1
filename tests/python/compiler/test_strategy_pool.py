"""Pooling strategies on 4 simulated TC1 cores against the op library's numpy reference:
MaxPool, AveragePool and LpPool 1-D, 2-D and 3-D with strides, dilations, explicit and automatic
pads, ceil_mode and count_include_pad; the global poolings; a tensor bigger than L1;
the reasons what is left stays on the host."""
import numpy as np
import pytest

from tilecore import compiler, runtime
from strategy_util import check_op as _check, rand, run_lowered
from tilecore.ir import ops


def check_op(op, attrs, inputs, **kw):
    """MaxPool's reference also returns the Indices: the strategy computes Y only."""
    if op == "MaxPool":
        plain = {k: v for k, v in attrs.items() if not k.startswith("tc_")}
        y = ops.get_op(op).reference(ops.get_op(op).fill_attrs(plain), *inputs)[0]
        kw.update(out_shapes=[y.shape], out_dtypes=[y.dtype])
    return _check(op, attrs, inputs, **kw)

CASES = [
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 5, 17, 17)),   # ResNet's stem
    ({"kernel_shape": [2, 2], "strides": [2, 2]}, (2, 3, 8, 10)),
    ({"kernel_shape": [3, 2], "strides": [1, 2], "pads": [0, 1, 2, 0]}, (1, 4, 9, 7)),      # asymmetric
    ({"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, (1, 3, 10, 12)),          # ceil overhang
    ({"kernel_shape": [3, 3], "strides": [2, 1], "pads": [1, 1, 1, 1], "ceil_mode": 1}, (1, 2, 8, 9)),
    ({"kernel_shape": [4, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}, (1, 3, 11, 9)),
    ({"kernel_shape": [3, 4], "auto_pad": "SAME_LOWER"}, (1, 2, 7, 6)),
    ({"kernel_shape": [2, 3], "auto_pad": "VALID", "strides": [3, 2]}, (1, 3, 11, 13)),
    ({"kernel_shape": [5], "strides": [2], "pads": [2, 1]}, (2, 3, 23)),                     # 1-D
    ({"kernel_shape": [3], "strides": [3], "ceil_mode": 1}, (1, 4, 20)),
    ({"kernel_shape": [2, 3, 3], "strides": [2, 1, 2], "pads": [1, 1, 0, 0, 1, 1]}, (1, 3, 5, 7, 8)),   # 3-D
    ({"kernel_shape": [3, 2, 2], "strides": [2, 2, 2], "ceil_mode": 1}, (2, 2, 8, 5, 6)),
]


@pytest.mark.parametrize("attrs,shape", CASES)
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool(op, attrs, shape):
    check_op(op, attrs, [rand(shape, 1)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attrs,shape", [CASES[0], CASES[2], CASES[4], CASES[8], CASES[10], CASES[11]])
def test_average_count_include_pad(attrs, shape):
    check_op("AveragePool", dict(attrs, count_include_pad=1), [rand(shape, 2)], rtol=1e-5, atol=1e-6)


def test_average_and_lp_dilated():
    attrs = {"kernel_shape": [3, 2], "dilations": [2, 3], "pads": [2, 1, 1, 2], "strides": [1, 2], "ceil_mode": 1}
    for include in (0, 1):
        check_op("AveragePool", dict(attrs, count_include_pad=include), [rand((1, 3, 12, 13), 8)], rtol=1e-5, atol=1e-6)
    check_op("LpPool", dict(attrs, p=2), [rand((1, 3, 12, 13), 8)], rtol=1e-5, atol=1e-5)


def test_max_dilated():
    check_op("MaxPool", {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 2, 2, 2]}, [rand((1, 3, 12, 11), 3)])
    check_op("MaxPool", {"kernel_shape": [2], "dilations": [3], "ceil_mode": 1, "strides": [2]}, [rand((1, 2, 16), 3)])


def test_yolo_spp_and_wide_rows():
    # YOLO's SPP: 5x5, stride 1, pad 2; a row wider than one column tile
    check_op("MaxPool", {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]}, [rand((1, 8, 13, 13), 4)])
    check_op("AveragePool", {"kernel_shape": [3], "pads": [1, 1]}, [rand((1, 2, 1500), 4)], rtol=1e-5, atol=1e-6)


def test_bigger_than_l1():
    # 1.6 MiB in: ResNet's max pool on 32 channels of 112 x 112
    check_op("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, [rand((1, 32, 112, 112), 5)])


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 5, 7, 7), (1, 3, 11), (1, 130, 3, 5), (3, 4)])
def test_global(op, shape):
    check_op(op, {}, [rand(shape, 6)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("attrs,shape", [CASES[0], CASES[3], CASES[8]])
def test_lp_pool(p, attrs, shape):
    x = rand(shape, 7)
    x[0, 0, 0] = 0.0   # log(0) on the way to |x|^3
    check_op("LpPool", dict(attrs, p=p), [x], rtol=1e-5 if p < 3 else 2e-5, atol=1e-5)


def test_reasons():
    x = compiler.TensorSpec((1, 3, 8, 8), "float32")
    assert "64-bit" in compiler.HasStrategy("MaxPool", {"kernel_shape": [2, 2]}, [compiler.TensorSpec((1, 3, 8, 8), "float64")])
    assert "storage_order" in compiler.HasStrategy("MaxPool", {"kernel_shape": [2, 2], "storage_order": 1}, [x])
    assert "at least 1" in compiler.HasStrategy("LpPool", {"kernel_shape": [2, 2], "p": 0}, [x])
    assert "no output" in compiler.HasStrategy("MaxPool", {"kernel_shape": [9, 9]}, [x])
    assert "positive" in compiler.HasStrategy("MaxPool", {"kernel_shape": [0, 2]}, [x])
    assert "positive" in compiler.HasStrategy("AveragePool", {"kernel_shape": [2, 2], "pads": [-1, 0, 0, 0]}, [x])
    assert "wrong length" in compiler.HasStrategy("MaxPool", {}, [x])
    assert "wrong length" in compiler.HasStrategy("MaxPool", {"kernel_shape": [2, 2], "strides": [1]}, [x])
    assert "rank" in compiler.HasStrategy("MaxPool", {"kernel_shape": [2, 2, 2, 2]},
                                          [compiler.TensorSpec((1, 1, 4, 4, 4, 4), "float32")])
    # the Indices output is int64: refused when the op is lowered with it
    with pytest.raises(ValueError, match="64-bit"):
        compiler.LowerOp("MaxPool", {"kernel_shape": [2, 2]}, [x],
                         [compiler.TensorSpec((1, 3, 7, 7), "float32"), compiler.TensorSpec((1, 3, 7, 7), "int64")])


def test_int8_max_pool_in_int8_tiles(hazard_checked):
    """An int8 MaxPool (between int8 Convs) keeps int8 tiles: the same bits as numpy's max
    over the padded windows, its asynchronous stores ordered (the simulator's hazard mode)."""
    x = np.random.default_rng(5).integers(-128, 128, (1, 64, 112, 112)).astype(np.int8)
    out = run_lowered("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, [x],
                      [np.zeros((1, 64, 56, 56), np.int8)])[0]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-128)
    ref = np.max([xp[:, :, i:i + 112:2, j:j + 112:2] for i in range(3) for j in range(3)], axis=0)
    np.testing.assert_array_equal(out, ref)
    assert hazard_checked() == []


@pytest.mark.parametrize("x,attrs", [
    # an Inception block's pooling branch in int8 (rows of 14 bytes), two batches of the
    # same at 7 x 7 with an even window, f32 rows of 7 floats averaged with the padding counted
    (np.random.default_rng(6).integers(-128, 128, (1, 512, 14, 14)).astype(np.int8),
     {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    (np.random.default_rng(7).integers(-128, 128, (2, 96, 7, 7)).astype(np.int8),
     {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    (rand((1, 40, 7, 7), 8), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
])
def test_small_maps_load_whole_maps_in_one_run(x, attrs, hazard_checked):
    """Rows shorter than a DMA beat (64 bytes) go through a buffer of their own into the
    patch, in tiles of whole maps: a tile's load and store are each one DMA of one run, not
    a beat per row; at least two tiles a core. Numpy's max (int8: bit for bit) or the op
    library's average; every L1 access ordered."""
    op = "MaxPool" if x.dtype == np.int8 else "AveragePool"
    schema = ops.get_op(op)
    ref = schema.reference(schema.fill_attrs(dict(attrs)), x)
    ref = ref[0] if isinstance(ref, (tuple, list)) else ref
    out = run_lowered(op, attrs, [x], [np.zeros(ref.shape, x.dtype)])[0]
    if x.dtype == np.int8:
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    st = runtime.npu_simulator(0).stats()
    tiles = [c["dout"]["commands"] for c in st["cores"]]  # a store a tile
    assert min(tiles) >= 2 and max(tiles) - min(tiles) <= 1, tiles
    # a tile: its load, and the fills of the padding rows above and below; the patches' fills
    # (two when the cost model pipelines the items)
    assert all(c["din"]["commands"] <= 3 * t + 2 for c, t in zip(st["cores"], tiles))
    assert hazard_checked() == []


@pytest.mark.parametrize("op,extra", [("MaxPool", {}), ("AveragePool", {}), ("AveragePool", {"count_include_pad": 1})])
def test_patch_filled_once_per_core(op, extra, hazard_checked):
    """Many row tiles a core, padded at the top and at the left: the patch's padding is
    filled once, and the second image's top tile fills its padding row again after the
    first image's tiles wrote there; the op library's reference, every L1 access ordered."""
    attrs = dict({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, **extra)
    x = rand((2, 16, 112, 112), 9) - 0.5
    check_op(op, attrs, [x], rtol=1e-5, atol=1e-6)
    assert hazard_checked() == []


@pytest.mark.parametrize("attrs,shape", CASES)
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_pipelined(op, attrs, shape, hazard_checked):
    """Each core's items pipelined (tc_pool_pipeline 1: two patches, the loads of one item
    while the taps of the one before run): the op library's reference, every L1 access
    ordered."""
    check_op(op, dict(attrs, tc_pool_pipeline=1), [rand(shape, 1)], rtol=1e-5, atol=1e-6)
    assert hazard_checked() == []


@pytest.mark.parametrize("x,attrs", [
    # GoogLeNet's pooling branches in int8 (rows of 14 and 28 bytes: staged, one stage buffer a
    # slot) and its stem pool's rows of 112, a padded f32 average over rows of 7 floats
    (np.random.default_rng(10).integers(-128, 128, (1, 512, 14, 14)).astype(np.int8),
     {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    (np.random.default_rng(11).integers(-128, 128, (1, 192, 28, 28)).astype(np.int8),
     {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    (np.random.default_rng(12).integers(-128, 128, (1, 64, 112, 112)).astype(np.int8),
     {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    (rand((2, 40, 7, 7), 13), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
])
@pytest.mark.parametrize("pipeline", [0, 1])
def test_pipelined_pool_is_the_plain_one(x, attrs, pipeline, hazard_checked):
    """The pipelined plan (a 3 x 3 max of stride 1: separable, each row's max over the
    window's columns, then their max over its rows) computes what the plain one does, bit
    for bit, against numpy's max (int8) or the op library's average."""
    op = "MaxPool" if x.dtype == np.int8 else "AveragePool"
    schema = ops.get_op(op)
    ref = schema.reference(schema.fill_attrs(dict(attrs)), x)
    ref = ref[0] if isinstance(ref, (tuple, list)) else ref
    out = run_lowered(op, dict(attrs, tc_pool_pipeline=pipeline), [x], [np.zeros(ref.shape, x.dtype)])[0]
    if x.dtype == np.int8:
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert hazard_checked() == []
