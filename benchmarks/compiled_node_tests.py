"""benchmarks/compiled_node_tests.py — the ONNX backend node tests compiled by
`tilecore.compile` and run by `Executable.run` (npu steps on the simulator, host steps
through tilecore's own `c` kernels), case by case.

A case counts only when ONNX Runtime passes it (the others are counted and skipped; this
process asks ONNX Runtime). Every counted case is a `tilecore bench` job (docs/bench.md) of
the `onnx-node-tests` corpus: the compile stage builds it, the run stage runs every data
set, the compare stage checks them with the case's tolerances
(`tilecore.compiler.conformance`, shared with tests/python/compiler/test_compiled_node_tests.py).
Jobs run in processes of their own on `--backend` (`local` by default, `--jobs` at once),
so a crash or a hang (`--timeout`) costs one case; the bench's cache answers a case
already run with the same tilecore (`--no-cache` skips it).

The model is compiled as `tilecore compile` takes the file (every input fed when it
runs); `--bind` makes the inputs that only feed compile-time operands (Slice's starts, a
reduction's axes, ...) initializers per data set, as a deployed model carries them (the
bench's `bind` option). `--entry bytes` (the default) passes the model's bytes to
`tilecore.compile`, `--entry graph` the Graph `tilecore.frontend.from_onnx` makes of it
(the bench's `entry` option), `--entry both` runs both and lists the cases whose outcome
differs.

It prints, per entry point, the failures grouped by reason (with their op types), the op
types that ran on the npu in at least one passing case, the outcomes (passed, refused with
a named error, silently wrong, off only by 16-bit float rounding, crashed) and the pass rate:

    python benchmarks/compiled_node_tests.py --jobs 2 --entry both --json out/compiled_cases.json
    python benchmarks/compiled_node_tests.py --backend ray --address HEAD:6379 --no-cache
    python benchmarks/compiled_node_tests.py --filter 'test_(conv|resize)' -v
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--filter", help="regex on case names (re.search)")
    ap.add_argument("--jobs", type=int, default=1, help="local: worker processes at once (default 1)")
    ap.add_argument("--backend", default="local", choices=("serial", "local", "ray"),
                    help="where the cases run (tilecore bench's backends; default local)")
    ap.add_argument("--address", help="ray: the cluster (default RAY_ADDRESS, else a local one)")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--json", help="file for every case's row and the summary")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure as it comes")
    ap.add_argument("--entry", choices=("bytes", "graph", "both"), default="bytes",
                    help="what tilecore.compile is given: the model's bytes, its Graph, or each in turn")
    ap.add_argument("--bind", action="store_true",
                    help="inputs that only feed compile-time operands become initializers per data set")
    ap.add_argument("--no-cache", action="store_true", help="neither read nor write the bench's cache")
    ap.add_argument("--cache-dir", help="the cache folder (default $TILECORE_CACHE/bench)")
    args = ap.parse_args(argv)

    from tilecore import bench
    from tilecore.compiler import conformance

    cases = conformance.load_cases(args.filter)
    skipped = {}  # case -> why ONNX Runtime fails it
    for case in cases:
        why = conformance.ort_reason(case)
        if why:
            skipped[case.name] = why
    cache = None if args.no_cache else bench.Cache(args.cache_dir)
    entries = ("bytes", "graph") if args.entry == "both" else (args.entry,)
    results = {}
    for entry in entries:
        print(f"== entry point: {entry}{' (compile-time inputs bound)' if args.bind else ''}", flush=True)
        results[entry] = _sweep(bench, conformance, cases, skipped, entry, cache, args)
    if len(entries) == 2:
        names = [c.name for c in cases]
        by = [{r["case"]: r for r in results[e]["cases"]} for e in entries]
        differ = [n for n in names if by[0][n]["outcome"] != by[1][n]["outcome"]]
        print(f"cases whose outcome differs between the entry points: {len(differ)}")
        for n in differ:
            print(f"  {n}: " + "; ".join(f"{e}: {b[n]['outcome']} {b[n]['reason'][:120]}" for e, b in zip(entries, by)))
    for p in (cache.problems if cache is not None else []):
        print(f"compiled_node_tests: {p}", file=sys.stderr)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(results if len(entries) == 2 else results[entries[0]], f, indent=1)
    return 0


def case_row(case_name, op_type, rows):
    """A case's row (conformance's fields: ``status`` compile, run, fail or pass; ``outcome``
    pass, refused, wrong, rounding or crashed) from its bench job's rows."""
    last = rows[-1]
    compiled = next((r for r in rows if r["stage"] == "compile"), {})
    row = {"case": case_name, "op_type": op_type, "status": "pass", "outcome": "pass", "reason": "",
           "places": compiled.get("places") or {}, "seconds": sum(r.get("seconds") or 0.0 for r in rows)}
    if compiled.get("bound_inputs"):
        row["bound_inputs"] = compiled["bound_inputs"]
    if last["status"] == "pass":
        return row
    status = "compile" if last["stage"] in ("import", "compile") else "run"
    if last["status"] == "wrong":
        row.update(status="fail", outcome="rounding" if last.get("rounding") else "wrong")
    else:
        row.update(status=status, outcome="refused" if last["status"] == "refused" else "crashed")
    row["reason"] = last.get("reason") or last["status"]
    return row


