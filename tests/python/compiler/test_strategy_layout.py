"""Layout strategies (Concat, Split, Slice, Transpose, Pad, Tile, DepthToSpace,
SpaceToDepth, Dropout at inference: DMA-only copies) on 4 simulated TC1 cores against the op library's
numpy reference. Compile-time inputs (Slice's starts..., Pad's pads, Tile's repeats)
reach the strategy as attributes of the same name; the reference gets them as inputs."""
import numpy as np
import pytest

import tilecore
from tilecore import compiler
from tilecore.ir import ops
from strategy_util import TARGET, check_op, rand, run_lowered


def run_const(op_type, attrs, data, consts, const_attrs):
    """Runs ``op_type`` with ``data`` as params and ``consts`` as compile-time inputs
    (their values in ``const_attrs``); returns (outputs, references)."""
    schema = ops.get_op(op_type)
    ref = schema.reference(schema.fill_attrs(dict(attrs)), *data, *consts)
    refs = [np.asarray(r) for r in (ref if isinstance(ref, (tuple, list)) else [ref])]
    outs = [np.zeros(r.shape, r.dtype) for r in refs]
    specs = [compiler.TensorSpec(x.shape, x.dtype) for x in list(data) + list(consts)]
    full = dict(attrs, **const_attrs)
    assert compiler.HasStrategy(op_type, full, specs) == ""
    f = compiler.LowerOp(op_type, full, specs, [compiler.TensorSpec(o.shape, o.dtype) for o in outs], TARGET)
    assert int(f.attrs["input_params"]) == len(data)
    mod = tilecore.build(f, target=TARGET)
    mod[f.attrs["global_symbol"]](*data, *outs)
    for o, r in zip(outs, refs):
        np.testing.assert_array_equal(o, r, err_msg=op_type)
    return outs


def i64(v):
    return np.array(v, np.int64)


@pytest.mark.parametrize("axis,shapes", [
    (1, [(3, 5, 7), (3, 2, 7), (3, 1, 7)]),
    (-1, [(2, 3, 4), (2, 3, 9)]),
    (0, [(5,), (1,), (11,)]),
])
def test_concat(axis, shapes):
    check_op("Concat", {"axis": axis}, [rand(s, i) for i, s in enumerate(shapes)])


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.bool_, np.float16, np.int16])
def test_concat_dtypes(dtype):
    a, b = rand((4, 3), 1, 0, 100, np.int32).astype(dtype), rand((4, 5), 2, 0, 100, np.int32).astype(dtype)
    check_op("Concat", {"axis": 1}, [a, b])


def test_split():
    x = rand((4, 11, 3), 1)
    check_op("Split", {"axis": 1, "split": [2, 7, 2]}, [x])
    check_op("Split", {"axis": -1, "num_outputs": 2}, [rand((5, 7), 2)])  # 4 + 3
    run_const("Split", {"axis": 0}, [rand((9, 2), 3)], [i64([4, 5])], {"split": [4, 5]})


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1, 2], [3, 100], [0, 2], [1, 2]),            # clamped end
    ([-1], [-1000], [1], [-1]),                    # reversed, clamped
    ([10, -3], [0, 1], [-1, 0], [-3, -1]),         # negative axes and steps
    ([0, 1, 1], [4, 5, 6], [0, 1, 2], [3, 2, 4]),
    ([5], [2], [2], [1]),                          # empty
])
def test_slice(starts, ends, axes, steps):
    x = rand((4, 6, 13), 1)
    run_const("Slice", {}, [x], [i64(starts), i64(ends), i64(axes), i64(steps)],
              {"starts": starts, "ends": ends, "axes": axes, "steps": steps})


def test_slice_attribute_form_and_int32():
    check_op("Slice", {"starts": [1], "ends": [-1], "axes": [0]}, [rand((7, 3), 1, 0, 9, np.int32)])


@pytest.mark.parametrize("shape,perm", [
    ((5, 7), [1, 0]),
    ((2, 3, 5), None),
    ((2, 3, 5, 7), [0, 2, 3, 1]),
    ((2, 3, 4, 5, 3), [4, 1, 0, 3, 2]),
    ((2, 2, 3, 2, 3, 2), [5, 3, 1, 4, 0, 2]),   # 6-D: two dims become work items
    ((1, 4, 1, 6), [2, 3, 0, 1]),
])
def test_transpose(shape, perm):
    x = rand(shape, 1)
    want = np.transpose(x, perm)
    outs = run_const("Transpose", {} if perm is None else {"perm": perm}, [x], [], {})
    np.testing.assert_array_equal(outs[0], want)  # and against numpy directly


@pytest.mark.parametrize("shape,perm", [((300, 520), [1, 0]), ((2, 85, 700), [0, 2, 1]),
                                        ((1, 3, 85, 40, 40), [0, 1, 3, 4, 2])])
