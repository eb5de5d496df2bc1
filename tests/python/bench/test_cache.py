"""tests/python/bench/test_cache.py — entries by key; a corrupt or half-written entry is
detected, reported and never used."""
from tilecore.bench import Cache


def test_round_trip_and_artifact(tmp_path):
    c = Cache(tmp_path)
    key = "ab" * 32
    assert c.get(key) is None
    path = c.put(key, {"status": "pass", "cycles": 5}, b"\x01\x02executable", ".tcx")
    row, art = c.get(key)
    assert row == {"status": "pass", "cycles": 5} and art == path
    with open(art, "rb") as f:
        assert f.read() == b"\x01\x02executable"
    assert c.problems == []


def test_corrupt_entries_are_recomputed_not_used(tmp_path):
    c = Cache(tmp_path)
    k1, k2, k3 = "a1" * 32, "b2" * 32, "c3" * 32
    c.put(k1, {"status": "pass", "cycles": 5})
    c.put(k2, {"status": "pass"}, b"x" * 100, ".tcx")
    c.put(k3, {"status": "pass"})
    entry = tmp_path / k1[:2] / (k1 + ".json")
    entry.write_text(entry.read_text().replace('"cycles": 5', '"cycles": 6'))  # edited: checksum fails
    art = tmp_path / k2[:2] / (k2 + ".tcx")
    art.write_bytes(b"x" * 50)  # a half-written artifact
    half = tmp_path / k3[:2] / (k3 + ".json")
    half.write_bytes(half.read_bytes()[:20])  # a half-written entry
    assert c.get(k1) is None and c.get(k2) is None and c.get(k3) is None
    assert len(c.problems) == 3
    assert "checksum" in c.problems[0] and "artifact" in c.problems[1]
    assert not entry.exists() and not art.exists()  # removed, so the next run stores a sound one
