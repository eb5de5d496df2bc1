"""tilecore/bench/backends.py — where the jobs run: ``serial`` (one worker process at a
time), ``local`` (``jobs`` worker processes at once; the default) or ``ray`` (a task per
job on a Ray cluster: ``address``, else ``RAY_ADDRESS``, else a local cluster started
for the run, without its dashboard).

On every backend a job runs in a worker process of its own (worker.run_isolated), so a
crash or a hang becomes that job's ``crash`` or ``timeout`` row and the run goes on. On
Ray the task that waits for the worker is given ``max_retries=0`` (a compiler crash is
deterministic: a retry would crash again); when the task itself is lost
(``WorkerCrashedError``, Ray's own OOM kill) its job gets a ``crash`` row, and a task
still running ``timeout`` + 60 s after it started is cancelled with
``ray.cancel(force=True)`` and gets a ``timeout`` row.

The parent answers a job from the cache when every stage of it is there and sends only
the others to workers.
"""

from __future__ import annotations

import concurrent.futures
import os
import tempfile
import time
from typing import Any, Callable, Sequence

from . import models
from .cache import Cache
from .jobs import BenchError, Job, model_digest, row_base, stage_keys, tilecore_fingerprint
from .stages import cached_rows
from .worker import run_isolated

BACKENDS = ("serial", "local", "ray")


class _Progress:
    """A tqdm bar over the jobs on stderr (nothing when disabled or tqdm is missing)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.bar = None
        if enabled and total:
            try:
                import sys

                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="job", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                pass

    def done(self, job: Job, rows: list[dict[str, Any]]) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"{job.label}: {rows[-1]['stage']} {rows[-1]['status']}"[:60], refresh=False)
            self.bar.update()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _prepare(jobs: Sequence[Job], fingerprint: str) -> list[dict[str, str]]:
    """Each job's stage keys (the model digested once per model)."""
    digests: dict[Any, str] = {}
    out = []
    for job in jobs:
        if job.model not in digests:
            digests[job.model] = model_digest(models.model_path(job.model))
        out.append(stage_keys(job, digests[job.model], fingerprint))
    return out


# Relative cost of a precision's stages per model byte: int8 calibrates and compiles a
# quantised model, f16/bf16 search mixed precision more often than f32.
_PRECISION_COST = {"f32": 1.0, "f16": 1.5, "bf16": 1.5, "int8": 2.0}


def longest_first(todo: list[tuple[int, Job, dict[str, str]]]) -> list[tuple[int, Job, dict[str, str]]]:
    """The jobs ordered by their expected cost (model bytes x precision), largest first: with
    several workers, a long job started last would leave the others idle while it runs
    (Graham's longest-processing-time order). Rows still come back in the order given."""
    def cost(item: tuple[int, Job, dict[str, str]]) -> float:
        job = item[1]
        try:
            size = os.path.getsize(models.model_path(job.model))
        except (OSError, BenchError):
            size = 0
        return size * _PRECISION_COST.get(job.precision, 1.0)

    return sorted(todo, key=cost, reverse=True)


def _ray_task(job_doc: dict[str, Any], keys: dict[str, str], cache_folder: str | None, timeout: float,
              base: dict[str, Any], model_bytes: bytes | None) -> list[dict[str, Any]]:
    """The job on this Ray worker's node, in a worker process (a model file not found on
    this node is written from ``model_bytes``)."""
    if model_bytes is not None and not os.path.isfile(job_doc["model"]["path"]):
        fd, path = tempfile.mkstemp(suffix=".onnx", prefix="tilecore-bench-")
        with os.fdopen(fd, "wb") as f:
            f.write(model_bytes)
        job_doc = dict(job_doc, model=dict(job_doc["model"], path=path))
    if cache_folder and not os.path.isdir(os.path.dirname(os.path.abspath(cache_folder))):
        cache_folder = None  # the cache folder is not shared with this node
    import ray

    node = ray.get_runtime_context().get_node_id()
    return [dict(r, ray_node=node) for r in run_isolated(job_doc, keys, cache_folder, timeout, base)]


def connect_ray(address: str | None = None) -> Any:
    """ray, initialised: connected to ``address`` (or ``RAY_ADDRESS``), else a local
    cluster without the dashboard; reused when this process is connected already."""
    try:
        import ray
    except ImportError:
        raise BenchError("--backend ray needs the `ray` package (pip install 'tilecore[ray]')") from None
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS")
        kw: dict[str, Any] = {"log_to_driver": False}
        if address:
            ray.init(address=address, **kw)
        else:
            ray.init(include_dashboard=False, **kw)
    return ray


