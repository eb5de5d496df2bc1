"""Multi-core DSL kernels: barriers, shared buffers, async DMA with events, scalar
control flow — PySim vs numpy, plus the compiled leg (dsl_agreement.py)."""
import numpy as np
import pytest

from dsl_agreement import LEGS, agree
from tilecore import script as S


# Kernel 26: barrier reduction through a shared (L2) buffer
@S.prim_func
def barrier_sum(a: S.ptr("int32", "global"), out: S.ptr("int32", "global")):
    cid = S.get_local_id()
    partial = S.alloc_buffer((4,), "int32", scope="shared")
    T = S.alloc_buffer((256,), "int32")
    S.dma_copy(T, a + cid * 256, 256)
    acc = 0
    for i in range(0, 256, 8):
        acc = acc + S.vredsum(S.vload(T + i))
    partial[cid] = acc
    S.barrier()
    if cid == 0:
        total = 0
        for c in range(S.get_local_size()):
            total = total + partial[c]
        out[0] = total


@pytest.mark.parametrize("leg", LEGS)
def test_barrier_reduction(leg):
    a = np.random.default_rng(0).integers(-2**31, 2**31, 1024, dtype=np.int64).astype(np.int32)
    agree(barrier_sum, [a, np.zeros(1, np.int32)],
          lambda a, out: np.array([a.astype(np.int64).sum()]).astype(np.int32), [1], leg)


# Kernel 27: double-buffered async DMA (events 0 and 1), per-core column of blocks
@S.prim_func
def double_buffer(a: S.ptr("float32", "global"), b: S.ptr("float32", "global"), blocks: S.int32):
    cid = S.get_local_id()
    ping = S.alloc_buffer((64,), "float32")
    pong = S.alloc_buffer((64,), "float32")
    out = S.alloc_buffer((64,), "float32")
    first = cid * blocks
    S.async_dma_copy(ping, a + first * 64, 64, event=0)
    for k in range(blocks):
        blk = first + k
        if k % 2 == 0:
            S.wait_events(0)
            if k + 1 < blocks:
                S.async_dma_copy(pong, a + (blk + 1) * 64, 64, event=1)
            S.tile_muls(out, ping, 2.0)
        else:
            S.wait_events(1)
            if k + 1 < blocks:
                S.async_dma_copy(ping, a + (blk + 1) * 64, 64, event=0)
            S.tile_muls(out, pong, 2.0)
        S.tile_adds(out, out, 1.0)
        S.dma_copy(b + blk * 64, out, 64)


@pytest.mark.parametrize("leg", LEGS)
def test_double_buffered_async_dma(leg):
    blocks = 5
    a = np.random.default_rng(1).standard_normal(4 * blocks * 64).astype(np.float32)
    agree(double_buffer, [a, np.zeros_like(a), blocks], lambda a, b, n: (a * 2 + 1).astype(np.float32), [1], leg,
          (0, 0))


# Kernel 28: neighbour exchange through shared memory between two barriers
@S.prim_func
def rotate(a: S.ptr("int16", "global"), b: S.ptr("int16", "global")):
    cid = S.get_local_id()
    n = S.get_local_size()
    ring = S.alloc_buffer((4, 16), "int16", scope="shared")
    S.dma_copy(ring[cid, 0:16], a + cid * 16, 16)
    S.barrier()
    src = (cid + 1) % n
    v = S.vload(ring.addr_of(src, 0))
    S.barrier()
    S.vstore(S.vadd(v, S.vload(ring.addr_of(cid, 0)), saturate=True), b + cid * 16)


@pytest.mark.parametrize("leg", LEGS)
def test_shared_ring_exchange(leg):
    a = np.random.default_rng(2).integers(-32768, 32768, 64).astype(np.int16)

    def ref(a, b):
        x = a.reshape(4, 16).astype(np.int64)
        return np.clip(np.roll(x, -1, axis=0) + x, -32768, 32767).astype(np.int16).reshape(-1)

    agree(rotate, [a, np.zeros(64, np.int16)], ref, [1], leg)


# Kernel 29: scalar arithmetic: truncating division, floor division, modulo, while
@S.prim_func(num_cores=1)
def scalar_math(a: S.ptr("int32", "global"), out: S.ptr("int32", "global"), n: S.int32):
    for i in range(n):
        x = a[i]
        out[i * 4] = x / 7
        out[i * 4 + 1] = x // 7
        out[i * 4 + 2] = x % 7
        steps = 0
        y = x
        while y > 100 or y < -100:
            y = y / 2
            steps += 1
        out[i * 4 + 3] = steps if x > 0 else -steps


