"""tests/python/bench/test_backends.py — the same rows on every backend, checked against
numpy and a direct compilation; crashes and hangs become that job's rows; a warm cache
answers without workers."""
import time

import numpy as np
import pytest
from bench_models import FAULTY_OPS, tiny_weights

import tilecore
from tilecore.bench import Cache, Job, ModelRef, run
from tilecore.bench import models as bench_models
from tilecore.runtime.files import load_npz

# The jobs compile and run models: the npu device is needed.
pytestmark = pytest.mark.npu


# A job's time limit in the tests with faults: a worker process imports tilecore (about a
# second, several on a loaded two-core machine) before its first stage; the hang job's
# row comes after it.
JOB_TIMEOUT = 10


def _tiny_jobs(models_dir, precisions=("f32", "int8")):
    ref = ModelRef("tiny.onnx", "file", str(models_dir / "tiny.onnx"))
    return [Job.make(ref, p) for p in precisions]


def _fault_jobs(models_dir, *names):
    return [Job.make(ModelRef(f"{n}.onnx", "file", str(models_dir / f"{n}.onnx")), "f32", preload=(FAULTY_OPS,))
            for n in names]


def comparable(rows):
    """What must agree between backends: statuses, cosines, cycles per stage."""
    return [(r["model"], r["precision"], r["stage"], r["status"], r.get("cosine"), r.get("cycles")) for r in rows]


def _cosine(a, b):
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_serial_and_local_rows_agree_and_match_references(models_dir, tmp_path):
    jobs = _tiny_jobs(models_dir)
    cache = Cache(tmp_path / "cache")
    serial = run(jobs, backend="serial", cache=cache)
    local = run(jobs, backend="local", workers=2, cache=None)
    assert comparable(serial) == comparable(local)
    assert [r["stage"] for r in serial] == ["import", "compile", "run", "compare",
                                           "import", "calibrate", "compile", "run", "compare"]
    assert all(r["status"] == "pass" and r["seconds"] >= 0 and r["peak_mb"] > 0 for r in serial)
    path = str(models_dir / "tiny.onnx")
    x = bench_models.sample_inputs(jobs[0].model, path, 1, bench_models.EVAL_SEED)["x"][0]
    want = np.maximum(x.astype(np.float64) @ tiny_weights().astype(np.float64), 0)  # numpy's Relu(x @ W)
    for job in jobs:
        rows = {r["stage"]: r for r in serial if r["precision"] == job.precision}
        # the run stage's outputs (the cached artifact) against numpy: the row's cosine
        got = load_npz(cache.get(rows["run"]["key"])[1])["0/y"]
        assert abs(rows["compare"]["cosine"] - _cosine(got, want)) < 1e-9
        # the row's cycles are those of the same compilation made directly
        kw = {}
        if job.precision == "int8":
            calib = bench_models.sample_inputs(job.model, path, 16, bench_models.CALIB_SEED)
            from tilecore.compiler.calibration import calibrate

            kw = {"calib": calibrate(path, calib, method="minmax"), "calib_samples": calib}
        exe = tilecore.compile(path, precision=job.precision, **kw)
        exe.run({"x": x})
        assert rows["run"]["cycles"] == exe.stats()["cycles"]
        assert rows["run"]["mac_utilisation"] == exe.stats()["mac_utilisation"]
    assert rows["compare"]["cosine"] < 1 - 1e-6  # int8 is not f32: the compare is not vacuous


def test_gate_makes_a_wrong_row(models_dir):
    rows = run([Job.make(ModelRef("tiny.onnx", "file", str(models_dir / "tiny.onnx")), "int8", {"gate": 1.0})],
               backend="serial")
    assert rows[-1]["stage"] == "compare" and rows[-1]["status"] == "wrong"
    assert "below the gate 1.0" in rows[-1]["reason"]


def test_crash_and_hang_are_rows_and_the_run_finishes(models_dir):
    jobs = _fault_jobs(models_dir, "crash", "hang") + _tiny_jobs(models_dir, ("f32",))
    t0 = time.perf_counter()
    rows = run(jobs, backend="local", workers=2, timeout=JOB_TIMEOUT)
    assert time.perf_counter() - t0 < 3 * JOB_TIMEOUT
    crash, hang = rows[0], rows[1]
    assert (crash["stage"], crash["status"]) == ("import", "crash")
    assert "SIGSEGV" in crash["reason"] and "Segmentation fault" in crash["stderr_tail"]
    assert (hang["stage"], hang["status"]) == ("import", "timeout") and f"{JOB_TIMEOUT} s" in hang["reason"]
    assert rows[-1]["status"] == "pass" and rows[-1]["stage"] == "compare"


def test_serial_crash_is_a_row(models_dir):
    rows = run(_fault_jobs(models_dir, "crash") + _tiny_jobs(models_dir, ("f32",)), backend="serial")
    assert rows[0]["status"] == "crash" and rows[-1]["status"] == "pass"


def test_warm_cache_answers_without_workers(models_dir, tmp_path):
    jobs = _tiny_jobs(models_dir)
    cache = Cache(tmp_path / "cache")
    cold = run(jobs, backend="local", cache=cache)
    t0 = time.perf_counter()
    warm = run(jobs, backend="local", cache=cache)
    warm_s = time.perf_counter() - t0
    assert comparable(warm) == comparable(cold)
    assert all(r["cached"] for r in warm) and not any(r["cached"] for r in cold)
    assert warm_s < 1.0  # no worker process was started (one takes longer than this to import tilecore)


def test_ray_rows_agree_and_faults_are_rows(models_dir, ray_cluster):
    jobs = _tiny_jobs(models_dir) + _fault_jobs(models_dir, "crash", "hang")
    rows = run(jobs, backend="ray", timeout=JOB_TIMEOUT)
    local = run(_tiny_jobs(models_dir), backend="local")
    assert comparable(rows[:len(local)]) == comparable(local)
    crash, hang = rows[len(local):]
    assert crash["status"] == "crash" and "SIGSEGV" in crash["reason"] and crash["stderr_tail"]
    assert hang["status"] == "timeout"


def test_a_cached_executable_is_run_again(models_dir, tmp_path):
    """Only the later stages recomputed: the compile stage's executable comes from the cache."""
    import os

    jobs = _tiny_jobs(models_dir, ("int8",))
    cache = Cache(tmp_path / "cache")
    cold = run(jobs, backend="serial", cache=cache)
    for r in cold:
        if r["stage"] in ("run", "compare"):
            os.unlink(tmp_path / "cache" / r["key"][:2] / (r["key"] + ".json"))
    again = run(jobs, backend="serial", cache=cache)
    assert comparable(again) == comparable(cold)
    assert [r["cached"] for r in again] == [True, True, True, False, False]
