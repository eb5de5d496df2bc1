"""Element-wise strategies (broadcasting binary ops, unary activations, Cast, Where,
copies) on 4 simulated TC1 cores against the op library's numpy reference."""
import numpy as np
import pytest

from tilecore import compiler
from strategy_util import check_op, rand, run_op

SHAPES = [
    ((5,), (5,)),
    ((3, 7, 11), (3, 7, 11)),        # odd sizes
    ((4, 17), (17,)),                # row broadcast
    ((4, 1, 6), (1, 5, 1)),          # both broadcast
    ((40000,), ()),                  # scalar, remainder tile over several tiles
]


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("a,b", SHAPES)
def test_binary(op, a, b):
    x, y = rand(a, 1), rand(b, 2)
    if op == "Div":
        y = np.where(np.abs(y) < 0.25, 0.5, y).astype(np.float32)
    check_op(op, {}, [x, y], rtol=1e-5, atol=1e-6)


def test_binary_int32():
    check_op("Add", {}, [rand((9, 13), 1, -50, 50, np.int32), rand((13,), 2, -50, 50, np.int32)])
    check_op("Mul", {}, [rand((9, 13), 1, -50, 50, np.int32), rand((9, 13), 2, -50, 50, np.int32)])


def test_pow():
    a = rand((6, 7), 1, 0.1, 3.0)
    check_op("Pow", {}, [a, rand((7,), 2, -2, 2)], rtol=1e-4)
    neg = np.array([-2.0, -3.0, -1.5, 0.0, 2.0], np.float32)
    check_op("Pow", {}, [neg, np.array([2.0, 3.0, 2.0, 2.0, 0.5], np.float32)], rtol=1e-4)


def test_bigger_than_l1():
    # 3 x 1.2 MiB of f32: more than one core's L1 per input
    check_op("Add", {}, [rand((300000,), 1), rand((300000,), 2)])


UNARY = [
    ("Relu", {}, (-3, 3)), ("LeakyRelu", {"alpha": 0.1}, (-3, 3)), ("Sigmoid", {}, (-8, 8)),
    ("Tanh", {}, (-4, 4)), ("Exp", {}, (-5, 5)), ("Log", {}, (0.01, 10)), ("Sqrt", {}, (0, 10)),
    ("Reciprocal", {}, (0.5, 4)), ("Neg", {}, (-3, 3)), ("Abs", {}, (-3, 3)), ("Erf", {}, (-3, 3)),
    ("Gelu", {}, (-4, 4)), ("Gelu", {"approximate": "tanh"}, (-4, 4)),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, (-4, 4)), ("HardSwish", {}, (-5, 5)),
    ("Elu", {"alpha": 0.7}, (-3, 3)), ("Selu", {}, (-3, 3)), ("Softplus", {}, (-10, 10)),
    ("Softsign", {}, (-3, 3)), ("ThresholdedRelu", {"alpha": 0.5}, (-2, 2)), ("Sign", {}, (-2, 2)),
]


@pytest.mark.parametrize("op,attrs,rng", UNARY, ids=[f"{u[0]}{i}" for i, u in enumerate(UNARY)])
@pytest.mark.parametrize("shape", [(7,), (3, 5, 33)])
def test_unary(op, attrs, rng, shape):
    err = check_op(op, attrs, [rand(shape, 3, *rng)], rtol=2e-5, atol=2e-6)
    assert err < 1e-4


def test_unary_remainder_tile():
    check_op("Sigmoid", {}, [rand((20001,), 4, -6, 6)], rtol=2e-5, atol=2e-6)


def test_clip_and_prelu():
    x = rand((4, 10), 1)
    check_op("Clip", {}, [x, np.array(-0.5, np.float32), np.array(1.0, np.float32)])
    check_op("Clip", {}, [x, None, np.array(1.0, np.float32)])
    check_op("PRelu", {}, [x, rand((10,), 2, 0, 1)])


def test_clip_runs_on_the_vector_engine():
    # ReLU6 (MobileNet's activation) as two vector commands per tile, not a scalar loop:
    # about as fast as Relu, with bounds as inputs or as attributes

    x = rand((8, 64, 32), 5, -10, 10)
    _, _, relu = run_op("Relu", {}, [x])
    for attrs, ins in (({}, [x, np.array(0, np.float32), np.array(6, np.float32)]), ({"min": 0.0, "max": 6.0}, [x])):
        outs, refs, st = run_op("Clip", attrs, ins)
        np.testing.assert_array_equal(outs[0], np.clip(x, 0, 6))
        assert st["cycles"] < 2 * relu["cycles"], (st["cycles"], relu["cycles"])


@pytest.mark.parametrize("attrs", [{}, {"approximate": "tanh"}])
def test_gelu_runs_as_vector_passes(attrs):
    # BERT's activation: one vector command per pass, not a scalar polynomial per element

    x = rand((64, 300), 6, -6, 6)  # a remainder tile too (19200 elements)
    _, _, relu = run_op("Relu", {}, [x])
    outs, refs, st = run_op("Gelu", attrs, [x])
    np.testing.assert_allclose(outs[0], refs[0], rtol=1e-5, atol=2e-6)
    assert st["cycles"] < 6 * relu["cycles"], (st["cycles"], relu["cycles"])


def test_where_cast_compare():
    c = rand((4, 6), 1) > 0
    check_op("Where", {}, [c, rand((4, 6), 2), rand((6,), 3)])
    check_op("Cast", {"to": 6}, [rand((5, 7), 1, -100, 100)])               # f32 -> i32
    check_op("Cast", {"to": 1}, [rand((5, 7), 1, -100, 100, np.int32)])     # i32 -> f32
    check_op("Less", {}, [rand((3, 5), 1), rand((5,), 2)])


def test_variadic():
    xs = [rand((3, 4), 1), rand((4,), 2), rand((3, 1), 3)]
    for op in ("Sum", "Mean", "Max", "Min"):
        check_op(op, {}, xs)


def test_copies():
    x = rand((2, 3, 5), 1)
    check_op("Reshape", {}, [x, np.array([6, 5], np.int64)], out_shapes=[(6, 5)])
    check_op("Flatten", {"axis": 1}, [x])
    check_op("Expand", {}, [rand((3, 1), 2), np.array([2, 3, 4], np.int64)])


def test_reasons():
    f64 = compiler.TensorSpec((4,), "float64")
    assert "64-bit" in compiler.HasStrategy("Add", {}, [f64, f64])
    big = compiler.TensorSpec((4096, 4096), "float32")
    small = compiler.TensorSpec((1, 4096, 4096), "float32")
    assert compiler.HasStrategy("Add", {}, [big, small]) == ""
    row = compiler.TensorSpec((3, 1, 4096 * 32), "float32")
    assert "exceed" in compiler.HasStrategy("Add", {}, [row, compiler.TensorSpec((1, 2, 1), "float32")])
    assert "broadcast" in compiler.HasStrategy("Add", {}, [compiler.TensorSpec((3,), "float32"),
                                                           compiler.TensorSpec((4,), "float32")])
