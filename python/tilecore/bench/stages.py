"""tilecore/bench/stages.py — the stages of one job, run in this process, one row each.

    import     tilecore.frontend.from_onnx: nodes; refused on a named import error
    calibrate  (not in f32) calibration samples, seed 0: the int8 table of ``calib_method``
               over ``calib_shards`` shards (bench/calibration.py), and the samples the
               compiler corrects the narrow nodes' bias with
    compile    tilecore.compile: steps, host steps, precision fallbacks; refused on CompileError
    run        the executable on ``eval_samples`` samples (seed 1) on the simulator: cycles,
               MAC utilisation, host seconds, ONNX Runtime's seconds on sample 0, sim/ORT
    compare    the lowest output cosine (and SQNR) against the reference over those samples:
               pass at or above the gate (jobs.GATES, or the ``gate`` option), wrong below

Each row carries ``status`` (pass, wrong, refused, crash), ``seconds`` (the stage's),
``peak_mb`` (this process's peak resident memory at the end of the stage: the stages run
in a fresh process per job), the stage's ``key`` and ``cached`` (taken from the cache).
A stage that does not pass ends the job. Refusals, wrong results and passes are cached;
crashes are not (they may come from the machine, not the job).
"""

from __future__ import annotations

import io
import json
import os
import resource
import tempfile
import time
import traceback
from typing import Any, Callable

import numpy as np

from . import models
from .cache import Cache
from .jobs import GATES, Job, row_base


