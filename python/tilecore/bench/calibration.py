"""tilecore/bench/calibration.py — int8 calibration as a map-reduce over shards of the
samples, each shard in a worker, with a table that is the same bit for bit for any
number of shards.

    table = calibrate_sharded("model.onnx", ArraySamples({"x": x}), shards=7, backend="local", jobs=2)

Two rounds, each a map over the shards and an exact reduce
(``tilecore.compiler.calibration``): the absolute maximum of every value (merged by
max), then histograms of |x| whose edges the merged maxima fix (merged by adding integer
counts). Neither reduce depends on the order or the grouping of the samples, so the
thresholds computed from the merged statistics are those of one process over all
samples. A worker holds its session and ``chunk`` samples at a time, never its whole
shard, so its memory does not grow with the data set.

Samples come from a *source* that a worker reads by index range:
:class:`ArraySamples` (arrays in memory, sliced per shard) or :class:`ZooSamples`
(zoo inputs drawn per sample index, so no process ever holds the whole set).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Mapping

import numpy as np

from ..compiler import calibration as _cal


@dataclasses.dataclass
class ArraySamples:
    """Samples in memory: input name -> array (N, *shape)."""

    arrays: Mapping[str, np.ndarray]

    @property
    def count(self) -> int:
        return len(next(iter(self.arrays.values()))) if self.arrays else 0

    def read(self, start: int, stop: int) -> dict[str, np.ndarray]:
        return {k: np.asarray(v[start:stop]) for k, v in self.arrays.items()}

    def shard(self, start: int, stop: int) -> ArraySamples:
        """The part a worker is sent (a copy of the slice, not the whole set)."""
        return ArraySamples({k: np.ascontiguousarray(v[start:stop]) for k, v in self.arrays.items()})


@dataclasses.dataclass(frozen=True)
class ZooSamples:
    """``count`` inputs of zoo model ``name``: sample i is ``zoo.sample_inputs(name, 1,
    seed * 1_000_003 + i)`` — drawn by index, so a worker draws only its own."""

    name: str
    count: int
    seed: int = 0

    def read(self, start: int, stop: int) -> dict[str, np.ndarray]:
        from .. import zoo

        parts = [zoo.sample_inputs(self.name, 1, self.seed * 1_000_003 + i) for i in range(start, stop)]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def shard(self, start: int, stop: int) -> ZooSamples:
        return _ZooRange(self.name, self.count, self.seed, start, stop)  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class _ZooRange(ZooSamples):
    start: int = 0
    stop: int = 0

    def read(self, start: int, stop: int) -> dict[str, np.ndarray]:
        return ZooSamples.read(self, self.start + start, self.start + stop)


def shard_bounds(count: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` contiguous [start, stop) ranges covering 0..count, sizes differing by at
    most one (empty shards dropped)."""
    shards = max(1, min(shards, count))
    base, extra = divmod(count, shards)
    out, start = [], 0
    for i in range(shards):
        stop = start + base + (i < extra)
        out.append((start, stop))
        start = stop
    return [b for b in out if b[1] > b[0]]


@functools.lru_cache(maxsize=2)
def _collector(model: Any) -> _cal.Collector:
    """One ONNX Runtime session per model per worker process, reused by both rounds."""
    return _cal.Collector(model)


def map_absmax(model: Any, source: Any, start: int, stop: int, first_sample: int, chunk: int) -> dict[str, float]:
    """Round 1 of one shard: the maxima over its samples, ``chunk`` at a time."""
    col = _collector(model)
    parts = []
    for a in range(0, stop - start, chunk):
        b = min(a + chunk, stop - start)
        parts.append(_cal.collect_absmax(col.with_samples(source.read(start + a, start + b)), first_sample + a))
    return _cal.merge_absmax(parts)


def map_histograms(model: Any, source: Any, start: int, stop: int, absmax: Mapping[str, float], bins: int,
                   chunk: int) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Round 2 of one shard: histogram counts over its samples with the merged maxima."""
    col = _collector(model)
    parts = []
    for a in range(0, stop - start, chunk):
        b = min(a + chunk, stop - start)
        parts.append(_cal.collect_histograms(col.with_samples(source.read(start + a, start + b)), absmax, bins))
    return _cal.merge_histograms(parts)


def _map(backend: str, jobs: int, func: Any, calls: list[tuple]) -> list[Any]:
    """``func(*args)`` for each call, on the backend (results in the order of ``calls``)."""
    if backend == "serial" or len(calls) == 1:
        return [func(*c) for c in calls]
    if backend == "local":
        import concurrent.futures
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")  # no forked copy of the parent's arrays and sessions
        try:
            with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
                return list(pool.map(func, *zip(*calls)))
        except concurrent.futures.process.BrokenProcessPool:
            raise _cal.CalibrationError("calibration: a worker process died (out of memory, or killed) while "
                                        f"running {func.__name__} over {len(calls)} shard(s)") from None
    if backend == "ray":
        import ray

        remote = ray.remote(max_retries=0)(func)
        return ray.get([remote.remote(*c) for c in calls])
    raise ValueError(f"backend `{backend}` is not one of serial, local, ray")


def calibrate_sharded(model: Any, source: Any, shards: int = 1, method: str = "auto", percentile: float = 99.99,
                      bins: int = 2048, backend: str = "serial", jobs: int = 2, chunk: int = 16) -> _cal.CalibTable:
    """The :class:`~tilecore.compiler.calibration.CalibTable` of ``model`` (a path or
    bytes) over ``source`` (ArraySamples, ZooSamples or a dict of arrays), computed in
    ``shards`` shards on ``backend`` (serial, local: ``jobs`` processes, ray). The same
    table, bit for bit, for any ``shards`` and ``chunk``."""
    _cal.check_method(method, percentile)
    if isinstance(source, Mapping):
        source = ArraySamples(source)
    if isinstance(source, ArraySamples):
        _cal.check_samples(source.arrays)  # here, where a bad sample's index is its index in the whole set
    if isinstance(model, str) and backend == "ray":
        with open(model, "rb") as f:  # a worker on another machine cannot open this path
            model = f.read()
    count = source.count
    if count == 0:
        raise _cal.CalibrationError("calibration samples: no samples (N = 0)")
    bounds = shard_bounds(count, shards)
    # each worker is sent its shard only (a slice of arrays, or an index range to draw)
    parts = [(source.shard(a, b), a, b) for a, b in bounds]
    maxima = _map(backend, jobs, map_absmax, [(model, p, 0, b - a, a, chunk) for p, a, b in parts])
    absmax = _cal.merge_absmax(maxima)
    counts = _map(backend, jobs, map_histograms, [(model, p, 0, b - a, absmax, bins, chunk) for p, a, b in parts])
    hists, zeros = _cal.merge_histograms(counts)
    from ..compiler.compare import _load_model

    names = _cal.float_values(_load_model(model))  # no session in this process: the workers have them
    return _cal.table_from_statistics(names, absmax, hists, zeros, count, method, percentile, bins)
