"""tests/python/bench/test_ray_cluster.py — the bench on a two-node Ray cluster
(ray.cluster_utils.Cluster, one CPU per node), in a process of its own since a process
joins one Ray cluster at a time (the session's local one is in this one)."""
import json
import os
import subprocess
import sys

import pytest

from bench_models import FAULTY_OPS, import_ray

# The jobs compile and run models: the npu device is needed.
pytestmark = pytest.mark.npu

SCRIPT = r"""
import json, sys
from ray.cluster_utils import Cluster
import ray
from tilecore.bench import Job, ModelRef, run


tiny, crash = sys.argv[1], sys.argv[2]
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
cluster.add_node(num_cpus=1)
ray.init(address=cluster.address, log_to_driver=False)
ref = ModelRef("tiny.onnx", "file", tiny)
jobs = [Job.make(ref, p) for p in ("f32", "int8", "bf16")]
jobs.append(Job.make(ModelRef("crash.onnx", "file", crash), "f32", preload=(sys.argv[3],)))
rows = run(jobs, backend="ray", timeout=60)
print(json.dumps({"rows": rows, "nodes": len(ray.nodes())}))
ray.shutdown()
cluster.shutdown()
"""


def test_two_node_cluster_gives_the_local_rows(models_dir):
    import_ray()
    from test_backends import comparable

    from tilecore.bench import Job, ModelRef, run

    tiny, crash = str(models_dir / "tiny.onnx"), str(models_dir / "crash.onnx")
    env = dict(os.environ, RAY_ADDRESS="")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, tiny, crash, FAULTY_OPS], capture_output=True, text=True,
                          timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = doc["rows"]
    assert doc["nodes"] == 2
    local = run([Job.make(ModelRef("tiny.onnx", "file", tiny), p) for p in ("f32", "int8", "bf16")], backend="local")
    assert comparable(rows[:len(local)]) == comparable(local)
    assert rows[-1]["model"] == "crash.onnx" and rows[-1]["status"] == "crash"
    assert len({r["ray_node"] for r in rows}) == 2  # both nodes ran jobs
