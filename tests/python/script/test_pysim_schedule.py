"""PySim's seeded scheduling (seed= / TILECORE_PYSIM_SEED) and race detector
(racecheck= / TILECORE_PYSIM_RACECHECK): one seed, one interleaving; a missing barrier
is reported with both lines whatever the seed; the kernel with its barrier is clean."""
import inspect

import numpy as np
import pytest

from tilecore import script as S
from tilecore.script.pysim.racecheck import DataRaceError


def _line(kernel, text):
    """The file line of the kernel source line containing ``text``."""
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(i for i, s in enumerate(lines) if text in s)



@pytest.fixture(autouse=True)
def _plain_pysim(monkeypatch):
    """These tests set the PySim modes themselves, whatever the environment says."""
    for v in ("TILECORE_PYSIM_SEED", "TILECORE_PYSIM_RACECHECK", "TILECORE_PYSIM_BATCH",
              "TILECORE_PYSIM_SINGLE_THREAD"):
        monkeypatch.delenv(v, raising=False)

@S.prim_func
def racy_sum(a: S.ptr("int32", "global"), out: S.ptr("int32", "global")):
    cid = S.get_local_id()
    partial = S.alloc_buffer((4,), "int32", scope="shared")
    partial[cid] = a[cid] * 2  # the write
    if cid == 0:
        out[0] = partial[0] + partial[1] + partial[2] + partial[3]  # the read, no barrier before it


@S.prim_func
def synced_sum(a: S.ptr("int32", "global"), out: S.ptr("int32", "global")):
    cid = S.get_local_id()
    partial = S.alloc_buffer((4,), "int32", scope="shared")
    partial[cid] = a[cid] * 2
    S.barrier()
    if cid == 0:
        out[0] = partial[0] + partial[1] + partial[2] + partial[3]


A = np.array([1, 2, 3, 4], np.int32)


def test_same_seed_same_interleaving():
    traces = {}
    for seed in (1, 1, 2, 3):
        out = np.zeros(1, np.int32)
        synced_sum(A, out, seed=seed)
        assert out[0] == 20
        traces.setdefault(seed, []).append(synced_sum.pysim_trace)
    assert traces[1][0] == traces[1][1]
    # the scheduling points: per core alloc_buffer, load, store, barrier; core 0: 4 loads and a store
    assert len(traces[1][0]) == 4 * 4 + 5
    assert sorted(traces[1][0]).count("core0 load") == 5 and traces[1][0].count("core3 barrier") == 1
    assert traces[1][0] != traces[2][0] or traces[1][0] != traces[3][0]


def test_seed_from_the_environment(monkeypatch):
    monkeypatch.setenv("TILECORE_PYSIM_SEED", "7")
    racy_sum(A, np.zeros(1, np.int32))
    first = racy_sum.pysim_trace
    racy_sum(A, np.zeros(1, np.int32))
    assert racy_sum.pysim_trace == first
    monkeypatch.setenv("TILECORE_PYSIM_SEED", "x")
    with pytest.raises(ValueError, match="TILECORE_PYSIM_SEED"):
        racy_sum(A, np.zeros(1, np.int32))


def test_a_racy_kernel_is_deterministic_per_seed():
    results = {}
    for seed in range(12):
        out = np.zeros(1, np.int32)
        racy_sum(A, out, seed=seed)
        results[seed] = int(out[0])
        out2 = np.zeros(1, np.int32)
        racy_sum(A, out2, seed=seed)
        assert out2[0] == out[0]
    assert 20 in results.values()


@S.prim_func(num_cores=2)
def waits_forever(a: S.ptr("int32", "global")):
    if S.get_local_id() == 0:
        S.barrier()
    a[0] = 1


def test_seeded_deadlock_is_reported():
    with pytest.raises(RuntimeError, match="deadlock"):
        waits_forever(np.zeros(1, np.int32), seed=0)


@pytest.mark.parametrize("seed", [None, 0, 1, 2, 3, 4, 5, 6, 7])
def test_missing_barrier_is_reported_with_both_lines(seed):
    with pytest.raises(DataRaceError) as e:
        racy_sum(A, np.zeros(1, np.int32), racecheck=True, seed=seed)
    text = str(e.value)
    assert f":{_line(racy_sum, '# the write')} " in text and f":{_line(racy_sum, '# the read')} " in text
    assert "(shared)" in text and "core 0" in text


@pytest.mark.parametrize("seed", [None, 0, 5])
def test_with_the_barrier_it_is_clean(seed):
    out = np.zeros(1, np.int32)
    synced_sum(A, out, racecheck=True, seed=seed)
    assert out[0] == 20


@S.prim_func(num_cores=1)
def early_read(a: S.ptr("float32", "global"), b: S.ptr("float32", "global")):
    t = S.alloc_buffer((64,), "float32")
    S.async_dma_copy(t, a, 64, event=2)
    S.tile_adds(t, t, 1.0)  # reads t before the copy is waited for
    S.wait_events(2)
    S.dma_copy(b, t, 64)


def test_access_to_an_inflight_dma_destination(monkeypatch):
    monkeypatch.setenv("TILECORE_PYSIM_RACECHECK", "1")
    with pytest.raises(DataRaceError) as e:
        early_read(np.ones(64, np.float32), np.zeros(64, np.float32))
    text = str(e.value)
    assert "in flight" in text and "event 2" in text
    assert f":{_line(early_read, 'reads t before')} " in text and f":{_line(early_read, 'async_dma_copy')} " in text


@S.prim_func(num_cores=1)
def overwrite_source(a: S.ptr("float32", "global"), b: S.ptr("float32", "global")):
    t = S.alloc_buffer((64,), "float32")
    S.dma_copy(t, a, 64)
    S.async_dma_copy(b, t, 64, event=1)
    S.tile_adds(t, t, 1.0)  # overwrites the copy's source
    S.wait_events(1)


@S.prim_func(num_cores=1)
def waits_first(a: S.ptr("float32", "global"), b: S.ptr("float32", "global")):
    t = S.alloc_buffer((64,), "float32")
    S.dma_copy(t, a, 64)
    S.async_dma_copy(b, t, 64, event=1)
    S.wait_events(1)
    S.tile_adds(t, t, 1.0)
    S.dma_copy(a, t, 64)


def test_writing_the_source_of_an_inflight_dma():
    with pytest.raises(DataRaceError, match="as source") as e:
        overwrite_source(np.ones(64, np.float32), np.zeros(64, np.float32), racecheck=True)
    assert f":{_line(overwrite_source, 'overwrites the copy')} " in str(e.value)
    a, b = np.ones(64, np.float32), np.zeros(64, np.float32)
    waits_first(a, b, racecheck=True)
    assert (b == 1).all() and (a == 2).all()


def test_bad_mode_arguments_are_named():
    with pytest.raises(TypeError, match="seed="):
        synced_sum(A, np.zeros(1, np.int32), seed="3")
    with pytest.raises(TypeError, match="seed="):
        synced_sum(A, np.zeros(1, np.int32), seed=1.5)
