"""benchmarks/sim_throughput.py — how fast the TC1 simulator runs, side by side with numpy.

(a) Functional simulation of a 1024 x 1024 x 1024 int8 GEMM on 4 simulated cores
    (benchmarks/sim_gemm_i8.s: 128 x 128 tiles, A/B double-buffered in L1), as host
    GMAC/s, next to numpy float32 matmul of the same shape in the same run.
(b) Timing-only simulation of benchmarks/sim_command_mix.s (one DMA-in, matrix,
    vector and DMA-out command per iteration on every core), in tile commands/s.

Each figure is the median of --repeat runs. The GEMM result is checked against
numpy (int64 matmul of the same inputs) once.

    python benchmarks/sim_throughput.py [--repeat 5] [--size 1024] [--iters 250000]

Written against the Python API of docs/tc1.md: tilecore.arch.assemble(text),
tilecore.sim.Simulator(target="npu -cores=4", mode=...), write/read/load/run/stats.
"""
import argparse
import os
import platform
import statistics
import time

import numpy as np

import tilecore

HERE = os.path.dirname(os.path.abspath(__file__))
A_DDR, B_DDR, C_DDR = 0x0, 0x1000000, 0x2000000


def gemm_source(m, n, k, tm=128, tn=128, cores=4):
    with open(os.path.join(HERE, "sim_gemm_i8.s")) as f:
        body = f.read()
    params = dict(M=m, N=n, K=k, TM=tm, TN=tn, NC=cores, A_DDR=A_DDR, B_DDR=B_DDR, C_DDR=C_DDR)
    return "".join(f".equ {key}, {value}\n" for key, value in params.items()) + body


def command_mix_source(iters):
    with open(os.path.join(HERE, "sim_command_mix.s")) as f:
        return f".equ ITERS, {iters}\n" + f.read()


def bench_gemm(size, repeat):
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=(size, size), dtype=np.int8)
    b = rng.integers(-128, 128, size=(size, size), dtype=np.int8)
    program = tilecore.arch.assemble(gemm_source(size, size, size))
    sim = tilecore.sim.Simulator(target="npu -cores=4", mode="functional")
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sim.load(program)
        sim.write("ddr", A_DDR, a)
        sim.write("ddr", B_DDR, b)
        sim.run()
        c = sim.read("ddr", C_DDR, (size, size), "int32")
        times.append(time.perf_counter() - t0)
    expect = a.astype(np.int64) @ b.astype(np.int64)
    assert np.array_equal(np.asarray(c), expect.astype(np.int32)), "simulated GEMM differs from numpy"

    fa = a.astype(np.float32)
    fb = b.astype(np.float32)
    fa @ fb  # warm up the BLAS threads
    np_times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fa @ fb
        np_times.append(time.perf_counter() - t0)
    macs = float(size) ** 3
    return macs / statistics.median(times) / 1e9, macs / statistics.median(np_times) / 1e9


def bench_timing(iters, repeat):
    program = tilecore.arch.assemble(command_mix_source(iters))
    rates = []
    for _ in range(repeat):
        sim = tilecore.sim.Simulator(target="npu -cores=4", mode="timing")
        sim.load(program)
        t0 = time.perf_counter()
        sim.run()
        dt = time.perf_counter() - t0
        rates.append(sim.stats()["commands"] / dt)
    return statistics.median(rates)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--iters", type=int, default=250000)
    args = parser.parse_args()

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}")
    sim_gmacs, np_gmacs = bench_gemm(args.size, args.repeat)
    n = args.size
    print(f"(a) {n}x{n}x{n} GEMM   simulator int8 (functional, 4 cores): {sim_gmacs:8.2f} GMAC/s")
    print(f"    {n}x{n}x{n} matmul numpy float32:                     {np_gmacs:8.2f} GMAC/s")
    print(f"    ratio simulator / numpy: {sim_gmacs / np_gmacs:.2f}x (target >= 0.25x)")
    rate = bench_timing(args.iters, args.repeat)
    print(f"(b) timing-only mode: {rate / 1e6:.2f} M tile commands/s (target >= 1 M/s)")


if __name__ == "__main__":
    main()
