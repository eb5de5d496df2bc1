"""Reduce* strategies on 4 simulated TC1 cores against the op library's numpy reference:
axes as attribute (opset 13) and as input (opset 18), keepdims, negative axes, inner
axes (strided folds), noop_with_empty_axes, int32, rows too long for one tile, and the
reasons axes the shapes cannot tell stay on the host."""
import numpy as np
import pytest

from tilecore import compiler, runtime
from strategy_util import check_op, rand, run_op

OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
       "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"]


def data(op, shape, seed=1):
    if op == "ReduceLogSum":
        return rand(shape, seed, 0.1, 2.0)
    if op == "ReduceProd":
        return rand(shape, seed, 0.7, 1.3)
    return rand(shape, seed, -3, 3)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,axes,keep", [
    ((5, 33), [-1], 1),          # odd rows, negative axis
    ((3, 17, 6), [1], 0),        # an inner axis: a strided fold
    ((2, 3, 5, 7), [1, 2], 1),   # two adjacent axes
])
def test_axes_input(op, shape, axes, keep):
    check_op(op, {"keepdims": keep}, [data(op, shape), np.array(axes, np.int64)], rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMin", "ReduceLogSumExp"])
@pytest.mark.parametrize("shape,axes", [
    ((4, 5, 6), [0, 2]),             # two separate groups: an outer loop over the first
    ((3, 4, 5, 2, 7), [1, 3]),
    ((2, 3, 2, 20000), [1, 3]),      # the inner group in chunks
])
def test_two_groups_of_axes(op, shape, axes):
    # sums of up to 120000 terms: f32 rounding in another order than numpy's
    check_op(op, {"keepdims": 1}, [data(op, shape), np.array(axes, np.int64)], rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceL1", "ReduceL2", "ReduceMean"])
def test_long_outer_group_folds_first(op):
    # axes 1 and 3 of (3, 3000, 5, 2): the long outer group is folded in tiles, then the inner
    check_op(op, {"keepdims": 0}, [data(op, (3, 3000, 5, 2)), np.array([1, 3], np.int64)], rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("op,value", [("ReduceSum", 0.0), ("ReduceMax", -np.inf), ("ReduceProd", 1.0),
                                      ("ReduceLogSumExp", -np.inf)])
def test_empty_reduction(op, value):
    x = np.zeros((3, 0, 4), np.float32)
    outs, refs, _ = run_op(op, {"keepdims": 1}, [x, np.array([1], np.int64)])
    assert outs[0].shape == (3, 1, 4) and np.all(outs[0] == value) and np.all(refs[0] == value)


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"])
def test_axes_attribute_and_all(op):
    x = data(op, (4, 9, 5))
    check_op(op, {"axes": [0], "keepdims": 0, "_opset": 13}, [x], rtol=2e-5, atol=1e-5)
    check_op(op, {"keepdims": 0}, [x], rtol=2e-5, atol=1e-5)        # no axes: everything


def test_size_one_dims_and_noop():
    check_op("ReduceMean", {"keepdims": 1}, [rand((1, 6, 1, 4), 2), np.array([1, 2], np.int64)], rtol=1e-5)
    check_op("ReduceSum", {"noop_with_empty_axes": 1}, [rand((3, 4), 3)])


def test_int32():
    x = rand((6, 35), 4, -100, 100, np.int32)
    for op in ("ReduceMax", "ReduceMin", "ReduceSum"):
        check_op(op, {"keepdims": 0}, [x, np.array([1], np.int64)])


def test_long_rows_in_chunks():
    # 40000 elements per row: chunks with a remainder; LogSumExp makes two passes
    for op in ("ReduceMean", "ReduceLogSumExp"):
        check_op(op, {"keepdims": 1}, [rand((2, 40000), 5, -4, 4), np.array([1], np.int64)], rtol=1e-4, atol=1e-5)


def test_bigger_than_l1():
    # 1.5 MiB in: mean over the spatial axes of an NCHW tensor, as GlobalAveragePool
    check_op("ReduceMean", {"keepdims": 1}, [rand((1, 96, 64, 64), 6), np.array([2, 3], np.int64)], rtol=1e-5,
             atol=1e-6)


def test_reasons():
    f = compiler.TensorSpec((4, 5, 6), "float32")
    five = compiler.TensorSpec((2, 3, 4, 5, 6), "float32")
    assert "more than two" in compiler.HasStrategy("ReduceSum", {"axes": [0, 2, 4]}, [five])
    assert "range" in compiler.HasStrategy("ReduceMax", {"axes": [3]}, [f])
    assert "float32" in compiler.HasStrategy("ReduceMean", {}, [compiler.TensorSpec((4,), "int32")])
    # an axes input whose value the shapes cannot tell: refused, naming the way out (the attribute)
    sq = compiler.TensorSpec((3, 3), "float32")
    ax = compiler.TensorSpec((1,), "int64")
    assert "ambiguous" in compiler.HasStrategy("ReduceSum", {"keepdims": 0}, [sq, ax])
    assert compiler.HasStrategy("ReduceSum", {"keepdims": 1}, [sq, ax]) == ""
    assert compiler.HasStrategy("ReduceSum", {"keepdims": 0, "axes": [1]}, [sq, ax]) == ""
    assert "more than two" in compiler.HasStrategy("ReduceSum", {}, [five, compiler.TensorSpec((3,), "int64")])
    with pytest.raises(ValueError, match="ambiguous"):
        compiler.LowerOp("ReduceSum", {"keepdims": 0}, [sq, ax], [compiler.TensorSpec((3,), "float32")])
    with pytest.raises(ValueError, match="does not follow"):
        compiler.LowerOp("ReduceSum", {"keepdims": 1}, [f, ax], [compiler.TensorSpec((4, 2, 6), "float32")])


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceLogSum"])
@pytest.mark.parametrize("shape,axes", [
    ((1, 2048, 7, 7), [2, 3]),     # ResNet-50's global pool: tiles of a quarter of a core's rows
    ((2, 37, 5, 9), [2, 3]),       # fewer rows than four tiles a core, the last tile shorter
    ((3, 40, 6), [1]),             # an inner axis (a strided fold), several column tiles
])
def test_pipelined_fold_is_the_plain_one(op, shape, axes, hazard_checked):
    """The pipelined plan of rows that fit a tile (two slots: the load of one tile while the
    one before is folded and stored) gives the plain plan's bits, and the op library's
    values; every L1 access ordered."""
    x = data(op, shape, 4)
    outs = {}
    for pipeline in (0, 1):
        attrs = {"axes": axes, "keepdims": 1, "_opset": 11, "tc_reduce_pipeline": pipeline}
        got, ref, _ = run_op(op, attrs, [x])
        np.testing.assert_allclose(got[0], ref[0], rtol=2e-5, atol=1e-5)
        outs[pipeline] = got[0]
        f = compiler.LowerOp(op, attrs, [compiler.TensorSpec(x.shape, x.dtype)],
                             [compiler.TensorSpec(ref[0].shape, ref[0].dtype)])
        assert ('Xt1' in str(f)) == bool(pipeline)  # (the second slot: the pipelined plan)
    assert outs[0].tobytes() == outs[1].tobytes()
    assert hazard_checked() == []


def test_global_pool_in_a_layer_group_reads_l2():
    """A global pooling lowered as a layer group's member with its tensors in L2 keeps them
    there (it is a ReduceMean underneath, which must be told), and the cost model picks the
    pipelined plan for ResNet-50's: the L2 read, not the DDR, bounds it."""
    x = [compiler.TensorSpec((1, 2048, 7, 7), "float32")]
    y = [compiler.TensorSpec((1, 2048, 1, 1), "float32")]
    in_l2 = compiler.LowerOp("GlobalAveragePool", {"tc_in_l2": [0, 1]}, x, y)
    assert sorted(str(b.scope) for b in in_l2.buffer_map.values()) == ["shared", "shared"]
    in_ddr = compiler.LowerOp("GlobalAveragePool", {}, x, y)
    l2_cycles, ddr_cycles = (compiler.estimate_cost(f)["cycles"] for f in (in_l2, in_ddr))
    # 401 KiB at the L2's 256 B/cycle is 1.6k cycles, at the DDR's 64 B/cycle 6.3k
    assert l2_cycles < 2500 < 6000 < ddr_cycles
    plain = compiler.LowerOp("GlobalAveragePool", {"tc_in_l2": [0, 1], "tc_reduce_pipeline": 0}, x, y)
    assert compiler.estimate_cost(plain)["cycles"] > l2_cycles


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("pipeline", [0, 1])
@pytest.mark.parametrize("shape", [(1, 144, 28, 28), (2, 3, 5, 7)])
def test_global_pool_of_int8_codes(op, pipeline, shape, hazard_checked):
    """A global pooling of an int8 value (a squeeze-excite's squeeze of an activation stored
    int8) loads the codes, a quarter of the bytes, and gives the float32 mean or max of the
    values they stand for, (code - zero point) x scale: numpy's, within f32 rounding of the
    exact code sums; both plans, every L1 access ordered."""
    from strategy_util import run_lowered

    q = np.random.default_rng(7).integers(-128, 128, shape).astype(np.int8)
    scale, zero_point = 0.0173, -5
    y = np.zeros(shape[:2] + (1, 1), np.float32)
    run_lowered(op, {"tc_x_scale": scale, "tc_x_zero_point": zero_point, "tc_reduce_pipeline": pipeline}, [q], [y])
    v = (q.astype(np.float64) - zero_point) * np.float32(scale)
    ref = v.mean(axis=(2, 3), keepdims=True) if op == "GlobalAveragePool" else v.max(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-7)
    assert hazard_checked() == []


@pytest.mark.parametrize("shape", [(1, 144, 28, 28), (1, 672, 14, 14), (1, 32, 56, 56), (2, 3, 5, 7)])
def test_int8_mean_on_the_matrix_engine(shape, hazard_checked):
    """The mean of int8 codes as a tile of rows times a column of ones on the matrix engine,
    its epilogue adding -R x zero point to the int32 sum and scaling by f32(scale / R): those
    exact bits (numpy's exact sum, rounded once, times the same f32), the vector engine's
    plans' too, every L1 access ordered."""
    from strategy_util import run_lowered

    q = np.random.default_rng(8).integers(-128, 128, shape).astype(np.int8)
    scale, zero_point = 0.0173, -121
    r = shape[2] * shape[3]
    sums = q.astype(np.int64).sum(axis=(2, 3), keepdims=True) - r * zero_point
    want = sums.astype(np.float32) * np.float32(scale / r)
    got = {}
    for matrix in (1, 0):
        y = np.zeros(shape[:2] + (1, 1), np.float32)
        attrs = {"tc_x_scale": scale, "tc_x_zero_point": zero_point, "tc_reduce_matrix": matrix}
        run_lowered("GlobalAveragePool", attrs, [q], [y])
        got[matrix] = y
        cores = runtime.npu_simulator(0).stats()["cores"]
        assert (sum(c["mm"]["commands"] for c in cores) > 0) == bool(matrix)
    np.testing.assert_array_equal(got[1], want)
    np.testing.assert_array_equal(got[0], want)
    assert hazard_checked() == []


@pytest.mark.parametrize("shape,fill", [((1, 32, 112, 112), None), ((1, 8, 67, 67), None),
                                        ((1, 6, 72, 72), -128), ((1, 6, 72, 72), 127), ((1, 4, 1, 4099), None),
                                        ((1, 4, 56, 56), None)])
def test_int8_mean_folds_runs_of_codes_in_int16(shape, fill, hazard_checked):
    """The pipelined vector plan of an int8 mean converts the codes to int16 and folds runs
    of at most 255 of them there (exact: 255 x 128 fits), then the runs' sums in f32, where
    its rows are too long for the matrix engine's plan (over 4,096 codes): the exact bits of
    the sum (numpy's, rounded once, times the same f32), also at codes all at an end of the
    range; a row no run of 32 to 255 codes divides (4,099, a prime) and a row the matrix engine
    takes (56 x 56) keep the f32 conversion."""
    from strategy_util import run_lowered

    rng = np.random.default_rng(9)
    q = rng.integers(-128, 128, shape).astype(np.int8) if fill is None else np.full(shape, fill, np.int8)
    scale, zero_point = 0.0173, -119
    r = shape[2] * shape[3]
    sums = q.astype(np.int64).sum(axis=(2, 3), keepdims=True) - r * zero_point
    want = sums.astype(np.float32) * np.float32(scale / r)
    attrs = {"tc_x_scale": scale, "tc_x_zero_point": zero_point, "tc_reduce_pipeline": 1, "tc_reduce_matrix": 0}
    y = np.zeros(shape[:2] + (1, 1), np.float32)
    run_lowered("GlobalAveragePool", attrs, [q], [y])
    np.testing.assert_array_equal(y, want)
    assert hazard_checked() == []
    f = compiler.LowerOp("GlobalAveragePool", attrs, [compiler.TensorSpec(shape, "int8")],
                         [compiler.TensorSpec(y.shape, "float32")])
    assert ('"int16"' in str(f)) == (shape[2:] not in ((1, 4099), (56, 56)))
    assert compiler.estimate_cost(f)["engine_busy"][0]["sc"] < 2000  # (the folds are vector commands)


def test_int8_matrix_mean_gives_every_core_the_fewest_blocks(hazard_checked):
    """A squeeze on the matrix engine splits each core's share of the rows into as few
    products as its blocks of 16 rows need, the same on every core: 72 channels (18 rows a
    core) run 2 products on each core, the exact mean still; EfficientNet-B0's 144 channels
    of 56 x 56 codes in L2 (a layer group's) keep each core's matrix engine busy for 3
    products of 12 rows, where tiles of 16 rows give one core 48 rows and the others 32."""
    from strategy_util import run_lowered

    from tilecore.arch import params

    shape = (1, 72, 28, 28)
    q = np.random.default_rng(9).integers(-128, 128, shape).astype(np.int8)
    scale, zero_point = 0.0211, -118
    attrs = {"tc_x_scale": scale, "tc_x_zero_point": zero_point, "tc_reduce_matrix": 1}
    r = shape[2] * shape[3]
    want = (q.astype(np.int64).sum(axis=(2, 3), keepdims=True) - r * zero_point).astype(np.float32) * np.float32(
        scale / r)
    y = np.zeros(shape[:2] + (1, 1), np.float32)
    run_lowered("GlobalAveragePool", attrs, [q], [y])
    cores = runtime.npu_simulator(0).stats()["cores"]
    assert [c["mm"]["commands"] for c in cores] == [2] * len(cores)
    np.testing.assert_array_equal(y, want)
    assert hazard_checked() == []

    f = compiler.LowerOp("GlobalAveragePool", {**attrs, "tc_in_l2": [0, 1]},
                         [compiler.TensorSpec([1, 144, 56, 56], "int8")], [compiler.TensorSpec([1, 144, 1, 1], "float32")])
    p = params()
    # a product of 12 rows (one block) times a column of ones over 56 x 56 codes, its mean
    # in the epilogue: the pipeline's fill, K / 4 blocks, one cycle of epilogue
    product = p["mm_latency"] + 56 * 56 // p["mm_block_i8_k"] + 1
    assert [c["mm"] for c in compiler.estimate_cost(f)["engine_busy"]] == [3 * product] * 4


def test_a_matrix_mean_asked_for_where_it_does_not_apply_is_an_error():
    """tc_reduce_matrix 1 on a pooling whose rows exceed the matrix engine's K (EfficientNet's
    first squeeze-excite: 112 x 112 positions) names why, instead of running the vector plan."""
    from tilecore.arch import params

    k = params()["max_mm_dim"]
    side = 1
    while side * side <= k:
        side *= 2
    spec = compiler.TensorSpec
    attrs = {"tc_x_scale": 0.02, "tc_x_zero_point": -120, "tc_reduce_matrix": 1}
    with pytest.raises(Exception, match=f"tc_reduce_matrix 1 .* at most {k} elements .*rows of {side * side}"):
        compiler.LowerOp("GlobalAveragePool", attrs, [spec([1, 8, side, side], "int8")], [spec([1, 8, 1, 1], "float32")])
    f = compiler.LowerOp("GlobalAveragePool", {**attrs, "tc_reduce_matrix": 0}, [spec([1, 8, side, side], "int8")],
                         [spec([1, 8, 1, 1], "float32")])
    assert f is not None


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("shape,axes", [((1, 96, 14, 14), [2, 3]), ((3, 4, 5, 6), [1, 3]), ((2, 700, 3), [1])])
def test_reduction_of_int8_codes(op, shape, axes):
    """ReduceMean, ReduceMax and ReduceMin of an int8 value (timm's squeeze-excite takes the
    mean over the spatial axes): the f32 mean, max or min of (code - zero point) x scale, as
    numpy gives it; one group of axes, two, and a long outer one."""
    from strategy_util import run_lowered

    q = np.random.default_rng(9).integers(-128, 128, shape).astype(np.int8)
    scale, zero_point = 0.031, 12
    ref = getattr(np, {"ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min"}[op])(
        (q.astype(np.float64) - zero_point) * np.float32(scale), axis=tuple(axes), keepdims=True)
    y = np.zeros(ref.shape, np.float32)
    run_lowered(op, {"axes": axes, "keepdims": 1, "_opset": 13, "tc_x_scale": scale, "tc_x_zero_point": zero_point},
                [q], [y])
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)


def test_global_pool_of_int8_is_checked():
    q, f = compiler.TensorSpec((1, 8, 4, 4), "int8"), compiler.TensorSpec((1, 8, 4, 4), "float32")
    assert compiler.HasStrategy("GlobalAveragePool", {"tc_x_scale": 0.1}, [q]) == ""
    assert "an int8 input goes with tc_x_scale" in compiler.HasStrategy("GlobalAveragePool", {}, [q])
    assert "an int8 input goes with tc_x_scale" in compiler.HasStrategy("GlobalMaxPool", {"tc_x_scale": 0.1}, [f])
    assert "must be positive" in compiler.HasStrategy("GlobalAveragePool", {"tc_x_scale": -1.0}, [q])
    assert "in [-128, 127]" in compiler.HasStrategy("GlobalAveragePool", {"tc_x_scale": 0.1, "tc_x_zero_point": -129},
                                                    [q])
    assert "an int8 input goes with tc_x_scale" in compiler.HasStrategy("ReduceMean", {"axes": [1]}, [q])
    assert "int8" in compiler.HasStrategy("ReduceSum", {"axes": [1], "tc_x_scale": 0.1}, [q])
    assert "needs axes to reduce" in compiler.HasStrategy(
        "ReduceMean", {"axes": [], "noop_with_empty_axes": 1, "tc_x_scale": 0.1, "_opset": 18}, [q])
