"""benchmarks/graph_fuzz.py — the graph fuzzer's long run: random valid ONNX graphs
(tests/python/compiler/fuzz_graphs.py) compiled by `tilecore.compile` with the default
options, run on the simulator and compared with ONNX Runtime.

Graph i of a run is drawn from a numpy generator seeded with (seed, i), so a run is
reproducible and can be split (`--start`). Graphs run in `--jobs` worker processes: a
graph that kills its worker or takes more than `--timeout` seconds is a crash, and the
worker is replaced. A mismatch or a crash is shrunk (the smallest choice sequence whose
graph still fails the same way, up to `--shrink-budget` tries, then values cut into
graph inputs and outputs dropped while it still fails), and each distinct
minimized pattern (its op types with their string attributes, and what
`tilecore.compile(..., verify=)` names) is written once to `--out` as an ONNX file with its
inputs (`.npz`) and a line in `failures.txt`.

It prints the counts (generated; invalid: ONNX Runtime rejects the graph, or dies on it
(that graph is written to `--out` too); compiled;
refused: a CompileError; matched, of which some only within the spread of ONNX Runtime's
own outputs under a small perturbation; ill-conditioned: a normalisation of a constant
group; mismatched; crashed; with `--verify-every N`, verify failed: the outputs match
but verify names a race or an optimisation that changes a value), the refusals by reason and by op type, the graphs per second and the
distinct failures:

    python benchmarks/graph_fuzz.py --graphs 2000 --seed 1 --out fuzz_out
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import queue
import subprocess
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python" / "compiler"))
import fuzz_graphs as fg  # noqa: E402


def verify_kind(text: str) -> str:
    """What verify named, without names and figures: hazards, layer group, fused node,
    node against the reference, output, or passes."""
    for key, kind in (("unordered", "hazards"), ("layer group", "layer group"), ("fused into", "fused node"),
                      ("computes", "node vs reference"), ("output `", "output vs reference"),
                      ("verify passes", "verify passes")):
        if key in text:
            return kind
    return "verify: " + fg._norm_reason(text)[:60]


def failure_kind(case: fg.Case, res: dict) -> str:
    if res["outcome"] == "verify failed":
        return "verify failed: " + verify_kind(res.get("verify", ""))
    if res["outcome"] == "crashed":
        return "crashed: " + fg._norm_reason(res["detail"].split(":")[0] + ":" + res["detail"].split(":")[1]
                                             if res["detail"].count(":") >= 2 else res["detail"])
    return "mismatched: " + verify_kind(res.get("verify", ""))


def pattern(case: fg.Case) -> str:
    """The op types of a graph in order, with their string attributes (Resize's modes,
    auto_pad, ...)."""
    parts = []
    for n in case.model.graph.node:
        strs = [f"{a.name}={a.s.decode()}" for a in n.attribute if a.type == a.STRING]
        parts.append(n.op_type + (f"({', '.join(strs)})" if strs else ""))
    return " -> ".join(parts)


# the graph a worker is checking, written before each check (the main process keeps it as
# the crash when the worker dies: a failure's shrinking may try a graph that kills it)
CURRENT = None


def _checked(case: fg.Case, verify: bool = True) -> dict:
    if CURRENT is None:
        return fg.check(case, verify)
    _save(CURRENT, case.model.SerializeToString(), case.feeds)
    return fg.check(case, verify, on_stage=lambda name: CURRENT.with_suffix(".stage").write_text(name))


def _save(stem: pathlib.Path, model: bytes, feeds: dict) -> None:
    import numpy as np

    tmp = stem.with_suffix(".tmp.onnx")
    tmp.write_bytes(model)
    np.savez(stem.with_suffix(".npz"), **feeds)
    os.replace(tmp, stem.with_suffix(".onnx"))


def run_one(seed: int, index: int, budget: int, verify_every: int = 0) -> dict:
    t0 = time.perf_counter()
    try:
        case = fg.generate(fg.RngDraw([seed, index]))
    except Exception as e:  # noqa: BLE001 - the generator's own defect: counted, the run goes on
        return {"index": index, "outcome": "generator error", "detail": f"{type(e).__name__}: {e}"[:300],
                "reasons": [], "blocks": [], "ops": [], "seconds": time.perf_counter() - t0}
    res = _checked(case)
    if verify_every and index % verify_every == 0 and res["outcome"] == "matched":
        # outputs as ONNX Runtime's, but a race or an optimisation that changes a value
        # on the way can still be there: verify looks
        said = fg.verify_culprit(case.model.SerializeToString(), case.feeds)
        if said != "verify passes" and not said.startswith("verify raised"):
            res = {"outcome": "verify failed", "detail": said, "verify": said}
    row = {"index": index, "outcome": res["outcome"], "detail": res.get("detail", ""),
           "reasons": res.get("reasons", []), "verify": res.get("verify", ""), "blocks": case.blocks,
           "ops": case.op_types}
    if res["outcome"] in ("mismatched", "crashed", "verify failed"):
        kind = failure_kind(case, res)

        def fails(c: fg.Case) -> bool:
            r = _checked(c, verify=False)
            if res["outcome"] == "verify failed" and r["outcome"] == "matched":
                r["outcome"] = "verify failed"
                r["verify"] = fg.verify_culprit(c.model.SerializeToString(), c.feeds)
                return failure_kind(c, r) == kind
            if r["outcome"] != res["outcome"]:
                return False
            if r["outcome"] == "mismatched":
                r["verify"] = fg.verify_culprit(c.model.SerializeToString(), c.feeds)
            return failure_kind(c, r) == kind

        small, choices = fg.shrink(case.choices, fails, budget)
        small = fg.reduce_graph(small, fails, budget // 2)
        final = _checked(small)
        row.update(kind=kind, choices=choices, pattern=pattern(small), small_detail=final.get("detail", ""),
                   small_verify=final.get("verify", ""), model=small.model.SerializeToString().hex(),
                   feeds={k: v.tolist() for k, v in small.feeds.items()},
                   feed_dtypes={k: str(v.dtype) for k, v in small.feeds.items()})
    row["seconds"] = time.perf_counter() - t0
    return row


def _worker(seed: int, budget: int, out_dir: str, verify_every: int) -> None:
    global CURRENT
    import faulthandler

    faulthandler.enable()  # on stderr: the worker's log in the output folder
    CURRENT = pathlib.Path(out_dir) / f".current_{os.getpid()}"
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints must not break the protocol
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if line.strip():
            out.write(json.dumps(run_one(seed, int(line), budget, verify_every)) + "\n")


class _Worker:
    def __init__(self, seed: int, budget: int, out_dir: pathlib.Path, verify_every: int = 0) -> None:
        with open(out_dir / "workers.log", "a") as log:
            self.proc = subprocess.Popen([sys.executable, __file__, "--worker", "--seed", str(seed),
                                          "--shrink-budget", str(budget), "--out", str(out_dir),
                                          "--verify-every", str(verify_every)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                         text=True, bufsize=1)
        self.current = out_dir / f".current_{self.proc.pid}.onnx"
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if self.get(600) in (None, "timeout"):
            self.kill()
            raise RuntimeError("a worker process failed to start (is tilecore importable?)")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def get(self, timeout: float):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return "timeout"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def sweep(seed: int, indices: list[int], jobs: int, timeout: float, budget: int, out_dir: pathlib.Path,
          on_row, verify_every: int = 0) -> None:
    todo: queue.Queue = queue.Queue()
    for i in indices:
        todo.put(i)

    def loop() -> None:
        w = _Worker(seed, budget, out_dir, verify_every)
        try:
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                w.proc.stdin.write(f"{i}\n")
                w.proc.stdin.flush()
                line = w.get(timeout + budget * 5)
                if line in (None, "timeout"):
                    code = w.proc.poll()
                    w.kill()
                    why = f"timeout after {timeout:.0f} s" if line == "timeout" else f"worker died (exit {code})"
                    import numpy as np
                    import onnx

                    stage = ""
                    if w.current.exists():  # the graph it was checking: the failure's own or a shrunk one
                        case = fg.Case(onnx.load(str(w.current)), dict(np.load(w.current.with_suffix(".npz"))), [])
                        stage_file = w.current.with_suffix(".stage")
                        stage = stage_file.read_text() if stage_file.exists() else ""
                    else:
                        case = fg.generate(fg.RngDraw([seed, i]))
                    # ONNX Runtime dying on a graph is its defect: the graph counts as invalid
                    outcome = "invalid" if stage == "onnxruntime" else "crashed"
                    why += f" in {stage}" if stage else ""
                    row = {"index": i, "outcome": outcome, "detail": why, "reasons": [], "blocks": case.blocks,
                           "ops": case.op_types, "kind": f"{outcome}: {why.split(' (')[0]} {stage}".strip(),
                           "pattern": pattern(case),
                           "model": case.model.SerializeToString().hex(),
                           "feeds": {k: v.tolist() for k, v in case.feeds.items()},
                           "feed_dtypes": {k: str(v.dtype) for k, v in case.feeds.items()}}
                    w = _Worker(seed, budget, out_dir, verify_every)
                else:
                    row = json.loads(line)
                on_row(row)
        finally:
            w.proc.stdin.close()
            w.kill()

    threads = [threading.Thread(target=loop) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", type=int, default=1000, help="how many graphs (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="index of the first graph (to split a run)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per graph before it counts as a hang")
    ap.add_argument("--shrink-budget", type=int, default=150, help="graphs tried when shrinking one failure")
    ap.add_argument("--out", default="graph_fuzz_out", help="folder for the minimized failures")
    ap.add_argument("--verify-every", type=int, default=0,
                    help="also run tilecore.compile(..., verify=) on every Nth graph that matches (hazards, "
                         "optimisations that change a value); 0: only on mismatches")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(args.seed, args.shrink_budget, args.out, args.verify_every)
        return 0

    import numpy as np

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    counts: collections.Counter = collections.Counter()
    by_reason: collections.Counter = collections.Counter()
    by_op: collections.Counter = collections.Counter()
    kinds: dict = {}
    notes: dict = collections.defaultdict(list)  # outcome -> graph indices, for a second look
    invalid: collections.Counter = collections.Counter()
    lock = threading.Lock()
    t0 = time.perf_counter()
    done = [0]

    def on_row(row: dict) -> None:
        with lock:
            done[0] += 1
            counts["generated"] += 1
            counts[row["outcome"]] += 1
            if row["detail"].startswith("within the spread"):
                counts["matched within the spread"] += 1
                notes["matched within the spread"].append(row["index"])
            if row["outcome"] in ("invalid", "ill-conditioned", "generator error"):
                notes[row["outcome"]].append(row["index"])
                invalid[fg._norm_reason(row["detail"])[:120]] += row["outcome"] == "invalid"
            if row["outcome"] in ("matched", "mismatched", "ill-conditioned", "verify failed") or (row["outcome"] == "crashed"
                                                               and row["detail"].startswith("run:")):
                counts["compiled"] += 1
            for op, why in row.get("reasons", []):
                by_reason[f"{op}: {why}"] += 1
                by_op[op] += 1
            if row["outcome"] in ("mismatched", "crashed", "verify failed") or "model" in row:
                key = (row["kind"], row["pattern"])
                first = key not in kinds
                kinds.setdefault(key, []).append(row["index"])
                print(f"graph {args.seed}/{row['index']}: {row['outcome']}: {row['detail'][:160]}; "
                      f"verify: {row.get('verify', '')[:160]}; minimized: {row['pattern']}", flush=True)
                if first:
                    stem = f"{row['outcome'].replace(' ', '_')}_{len(kinds):03d}"
                    (out / f"{stem}.onnx").write_bytes(bytes.fromhex(row["model"]))
                    np.savez(out / f"{stem}.npz", **{k: np.asarray(v, row["feed_dtypes"][k])
                                                     for k, v in row["feeds"].items()})
                    with open(out / "failures.txt", "a") as f:
                        f.write(f"{stem}.onnx: graph {args.seed}/{row['index']} ({', '.join(row['blocks'])}) "
                                f"{row['kind']}; minimized {row['pattern']}: "
                                f"{row.get('small_detail', row['detail'])[:200]}; "
                                f"verify: {row.get('small_verify', '')[:200]}\n")
            if done[0] % 500 == 0:
                el = time.perf_counter() - t0
                print(f"[{done[0]} graphs, {el:.0f} s, {done[0] / el:.1f} graphs/s] "
                      + ", ".join(f"{k} {v}" for k, v in counts.items()), flush=True)

    sweep(args.seed, list(range(args.start, args.start + args.graphs)), args.jobs, args.timeout,
          args.shrink_budget, out, on_row, args.verify_every)
    for f in out.glob(".current_*"):
        f.unlink()
    el = time.perf_counter() - t0
    print(f"\nseed {args.seed}, graphs {args.start}..{args.start + args.graphs - 1}, {args.jobs} job(s): "
          f"{el:.0f} s, {counts['generated'] / el:.2f} graphs/s")
    for k in ("generated", "generator error", "invalid", "compiled", "refused", "matched", "matched within the spread",
              "ill-conditioned", "mismatched", "crashed", "verify failed"):
        print(f"  {k:26s} {counts[k]}")
    if +invalid:
        print("invalid, by reason: " + "; ".join(f"{n} x {why}" for why, n in invalid.most_common(5)))
    if by_reason:
        print("refused, by reason:")
        for why, n in by_reason.most_common(10):
            print(f"  {n:6d}  {why}")
        print("refused, by op type: " + ", ".join(f"{op} {n}" for op, n in by_op.most_common()))
    if kinds:
        print(f"distinct failures ({len(kinds)}), files in {out}:")
        for (kind, pat), idx in kinds.items():
            print(f"  {len(idx):5d} x  {kind}: {pat}  (first: graph {args.seed}/{idx[0]})")
    summary = {"seed": args.seed, "start": args.start, "graphs": args.graphs, "seconds": el,
               "counts": dict(counts), "refused_by_reason": dict(by_reason), "refused_by_op": dict(by_op),
               "invalid_by_reason": dict(+invalid), "graphs_by_outcome": dict(notes),
               "failures": [{"kind": k, "pattern": p, "graphs": idx} for (k, p), idx in kinds.items()]}
    (out / f"summary_{args.seed}_{args.start}.json").write_text(json.dumps(summary, indent=1))
    return 1 if counts["mismatched"] or counts["crashed"] or counts["verify failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
