"""MatMul and Gemm strategies on 4 simulated TC1 cores against the op library's numpy reference."""
import pytest

from tilecore import compiler
from strategy_util import check_op, rand, run_op


@pytest.mark.parametrize("a,b", [
    ((16, 16), (16, 16)),
    ((7, 13), (13, 5)),              # odd sizes, all partial blocks
    ((130, 260), (260, 129)),        # remainder tiles in M, N and K
    ((2, 3, 33, 17), (17, 40)),      # batched, B broadcast
    ((1, 33, 17), (4, 17, 9)),       # batch broadcast of A
    ((2, 1, 5, 6), (3, 6, 7)),       # both broadcast
    ((17,), (17, 9)),                # 1-D A
    ((4, 9, 17), (17,)),             # 1-D B
])
def test_matmul(a, b):
    check_op("MatMul", {}, [rand(a, 1), rand(b, 2)])


def test_matmul_bigger_than_l1():
    # A alone is 1.5 MiB, more than one core's L1
    err = check_op("MatMul", {}, [rand((600, 640), 1), rand((640, 300), 2)], rtol=1e-4, atol=1e-4)
    assert err < 1e-3


@pytest.mark.parametrize("ta,tb,alpha,beta,cshape", [
    (0, 0, 1.0, 1.0, None),
    (1, 0, 0.5, 1.0, (9,)),
    (0, 1, 1.0, 2.0, (33, 9)),
    (1, 1, 2.0, 0.5, (33, 1)),
    (0, 0, 1.0, 1.0, (1, 1)),
    (0, 1, 1.0, 0.0, (9,)),
])
def test_gemm(ta, tb, alpha, beta, cshape):
    M, K, N = 33, 150, 9
    a = rand((K, M) if ta else (M, K), 1)
    b = rand((N, K) if tb else (K, N), 2)
    inputs = [a, b] + ([rand(cshape, 3)] if cshape else [])
    check_op("Gemm", {"transA": ta, "transB": tb, "alpha": alpha, "beta": beta}, inputs)


def test_gemm_remainders_over_tiles():
    check_op("Gemm", {"transB": 1}, [rand((140, 300), 1), rand((260, 300), 2), rand((260,), 3)], atol=1e-4)


def test_matmul_uses_the_matrix_engine():
    _, _, stats = run_op("MatMul", {}, [rand((64, 64), 1), rand((64, 64), 2)])
    assert stats["cores"][0]["mm"]["busy"] > 0


def test_has_strategy_reasons():
    f64 = compiler.TensorSpec((4, 4), "float64")
    i8 = compiler.TensorSpec((4, 4), "int8")
    f = compiler.TensorSpec((4, 5), "float32")
    assert "64-bit" in compiler.HasStrategy("MatMul", {}, [f64, f64])
    assert "int8" in compiler.HasStrategy("MatMul", {}, [i8, i8])
    assert "inner dimensions" in compiler.HasStrategy("MatMul", {}, [f, f])
    assert "no npu strategy" in compiler.HasStrategy("NoSuchOp", {}, [f])
    with pytest.raises(ValueError, match="inner dimensions"):
        compiler.LowerOp("MatMul", {}, [f, f], [f])
