"""benchmarks/bench_backends.py — `tilecore bench` on the zoo x precisions on each backend,
side by side: wall time of serial, local (--jobs processes) and ray (a local cluster),
whether their rows agree (statuses, cosines, cycles), and a cold-cache run next to the
warm-cache rerun of the same jobs.

    python benchmarks/bench_backends.py [--models zoo] [--precision f32,bf16,int8] [--jobs 2] [--skip-ray]

The backend runs do not use the cache (every job computed); the cache runs use a fresh
temporary folder. Bars: local <= 0.6x serial; warm <= 10% of cold.
"""
import argparse
import os
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def comparable(rows):
    return [(r["model"], r["precision"], r["stage"], r["status"], r.get("cosine"), r.get("cycles")) for r in rows]


def main():
    from tilecore import bench

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="zoo", help="a model list item (default zoo)")
    ap.add_argument("--precision", default="f32,bf16,int8")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--skip-ray", action="store_true")
    a = ap.parse_args()
    jobs = bench.jobs_for(a.models.split(","), a.precision.split(","))
    print(f"{len(jobs)} jobs ({a.models} x {a.precision}), {os.cpu_count()} cores", flush=True)
    runs = {}
    backends = ["serial", "local"] + ([] if a.skip_ray else ["ray"])
    for backend in backends:
        t0 = time.perf_counter()
        rows = bench.run(jobs, backend=backend, workers=a.jobs, timeout=a.timeout, cache=None)
        runs[backend] = (time.perf_counter() - t0, rows)
        print(f"  {backend:<7} {runs[backend][0]:8.1f} s", flush=True)
    base = runs["serial"][0]
    print(f"{'backend':<8} {'seconds':>9} {'x serial':>9}  rows")
    for backend in backends:
        wall, rows = runs[backend]
        same = comparable(rows) == comparable(runs["serial"][1])
        print(f"{backend:<8} {wall:9.1f} {wall / base:9.2f}  {'same as serial' if same else 'DIFFER from serial'}")
    print("outcomes (serial):")
    for r in bench.report.outcomes(runs["serial"][1]).values():
        cyc = next((x.get("cycles") for x in runs["serial"][1] if x["model"] == r["model"]
                    and x["precision"] == r["precision"] and x["stage"] == "run"), None)
        print(f"  {r['model']:<14} {r['precision']:>4} {r['stage']:<9} {r['status']:<8} "
              f"cosine {r.get('cosine') if r.get('cosine') is None else format(r['cosine'], '.6f')}  cycles {cyc}  "
              f"{(r.get('reason') or '')[:100]}")
    with tempfile.TemporaryDirectory() as folder:
        cache = bench.Cache(folder)
        t0 = time.perf_counter()
        cold_rows = bench.run(jobs, backend="local", workers=a.jobs, timeout=a.timeout, cache=cache)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        warm_rows = bench.run(jobs, backend="local", workers=a.jobs, timeout=a.timeout, cache=cache)
        warm = time.perf_counter() - t0
    same = comparable(cold_rows) == comparable(warm_rows)
    print(f"cache: cold {cold:.1f} s, warm {warm:.2f} s: warm/cold {warm / cold:.4f} "
          f"({'same rows' if same else 'rows DIFFER'})")


if __name__ == "__main__":
    main()
