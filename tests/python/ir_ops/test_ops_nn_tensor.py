"""tests/python/ir_ops/test_ops_nn_tensor.py — shape, indexing and linear-algebra
ops: the ONNX node tests of their op types, plus shape inference with symbolic and
value-dependent dims (Reshape 0/-1, Concat, Slice, the Shape → Gather → Concat
chains exporters emit), numpy cross-checks and the errors bad input gets."""
import numpy as np
import pytest

from node_cases_nn import parametrize, run_case
from tilecore.ir.ops import OpError, TensorInfo, get_op

OPS = {"Concat", "Split", "Slice", "Pad", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Expand",
       "Tile", "Trilu", "OneHot", "Range", "ConstantOfShape", "Constant", "Shape", "Size", "Identity",
       "Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "TensorScatter",
       "Compress", "NonZero", "TopK", "Unique", "ReverseSequence", "MatMul", "Gemm", "Einsum"}

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


@parametrize(OPS)
def test_node_case(case):
    run_case(case)


def call(op, attrs, *inputs, opset=22):
    schema = get_op(op)
    return schema.reference(schema.fill_attrs(dict(attrs, _opset=opset)), *inputs)


def infer(op, attrs, *inputs, opset=22):
    schema = get_op(op)
    return schema.infer(schema.fill_attrs(dict(attrs, _opset=opset)), list(inputs))


def const(values):
    v = np.asarray(values, np.int64)
    return TensorInfo(v.shape, v.dtype, v)


@pytest.mark.parametrize("in_shape,target,want", [
    (("N", 3, 4), [0, -1], ("N", 12)),
    (("N", 3, 4), [-1, 12], ("N", 12)),
    (("N", 3, 4), [0, 0, 2, 2], ("N", 3, 2, 2)),
    (("N", "S", 8), [0, 0, 2, -1], ("N", "S", 2, 4)),
    (("N", "S", 8), [-1, 8], (None, 8)),
    ((2, 3, 4), [4, -1], (4, 6)),
    ((None, 3), [-1], (None,)),
])
def test_reshape_infers_zero_and_minus_one(in_shape, target, want):
    (y,) = infer("Reshape", {}, TensorInfo(in_shape, F32), const(target))
    assert y.shape == want


def test_reshape_allowzero_and_errors():
    (y,) = infer("Reshape", dict(allowzero=1), TensorInfo((0, 3), F32), const([3, 0]))
    assert y.shape == (3, 0)
    assert call("Reshape", dict(allowzero=1), np.zeros((0, 3), np.float32), np.array([3, 0])).shape == (3, 0)
    with pytest.raises(OpError, match="Reshape: cannot reshape"):
        infer("Reshape", {}, TensorInfo((2, 3), F32), const([4, -1]))
    with pytest.raises(OpError, match="Reshape: .*more than one -1"):
        infer("Reshape", {}, TensorInfo((2, 3), F32), const([-1, -1]))
    (y,) = infer("Reshape", {}, TensorInfo((2, 3), F32), TensorInfo((3,), I64))
    assert y.shape == (None, None, None)


def test_concat_infers_symbolic_dims():
    a = TensorInfo(("N", 3, "H"), F32)
    b = TensorInfo(("N", 5, "H"), F32)
    (y,) = infer("Concat", dict(axis=1), a, b)
    assert y.shape == ("N", 8, "H")
    (y,) = infer("Concat", dict(axis=0), a, TensorInfo(("M", 3, "H"), F32))
    assert y.shape == (None, 3, "H")
    (y,) = infer("Concat", dict(axis=0), TensorInfo((2, 3), F32), TensorInfo((4, 3), F32))
    assert y.shape == (6, 3)
    (y,) = infer("Concat", dict(axis=-1), TensorInfo((2, "W"), F32), TensorInfo((2, 3), F32))
    assert y.shape == (2, None)
    with pytest.raises(OpError, match="Concat: inputs disagree on dim 1"):
        infer("Concat", dict(axis=0), TensorInfo((1, 2), F32), TensorInfo((1, 3), F32))
    with pytest.raises(OpError, match="Concat: inputs have different ranks"):
        infer("Concat", dict(axis=0), TensorInfo((1, 2), F32), TensorInfo((1,), F32))


