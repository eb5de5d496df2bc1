"""Truncated and corrupted .tcx files: every one is a ValueError naming the problem and the
byte, never a crash. The loads run in a subprocess so that a crash fails the test."""
import json
import os
import struct
import subprocess
import sys

import pytest

import tilecore

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
import tcx_edit  # noqa: E402

pytestmark = pytest.mark.skipif(tilecore.get_global_func("codegen.build_npu", allow_missing=True) is None,
                                reason="built without TILECORE_ENABLE_NPU")


# The child builds each case from the good file, loads it and reports the outcome; any crash
# kills it and fails the test. Cases: ["cut", n, reseal] keeps the first n bytes; ["flip", i, bit,
# reseal] flips one bit. `reseal` rewrites the header's payload size and checksum (flags 0: FNV-1a
# over the bytes, which the incremental prefix makes cheap) so the parser itself meets the damage
# instead of the checksum catching it.
CHILD = r"""
import json, struct, sys
import tilecore.runtime as R
from tilecore.error import TilecoreError
good = open(sys.argv[1], "rb").read()
cases = json.load(open(sys.argv[2]))
M = 0xFFFFFFFFFFFFFFFF
prefix = [0xcbf29ce484222325]  # FNV-1a state after payload[:k]
for b in good[32:]:
    prefix.append(((prefix[-1] ^ b) * 0x100000001b3) & M)
def seal(data, k):  # data[32:32+k] equals good's payload so far; flags 0: FNV-1a over the bytes
    h = prefix[k]
    for b in data[32 + k:]:
        h = ((h ^ b) * 0x100000001b3) & M
    return data[:12] + struct.pack("<IQQ", 0, len(data) - 32, h) + data[32:]
out = []
for c in cases:
    if c[0] == "cut":
        data = good[:c[1]]
        if c[2]:
            data = seal(data, c[1] - 32)
    else:
        b = bytearray(good)
        b[c[1]] ^= 1 << c[2]
        data = seal(bytes(b), c[1] - 32) if c[3] else bytes(b)
    try:
        R.load_executable_bytes(data)
        out.append("ok")
    except ValueError as e:
        out.append("ValueError: " + str(e).split("\nC++ backtrace")[0])
    except TilecoreError as e:
        out.append(type(e).__name__ + ": " + str(e).split("\nC++ backtrace")[0])
print(json.dumps(out))
"""


def load_all(tmp_path, good, cases):
    gp, cp = tmp_path / "good.tcx", tmp_path / "cases.json"
    gp.write_bytes(good)
    cp.write_text(json.dumps(cases))
    env = dict(os.environ, TILECORE_BACKTRACE="0")  # tens of thousands of errors: skip their backtraces
    r = subprocess.run([sys.executable, "-c", CHILD, str(gp), str(cp)], capture_output=True, text=True, timeout=600,
                       env=env)
    assert r.returncode == 0, f"the loader crashed (exit {r.returncode}): {r.stderr[-2000:]}"
    return json.loads(r.stdout)


def code_end(good):
    """File offset where the module blobs end and the plan begins."""
    pos = 32
    n = struct.unpack_from("<I", good, pos)[0]
    pos += 4 + n  # precision
    nm = struct.unpack_from("<I", good, pos)[0]
    pos += 4
    for _ in range(nm):
        pos += 4 + struct.unpack_from("<I", good, pos)[0]
    return pos


@pytest.fixture(scope="module")
def good():
    import exe_pipeline as P

    return P.build().to_bytes()


def test_good_file_loads(tmp_path, good):
    assert load_all(tmp_path, good, [["cut", len(good), False]]) == ["ok"]


def test_every_truncation_is_named(tmp_path, good):
    res = load_all(tmp_path, good, [["cut", n, False] for n in range(len(good))])
    for n, r in enumerate(res):
        assert r.startswith("ValueError: "), (n, r)
        if n < 8:
            assert "magic" in r
        elif n < 32:
            assert f"byte {n}: truncated header" in r
        else:
            assert "byte 16: the header announces a payload of" in r and "truncated" in r


