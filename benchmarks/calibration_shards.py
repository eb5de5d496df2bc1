"""benchmarks/calibration_shards.py — calibration as a map-reduce (tilecore.bench.calibration):
the peak resident memory of a large calibration split over worker processes, next to a
small one in a single process, and the tables of several shard counts compared bit for bit.

    python benchmarks/calibration_shards.py [--model resnet50] [--samples 1024] [--workers 4] [--small 16]

Each measurement runs in a fresh process so that its peak (``ru_maxrss``) is its own: the
single process calibrates --small samples (tilecore.compiler.calibration.calibrate, the
samples in memory, as ``tilecore compile --calib`` does); the sharded run calibrates
--samples samples drawn per index (bench.ZooSamples) in --workers shards on --workers
local processes, and its figure is the largest peak among the workers. The bar: each
worker's peak at most the single process's + 10%.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _single(model, n):
    from tilecore import zoo
    from tilecore.bench import ZooSamples
    from tilecore.compiler.calibration import calibrate

    path = zoo.export(model)
    samples = ZooSamples(model, n).read(0, n)
    t0 = time.perf_counter()
    table = calibrate(path, samples, method="minmax")
    return {"seconds": time.perf_counter() - t0, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "tensors": len(table.thresholds)}


def _sharded(model, n, workers, shards=None):
    from tilecore import zoo
    from tilecore.bench import ZooSamples, calibrate_sharded

    path = zoo.export(model)
    t0 = time.perf_counter()
    table = calibrate_sharded(path, ZooSamples(model, n), shards=shards or workers, method="minmax",
                              backend="local", jobs=workers)
    return {"seconds": time.perf_counter() - t0,
            "worker_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "parent_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "tensors": len(table.thresholds), "table": json.dumps(table.to_json(), sort_keys=True)}


def _in_fresh_process(*args):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", json.dumps(args)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--samples", type=int, default=1024)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--small", type=int, default=16)
    ap.add_argument("--identical", type=int, default=24, help="samples of the bit-identity check over 1, 2, 7 shards")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.measure:
        kind, *rest = json.loads(a.measure)
        print(json.dumps(_single(*rest) if kind == "single" else _sharded(*rest)))
        return
    print(f"{a.model}: min/max calibration, {os.cpu_count()} cores")
    single = _in_fresh_process("single", a.model, a.small)
    print(f"  single process, {a.small:>5} samples: peak {single['peak_mb']:8.0f} MiB   {single['seconds']:7.1f} s  "
          f"({single['tensors']} tensors)", flush=True)
    sharded = _in_fresh_process("sharded", a.model, a.samples, a.workers)
    bar = single["peak_mb"] * 1.10
    print(f"  {a.workers} workers,      {a.samples:>5} samples: peak {sharded['worker_peak_mb']:8.0f} MiB per worker "
          f"(parent {sharded['parent_peak_mb']:.0f} MiB)   {sharded['seconds']:7.1f} s", flush=True)
    print(f"  worker peak / single peak: {sharded['worker_peak_mb'] / single['peak_mb']:.3f} "
          f"(bar: <= 1.10, i.e. {bar:.0f} MiB): {'met' if sharded['worker_peak_mb'] <= bar else 'NOT MET'}", flush=True)
    tables = {s: _in_fresh_process("sharded", a.model, a.identical, min(s, 2), s)["table"] for s in (1, 2, 7)}
    same = len(set(tables.values())) == 1
    print(f"  tables of {a.identical} samples over 1, 2 and 7 shards: {'bit-identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