def test_shape_arithmetic_folds_to_values():
    x = TensorInfo(("N", 3, 224, 224), F32)
    (shape,) = infer("Shape", dict(start=1), x)
    assert shape.shape == (3,) and shape.value.tolist() == [3, 224, 224]
    (dims,) = infer("Gather", dict(axis=0), shape, const([1, 2]))
    assert dims.value.tolist() == [224, 224]
    (joined,) = infer("Concat", dict(axis=0), const([-1]), dims)
    assert joined.value.tolist() == [-1, 224, 224]
    (unknown,) = infer("Shape", {}, x)
    assert unknown.shape == (4,) and unknown.value is None


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1, -1], [1000, -1000], [0, 1], [1, -1]),
    ([-3], [-1], [0], [1]),
    ([5, 0], [-7, 3], [1, 0], [-2, 2]),
    ([0], [0], [1], [1]),
    ([-100], [100], [-1], [3]),
])
def test_slice_matches_numpy_and_infers_its_shape(starts, ends, axes, steps):
    x = np.arange(6 * 7, dtype=np.float32).reshape(6, 7)
    args = [np.array(v, np.int64) for v in (starts, ends, axes, steps)]
    got = call("Slice", {}, x, *args)
    index = [slice(None)] * 2
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    np.testing.assert_array_equal(got, x[tuple(index)])
    (y,) = infer("Slice", {}, TensorInfo((6, 7), F32), *[TensorInfo(a.shape, I64, a) for a in args])
    assert y.shape == got.shape
    (y,) = infer("Slice", {}, TensorInfo(("N", 7), F32), *[TensorInfo(a.shape, I64, a) for a in args])
    assert y.shape == tuple(None if 0 in [a % 2 for a in axes] and i == 0 else d
                            for i, d in enumerate(("N",) + got.shape[1:]))


def test_slice_unknown_starts_keep_other_dims():
    x = TensorInfo(("N", 7, 5), F32)
    (y,) = infer("Slice", {}, x, TensorInfo((1,), I64), TensorInfo((1,), I64), const([1]))
    assert y.shape == ("N", None, 5)


def test_split_num_outputs_and_output_count():
    x = np.arange(7, dtype=np.float32)
    parts = call("Split", dict(num_outputs=3), x, opset=18)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6]]
    parts = call("Split", dict(_num_outputs=7), x, opset=13)
    assert len(parts) == 7
    infos = infer("Split", dict(num_outputs=3), TensorInfo(("N", 7), F32), opset=18)
    assert [i.shape for i in infos] == [(None, 7)] * 3     # a symbolic axis splits into unknown parts
    infos = infer("Split", dict(axis=1, num_outputs=3), TensorInfo(("N", 7), F32), opset=18)
    assert [i.shape for i in infos] == [("N", 3), ("N", 3), ("N", 1)]
    with pytest.raises(OpError, match="Split: split .* does not sum"):
        call("Split", {}, x, np.array([3, 3]))


def test_squeeze_unsqueeze_flatten_transpose_infer():
    (y,) = infer("Unsqueeze", {}, TensorInfo(("N", 4), F32), const([0, -1]))
    assert y.shape == (1, "N", 4, 1)
    (y,) = infer("Squeeze", {}, TensorInfo((1, "N", 1), F32), const([0, 2]))
    assert y.shape == ("N",)
    with pytest.raises(OpError, match="Squeeze: cannot squeeze axis 1"):
        infer("Squeeze", {}, TensorInfo((1, 3), F32), const([1]))
    (y,) = infer("Flatten", dict(axis=2), TensorInfo(("N", 1, 4, 5), F32))
    assert y.shape == ("N", 20)
    (y,) = infer("Transpose", dict(perm=[2, 0, 1]), TensorInfo(("N", "C", 5), F32))
    assert y.shape == (5, "N", "C")
    with pytest.raises(OpError, match="Transpose: perm"):
        infer("Transpose", dict(perm=[0, 0]), TensorInfo((2, 2), F32))


