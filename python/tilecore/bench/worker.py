"""tilecore/bench/worker.py — one job in a process of its own, so that a segfault, an
abort, the OOM killer or a hang costs that job and not the run.

    python -X faulthandler -c "...worker._main(SPEC.json, STATE.jsonl)"

The worker imports the job's ``preload`` files or modules (custom ops, test hooks), runs
the stages (stages.run_job) and appends every row to STATE.jsonl as it is made. The
parent (:func:`run_isolated`, used by every backend) waits at most ``timeout`` seconds,
kills the worker's whole process group when time is up, and turns the state file into
the job's rows: the stage a dead worker was in becomes ``crash`` with how it died and
the tail of its stderr, the stage a killed one was in ``timeout``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

STDERR_TAIL = 2000  # characters of a dead worker's stderr kept in its row
_ENTRY = "import sys; from tilecore.bench.worker import _main; sys.exit(_main(sys.argv[1], sys.argv[2]))"


def preload(items: list[str] | tuple[str, ...]) -> None:
    """Imports each item: a ``.py`` file by path, else a module by name."""
    for item in items:
        if item.endswith(".py"):
            name = "tilecore_bench_preload_" + os.path.splitext(os.path.basename(item))[0]
            spec = importlib.util.spec_from_file_location(name, item)
            if spec is None or spec.loader is None:
                raise ImportError(f"preload `{item}`: not a Python file")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            importlib.import_module(item)


def _main(spec_path: str, state_path: str) -> int:
    from .cache import Cache
    from .jobs import Job
    from .stages import run_job

    with open(spec_path) as f:
        spec = json.load(f)
    job = Job.from_json(spec["job"])

    def emit(row: dict[str, Any]) -> None:
        with open(state_path, "a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()

    preload(job.preload)
    cache = Cache(spec["cache"]) if spec.get("cache") else None
    run_job(job, spec["keys"], cache, emit)
    return 0


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def stderr_tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - STDERR_TAIL))
            return f.read().decode(errors="replace").strip()
    except OSError:
        return ""


def run_process(argv: list[str], timeout: float, stderr_path: str) -> tuple[int, bool, float]:
    """Runs ``argv`` in a session of its own with stderr to ``stderr_path``; kills its whole
    process group after ``timeout`` seconds. (return code, timed out, wall seconds)."""
    t0 = time.perf_counter()
    with open(stderr_path, "wb") as errf:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf,
                                start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its own group: any child it started goes too
            except ProcessLookupError:
                pass
            proc.wait()
    return proc.returncode, timed_out, time.perf_counter() - t0


def death(returncode: int) -> str:
    """How a process that left its work unfinished ended: ``exit status N`` or ``killed by
    SIGSEGV`` (SIGKILL: the OOM killer, or an operator)."""
    how = f"exit status {returncode}" if returncode >= 0 else f"killed by {_signal_name(-returncode)}"
    if returncode == -signal.SIGKILL:
        how += " (the OOM killer, or an operator)"
    return how


def merge_state(lines: list[dict[str, Any]], base: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a state file: a stage's ``started`` mark is replaced by its row."""
    rows: list[dict[str, Any]] = []
    for r in lines:
        if rows and rows[-1].get("started") and rows[-1]["stage"] == r["stage"]:
            rows[-1] = r
        else:
            rows.append(r)
    if not rows:  # died before its first stage (a preload, the import of tilecore)
        rows.append(dict(base, status="crash", started=True))
    return rows


def run_isolated(job_doc: dict[str, Any], keys: dict[str, str], cache_folder: str | None, timeout: float,
                 base: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of one job run by a worker process (see the module doc). ``base``: the
    fields of a row made here (model, precision, options, stage of the first stage)."""
    with tempfile.TemporaryDirectory(prefix="tilecore-bench-") as tmp:
        spec, state, err = (os.path.join(tmp, n) for n in ("spec.json", "state.jsonl", "stderr.txt"))
        with open(spec, "w") as f:
            json.dump({"job": job_doc, "keys": keys, "cache": cache_folder}, f)
        # faulthandler: a segfault prints the Python stack, which the row's stderr tail keeps
        code, timed_out, wall = run_process([sys.executable, "-X", "faulthandler", "-c", _ENTRY, spec, state],
                                            timeout, err)
        lines = []
        if os.path.exists(state):
            with open(state) as f:
                for ln in f:
                    try:
                        lines.append(json.loads(ln))
                    except json.JSONDecodeError:
                        pass  # a line cut by the kill
        rows = merge_state(lines, base)
        last = rows[-1]
        if last.get("started"):
            last.pop("started")
            tail = stderr_tail(err)
            if timed_out:
                last["status"] = "timeout"
                last["reason"] = f"no result after {timeout:g} s (killed)"
            else:
                last["reason"] = f"worker died: {death(code)}"
            last["seconds"] = round(wall - sum(r.get("seconds") or 0 for r in rows[:-1]), 3)
            if tail:
                last["stderr_tail"] = tail
        return rows
