"""Sweeps the code-generator fuzzer (tests/python/codegen/random_kernels.py) over many
seeds: each random kernel is built for npu and c, run, and compared bit for bit with the
numpy model. Prints every disagreement (seed, target, first differing element) and a
summary line.

    python benchmarks/fuzz_codegen.py --count 500 --start 1000 --depth 5
"""
import argparse
import pathlib
import sys
import time

import numpy as np

import tilecore

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python" / "codegen"))
import random_kernels as rk  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--start", type=int, default=1000)
    ap.add_argument("--depth", type=int, default=5)
    ap.add_argument("--targets", default="c,npu -cores=2")
    args = ap.parse_args()
    bad = errors = 0
    t0 = time.time()
    for seed in range(args.start, args.start + args.count):
        func, model, kind = rk.make_kernel(seed, args.depth)
        a, b = rk.inputs(seed)
        want = rk.expected(model, a, b)
        for target in args.targets.split(","):
            out = np.zeros(rk.N, np.int32)
            try:
                tilecore.build(func, target=target)(a.copy(), b.copy(), out)
            except Exception as e:  # noqa: BLE001
                errors += 1
                print(f"seed {seed} ({kind}) {target}: {type(e).__name__}: {str(e).splitlines()[0]}")
                continue
            diff = np.nonzero(out != want)[0]
            if diff.size:
                bad += 1
                i = diff[0]
                print(f"seed {seed} ({kind}) {target}: {diff.size} elements differ, first [{i}] got {out[i]} "
                      f"want {want[i]} (a={a[i]}, b={b[i]})")
    print(f"{args.count} kernels x {len(args.targets.split(','))} targets: {bad} wrong, {errors} errors, "
          f"{time.time() - t0:.1f} s")
    return 1 if bad or errors else 0


if __name__ == "__main__":
    sys.exit(main())
