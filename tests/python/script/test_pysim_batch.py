"""PySim's batched loops (pysim/batch.py): a loop run as whole numpy operations gives
bit for bit what the loop run one iteration at a time gives (TILECORE_PYSIM_BATCH=0),
and numpy's answer; loops that carry a value between iterations, alias arrays, write one
address twice or fail part way are run one iteration at a time (same result, same error)."""
import numpy as np
import pytest

from tilecore import script as S
from tilecore.script.pysim import batch


def run_both(kernel, make_args, monkeypatch):
    """(batched args, serial args, loops batched, fallbacks) after running ``kernel`` both ways."""
    b0, f0 = batch.stats["batched"], batch.stats["fallback"]
    fast = make_args()
    kernel(*fast)
    nb, nf = batch.stats["batched"] - b0, batch.stats["fallback"] - f0
    monkeypatch.setenv("TILECORE_PYSIM_BATCH", "0")
    slow = make_args()
    kernel(*slow)
    monkeypatch.delenv("TILECORE_PYSIM_BATCH")
    for x, y in zip(fast, slow):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8))
    return fast, slow, nb, nf



@pytest.fixture(autouse=True)
def _plain_pysim(monkeypatch):
    """These tests set the PySim modes themselves, whatever the environment says."""
    for v in ("TILECORE_PYSIM_SEED", "TILECORE_PYSIM_RACECHECK", "TILECORE_PYSIM_BATCH",
              "TILECORE_PYSIM_SINGLE_THREAD"):
        monkeypatch.delenv(v, raising=False)

@S.prim_func
def vadd(a: S.ptr("int32", "global"), b: S.ptr("int32", "global"), c: S.ptr("int32", "global"), n: S.int32):
    per = n // S.get_local_size()
    base = S.get_local_id() * per
    for i in range(base, base + per, 8):
        S.vstore(S.vadd(S.vload(a + i), S.vload(b + i)), c + i)


def test_vector_add_is_batched_and_exact(monkeypatch):
    rng = np.random.default_rng(1)
    a = rng.integers(-2**31, 2**31, 4096, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, 4096, dtype=np.int64).astype(np.int32)
    fast, _, nb, nf = run_both(vadd, lambda: [a, b, np.zeros(4096, np.int32), 4096], monkeypatch)
    assert (nb, nf) == (4, 0)
    assert np.array_equal(fast[2], (a.astype(np.int64) + b).astype(np.int32))


@S.prim_func
def softmax(x: S.ptr("float32", "global"), y: S.ptr("float32", "global"), rows: S.int32):
    T = S.alloc_buffer((4, 64), "float32")
    M = S.alloc_buffer((4, 1), "float32")
    per = rows // S.get_local_size()
    first = S.get_local_id() * per
    for blk in range(first, first + per, 4):
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


