"""benchmarks/pysim_speed.py — PySim next to the compiled kernel on the TC1 simulator.

Two DSL kernels, each run both ways in the same process and checked against numpy:

(a) a 1M-element int32 vector add written with SIMD registers (vload / vadd /
    vstore, 8 lanes per iteration) split over 4 cores;
(b) a row softmax of a 1024 x 64 float32 matrix on the vector engine (DMA, tredmax,
    tadds, texp, tredsum, trecip, tmuls), 4 rows per tile, split over 4 cores.

For each: PySim wall time (median of --repeat runs), the compiled kernel's wall
time on the C++ simulator (``tilecore.build(kernel, target="npu -cores=4")``) and
their ratio. It needs a build with the npu (the default; not
``TILECORE_ENABLE_NPU=OFF``).

    python benchmarks/pysim_speed.py [--repeat 3] [--n 1048576] [--rows 1024]

PySim runs both kernels' loops batched, as whole numpy operations (pysim/batch.py;
``TILECORE_PYSIM_BATCH=0`` runs them one iteration at a time). Measured with
``python benchmarks/pysim_speed.py --repeat 3`` on a shared 2-core x86-64 machine
(Python 3.11, numpy 2.4), PySim / compiled-on-the-simulator:

=====================  ====================  ==================
kernel                 one iteration a time  batched (default)
=====================  ====================  ==================
int32 vector add, 1M   210 (16.8 s / 80 ms)  0.9 (174 / 191 ms)
softmax 1024 x 64      114 (557 / 4.9 ms)    3.5 (56 / 16 ms)
=====================  ====================  ==================

(the first column before batching and the per-operation cuts; the machine was shared
with other builds, so single figures move by up to 2x between runs).
"""
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

import tilecore
from tilecore import script as S

LANES = 8


@S.prim_func
def vector_add(a: S.ptr("int32", "global"), b: S.ptr("int32", "global"), c: S.ptr("int32", "global"), n: S.int32):
    per = n // S.get_local_size()
    base = S.get_local_id() * per
    for i in range(base, base + per, LANES):
        S.vstore(S.vadd(S.vload(a + i), S.vload(b + i)), c + i)


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


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def compiled_runner(kernel):
    """The compiled kernel on the simulator, as a callable."""
    return tilecore.build(kernel, target="npu -cores=4")[kernel.name]


def bench(name, kernel, make_args, check, repeat):
    args = make_args()
    kernel(*args)  # parse once, warm up
    check(args)
    t_py = median_time(lambda: kernel(*make_args()), repeat)
    fn = compiled_runner(kernel)
    cargs = make_args()
    fn(*cargs)
    check(cargs)
    t_c = median_time(lambda: fn(*make_args()), repeat)
    compiled = f"{t_c * 1e3:10.1f} ms  (PySim / compiled = {t_py / t_c:.1f})"
    print(f"{name:<34} PySim {t_py * 1e3:10.1f} ms | compiled on the simulator: {compiled}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--n", type=int, default=1 << 20)
    p.add_argument("--rows", type=int, default=1024)
    opts = p.parse_args()
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, numpy "
          f"{np.__version__}, {os.cpu_count()} host cores; PySim threads: "
          f"{'1 (TILECORE_PYSIM_SINGLE_THREAD)' if os.environ.get('TILECORE_PYSIM_SINGLE_THREAD') else 4}")
    rng = np.random.default_rng(0)
    n = opts.n
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    want = (a.astype(np.int64) + b).astype(np.int32)

    def add_args():
        return [a, b, np.zeros(n, np.int32), n]

    def add_check(args):
        assert np.array_equal(args[2], want), "vector add: wrong result"

    bench(f"int32 vector add, {n} elements", vector_add, add_args, add_check, opts.repeat)

    rows = opts.rows
    x = (rng.standard_normal((rows, 64)) * 3).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)

    def sm_args():
        return [x, np.zeros_like(x), rows]

    def sm_check(args):
        assert np.allclose(args[1], sm, rtol=1e-5, atol=1e-7), "softmax: wrong result"

    bench(f"softmax, {rows} x 64 float32", softmax, sm_args, sm_check, opts.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
