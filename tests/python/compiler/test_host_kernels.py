"""Host kernels: ops lowered with compiler.LowerHostOp, built for the c target and run
on the CPU, against the op library's numpy reference, in the dtypes TC1 lacks."""
import numpy as np
import pytest

import tilecore
from tilecore import compiler
from tilecore.ir import ops

S = compiler.TensorSpec


def run_host(op_type, attrs, inputs, ref_attrs=None):
    """(outputs of the host kernel, outputs of the reference)."""
    schema = ops.get_op(op_type)
    ref = schema.reference(schema.fill_attrs(dict(ref_attrs if ref_attrs is not None else attrs)), *inputs)
    refs = [np.asarray(r) for r in (ref if isinstance(ref, (tuple, list)) else [ref])]
    specs = [None if x is None else S(x.shape, x.dtype) for x in inputs]
    assert compiler.HasHostKernel(op_type, attrs, specs) == ""
    f = compiler.LowerHostOp(op_type, attrs, specs, [S(r.shape, r.dtype) for r in refs])
    mod = tilecore.build(f, target="c")
    outs = [np.zeros(r.shape, r.dtype) for r in refs]
    n = int(f.attrs["input_params"])
    args = [np.zeros(1, np.float32) if x is None else (x.reshape(1) if x.ndim == 0 else x) for x in inputs[:n]]
    mod[f.attrs["global_symbol"]](*args, *[o.reshape(1) if o.ndim == 0 else o for o in outs])
    return outs, refs


def check(op_type, attrs, inputs, rtol=1e-6, ref_attrs=None, atol=1e-12):
    outs, refs = run_host(op_type, attrs, inputs, ref_attrs)
    for o, r in zip(outs, refs):
        assert o.shape == r.shape and o.dtype == r.dtype, op_type
        if o.dtype.kind == "f":
            np.testing.assert_allclose(o, r, rtol=rtol, atol=atol, equal_nan=True, err_msg=op_type)
        else:
            np.testing.assert_array_equal(o, r, err_msg=op_type)


rng = np.random.default_rng(0)
I64 = rng.integers(-9, 10, (3, 4)).astype(np.int64)
F64 = rng.uniform(-3, 3, (3, 4))


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Max", "Min", "Equal", "Less", "GreaterOrEqual"])
def test_binary_int64_broadcast(op):
    check(op, {}, [I64, np.array([3, -2, 5, 7], np.int64)])


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32])
def test_unsigned_compare(dtype):
    a, b = rng.integers(0, 250, (3, 5)).astype(dtype), rng.integers(0, 250, (5,)).astype(dtype)
    for op in ["Less", "GreaterOrEqual", "Equal"]:
        check(op, {}, [a, b])


def test_div_mod_int_and_float():
    b = np.array([3, -2, 5, 7], np.int64)
    check("Div", {}, [I64, b])
    check("Mod", {}, [I64, b])
    check("Mod", {"fmod": 1}, [I64, b])
    check("Mod", {"fmod": 1}, [F64, np.array([1.5, -2.0, 0.7, 3.0])], rtol=1e-9)
    check("Mod", {}, [F64, np.array([1.5, -2.0, 0.7, 3.0])], rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_float_mod_of_infinities_zeros_and_large_quotients(dtype):
    # the cases of ONNX's mod_float_edge_cases: x mod +-inf, +-inf mod x, x mod 0, NaN; and a
    # quotient far beyond the integers a float holds exactly (a - b * floor(a / b) loses it)
    big = 1e20 if dtype == np.float64 else 6e4
    x = np.array([0, -0.0, -3, 3, -1, 1, np.inf, -np.inf, 1, 1, np.nan, 1, big, -big], dtype)
    y = np.array([-2, 2, np.inf, np.inf, -np.inf, -np.inf, 2, 2, 0, -0.0, 2, np.nan, 3, 7], dtype)
    with np.errstate(invalid="ignore"):  # (numpy's reference warns about the NaNs ONNX asks for)
        check("Mod", {}, [x, y], rtol=0, atol=0)
        check("Mod", {"fmod": 1}, [x, y], rtol=0, atol=0)


def test_logic_and_bits():
    a, b = rng.random((4, 5)) > 0.5, rng.random((5,)) > 0.5
    for op in ["And", "Or", "Xor"]:
        check(op, {}, [a, b])
    check("Not", {}, [a])
    x, s = np.array([16, 4, 1], np.uint8), np.array([1, 2, 9], np.uint8)
    check("BitShift", {"direction": "LEFT"}, [x, s])
    check("BitShift", {"direction": "RIGHT"}, [x, s])
    check("BitwiseAnd", {}, [I64, np.int64(6) * np.ones((4,), np.int64)])


def test_float64_unary_and_nan_inf():
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5, np.inf, -np.inf, np.nan])
    check("IsNaN", {}, [x])
    check("IsInf", {}, [x])
    check("IsInf", {"detect_negative": 0}, [x])
    y = F64
    for op in ["Exp", "Tanh", "Neg", "Abs", "Sign", "Floor", "Ceil", "Relu"]:
        check(op, {}, [y], rtol=1e-12)
    check("Round", {}, [x[:5]])


