"""SIMD API of the DSL over its dtypes: PySim vs numpy (bit-exact for integers), plus the
compiled leg (see dsl_agreement.py).

Float tolerances: float32 / float16 arithmetic is correctly rounded on both sides,
so the references (computed in float64 and rounded once, as TC1 does) match
exactly; they are still compared with rtol=0, atol=0 through assert_allclose so a
NaN in the wrong place shows up.
"""
import numpy as np
import pytest

from dsl_agreement import LEGS, agree, int_inputs
from tilecore import script as S

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32"]
FLOATS = ["float16", "float32"]
NUMERIC = INTS + FLOATS
CORES = 4


def lanes_of(dtype):
    return 32 // np.dtype(dtype).itemsize


def elementwise_n(dtype):
    return CORES * lanes_of(dtype) * 2


def wrap(x, dtype):
    return np.asarray(x, dtype=np.int64).astype(dtype)


def sat(x, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.asarray(x, dtype=np.int64), info.min, info.max).astype(dtype)


def inputs_for(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(n) * 8).astype(dtype)
    return int_inputs(rng, dtype, n)


# ----------------------------------------------------------------------------
# Kernel 1-5: vadd / vsub / vmul / vmax / vmin, wrapping and saturating
# ----------------------------------------------------------------------------
def make_vbinary(fn_name, dtype, **kw):
    lanes = lanes_of(dtype)

    @S.prim_func
    def vbinary(a: S.ptr(dtype, "global"), b: S.ptr(dtype, "global"), c: S.ptr(dtype, "global"), n: S.int32):
        per = n // S.get_local_size()
        base = S.get_local_id() * per
        for i in range(base, base + per, lanes):
            va = S.vload(a + i)
            vb = S.vload(b + i)
            S.vstore(getattr(S, fn_name)(va, vb, **kw), c + i)

    return vbinary


def ref_binary(op, dtype, saturate=False):
    def ref(a, b, c, n):
        if np.dtype(dtype).kind == "f":
            fa, fb = a.astype(np.float64), b.astype(np.float64)
            r = {"vadd": fa + fb, "vsub": fa - fb, "vmul": fa * fb, "vmax": np.maximum(fa, fb),
                 "vmin": np.minimum(fa, fb)}[op]
            return r.astype(np.float32).astype(dtype)
        ia, ib = a.astype(np.int64), b.astype(np.int64)
        r = {"vadd": ia + ib, "vsub": ia - ib, "vmul": ia * ib, "vmax": np.maximum(ia, ib),
             "vmin": np.minimum(ia, ib)}[op]
        return sat(r, dtype) if saturate else wrap(r, dtype)

    return ref


@pytest.mark.parametrize("leg", LEGS)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ["vadd", "vsub", "vmul", "vmax", "vmin"])
def test_vbinary(op, dtype, leg):
    n = elementwise_n(dtype)
    a, b = inputs_for(dtype, n, 1), inputs_for(dtype, n, 2)
    tol = (0, 0) if np.dtype(dtype).kind == "f" else None
    agree(make_vbinary(op, dtype), [a, b, np.zeros(n, dtype), n], ref_binary(op, dtype), [2], leg, tol)


@pytest.mark.parametrize("leg", LEGS)
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["vadd", "vsub"])
def test_vbinary_saturate(op, dtype, leg):
    n = elementwise_n(dtype)
    a, b = inputs_for(dtype, n, 3), inputs_for(dtype, n, 4)
    agree(make_vbinary(op, dtype, saturate=True), [a, b, np.zeros(n, dtype), n],
          ref_binary(op, dtype, saturate=True), [2], leg)


# ----------------------------------------------------------------------------
# Kernel 6: masked add with an `r` operand; kernel 7: comparisons + vsel
# ----------------------------------------------------------------------------
@S.prim_func
def masked_add(a: S.ptr("int16", "global"), b: S.ptr("int16", "global"), c: S.ptr("int16", "global")):
    i = S.get_local_id() * 16
    va = S.vload(a + i)
    vb = S.vload(b + i)
    m = va > vb
    S.vstore(S.vadd(va, vb, mask=m, r=va, saturate=True), c + i)


