"""tests/python/ir_ops/test_ops_elementwise.py — element-wise math, logic/bitwise and activations:
the ONNX node tests of these op types, plus numpy checks of what those tests miss."""
import numpy as np
import pytest

from ir_ops_cases import check_ops
from tilecore.ir.ops import OpError, TensorInfo, get_op

ELEMENTWISE = set("""Abs Acos Acosh Asin Asinh Atan Atanh Add Sub Mul Div Mod Pow Neg Reciprocal Sqrt Exp Log Ceil
Floor Round Sign Sin Cos Tan Sinh Cosh Erf Max Min Mean Sum Clip""".split())
LOGICAL = set("""And Or Xor Not Equal Greater GreaterOrEqual Less LessOrEqual IsInf IsNaN Where BitShift BitwiseAnd
BitwiseOr BitwiseNot BitwiseXor""".split())
ACTIVATION = set("""Relu LeakyRelu PRelu Elu Selu Celu Gelu Mish Sigmoid HardSigmoid HardSwish Softplus Softsign Swish
SwiGLU ThresholdedRelu Shrink Tanh Softmax LogSoftmax Hardmax""".split())


@pytest.mark.parametrize("family", [ELEMENTWISE, LOGICAL, ACTIVATION], ids=["elementwise", "logical", "activation"])
def test_node_cases(family):
    passed, failures = check_ops(family)
    assert not failures, "\n".join(failures)
    assert passed > 20


def run(name, *args, **attrs):
    schema = get_op(name)
    filled = schema.fill_attrs(attrs)
    return schema.reference(filled, *args)


def infer(name, *infos, **attrs):
    schema = get_op(name)
    return schema.infer(schema.fill_attrs(attrs), list(infos))


def test_broadcast_inference_keeps_symbols():
    f32 = np.dtype(np.float32)
    out = infer("Add", TensorInfo(("batch", 1, 4), f32), TensorInfo((3, 1), f32))[0]
    assert out.shape == ("batch", 3, 4) and out.dtype == f32
    out = infer("Mul", TensorInfo(("n", 1), f32), TensorInfo((1, "m"), f32))[0]
    assert out.shape == ("n", "m")
    out = infer("Where", TensorInfo(("n",), np.dtype(bool)), TensorInfo((2, 1), f32), TensorInfo((), f32))[0]
    assert out.shape == (2, "n")
    assert infer("Less", TensorInfo((2, 3), f32), TensorInfo((3,), f32))[0].dtype == np.bool_
    with pytest.raises(OpError, match="broadcast"):
        infer("Add", TensorInfo((2, 3), f32), TensorInfo((4, 3), f32))
    with pytest.raises(OpError, match="one dtype"):
        infer("Sub", TensorInfo((2,), f32), TensorInfo((2,), np.dtype(np.int32)))


def test_integer_arithmetic_wraps_and_truncates():
    assert run("Add", np.array([127], np.int8), np.array([1], np.int8)).tolist() == [-128]
    assert run("Mul", np.array([200], np.uint8), np.array([2], np.uint8)).tolist() == [144]
    q = run("Div", np.array([-7, 7, -7, 7], np.int32), np.array([2, -2, -2, 2], np.int32))
    assert q.tolist() == [-3, -3, 3, 3] and q.dtype == np.int32
    a, b = np.array([-7, 7, -7, 7], np.int64), np.array([3, -3, -3, 3], np.int64)
    assert run("Mod", a, b).tolist() == [2, -2, -1, 1]          # the divisor's sign
    assert run("Mod", a, b, fmod=1).tolist() == [-1, 1, -1, 1]  # the dividend's sign (C fmod)
    assert run("Mod", np.array([5], np.int32), np.array([0], np.int32)).tolist() == [0]
    assert run("Abs", np.array([-128], np.int8)).tolist() == [-128]


def test_max_min_propagate_nan():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    b = np.array([np.nan, 2.0, 1.0], np.float32)
    mx, mn = run("Max", a, b), run("Min", a, b)
    assert np.isnan(mx[:2]).all() and mx[2] == 3.0
    assert np.isnan(mn[:2]).all() and mn[2] == 1.0
    assert run("Max", a, b, np.array([5.0], np.float32)).shape == (3,)


def test_clip():
    x = np.array([-3.0, 0.5, 7.0, np.nan], np.float32)
    # min > max: every value becomes max (ONNX: Min(Max(x, min), max)); NaN stays NaN
    out = run("Clip", x, np.float32(2.0), np.float32(1.0))
    assert out[:3].tolist() == [1.0, 1.0, 1.0] and np.isnan(out[3])
    # opset 6: bounds are attributes
    out = run("Clip", x[:3], min=-1.0, max=1.0, _opset=6)
    assert out.tolist() == [-1.0, 0.5, 1.0]
    assert run("Clip", np.array([-5, 5], np.int8), np.int8(-2), None).tolist() == [-2, 5]
    with pytest.raises(OpError, match="scalar"):
        infer("Clip", TensorInfo((3,), np.dtype(np.float32)), TensorInfo((2,), np.dtype(np.float32)))


def test_float16_math_runs_in_float32():
    x = np.array([0.1, 2.0, 60000.0], np.float16)
    out = run("Exp", x[:2])
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.exp(x[:2].astype(np.float32)).astype(np.float16))
    total = run("Sum", x, x)  # 120000 overflows float16 once, at the final rounding
    assert total.dtype == np.float16 and np.isinf(total[2])


def test_softmax_opset_semantics():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    new = run("Softmax", x, axis=1, _opset=13)
    np.testing.assert_allclose(new.sum(axis=1), 1, rtol=1e-6)
    old = run("Softmax", x, axis=1, _opset=11)  # 2-D coercion: normalised over axes 1 and 2 together
    np.testing.assert_allclose(old.reshape(2, -1).sum(axis=1), 1, rtol=1e-6)
    flat = x.reshape(2, 12)
    ref = np.exp(flat - flat.max(1, keepdims=True))
    np.testing.assert_allclose(old.reshape(2, 12), ref / ref.sum(1, keepdims=True), rtol=1e-6)
    assert run("Softmax", x, _opset=13).shape == x.shape
    with pytest.raises(OpError, match="axis 3 is out of range"):
        infer("Softmax", TensorInfo((2, 3, 4), np.dtype(np.float32)), axis=3)


def test_bitshift_and_named_errors():
    x = np.array([-8, 8], np.int8)
    assert run("BitShift", x, np.array([1, 1], np.int8), direction="RIGHT").tolist() == [-4, 4]
    assert run("BitShift", x, np.array([9, 9], np.int8), direction="RIGHT").tolist() == [-1, 0]
    with pytest.raises(OpError, match="LEFT or RIGHT"):
        run("BitShift", x, x, direction="UP")
    with pytest.raises(OpError, match="Acos: input of dtype int32"):
        infer("Acos", TensorInfo((2,), np.dtype(np.int32)))
