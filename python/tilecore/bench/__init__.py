"""tilecore.bench — model-zoo regression, conformance sweeps and calibration as jobs
that run serially, on a local process pool or on a Ray cluster, with a cache keyed by
content and a row per stage (docs/bench.md).

    from tilecore import bench
    jobs = bench.jobs_for(["zoo"], ["f32", "int8"])            # models x precisions x option sets
    rows = bench.run(jobs, backend="local", workers=2, cache=bench.Cache())
    bench.report.write_json("r.json", rows)

    table = bench.calibrate_sharded("model.onnx", {"x": x}, shards=4, backend="local")

Files: ``jobs.py`` (a job, its stages and keys), ``models.py`` (model lists, samples,
references), ``stages.py`` (the stages in one process), ``worker.py`` (a job in a process
of its own), ``backends.py`` (serial, local, ray), ``cache.py``, ``report.py`` (JSON,
Markdown, baseline diff, reruns), ``calibration.py`` (sharded calibration).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from . import report
from .backends import BACKENDS, run
from .cache import Cache
from .calibration import ArraySamples, ZooSamples, calibrate_sharded
from .jobs import GATES, OPTIONS, PRECISIONS, STAGES, STATUSES, BenchError, Job, ModelRef
from .models import resolve

__all__ = ["ArraySamples", "BACKENDS", "BenchError", "Cache", "GATES", "Job", "ModelRef", "OPTIONS", "PRECISIONS",
           "STAGES", "STATUSES", "ZooSamples", "calibrate_sharded", "jobs_for", "report", "resolve", "run"]


def jobs_for(models: Sequence[str], precisions: Sequence[str], option_sets: Sequence[Mapping[str, Any]] = ({},),
             preload: Sequence[str] = ()) -> list[Job]:
    """Every (model, precision, option set) of a model list (files, folders, corpora,
    names: models.resolve), in that order."""
    refs = resolve(models)
    return [Job.make(m, p, o, tuple(preload)) for m in refs for p in precisions for o in option_sets]