@pytest.mark.parametrize("leg", LEGS)
def test_masked_add_keeps_r_in_inactive_lanes(leg):
    a, b = inputs_for("int16", 64, 5), inputs_for("int16", 64, 6)

    def ref(a, b, c):
        return np.where(a > b, sat(a.astype(np.int64) + b, "int16"), a)

    agree(masked_add, [a, b, np.zeros(64, np.int16)], ref, [2], leg)


def make_compare(dtype):
    lanes = lanes_of(dtype)

    @S.prim_func
    def compare_select(a: S.ptr(dtype, "global"), b: S.ptr(dtype, "global"), c: S.ptr(dtype, "global")):
        i = S.get_local_id() * lanes
        va = S.vload(a + i)
        vb = S.vload(b + i)
        lt = S.vclt(va, vb)
        eq = S.vceq(va, vb)
        ge = S.vcge(va, vb, mask=~eq)
        picked = S.vsel(va, vb, lt | eq)
        S.vstore(S.vsel(picked, S.vsub(va, va), ge | lt), c + i)

    return compare_select


@pytest.mark.parametrize("leg", LEGS)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_compare_select(dtype, leg):
    n = CORES * lanes_of(dtype)
    a, b = inputs_for(dtype, n, 7), inputs_for(dtype, n, 8)
    b[::3] = a[::3]

    def ref(a, b, c):
        lt, eq = a < b, a == b
        ge = (a >= b) & ~eq
        picked = np.where(lt | eq, a, b)
        return np.where(ge | lt, picked, np.zeros_like(a))

    agree(make_compare(dtype), [a, b, np.zeros(n, dtype)], ref, [2], leg)


# ----------------------------------------------------------------------------
# Kernel 8-9: bitwise and shifts (amount modulo the width; saturating vshl)
# ----------------------------------------------------------------------------
def make_bitwise(dtype):
    lanes = lanes_of(dtype)

    @S.prim_func
    def bitwise(a: S.ptr(dtype, "global"), b: S.ptr(dtype, "global"), c: S.ptr(dtype, "global")):
        i = S.get_local_id() * lanes
        va = S.vload(a + i)
        vb = S.vload(b + i)
        x = S.vxor(S.vand(va, vb), S.vor(va, 5))
        S.vstore(S.vnot(x) ^ (va & 3), c + i)

    return bitwise


@pytest.mark.parametrize("leg", LEGS)
@pytest.mark.parametrize("dtype", INTS)
def test_bitwise(dtype, leg):
    n = CORES * lanes_of(dtype)
    a, b = inputs_for(dtype, n, 9), inputs_for(dtype, n, 10)

    def ref(a, b, c):
        x = (a & b) ^ (a | np.array(5, dtype))
        return ~x ^ (a & np.array(3, dtype))

    agree(make_bitwise(dtype), [a, b, np.zeros(n, dtype)], ref, [2], leg)


def make_shift(dtype, saturate):
    lanes = lanes_of(dtype)

    @S.prim_func
    def shifts(a: S.ptr(dtype, "global"), s: S.ptr(dtype, "global"), left: S.ptr(dtype, "global"),
               right: S.ptr(dtype, "global")):
        i = S.get_local_id() * lanes
        va = S.vload(a + i)
        vs = S.vload(s + i)
        S.vstore(S.vshl(va, vs, saturate=saturate), left + i)
        S.vstore(S.vshr(va, vs), right + i)

    return shifts


@pytest.mark.parametrize("leg", LEGS)
@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("dtype", INTS)
def test_shifts(dtype, saturate, leg):
    n = CORES * lanes_of(dtype)
    bits = np.dtype(dtype).itemsize * 8
    a = inputs_for(dtype, n, 11)
    s = np.random.default_rng(12).integers(0, 2 * bits, n).astype(dtype)  # amounts beyond the width wrap

    def ref(a, s, left, right):
        amt = s.astype(np.int64) % bits
        wide = a.astype(np.int64) * (np.int64(1) << amt)
        lft = sat(wide, dtype) if saturate else wrap(wide, dtype)
        rgt = (a.astype(np.int64) >> amt).astype(dtype)  # arithmetic for signed, logical for unsigned
        return lft, rgt

    agree(make_shift(dtype, saturate), [a, s, np.zeros(n, dtype), np.zeros(n, dtype)], ref, [2, 3], leg)