def test_cast_truncates_and_where():
    x = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 100.2], np.float32)
    check("Cast", {"to": 7}, [x])      # to int64
    check("Cast", {"to": 9}, [x])      # to bool
    check("Cast", {"to": 11}, [x])     # to float64
    c = rng.random((3, 4)) > 0.5
    check("Where", {}, [c, I64, np.array([100], np.int64)])


def test_shape_size_copies():
    check("Shape", {}, [F64])
    check("Shape", {"start": -1}, [F64])
    check("Size", {}, [F64])
    check("Reshape", {}, [I64, np.array([4, 3], np.int64)])
    check("Expand", {}, [np.array([[1], [2]], np.int64), np.array([2, 3], np.int64)])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reductions(op):
    x = np.array([[1, 5, 5, 2], [7, 7, 0, 7], [3, 2, 1, 0]], np.int64)
    check(op, {"axis": 1, "keepdims": 0}, [x])
    check(op, {"axis": 1, "select_last_index": 1}, [x])
    check(op, {"axis": 0}, [F64])


def test_cumsum_topk():
    x = rng.integers(-9, 10, (3, 5)).astype(np.int64)
    for a in ({}, {"exclusive": 1}, {"reverse": 1}):
        check("CumSum", {"axis": 1, **a}, [x, np.array(1)], ref_attrs=a)
    y = np.array([[3.0, 1.0, 3.0, 7.0], [0.5, 2.0, -1.0, 2.0]])
    check("TopK", {"axis": 1}, [y, np.array([3], np.int64)])
    check("TopK", {"axis": 1, "largest": 0}, [y, np.array([2], np.int64)])


def test_softmax_slice():
    x = rng.uniform(-3, 3, (2, 3, 4))
    check("Softmax", {"axis": 1}, [x], rtol=1e-12)
    check("LogSoftmax", {"axis": -1}, [x], rtol=1e-12)
    scale, bias = rng.uniform(0.5, 2, (4,)), rng.uniform(-1, 1, (3, 4))
    check("LayerNormalization", {"axis": 1}, [x, scale, bias], rtol=1e-6, atol=1e-6)  # the reference stashes float32
    a = {"starts": [1, -1], "ends": [3, -5], "axes": [1, 2], "steps": [1, -2]}
    check("Slice", a, [x] + [np.array(v, np.int64) for v in a.values()], ref_attrs={})


def test_nll_loss_dropout():
    x = rng.uniform(-3, 0, (3, 5, 2))
    t = np.array([[0, 4], [2, 1], [1, 3]], np.int64)
    w = rng.uniform(0.5, 1.5, (5,))
    check("NegativeLogLikelihoodLoss", {"reduction": "none"}, [x, t], rtol=1e-12)
    check("NegativeLogLikelihoodLoss", {"reduction": "mean", "ignore_index": 1}, [x, t, w], rtol=1e-12)
    check("NegativeLogLikelihoodLoss", {"reduction": "sum"}, [x, t, w], rtol=1e-12)
    check("Dropout", {}, [x])


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad(mode):
    x = rng.integers(-9, 9, (3, 4)).astype(np.int64)
    pads = np.array([1, 2, 2, 0], np.int64)
    check("Pad", {"mode": mode, "pads": pads.tolist(), "value": 7}, [x, pads, np.array(7, np.int64)],
          ref_attrs={"mode": mode})


def test_hardmax():
    check("Hardmax", {"axis": -1, "_opset": 13}, [F64], ref_attrs={"axis": -1})


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceProd", "ReduceMean"])
def test_reductions_int64(op):
    x = rng.integers(-3, 4, (2, 3, 4)).astype(np.int64)
    # the axes input is a compile-time constant: the kernel takes it as the attribute
    check(op, {"axes": [1], "keepdims": 1}, [x, np.array([1])], ref_attrs={"keepdims": 1})
    check(op, {"axes": [0, 2], "keepdims": 0}, [x, np.array([0, 2])], ref_attrs={"keepdims": 0})


def test_reductions_float64():
    x = rng.uniform(0.1, 2, (2, 3, 4))
    for op in ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ReduceMin"]:
        check(op, {"axes": [-1], "keepdims": 0}, [x, np.array([-1])], rtol=1e-9, ref_attrs={"keepdims": 0})
    check("ReduceSum", {"keepdims": 1}, [x], rtol=1e-9)  # all axes


