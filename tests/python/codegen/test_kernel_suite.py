"""More kernels built with the IRBuilder, each run on the npu target (TC1 code on the
simulator) and on the c target (native), compared with each other and with numpy.

Integers are bit-exact everywhere. Float results of the two targets are compared bit for
bit too (both follow TC1's rules: f32 sums in order, math in double rounded once); against
numpy (float64 or a different summation order) the tolerance is given at each use.
"""
import numpy as np
import pytest

import tilecore
from tilecore import ir

pytestmark = pytest.mark.skipif(tilecore.get_global_func("codegen.build_npu", allow_missing=True) is None,
                                reason="built without TILECORE_ENABLE_NPU: these kernels compare npu with c")

RNG = np.random.default_rng(11)


def run(func, target, *arrays):
    mod = tilecore.build(func, target=target)
    outs = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in arrays]
    mod[func.attrs["global_symbol"]](*outs)
    return outs


def both(func, *arrays, out=-1):
    """Runs on npu (4 cores) and c; asserts the output `out` agrees bit for bit; returns it."""
    npu = run(func, "npu -cores=4", *arrays)
    c = run(func, "c", *arrays)
    np.testing.assert_array_equal(c[out], npu[out], err_msg="c target differs from npu")
    return npu[out]


def view(buf, shape, strides, name):
    """A view Buffer of `buf` (same data) with explicit strides (a transpose or broadcast)."""
    b = buf.buffer if hasattr(buf, "buffer") else buf
    return tilecore.get_global_func("ir.Buffer")(b.data, b.dtype, [ir.const(s) for s in shape],
                                                 [ir.const(s) for s in strides], ir.const(0), b.scope, name, None)


def load_tile(ib, dst, src, event=0):
    ib.call("tile.dma_copy", dst, src, event)
    ib.call("tile.wait", event)


# ---- 1. layernorm over rows (vector engine: reductions, broadcasts, rsqrt) -------------------
def test_layernorm():
    rows, cols, eps = 8, 64, 1e-5
    ib = ir.IRBuilder("layernorm")
    X = ib.buffer_param("X", (rows, cols), "float32")
    Y = ib.buffer_param("Y", (rows, cols), "float32")
    T = ib.allocate("float32", (rows, cols), name="T", scope="local")
    Q = ib.allocate("float32", (rows, cols), name="Q", scope="local")
    S = ib.allocate("float32", (rows, 1), name="S", scope="local")
    load_tile(ib, T[0:rows, 0:cols], X[0:rows, 0:cols])
    ib.call("tile.vec_redsum", S[0:rows, 0:1], T[0:rows, 0:cols])
    ib.call("tile.vec_muls", S[0:rows, 0:1], S[0:rows, 0:1], ir.const(1.0 / cols, "float32"))
    with ib.for_range(0, rows, name="r") as r:
        with ib.for_range(0, cols, name="k") as k:
            T[r, k] = T[r, k] - S[r, 0]
    ib.call("tile.vec_mul", Q[0:rows, 0:cols], T[0:rows, 0:cols], T[0:rows, 0:cols])
    ib.call("tile.vec_redsum", S[0:rows, 0:1], Q[0:rows, 0:cols])
    ib.call("tile.vec_muls", S[0:rows, 0:1], S[0:rows, 0:1], ir.const(1.0 / cols, "float32"))
    ib.call("tile.vec_adds", S[0:rows, 0:1], S[0:rows, 0:1], ir.const(eps, "float32"))
    ib.call("tile.vec_rsqrt", S[0:rows, 0:1], S[0:rows, 0:1])
    with ib.for_range(0, rows, name="r2") as r:
        with ib.for_range(0, cols, name="k2") as k:
            T[r, k] = T[r, k] * S[r, 0]
    load_tile(ib, Y[0:rows, 0:cols], T[0:rows, 0:cols], 1)
    x = RNG.standard_normal((rows, cols)).astype("float32") * 3 + 1
    out = both(ib.get(), x, np.zeros((rows, cols), "float32"))
    x64 = x.astype(np.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + eps)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)  # f32 sums vs float64