def _sweep(bench, conformance, cases, skipped, entry, cache, args):
    t0 = time.perf_counter()
    counted = [c for c in cases if c.name not in skipped]
    jobs = {bench.Job.make(bench.ModelRef(c.name, "node-test"), "f32", {"entry": entry, "bind": args.bind}): c
            for c in counted}
    by_case = {c.name: {"case": c.name, "op_type": conformance.case_op_type(c), "status": "skip", "outcome": "skip",
                        "reason": f"onnxruntime: {skipped[c.name]}", "places": {}}
               for c in cases if c.name in skipped}
    done = [0]

    def on_rows(job, job_rows):
        case = jobs[job]
        row = by_case[case.name] = case_row(case.name, conformance.case_op_type(case), job_rows)
        done[0] += 1
        if args.verbose and row["status"] != "pass":
            print(f"  {row['case']}: {row['outcome']}: {row['reason']}", flush=True)
        elif done[0] % 100 == 0:
            print(f"  {done[0]}/{len(jobs)} cases, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    bench_rows = bench.run(list(jobs), backend=args.backend, workers=args.jobs, timeout=args.timeout, cache=cache,
                           address=args.address, on_rows=on_rows)
    rows = [by_case[c.name] for c in cases]
    elapsed = time.perf_counter() - t0
    s = conformance.summarize(rows)

    op_of = {r["case"]: r["op_type"] for r in rows}
    print("failures grouped by reason (count, op types):")
    for why, cases in s["failure_groups"].items():
        ops = collections.Counter(op_of[c] for c in cases)
        print(f"  {len(cases):4d}  {why}")
        print(f"        {', '.join(f'{o} x{n}' if n > 1 else o for o, n in ops.most_common(12))}"
              f"{', ...' if len(ops) > 12 else ''}")
    passed = [r for r in rows if r["status"] == "pass"]
    where = collections.Counter("+".join(sorted({p[1] for p in r["places"].values()})) or "-" for r in passed)
    print(f"passing cases by where their nodes ran: {dict(where.most_common())}")
    print(f"op types run on the npu in >=1 passing case: {len(s['npu_op_types'])}: {' '.join(s['npu_op_types'])}")
    wrong = [r["case"] for r in rows if r.get("outcome") == "wrong"]
    if wrong:
        print(f"silently wrong: {' '.join(wrong)}")
    o = s["outcomes"]
    print(f"cases: {s['cases']}; ONNX Runtime passes {s['ort_passes']} (skipped {s['ort_skipped']})")
    rounding = [r["case"] for r in rows if r.get("outcome") == "rounding"]
    if rounding:
        print(f"16-bit float rounding only (<= {conformance.ULPS_16} ulps off the expected data): {' '.join(rounding)}")
    print(f"of those, tilecore ({entry}): passed {o.get('pass', 0)}, refused {o.get('refused', 0)}, "
          f"silently wrong {o.get('wrong', 0)}, 16-bit rounding {o.get('rounding', 0)}, crashed {o.get('crashed', 0)}")
    print(f"tilecore (compiled, npu + host) passes {s['passes']}/{s['ort_passes']} "
          f"({100 * s['pass_rate']:.1f}%) in {elapsed:.0f} s with {args.jobs} job(s)", flush=True)
    return {"summary": s, "seconds": elapsed, "cases": rows, "bench_rows": bench_rows}


if __name__ == "__main__":
    sys.exit(main())