def test_transpose_tiled(shape, perm):
    # rows too far apart to stage whole: 2-D tiles (with remainders) transposed in L1
    x = rand(shape, 1)
    np.testing.assert_array_equal(run_const("Transpose", {"perm": perm}, [x], [], {})[0], np.transpose(x, perm))


def test_transpose_int8():
    check_op("Transpose", {"perm": [1, 0, 2]}, [rand((3, 5, 7), 1, -100, 100, np.int8)])


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_transpose_rearranged_by_the_vector_engine(dtype):
    """A BERT key's transpose (the innermost dim moves): staged through L1 and rearranged
    there by strided vector copies (a bool one by the DMA), equal to numpy's."""
    shape, perm = (1, 128, 12, 64), [0, 2, 3, 1]
    x = rand(shape, 1, -100, 100, np.int8).astype(dtype)
    out = np.zeros(np.transpose(x, perm).shape, dtype)
    specs = [compiler.TensorSpec(shape, dtype)]
    f = compiler.LowerOp("Transpose", {"perm": perm}, specs, [compiler.TensorSpec(out.shape, dtype)], TARGET)
    vec = max(c["vec"] for c in compiler.estimate_cost(f)["engine_busy"])
    assert (vec > 0) == (dtype != "bool")
    np.testing.assert_array_equal(run_lowered("Transpose", {"perm": perm}, [x], [out])[0], np.transpose(x, perm))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad(mode):
    x = rand((3, 4, 5), 1)
    pads = [0, 1, 2, 1, 3, 2]
    value = [np.array(1.5, np.float32)] if mode == "constant" else []
    outs = run_const("Pad", {"mode": mode}, [x], [i64(pads)] + value,
                     {"pads": pads, "value": 1.5})
    np.testing.assert_array_equal(outs[0], np.pad(x, [(0, 1), (1, 3), (2, 2)], mode=mode,
                                                  **({"constant_values": 1.5} if mode == "constant" else {})))


def test_pad_crop_and_axes():
    x = rand((5, 6), 1, 0, 50, np.int32)
    run_const("Pad", {}, [x], [i64([-1, 2, 0, -3])], {"pads": [-1, 2, 0, -3]})
    run_const("Pad", {}, [x], [i64([1, 2]), np.array(7, np.int32), i64([-1])],
              {"pads": [1, 2], "value": 7, "axes": [-1]})


def test_tile_and_depth_to_space():
    x = rand((2, 3, 5), 1)
    run_const("Tile", {}, [x], [i64([3, 1, 2])], {"repeats": [3, 1, 2]})
    y = rand((2, 12, 3, 5), 2)
    for mode in ("DCR", "CRD"):
        check_op("DepthToSpace", {"blocksize": 2, "mode": mode}, [y])
        check_op("SpaceToDepth", {"blocksize": 3, "mode": mode}, [rand((1, 2, 6, 9), 3)])  # (mode: opset 28)


def test_bigger_than_l1():
    # 1.5 MiB inputs: nothing goes through L1
    a, b = rand((3, 256, 512), 1), rand((3, 256, 512), 2)
    check_op("Concat", {"axis": 2}, [a, b])
    check_op("Transpose", {"perm": [2, 1, 0]}, [a])


def test_host_reasons():
    x = compiler.TensorSpec((4, 4), "float32")
    s = compiler.TensorSpec((1,), "int64")
    assert "starts and ends" in compiler.HasStrategy("Slice", {}, [x, s, s])
    assert "pads" in compiler.HasStrategy("Pad", {}, [x, compiler.TensorSpec((4,), "int64")])
    assert "64-bit" in compiler.HasStrategy("Transpose", {}, [compiler.TensorSpec((4, 4), "int64")])
    assert "reflect" in compiler.HasStrategy("Pad", {"mode": "reflect", "pads": [0, 4, 0, 0]}, [x])


def test_output_shapes_that_disagree_are_errors():
    f32 = lambda *s: compiler.TensorSpec(s, "float32")  # noqa: E731
    cases = [
        ("Concat", {"axis": 1}, [f32(2, 3), f32(2, 4)], [f32(2, 8)]),     # one column too many
        ("Split", {"axis": 0}, [f32(5, 2)], [f32(3, 2), f32(3, 2)]),      # reads past the input
        ("Slice", {"starts": [0], "ends": [2]}, [f32(4)], [f32(3)]),
        ("Transpose", {}, [f32(2, 3)], [f32(2, 3)]),
    ]
    for op, attrs, ins, outs in cases:
        with pytest.raises(Exception, match="LowerOp"):
            compiler.LowerOp(op, attrs, ins, outs, TARGET)
    with pytest.raises(Exception, match="Gather"):
        compiler.LowerOp("Gather", {}, [f32(4, 3), compiler.TensorSpec((2,), "int32")], [f32(3, 3)], TARGET)


