"""tests/python/bench/test_calibration_shards.py — calibration as a map-reduce: the table
is the same bit for bit for 1, 2 and 7 shards, on every backend, and its thresholds are
those numpy computes over all the samples at once."""
import json

import numpy as np
import pytest
from bench_models import tiny_weights, write_tiny

from tilecore.bench import calibrate_sharded
from tilecore.bench.calibration import shard_bounds
from tilecore.compiler.calibration import CalibrationError, calibrate


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    path = write_tiny(str(tmp_path_factory.mktemp("calib") / "tiny.onnx"))
    rng = np.random.default_rng(3)
    # samples of very different ranges, so that every shard's maxima differ from the merged ones
    x = (rng.standard_normal((23, 4, 16)) * rng.uniform(0.05, 4.0, (23, 1, 1))).astype(np.float32)
    return path, x


def _doc(table):
    return json.dumps(table.to_json(), sort_keys=True)


def test_shard_bounds_cover_the_samples():
    assert shard_bounds(23, 7) == [(0, 4), (4, 8), (8, 11), (11, 14), (14, 17), (17, 20), (20, 23)]
    assert shard_bounds(3, 7) == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize("method", ["auto", "percentile"])
def test_tables_bit_identical_for_1_2_7_shards(setup, method):
    path, x = setup
    one = calibrate(path, {"x": x}, method=method)
    for shards in (1, 2, 7):
        for chunk in (16, 3):
            assert _doc(calibrate_sharded(path, {"x": x}, shards=shards, method=method, chunk=chunk)) == _doc(one)
    assert _doc(calibrate_sharded(path, {"x": x}, shards=7, method=method, backend="local", jobs=2)) == _doc(one)


def test_thresholds_match_numpy(setup):
    path, x = setup
    table = calibrate_sharded(path, {"x": x}, shards=7, method="minmax")
    x64 = x.astype(np.float64)
    h = x64 @ tiny_weights().astype(np.float64)
    # float32 ONNX Runtime vs float64 numpy: equal to float32 rounding
    assert table.thresholds["x"] == float(np.abs(x).max())
    assert table.thresholds["h"] == pytest.approx(np.abs(h).max(), rel=1e-5)
    assert table.thresholds["y"] == pytest.approx(np.maximum(h, 0).max(), rel=1e-5)
    pct = calibrate_sharded(path, {"x": x}, shards=2, method="percentile", percentile=50.0)
    # the upper edge of the bin where the cumulative count of |x| reaches half of the values
    amax = float(np.abs(x).max())
    counts, _ = np.histogram(np.abs(x), bins=2048, range=(0.0, amax))
    i = int(np.searchsorted(np.cumsum(counts), counts.sum() * 0.5))
    assert pct.thresholds["x"] == (i + 1) * (amax / 2048)


def test_ray_shards_give_the_same_table(setup, ray_cluster):
    path, x = setup
    assert _doc(calibrate_sharded(path, {"x": x}, shards=7, method="auto", backend="ray")) == \
        _doc(calibrate(path, {"x": x}, method="auto"))


def test_bad_samples_are_named(setup):
    path, x = setup
    bad = x.copy()
    bad[9, 1, 2] = np.nan
    with pytest.raises(CalibrationError, match="input `x` sample 9 holds NaN"):
        calibrate_sharded(path, {"x": bad}, shards=7)
    with pytest.raises(CalibrationError, match="method `median`"):
        calibrate_sharded(path, {"x": x}, method="median")
