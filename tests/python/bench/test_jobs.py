"""tests/python/bench/test_jobs.py — a job's stages, options and content keys."""
import pytest
from bench_models import write_tiny

from tilecore.bench import BenchError, Job, ModelRef
from tilecore.bench.jobs import model_digest, parse_options, stage_keys


def _keys(path, precision="int8", **options):
    return stage_keys(Job.make(ModelRef("m", "file", str(path)), precision, options), model_digest(str(path)))


def test_f32_has_no_calibration_stage():
    ref = ModelRef("m", "file", "m.onnx")
    assert Job.make(ref, "f32").stages == ("import", "compile", "run", "compare")
    assert Job.make(ref, "int8").stages == ("import", "calibrate", "compile", "run", "compare")


def test_keys_follow_content_and_options(tmp_path):
    a = write_tiny(str(tmp_path / "a.onnx"))
    b = str(tmp_path / "b.onnx")
    import numpy as np
    from bench_models import tiny_weights

    write_tiny(b, tiny_weights() + np.float32(1))
    base = _keys(a)
    assert _keys(a) == base  # a pure function of the inputs
    assert len(set(base.values())) == len(base)
    other_model = _keys(b)
    assert all(other_model[s] != base[s] for s in base)  # every stage hashes the model's bytes
    grouped = _keys(a, group=False)  # a compile option: import and calibrate keep their keys
    assert grouped["import"] == base["import"] and grouped["calibrate"] == base["calibrate"]
    assert all(grouped[s] != base[s] for s in ("compile", "run", "compare"))
    evals = _keys(a, eval_samples=3)  # a run option
    assert evals["compile"] == base["compile"] and evals["run"] != base["run"]
    assert _keys(a, calib_shards=7) == base  # the table is the same for any number of shards
    assert _keys(a, calib_samples=16) == base  # the default written out is the same job


def test_bad_options_are_named():
    with pytest.raises(BenchError, match="unknown option `cores`"):
        parse_options("cores=2")
    with pytest.raises(BenchError, match="option `eval_samples` takes a int"):
        parse_options("eval_samples=two")
    with pytest.raises(BenchError, match="option `gate` is a cosine"):
        parse_options("gate=1.5")
    with pytest.raises(BenchError, match="expected name=value"):
        parse_options("group")
    assert parse_options("group=false,calib_method=kl") == {"group": False, "calib_method": "kl"}
    with pytest.raises(BenchError, match="precision `int4`"):
        Job.make(ModelRef("m", "file", "m.onnx"), "int4")


def test_workers_take_the_longest_jobs_first(tmp_path):
    """Model bytes x precision, largest first (ties keep their order); rows still come back
    in the order given (test_backends)."""
    from tilecore.bench.backends import longest_first

    sizes = {"small": 1000, "large": 5000, "medium": 2400}
    refs = {}
    for name, size in sizes.items():
        (tmp_path / f"{name}.onnx").write_bytes(b"\0" * size)
        refs[name] = ModelRef(name, "file", str(tmp_path / f"{name}.onnx"))
    todo = [(i, Job.make(refs[m], p), {}) for i, (m, p) in enumerate(
        [("small", "f32"), ("large", "f32"), ("medium", "int8"), ("small", "int8"), ("large", "int8")])]
    # costs: 1000, 5000, 4800, 2000, 10000
    assert [i for i, _, _ in longest_first(todo)] == [4, 1, 2, 3, 0]