# ---- 2. conv2d via im2col (loops) + the int8 GEMM on the matrix engine -----------------------
def test_conv2d_im2col_int8():
    C, H, W, OC, KH, KW = 4, 8, 8, 16, 3, 3
    OH, OW = H - KH + 1, W - KW + 1
    KK, P = C * KH * KW, OH * OW
    ib = ir.IRBuilder("conv2d_i8")
    X = ib.buffer_param("X", (C, H, W), "int8")
    Wt = ib.buffer_param("Wt", (OC, KK), "int8")
    Y = ib.buffer_param("Y", (OC, P), "int32")
    Xl = ib.allocate("int8", (C, H, W), name="Xl", scope="local")
    Wl = ib.allocate("int8", (OC, KK), name="Wl", scope="local")
    Col = ib.allocate("int8", (KK, P), name="Col", scope="local")
    Yl = ib.allocate("int32", (OC, P), name="Yl", scope="local")
    load_tile(ib, Xl[0:C, 0:H, 0:W], X[0:C, 0:H, 0:W], 0)
    load_tile(ib, Wl[0:OC, 0:KK], Wt[0:OC, 0:KK], 1)
    with ib.for_range(0, C, name="c") as c:
        with ib.for_range(0, KH, name="kh") as kh:
            with ib.for_range(0, KW, name="kw") as kw:
                with ib.for_range(0, OH, name="oh") as oh:
                    with ib.for_range(0, OW, name="ow") as ow:
                        Col[c * (KH * KW) + kh * KW + kw, oh * OW + ow] = Xl[c, oh + kh, ow + kw]
    ib.call("tile.mm", Yl[0:OC, 0:P], Wl[0:OC, 0:KK], Col[0:KK, 0:P], False)
    load_tile(ib, Y[0:OC, 0:P], Yl[0:OC, 0:P], 2)
    x = RNG.integers(-128, 128, (C, H, W)).astype("int8")
    w = RNG.integers(-128, 128, (OC, C, KH, KW)).astype("int8")
    out = both(ib.get(), x, w.reshape(OC, KK), np.zeros((OC, P), "int32"))
    ref = np.zeros((OC, OH, OW), np.int64)
    for kh in range(KH):
        for kw in range(KW):
            ref += np.einsum("oc,chw->ohw", w[:, :, kh, kw].astype(np.int64),
                             x[:, kh:kh + OH, kw:kw + OW].astype(np.int64))
    np.testing.assert_array_equal(out, ref.reshape(OC, P).astype(np.int32))


# ---- 3. reductions over rows (vector engine) -------------------------------------------------
@pytest.mark.parametrize("dtype,op", [("int32", "redsum"), ("int16", "redmax"), ("float32", "redsum"),
                                      ("float32", "redmin"), ("uint8", "redmin")])
def test_row_reduction(dtype, op):
    rows, cols = 16, 48
    ib = ir.IRBuilder(f"rowred_{dtype}_{op}")
    X = ib.buffer_param("X", (rows, cols), dtype)
    R = ib.buffer_param("R", (rows, 1), dtype)
    T = ib.allocate(dtype, (rows, cols), name="T", scope="local")
    S = ib.allocate(dtype, (rows, 1), name="S", scope="local")
    load_tile(ib, T[0:rows, 0:cols], X[0:rows, 0:cols])
    ib.call("tile.vec_" + op, S[0:rows, 0:1], T[0:rows, 0:cols])
    load_tile(ib, R[0:rows, 0:1], S[0:rows, 0:1], 1)
    if np.dtype(dtype).kind == "f":
        x = RNG.standard_normal((rows, cols)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = RNG.integers(info.min, info.max, (rows, cols), endpoint=True).astype(dtype)
    out = both(ib.get(), x, np.zeros((rows, 1), dtype))
    fn = {"redsum": np.sum, "redmax": np.max, "redmin": np.min}[op]
    ref = fn(x.astype(np.float64 if dtype == "float32" else np.int64), axis=1, keepdims=True)
    if dtype == "float32":
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)  # f32 accumulation in index order
    else:
        info = np.iinfo(dtype)
        np.testing.assert_array_equal(out, np.clip(ref, info.min, info.max).astype(dtype))  # saturates at the end


# ---- 4. broadcast add (a row vector over a matrix; emitted as tile.vec_add on a view) -----------
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_broadcast_add(dtype):
    rows, cols = 8, 32
    ib = ir.IRBuilder("bcast_add_" + dtype)
    X = ib.buffer_param("X", (rows, cols), dtype)
    B = ib.buffer_param("B", (cols,), dtype)
    Y = ib.buffer_param("Y", (rows, cols), dtype)
    T = ib.allocate(dtype, (rows, cols), name="T", scope="local")
    Bl = ib.allocate(dtype, (cols,), name="Bl", scope="local")
    load_tile(ib, T[0:rows, 0:cols], X[0:rows, 0:cols])
    load_tile(ib, Bl[0:cols], B[0:cols], 1)
    with ib.for_range(0, rows, name="r") as r:
        with ib.for_range(0, cols, name="k") as k:
            T[r, k] = T[r, k] + Bl[k]
    load_tile(ib, Y[0:rows, 0:cols], T[0:rows, 0:cols], 2)
    f = ib.get()
    if dtype == "float32":
        x, b = RNG.standard_normal((rows, cols)).astype(dtype), RNG.standard_normal(cols).astype(dtype)
    else:
        x, b = RNG.integers(-1000, 1000, (rows, cols)).astype(dtype), RNG.integers(-1000, 1000, cols).astype(dtype)
    out = both(f, x, b, np.zeros((rows, cols), dtype))
    np.testing.assert_array_equal(out, x + b)