def test_bad_attributes_are_reasons_not_crashes():
    x = compiler.TensorSpec((4, 6), "float32")
    x4 = compiler.TensorSpec((1, 6, 4, 4), "float32")
    cases = [
        ("Concat", {"axis": 2}, [x, x], "axis"),
        ("Split", {"axis": -3}, [x], "axis"),
        ("Transpose", {"perm": [0, 0]}, [x], "permutation"),
        ("Transpose", {"perm": [1, 0, 2]}, [x], "length"),
        ("Slice", {"starts": [0, 1], "ends": [2], "axes": [0, 1]}, [x], "lengths"),
        ("Slice", {"starts": [0], "ends": [2], "axes": [5]}, [x], "axes"),
        ("Slice", {"starts": [0, 0], "ends": [2, 2], "axes": [1, -1]}, [x], "repeated"),
        ("Pad", {"pads": [1, 2, 3]}, [x], "begin and an end"),
        ("Pad", {"pads": [1, 1], "axes": [7]}, [x], "axes"),
        ("DepthToSpace", {"blocksize": 0}, [x4], "blocksize"),
        ("DepthToSpace", {"blocksize": 2}, [compiler.TensorSpec((1, 6, 4, 4), "float32")], "multiple"),
        ("SpaceToDepth", {"blocksize": 3}, [x4], "multiples"),
        ("Resize", {"scales": [2.0]}, [x], "per axis"),
        ("Resize", {"scales": [1.0, -2.0]}, [x], "positive"),
        ("Resize", {"sizes": [4, 6], "axes": [0, 9]}, [x], "axes"),
        ("ConvTranspose", {"output_shape": [5]}, [x4, compiler.TensorSpec((6, 2, 3, 3), "float32")], "output_shape"),
    ]
    for op, attrs, ins, words in cases:
        why = compiler.HasStrategy(op, attrs, ins)
        assert words in why, (op, attrs, why)
    with pytest.raises(Exception, match="rank"):
        compiler.LowerOp("Tile", {}, [x], [compiler.TensorSpec((4, 6, 2), "float32")], TARGET)
    # an empty dimension slices to nothing
    check_op("Slice", {"starts": [0], "ends": [3], "axes": [1]}, [np.zeros((2, 0, 3), np.float32)])


def test_random_layouts_against_numpy():
    # a fixed sample of random shapes: every box path (direct, staged whole, 2-D tiles)
    rng = np.random.default_rng(7)
    for _ in range(12):
        rank = int(rng.integers(1, 6))
        shape = tuple(int(d) for d in rng.integers(1, 9, rank))
        x = rng.standard_normal(shape).astype(np.float32)
        perm = [int(p) for p in rng.permutation(rank)]
        np.testing.assert_array_equal(run_const("Transpose", {"perm": perm}, [x], [], {})[0], np.transpose(x, perm))
        axes = [int(a) for a in rng.choice(rank, int(rng.integers(1, rank + 1)), replace=False)]
        starts = [int(rng.integers(-shape[a] - 2, shape[a] + 2)) for a in axes]
        ends = [int(rng.integers(-shape[a] - 2, shape[a] + 2)) for a in axes]
        steps = [int(rng.choice([-3, -2, -1, 1, 2, 3])) for _ in axes]
        # against the op library only: ONNX clamps a start before the axis to 0 for a negative
        # step where Python's slicing gives nothing
        run_const("Slice", {}, [x], [i64(starts), i64(ends), i64(axes), i64(steps)],
                  {"starts": starts, "ends": ends, "axes": axes, "steps": steps})
        pads = [int(p) for p in rng.integers(0, 3, 2 * rank)]
        mode = str(rng.choice(["constant", "edge", "wrap"]))
        want = np.pad(x, [(pads[i], pads[i + rank]) for i in range(rank)], mode=mode)
        out = run_const("Pad", {"mode": mode}, [x], [i64(pads)], {"pads": pads})[0]
        np.testing.assert_array_equal(out, want)


def test_dropout_at_inference():
    x = rand((5, 300, 7), 1)
    outs = run_lowered("Dropout", {}, [x], [np.zeros(x.shape, np.float32), np.zeros(x.shape, np.bool_)])
    np.testing.assert_array_equal(outs[0], x)
    assert outs[1].all()
    outs = run_lowered("Dropout", {"seed": 3}, [x], [np.zeros(x.shape, np.float32)])
    np.testing.assert_array_equal(outs[0], x)
    # training mode draws random numbers: not on the npu
    f, t = compiler.TensorSpec((4,), "float32"), compiler.TensorSpec((), "bool")
    assert "training" in compiler.HasStrategy("Dropout", {}, [f, compiler.TensorSpec((), "float32"), t])
    assert "training" in compiler.HasStrategy("Dropout", {"training_mode": 1}, [f])
