"""A generator of random small Kernel IR kernels over int32 buffers, with a numpy model of
TC1's semantics for each, for the code-generator fuzzer (test_random_kernels.py and
benchmarks/fuzz_codegen.py).

A kernel is `Out[i] = e(A[i], B[i], i)` for every i, as a scalar loop, a vector loop of
int32x8 (ramp indices) or a loop split over two cores; e is a random expression tree of
wrapping + - *, min, max, truncating and floor division and modulo by non-zero divisors,
bitwise and / or / xor, shifts (by b & 31), comparisons in selects, constants of every
size and lets. The model computes in int64 and wraps to int32 after every operation,
as TC1's scalar and SIMD units do.
"""
import numpy as np

from tilecore import ir

N = 64
LANES = 8
_I32 = np.int64(1) << 32


def wrap(x):
    x = np.asarray(x, np.int64) & 0xFFFFFFFF
    return np.where(x >= 1 << 31, x - _I32, x).astype(np.int64)


def _trunc_div(a, b):
    q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
    return wrap(q)


def _trunc_mod(a, b):
    return wrap(a - np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b) * b)


class Gen:
    """Random expressions: `expr(depth)` returns (IR builder of the expression from the
    leaves, numpy model)."""

    def __init__(self, rng, vector):
        self.rng = rng
        self.vector = vector

    def const(self):
        r = self.rng
        v = int(r.choice([r.integers(-8, 9), r.integers(-2 ** 31, 2 ** 31), r.integers(-1000, 1000),
                          2 ** 31 - 1, -2 ** 31]))
        return (lambda L: L["c"](v)), (lambda env: np.full(N, v, np.int64))

    def leaf(self):
        k = self.rng.integers(0, 4)
        if k == 0:
            return (lambda L: L["a"]), (lambda env: env["a"])
        if k == 1:
            return (lambda L: L["b"]), (lambda env: env["b"])
        if k == 2:
            return (lambda L: L["i"]), (lambda env: env["i"])
        return self.const()

    def nonzero(self, depth):
        """A divisor: a constant other than 0, or max(e, 1) / min(e, -1)."""
        r = self.rng
        if r.random() < 0.5:
            v = int(r.choice([r.integers(1, 10), -r.integers(1, 10), r.integers(1, 2 ** 31), -1]))
            return (lambda L: L["c"](v)), (lambda env: np.full(N, v, np.int64))
        ei, em = self.expr(depth)
        if r.random() < 0.5:
            return (lambda L: ir.max(ei(L), L["c"](1))), (lambda env: np.maximum(em(env), 1))
        return (lambda L: ir.min(ei(L), L["c"](-1))), (lambda env: np.minimum(em(env), -1))

    def expr(self, depth):
        r = self.rng
        if depth <= 0 or r.random() < 0.15:
            return self.leaf()
        ops = ["add", "sub", "mul", "min", "max", "and", "or", "xor", "shl", "shr", "select", "div", "mod",
               "floordiv", "floormod", "let"]
        op = ops[r.integers(0, len(ops))]
        ai, am = self.expr(depth - 1)
        if op in ("div", "mod", "floordiv", "floormod"):
            bi, bm = self.nonzero(depth - 1)
        else:
            bi, bm = self.expr(depth - 1)
        if op == "add":
            return (lambda L: ai(L) + bi(L)), (lambda env: wrap(am(env) + bm(env)))
        if op == "sub":
            return (lambda L: ai(L) - bi(L)), (lambda env: wrap(am(env) - bm(env)))
        if op == "mul":
            return (lambda L: ai(L) * bi(L)), (lambda env: wrap(am(env) * bm(env)))
        if op == "min":
            return (lambda L: ir.min(ai(L), bi(L))), (lambda env: np.minimum(am(env), bm(env)))
        if op == "max":
            return (lambda L: ir.max(ai(L), bi(L))), (lambda env: np.maximum(am(env), bm(env)))
        if op in ("and", "or", "xor"):
            fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
            return ((lambda L: ir.call(f"tir.bitwise_{op}", ai(L), bi(L))),
                    (lambda env: wrap(fn(am(env), bm(env)))))
        if op == "shl":
            return ((lambda L: ir.call("tir.shift_left", ai(L), bi(L))),
                    (lambda env: wrap(am(env) << (bm(env) & 31))))
        if op == "shr":
            return ((lambda L: ir.call("tir.shift_right", ai(L), bi(L))),
                    (lambda env: am(env) >> (bm(env) & 31)))
        if op == "select":
            ci, cm = self.expr(depth - 1)
            cmp = ["lt", "le", "eq"][r.integers(0, 3)]

            def build(L, cmp=cmp):
                x, y = ci(L), ai(L)
                cond = x < y if cmp == "lt" else x <= y if cmp == "le" else x.eq(y)
                return ir.select(cond, ai(L), bi(L))

            def model(env, cmp=cmp):
                x, y = cm(env), am(env)
                cond = x < y if cmp == "lt" else x <= y if cmp == "le" else x == y
                return np.where(cond, am(env), bm(env))

            return build, model
        if op == "div":
            return (lambda L: ir.truncdiv(ai(L), bi(L))), (lambda env: _trunc_div(am(env), bm(env)))
        if op == "mod":
            return (lambda L: ir.truncmod(ai(L), bi(L))), (lambda env: _trunc_mod(am(env), bm(env)))
        if op == "floordiv":
            return (lambda L: ir.floordiv(ai(L), bi(L))), (lambda env: wrap(am(env) // bm(env)))
        if op == "floormod":
            return (lambda L: ir.floormod(ai(L), bi(L))), (lambda env: wrap(am(env) % bm(env)))
        # let: bind a subexpression once, use it twice
        def build_let(L):
            v = ir.var("t", "int32x8" if self.vector else "int32")
            inner = dict(L)
            inner["a"] = v
            return ir.let(v, ai(L), ai(inner) + bi(L))

        def model_let(env):
            inner = dict(env)
            inner["a"] = am(env)
            return wrap(am(inner) + bm(env))

        return build_let, model_let


def make_kernel(seed, depth=4):
    """(PrimFunc, numpy model, kind) of random kernel number `seed`."""
    rng = np.random.default_rng(seed)
    kind = ["scalar", "vector", "cores"][seed % 3]
    g = Gen(rng, kind == "vector")
    build, model = g.expr(depth)
    ib = ir.IRBuilder(f"rand{seed}")
    A = ib.buffer_param("A", (N,), "int32")
    B = ib.buffer_param("B", (N,), "int32")
    O = ib.buffer_param("O", (N,), "int32")
    if kind == "vector":
        with ib.for_range(0, N // LANES, name="j") as j:
            idx = ir.ramp(j * LANES, 1, LANES)
            leaves = {"a": A[idx], "b": B[idx], "i": idx, "c": lambda v: ir.broadcast(ir.const(v, "int32"), LANES)}
            O[idx] = build(leaves)
    elif kind == "cores":
        with ib.for_range(0, 2, name="core", kind="cores") as c:
            with ib.for_range(0, N // 2, name="k") as k:
                i = c * (N // 2) + k
                O[i] = build({"a": A[i], "b": B[i], "i": i, "c": lambda v: ir.const(v, "int32")})
    else:
        with ib.for_range(0, N, name="i") as i:
            O[i] = build({"a": A[i], "b": B[i], "i": i, "c": lambda v: ir.const(v, "int32")})
    return ib.get(), model, kind


def inputs(seed):
    rng = np.random.default_rng(seed + 1_000_003)
    pick = lambda: np.where(rng.random(N) < 0.5, rng.integers(-2 ** 31, 2 ** 31, N), rng.integers(-20, 20, N))
    return pick().astype(np.int32), pick().astype(np.int32)


def expected(model, a, b):
    env = {"a": a.astype(np.int64), "b": b.astype(np.int64), "i": np.arange(N, dtype=np.int64)}
    return wrap(model(env)).astype(np.int32)
