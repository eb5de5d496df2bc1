"""The code-generator fuzzer: random small kernels (random_kernels.py) compiled for npu
and c, run, and compared bit for bit with a numpy model of TC1's semantics. A fixed-seed
slice runs here; `python benchmarks/fuzz_codegen.py --count N` sweeps further."""
import sys
import pathlib

import numpy as np
import pytest

import tilecore

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import random_kernels as rk  # noqa: E402

SEEDS = range(24)


def run(func, target, a, b):
    out = np.zeros(rk.N, np.int32)
    tilecore.build(func, target=target)(a.copy(), b.copy(), out)
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_random_kernel_agrees_on_npu_c_and_numpy(seed):
    func, model, kind = rk.make_kernel(seed)
    a, b = rk.inputs(seed)
    want = rk.expected(model, a, b)
    for target in ("c", "npu -cores=2"):
        got = run(func, target, a, b)
        np.testing.assert_array_equal(got, want, err_msg=f"seed {seed} ({kind}) on {target}:\n{func.script()}")


# Found by the fuzzer: the simplifier took wrapping int32 expressions for exact ones.
def _one(fn, b):
    from tilecore import ir

    ib = ir.IRBuilder("found")
    B = ib.buffer_param("B", (len(b),), "int32")
    O = ib.buffer_param("O", (len(b),), "int32")
    with ib.for_range(0, len(b), name="i") as i:
        O[i] = fn(ir, B[i])
    out = {}
    for target in ("c", "npu -cores=1"):
        o = np.zeros(len(b), np.int32)
        tilecore.build(ib.get(), target=target)(b.copy(), o)
        out[target] = o
    return out


def test_floor_division_of_a_sum_with_int32_min_is_not_split():
    b = np.array([12, -18, 0, 2 ** 31 - 1], np.int32)
    # (INT32_MIN + b) // 5 was rewritten to (b + 3) // 5 + 429496729, taking INT32_MIN for +2^31
    want = rk.wrap(np.int64(-2 ** 31) + b.astype(np.int64)) // 5  # the sum wraps, then divides
    for got in _one(lambda ir, x: (ir.const(-2 ** 31, "int32") + x) // 5, b).values():
        np.testing.assert_array_equal(got, want.astype(np.int32))


def test_comparison_of_constants_is_exact():
    b = np.array([7, -7], np.int32)
    # 4 <= INT32_MIN was decided as 4 - INT32_MIN <= 0, the difference wrapped
    fn = lambda ir, x: ir.select(ir.const(4, "int32") <= ir.const(-2 ** 31, "int32"), ir.const(1, "int32"), x)
    for got in _one(fn, b).values():
        np.testing.assert_array_equal(got, b)