def test_expand_tile_pad_infer():
    (y,) = infer("Expand", {}, TensorInfo(("N", 1), F32), const([3, 1, 4]))
    assert y.shape == (3, "N", 4)
    (y,) = infer("Tile", {}, TensorInfo(("N", 2), F32), const([1, 3]))
    assert y.shape == ("N", 6)
    (y,) = infer("Pad", {}, TensorInfo(("N", 4), F32), const([0, 1, 0, -2]))
    assert y.shape == ("N", 3)
    got = call("Pad", dict(mode="reflect"), np.arange(4.0).reshape(1, 4), np.array([0, 2, 0, 1]))
    np.testing.assert_array_equal(got, [[2, 1, 0, 1, 2, 3, 2]])


def test_gathers_and_scatters_against_numpy():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((4, 5, 6)).astype(np.float32)
    idx = np.array([[3, -1], [0, 2]])
    np.testing.assert_array_equal(call("Gather", dict(axis=1), data, idx), np.take(data, idx % 5, axis=1))
    (y,) = infer("Gather", dict(axis=1), TensorInfo(("N", 5, 6), F32), TensorInfo((2, 2), I64))
    assert y.shape == ("N", 2, 2, 6)
    nd = np.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(call("GatherND", {}, data, nd), data[[1, 3], [2, 4]])
    upd = np.ones((2, 5, 6), np.float32)
    out = call("ScatterND", dict(reduction="add"), data, np.array([[1], [1]]), upd)
    np.testing.assert_allclose(out[1], data[1] + 2)
    with pytest.raises(OpError, match="Gather: an index"):
        call("Gather", {}, data, np.array([4]))
    with pytest.raises(OpError, match="ScatterElements: reduction"):
        call("ScatterElements", dict(reduction="sum"), data, np.zeros((1, 1, 1), np.int64),
             np.zeros((1, 1, 1), np.float32))


def test_scatter_nd_repeated_indices_against_onnx_reference():
    # later indices win, as ONNX's reference applies the updates one after another
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(1)
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, None) for n, t in
                                             [("data", 1), ("indices", 7), ("updates", 1)]],
                              [helper.make_tensor_value_info("y", 1, None)])
    ref = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]))
    for shape, k, rows in [((3, 4, 5), 2, 40), ((6,), 1, 25), ((2, 3), 2, 1), ((4, 4), 1, 0)]:
        data = rng.standard_normal(shape).astype(np.float32)
        idx = np.stack([rng.integers(0, shape[j], size=rows) for j in range(k)], -1).reshape(rows, k)
        upd = rng.standard_normal((rows,) + shape[k:]).astype(np.float32)
        (want,) = ref.run(None, {"data": data, "indices": idx, "updates": upd})
        np.testing.assert_array_equal(call("ScatterND", {}, data, idx, upd), want)
        neg = np.where(idx > 0, idx - np.array(shape[:k]), idx)  # the same positions, from the end
        np.testing.assert_array_equal(call("ScatterND", {}, data, neg, upd), want)


def test_topk_ties_and_value_dependent_shapes():
    x = np.array([[3, 1, 3, 2, 3]], np.int64)
    values, indices = call("TopK", {}, x, np.array([2]))
    assert values.tolist() == [[3, 3]] and indices.tolist() == [[0, 2]]
    values, indices = call("TopK", dict(largest=0), x, np.array([2]))
    assert indices.tolist() == [[1, 3]]
    v, i = infer("TopK", {}, TensorInfo(("N", 5), I64), const([2]))
    assert v.shape == ("N", 2) and i.dtype == I64
    (nz,) = infer("NonZero", {}, TensorInfo.of(np.array([[0, 1], [1, 1]])))
    assert nz.shape == (2, 3)
    (nz,) = infer("NonZero", {}, TensorInfo((2, 2), F32))
    assert nz.shape == (2, None)


