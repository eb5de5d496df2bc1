"""Matrix and vector-engine commands and DMA from the DSL: PySim vs numpy, plus the
compiled leg (see dsl_agreement.py).

Float tolerances: the vector engine rounds every result once from double, so
elementwise results match a float64 reference rounded to the dtype exactly;
transcendentals may differ by one float32 ulp between libm implementations
(rtol 1e-6); float32 matmuls and sums accumulate in float32 in index order, which
the references reproduce (rtol 1e-6 covers the product rounding of the reference).
"""
import numpy as np
import pytest

from dsl_agreement import LEGS, agree
from tilecore import script as S


def sat(x, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.asarray(x, dtype=np.int64), info.min, info.max).astype(dtype)


# Kernel 18: int8 GEMM tile per core, operands brought in by DMA
@S.prim_func
def gemm_i8(a: S.ptr("int8", "global"), b: S.ptr("int8", "global"), c: S.ptr("int32", "global")):
    cid = S.get_local_id()
    A = S.alloc_buffer((16, 64), "int8")
    B = S.alloc_buffer((64, 32), "int8")
    C = S.alloc_buffer((16, 32), "int32")
    S.dma_copy(A, S.view(a, (64, 64))[cid * 16:cid * 16 + 16, 0:64])
    S.dma_copy(B, b, 64 * 32)
    S.mm(C, A, B)
    S.mm(C, A, B, accumulate=True)
    S.dma_copy(S.view(c, (64, 32))[cid * 16:cid * 16 + 16, 0:32], C)


@pytest.mark.parametrize("leg", LEGS)
def test_mm_int8_accumulate(leg):
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (64, 64)).astype(np.int8)
    b = rng.integers(-128, 128, (64, 32)).astype(np.int8)

    def ref(a, b, c):
        return (2 * (a.astype(np.int64) @ b.astype(np.int64))).astype(np.int32)

    agree(gemm_i8, [a, b, np.zeros((64, 32), np.int32)], ref, [2], leg)


# Kernel 19: float32 matmul with accumulation order k ascending
@S.prim_func(num_cores=1)
def gemm_f32(a: S.ptr("float32", "global"), b: S.ptr("float32", "global"), c: S.ptr("float32", "global")):
    A = S.alloc_buffer((8, 16), "float32")
    B = S.alloc_buffer((16, 8), "float32")
    C = S.alloc_buffer((8, 8), "float32")
    S.dma_copy(A, a, 128)
    S.dma_copy(B, b, 128)
    S.dma_copy(C, c, 64)
    S.mm(C, A, B, accumulate=True)
    S.dma_copy(c, C, 64)


@pytest.mark.parametrize("leg", LEGS)
def test_mm_float32(leg):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((16, 8)).astype(np.float32)
    c = rng.standard_normal((8, 8)).astype(np.float32)

    def ref(a, b, c):
        acc = c.copy()
        for k in range(16):
            acc = (acc + a[:, k:k + 1] * b[k:k + 1, :]).astype(np.float32)
        return acc

    agree(gemm_f32, [a, b, c], ref, [2], leg, (1e-6, 1e-6))


# Kernels 20-21: saturating vector-engine arithmetic with a scalar
def make_tile_arith(dtype):
    @S.prim_func(num_cores=2)
    def tile_arith(a: S.ptr(dtype, "global"), b: S.ptr(dtype, "global"), out: S.ptr(dtype, "global")):
        base = S.get_local_id() * 64
        A = S.alloc_buffer((4, 16), dtype)
        B = S.alloc_buffer((4, 16), dtype)
        D = S.alloc_buffer((4, 16), dtype)
        S.dma_copy(A, a + base, 64)
        S.dma_copy(B, b + base, 64)
        S.tile_add(D, A, B)
        S.tile_muls(D, D, 3)
        S.tile_maxs(D, D, -50)
        S.tile_sub(D[0:2, 0:16], D[0:2, 0:16], B[2:4, 0:16])
        S.dma_copy(out + base, D, 64)

    return tile_arith


