"""Kernel IR -> C source -> a loaded shared library (the `c` target), against numpy."""
import numpy as np
import pytest

import tilecore
from tilecore import ir

DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "float32"]


def elementwise(op, dtype, n=257):
    ib = ir.IRBuilder(f"ew_{op}_{dtype}")
    a = ib.buffer_param("A", (n,), dtype)
    b = ib.buffer_param("B", (n,), dtype)
    c = ib.buffer_param("C", (n,), dtype)
    with ib.for_range(0, n, name="i") as i:
        x, y = a[i], b[i]
        c[i] = {"add": x + y, "sub": x - y, "mul": x * y, "max": ir.max(x, y), "min": ir.min(x, y)}[op]
    return ib.get()


def rand(dtype, shape, rng):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
def test_elementwise(op, dtype):
    rng = np.random.default_rng(hash((op, dtype)) & 0xFFFF)
    a, b = rand(dtype, 257, rng), rand(dtype, 257, rng)
    c = np.zeros(257, dtype)
    mod = tilecore.build(elementwise(op, dtype), target="c")
    assert mod.kind == "c"
    mod(a, b, c)
    with np.errstate(over="ignore"):
        expect = {"add": a + b, "sub": a - b, "mul": a * b, "max": np.maximum(a, b), "min": np.minimum(a, b)}[op]
    if dtype == "float32":
        np.testing.assert_array_equal(c, expect.astype(dtype))
    else:
        assert np.array_equal(c, expect.astype(dtype))  # integers wrap, bit-exact


def test_row_sum_reduction_with_local_accumulator():
    m, n = 8, 100
    ib = ir.IRBuilder("row_sum")
    a = ib.buffer_param("A", (m, n), "int32")
    out = ib.buffer_param("S", (m,), "int32")
    acc = ib.allocate("int32", (1,), name="acc", scope="local")
    with ib.for_range(0, m, name="i") as i:
        acc[0] = 0
        with ib.for_range(0, n, name="j") as j:
            acc[0] = acc[0] + a[i, j]
        out[i] = acc[0]
    x = np.arange(m * n, dtype=np.int32).reshape(m, n)
    s = np.zeros(m, np.int32)
    tilecore.build(ib.get(), "c")(x, s)
    assert np.array_equal(s, x.sum(axis=1))


def test_transpose_and_scalar_params():
    ib = ir.IRBuilder("transpose_scale")
    a = ib.buffer_param("A", (16, 24), "float32")
    b = ib.buffer_param("B", (24, 16), "float32")
    k = ib.scalar_param("k", "float32")
    with ib.for_range(0, 24, name="i") as i:
        with ib.for_range(0, 16, name="j") as j:
            b[i, j] = a[j, i] * k
    x = np.random.default_rng(0).standard_normal((16, 24)).astype(np.float32)
    y = np.zeros((24, 16), np.float32)
    mod = tilecore.build(ib.get(), "c")
    mod(x, y, 2.0)
    np.testing.assert_array_equal(y, x.T * np.float32(2.0))
    assert "tc_transpose_scale" in mod.get_source()


def test_softmax_rows():
    m, n = 4, 64
    ib = ir.IRBuilder("softmax")
    x = ib.buffer_param("X", (m, n), "float32")
    y = ib.buffer_param("Y", (m, n), "float32")
    mx = ib.allocate("float32", (1,), name="mx", scope="local")
    sm = ib.allocate("float32", (1,), name="sm", scope="local")
    with ib.for_range(0, m, name="i") as i:
        mx[0] = x[i, 0]
        with ib.for_range(1, n, name="j") as j:
            mx[0] = ir.max(mx[0], x[i, j])
        sm[0] = ir.const(0.0, "float32")
        with ib.for_range(0, n, name="j") as j:
            y[i, j] = ir.call("tir.exp", x[i, j] - mx[0])
            sm[0] = sm[0] + y[i, j]
        with ib.for_range(0, n, name="j") as j:
            y[i, j] = y[i, j] / sm[0]
    a = np.random.default_rng(1).standard_normal((m, n)).astype(np.float32)
    out = np.zeros_like(a)
    tilecore.build(ib.get(), "c")(a, out)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_casts_saturate_and_round_to_even():
    ib = ir.IRBuilder("to_i8")
    a = ib.buffer_param("A", (6,), "float32")
    b = ib.buffer_param("B", (6,), "int8")
    with ib.for_range(0, 6, name="i") as i:
        b[i] = ir.cast("int8", a[i])
    x = np.array([0.5, 1.5, -2.5, 300.0, -300.0, np.nan], np.float32)
    y = np.zeros(6, np.int8)
    tilecore.build(ib.get(), "c")(x, y)
    assert list(y) == [0, 2, -2, 127, -128, 0]