# ---- 5. 2-D transpose by DMA (a permutation of strides) ---------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_dma_transpose(dtype):
    r, k = 16, 24
    ib = ir.IRBuilder("dma_transpose_" + dtype)
    A = ib.buffer_param("A", (r, k), dtype)
    B = ib.buffer_param("B", (k, r), dtype)
    T = ib.allocate(dtype, (k, r), name="T", scope="local")
    At = view(A, (k, r), (1, k), "A_t")
    load_tile(ib, T[0:k, 0:r], ir.BufferRegion(At, [0, 0], [k, r]))
    load_tile(ib, B[0:k, 0:r], T[0:k, 0:r], 1)
    a = (RNG.standard_normal((r, k)) * 50).astype(dtype)
    out = both(ib.get(), a, np.zeros((k, r), dtype))
    np.testing.assert_array_equal(out, a.T)


# ---- 6. requantize i32 -> i8 / u8 (trequant: f32 product, round to even, saturate) ------------
@pytest.mark.parametrize("dst,scale,zp", [("int8", 0.0123, -3), ("uint8", 0.5, 128), ("int16", 1.5, 7)])
def test_requantize(dst, scale, zp):
    n = 256
    ib = ir.IRBuilder("requant_" + dst)
    A = ib.buffer_param("A", (n,), "int32")
    B = ib.buffer_param("B", (n,), dst)
    T = ib.allocate("int32", (n,), name="T", scope="local")
    U = ib.allocate(dst, (n,), name="U", scope="local")
    load_tile(ib, T[0:n], A[0:n])
    ib.call("tile.vec_requant", U[0:n], T[0:n], ir.const(scale, "float32"), ir.const(zp, "int32"))
    load_tile(ib, B[0:n], U[0:n], 1)
    a = RNG.integers(-30000, 30000, n).astype("int32")
    a[:4] = [1, 2, 3, 5]  # ties at scale 0.5 round to even
    out = both(ib.get(), a, np.zeros(n, dst))
    info = np.iinfo(dst)
    ref = np.clip(np.rint(a.astype(np.float32) * np.float32(scale)).astype(np.int64) + zp, info.min, info.max)
    np.testing.assert_array_equal(out, ref.astype(dst))


# ---- 7. saturating integer arithmetic on the vector engine ------------------------------------
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_vector_engine_saturates(op):
    n = 128
    ib = ir.IRBuilder("vsat_" + op)
    A = ib.buffer_param("A", (n,), "int8")
    B = ib.buffer_param("B", (n,), "int8")
    C = ib.buffer_param("C", (n,), "int8")
    Ta = ib.allocate("int8", (n,), name="Ta", scope="local")
    Tb = ib.allocate("int8", (n,), name="Tb", scope="local")
    load_tile(ib, Ta[0:n], A[0:n])
    load_tile(ib, Tb[0:n], B[0:n], 1)
    ib.call("tile.vec_" + op, Ta[0:n], Ta[0:n], Tb[0:n])
    load_tile(ib, C[0:n], Ta[0:n], 2)
    a, b = RNG.integers(-128, 128, n).astype("int8"), RNG.integers(-128, 128, n).astype("int8")
    out = both(ib.get(), a, b, np.zeros(n, "int8"))
    wide = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a.astype(np.int64), b.astype(np.int64))
    np.testing.assert_array_equal(out, np.clip(wide, -128, 127).astype("int8"))