def test_softmax_tiles_are_batched_and_exact(monkeypatch):
    x = (np.random.default_rng(2).standard_normal((64, 64)) * 3).astype(np.float32)
    fast, _, nb, nf = run_both(softmax, lambda: [x, np.zeros_like(x), 64], monkeypatch)
    assert (nb, nf) == (4, 0)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    assert np.allclose(fast[1], e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@S.prim_func(num_cores=1)
def prefix(a: S.ptr("int32", "global"), n: S.int32):
    for i in range(1, n):
        a[i] = a[i] + a[i - 1]


@S.prim_func(num_cores=1)
def in_place(a: S.ptr("int32", "global"), n: S.int32):
    for i in range(n):
        a[i] = a[i] * 3


@S.prim_func(num_cores=1)
def local_sum(a: S.ptr("int32", "global"), out: S.ptr("int32", "global"), n: S.int32):
    acc = S.alloc_buffer((1,), "int32")
    for i in range(n):
        acc[0] = acc[0] + a[i]
    out[0] = acc[0]


@S.prim_func(num_cores=1)
def last_wins(a: S.ptr("int32", "global"), out: S.ptr("int32", "global"), n: S.int32):
    for i in range(n):
        out[0] = a[i]


@S.prim_func(num_cores=1)
def scratch(a: S.ptr("int32", "global"), out: S.ptr("int32", "global"), n: S.int32):
    t = S.alloc_buffer((2,), "int32")
    for i in range(n):
        t[0] = a[i] * 2
        t[1] = t[0] + 1
        out[i] = t[1]


@S.prim_func(num_cores=1)
def copy2(a: S.ptr("int32", "global"), out: S.ptr("int32", "global"), n: S.int32):
    for i in range(n):
        out[i] = a[i] + 1


@S.prim_func(num_cores=1)
def carried_name(a: S.ptr("int32", "global"), out: S.ptr("int32", "global"), n: S.int32):
    s = 0
    for i in range(n):
        s = s + a[i]
    out[0] = s


A = np.arange(1, 41, dtype=np.int32)


@pytest.mark.parametrize("kernel,make,want,batched", [
    (prefix, lambda: [A.copy(), 40], lambda a: np.cumsum(A).astype(np.int32), False),
    (in_place, lambda: [A.copy(), 40], lambda a: A * 3, False),
    (local_sum, lambda: [A, np.zeros(1, np.int32), 40], lambda a, o: [A.sum()], False),
    (last_wins, lambda: [A, np.zeros(1, np.int32), 40], lambda a, o: [A[-1]], False),
    (scratch, lambda: [A, np.zeros(40, np.int32), 40], lambda a, o: A * 2 + 1, True),
    (carried_name, lambda: [A, np.zeros(1, np.int32), 40], lambda a, o: [A.sum()], True),  # an integer sum
])
def test_dependences_fall_back_to_one_iteration_at_a_time(kernel, make, want, batched, monkeypatch):
    fast, _, nb, nf = run_both(kernel, make, monkeypatch)
    assert np.array_equal(fast[-2 if len(fast) > 2 else 0], np.asarray(want(*fast[:-1]), np.int32))
    assert (nb == 1) == batched


def test_aliased_arrays_fall_back(monkeypatch):
    def make():
        a = A.copy()
        return [a, a, 40]

    fast, _, nb, nf = run_both(copy2, make, monkeypatch)
    assert (nb, nf) == (0, 1) and np.array_equal(fast[0], A + 1)


def test_an_error_part_way_is_reported_as_without_batching(monkeypatch):
    a = np.zeros(10, np.int32)
    out = np.full(8, 7, np.int32)
    with pytest.raises(IndexError) as fast:
        copy2(a, out, 10)
    assert np.array_equal(out, np.ones(8, np.int32))  # iterations 0..7 done, as one at a time
    monkeypatch.setenv("TILECORE_PYSIM_BATCH", "0")
    out2 = np.full(8, 7, np.int32)
    with pytest.raises(IndexError) as slow:
        copy2(a, out2, 10)
    assert str(fast.value) == str(slow.value) and "out[i] = a[i] + 1" in str(fast.value)


# --- many operations batched: bit for bit what one iteration at a time gives -------------------
@S.prim_func(num_cores=2)
def f16_masked(a: S.ptr("float16", "global"), b: S.ptr("float16", "global"), c: S.ptr("float16", "global"),
               n: S.int32):
    per = n // S.get_local_size()
    base = S.get_local_id() * per
    for i in range(base, base + per, 16):
        va = S.vload(a + i)
        vb = S.vload(b + i)
        m = va > vb
        S.vstore(S.vmax(S.vmul(va, vb), S.vsub(va, 1.5), mask=m, r=vb), c + i)


@S.prim_func(num_cores=2)
def int_scalars(a: S.ptr("int32", "global"), out: S.ptr("uint8", "global"), w: S.ptr("int32", "global"),
                n: S.int32):
    per = n // S.get_local_size()
    base = S.get_local_id() * per
    for i in range(base, base + per):
        x = a[i]
        y = (x << 3) ^ (x >> 2) + i * 7 - (x & 255)
        w[i] = -y | (x & 7)
        out[i] = S.cast(y, S.uint8)


@S.prim_func(num_cores=1)
def strided_tail(a: S.ptr("int16", "global"), b: S.ptr("int16", "global"), n: S.int32):
    for k in range(n):
        v = S.vload(a + k * 32, stride=2)
        t = S.vload(a + k * 32 + 1, stride=2, lanes=9)
        S.vstore(S.vadd(v, t, saturate=True), b + k * 16)


@S.prim_func(num_cores=1)
def lookup(t: S.ptr("int32", "global"), out: S.ptr("int32", "global"), n: S.int32):
    tab = S.alloc_buffer((4, 4), "int32")
    S.dma_copy(tab, t, 16)
    for i in range(n):
        out[i] = tab[(i >> 2) & 3, i & 3] * i


@S.prim_func(num_cores=2)
def bf16_rows(x: S.ptr("float32", "global"), y: S.ptr("bfloat16", "global"), rows: S.int32):
    T = S.alloc_buffer((2, 16), "bfloat16")
    S_ = S.alloc_buffer((2, 1), "bfloat16")
    per = rows // S.get_local_size()
    first = S.get_local_id() * per
    for r in range(first, first + per, 2):
        S.dma_copy(T, x + r * 16, 32)
        S.tile_redsum(S_, T)
        S.tile_muls(T[0:1, 0:16], T[0:1, 0:16], S_[1, 0])
        S.tile_adds(T[1:2, 0:16], T[1:2, 0:16], S_[0, 0])
        S.tile_sigmoid(T, T)
        S.dma_copy(y[r * 16:r * 16 + 32], T)


def _cases():
    rng = np.random.default_rng(5)
    f16 = lambda: (rng.standard_normal(256) * 4).astype(np.float16)  # noqa: E731
    a16, b16 = f16(), f16()
    i32 = rng.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    i16 = rng.integers(-2**15, 2**15, 32 * 6, dtype=np.int64).astype(np.int16)
    tab = rng.integers(-1000, 1000, 16, dtype=np.int64).astype(np.int32)
    x = (rng.standard_normal(16 * 8) * 2).astype(np.float32)
    return [
        (f16_masked, lambda: [a16, b16, np.zeros(256, np.float16), 256], 2),
        (int_scalars, lambda: [i32, np.zeros(64, np.uint8), np.zeros(64, np.int32), 64], 2),
        (strided_tail, lambda: [i16, np.zeros(16 * 6, np.int16), 6], 1),
        (lookup, lambda: [tab, np.zeros(40, np.int32), 40], 1),
        (bf16_rows, lambda: [x, np.zeros(16 * 8, np.uint16), 8], 2),
    ]


@pytest.mark.parametrize("case", range(5))
def test_batched_operations_match_one_iteration_at_a_time(case, monkeypatch):
    kernel, make, loops = _cases()[case]
    fast, slow, nb, nf = run_both(kernel, make, monkeypatch)
    assert (nb, nf) == (loops, 0), batch.stats["reason"]
    assert any(np.any(x != 0) for x in fast[1:] if isinstance(x, np.ndarray))


def test_a_kernel_with_closure_variables_is_batched(monkeypatch):
    def make(k, dtype):
        @S.prim_func(num_cores=1)
        def scaled(a: S.ptr(dtype, "global"), b: S.ptr(dtype, "global"), n: S.int32):
            for i in range(n):
                b[i] = a[i] * k

        return scaled

    kernel = make(3, "int16")
    a = np.arange(-20, 20, dtype=np.int16) * 1000
    fast, _, nb, nf = run_both(kernel, lambda: [a, np.zeros(40, np.int16), 40], monkeypatch)
    assert (nb, nf) == (1, 0) and np.array_equal(fast[1], (a.astype(np.int64) * 3).astype(np.int16))


# --- integer sums carried by a name: one numpy sum (wrapping addition is associative) ----------
@S.prim_func(num_cores=1)
def sums(a: S.ptr("int8", "global"), f: S.ptr("float32", "global"), out: S.ptr("int8", "global"),
         fo: S.ptr("float32", "global"), v: S.ptr("int32", "global"), n: S.int32, start: S.int8):
    acc = start
    vacc = 0
    for i in range(n):
        acc = acc + a[i]
        vacc += S.vredmax(S.cast(S.vload(f + i * 8), "int32")) * 2
    out[0] = acc
    v[0] = vacc
    fs = 0.0
    for i in range(n):
        fs = fs + f[i]  # a float sum: its rounding depends on the order, so one at a time
    fo[0] = fs
    k = 0
    for i in range(n):
        k = k + 1  # the same value every iteration: one at a time
    v[1] = k


def test_integer_sums_are_batched_float_sums_are_not(monkeypatch):
    rng = np.random.default_rng(9)
    a = rng.integers(-128, 128, 48, dtype=np.int64).astype(np.int8)
    f = (rng.standard_normal(48 * 8 + 8) * 1000).astype(np.float32)

    def make():
        return [a, f, np.zeros(1, np.int8), np.zeros(1, np.float32), np.zeros(2, np.int32), 48, -5]

    fast, _, nb, nf = run_both(sums, make, monkeypatch)
    assert (nb, nf) == (1, 2)
    assert fast[2][0] == np.int8((int(a.astype(np.int64).sum()) - 5 + 128) % 256 - 128)  # wraps
    rows = np.rint(f[:48 * 8].reshape(48, 8).astype(np.float64)).astype(np.int64).max(axis=1)
    assert fast[4][0] == np.int32(rows.sum() * 2) and fast[4][1] == 48
    want = np.float32(0)
    for x in f[:48]:
        want = np.float32(want + x)
    assert fast[3][0] == want


@S.prim_func(num_cores=1)
def reuses_names_cleanly(a: S.ptr("int32", "global"), b: S.ptr("int32", "global"), n: S.int32):
    for i in range(n):
        v = a[i] * 2
        b[i] = v
    for i in range(n):
        v = b[i] + 1
        a[i] = v


def test_names_reused_by_later_loops(monkeypatch):
    # (reading a loop's names after it is a compile error: the parser scopes them to the loop)
    fast, _, nb, nf = run_both(reuses_names_cleanly, lambda: [A.copy(), np.zeros(40, np.int32), 40], monkeypatch)
    assert np.array_equal(fast[0], A * 2 + 1) and (nb, nf) == (2, 0)