def test_gathers():
    data = rng.integers(-100, 100, (4, 5, 3)).astype(np.int64)
    check("Gather", {"axis": 1}, [data, np.array([[0, -1], [2, 4]], np.int64)])
    idx = rng.integers(-5, 5, (4, 2, 3)).astype(np.int64)
    check("GatherElements", {"axis": 1}, [data, idx])
    check("GatherND", {}, [data, np.array([[0, 1], [3, -1]], np.int64)])
    check("GatherND", {"batch_dims": 1}, [data, np.array([[1], [4], [0], [2]], np.int64)])


def test_scatters():
    data = np.zeros((3, 4), np.float64)
    idx = np.array([[1, 0, 3], [2, 2, 0]], np.int64)
    upd = rng.uniform(-1, 1, (2, 3))
    check("ScatterElements", {"axis": 1}, [data, idx, upd])
    check("ScatterElements", {"axis": 1, "reduction": "add"}, [data, idx, upd])
    d3 = rng.integers(0, 9, (4, 2, 2)).astype(np.int64)
    check("ScatterND", {}, [d3, np.array([[0], [2]], np.int64), np.ones((2, 2, 2), np.int64)])
    check("ScatterND", {"reduction": "mul"}, [d3, np.array([[1, 0], [1, 0]], np.int64), np.full((2, 2), 3, np.int64)])


def test_layout():
    a, b = I64, rng.integers(0, 5, (3, 2)).astype(np.int64)
    check("Concat", {"axis": 1}, [a, b])
    check("Transpose", {"perm": [1, 0]}, [a])
    check("Tile", {}, [a, np.array([2, 3], np.int64)])
    check("Split", {"axis": 1}, [a, np.array([1, 3], np.int64)])


def test_generators():
    x = rng.integers(0, 9, (2, 4, 5)).astype(np.int64)
    check("Trilu", {}, [x, np.array(1, np.int64)])
    check("Trilu", {"upper": 0}, [x, np.array(-1, np.int64)])
    check("Range", {}, [np.array(3, np.int64), np.array(20, np.int64), np.array(4, np.int64)])
    check("Range", {}, [np.array(1.0), np.array(-2.0), np.array(-0.5)])
    check("OneHot", {"axis": 1}, [np.array([0, 3, -1], np.int64), np.array(4, np.int64), np.array([0, 7], np.int64)])
    check("ConstantOfShape", {"value": 3}, [np.array([2, 3], np.int64)],
          ref_attrs={"value": np.array([3], np.int64)})


def test_npu_strategy_on_host_in_other_dtypes():
    # the MatMul and Relu strategies refuse float64 and float16 on the npu; the host runs them on float32 copies
    a, b = rng.uniform(-1, 1, (5, 7)), rng.uniform(-1, 1, (7, 3))
    assert "64-bit" in compiler.HasStrategy("MatMul", {}, [S(a.shape, a.dtype), S(b.shape, b.dtype)])
    check("MatMul", {}, [a, b], rtol=1e-5)
    check("Sigmoid", {}, [rng.uniform(-3, 3, (4, 4)).astype(np.float16)], rtol=2e-3)
    check("Gelu", {}, [F64], rtol=1e-5, atol=1e-6)  # erf to 1.5e-7 (Abramowitz-Stegun)


def test_bad_specs_are_named_errors():
    f32 = S((2, 3), "float32")
    assert "no npu strategy and no host kernel for MaxUnpool" in compiler.HasHostKernel("MaxUnpool", {}, [f32])
    assert "integer" in compiler.HasHostKernel("Gather", {}, [f32, f32])
    assert "expected 2 inputs" in compiler.HasHostKernel("GatherElements", {}, [f32])
    assert "do not broadcast" in compiler.HasHostKernel("Add", {}, [f32, S((4,), "float32")])
    i64 = S((2, 3), "int64")
    with pytest.raises(ValueError, match="GatherElements"):
        compiler.LowerHostOp("GatherElements", {}, [f32, S((6,), "int64")], [f32])
    with pytest.raises(ValueError, match="perm"):
        compiler.LowerHostOp("Transpose", {"perm": [0, 0]}, [i64], [i64])
    with pytest.raises(ValueError, match="axis 5 is out of range"):
        compiler.LowerHostOp("ArgMax", {"axis": 5}, [i64], [S((2,), "int64")])
    with pytest.raises(ValueError, match="output 0 is None"):
        compiler.LowerHostOp("Relu", {}, [i64], [None])
    with pytest.raises(ValueError, match="TfIdfVectorizer"):
        compiler.LowerHostOp("TfIdfVectorizer", {}, [f32], [f32])
