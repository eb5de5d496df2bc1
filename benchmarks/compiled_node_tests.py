"""benchmarks/compiled_node_tests.py — the ONNX backend node tests compiled by
`tilecore.compile` and run by `Executable.run` (npu steps on the simulator, host steps
through tilecore's own `c` kernels), case by case.

A case counts only when ONNX Runtime passes it (the others are counted and skipped).
Every data set of a counted case is compared with its expected outputs with the case's
tolerances. The runner is `tilecore.compiler.conformance` (shared with
tests/python/compiler/test_compiled_node_tests.py); cases run in `--jobs` worker
processes, so a crash or a hang (`--timeout`) costs one case.

It prints the cases ONNX Runtime passes, those tilecore passes and the rate, the op types
that ran on the npu in at least one passing case, and the failures grouped by reason:

    python benchmarks/compiled_node_tests.py --jobs 2 --json out/compiled_cases.json
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
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--json", help="file for every case's row and the summary")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure as it comes")
    args = ap.parse_args(argv)

    from tilecore.compiler import conformance

    names = [c.name for c in conformance.load_cases(args.filter)]
    t0 = time.perf_counter()
    done = [0]

    def on_row(row):
        done[0] += 1
        if args.verbose and row["status"] not in ("pass", "skip"):
            print(f"  {row['case']}: {row['status']}: {row['reason']}", flush=True)
        elif done[0] % 100 == 0:
            print(f"  {done[0]}/{len(names)} cases, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    rows = conformance.run_parallel(names, jobs=args.jobs, timeout=args.timeout, on_row=on_row)
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
    print(f"cases: {s['cases']}; ONNX Runtime passes {s['ort_passes']} (skipped {s['ort_skipped']})")
    print(f"tilecore (compiled, npu + host) passes {s['passes']}/{s['ort_passes']} "
          f"({100 * s['pass_rate']:.1f}%) in {elapsed:.0f} s with {args.jobs} job(s)")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"summary": s, "seconds": elapsed, "cases": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