@pytest.mark.parametrize("leg", LEGS)
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8"])
def test_tile_arith_saturates(dtype, leg):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(2)
    a = rng.integers(info.min, info.max, 128, endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, 128, endpoint=True).astype(dtype)

    def ref(a, b, out):
        r = np.zeros(128, dtype)
        for c in range(2):
            A = a[c * 64:(c + 1) * 64].astype(np.int64).reshape(4, 16)
            B = b[c * 64:(c + 1) * 64].astype(np.int64).reshape(4, 16)
            D = sat(A + B, dtype).astype(np.int64)
            D = sat(D * 3, dtype).astype(np.int64)
            D = sat(np.maximum(D, max(-50, info.min)), dtype).astype(np.int64)
            D[0:2] = sat(D[0:2] - B[2:4], dtype)
            r[c * 64:(c + 1) * 64] = D.reshape(-1)
        return r

    agree(make_tile_arith(dtype), [a, b, np.zeros(128, dtype)], ref, [2], leg)


# Kernel 22: softmax over rows (vector engine: redmax, sub, exp, redsum, recip, mul)
@S.prim_func
def softmax(x: S.ptr("float32", "global"), y: S.ptr("float32", "global"), rows: S.int32):
    cid = S.get_local_id()
    T = S.alloc_buffer((4, 64), "float32")
    M = S.alloc_buffer((4, 1), "float32")
    per = rows // S.get_local_size()
    for blk in range(cid * per, cid * per + per, 4):
        S.dma_copy(T, x + blk * 64, 256)
        S.tile_redmax(M, T)
        for r in S.static_range(4):
            S.tile_adds(T[r:r + 1, 0:64], T[r:r + 1, 0:64], -M[r, 0])
        S.tile_exp(T, T)
        S.tile_redsum(M, T)
        S.tile_recip(M, M)
        for r in S.static_range(4):
            S.tile_muls(T[r:r + 1, 0:64], T[r:r + 1, 0:64], M[r, 0])
        S.dma_copy(y + blk * 64, T, 256)


@pytest.mark.parametrize("leg", LEGS)
def test_softmax(leg):
    rows = 32
    x = (np.random.default_rng(3).standard_normal((rows, 64)) * 3).astype(np.float32)

    def ref(x, y, rows):
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)

    agree(softmax, [x, np.zeros((rows, 64), np.float32), rows], ref, [1], leg, (1e-5, 1e-7))


# Kernel 23: unary math over tiles (float16 and float32)
def make_unary(dtype):
    @S.prim_func(num_cores=1)
    def tile_math(a: S.ptr(dtype, "global"), out: S.ptr(dtype, "global")):
        A = S.alloc_buffer((7, 32), dtype)
        D = S.alloc_buffer((7, 32), dtype)
        S.dma_copy(A[0:1, 0:32], a, 32)
        S.dma_copy(A[1:7, 0:32], a + 32, 6 * 32)
        S.tile_exp(D[0:1, 0:32], A[0:1, 0:32])
        S.tile_log(D[1:2, 0:32], A[1:2, 0:32])
        S.tile_sqrt(D[2:3, 0:32], A[2:3, 0:32])
        S.tile_rsqrt(D[3:4, 0:32], A[3:4, 0:32])
        S.tile_tanh(D[4:5, 0:32], A[4:5, 0:32])
        S.tile_sigmoid(D[5:6, 0:32], A[5:6, 0:32])
        S.tile_recip(D[6:7, 0:32], A[6:7, 0:32])
        S.dma_copy(out, D, 7 * 32)

    return tile_math


