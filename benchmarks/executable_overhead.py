"""Executor overhead of a .tcx run: host time outside the kernel calls, per step, next to the
host time of the simulated kernels themselves, on an executable of many small npu steps.

    PYTHONPATH=python:build-dev/python python benchmarks/executable_overhead.py [--steps 64] [--runs 20]

Each step is an element-wise int32 kernel on 256 elements (about 3k simulated instructions);
the figures are medians over --runs runs after one warm-up run.
"""
import argparse
import statistics

import numpy as np

import tilecore
from tilecore import ir, runtime


def add_kernel(n):
    ib = ir.IRBuilder("add")
    A = ib.buffer_param("A", (n,), "int32")
    B = ib.buffer_param("B", (n,), "int32")
    C = ib.buffer_param("C", (n,), "int32")
    with ib.for_range(0, n, name="i") as i:
        C[i] = A[i] + B[i]
    return ib.get()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--n", type=int, default=256)
    a = ap.parse_args()
    mod = tilecore.build(add_kernel(a.n), target="npu -cores=1")
    b = runtime.ExecutableBuilder()
    one = b.add_constant("one", np.ones(a.n, "int32"))
    bufs = [b.add_buffer(f"t{i}", (a.n,), "int32") for i in range(2)]
    b.add_input("x", bufs[0])
    for s in range(a.steps):  # ping-pong between two buffers
        b.add_step("npu", mod, "add", [bufs[s % 2], one, bufs[(s + 1) % 2]], node=f"add{s}", op_type="Add")
    b.add_output("y", bufs[a.steps % 2])
    exe = b.build()
    x = np.arange(a.n, dtype="int32")
    assert (exe.run({"x": x})["y"] == x + a.steps).all()
    over, sim, wall = [], [], []
    for _ in range(a.runs):
        exe.run({"x": x})
        st = exe.stats()
        over.append(st["executor_overhead_seconds"])
        sim.append(st["npu_call_seconds"])
        wall.append(st["wall_seconds"])
    st = exe.stats()
    print(f"{a.steps} npu steps, {st['cycles']} simulated cycles, median of {a.runs} runs")
    print(f"  whole run (C++):        {statistics.median(wall) * 1e3:8.3f} ms")
    print(f"  npu kernel calls:       {statistics.median(sim) * 1e3:8.3f} ms "
          f"({statistics.median(sim) / a.steps * 1e6:.1f} us per step)")
    print(f"  executor overhead:      {statistics.median(over) * 1e3:8.3f} ms "
          f"({statistics.median(over) / a.steps * 1e6:.2f} us per step)")


if __name__ == "__main__":
    main()
