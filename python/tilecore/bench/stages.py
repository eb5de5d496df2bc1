"""tilecore/bench/stages.py — the stages of one job, run in this process, one row each.

    import     tilecore.frontend.from_onnx: nodes; refused on a named import error
    calibrate  (not in f32) calibration samples, seed 0: the int8 table of ``calib_method``
               over ``calib_shards`` shards (bench/calibration.py), and the samples the
               compiler corrects the narrow nodes' bias with
    compile    tilecore.compile (``auto_mixed``: what its search moved): steps, host steps,
               precision fallbacks; refused on CompileError
    run        the executable on ``eval_samples`` samples (seed 1) on the simulator: cycles,
               MAC utilisation, roofline and DDR traffic, host seconds and ONNX Runtime's
               (medians of ``runs`` runs of sample 0, the two timed in turn), sim/ORT
    compare    the lowest output cosine (and SQNR) against the reference over those samples:
               pass at or above the gate (jobs.GATES, or the ``gate`` option), wrong below

A node-test case is compiled with its compile-time inputs bound (``bind``), run on every
data set and compared with its expected outputs with its tolerances (compiler/conformance.py).

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
from .jobs import Job, row_base


def peak_mb() -> float:
    """This process's peak resident memory in MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).split("\nC++ backtrace")[0].strip().splitlines() if ln.strip()]
    text = " ".join(lines[:2]) if len(lines) > 1 and lines[0].endswith(":") else (lines[0] if lines else "")
    return f"{type(e).__name__}: {text}"[:600]


def is_refusal(e: BaseException) -> bool:
    """Whether ``e`` is a named refusal (the compiler's, the importer's, the calibration's,
    or a tilecore error other than an internal one), not a crash."""
    from ..compiler.calibration import CalibrationError
    from ..compiler.driver import CompileError
    from ..ffi.error import TilecoreError
    from ..frontend.onnx import ImportError_, UnsupportedError

    if isinstance(e, (CompileError, UnsupportedError, ImportError_, CalibrationError)):
        return True
    return isinstance(e, TilecoreError) and getattr(e, "kind", "") != "InternalError"


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


