"""Compile time per model and per pass: each compile in a fresh process pinned to one core
(nothing cached in memory from an earlier compile), the median of --runs, and the passes
that took the most of it (``report["passes"]``, docs/compiler.md "The pipeline").

    python benchmarks/compile_time.py [--models resnet50:f32,resnet50:int8,...] [--runs 3] [--passes 8]

A model is ``NAME:PRECISION`` or ``NAME`` (f32; names as ``tilecore bench`` takes them: the
zoo's models and the corpus's ``hf/...``); int8 compiles calibrate on 16 seeded samples (the
calibration is part of the time). ``--models speed`` is the speed set of
benchmarks/model_zoo.py in f32. The time is ``compile()``'s own, tilecore (with the ONNX
front end) already imported, the model file already written. "cold" compiles without a
compile cache; "warm" is the same compile in a fresh process with a compile cache that one
compile filled (docs/compiler.md, "Compile cache": the key computed, the entry checked and
loaded). "kernels" counts the kernel pipeline's runs in the cold compile (each candidate
plan a search prices is one; report["kernel_pipelines"]): what the searches cost, exact where
the wall time moves with the machine's load.

Before and after the models it measures the host itself the same way (one core, a fresh
process): a Python loop of 10^7 additions, a float32 1024 x 1024 x 1024 product in numpy's
BLAS on one thread and a gather of 2^24 int32 from random places (the memory's latency,
which the compiler's walks over its IR feel), medians of 5. On a shared host the compile
times move with these from one day to another: compare them with the host's figures of the
same run. Each compile's own process also times a loop of 10^6 additions just before it
compiles ("loop ms", the median over the cold runs): the host's speed at that moment, which
changes within minutes.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT = "resnet50:f32,resnet50:int8,mobilenet_v2:f32,mobilenet_v2:int8,bert_layer:f32,bert_layer:int8"
CALIB_SAMPLES = 16


def one_core() -> None:
    """Pins this process to one core."""
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    except (AttributeError, OSError):
        pass


def loop_seconds(n: int) -> float:
    """Seconds of a Python loop of ``n`` additions."""
    t0, s = time.perf_counter(), 0
    for i in range(n):
        s += i
    return time.perf_counter() - t0


def child(spec: str, cache_dir: str | None) -> None:
    """One compile of ``spec`` in this process (through the compile cache in ``cache_dir``,
    if given); prints its figures as JSON."""
    one_core()
    import tilecore.frontend  # noqa: F401 (compile() imports it when first called: part of tilecore's import)
    from tilecore import compiler
    from tilecore.bench import models

    name, _, precision = spec.partition(":")
    precision = precision or "f32"
    ref = models.resolve([name])[0]
    path = models.model_path(ref)
    kw = {}
    if precision == "int8":
        kw["calib_samples"] = models.sample_inputs(ref, path, CALIB_SAMPLES, 1)
    report = {}
    loop = 1e3 * min(loop_seconds(10**6) for _ in range(3))  # (ms: the host's speed right now)
    t0 = time.perf_counter()
    compiler.compile(path, precision=precision, report=report, cache_dir=cache_dir, **kw)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "loop": loop, "passes": report["passes"],
                      "pipelines": report.get("kernel_pipelines", 0),
                      "hit": bool(report.get("compile_cache", {}).get("hit"))}))


def host_child() -> None:
    """The host's speed on one core (prints JSON): the seconds of a Python loop of 10^7
    additions, the GFLOP/s of a float32 1024^3 product (numpy's BLAS) and the seconds of a
    gather of 2^24 int32 from random places, medians of 5."""
    one_core()
    import numpy as np

    loops, gflops, gathers = [], [], []
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 1024), dtype=np.float32)
    x @ x  # (BLAS's first call sets up its buffers)
    table, where = np.arange(1 << 24, dtype=np.int32), rng.permutation(1 << 24)
    for _ in range(5):
        t0 = time.perf_counter()
        table[where].sum()
        gathers.append(time.perf_counter() - t0)
        loops.append(loop_seconds(10**7))
        t0 = time.perf_counter()
        x @ x
        gflops.append(2 * 1024**3 / (time.perf_counter() - t0) / 1e9)
    print(json.dumps({"loop_seconds": statistics.median(loops), "gemm_gflops": statistics.median(gflops),
                      "gather_seconds": statistics.median(gathers)}))


def host() -> str:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--host"], capture_output=True, text=True,
                       env=env, check=True)
    h = json.loads(p.stdout.strip().splitlines()[-1])
    return (f"host, one core: a Python loop of 10^7 additions {h['loop_seconds']:.2f} s, a float32 1024^3 "
            f"product {h['gemm_gflops']:.0f} GFLOP/s, a gather of 2^24 int32 at random places "
            f"{1e3 * h['gather_seconds']:.0f} ms (medians of 5)")


def run(spec: str, cache_dir: str | None = None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("TILECORE_COMPILE_CACHE", None)  # (the cold runs compile)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", spec] + (["--cache", cache_dir] if cache_dir else [])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"{spec}: the compile failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--passes", type=int, default=8, help="the passes shown per model (the slowest first)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument("--host", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.host:
        host_child()
        return
    if a.child:
        child(a.child, a.cache)
        return
    if a.models == "speed":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from model_zoo import SPEED_SET

        specs = [f"{n}:f32" for n in SPEED_SET]
    else:
        specs = [s.strip() for s in a.models.split(",") if s.strip()]
    print(f"compile time, one core, a fresh process per compile, median of {a.runs}")
    print(host())
    print(f"{'model':<28} {'cold s':>8} {'warm s':>8} {'kernels':>8} {'loop ms':>8}   slowest passes of the cold "
          "compile (seconds, of the median run)")
    for spec in specs:
        runs = sorted((run(spec) for _ in range(a.runs)), key=lambda r: r["seconds"])
        med = runs[len(runs) // 2]
        top = sorted((r for r in med["passes"] if r["level"] == 0), key=lambda r: -r["seconds"])[:a.passes]
        with tempfile.TemporaryDirectory() as cache:
            run(spec, cache)  # fills it
            warm = [run(spec, cache) for _ in range(a.runs)]
        if not all(w["hit"] for w in warm):
            raise SystemExit(f"{spec}: a compile with the filled compile cache did not load from it")
        print(f"{spec:<28} {statistics.median(r['seconds'] for r in runs):8.2f} "
              f"{statistics.median(w['seconds'] for w in warm):8.2f} {med['pipelines']:>8} "
              f"{statistics.median(r['loop'] for r in runs):8.1f}   "
              + ", ".join(f"{r['pass']} {r['seconds']:.2f}" for r in top))
    print(host())


if __name__ == "__main__":
    main()