# ----------------------------------------------------------------------------
# Kernel 10: vabs (wrapping and saturating); kernel 11: reductions with masks
# ----------------------------------------------------------------------------
@S.prim_func
def abs_kernel(a: S.ptr("int8", "global"), w: S.ptr("int8", "global"), s: S.ptr("int8", "global")):
    i = S.get_local_id() * 32
    va = S.vload(a + i)
    S.vstore(S.vabs(va), w + i)
    S.vstore(S.vabs(va, saturate=True), s + i)


@pytest.mark.parametrize("leg", LEGS)
def test_vabs(leg):
    a = inputs_for("int8", 128, 13)
    a[:4] = [-128, 127, 0, -1]

    def ref(a, w, s):
        return wrap(np.abs(a.astype(np.int64)), "int8"), sat(np.abs(a.astype(np.int64)), "int8")

    agree(abs_kernel, [a, np.zeros(128, np.int8), np.zeros(128, np.int8)], ref, [1, 2], leg)


def make_reduce(dtype):
    lanes = lanes_of(dtype)

    @S.prim_func
    def reductions(a: S.ptr(dtype, "global"), out: S.ptr(dtype, "global")):
        cid = S.get_local_id()
        va = S.vload(a + cid * lanes)
        m = S.tail_mask(cid + 2, lanes)
        out[cid * 3] = S.vredsum(va)
        out[cid * 3 + 1] = S.vredmax(va, mask=m)
        out[cid * 3 + 2] = S.vredmin(va, mask=m)

    return reductions


@pytest.mark.parametrize("leg", LEGS)
@pytest.mark.parametrize("dtype", INTS + ["float32"])
def test_reductions(dtype, leg):
    lanes = lanes_of(dtype)
    a = inputs_for(dtype, CORES * lanes, 14)

    def ref(a, out):
        r = np.zeros(CORES * 3, dtype)
        for c in range(CORES):
            v = a[c * lanes:(c + 1) * lanes]
            if np.dtype(dtype).kind == "f":
                acc = np.float32(0)
                for x in v:
                    acc = np.float32(acc + x)
                r[c * 3] = acc
            else:
                r[c * 3] = wrap(v.astype(np.int64).sum(), dtype)
            r[c * 3 + 1] = v[:c + 2].max()
            r[c * 3 + 2] = v[:c + 2].min()
        return r

    agree(make_reduce(dtype), [a, np.zeros(CORES * 3, dtype)], ref, [1], leg,
          (0, 0) if dtype == "float32" else None)


# ----------------------------------------------------------------------------
# Kernels 12-14: conversions (widening parts, narrowing with saturation, float <-> int)
# ----------------------------------------------------------------------------
@S.prim_func
def widen(a: S.ptr("int8", "global"), out: S.ptr("int32", "global")):
    va = S.vload(a + S.get_local_id() * 32)
    base = S.get_local_id() * 32
    for part in S.static_range(4):
        S.vstore(S.cast(va, "int32", part=part), out + base + part * 8)


@pytest.mark.parametrize("leg", LEGS)
def test_cast_widen_parts(leg):
    a = inputs_for("int8", 128, 15)
    agree(widen, [a, np.zeros(128, np.int32)], lambda a, out: a.astype(np.int32), [1], leg)


@S.prim_func
def narrow(a: S.ptr("int32", "global"), lo: S.ptr("int16", "global"), hi: S.ptr("int16", "global")):
    i = S.get_local_id() * 8
    va = S.vload(a + i)
    S.vstore(S.cast(va, "int16"), lo + S.get_local_id() * 16)
    S.vstore(S.cast(va, "int16", part="high"), hi + S.get_local_id() * 16)


@pytest.mark.parametrize("leg", LEGS)
def test_cast_narrow_saturates(leg):
    a = inputs_for("int32", 32, 16)
    a[:3] = [70000, -70000, 5]

    def ref(a, lo, hi):
        s = sat(a, "int16").reshape(4, 8)
        z = np.zeros((4, 8), np.int16)
        return np.concatenate([s, z], 1).reshape(-1), np.concatenate([z, s], 1).reshape(-1)

    agree(narrow, [a, np.zeros(64, np.int16), np.zeros(64, np.int16)], ref, [1, 2], leg)