def test_matmul_gemm_einsum_infer():
    (y,) = infer("MatMul", {}, TensorInfo(("B", 1, 3, 4), F32), TensorInfo((5, 4, 6), F32))
    assert y.shape == ("B", 5, 3, 6)
    (y,) = infer("MatMul", {}, TensorInfo((4,), F32), TensorInfo(("B", 4, 6), F32))
    assert y.shape == ("B", 6)
    with pytest.raises(OpError, match="MatMul: inner dims differ"):
        infer("MatMul", {}, TensorInfo((3, 4), F32), TensorInfo((5, 6), F32))
    (y,) = infer("Gemm", dict(transA=1), TensorInfo((4, "M"), F32), TensorInfo((4, 6), F32), None)
    assert y.shape == ("M", 6)
    (y,) = infer("Einsum", dict(equation="...ij,...jk->...ik"), TensorInfo(("B", 2, 3), F32),
                 TensorInfo((3, 5), F32))
    assert y.shape == ("B", 2, 5)
    (y,) = infer("Einsum", dict(equation="ij,jk"), TensorInfo((2, 3), F32), TensorInfo((3, 5), F32))
    assert y.shape == (2, 5)
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    assert call("MatMul", {}, a, a.T).dtype == np.float16


def test_old_opset_forms_take_attributes():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(call("Slice", dict(starts=[1], ends=[3], axes=[1]), x, opset=9), x[:, 1:3])
    (y,) = infer("Slice", dict(starts=[1], ends=[3], axes=[1]), TensorInfo(("N", 4), F32), opset=9)
    assert y.shape == ("N", 2)
    got = call("Pad", dict(pads=[0, 1, 0, 0], value=7.0), x, opset=2)
    assert got.shape == (3, 5) and got[0, 0] == 7
    assert call("Squeeze", dict(axes=[0]), x[None], opset=11).shape == (3, 4)
    assert call("Unsqueeze", dict(axes=[0, 3]), x, opset=11).shape == (1, 3, 4, 1)
    assert call("Reshape", dict(shape=[4, 3]), x, opset=1).shape == (4, 3)
    values, indices = call("TopK", dict(k=2), x, opset=1)
    assert indices.tolist() == [[3, 2], [3, 2], [3, 2]]
    parts = call("Split", dict(split=[1, 2]), x, opset=11)
    assert [p.shape for p in parts] == [(1, 4), (2, 4)]
    up = get_op("Upsample")
    got = up.reference(up.fill_attrs(dict(scales=[1.0, 2.0], _opset=7)), x)
    np.testing.assert_array_equal(got, np.repeat(x, 2, axis=1))
    rs = get_op("Resize")
    got = rs.reference(rs.fill_attrs(dict(_opset=10)), x, np.array([1, 1.5], np.float32))
    # opset 10: asymmetric coordinates, nearest by truncation when upsampling
    np.testing.assert_array_equal(got, x[:, [0, 0, 1, 2, 2, 3]])


def test_constant_forms():
    onnx = pytest.importorskip("onnx")
    vals = onnx.helper.make_tensor("v", onnx.TensorProto.FLOAT, [2], [1.5, 2.5])
    idx = onnx.helper.make_tensor("i", onnx.TensorProto.INT64, [2], [1, 5])
    dense = call("Constant", dict(sparse_value=onnx.helper.make_sparse_tensor(vals, idx, [2, 3])))
    np.testing.assert_array_equal(dense, [[0, 1.5, 0], [0, 0, 2.5]])
    assert call("Constant", dict(value_ints=[1, 2])).dtype == np.int64
    assert call("Constant", dict(value_float=1.0)).shape == ()
    (info,) = infer("Constant", dict(value_strings=["a", "b"]))
    assert info.shape == (2,) and info.value.tolist() == ["a", "b"]
    with pytest.raises(OpError, match="Constant: needs exactly one"):
        call("Constant", dict(value_int=1, value_float=2.0))
