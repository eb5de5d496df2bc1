"""``tilecore bench``: models x precisions x option sets as jobs, run serially, on a local
process pool or on a Ray cluster, with a cache, a JSON and a Markdown report, reruns of
the failures and a diff against a baseline (docs/bench.md).

    tilecore bench MODELS_OR_FOLDER_OR_CORPUS... --precision f32,int8 [--options k=v,...]...
                   [--backend serial|local|ray] [--jobs N] [--timeout S] [--address ADDR]
                   [--json R.json] [--md R.md] [--baseline OLD.json] [--rerun-failed OLD.json]
                   [--no-cache] [--cache-dir DIR] [--preload FILE_OR_MODULE]... [--no-progress]

Exit status: 0 when every job passed or was refused with a named error (without
--baseline) or nothing regressed (with it); 1 otherwise or on bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from . import _fail, arg, command


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < s < 1e7:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return s


def _line(rows: list[dict]) -> str:
    last = rows[-1]
    run = next((r for r in rows if r["stage"] == "run"), {})
    opts = ",".join(f"{k}={v}" for k, v in sorted((last.get("options") or {}).items()))
    parts = [f"{last['model']:<28} {last['precision']:>4} {opts:<14} {last['stage']:<9} {last['status']:<8}"]
    if last.get("cosine") is not None:
        parts.append(f"cosine {last['cosine']:.6f}")
    if run.get("cycles") is not None:
        parts.append(f"cycles {run['cycles']}")
    if last.get("reason"):
        parts.append(last["reason"][:160])
    if any(r.get("cached") for r in rows):
        parts.append("(cached)")
    return "  ".join(parts)


@command("bench", "run models x precisions x option sets through import, calibrate, compile, run and compare, "
         "serially, on local processes or on Ray, with a cache and JSON/Markdown reports (docs/bench.md)", [
    arg("models", nargs="*", metavar="MODEL", help="ONNX files, folders, corpora (zoo, outside, onnx-node-tests; "
        "CORPUS:SELECT narrows) or model names"),
    arg("--corpus", action="append", default=[], help="a corpus to add to the models (zoo, outside, onnx-node-tests)"),
    arg("--precision", default="f32", help="comma list of f32, f16, bf16, int8 (default f32)"),
    arg("--options", action="append", default=[], metavar="K=V,...",
        help="an option set (repeatable: each is a job per model and precision); options: target, group, "
             "auto_mixed, entry, bind, calib_samples, calib_method, calib_shards, eval_samples, runs, ort_threads, "
             "gate (docs/bench.md)"),
    arg("--backend", default="local", choices=["serial", "local", "ray"], help="where jobs run (default local)"),
    arg("--jobs", type=_positive, default=None, help="local: worker processes at once (default: the CPU count)"),
    arg("--timeout", type=_seconds, default=600.0, help="seconds a job may take before it is killed (default 600)"),
    arg("--address", help="ray: the cluster to connect to (default RAY_ADDRESS, else a local cluster)"),
    arg("--json", metavar="R.json", help="write the rows here"),
    arg("--md", metavar="R.md", help="write the Markdown report here"),
    arg("--baseline", metavar="OLD.json", help="a previous JSON report: the differences, regressions first"),
    arg("--rerun-failed", metavar="OLD.json", help="run the jobs that did not pass in this report"),
    arg("--no-cache", action="store_true", help="neither read nor write the cache"),
    arg("--cache-dir", metavar="DIR", help="the cache folder (default $TILECORE_CACHE/bench)"),
    arg("--preload", action="append", default=[], metavar="FILE_OR_MODULE",
        help="imported by each worker before its job (custom ops)"),
    arg("--no-progress", action="store_true", help="no progress bar"),
])
def _bench(args: argparse.Namespace) -> int:
    from ..bench import BenchError, Cache, jobs_for, report, run
    from ..bench.jobs import PRECISIONS, parse_options

    try:
        precisions = [p.strip() for p in args.precision.split(",") if p.strip()]
        bad = [p for p in precisions if p not in PRECISIONS]
        if bad or not precisions:
            raise BenchError(f"--precision: {', '.join(bad) or '(none)'}: expected a comma list of "
                             f"{', '.join(PRECISIONS)}")
        option_sets = [parse_options(t) for t in args.options] or [{}]
        baseline = report.load(args.baseline) if args.baseline else None
        items = list(args.models) + list(args.corpus)
        jobs = jobs_for(items, precisions, option_sets, args.preload) if items else []
        if args.rerun_failed:
            jobs += report.failed_jobs(report.load(args.rerun_failed), where=f"--rerun-failed {args.rerun_failed}")
        if not jobs:
            raise BenchError("nothing to run: give models, --corpus or --rerun-failed (with failures in it)")
    except BenchError as e:
        return _fail(str(e))
    cache = None if args.no_cache else Cache(args.cache_dir)
    workers = args.jobs or os.cpu_count() or 1
    print(f"tilecore bench: {len(jobs)} job(s), backend {args.backend}"
          f"{f' ({workers} workers)' if args.backend == 'local' else ''}, timeout {args.timeout:g} s, "
          f"cache {'off' if cache is None else cache.folder}", flush=True)
    t0 = time.perf_counter()
    rows = run(jobs, backend=args.backend, workers=workers, timeout=args.timeout, cache=cache,
               progress=not args.no_progress and sys.stderr.isatty(), address=args.address,
               on_rows=lambda job, rs: print(_line(rs), flush=True))
    wall = time.perf_counter() - t0
    for p in (cache.problems if cache is not None else []):
        print(f"tilecore bench: {p}", file=sys.stderr)
    changes = report.diff(baseline, rows) if baseline is not None else None
    if args.json:
        report.write_json(args.json, rows)
    if args.md:
        report.write_markdown(args.md, report.markdown(rows, changes))
    finals = list(report.outcomes(rows).values())
    counts = {s: sum(r["status"] == s for r in finals) for s in ("pass", "wrong", "refused", "crash", "timeout")}
    print(f"{len(finals)} job(s) in {wall:.1f} s: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    if changes is not None:
        for what in ("regressions", "improvements"):
            print(f"{len(changes[what])} {what[:-1] if len(changes[what]) == 1 else what} against {args.baseline}")
            for ln in changes[what]:
                print(f"  {ln}")
        return 1 if changes["regressions"] else 0
    return 1 if counts["wrong"] + counts["crash"] + counts["timeout"] else 0
