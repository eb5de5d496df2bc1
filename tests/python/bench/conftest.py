"""tests/python/bench/conftest.py — the bench tests' models folder (bench_models.py writes
the models), and one local Ray cluster (2 CPUs, no dashboard) for the whole run, started
by the first test that needs it. Without ray installed the Ray tests skip with that
reason, except under CI, which installs it (scripts/bootstrap.sh): there they fail."""
import pytest
from bench_models import import_ray, write_faulty, write_tiny


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench-models")
    write_tiny(str(d / "tiny.onnx"))
    write_faulty(str(d / "crash.onnx"), "Crash")
    write_faulty(str(d / "hang.onnx"), "Hang")
    return d


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for the session (2 CPUs, no dashboard)."""
    ray = import_ray()
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