# ---- 8. SIMD: saturating vadds, lane reductions, predicated select -----------------------------
def test_simd_vadds_and_lane_sum():
    n = 64  # int16: 16 lanes
    ib = ir.IRBuilder("simd_sat")
    A = ib.buffer_param("A", (n,), "int16")
    B = ib.buffer_param("B", (n,), "int16")
    S = ib.buffer_param("S", (n // 16,), "int16")
    with ib.for_range(0, n // 16, name="i") as i:
        idx = ir.ramp(i * 16, 1, 16)
        s = ir.call("tc1.vadds", A[idx], B[idx], dtype="int16x16")
        B[idx] = s
        S[i] = ir.call("tc1.vredsum", s, dtype="int16")
    a = RNG.integers(-32768, 32768, n).astype("int16")
    b = RNG.integers(-32768, 32768, n).astype("int16")
    npu = run(ib.get(), "npu", a, b, np.zeros(n // 16, "int16"))
    c = run(ib.get(), "c", a, b, np.zeros(n // 16, "int16"))
    sat = np.clip(a.astype(np.int64) + b, -32768, 32767)
    np.testing.assert_array_equal(npu[1], sat.astype("int16"))
    np.testing.assert_array_equal(c[1], npu[1])
    again = np.clip(a.astype(np.int64) + sat, -32768, 32767)  # `s` re-reads B, already stored
    np.testing.assert_array_equal(npu[2], again.reshape(-1, 16).sum(1).astype("int16"))  # the lane sum wraps
    np.testing.assert_array_equal(c[2], npu[2])


def test_vectorized_select_max_float():
    n = 80
    ib = ir.IRBuilder("vsel_f32")
    A = ib.buffer_param("A", (n,), "float32")
    B = ib.buffer_param("B", (n,), "float32")
    with ib.for_range(0, n, name="i", kind="vectorized") as i:
        B[i] = ir.Select(A[i] < B[i], ir.max(A[i], 0.5) * 2.0, B[i] - A[i])
    a, b = RNG.standard_normal(n).astype("float32"), RNG.standard_normal(n).astype("float32")
    out = both(ib.get(), a, b)
    ref = np.where(a < b, np.maximum(a, np.float32(0.5)) * np.float32(2), b - a).astype("float32")
    np.testing.assert_array_equal(out, ref)


# ---- 9. matrix engine with floats: f32 accumulation in k order, accumulate flag --------------
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_mm_float_accumulate(dtype):
    M, N, K = 16, 32, 24
    ib = ir.IRBuilder("mm_" + dtype)
    A = ib.buffer_param("A", (M, K), dtype)
    B = ib.buffer_param("B", (K, N), dtype)
    C = ib.buffer_param("C", (M, N), "float32")
    Al = ib.allocate(dtype, (M, K), name="Al", scope="local")
    Bl = ib.allocate(dtype, (K, N), name="Bl", scope="local")
    Cl = ib.allocate("float32", (M, N), name="Cl", scope="local")
    load_tile(ib, Al[0:M, 0:K], A[0:M, 0:K])
    load_tile(ib, Bl[0:K, 0:N], B[0:K, 0:N], 1)
    ib.call("tile.mm", Cl[0:M, 0:N], Al[0:M, 0:K], Bl[0:K, 0:N], False)
    ib.call("tile.mm", Cl[0:M, 0:N], Al[0:M, 0:K], Bl[0:K, 0:N], True)  # doubles it
    load_tile(ib, C[0:M, 0:N], Cl[0:M, 0:N], 2)
    a, b = RNG.standard_normal((M, K)).astype(dtype), RNG.standard_normal((K, N)).astype(dtype)
    out = both(ib.get(), a, b, np.zeros((M, N), "float32"))
    np.testing.assert_allclose(out, 2 * (a.astype(np.float64) @ b.astype(np.float64)), rtol=1e-4, atol=1e-4)


# ---- 10. DMA fill and casting DMA, math on f16 --------------------------------------------------
def test_dma_fill_cast_and_f16_math():
    n = 64
    ib = ir.IRBuilder("fill_cast")
    A = ib.buffer_param("A", (n,), "float32")
    B = ib.buffer_param("B", (2 * n,), "float16")
    T = ib.allocate("float16", (2 * n,), name="T", scope="local")
    ib.call("tile.dma_fill", T[0:2 * n], ir.const(0.1, "float32"), 0)
    ib.call("tile.wait", 0)
    load_tile(ib, T[0:n], A[0:n], 1)  # f32 -> f16 on the way in
    ib.call("tile.vec_tanh", T[0:n], T[0:n])
    load_tile(ib, B[0:2 * n], T[0:2 * n], 2)
    a = RNG.standard_normal(n).astype("float32") * 2
    out = both(ib.get(), a, np.zeros(2 * n, "float16"))
    np.testing.assert_array_equal(out[n:], np.full(n, 0.1, np.float16))
    np.testing.assert_allclose(out[:n].astype(np.float32), np.tanh(a.astype(np.float16).astype(np.float64)),
                               rtol=1e-3, atol=1e-3)  # one f16 rounding


# ---- 11. cores and barriers --------------------------------------------------------------------
def test_barrier_reduction_4_cores():
    """Each core sums its quarter into a shared slot; after the barrier core 0 adds the slots.
    On the c target the cores are threads and the barrier a real one."""
    n = 1024
    ib = ir.IRBuilder("barrier_sum")
    A = ib.buffer_param("A", (n,), "int32")
    Out = ib.buffer_param("Out", (1,), "int32")
    P = ib.allocate("int32", (4,), name="P", scope="shared")
    with ib.for_range(0, 4, name="c", kind="cores") as c:
        T = ib.allocate("int32", (256,), name="T", scope="local")
        S = ib.allocate("int32", (1,), name="S", scope="local")
        ib.call("tile.dma_copy", T[0:256], A[c * 256:c * 256 + 256], 0)
        ib.call("tile.wait", 0)
        S[0] = 0
        with ib.for_range(0, 256, name="i") as i:
            S[0] = S[0] + T[i]
        P[c] = S[0]
        ib.call("tir.barrier")
        with ib.if_scope(ir.eq(c, 0)):
            Out[0] = P[0] + P[1] + P[2] + P[3]
    a = RNG.integers(-2 ** 31, 2 ** 31, n).astype("int32")
    out = both(ib.get(), a, np.zeros(1, "int32"))
    assert out[0] == np.int32(a.astype(np.int64).sum() & 0xFFFFFFFF)


def test_ring_exchange_two_barriers():
    """Each core reads its neighbour's slot between two barriers and overwrites its own after
    the second: wrong without a real barrier when cores run one after another."""
    ib = ir.IRBuilder("ring")
    A = ib.buffer_param("A", (4,), "int32")
    B = ib.buffer_param("B", (4,), "int32")
    R = ib.allocate("int32", (4,), name="R", scope="shared")
    with ib.for_range(0, 4, name="c", kind="cores") as c:
        V = ib.allocate("int32", (1,), name="V", scope="local")
        R[c] = A[c]
        ib.call("tir.barrier")
        V[0] = R[(c + 1) % 4]
        ib.call("tir.barrier")
        R[c] = V[0] * 10
        B[c] = R[c] + ir.call("tir.core_id", dtype="int32") * 1000 + ir.call("tir.num_cores", dtype="int32")
    a = np.array([1, 2, 3, 4], "int32")
    out = both(ib.get(), a, np.zeros(4, "int32"))
    np.testing.assert_array_equal(out, np.roll(a, -1) * 10 + np.arange(4) * 1000 + 4)


def test_gemm_i8_tiles_on_cores_with_accumulate():
    """C = A x B with K split in two halves accumulated by mma on each of 4 cores (wrapping i32)."""
    M, N, K = 64, 32, 64
    MC, KH = M // 4, K // 2
    ib = ir.IRBuilder("gemm_i8_acc")
    A = ib.buffer_param("A", (M, K), "int8")
    B = ib.buffer_param("B", (K, N), "int8")
    C = ib.buffer_param("C", (M, N), "int32")
    with ib.for_range(0, 4, name="c", kind="cores") as c:
        Al = ib.allocate("int8", (MC, K), name="Al")
        Bl = ib.allocate("int8", (K, N), name="Bl")
        Cl = ib.allocate("int32", (MC, N), name="Cl")
        ib.call("tile.dma_copy", Al[0:MC, 0:K], A[c * MC:c * MC + MC, 0:K], 0)
        ib.call("tile.dma_copy", Bl[0:K, 0:N], B[0:K, 0:N], 1)
        ib.call("tile.wait", 0)
        ib.call("tile.wait", 1)
        ib.call("tile.mm", Cl[0:MC, 0:N], Al[0:MC, 0:KH], Bl[0:KH, 0:N], False)
        ib.call("tile.mm", Cl[0:MC, 0:N], Al[0:MC, KH:K], Bl[KH:K, 0:N], True)
        ib.call("tile.dma_copy", C[c * MC:c * MC + MC, 0:N], Cl[0:MC, 0:N], 2)
        ib.call("tile.wait", 2)
    a = np.full((M, K), 127, "int8")
    a[1::2] = -128
    b = RNG.integers(-128, 128, (K, N)).astype("int8")
    out = both(ib.get(), a, b, np.zeros((M, N), "int32"))
    np.testing.assert_array_equal(out, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32))
