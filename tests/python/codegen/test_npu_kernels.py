"""Kernels built with the IRBuilder, compiled for the npu target (TC1 code on the
simulator) and for the c target (native), and compared with numpy (integers bit-exact)."""
import numpy as np
import pytest

import tilecore
from tilecore import ir

pytestmark = pytest.mark.skipif(tilecore.get_global_func("codegen.build_npu", allow_missing=True) is None,
                                reason="built without TILECORE_ENABLE_NPU")

RNG = np.random.default_rng(7)


def run(func, target, *arrays):
    mod = tilecore.build(func, target=target)
    outs = [np.array(a, copy=True) for a in arrays]
    mod[func.attrs["global_symbol"]](*outs)
    return outs


def both(func, *arrays):
    """Runs on npu and c; returns (npu outputs, c outputs)."""
    return run(func, "npu -cores=4", *arrays), run(func, "c", *arrays)


def rand(shape, dtype):
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -1000), min(info.max, 1000) + 1, shape).astype(dtype)


# ---- element-wise, scalar code ---------------------------------------------------------------
INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_elementwise_int(dtype):
    n = 64
    ib = ir.IRBuilder("ew_" + dtype)
    A = ib.buffer_param("A", (n,), dtype)
    B = ib.buffer_param("B", (n,), dtype)
    C = ib.buffer_param("C", (n,), dtype)
    with ib.for_range(0, n, name="i") as i:
        C[i] = ir.Max(A[i] * B[i] + A[i] - B[i], ir.Min(A[i], B[i]))
    f = ib.get()
    a, b = rand(n, dtype), rand(n, dtype)
    npu, c = both(f, a, b, np.zeros(n, dtype))
    np.testing.assert_array_equal(npu[2], c[2])
    wide = a.astype(np.int64) * b + a - b
    ref = np.maximum(wide.astype(dtype), np.minimum(a, b))  # wraps like the IR
    np.testing.assert_array_equal(npu[2], ref)


