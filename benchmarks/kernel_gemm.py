"""Kernel compiler benchmark: compile time per kernel, and the simulated MAC
utilisation of a 1024 x 1024 x 1024 int8 GEMM built with the IRBuilder and compiled
for 4 TC1 cores.

    PYTHONPATH=python:<build>/python python benchmarks/kernel_gemm.py [--size 1024] [--tn 128] [--repeat 5]

The GEMM: each core takes a quarter of M and keeps its A rows (256 x 1024 int8) in L1;
it walks the column blocks of B (1024 x TN int8) with two L1 buffers, so the DMA of
block j + 1 overlaps tile.mm on block j; the i32 C blocks (256 x TN) are double-buffered
too, so their write-back overlaps the next tile.mm.
Utilisation = MACs / (cycles x 4 cores x 2048 MAC/cycle), cycles from the simulator.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python", "codegen"))

import tilecore  # noqa: E402
from tilecore import ir  # noqa: E402
from test_npu_kernels import gemm_i8_kernel  # noqa: E402


def small_kernels():
    """A few kernels of different shapes, for the compile-time figures."""
    out = []
    ib = ir.IRBuilder("add")
    A = ib.buffer_param("A", (256,), "int32")
    B = ib.buffer_param("B", (256,), "int32")
    with ib.for_range(0, 256, name="i") as i:
        B[i] = A[i] * 3 + 1
    out.append(ib.get())
    ib = ir.IRBuilder("vadd")
    A = ib.buffer_param("A", (1024,), "float32")
    B = ib.buffer_param("B", (1024,), "float32")
    with ib.for_range(0, 4, name="c", kind="cores") as c:
        T = ib.allocate("float32", (256,), name="T", scope="local")
        ib.call("tile.dma_copy", T[0:256], A[c * 256:c * 256 + 256], 0)
        ib.call("tile.wait", 0)
        ib.call("tile.vec_exp", T[0:256], T[0:256])
        ib.call("tile.dma_copy", B[c * 256:c * 256 + 256], T[0:256], 1)
        ib.call("tile.wait", 1)
    out.append(ib.get())
    return out


def compile_times(funcs, repeat):
    rows = []
    for f in funcs:
        ts = []
        for _ in range(repeat):
            t = time.perf_counter()
            tilecore.build(f, target="npu -cores=4")
            ts.append(time.perf_counter() - t)
        rows.append((f.attrs["global_symbol"], statistics.median(ts)))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--tn", type=int, default=128)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    n = args.size
    gemm = gemm_i8_kernel(n, n, n, args.tn)
    print("compile time per kernel (median of %d):" % args.repeat)
    for name, t in compile_times(small_kernels() + [gemm], args.repeat):
        print("  %-10s %8.2f ms" % (name, t * 1e3))

    tilecore.runtime.npu_configure(0, "npu -cores=4 -ddr=256MiB")
    mod = tilecore.build(gemm, target="npu -cores=4")
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (n, n), dtype=np.int8)
    b = rng.integers(-128, 128, (n, n), dtype=np.int8)
    c = np.zeros((n, n), np.int32)
    t = time.perf_counter()
    mod["gemm_i8"](a, b, c)
    wall = time.perf_counter() - t
    ok = np.array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
    stats = tilecore.runtime.npu_simulator(0).stats()
    cycles = stats["cycles"]
    macs = n * n * n
    util = macs / (cycles * 4 * 2048)
    core0 = stats["cores"][0]
    print(f"int8 GEMM {n}x{n}x{n} on 4 cores, TN={args.tn}: {cycles} cycles, MAC utilisation {util:.1%} "
          f"(simulator: {stats['mac_utilisation']:.1%}), result {'correct' if ok else 'WRONG'}, "
          f"simulated in {wall:.2f} s")
    for eng in ("mm", "din", "dout"):
        e = core0[eng]
        print(f"  core 0 {eng:4s}: busy {e['busy']}, stalled on dependency {e['stalled_dep']}, "
              f"stalled on bandwidth {e['stalled_bw']}, idle {e['idle']}")
    print("  ddr bytes read %d, written %d" % (stats["bytes"]["ddr_read"], stats["bytes"]["ddr_written"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