@pytest.mark.parametrize("leg", LEGS)
def test_scalar_division_and_while(leg):
    a = np.array([-15, 15, -7, 0, 123456, -987654, 2**31 - 1, -2**31], np.int32)

    def ref(a, out, n):
        r = []
        for x in a.astype(np.int64):
            q = abs(x) // 7 * (1 if x >= 0 else -1)
            steps, y = 0, x
            while y > 100 or y < -100:
                y = int(y / 2)
                steps += 1
            r += [q, x // 7, x % 7, steps if x > 0 else -steps]
        return np.array(r, np.int64).astype(np.int32)

    agree(scalar_math, [a, np.zeros(32, np.int32), len(a)], ref, [1], leg)


# Kernel 30: compile-time lookup table, static unrolling and a typed mutable variable
TABLE = [3, 1, 4, 1, 5, 9, 2, 6]


@S.prim_func(num_cores=2)
def lookup(a: S.ptr("uint8", "global"), out: S.ptr("uint8", "global")):
    cid = S.get_local_id()
    acc: S.uint8 = 0
    for j in S.static_range(len(TABLE)):
        if TABLE[j] % 2 == 1:
            acc = acc + a[cid * 8 + j] * TABLE[j]
    for t in [2, 5]:
        acc = acc ^ t
    out[cid] = acc


@pytest.mark.parametrize("leg", LEGS)
def test_static_lookup_table(leg):
    a = np.random.default_rng(3).integers(0, 256, 16).astype(np.uint8)

    def ref(a, out):
        r = []
        for c in range(2):
            acc = 0
            for j, t in enumerate(TABLE):
                if t % 2 == 1:
                    acc = (acc + int(a[c * 8 + j]) * t) % 256
            r.append(acc ^ 2 ^ 5)
        return np.array(r, np.uint8)

    agree(lookup, [a, np.zeros(2, np.uint8)], ref, [1], leg)


# Kernel 31: scalar float math on the front end and per-core conditional work
@S.prim_func
def scalar_float(a: S.ptr("float32", "global"), out: S.ptr("float32", "global")):
    cid = S.get_local_id()
    x = a[cid]
    y = S.exp(x) + S.log(S.sqrt(x * x + 1.0))
    if cid % 2 == 0:
        y = y * S.sigmoid(x)
    else:
        y = y - S.tanh(x) * S.rsqrt(x * x + 4.0) + S.recip(x + 10.0)
    out[cid] = y


@pytest.mark.parametrize("leg", LEGS)
def test_scalar_float_math(leg):
    a = np.array([0.5, -1.25, 2.0, 0.0], np.float32)

    def ref(a, out):
        f32 = np.float32
        r = []
        for c, x in enumerate(a):
            y = f32(f32(np.exp(np.float64(x))) + f32(np.log(np.float64(f32(np.sqrt(np.float64(f32(x * x + f32(1)))))))))
            if c % 2 == 0:
                y = f32(y * f32(1 / (1 + np.exp(-np.float64(x)))))
            else:
                t = f32(np.tanh(np.float64(x)))
                rs = f32(1 / np.sqrt(np.float64(f32(x * x + f32(4)))))
                y = f32(f32(y - f32(t * rs)) + f32(1 / np.float64(f32(x + f32(10)))))
            r.append(y)
        return np.array(r, np.float32)

    agree(scalar_float, [a, np.zeros(4, np.float32)], ref, [1], leg, (1e-6, 1e-7))


# Kernel 32: DMA with conversion and fill between memories
@S.prim_func(num_cores=1)
def dma_convert(a: S.ptr("float32", "global"), q: S.ptr("int8", "global")):
    L = S.alloc_buffer((40,), "int8")
    S.dma_fill(L, 7)
    S.dma_copy(L[4:36], a, 32)
    S.dma_copy(q, L, 40)


@pytest.mark.parametrize("leg", LEGS)
def test_dma_convert_and_fill(leg):
    a = np.linspace(-300, 300, 32).astype(np.float32)

    def ref(a, q):
        r = np.full(40, 7, np.int8)
        r[4:36] = np.clip(np.rint(a.astype(np.float64)), -128, 127).astype(np.int8)
        return r

    agree(dma_convert, [a, np.zeros(40, np.int8)], ref, [1], leg)