def peak_mb() -> float:
    """This process's peak resident memory in MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).split("\nC++ backtrace")[0].strip().splitlines() if ln.strip()]
    text = " ".join(lines[:2]) if len(lines) > 1 and lines[0].endswith(":") else (lines[0] if lines else "")
    return f"{type(e).__name__}: {text}"[:600]


def _refusals() -> tuple[type, ...]:
    from ..compiler.calibration import CalibrationError
    from ..compiler.driver import CompileError
    from ..frontend.onnx import ImportError_, UnsupportedError

    return (CompileError, UnsupportedError, ImportError_, CalibrationError)


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


class _Context:
    """What the stages of one job hand on to the next."""

    def __init__(self, job: Job, path: str) -> None:
        self.job, self.path = job, path
        self.calib_table: Any = None
        self.calib_samples: dict[str, np.ndarray] | None = None
        self.exe: Any = None
        self.outputs: list[dict[str, np.ndarray]] | None = None


def _stage_import(ctx: _Context) -> tuple[dict[str, Any], bytes | None, str]:
    from .. import frontend

    graph = frontend.from_onnx(ctx.path)
    return {"status": "pass", "nodes": len(getattr(graph, "nodes", ()) or ())}, None, ""


def _calib_samples(ctx: _Context) -> dict[str, np.ndarray]:
    job = ctx.job
    return models.sample_inputs(job.model, ctx.path, job.option("calib_samples"), models.CALIB_SEED)


def _stage_calibrate(ctx: _Context) -> tuple[dict[str, Any], bytes | None, str]:
    from .calibration import calibrate_sharded

    job = ctx.job
    ctx.calib_samples = _calib_samples(ctx)
    row: dict[str, Any] = {"status": "pass", "samples": job.option("calib_samples")}
    if job.precision != "int8":
        return row, None, ""  # f16/bf16 take the samples for their bias correction only
    table = calibrate_sharded(ctx.path, ctx.calib_samples, shards=job.option("calib_shards"),
                              method=job.option("calib_method"))
    ctx.calib_table = table
    row.update(tensors=len(table.thresholds), method=job.option("calib_method"))
    return row, json.dumps(table.to_json()).encode(), ".calib.json"


def _load_calibrate(ctx: _Context, artifact: str | None) -> None:
    from ..compiler.calibration import CalibTable

    ctx.calib_samples = _calib_samples(ctx)
    if artifact:
        ctx.calib_table = CalibTable.load(artifact)


def _stage_compile(ctx: _Context) -> tuple[dict[str, Any], bytes | None, str]:
    import tilecore

    job = ctx.job
    report: dict[str, Any] = {}
    kw: dict[str, Any] = {"target": job.option("target"), "group": job.option("group")}
    if job.precision != "f32":
        kw.update(calib=ctx.calib_table, calib_samples=ctx.calib_samples)
    t0 = time.perf_counter()
    ctx.exe = tilecore.compile(ctx.path, precision=job.precision, report=report, **kw)
    row = {"status": "pass", "compile_seconds": round(time.perf_counter() - t0, 3), "steps": report.get("steps"),
           "host_steps": report.get("host_steps"),
           "fallbacks": len(report.get("precision", {}).get("fallbacks", []))}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "model.tcx")
        ctx.exe.save(out)
        with open(out, "rb") as f:
            data = f.read()
    return row, data, ".tcx"


def _load_compile(ctx: _Context, artifact: str | None) -> None:
    from ..runtime.executable import load_executable

    ctx.exe = load_executable(artifact)


def _eval_feeds(ctx: _Context) -> list[dict[str, np.ndarray]]:
    job = ctx.job
    n = job.option("eval_samples")
    samples = models.sample_inputs(job.model, ctx.path, n, models.EVAL_SEED)
    return [{k: np.ascontiguousarray(v[i]) for k, v in samples.items()} for i in range(n)]


def _stage_run(ctx: _Context) -> tuple[dict[str, Any], bytes | None, str]:
    feeds = _eval_feeds(ctx)
    outputs, sim_seconds, stats = [], [], None
    for feed in feeds:
        got = ctx.exe.run(feed)
        outputs.append({k: np.asarray(v) for k, v in got.items()})
        st = ctx.exe.stats()
        stats = stats or st
        sim_seconds.append(st.get("wall_seconds", 0.0))
    ctx.outputs = outputs
    row: dict[str, Any] = {"status": "pass", "cycles": int(stats["cycles"]),
                           "mac_utilisation": float(stats.get("mac_utilisation", 0.0)),
                           "sim_seconds": round(float(np.median(sim_seconds)), 4)}
    if ctx.job.model.source != "node-test":
        _, ref = models.reference(ctx.job.model, ctx.path)
        ref(feeds[0])  # warm-up
        t0 = time.perf_counter()
        ref(feeds[0])
        ort_s = time.perf_counter() - t0
        row.update(ort_seconds=round(ort_s, 5), sim_vs_ort=round(row["sim_seconds"] / ort_s, 1) if ort_s else None)
    flat = {f"{i}/{k}": v for i, out in enumerate(outputs) for k, v in out.items()}
    return row, _npz_bytes(flat), ".npz"


def _load_run(ctx: _Context, artifact: str | None) -> None:
    from ..runtime.files import load_npz

    flat = load_npz(artifact)
    outs: dict[int, dict[str, np.ndarray]] = {}
    for key, v in flat.items():
        i, _, name = key.partition("/")
        outs.setdefault(int(i), {})[name] = v
    ctx.outputs = [outs[i] for i in sorted(outs)]


def _stage_compare(ctx: _Context) -> tuple[dict[str, Any], bytes | None, str]:
    from ..compiler.compare import metrics

    job = ctx.job
    names, ref = models.reference(job.model, ctx.path)
    cosine, sqnr, notes = 1.0, float("inf"), []
    for out, feed in zip(ctx.outputs, _eval_feeds(ctx)):
        want = ref(feed)
        got = list(out.values())
        for i, n in enumerate(names):
            g = out.get(n, got[i] if i < len(got) else None)
            if g is None:
                notes.append(f"output `{n}` missing")
                cosine = float("nan")
                continue
            m = metrics(g, want[i])
            if m.get("shape_mismatch"):
                notes.append(f"output `{n}`: shape {np.shape(g)} vs the reference's {np.shape(want[i])}")
            cosine = min(cosine, m["cosine"]) if np.isfinite(m["cosine"]) and np.isfinite(cosine) else float("nan")
            sqnr = min(sqnr, m["sqnr_db"])
    gate = job.option("gate") or GATES[job.precision]
    status = "pass" if np.isfinite(cosine) and cosine >= gate and not notes else "wrong"
    if status == "wrong" and not notes:
        notes.append(f"cosine {cosine:.7f} below the gate {gate}")
    row = {"status": status, "cosine": None if not np.isfinite(cosine) else float(cosine),
           "sqnr_db": float(sqnr) if np.isfinite(sqnr) else None, "gate": gate}
    if notes:
        row["reason"] = "; ".join(notes)[:600]
    return row, None, ""


_STAGES: dict[str, tuple[Callable, Callable | None]] = {
    "import": (_stage_import, None),
    "calibrate": (_stage_calibrate, _load_calibrate),
    "compile": (_stage_compile, _load_compile),
    "run": (_stage_run, _load_run),
    "compare": (_stage_compare, None),
}


def cached_rows(job: Job, keys: dict[str, str], cache: Cache | None) -> list[dict[str, Any]] | None:
    """The job's rows when the cache answers for all of them (every stage up to the first
    that did not pass), else None: then the job needs a worker."""
    if cache is None:
        return None
    rows = []
    for stage in job.stages:
        hit = cache.get(keys[stage])
        if hit is None:
            return None
        rows.append(dict(row_base(job, stage), key=keys[stage], **hit[0], cached=True))
        if hit[0].get("status") != "pass":
            break
    return rows


def run_job(job: Job, keys: dict[str, str], cache: Cache | None, emit: Callable[[dict[str, Any]], None]) -> None:
    """Runs ``job``'s stages in this process, ``emit``-ting each row as it is made: first
    a row with status ``crash`` and ``started`` when the stage starts (so a process that
    dies leaves it), then the stage's own. A cached stage is taken from ``cache``, its
    artifact loaded when a later stage needs it."""
    path = models.model_path(job.model)
    ctx = _Context(job, path)
    stages = job.stages
    cached = {s: cache.get(keys[s]) if cache is not None else None for s in stages}
    for i, stage in enumerate(stages):
        make, load = _STAGES[stage]
        base = dict(row_base(job, stage), key=keys[stage])
        hit = cached[stage]
        if hit is not None:
            row, artifact = hit
            if load is not None and any(cached[s] is None for s in stages[i + 1:]):
                load(ctx, artifact)
            emit(dict(base, **row, cached=True))
            if row.get("status") != "pass":
                return
            continue
        emit(dict(base, status="crash", started=True))
        t0 = time.perf_counter()
        try:
            row, artifact, ext = make(ctx)
        except _refusals() as e:
            row, artifact, ext = {"status": "refused", "reason": first_line(e)}, None, ""
        except Exception as e:  # noqa: BLE001 - any other exception is this job's crash, with its trace
            emit(dict(base, status="crash", reason=first_line(e), trace=traceback.format_exc()[-2000:],
                      seconds=round(time.perf_counter() - t0, 3), peak_mb=peak_mb()))
            return
        row = dict(row, seconds=round(time.perf_counter() - t0, 3), peak_mb=peak_mb())
        if cache is not None:
            cache.put(keys[stage], row, artifact, ext)
        emit(dict(base, **row, cached=False))
        if row["status"] != "pass":
            return