def test_floor_division_of_a_non_negative_index_is_the_plain_one():
    # i // 3 and i % 3 over i in [0, 30) are the truncating div and rem; a // 3 and a % 3
    # of a loaded value (of unknown sign) keep the sign corrections (an xor each): numpy's
    # floor semantics either way
    n = 30
    ib = ir.IRBuilder("floor_index")
    A = ib.buffer_param("A", (n,), "int32")
    Q = ib.buffer_param("Q", (n, 4), "int32")
    with ib.for_range(0, n, name="i") as i:
        Q[i, 0] = ir.FloorDiv(i, 3)
        Q[i, 1] = ir.FloorMod(i, 3)
        Q[i, 2] = ir.FloorDiv(A[i], 3)
        Q[i, 3] = ir.FloorMod(A[i], 3)
    f = ib.get()
    a = np.arange(n, dtype=np.int32) - 7
    npu, c = both(f, a, np.zeros((n, 4), "int32"))
    i = np.arange(n)
    want = np.stack([i // 3, i % 3, a // 3, a % 3], axis=1).astype(np.int32)
    np.testing.assert_array_equal(npu[1], want)
    np.testing.assert_array_equal(c[1], want)
    ops = [ln.split()[0] for ln in tilecore.build(f, target="npu").get_source().splitlines() if ln.startswith(" ")]
    assert ops.count("xor") == 2, ops


def test_floor_division_of_an_index_whose_count_is_known_at_run_time_is_the_plain_one():
    # a loop from 0 over a count known at run time, at most n (a core's share of the items):
    # its index is in [0, n), so (i + 5) // 3 and (i + 5) % 3 are the truncating div and rem,
    # no sign correction; numpy's values over the iterations that run, the rest untouched
    n = 30
    ib = ir.IRBuilder("floor_runtime_count")
    N = ib.buffer_param("N", (1,), "int32")
    Q = ib.buffer_param("Q", (n, 2), "int32")
    with ib.for_range(0, ir.Min(N[0], n), name="i") as i:
        Q[i, 0] = ir.FloorDiv(i + 5, 3)
        Q[i, 1] = ir.FloorMod(i + 5, 3)
    f = ib.get()
    count = np.array([20], np.int32)
    npu, c = both(f, count, np.full((n, 2), -1, "int32"))
    want = np.full((n, 2), -1, np.int32)
    i = np.arange(20)
    want[:20] = np.stack([(i + 5) // 3, (i + 5) % 3], axis=1)
    np.testing.assert_array_equal(npu[1], want)
    np.testing.assert_array_equal(c[1], want)
    ops = [ln.split()[0] for ln in tilecore.build(f, target="npu").get_source().splitlines() if ln.startswith(" ")]
    assert "xor" not in ops and ops.count("div") == 1 and ops.count("rem") == 1, ops


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_elementwise_float(dtype):
    n = 48
    ib = ir.IRBuilder("ewf_" + dtype.replace("float", "f"))
    A = ib.buffer_param("A", (n,), dtype)
    B = ib.buffer_param("B", (n,), dtype)
    C = ib.buffer_param("C", (n,), dtype)
    with ib.for_range(0, n, name="i") as i:
        C[i] = A[i] * B[i]
    f = ib.get()
    a, b = rand(n, dtype), rand(n, dtype)
    npu, c = both(f, a, b, np.zeros(n, dtype))
    np.testing.assert_array_equal(npu[2], c[2])
    np.testing.assert_array_equal(npu[2], (a * b).astype(dtype))


def test_float_div_and_compare():
    n = 32
    ib = ir.IRBuilder("fdiv")
    A = ib.buffer_param("A", (n,), "float32")
    B = ib.buffer_param("B", (n,), "float32")
    C = ib.buffer_param("C", (n,), "float32")
    with ib.for_range(0, n, name="i") as i:
        C[i] = ir.Select(A[i] < B[i], A[i] / B[i], B[i] - A[i])
    f = ib.get()
    a, b = rand(n, "float32"), rand(n, "float32")
    npu, c = both(f, a, b, np.zeros(n, "float32"))
    ref = np.where(a < b, a / b, b - a).astype("float32")
    np.testing.assert_array_equal(npu[2], ref)
    np.testing.assert_array_equal(c[2], ref)


@pytest.mark.parametrize("src,dst", [("int32", "int8"), ("int32", "float32"), ("float32", "int16"),
                                     ("float32", "float16"), ("uint8", "int32"), ("int16", "uint8")])
def test_cast(src, dst):
    n = 40
    ib = ir.IRBuilder(f"cast_{src}_{dst}")
    A = ib.buffer_param("A", (n,), src)
    B = ib.buffer_param("B", (n,), dst)
    with ib.for_range(0, n, name="i") as i:
        B[i] = ir.Cast(dst, A[i])
    a = rand(n, src) * (np.asarray(300, dtype=src) if np.dtype(src).kind == "f" else 1)
    npu, c = both(ib.get(), a.astype(src), np.zeros(n, dst))
    np.testing.assert_array_equal(npu[1], c[1])


def test_floordiv_mod_select():
    n = 64
    ib = ir.IRBuilder("idx_math")
    A = ib.buffer_param("A", (n,), "int32")
    B = ib.buffer_param("B", (n,), "int32")
    with ib.for_range(0, n, name="i") as i:
        B[i] = A[i] // 7 + A[i] % 5 * 3 + ir.Select(A[i] > 0, A[i] // 4, A[i] % 8)
    a = RNG.integers(-500, 500, n).astype("int32")
    npu, c = both(ib.get(), a, np.zeros(n, "int32"))
    ref = a // 7 + a % 5 * 3 + np.where(a > 0, a // 4, a % 8)
    np.testing.assert_array_equal(npu[1], ref)
    np.testing.assert_array_equal(c[1], ref)


def test_scalar_params_and_while():
    ib = ir.IRBuilder("collatz")
    n = ib.scalar_param("n", "int32")
    Out = ib.buffer_param("Out", (1,), "int32")
    Out[0] = 0
    x = ib.allocate("int32", (1,), name="x", scope="local")
    x[0] = n
    with ib.while_loop(x[0].ne(1)):
        with ib.if_scope((x[0] % 2).eq(0)):
            x[0] = x[0] // 2
        with ib.else_scope():
            x[0] = x[0] * 3 + 1
        Out[0] = Out[0] + 1
    f = ib.get()
    for target in ("npu", "c"):
        out = np.zeros(1, "int32")
        tilecore.build(f, target=target)["collatz"](27, out)
        assert out[0] == 111


def test_reduction_scalar():
    n = 100
    ib = ir.IRBuilder("sum_max")
    A = ib.buffer_param("A", (n,), "int32")
    Out = ib.buffer_param("Out", (2,), "int32")
    Out[0] = 0
    Out[1] = -2 ** 31
    with ib.for_range(0, n, name="i") as i:
        Out[0] = Out[0] + A[i]
        Out[1] = ir.Max(Out[1], A[i])
    a = rand(n, "int32")
    npu, c = both(ib.get(), a, np.zeros(2, "int32"))
    np.testing.assert_array_equal(npu[1], [a.sum(), a.max()])
    np.testing.assert_array_equal(c[1], npu[1])


def test_transpose_scalar():
    r, k = 12, 20
    ib = ir.IRBuilder("transpose")
    A = ib.buffer_param("A", (r, k), "int16")
    B = ib.buffer_param("B", (k, r), "int16")
    with ib.for_range(0, r, name="i") as i:
        with ib.for_range(0, k, name="j") as j:
            B[j, i] = A[i, j]
    a = rand((r, k), "int16")
    npu, c = both(ib.get(), a, np.zeros((k, r), "int16"))
    np.testing.assert_array_equal(npu[1], a.T)
    np.testing.assert_array_equal(c[1], a.T)


def test_multicore_loop():
    n = 256
    ib = ir.IRBuilder("mc_scale")
    A = ib.buffer_param("A", (n,), "int32")
    B = ib.buffer_param("B", (n,), "int32")
    with ib.for_range(0, 4, name="c", kind="cores") as c:
        with ib.for_range(0, n // 4, name="i") as i:
            B[c * 64 + i] = A[c * 64 + i] * 2 + c
    a = rand(n, "int32")
    npu, cc = both(ib.get(), a, np.zeros(n, "int32"))
    ref = a * 2 + np.repeat(np.arange(4), 64)
    np.testing.assert_array_equal(npu[1], ref)
    np.testing.assert_array_equal(cc[1], ref)


def test_core_id_outside_loop_runs_once():
    ib = ir.IRBuilder("once")
    Out = ib.buffer_param("Out", (5,), "int32")
    Out[4] = Out[4] + 1  # outside the cores loop: core 0 only
    with ib.for_range(0, 4, name="c", kind="cores") as c:
        Out[c] = c + 10
    npu, cc = both(ib.get(), np.zeros(5, "int32"))
    np.testing.assert_array_equal(npu[0], [10, 11, 12, 13, 1])
    np.testing.assert_array_equal(cc[0], npu[0])


def test_vectorized_loop_simd():
    n = 64
    ib = ir.IRBuilder("vec_axpy")
    A = ib.buffer_param("A", (n,), "int32")
    B = ib.buffer_param("B", (n,), "int32")
    with ib.for_range(0, n, name="i", kind="vectorized") as i:
        B[i] = A[i] * 3 + B[i]
    a, b = rand(n, "int32"), rand(n, "int32")
    npu, c = both(ib.get(), a, b)
    np.testing.assert_array_equal(npu[1], a * 3 + b)
    np.testing.assert_array_equal(c[1], npu[1])
    src = tilecore.build(ib.get(), target="npu").get_source()
    assert "vmul.i32" in src and "vld" in src


# ---- DMA and tile commands (the c target runs them synchronously with TC1's numerics) ----------
def _local_roundtrip(name, n, dtype, body):
    ib = ir.IRBuilder(name)
    A = ib.buffer_param("A", (n,), dtype)
    B = ib.buffer_param("B", (n,), dtype)
    T = ib.allocate(dtype, (n,), name="T", scope="local")
    U = ib.allocate(dtype, (n,), name="U", scope="local")
    ib.call("tile.dma_copy", T[0:n], A[0:n], 0)
    ib.call("tile.wait", 0)
    body(ib, T, U, n)
    ib.call("tile.dma_copy", B[0:n], U[0:n], 1)
    ib.call("tile.wait", 1)
    return ib.get()


@pytest.mark.parametrize("op,ref", [("tile.vec_exp", np.exp), ("tile.vec_relu", lambda x: np.maximum(x, 0)),
                                    ("tile.vec_sqrt", lambda x: np.sqrt(np.abs(x)))])
def test_vector_engine_unary(op, ref):
    def body(ib, T, U, n):
        if op == "tile.vec_sqrt":
            ib.call("tile.vec_max", T[0:n], T[0:n], T[0:n])
        ib.call(op, U[0:n], T[0:n])
    f = _local_roundtrip("vu_" + op.split("_")[-1], 256, "float32", body)
    a = rand(256, "float32")
    if op == "tile.vec_sqrt":
        a = np.abs(a)
    npu, c = both(f, a, np.zeros(256, "float32"))
    np.testing.assert_array_equal(c[1], npu[1])  # both compute in double and round once
    np.testing.assert_allclose(npu[1], ref(a).astype("float32"), rtol=1e-6)


def test_vector_engine_binary_and_scalar():
    def body(ib, T, U, n):
        ib.call("tile.vec_muls", U[0:n], T[0:n], ir.const(0.5, "float32"))
        ib.call("tile.vec_add", U[0:n], U[0:n], T[0:n])
    f = _local_roundtrip("vb", 512, "float32", body)
    a = rand(512, "float32")
    npu, c = both(f, a, np.zeros(512, "float32"))
    np.testing.assert_array_equal(npu[1], (a * np.float32(0.5) + a).astype("float32"))
    np.testing.assert_array_equal(c[1], npu[1])


@pytest.mark.parametrize("index,out", [("uint8", "float32"), ("int8", "int16"), ("int8", "int8")])
def test_vector_engine_lookup_table(index, out):
    # d = table[a]: an int8 index reads the table at its byte (-1 -> 255)
    n = 1000
    ib = ir.IRBuilder(f"lut_{index}_{out}")
    A = ib.buffer_param("A", (n,), index)
    Tab = ib.buffer_param("Tab", (256,), out)
    B = ib.buffer_param("B", (n,), out)
    Ta = ib.allocate(index, (n,), name="Ta", scope="local")
    Tt = ib.allocate(out, (256,), name="Tt", scope="local")
    Tb = ib.allocate(out, (n,), name="Tb", scope="local")
    ib.call("tile.dma_copy", Ta[0:n], A[0:n], 0)
    ib.call("tile.dma_copy", Tt[0:256], Tab[0:256], 0)
    ib.call("tile.wait", 0)
    ib.call("tile.vec_lut", Tb[0:n], Ta[0:n], Tt[0:256])
    ib.call("tile.dma_copy", B[0:n], Tb[0:n], 1)
    ib.call("tile.wait", 1)
    f = ib.get()
    a = RNG.integers(np.iinfo(index).min, np.iinfo(index).max + 1, n).astype(index)
    table = rand(256, out)
    npu, c = both(f, a, table, np.zeros(n, out))
    want = table[a.view(np.uint8)]
    np.testing.assert_array_equal(npu[2], want)
    np.testing.assert_array_equal(c[2], want)


def test_constant_stores_into_l1_are_written_32_bytes_at_a_time():
    # a table filled element by element with constants (a lookup table's 64 words): whole
    # aligned 32-byte chunks come from the data segment (vld, vst), the rest as stores
    ib = ir.IRBuilder("const_table")
    W = ib.buffer_param("W", (64,), "int32")
    H = ib.buffer_param("H", (37,), "int8")
    Tw = ib.allocate("int32", (64,), name="Tw", scope="local")
    Th = ib.allocate("int8", (37,), name="Th", scope="local")
    words = RNG.integers(-2**31, 2**31, 64).astype("int32")
    small = RNG.integers(-128, 128, 37).astype("int8")
    for k, v in enumerate(words):
        Tw[k] = ir.const(int(v), "int32")
    for k, v in enumerate(small):
        Th[k] = ir.const(int(v), "int8")
    ib.call("tile.dma_copy", W[0:64], Tw[0:64], 0)
    ib.call("tile.dma_copy", H[0:37], Th[0:37], 0)
    ib.call("tile.wait", 0)
    f = ib.get()
    npu, c = both(f, np.zeros(64, "int32"), np.zeros(37, "int8"))
    np.testing.assert_array_equal(npu[0], words)
    np.testing.assert_array_equal(npu[1], small)
    np.testing.assert_array_equal(c[0], words)
    ops = [ln.split()[0] for ln in tilecore.build(f, target="npu").get_source().splitlines()
           if ln.startswith(" ") and not ln.strip().startswith((".", "#"))]
    # (the kernel's own zeroed words, stored before, join the int32 run)
    assert ops.count("vst.i32") >= 8 and ops.count("vst.i8") == 1
    assert ops.count("li") <= 4 + 5 and ops.count("sb") == 5  # the int8 table's last 5 bytes


def test_buffers_reusing_memory_wait_once_for_what_used_it():
    # B0..B2 each take part of A's memory, which the vector engine used: the DMA-in queue
    # waits once for the vector engine's commands before their loads, not once a buffer
    # (no vector command issued between); checked in the simulator's hazard mode
    from tilecore import runtime

    n = 16384  # 64 KiB of f32
    ib = ir.IRBuilder("reuse_waits")
    X = ib.buffer_param("X", (3 * n,), "float32")
    Y = ib.buffer_param("Y", (3 * n,), "float32")
    with ib.for_range(0, 1, name="first"):
        A = ib.allocate("float32", (3 * n,), name="A", scope="local")
        ib.call("tile.dma_copy", A[0:3 * n], X[0:3 * n], 0)
        ib.call("tile.wait", 0)
        ib.call("tile.vec_add", A[0:3 * n], A[0:3 * n], A[0:3 * n])
        ib.call("tile.dma_copy", Y[0:3 * n], A[0:3 * n], 1)
        ib.call("tile.wait", 1)
    with ib.for_range(0, 1, name="second"):
        bufs = [ib.allocate("float32", (n,), name=f"B{k}", scope="local") for k in range(3)]
        for k, B in enumerate(bufs):
            ib.call("tile.dma_copy", B[0:n], Y[k * n:(k + 1) * n], 0)
        ib.call("tile.wait", 0)
        for k, B in enumerate(bufs):
            ib.call("tile.vec_add", B[0:n], B[0:n], B[0:n])
            ib.call("tile.dma_copy", Y[k * n:(k + 1) * n], B[0:n], 1)
        ib.call("tile.wait", 1)
    f = ib.get()
    src = tilecore.build(f, target="npu").get_source()
    assert src.count("wait din, vec, x30") == 1
    x = rand(3 * n, "float32")
    runtime.npu_configure(0, "npu -cores=4 -mode=hazard")
    try:
        npu, c = both(f, x, np.zeros(3 * n, "float32"))
        hazards = [h["message"] for h in runtime.npu_simulator(0).hazards() if h["space"] != "ddr"]
    finally:
        runtime.npu_configure(0, "npu -cores=4")
    assert hazards == []
    np.testing.assert_array_equal(npu[1], x * np.float32(4))
    np.testing.assert_array_equal(c[1], npu[1])


def test_vector_engine_lookup_table_checks_its_operands():
    ib = ir.IRBuilder("lut_bad")
    A = ib.allocate("int16", (8,), name="A", scope="local")
    T = ib.allocate("int8", (256,), name="T", scope="local")
    with pytest.raises(TypeError, match="index a must be uint8 or int8"):
        ib.call("tile.vec_lut", T[0:8], A[0:8], T[0:256])
    B = ib.allocate("int8", (8,), name="B", scope="local")
    F = ib.allocate("float32", (256,), name="F", scope="local")
    with pytest.raises(TypeError, match="table's dtype"):
        ib.call("tile.vec_lut", B[0:8], B[0:8], F[0:256])


def test_vector_engine_lookup_table_of_the_wrong_size_is_refused():
    ib = ir.IRBuilder("lut_short")
    A = ib.buffer_param("A", (8,), "int8")
    Ta = ib.allocate("int8", (8,), name="Ta", scope="local")
    Tt = ib.allocate("int8", (128,), name="Tt", scope="local")
    ib.call("tile.dma_copy", Ta[0:8], A[0:8], 0)
    ib.call("tile.wait", 0)
    ib.call("tile.vec_lut", Ta[0:8], Ta[0:8], Tt[0:128])
    with pytest.raises(Exception, match="256 contiguous elements"):
        tilecore.build(ib.get(), target="npu -cores=1")


def test_softmax_rows():
    rows, cols = 4, 64
    ib = ir.IRBuilder("softmax")
    X = ib.buffer_param("X", (rows, cols), "float32")
    Y = ib.buffer_param("Y", (rows, cols), "float32")
    T = ib.allocate("float32", (rows, cols), name="T", scope="local")
    Mx = ib.allocate("float32", (rows, 1), name="Mx", scope="local")
    ib.call("tile.dma_copy", T[0:rows, 0:cols], X[0:rows, 0:cols], 0)
    ib.call("tile.wait", 0)
    ib.call("tile.vec_redmax", Mx[0:rows, 0:1], T[0:rows, 0:cols])
    # the row max meets the tile through a broadcast (EmitTileIntrinsics makes it a view)
    with ib.for_range(0, rows, name="r") as r:
        with ib.for_range(0, cols, name="k") as k:
            T[r, k] = T[r, k] - Mx[r, 0]
    ib.call("tile.vec_exp", T[0:rows, 0:cols], T[0:rows, 0:cols])
    ib.call("tile.vec_redsum", Mx[0:rows, 0:1], T[0:rows, 0:cols])
    with ib.for_range(0, rows, name="r2") as r:
        with ib.for_range(0, cols, name="k2") as k:
            T[r, k] = T[r, k] / Mx[r, 0]
    ib.call("tile.dma_copy", Y[0:rows, 0:cols], T[0:rows, 0:cols], 1)
    ib.call("tile.wait", 1)
    x = rand((rows, cols), "float32")
    npu, c = both(ib.get(), x, np.zeros((rows, cols), "float32"))
    out = npu[1]
    np.testing.assert_array_equal(c[1], out)  # same f32 sums in the same order
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-7)


def test_dma_transpose_and_cast():
    r, k = 16, 32
    ib = ir.IRBuilder("dma_tc")
    A = ib.buffer_param("A", (r, k), "int8")
    B = ib.buffer_param("B", (r, k), "int32")
    T = ib.allocate("int32", (r, k), name="T", scope="local")
    ib.call("tile.dma_copy", T[0:r, 0:k], A[0:r, 0:k], 0)  # casts i8 -> i32
    ib.call("tile.wait", 0)
    ib.call("tile.dma_copy", B[0:r, 0:k], T[0:r, 0:k], 1)
    ib.call("tile.wait", 1)
    a = rand((r, k), "int8")
    npu, c = both(ib.get(), a, np.zeros((r, k), "int32"))
    np.testing.assert_array_equal(npu[1], a.astype("int32"))
    np.testing.assert_array_equal(c[1], npu[1])


def gemm_i8_kernel(M, N, K, TN, cores=4):
    """C (i32) = A (i8) x B (i8): each core a quarter of M with its A rows resident in
    L1; B column blocks and C blocks double-buffered so DMA overlaps tile.mm."""
    MC, NB = M // cores, N // TN
    ib = ir.IRBuilder("gemm_i8")
    A = ib.buffer_param("A", (M, K), "int8")
    B = ib.buffer_param("B", (K, N), "int8")
    C = ib.buffer_param("C", (M, N), "int32")
    with ib.for_range(0, cores, name="c", kind="cores") as c:
        Al = ib.allocate("int8", (MC, K), name="Al")
        Bl = ib.allocate("int8", (2, K, TN), name="Bl")
        Cl = ib.allocate("int32", (2, MC, TN), name="Cl")
        row = c * MC
        ib.call("tile.dma_copy", Al[0:MC, 0:K], A[row:row + MC, 0:K], 0)
        ib.call("tile.dma_copy", Bl[0:1, 0:K, 0:TN], B[0:K, 0:TN], 1)
        with ib.for_range(0, NB, name="j") as j:
            s = j % 2
            with ib.if_scope(j + 1 < NB):
                nxt = (j + 1) % 2
                ib.call("tile.dma_copy", Bl[nxt:nxt + 1, 0:K, 0:TN], B[0:K, (j + 1) * TN:(j + 2) * TN], 1 + nxt)
            ib.call("tile.wait", 0)
            ib.call("tile.wait", 1 + s)
            with ib.if_scope(j >= 2):
                ib.call("tile.wait", 3 + s)  # C buffer s has drained
            ib.call("tile.mm", Cl[s:s + 1, 0:MC, 0:TN], Al[0:MC, 0:K], Bl[s:s + 1, 0:K, 0:TN], False)
            ib.call("tile.dma_copy", C[row:row + MC, j * TN:(j + 1) * TN], Cl[s:s + 1, 0:MC, 0:TN], 3 + s)
        ib.call("tile.wait", 3)
        ib.call("tile.wait", 4)
    return ib.get()


def test_gemm_i8_double_buffered_4_cores():
    M = N = K = 128
    f = gemm_i8_kernel(M, N, K, TN=32)
    a, b = rand((M, K), "int8"), rand((K, N), "int8")
    mod = tilecore.build(f, target="npu -cores=4")
    assert mod.info["functions"][0]["cores"] == 4
    c = np.zeros((M, N), "int32")
    mod["gemm_i8"](a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
    src = mod.get_source("asm")
    assert "mm.i8" in src and "dma.in" in src and "csrr" in src
    cc = run(f, "c", a, b, np.zeros((M, N), "int32"))[2]
    np.testing.assert_array_equal(cc, c)


def test_dma_engines_count_their_commands_in_registers():
    # LowerAsyncDMA's event counts come from tc1.dma_issued: each DMA is followed by the
    # increment of its engine's register (one for DMA-in, another for DMA-out), not a load,
    # an add and a store of a word in L1; the waits on them still order the copies (the
    # product is exact)
    M = N = K = 64
    f = gemm_i8_kernel(M, N, K, TN=32)
    a, b = rand((M, K), "int8"), rand((K, N), "int8")
    mod = tilecore.build(f, target="npu -cores=4")
    c = np.zeros((M, N), "int32")
    mod["gemm_i8"](a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
    lines = [ln.split("#")[0].strip() for ln in mod.get_source("asm").splitlines()]
    lines = [ln for ln in lines if ln]
    counters = {}
    for i, ln in enumerate(lines):
        op = ln.split()[0]
        if op in ("dma.in", "dma.out"):
            nxt = lines[i + 1].replace(",", " ").split()
            assert nxt[0] == "addi" and nxt[1] == nxt[2] and nxt[3] == "1", (ln, lines[i + 1])
            counters.setdefault(op, set()).add(nxt[1])
    assert set(counters) == {"dma.in", "dma.out"}
    assert all(len(r) == 1 for r in counters.values()) and counters["dma.in"] != counters["dma.out"]


def test_line_table_maps_instructions_to_spans():
    ib = ir.IRBuilder("spans")
    A = ib.buffer_param("A", (8,), "int32")
    ib.set_span(ir.span("kernel.py", 42))
    with ib.for_range(0, 8, name="i") as i:
        A[i] = i
    mod = tilecore.build(ib.get(), target="npu")
    lines = mod.info["functions"][0]["line_table"]
    assert any(loc == "kernel.py:42" for _, _, loc in lines)


# ---- errors --------------------------------------------------------------------------------------
def test_strided_vector_load():
    # TC1's vld reads 32 contiguous bytes: a strided load is gathered element by element.
    ib = ir.IRBuilder("strided_ld")
    A = ib.buffer_param("A", (64,), "int32")
    B = ib.buffer_param("B", (8,), "int32")
    ib.emit(ir.BufferStore(B.buffer, ir.BufferLoad(A.buffer, [ir.Ramp(ir.const(3), ir.const(8), 8)]),
                           [ir.Ramp(ir.const(0), ir.const(1), 8)]))
    a = rand(64, "int32")
    npu = run(ib.get(), "npu", a, np.zeros(8, "int32"))
    np.testing.assert_array_equal(npu[1], a[3::8])


def test_cannot_be_emitted():
    ib = ir.IRBuilder("half_vector")
    A = ib.buffer_param("A", (64,), "int32")
    B = ib.buffer_param("B", (8,), "int32")
    ib.emit(ir.BufferStore(B.buffer, ir.BufferLoad(A.buffer, [ir.Ramp(ir.const(0), ir.const(1), 4)]),
                           [ir.Ramp(ir.const(0), ir.const(1), 4)]))
    with pytest.raises(ValueError, match=r"cannot be emitted.*half_vector"):
        tilecore.build(ib.get(), target="npu")


def test_l1_overflow_surfaces_through_build():
    ib = ir.IRBuilder("too_big")
    A = ib.buffer_param("A", (4,), "int32")
    T = ib.allocate("int32", (300000,), name="Huge", scope="local")
    T[0] = A[0]
    A[0] = T[0]
    with pytest.raises(ValueError, match=r"(?s)overflows.*Huge"):
        tilecore.build(ib.get(), target="npu")


def test_cores_loop_larger_than_target():
    ib = ir.IRBuilder("eight")
    A = ib.buffer_param("A", (8,), "int32")
    with ib.for_range(0, 8, name="c", kind="cores") as c:
        A[c] = c
    with pytest.raises(ValueError, match=r"8 iterations.*-cores=4"):
        tilecore.build(ib.get(), target="npu -cores=4")


def test_deep_expression_spills_temporaries():
    # Right-nested: every level holds its left operand while the right one is evaluated,
    # more levels than TC1 has x registers, so held temporaries spill to L1.
    n, depth = 64, 40
    ib = ir.IRBuilder("deep")
    A = ib.buffer_param("A", (n,), "int32")
    B = ib.buffer_param("B", (n,), "int32")
    with ib.for_range(0, n, name="i") as i:
        e = A[i]
        for k in range(depth):
            e = ir.max(A[k] * (k + 3), A[k + 1] - e)
        B[i] = e
    f = ib.get()
    a = rand(n, "int32")
    npu, c = both(f, a, np.zeros(n, "int32"))
    want = a.astype(np.int64)
    for k in range(depth):
        want = np.maximum(a[k].astype(np.int64) * (k + 3), a[k + 1] - want)
    np.testing.assert_array_equal(npu[1], want.astype(np.int32))
    np.testing.assert_array_equal(c[1], npu[1])
    assert tilecore.build(f, target="npu").get_source().count("[l1: x0 + ") > 2 * depth  // 3  # spill slots used


def test_engine_ordering_waits_for_the_last_command_on_the_buffer():
    # The DMA out of T must wait (in its own queue) for the vector command that wrote T,
    # and the vector command for nothing on the matrix engine (it never touches T).
    n = 64
    ib = ir.IRBuilder("ordered")
    A = ib.buffer_param("A", (n,), "int32")
    B = ib.buffer_param("B", (n,), "int32")
    T = ib.allocate("int32", (n,), name="T", scope="local")
    ib.call("tile.dma_copy", T[0:n], A[0:n], 0)
    ib.call("tile.wait", 0)
    ib.call("tile.vec_add", T[0:n], T[0:n], T[0:n])
    ib.call("tile.dma_copy", B[0:n], T[0:n], 1)
    ib.call("tile.wait", 1)
    f = ib.get()
    a = rand(n, "int32")
    npu = run(f, "npu", a, np.zeros(n, "int32"))
    np.testing.assert_array_equal(npu[1], a * 2)
    src = tilecore.build(f, target="npu").get_source()
    lines = [ln.strip() for ln in src.splitlines()]
    tadd = next(i for i, ln in enumerate(lines) if ln.startswith("tadd.i32"))
    dout = next(i for i, ln in enumerate(lines) if ln.startswith("dma.out"))
    # (the count of the tadd: the vector counter register, the tadd the last it counted)
    assert any(ln == "wait dout, vec, x30" for ln in lines[tadd:dout]), src
    assert not any(ln.startswith("wait vec, mm") for ln in lines), src


@pytest.mark.parametrize("branch", [False, True])
def test_a_queue_waits_once_for_a_count_it_has_waited_for(branch):
    # Four vector commands overwrite slabs of La from Lb, both of which the mm read: the
    # first waits (in the vector queue) for the mm, once for both buffers (the same
    # count); the next three would wait for the same count and do not. A label between
    # them (the end of an if) makes the next one wait again, for each buffer's word: a jump
    # may reach it.
    from tilecore import runtime
    n = 16
    ib = ir.IRBuilder("waits")
    A, Bp = ib.buffer_param("A", (n, n), "int8"), ib.buffer_param("B", (n, n), "int8")
    Flag = ib.buffer_param("Flag", (1,), "int32")
    O, Aout = ib.buffer_param("O", (n, n), "int32"), ib.buffer_param("Aout", (n, n), "int8")
    La = ib.allocate("int8", (n, n), name="La", scope="local")
    Lb = ib.allocate("int8", (n, n), name="Lb", scope="local")
    Lo = ib.allocate("int32", (n, n), name="Lo", scope="local")
    ib.call("tile.dma_copy", La[0:n, 0:n], A[0:n, 0:n], 0)
    ib.call("tile.dma_copy", Lb[0:n, 0:n], Bp[0:n, 0:n], 0)
    ib.call("tile.wait", 0)
    ib.call("tile.mm", Lo[0:n, 0:n], La[0:n, 0:n], Lb[0:n, 0:n], False)
    for k in range(4):
        if branch and k == 2:
            with ib.if_scope(ir.BufferLoad(Flag.buffer, [ir.const(0)]) > 0):
                ib.call("tile.vec_add", Lb[0:1, 0:n], Lb[0:1, 0:n], Lb[0:1, 0:n])
        ib.call("tile.vec_add", La[4 * k:4 * k + 4, 0:n], Lb[4 * k:4 * k + 4, 0:n], Lb[4 * k:4 * k + 4, 0:n])
    ib.call("tile.dma_copy", O[0:n, 0:n], Lo[0:n, 0:n], 1)
    ib.call("tile.dma_copy", Aout[0:n, 0:n], La[0:n, 0:n], 1)
    ib.call("tile.wait", 1)
    f = ib.get()
    a, b = rand((n, n), "int8") // 8, rand((n, n), "int8") // 8
    src = tilecore.build(f, target="npu").get_source()
    assert src.count("wait vec, mm") == (3 if branch else 1), src
    runtime.npu_configure(0, "npu -cores=4 -mode=hazard")
    try:
        npu = run(f, "npu", a, b, np.ones(1, "int32"), np.zeros((n, n), "int32"), np.zeros((n, n), "int8"))
        assert [h["message"] for h in runtime.npu_simulator(0).hazards() if h["space"] != "ddr"] == []
    finally:
        runtime.npu_configure(0, "npu -cores=4")
    np.testing.assert_array_equal(npu[3], a.astype(np.int32) @ b.astype(np.int32))
    np.testing.assert_array_equal(npu[4], (2 * b.astype(np.int32)).astype(np.int8))  # (the if doubles Lb[0] after)


def test_simd_conversions_and_saturating_shift_on_both_targets():
    ib = ir.IRBuilder("simd_cvt")
    A = ib.buffer_param("A", (32,), "int8")
    W = ib.buffer_param("W", (8,), "int32")
    N = ib.buffer_param("N", (32,), "int8")
    H = ib.buffer_param("H", (16,), "int16")
    S = ib.buffer_param("S", (16,), "int16")
    va = ir.BufferLoad(A.buffer, [ir.Ramp(ir.const(0), ir.const(1), 32)])
    ib.emit(ir.BufferStore(W.buffer, ir.call("tc1.vcvt", va, ir.const(1), dtype="int32x8"),
                           [ir.Ramp(ir.const(0), ir.const(1), 8)]))
    vw = ir.BufferLoad(W.buffer, [ir.Ramp(ir.const(0), ir.const(1), 8)])
    ib.emit(ir.BufferStore(N.buffer, ir.call("tc1.vcvt", vw, ir.const(2), dtype="int8x32"),
                           [ir.Ramp(ir.const(0), ir.const(1), 32)]))
    vh = ir.BufferLoad(H.buffer, [ir.Ramp(ir.const(0), ir.const(1), 16)])
    vs = ir.BufferLoad(S.buffer, [ir.Ramp(ir.const(0), ir.const(1), 16)])
    ib.emit(ir.BufferStore(S.buffer, ir.call("tc1.vshls", vh, vs), [ir.Ramp(ir.const(0), ir.const(1), 16)]))
    f = ib.get()
    a = rand(32, "int8")
    h = np.array([1, -1, 300, -300, 16383, -16384, 7, 0, 1, 2, 3, -3, 1000, -1000, 5, 6], "int16")
    s = np.array([1, 15, 7, 7, 1, 1, 17, 3, 14, 14, 13, 13, 5, 5, 0, 16], "int16")
    args = (a, np.zeros(8, "int32"), np.zeros(32, "int8"), h, s)
    npu, c = both(f, *args)
    want_w = a[8:16].astype(np.int32)
    want_n = np.zeros(32, "int8")
    want_n[16:24] = np.clip(want_w, -128, 127)
    want_s = np.clip(h.astype(np.int64) << (s.astype(np.int64) & 15), -2**15, 2**15 - 1).astype("int16")
    for name, got in (("npu", npu), ("c", c)):
        np.testing.assert_array_equal(got[1], want_w, err_msg=name)
        np.testing.assert_array_equal(got[2], want_n, err_msg=name)
        np.testing.assert_array_equal(got[4], want_s, err_msg=name)