# The run's outputs as one .npz: ``I/NAME`` per output of sample I, with ``I/NAME#dtype``
# for a dtype .npz does not keep (bfloat16, float8: stored as their bits), ``I/NAME#len``
# and ``I/NAME[J]`` for a sequence, ``I/NAME#none`` for an empty optional.
def _pack_outputs(outputs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    flat: dict[str, np.ndarray] = {}

    def put(key: str, value: Any) -> None:
        if value is None:
            flat[key + "#none"] = np.zeros(0, np.uint8)
        elif isinstance(value, (list, tuple)):
            flat[key + "#len"] = np.asarray(len(value))
            for j, v in enumerate(value):
                put(f"{key}[{j}]", v)
        else:
            a = np.asarray(value)
            if a.dtype.type.__module__.startswith("ml_dtypes") or a.dtype.kind == "V":
                flat[key + "#dtype"] = np.asarray(a.dtype.name)
                a = a.view(f"u{a.dtype.itemsize}")
            flat[key] = a

    for i, out in enumerate(outputs):
        for name, value in out.items():
            put(f"{i}/{name}", value)
    return flat


def _unpack_outputs(flat: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    def get(key: str) -> Any:
        if key + "#none" in flat:
            return None
        if key + "#len" in flat:
            return [get(f"{key}[{j}]") for j in range(int(flat[key + "#len"]))]
        a = flat[key]
        if key + "#dtype" in flat:
            import ml_dtypes

            a = a.view(getattr(ml_dtypes, str(flat[key + "#dtype"])))
        return a

    outs: dict[int, dict[str, Any]] = {}
    for key in flat:
        i, _, rest = key.partition("/")
        name = rest.split("#")[0].split("[")[0]  # (an output name holds neither)
        if rest == name or rest in (name + "#none", name + "#len"):
            outs.setdefault(int(i), {})[name] = get(f"{i}/{name}")
    return [outs[i] for i in sorted(outs)]


class _Context:
    """What the stages of one job hand on to the next."""

    def __init__(self, job: Job, path: str) -> None:
        self.job, self.path = job, path
        self.calib_table: Any = None
        self.calib_samples: dict[str, np.ndarray] | None = None
        self.exe: Any = None
        self.exe_binding: str = ""  # node tests: the compile-time input values ``exe`` was compiled with
        self.outputs: list[dict[str, Any]] | None = None


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


def _node_case(ctx: _Context) -> Any:
    return models.node_case(ctx.job.model.name)


def _bound_inputs(ctx: _Context) -> list[str]:
    """Node tests with ``bind``: the inputs that only feed compile-time operands."""
    if ctx.job.model.source != "node-test" or not ctx.job.option("bind"):
        return []
    from ..compiler.conformance import compile_time_inputs

    return compile_time_inputs(_node_case(ctx).model)


def _binding(ctx: _Context, feed: dict[str, Any]) -> tuple[Any, str]:
    """(the model to compile for ``feed``, a key of the values bound): the model file, or a
    node-test case with its compile-time inputs made initializers of ``feed``'s values."""
    bound = _bound_inputs(ctx)
    if not bound:
        return ctx.path, ""
    from ..compiler.conformance import bind_inputs

    values = {n: feed[n] for n in bound}
    return bind_inputs(_node_case(ctx).model, values), repr([(n, np.asarray(v).tolist()) for n, v in values.items()])


def _compile(ctx: _Context, model: Any, report: dict[str, Any]) -> Any:
    import tilecore

    job = ctx.job
    kw: dict[str, Any] = {"target": job.option("target"), "group": job.option("group")}
    if job.precision != "f32":
        kw.update(calib=ctx.calib_table, calib_samples=ctx.calib_samples)
    if job.auto_mixed_target is not None:
        kw["auto_mixed"] = job.auto_mixed_target
    if job.option("entry") == "graph":
        from .. import frontend

        model = frontend.from_onnx(model)
    elif not isinstance(model, str):
        model = model.SerializeToString()
    return tilecore.compile(model, precision=job.precision, report=report, **kw)


def _stage_compile(ctx: _Context) -> tuple[dict[str, Any], bytes | None, str]:
    job = ctx.job
    report: dict[str, Any] = {}
    model, ctx.exe_binding = (_binding(ctx, _node_feeds(ctx)[0]) if job.model.source == "node-test"
                              else (ctx.path, ""))
    t0 = time.perf_counter()
    ctx.exe = _compile(ctx, model, report)
    row: dict[str, Any] = {"status": "pass", "compile_seconds": round(time.perf_counter() - t0, 3),
                           "steps": report.get("steps"), "host_steps": report.get("host_steps"),
                           "fallbacks": len(report.get("precision", {}).get("fallbacks", []))}
    if "auto_mixed" in report:
        am = report["auto_mixed"]
        row["mixed"] = {"target": am.get("target"), "cosine": am.get("cosine"), "samples": am.get("samples"),
                        "moved_to": am.get("moved_to"), "moved": list(am.get("moved", []))}
    if job.model.source == "node-test":  # where each node ran, and what was bound
        row["places"] = {p["name"]: [p["op_type"], p["where"]] for p in report.get("placement", [])}
        if _bound_inputs(ctx):
            row["bound_inputs"] = _bound_inputs(ctx)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "model.tcx")
        ctx.exe.save(out)
        with open(out, "rb") as f:
            data = f.read()
    return row, data, ".tcx"


def _load_compile(ctx: _Context, artifact: str | None) -> None:
    from ..runtime.executable import load_executable

    ctx.exe = load_executable(artifact)
    if ctx.job.model.source == "node-test":
        ctx.exe_binding = _binding(ctx, _node_feeds(ctx)[0])[1]


def _node_feeds(ctx: _Context) -> list[dict[str, Any]]:
    """A node-test case's data sets' inputs (every one, whatever ``eval_samples`` says)."""
    from ..compiler.conformance import data_sets

    return [dict(feed) for feed, _, _ in data_sets(_node_case(ctx))]


def _eval_feeds(ctx: _Context) -> list[dict[str, np.ndarray]]:
    job = ctx.job
    n = job.option("eval_samples")
    samples = models.sample_inputs(job.model, ctx.path, n, models.EVAL_SEED)
    return [{k: np.ascontiguousarray(v[i]) for k, v in samples.items()} for i in range(n)]


def _run_node_test(ctx: _Context) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every data set of a node-test case; a data set whose compile-time inputs take other
    values than the executable was compiled with is run by one compiled for them."""
    outputs, stats = [], None
    for feed in _node_feeds(ctx):
        model, binding = _binding(ctx, feed)
        if binding != ctx.exe_binding:
            ctx.exe, ctx.exe_binding = _compile(ctx, model, {}), binding
        got = ctx.exe.run({k: v for k, v in feed.items() if k not in _bound_inputs(ctx)})
        outputs.append(dict(got))
        stats = stats or ctx.exe.stats()
    return outputs, stats


def _stage_run(ctx: _Context) -> tuple[dict[str, Any], bytes | None, str]:
    from ..runtime.model_report import front_end_bound, model_report

    job = ctx.job
    if job.model.source == "node-test":
        ctx.outputs, stats = _run_node_test(ctx)
        sim_seconds = [stats.get("wall_seconds", 0.0)]
    else:
        feeds = _eval_feeds(ctx)
        sim_seconds, outputs, ort_times = [], [], []
        _, ref = models.reference(job.model, ctx.path, job.option("ort_threads"))
        ctx.exe.run(feeds[0])  # warm-up: the first run decodes the programs and writes the constants
        ref(feeds[0])
        # one simulated run, then one of ONNX Runtime, in turn: on a shared host whose speed
        # changes over a benchmark, each pair sees the same host (the ratio's medians do too)
        for _ in range(job.option("runs")):
            got = ctx.exe.run(feeds[0])
            stats = ctx.exe.stats()
            sim_seconds.append(stats.get("wall_seconds", 0.0))
            t0 = time.perf_counter()
            ref(feeds[0])
            ort_times.append(time.perf_counter() - t0)
        outputs.append({k: np.asarray(v) for k, v in got.items()})
        for feed in feeds[1:]:
            outputs.append({k: np.asarray(v) for k, v in ctx.exe.run(feed).items()})
        ctx.outputs = outputs
    row: dict[str, Any] = {"status": "pass", "cycles": int(stats["cycles"]),
                           "mac_utilisation": float(stats.get("mac_utilisation", 0.0)),
                           "sim_seconds": round(float(np.median(sim_seconds)), 4)}
    if stats.get("roofline_cycles"):
        row["roofline_cycles"] = float(stats["roofline_cycles"])
    if job.model.source != "node-test":
        mr = model_report(ctx.exe, stats)
        row["front_end_bound"] = [[n, op, int(c)] for n, op, c in front_end_bound(stats)]
        row.update(bound_cycles=mr["bound_cycles"], ddr_bytes=int(mr["ddr_bytes"]),
                   ddr_lower_bound=int(mr["ddr_lower_bound"]), ddr_ratio=round(float(mr["ddr_ratio"]), 4))
        ort_s = float(np.median(ort_times))
        row.update(ort_seconds=round(ort_s, 5), sim_vs_ort=round(row["sim_seconds"] / ort_s, 1) if ort_s else None)
    return row, _npz_bytes(_pack_outputs(ctx.outputs)), ".npz"


def _load_run(ctx: _Context, artifact: str | None) -> None:
    from ..runtime.files import load_npz

    ctx.outputs = _unpack_outputs(load_npz(artifact))


def _compare_node_test(ctx: _Context) -> tuple[dict[str, Any], bytes | None, str]:
    """A node-test case's outputs against its expected ones, with the case's tolerances
    (compiler/conformance.py): ``wrong`` names the first output that differs; ``rounding``
    marks a 16-bit float output off only by rounding."""
    from ..compiler.conformance import data_sets, first_difference

    case = _node_case(ctx)
    for k, ((_, names, expected), got) in enumerate(zip(data_sets(case), ctx.outputs)):
        why, rounding = first_difference(case, names, expected, got, k)
        if why:
            return {"status": "wrong", "reason": why[:600], "rounding": rounding}, None, ""
    return {"status": "pass"}, None, ""


def _stage_compare(ctx: _Context) -> tuple[dict[str, Any], bytes | None, str]:
    from ..compiler.compare import metrics

    job = ctx.job
    if job.model.source == "node-test":
        return _compare_node_test(ctx)
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
    gate = job.gate
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
        except Exception as e:  # noqa: BLE001 - a refusal is a row; any other exception this job's crash
            if not is_refusal(e):
                emit(dict(base, status="crash", reason=first_line(e), trace=traceback.format_exc()[-2000:],
                          seconds=round(time.perf_counter() - t0, 3), peak_mb=peak_mb()))
                return
            row, artifact, ext = {"status": "refused", "reason": first_line(e)}, None, ""
        row = dict(row, seconds=round(time.perf_counter() - t0, 3), peak_mb=peak_mb())
        if cache is not None:
            cache.put(keys[stage], row, artifact, ext)
        emit(dict(base, **row, cached=False))
        if row["status"] != "pass":
            return
