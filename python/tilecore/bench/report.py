"""tilecore/bench/report.py — the reports of a bench run: JSON (a list of rows), Markdown
(one line per job, the counts, the differences from a baseline), reading a report back
(``--rerun-failed``, ``--baseline``) and comparing two.

A job's outcome is its last row: the stage it reached and the status there. Against a
baseline, a job *regressed* when its outcome got worse (a pass that no longer passes, or a
failure at an earlier stage), *improved* the other way; among jobs that pass in both,
cycles that grew by more than ``cycles_tolerance`` and cosines that fell by more than
``cosine_tolerance`` are listed as regressions too.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Iterable, Sequence

from .jobs import STAGES, STATUSES, BenchError, Job, ModelRef

REQUIRED_FIELDS = ("model", "precision", "stage", "status")


def job_id(row: dict[str, Any]) -> tuple:
    """What identifies a row's job across runs."""
    return (row["model"], row.get("source", ""), row.get("path", ""), row["precision"],
            json.dumps(row.get("options") or {}, sort_keys=True))


def load(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a JSON report; BenchError naming the file and the row at fault when it
    is not one (not JSON, not a list of objects, a field missing or of a wrong kind)."""
    from ..runtime.files import load_json

    where = os.fspath(path)
    try:
        doc = load_json(path)
    except (OSError, ValueError) as e:
        raise BenchError(f"report {e}" if where in str(e) else f"report {where}: {e}") from None
    if not isinstance(doc, list):
        raise BenchError(f"report {where}: expected a JSON list of rows, got {type(doc).__name__}")
    for i, row in enumerate(doc):
        if not isinstance(row, dict):
            raise BenchError(f"report {where}: row {i}: expected an object, got {type(row).__name__}")
        for f in REQUIRED_FIELDS:
            if not isinstance(row.get(f), str):
                raise BenchError(f"report {where}: row {i}: field `{f}` missing or not a string")
        if row["status"] not in STATUSES:
            raise BenchError(f"report {where}: row {i}: status `{row['status']}` is not one of {', '.join(STATUSES)}")
        if row["stage"] not in STAGES:
            raise BenchError(f"report {where}: row {i}: stage `{row['stage']}` is not one of {', '.join(STAGES)}")
        if not isinstance(row.get("options", {}), dict):
            raise BenchError(f"report {where}: row {i}: `options` must be an object")
    return doc


def outcomes(rows: Iterable[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """job id -> the job's last row (its outcome), in the order jobs first appear."""
    out: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        out[job_id(r)] = r
    return out


def failed_jobs(rows: Sequence[dict[str, Any]], where: str = "report") -> list[Job]:
    """The jobs of a report whose outcome is not a pass (``--rerun-failed``)."""
    jobs = []
    for r in outcomes(rows).values():
        if r["status"] == "pass" and r["stage"] == "compare":
            continue
        try:
            ref = ModelRef(r["model"], r.get("source") or "file", r.get("path", ""))
            jobs.append(Job.make(ref, r["precision"], r.get("options") or {}, tuple(r.get("preload") or ())))
        except BenchError as e:
            raise BenchError(f"{where}: job {r['model']} {r['precision']}: {e}") from None
    return jobs


def _rank(row: dict[str, Any]) -> tuple[int, int]:
    """How far a job got: (stage index, 1 if it passed there)."""
    return (STAGES.index(row["stage"]), 1 if row["status"] == "pass" else 0)


def diff(baseline: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], cycles_tolerance: float = 0.02,
         cosine_tolerance: float = 1e-4) -> dict[str, list[str]]:
    """``regressions``, ``improvements``, ``new`` and ``gone``: one line per job."""
    old, new = outcomes(baseline), outcomes(rows)
    old_runs = {job_id(r): r for r in baseline if r["stage"] == "run"}
    new_runs = {job_id(r): r for r in rows if r["stage"] == "run"}
    out: dict[str, list[str]] = {"regressions": [], "improvements": [], "new": [], "gone": []}

    def name(r: dict[str, Any]) -> str:
        opts = ",".join(f"{k}={v}" for k, v in sorted((r.get("options") or {}).items()))
        return f"{r['model']} {r['precision']}{' ' + opts if opts else ''}"

    for k, r in new.items():
        b = old.get(k)
        if b is None:
            out["new"].append(f"{name(r)}: {r['stage']} {r['status']}")
            continue
        if _rank(r) < _rank(b):
            out["regressions"].append(f"{name(r)}: {b['stage']} {b['status']} -> {r['stage']} {r['status']}"
                                      f"{': ' + r['reason'] if r.get('reason') else ''}")
        elif _rank(r) > _rank(b):
            out["improvements"].append(f"{name(r)}: {b['stage']} {b['status']} -> {r['stage']} {r['status']}")
        elif r["status"] == "pass":
            notes = []
            cb, cr = (old_runs.get(k) or {}).get("cycles"), (new_runs.get(k) or {}).get("cycles")
            if isinstance(cb, int) and isinstance(cr, int) and cb > 0 and cr > cb * (1 + cycles_tolerance):
                notes.append(f"cycles {cb} -> {cr} (+{100.0 * (cr - cb) / cb:.1f}%)")
            qb, qr = b.get("cosine"), r.get("cosine")
            if isinstance(qb, float) and isinstance(qr, float) and qr < qb - cosine_tolerance:
                notes.append(f"cosine {qb:.7f} -> {qr:.7f}")
            if notes:
                out["regressions"].append(f"{name(r)}: " + "; ".join(notes))
            elif isinstance(cb, int) and isinstance(cr, int) and cb > 0 and cr < cb * (1 - cycles_tolerance):
                out["improvements"].append(f"{name(r)}: cycles {cb} -> {cr} ({100.0 * (cr - cb) / cb:.1f}%)")
    out["gone"] = [f"{name(b)}: {b['stage']} {b['status']}" for k, b in old.items() if k not in new]
    return out