@pytest.mark.parametrize("leg", LEGS)
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_tile_math(dtype, leg):
    a = np.abs(np.random.default_rng(4).standard_normal((7, 32))).astype(dtype) + np.array(0.1, dtype)

    def ref(a, out):
        x = a.astype(np.float64)
        r = np.stack([np.exp(x[0]), np.log(x[1]), np.sqrt(x[2]), 1 / np.sqrt(x[3]), np.tanh(x[4]),
                      1 / (1 + np.exp(-x[5])), 1 / x[6]])
        return r.astype(np.float32).astype(dtype)

    agree(make_unary(dtype), [a, np.zeros((7, 32), dtype)], ref, [1], leg,
          (1e-6, 0) if dtype == "float32" else (1e-3, 0))


# Kernel 24: conversion and requantisation on the vector engine
@S.prim_func(num_cores=1)
def requant(acc: S.ptr("int32", "global"), q: S.ptr("int8", "global"), f: S.ptr("float16", "global")):
    A = S.alloc_buffer((64,), "int32")
    Q = S.alloc_buffer((64,), "int8")
    F = S.alloc_buffer((64,), "float16")
    S.dma_copy(A, acc, 64)
    S.tile_requant(Q, A, 0.0173, -3)
    S.tile_copy(F, A)
    S.dma_copy(q, Q, 64)
    S.dma_copy(f, F, 64)


@pytest.mark.parametrize("leg", LEGS)
def test_tile_requant_and_convert(leg):
    acc = np.random.default_rng(5).integers(-20000, 20000, 64).astype(np.int32)
    acc[:3] = [2**31 - 1, -2**31, 100000]

    def ref(acc, q, f):
        prod = acc.astype(np.float32) * np.float32(0.0173)
        rq = sat(np.rint(prod.astype(np.float64)).astype(np.int64) - 3, "int8")
        return rq, acc.astype(np.float16)

    agree(requant, [acc, np.zeros(64, np.int8), np.zeros(64, np.float16)], ref, [1, 2], leg)


# Kernel 24a: a quantisation in one command (tquant) beside the same three steps
@S.prim_func(num_cores=1)
def quant(x: S.ptr("float32", "global"), q: S.ptr("int8", "global"), u: S.ptr("uint8", "global"),
          q3: S.ptr("int8", "global")):
    A = S.alloc_buffer((64,), "float32")
    Q = S.alloc_buffer((64,), "int8")
    U = S.alloc_buffer((64,), "uint8")
    Q3 = S.alloc_buffer((64,), "int8")
    S.dma_copy(A, x, 64)
    S.tile_quant(Q, A, 25.0, -128)
    S.tile_quant(U, A, 0.5, 3)
    S.tile_muls(A, A, 25.0)
    S.tile_adds(A, A, -128.0)
    S.tile_copy(Q3, A)
    S.dma_copy(q, Q, 64)
    S.dma_copy(u, U, 64)
    S.dma_copy(q3, Q3, 64)


@pytest.mark.parametrize("leg", LEGS)
def test_tile_quant_is_the_three_steps_in_one(leg):
    """f32(f32(x * scale) + zp) converted (half to even, saturated, NaN to 0), by hand in
    numpy's float32, and bit for bit what tile_muls, tile_adds and tile_copy make."""
    x = np.random.default_rng(7).standard_normal(64).astype(np.float32) * 4
    x[:8] = [np.nan, np.inf, -np.inf, 0.1, 0.14, 0.22, 1e30, -0.0]  # 0.1 * 25 + -128 = -125.5: a tie

    def ref(x, q, u, q3):
        def conv(y, lo, hi, dt):
            r = np.where(np.isnan(y), 0.0, np.clip(np.rint(y.astype(np.float64)), lo, hi))
            return r.astype(dt)
        f = np.float32
        with np.errstate(all="ignore"):
            a = (x * f(25.0)).astype(f) + f(-128)
            b = (x * f(0.5)).astype(f) + f(3)
        qa = conv(a, -128, 127, np.int8)
        return qa, conv(b, 0, 255, np.uint8), qa

    agree(quant, [x, np.zeros(64, np.int8), np.zeros(64, np.uint8), np.zeros(64, np.int8)], ref, [1, 2, 3], leg)


