"""tests/python/ir_ops/test_ops_reduce_cast.py — reductions, arg/scan ops and casts: node tests plus
checks of axes-by-opset, inference with unknown axes, and conversion rules."""
import numpy as np
import pytest

from ir_ops_cases import check_ops
from tilecore.ir.ops import OpError, TensorInfo, get_op

REDUCE = set("""ArgMax ArgMin ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd
ReduceSum ReduceSumSquare CumSum CumProd""".split())
CAST = {"Cast", "CastLike", "BitCast"}


@pytest.mark.parametrize("family", [REDUCE, CAST], ids=["reduce", "cast"])
def test_node_cases(family):
    passed, failures = check_ops(family)
    assert not failures, "\n".join(failures)
    assert passed > 20


def run(name, *args, **attrs):
    schema = get_op(name)
    return schema.reference(schema.fill_attrs(attrs), *args)


def infer(name, *infos, **attrs):
    schema = get_op(name)
    return schema.infer(schema.fill_attrs(attrs), list(infos))


F32 = np.dtype(np.float32)


def test_reduce_axes_attribute_or_input_by_opset():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert run("ReduceMean", x, axes=[1], _opset=13).tolist() == [[1.0], [4.0]]
    assert run("ReduceMean", x, np.array([0], np.int64), keepdims=0, _opset=18).tolist() == [1.5, 2.5, 3.5]
    assert run("ReduceSum", x, None, _opset=13).tolist() == [[15.0]]
    assert run("ReduceSum", x, np.array([], np.int64), noop_with_empty_axes=1, _opset=13).shape == (2, 3)
    with pytest.raises(OpError, match="out of range"):
        run("ReduceMax", x, np.array([2], np.int64), _opset=18)


def test_reduce_inference():
    x = TensorInfo(("n", 3, 4), F32)
    axes = np.array([-1], np.int64)
    assert infer("ReduceSum", x, TensorInfo.of(axes), _opset=13)[0].shape == ("n", 3, 1)
    assert infer("ReduceSum", x, TensorInfo.of(axes), keepdims=0, _opset=13)[0].shape == ("n", 3)
    # axes known only at run time: the rank is known with keepdims, not without
    unknown = TensorInfo((1,), np.dtype(np.int64))
    assert infer("ReduceMax", x, unknown, _opset=18)[0].shape == (None, None, None)
    assert infer("ReduceMax", x, unknown, keepdims=0, _opset=18)[0].shape is None
    assert infer("ArgMax", x, axis=1, keepdims=0)[0].shape == ("n", 4)
    assert infer("ArgMax", x, axis=1)[0].dtype == np.int64


def test_reduce_empty_and_int():
    e = np.zeros((2, 0), np.float32)
    assert run("ReduceMin", e, np.array([1], np.int64), keepdims=0).tolist() == [np.inf, np.inf]
    assert run("ReduceProd", e, np.array([1], np.int64), keepdims=0).tolist() == [1.0, 1.0]
    assert run("ReduceMean", np.array([[1, 2]], np.int32), np.array([1], np.int64)).tolist() == [[1]]
    assert run("ArgMax", np.array([1, 3, 3], np.int32), select_last_index=1).tolist() == [2]
    assert run("CumSum", np.array([1, 2, 3], np.int32), np.int64(0), exclusive=1, reverse=1).tolist() == [5, 3, 0]


def test_cast_rules():
    import ml_dtypes
    x = np.array([1e6, -1e6, np.inf, np.nan, 1.5], np.float32)
    sat = run("Cast", x, to=17)  # FLOAT8E4M3FN, saturate=1: out of range -> +-448
    assert sat.dtype == ml_dtypes.float8_e4m3fn
    assert sat.astype(np.float32)[:3].tolist() == [448.0, -448.0, 448.0]
    raw = run("Cast", x, to=17, saturate=0)
    assert np.isnan(raw.astype(np.float32)[:4]).all()
    assert run("Cast", np.array([200], np.int16), to=3).tolist() == [-56]   # int16 -> int8 wraps
    assert run("Cast", np.array([-1.7, 2.9], np.float32), to=6).tolist() == [-1, 2]
    parsed = run("Cast", np.array(["1e-5", "-INF", "nan"], dtype=object), to=1)
    assert parsed.dtype == np.float32 and parsed[0] == np.float32(1e-5) and parsed[1] == -np.inf and np.isnan(parsed[2])
    assert run("Cast", np.array([1.5], np.float32), to=8).tolist() == ["1.5"]
    assert run("CastLike", np.array([3], np.int64), np.zeros(1, np.float16)).dtype == np.float16
    assert infer("Cast", TensorInfo(("n",), F32), to=10)[0].dtype == np.float16
    with pytest.raises(OpError, match="element type"):
        infer("Cast", TensorInfo((1,), F32), to=99)
    with pytest.raises(OpError, match="differ in width"):
        infer("BitCast", TensorInfo((1,), F32), to=7)