def test_cores_loop_and_npu_arrays():
    ib = ir.IRBuilder("split")
    a = ib.buffer_param("A", (64,), "int32")
    with ib.for_range(0, 4, name="c", kind="cores") as c:
        with ib.for_range(0, 16, name="i") as i:
            a[c * 16 + i] = c * 100 + i
    mod = tilecore.build(ib.get(), "c")
    expect = np.array([c * 100 + i for c in range(4) for i in range(16)], np.int32)
    host = np.zeros(64, np.int32)
    mod(host)
    assert np.array_equal(host, expect)
    if tilecore.get_global_func("codegen.build_npu", allow_missing=True) is None:
        pytest.skip("built without TILECORE_ENABLE_NPU: no npu device arrays")
    d = tilecore.nd.empty((64,), "int32", tilecore.npu(0))
    mod(d)  # a device array is staged through the host and copied back
    assert np.array_equal(d.numpy(), expect)


def test_save_load_c_module(tmp_path):
    mod = tilecore.build(elementwise("add", "int32", 10), "c")
    mod.save(tmp_path / "k.tcm")
    again = tilecore.runtime.load_module(tmp_path / "k.tcm")
    a = np.arange(10, dtype=np.int32)
    c = np.zeros(10, np.int32)
    again(a, a, c)
    assert np.array_equal(c, 2 * a)


def test_vector_code_runs_lane_by_lane():
    ib = ir.IRBuilder("vec")
    a = ib.buffer_param("A", (8,), "int32")
    a[ir.ramp(0, 1, 8)] = ir.broadcast(ir.const(1, "int32"), 8) + ir.ramp(0, 2, 8)
    out = np.zeros(8, np.int32)
    tilecore.build(ib.get(), "c")(out)
    assert np.array_equal(out, 1 + 2 * np.arange(8))


def test_unknown_expression_cannot_be_emitted_for_c():
    with pytest.raises(ValueError, match="cannot emit"):
        tilecore.build(ir.PrimFunc([], ir.Evaluate(ir.StringImm("x"))), "c")


def test_compiler_failure_is_reported():
    ib = ir.IRBuilder("k")
    a = ib.buffer_param("A", (1,), "int32")
    a[0] = 1
    with pytest.raises(RuntimeError, match="C compiler failed"):
        tilecore.build(ib.get(), "c -cc=/nonexistent/cc")


def shared_exchange(threaded):
    # Each core writes its slot of a shared (L2) buffer; core 0 sums the slots. With a
    # barrier the cores run as threads, without one as iterations: either way they share
    # one buffer, as the cores of the cluster share L2.
    ib = ir.IRBuilder("shared_sum")
    out = ib.buffer_param("Out", (1,), "int32")
    with ib.for_range(0, 4, name="c", kind="cores") as c:
        s = ib.allocate("int32", (4,), name="slots", scope="shared")
        s[c] = (c + 1) * 10
        if threaded:
            ib.call("tir.barrier")
        with ib.if_scope(c.eq(0 if threaded else 3)):
            out[0] = s[0] + s[1] + s[2] + s[3]
    return ib.get()


@pytest.mark.parametrize("threaded", [True, False])
def test_shared_buffer_is_one_for_all_cores(threaded):
    out = np.zeros(1, np.int32)
    tilecore.build(shared_exchange(threaded), "c")(out)
    assert out[0] == 10 + 20 + 30 + 40

