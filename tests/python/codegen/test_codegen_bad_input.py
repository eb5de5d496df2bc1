"""Bad input to the code generators: defined results or a named error, never a crash.

Division follows TC1's definition (docs/tc1.md, div/divu/rem/remu) on both targets;
the references below are written from that table, not from either target's output.
"""
import numpy as np
import pytest

import tilecore
from tilecore import ir

pytestmark = pytest.mark.skipif(tilecore.get_global_func("codegen.build_npu", allow_missing=True) is None,
                                reason="built without TILECORE_ENABLE_NPU")

OPS = {"div": ir.truncdiv, "mod": ir.truncmod, "floordiv": ir.floordiv, "floormod": ir.floormod}


def _tc1(op, a, b, dtype):
    """TC1's result for one pair, computed in 32 bits and wrapped to `dtype`."""
    info = np.iinfo(dtype)
    signed = info.min < 0
    a, b = int(a), int(b)
    if not signed:
        q = 0xFFFFFFFF if b == 0 else a // b
        r = a if b == 0 else a % b
        out = q if op in ("div", "floordiv") else r
    else:
        if b == 0:
            q, r = -1, a
        elif a == -2**31 and b == -1:
            q, r = -2**31, 0
        else:
            q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            r = a - q * b
        if op in ("floordiv", "floormod") and r != 0 and (r < 0) != (b < 0):
            q, r = q - 1, r + b
        out = q if op in ("div", "floordiv") else r
    return np.array(out & ((1 << info.bits) - 1), dtype=f"uint{info.bits}").view(dtype)


def _kernel(op, dtype, n):
    ib = ir.IRBuilder(f"k_{op}_{dtype}")
    A = ib.buffer_param("A", (n,), dtype)
    B = ib.buffer_param("B", (n,), dtype)
    C = ib.buffer_param("C", (n,), dtype)
    with ib.for_range(0, n, name="i") as i:
        C[i] = OPS[op](A[i], B[i])
    return ib.get()


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint32", "uint8"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_division_edge_cases_defined_on_both_targets(op, dtype):
    info = np.iinfo(dtype)
    pairs = [(7, 0), (0, 0), (info.min, 0), (info.max, 0), (7, 2), (info.max, 3)]
    if info.min < 0:
        pairs += [(info.min, -1), (-7, 0), (-7, 2), (7, -2), (-7, -2)]
    a = np.array([p[0] for p in pairs], dtype)
    b = np.array([p[1] for p in pairs], dtype)
    want = np.array([_tc1(op, x, y, dtype) for x, y in pairs], dtype)
    f = _kernel(op, dtype, len(pairs))
    for target in ("c", "npu"):
        c = np.zeros(len(pairs), dtype)
        tilecore.build(f, target=target)[f.attrs["global_symbol"]](a, b, c)
        np.testing.assert_array_equal(c, want, err_msg=f"{target}: {op} {dtype}")


def test_constant_division_by_zero_c():
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (2,), "int32")
    A[0] = ir.floordiv(ir.const(7, "int32"), A[1])
    A[1] = ir.truncdiv(A[0], ir.const(0, "int32"))
    a = np.array([0, 0], "int32")
    tilecore.build(ib.get(), target="c")["k"](a)
    np.testing.assert_array_equal(a, [-1, -1])


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_int64_buffer_on_npu_is_a_named_error(dtype):
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (4,), dtype)
    A[0] = A[1] + A[2]
    with pytest.raises(ValueError, match=f"dtype {dtype} has no TC1 type"):
        tilecore.build(ib.get(), target="npu")


def test_int64_constant_too_wide_is_a_source_error():
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (4,), "int32")
    ib.set_span(ir.span("wide.py", 12))
    A[0] = ir.cast("int32", ir.cast("int64", A[1]) + ir.const(2**40, "int64"))
    with pytest.raises(ValueError, match=r"(?s)constant 1099511627776.*wide\.py:12"):
        tilecore.build(ib.get(), target="npu")


@pytest.mark.parametrize("target", ["c", "npu"])
def test_unbound_var_is_named(target):
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (4,), "int32")
    j = ir.var("j")
    A[0] = j + 1
    with pytest.raises(ValueError, match="unbound variable `j`"):
        tilecore.build(ib.get(), target=target)


@pytest.mark.parametrize("target", ["c", "npu"])
def test_constant_out_of_bounds_index_names_the_buffer(target):
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (4,), "int32")
    A[100000000] = 7
    with pytest.raises(ValueError, match=r"buffer `A` at constant index 100000000 is out of bounds"):
        tilecore.build(ib.get(), target=target)
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (4,), "int32")
    A[0] = A[-1]
    with pytest.raises(ValueError, match=r"load of buffer `A` at constant index -1"):
        tilecore.build(ib.get(), target=target)


@pytest.mark.parametrize("target", ["c", "npu"])
def test_tile_region_larger_than_its_buffer(target):
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (1024,), "int32")
    T = ib.allocate("int32", (32,), name="T", scope="local")
    ib.call("tile.dma_copy", T[0:1024], A[0:1024], 0)
    ib.call("tile.wait", 0)
    with pytest.raises(ValueError, match=r"region \[0:1024\] of buffer `T`.*larger than the buffer"):
        tilecore.build(ib.get(), target=target)


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_shift_amounts_wrap_on_both_targets(dtype):
    # TC1 shifts by b & 31 (sll/sra/srl); C's << with b >= 32 is undefined, so the c target masks too.
    n = 6
    ib = ir.IRBuilder("k_shift_" + dtype)
    A = ib.buffer_param("A", (n,), dtype)
    B = ib.buffer_param("B", (n,), dtype)
    C = ib.buffer_param("C", (n,), dtype)
    D = ib.buffer_param("D", (n,), dtype)
    with ib.for_range(0, n, name="i") as i:
        C[i] = ir.call("tir.shift_left", A[i], B[i])
        D[i] = ir.call("tir.shift_right", A[i], B[i])
    f = ib.get()
    a = np.array([1, 3, -5 & 0xFFFFFFFF, 7, 2**31 - 1, 12345], "uint32").view(dtype)
    b = np.array([0, 33, 31, 64, 1, 45], dtype)
    s = b.astype(np.uint64) & 31
    want_l = (a.astype(np.uint32).astype(np.uint64) << s).astype(np.uint32).view(dtype)
    want_r = (a.astype(np.int64) >> s.astype(np.int64)).astype(dtype) if dtype == "int32" else \
        (a.astype(np.uint64) >> s).astype(dtype)
    for target in ("c", "npu"):
        c, d = np.zeros(n, dtype), np.zeros(n, dtype)
        tilecore.build(f, target=target)[f.attrs["global_symbol"]](a, b, c, d)
        np.testing.assert_array_equal(c, want_l, err_msg=target)
        np.testing.assert_array_equal(d, want_r, err_msg=target)
