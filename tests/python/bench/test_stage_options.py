"""tests/python/bench/test_stage_options.py — the stages' options and node-test cases, run
in this process (stages.run_job): automatic mixed precision, the run row's DDR figures,
node-test cases compared with their tolerances on every data set, the run's outputs
kept with their dtypes, sequences and empty optionals, and its timed runs taken in turn."""
import io

import ml_dtypes
import numpy as np
import pytest
from bench_models import write_tiny

from tilecore.bench import BenchError, Job, ModelRef
from tilecore.bench import models, stages
from tilecore.bench.jobs import model_digest, parse_options, stage_keys

# The jobs compile and run models: the npu device is needed.
pytestmark = pytest.mark.npu


def _rows(job):
    rows = []
    stages.run_job(job, stage_keys(job, model_digest(models.model_path(job.model))), None, rows.append)
    return {r["stage"]: r for r in rows if not r.get("started")}


def test_auto_mixed_options_and_keys(tmp_path):
    path = write_tiny(str(tmp_path / "m.onnx"))
    ref = ModelRef("m", "file", path)
    with pytest.raises(BenchError, match="option `auto_mixed` is a target cosine in \\(0, 1\\] or \"gate\""):
        parse_options("auto_mixed=1.5")
    with pytest.raises(BenchError, match="option `entry` is bytes or graph"):
        parse_options("entry=text")
    assert parse_options("ort_threads=0") == {"ort_threads": 0}  # 0: ONNX Runtime's own default
    assert Job.make(ref, "f32", {"auto_mixed": "gate"}) == Job.make(ref, "f32")  # nothing narrower to widen
    gated = Job.make(ref, "bf16", {"auto_mixed": "gate", "gate": 0.999})
    assert gated.auto_mixed_target == pytest.approx(1 - 0.001 * 0.5)
    assert Job.make(ref, "int8", {"auto_mixed": "gate"}).auto_mixed_target == pytest.approx(1 - 0.01 * 0.8)
    # "gate" and the number it stands for compile the same executable
    digest = model_digest(path)
    same = Job.make(ref, "bf16", {"auto_mixed": 1 - 0.001 * 0.5, "gate": 0.999})
    assert stage_keys(gated, digest)["compile"] == stage_keys(same, digest)["compile"]
    assert stage_keys(gated, digest)["compile"] != stage_keys(Job.make(ref, "bf16", {"gate": 0.999}), digest)["compile"]


def test_auto_mixed_widens_nodes_and_run_row_has_ddr_figures(tmp_path):
    path = write_tiny(str(tmp_path / "m.onnx"))
    ref = ModelRef("m", "file", path)
    plain = _rows(Job.make(ref, "bf16", {"calib_samples": 4, "gate": 0.5}))
    mixed = _rows(Job.make(ref, "bf16", {"calib_samples": 4, "gate": 0.5, "auto_mixed": 1.0}))
    assert "mixed" not in plain["compile"]
    # a target of 1.0 leaves only f32 for the MatMul: its output is f32's
    assert mixed["compile"]["mixed"]["moved"] and mixed["compile"]["mixed"]["moved_to"] == "f32"
    assert plain["compare"]["cosine"] < 0.9999999 <= mixed["compare"]["cosine"]
    run = plain["run"]
    # weights (16 x 8, bf16) + input (4 x 16, f32) + output (4 x 8, f32): each moved once
    assert run["ddr_lower_bound"] == 2 * 16 * 8 + 4 * (4 * 16 + 4 * 8)
    assert run["ddr_ratio"] == pytest.approx(run["ddr_bytes"] / run["ddr_lower_bound"], rel=1e-3)
    assert run["roofline_cycles"] > 0 and sum(run["bound_cycles"].values()) <= run["cycles"]


def test_node_test_case_every_data_set_with_its_tolerances(monkeypatch):
    job = Job.make(ModelRef("test_relu", "node-test"), "f32")
    case = models.node_case("test_relu")
    x = case.data_sets[0][0][0]
    np.testing.assert_array_equal(np.asarray(case.data_sets[0][1][0]), np.maximum(x, 0))  # the data are Relu's
    rows = _rows(job)
    assert rows["compare"]["status"] == "pass" and rows["compile"]["places"]
    # the comparison can fail: an output off by one everywhere
    ctx = stages._Context(job, models.model_path(job.model))
    ctx.outputs = [{"y": np.maximum(x, 0) + 1}]
    row = stages._compare_node_test(ctx)[0]
    assert row["status"] == "wrong" and row["reason"].startswith("output y:") and not row["rounding"]


def test_outputs_keep_dtypes_sequences_and_empty_optionals():
    outs = [{"a": np.arange(4, dtype=np.float32).astype(ml_dtypes.bfloat16), "s": [np.ones(2, np.int64), np.zeros(3)],
             "n": None, "i": np.int32(3)}, {"a": np.ones(1, ml_dtypes.float8_e5m2), "s": [], "n": None, "i": None}]
    back = stages._unpack_outputs(dict(np.load(io.BytesIO(stages._npz_bytes(stages._pack_outputs(outs))))))
    assert [sorted(o) for o in back] == [sorted(o) for o in outs]
    assert back[0]["a"].dtype == ml_dtypes.bfloat16 and back[0]["a"].tobytes() == outs[0]["a"].tobytes()
    assert back[1]["a"].dtype == ml_dtypes.float8_e5m2
    assert [s.dtype for s in back[0]["s"]] == [np.int64, np.float64] and back[1]["s"] == []
    assert back[0]["n"] is None and back[1]["i"] is None and back[0]["i"] == 3


def test_run_times_the_simulator_and_onnx_runtime_in_turn(tmp_path, monkeypatch):
    # one simulated run, then one of ONNX Runtime, `runs` times after a warm-up of each: the
    # ratio's two medians see the same host
    path = write_tiny(str(tmp_path / "m.onnx"))
    job = Job.make(ModelRef("m", "file", path), "f32", {"runs": 3, "eval_samples": 1})
    calls = []
    real_reference = models.reference

    def reference(*args, **kw):
        names, run = real_reference(*args, **kw)
        return names, lambda feed: (calls.append("ort"), run(feed))[1]

    monkeypatch.setattr(models, "reference", reference)

    class Recorded:
        def __init__(self, exe):
            self.exe = exe

        def run(self, feed):
            calls.append("sim")
            return self.exe.run(feed)

        def __getattr__(self, name):
            return getattr(self.exe, name)

    real_compile, load = stages._STAGES["compile"]

    def compile_stage(ctx):
        out = real_compile(ctx)
        ctx.exe = Recorded(ctx.exe)
        return out

    monkeypatch.setitem(stages._STAGES, "compile", (compile_stage, load))
    run = _rows(job)["run"]
    timed = calls[calls.index("ort") + 1:][:6]
    assert calls[:2] == ["sim", "ort"] and timed == ["sim", "ort"] * 3
    assert run["ort_seconds"] > 0 and run["sim_vs_ort"] is not None