def _fmt(x: Any, spec: str) -> str:
    if x is None:
        return ""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return format(x, spec) if isinstance(x, (int, float)) else str(x)


def markdown(rows: Sequence[dict[str, Any]], changes: dict[str, list[str]] | None = None,
             title: str = "tilecore bench") -> str:
    """The Markdown report: regressions first (with a baseline), then a line per job and
    the counts per precision and status."""
    lines = [f"# {title}", ""]
    if changes is not None:
        lines += [f"## Against the baseline: {len(changes['regressions'])} regression(s), "
                  f"{len(changes['improvements'])} improvement(s)", ""]
        for what in ("regressions", "improvements", "new", "gone"):
            if changes[what]:
                lines += [f"### {what.capitalize()}", ""] + [f"- {ln}" for ln in changes[what]] + [""]
    runs = {job_id(r): r for r in rows if r["stage"] == "run"}
    lines += ["## Jobs", "", "| model | precision | options | stage | status | cosine | cycles | MAC util | "
              "sim/ORT | seconds | peak MiB | reason |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    seconds: dict[tuple, float] = {}
    for r in rows:
        seconds[job_id(r)] = seconds.get(job_id(r), 0.0) + (r.get("seconds") or 0.0)
    for k, r in outcomes(rows).items():
        run = runs.get(k, {})
        util = run.get("mac_utilisation")
        opts = ", ".join(f"{a}={b}" for a, b in sorted((r.get("options") or {}).items()))
        reason = (r.get("reason") or "").replace("|", "\\|").replace("\n", " ")[:200]
        lines.append(f"| {r['model']} | {r['precision']} | {opts} | {r['stage']} | {r['status']} | "
                     f"{_fmt(r.get('cosine'), '.6f')} | {_fmt(run.get('cycles'), 'd')} | "
                     f"{_fmt(None if util is None else 100 * util, '.1f')} | {_fmt(run.get('sim_vs_ort'), '.0f')} | "
                     f"{seconds[k]:.1f} | {_fmt(r.get('peak_mb'), '.0f')} | {reason} |")
    lines += ["", "## Counts", "", "| precision | " + " | ".join(STATUSES) + " | total |",
              "|---" * (len(STATUSES) + 2) + "|"]
    finals = list(outcomes(rows).values())
    for prec in sorted({r["precision"] for r in finals}) + ["all"]:
        sel = [r for r in finals if prec == "all" or r["precision"] == prec]
        lines.append(f"| {prec} | " + " | ".join(str(sum(r["status"] == s for r in sel)) for s in STATUSES)
                     + f" | {len(sel)} |")
    return "\n".join(lines) + "\n"


def write_json(path: str | os.PathLike[str], rows: Sequence[dict[str, Any]]) -> None:
    from ..runtime.files import write_bytes

    write_bytes(path, json.dumps(list(rows), indent=1, default=str) + "\n")


def write_markdown(path: str | os.PathLike[str], text: str) -> None:
    from ..runtime.files import write_bytes

    write_bytes(path, text)