def _crash_rows(job: Job, reason: str, status: str = "crash") -> list[dict[str, Any]]:
    return [dict(row_base(job, job.stages[0]), status=status, reason=reason)]


def _run_ray(todo: list[tuple[int, Job, dict[str, str]]], timeout: float, cache_folder: str | None,
             address: str | None, finish: Callable[[int, list[dict[str, Any]]], None]) -> None:
    ray = connect_ray(address)
    from ray.exceptions import GetTimeoutError, RayError, TaskCancelledError, WorkerCrashedError

    task = ray.remote(max_retries=0, num_cpus=1)(_ray_task)
    # A backstop for a task that lost its worker process: the worker kills itself at
    # ``timeout``; a task still pending past the time its turn can take is cancelled.
    slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
    t0 = time.monotonic()
    pending: dict[Any, tuple[int, Job, float]] = {}
    for k, (i, job, keys) in enumerate(todo):
        blob = None
        if job.model.source == "file":
            with open(job.model.path, "rb") as f:
                blob = f.read()
        ref = task.remote(job.to_json(), keys, cache_folder, timeout, row_base(job, job.stages[0]), blob)
        pending[ref] = (i, job, t0 + (k // slots + 1) * (timeout + 60))
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
        for ref in ready:
            i, job, _ = pending.pop(ref)
            try:
                rows = ray.get(ref)
            except TaskCancelledError:
                rows = _crash_rows(job, f"no result after {timeout:g} s (the Ray task was cancelled)", "timeout")
            except WorkerCrashedError as e:
                rows = _crash_rows(job, f"the Ray worker died: {str(e).splitlines()[0][:300]}")
            except (RayError, GetTimeoutError) as e:
                rows = _crash_rows(job, f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300]}")
            finish(i, rows)
        now = time.monotonic()
        for ref, (_, _, deadline) in pending.items():
            if now > deadline:
                ray.cancel(ref, force=True)


def run(jobs: Sequence[Job], backend: str = "local", workers: int = 2, timeout: float = 600.0,
        cache: Cache | None = None, progress: bool = False, address: str | None = None,
        on_rows: Callable[[Job, list[dict[str, Any]]], None] | None = None) -> list[dict[str, Any]]:
    """Runs ``jobs`` and returns their rows, job by job in the order given.

    :param backend: ``serial``, ``local`` (``workers`` processes at once) or ``ray``.
    :param timeout: seconds a job may take before its worker is killed (``timeout`` row).
    :param cache: where stage results are kept (None: nothing read or written).
    :param on_rows: called with each finished job's rows (in the order they finish).
    """
    if backend not in BACKENDS:
        raise BenchError(f"backend `{backend}` is not one of {', '.join(BACKENDS)}")
    fingerprint = tilecore_fingerprint()
    all_keys = _prepare(jobs, fingerprint)
    results: list[list[dict[str, Any]] | None] = [None] * len(jobs)
    bar = _Progress(len(jobs), progress)
    cache_folder = os.path.abspath(cache.folder) if cache is not None else None

    def finish(i: int, rows: list[dict[str, Any]]) -> None:
        results[i] = rows
        bar.done(jobs[i], rows)
        if on_rows is not None:
            on_rows(jobs[i], rows)

    todo = []
    for i, (job, keys) in enumerate(zip(jobs, all_keys)):
        rows = cached_rows(job, keys, cache)
        if rows is not None:
            finish(i, rows)
        else:
            todo.append((i, job, keys))

    def one(item: tuple[int, Job, dict[str, str]]) -> tuple[int, list[dict[str, Any]]]:
        i, job, keys = item
        return i, run_isolated(job.to_json(), keys, cache_folder, timeout, row_base(job, job.stages[0]))

    try:
        if backend == "serial":
            for item in todo:
                finish(*one(item))
        elif backend == "local":
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
                futures = [pool.submit(one, item) for item in longest_first(todo)]
                for fut in concurrent.futures.as_completed(futures):
                    finish(*fut.result())
        else:
            _run_ray(longest_first(todo), timeout, cache_folder, address, finish)
    finally:
        bar.close()
    return [row for rows in results if rows is not None for row in rows]