def test_truncated_payloads_resealed(tmp_path, good):
    """With a matching header the parser itself meets short payloads: every cut in the buffer
    table (just after the code) and in the I/O and step records (the last bytes), a sample of
    cuts inside the code blobs and the constants' data."""
    start = code_end(good)
    cuts = sorted(set(range(32, len(good), 97)) | set(range(start, start + 512)) | set(range(len(good) - 512, len(good))))
    res = load_all(tmp_path, good, [["cut", n, True] for n in cuts])
    for n, r in zip(cuts, res):
        assert r.startswith("ValueError: executable") and "byte" in r, (n, r)


def test_bit_flips_fail_the_checksum(tmp_path, good):
    import random

    rnd = random.Random(5)
    where = [rnd.randrange(24, len(good)) for _ in range(300)]  # the checksum field itself too
    res = load_all(tmp_path, good, [["flip", i, rnd.randrange(8), False] for i in where])
    for i, r in zip(where, res):
        assert r.startswith("ValueError: executable, byte 24: checksum mismatch"), (i, r)


def test_resealed_bit_flips_never_crash(tmp_path, good):
    """Corruption of the plan the checksum cannot see (a forged header): an error or a valid
    executable, never a crash. (Inside a `c` module's native library only the checksum protects:
    a damaged library that passes it would reach the system's dynamic loader.)"""
    import random

    rnd = random.Random(9)
    start = code_end(good)
    cases = [["flip", rnd.randrange(start, len(good)), rnd.randrange(8), True] for _ in range(400)]
    res = load_all(tmp_path, good, cases)
    errors = [r for r in res if r != "ok"]
    assert all(r.startswith("ValueError: ") for r in errors), errors[:5]
    assert len(errors) >= 5  # flips in the constants' data are valid files; flips in the fields are not


def test_the_header_carries_the_word_checksum(tmp_path, good):
    version, flags, size, checksum = struct.unpack_from("<IIQQ", good, 8)
    assert (flags, size) == (1, len(good) - 32)
    assert checksum == tcx_edit.word_checksum(good[32:])
    # the loader computes the same sum for payloads of every tail length (the bytes after the
    # last whole 32): cut payloads sealed by the reference pass the checksum and reach the parser
    for cut in (1, 7, 8, 9, 31, 32):
        body = good[32:len(good) - cut]
        sealed = good[:16] + struct.pack("<QQ", len(body), tcx_edit.word_checksum(body)) + body
        res = load_all(tmp_path, sealed, [["cut", len(sealed), False]])[0]
        assert res.startswith("ValueError: executable") and "checksum" not in res, (cut, res)


def test_a_file_with_the_byte_checksum_still_loads(tmp_path, good):
    """A file written before the word checksum (flags 0, FNV-1a over the payload's bytes)."""
    old = good[:12] + struct.pack("<IQQ", 0, len(good) - 32, tcx_edit.fnv1a64(good[32:])) + good[32:]
    flags_only = good[:12] + struct.pack("<I", 0) + good[16:]  # (the word checksum read as FNV-1a)
    res = load_all(tmp_path, old, [["cut", len(old), False]]) + load_all(tmp_path, flags_only,
                                                                           [["cut", len(flags_only), False]])
    assert res[0] == "ok"
    assert res[1].startswith("ValueError: executable, byte 24: checksum mismatch"), res[1]


def test_header_fields(tmp_path, good):
    bad_version = good[:8] + struct.pack("<I", 9) + good[12:]
    bad_flags = good[:12] + struct.pack("<I", 3) + good[16:]
    padded = good + b"\0"
    res = []
    for blob in [bad_version, bad_flags, padded, b"TCMODULE" + good[8:]]:
        res += load_all(tmp_path, blob, [["cut", len(blob), False]])
    assert "byte 8: unsupported version 9 (this tilecore reads versions 1 to 3)" in res[0]
    assert "byte 12: unknown flags 3" in res[1]
    assert "byte 16: the header announces a payload of" in res[2]
    assert "the magic \"TCEXEC\" is missing" in res[3]