@S.prim_func
def float_int(a: S.ptr("float32", "global"), i8: S.ptr("int8", "global"), back: S.ptr("float32", "global")):
    i = S.get_local_id() * 8
    va = S.vload(a + i)
    vi = S.cast(va, "int32")
    S.vstore(S.cast(vi, "float32") + 0.5, back + i)
    S.vstore(S.cast(vi, "int8"), i8 + S.get_local_id() * 32)


@pytest.mark.parametrize("leg", LEGS)
def test_cast_float_int_rounds_to_even_and_saturates(leg):
    a = (np.random.default_rng(17).standard_normal(32) * 100).astype(np.float32)
    a[:6] = [0.5, 1.5, 2.5, -0.5, 1e10, np.nan]

    def ref(a, i8, back):
        r = np.where(np.isnan(a), 0, np.clip(np.rint(a.astype(np.float64)), -2**31, 2**31 - 1)).astype(np.int64)
        out8 = np.zeros((4, 32), np.int8)
        out8[:, :8] = sat(r, "int8").reshape(4, 8)
        return out8.reshape(-1), (r.astype(np.float32) + np.float32(0.5)).astype(np.float32)

    agree(float_int, [a, np.zeros(128, np.int8), np.zeros(32, np.float32)], ref, [1, 2], leg)


# ----------------------------------------------------------------------------
# Kernel 15-16: tail masks, `lanes=`, strided loads; kernel 17: vbcast and operators
# ----------------------------------------------------------------------------
@S.prim_func
def tail(a: S.ptr("int32", "global"), b: S.ptr("int32", "global"), n: S.int32):
    cid = S.get_local_id()
    if cid == 0:
        i = 0
        while i < n:
            m = S.tail_mask(n - i, 8)
            v = S.vload(a + i, mask=m)
            S.vstore(v * 3, b + i, mask=m)
            i = i + 8


@pytest.mark.parametrize("leg", LEGS)
def test_tail_mask_loop_touches_only_n_elements(leg):
    n = 21
    a = np.arange(n, dtype=np.int32)  # exactly n: a full vector past the end would be out of bounds
    agree(tail, [a, np.full(n, -1, np.int32), n], lambda a, b, n: a * 3, [1], leg)


@S.prim_func
def strided(a: S.ptr("float32", "global"), b: S.ptr("float32", "global")):
    cid = S.get_local_id()
    v = S.vload(a + cid, stride=4)
    S.vstore(v, b + cid * 8, lanes=5)


@pytest.mark.parametrize("leg", LEGS)
def test_strided_load_and_partial_store(leg):
    a = np.arange(32, dtype=np.float32)

    def ref(a, b):
        out = np.full(32, -1, np.float32)
        for c in range(4):
            out[c * 8:c * 8 + 5] = a[c::4][:5]
        return out

    agree(strided, [a, np.full(32, -1, np.float32)], ref, [1], leg, (0, 0))


@S.prim_func
def operators(a: S.ptr("int32", "global"), b: S.ptr("int32", "global"), k: S.int32):
    i = S.get_local_id() * 8
    va = S.vload(a + i)
    vk = S.int32x8(k)
    r = (va + vk) * 2 - (va >> 1) + (va << 3)
    r = S.vsel(r, -r, r > 0)
    S.vstore(S.vmax(r, S.vbcast(-100, "int32")) | 1, b + i)


@pytest.mark.parametrize("leg", LEGS)
def test_operators_on_vectors(leg):
    a = inputs_for("int32", 32, 18) // 1000

    def ref(a, b, k):
        ia = a.astype(np.int64)
        r = wrap((ia + k) * 2 - (ia >> 1) + (ia << 3), "int32").astype(np.int64)
        r = np.where(r > 0, r, -r)
        return (np.maximum(r, -100) | 1).astype(np.int32)

    agree(operators, [a, np.zeros(32, np.int32), 7], ref, [1], leg)