# Kernel 24b: a lookup table on the vector engine (an int8 index reads at its byte)
@S.prim_func(num_cores=1)
def lookup(idx: S.ptr("int8", "global"), tab: S.ptr("float32", "global"), out: S.ptr("float32", "global")):
    A = S.alloc_buffer((4, 48), "int8")
    T = S.alloc_buffer((256,), "float32")
    D = S.alloc_buffer((4, 48), "float32")
    S.dma_copy(A, idx, 192)
    S.dma_copy(T, tab, 256)
    S.tile_lut(D, A, T)
    S.dma_copy(out, D, 192)


@pytest.mark.parametrize("leg", LEGS)
def test_tile_lut(leg):
    rng = np.random.default_rng(6)
    idx = rng.integers(-128, 128, (4, 48)).astype(np.int8)
    idx.ravel()[:2] = [-1, -128]
    tab = rng.standard_normal(256).astype(np.float32)

    def ref(idx, tab, out):
        return (tab[(idx.astype(np.int64) + 256) % 256],)

    agree(lookup, [idx, tab, np.zeros((4, 48), np.float32)], ref, [2], leg)


@S.prim_func(num_cores=1)
def lookup_int16_index(x: S.ptr("int16", "global")):
    A = S.alloc_buffer((8,), "int16")
    T = S.alloc_buffer((256,), "int16")
    S.tile_lut(A, A, T)


def test_tile_lut_checks_its_operands():
    with pytest.raises(TypeError, match="tile_lut: `a` must be uint8 or int8, got int16"):
        lookup_int16_index.prim_func  # noqa: B018


# Kernel 25: relu, div, min and reductions of int16 with saturation at the end
@S.prim_func(num_cores=1)
def reduce_i16(a: S.ptr("int16", "global"), out: S.ptr("int16", "global")):
    A = S.alloc_buffer((4, 32), "int16")
    R = S.alloc_buffer((4, 3), "int16")
    S.dma_copy(A, a, 128)
    S.tile_relu(A[3:4, 0:32], A[3:4, 0:32])
    S.tile_redsum(R[0:4, 0:1], A)
    S.tile_redmax(R[0:4, 1:2], A)
    S.tile_redmin(R[0:4, 2:3], A)
    S.dma_copy(out, R, 12)


@pytest.mark.parametrize("leg", LEGS)
def test_tile_reductions(leg):
    a = np.random.default_rng(6).integers(-32768, 32768, (4, 32)).astype(np.int16)
    a[0] = 30000  # the sum saturates

    def ref(a, out):
        x = a.astype(np.int64)
        x[3] = np.maximum(x[3], 0)
        return np.stack([sat(x.sum(1), "int16"), x.max(1), x.min(1)], 1).astype(np.int16)

    agree(reduce_i16, [a, np.zeros((4, 3), np.int16)], ref, [1], leg)


@S.prim_func(num_cores=1)
def divide(a: S.ptr("float32", "global"), b: S.ptr("float32", "global"), out: S.ptr("float32", "global")):
    A = S.alloc_buffer((16,), "float32")
    B = S.alloc_buffer((16,), "float32")
    S.dma_copy(A, a, 16)
    S.dma_copy(B, b, 16)
    S.tile_div(A, A, B)
    S.tile_min(A, A, B)
    S.dma_copy(out, A, 16)


@pytest.mark.parametrize("leg", LEGS)
def test_tile_div_min(leg):
    a = np.linspace(-3, 3, 16).astype(np.float32)
    b = np.linspace(1, 2, 16).astype(np.float32)
    b[0] = 0

    def ref(a, b, out):
        with np.errstate(divide="ignore"):
            q = (a.astype(np.float64) / b).astype(np.float32)
        return np.minimum(q, b)

    agree(divide, [a, b, np.zeros(16, np.float32)], ref, [2], leg, (0, 0))
