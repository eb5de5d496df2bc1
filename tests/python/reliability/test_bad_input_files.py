"""tilecore.runtime.files: the checks every file a command reads or writes goes through.
A non-regular file, an oversized one and every kind of damaged file is a ValueError naming
the file; an output that is an input is refused; an interrupted write leaves the old file."""
import io
import os
import zipfile

import numpy as np
import pytest

from tilecore.runtime import files


def test_npz_round_trip(tmp_path):
    p = tmp_path / "a.npz"
    np.savez(p, x=np.arange(6, dtype=np.float32).reshape(2, 3), y=np.int8(3))
    got = files.load_npz(p)
    assert list(got) == ["x", "y"]
    np.testing.assert_array_equal(got["x"], np.arange(6, dtype=np.float32).reshape(2, 3))
    assert got["y"] == 3 and got["y"].shape == ()


@pytest.mark.parametrize("path", ["/dev/zero", "DIR", "FIFO"])
def test_non_regular_file_is_refused_without_reading(tmp_path, path):
    # F17, F18: /dev/zero, a directory and a FIFO (which would block an open without O_NONBLOCK)
    if path == "DIR":
        path = str(tmp_path)
    elif path == "FIFO":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    for load in (files.load_npz, files.load_json, files.read_text):
        with pytest.raises(ValueError, match=f"^{path}: not a regular file$"):
            load(path)


def test_size_cap(tmp_path):
    p = tmp_path / "big.json"
    p.write_text("[" + "0," * 100 + "0]")
    with pytest.raises(ValueError, match="big.json: 203 bytes, more than"):
        files.load_json(p, limit=100)


def _npy_member(shape, payload=b""):
    b = io.BytesIO()
    np.lib.format.write_array_header_1_0(b, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return b.getvalue() + payload


@pytest.mark.parametrize("content, words", [
    (b"hello", "not an .npz archive"),                             # text (numpy says "pickled")
    (b"PK\x03\x04garbage", "not a valid .npz archive"),           # zipfile.BadZipFile
    ("NPY", "a single .npy array"),
    ("OBJECT", "Python objects"),
    ("NOT_NPY", "member `notes.txt` is not a .npy array"),
    ("HUGE_HEADER", "claims shape (1000000000000,)"),
    ("TRUNCATED", "not a valid .npz archive"),
])
def test_damaged_npz_names_the_file(tmp_path, content, words):
    # F17 (--inputs not a zip), F18 (--calib a text file "holds pickled data")
    p = tmp_path / "bad.npz"
    if content == "NPY":
        np.save(tmp_path / "a.npy", np.ones(3))
        os.replace(tmp_path / "a.npy", p)
    elif content == "OBJECT":
        np.savez(p, x=np.array([{}, None], dtype=object))
    elif isinstance(content, str):
        with zipfile.ZipFile(p, "w") as z:
            if content == "NOT_NPY":
                z.writestr("notes.txt", "hello")
            elif content == "HUGE_HEADER":
                z.writestr("x.npy", _npy_member((10**12,), b"1234"))
            else:
                z.writestr("x.npy", _npy_member((100,), b"1234"))
    else:
        p.write_bytes(content)
    with pytest.raises(ValueError) as e:
        files.load_npz(p)
    assert str(e.value).startswith(f"{p}: ") and words in str(e.value)


def test_text_and_json_errors_name_the_file(tmp_path):
    # F18: a non-UTF-8 qtable blamed the model
    p = tmp_path / "q.txt"
    p.write_bytes(b"\xff\xfe mm int8")
    with pytest.raises(ValueError, match=r"q.txt: not UTF-8 text \(byte 0xff at offset 0\)"):
        files.read_text(p)
    p = tmp_path / "bad.json"
    p.write_text("{")
    with pytest.raises(ValueError, match="bad.json: not valid JSON: .*line 1 column 2"):
        files.load_json(p)


def test_missing_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.npz: No such file"):
        files.load_npz(tmp_path / "nope.npz")


def test_output_that_is_an_input_is_refused(tmp_path):
    # F11, F12, F13: the same file through another spelling, and through a symlink
    model = tmp_path / "m.onnx"
    model.write_bytes(b"model")
    os.symlink(model, tmp_path / "link.onnx")
    for out in (model, tmp_path / "." / "m.onnx", tmp_path / "link.onnx"):
        with pytest.raises(ValueError, match=r"the output would overwrite the input the model$"):
            files.check_outputs({"-o": out}, {"the model": model, "--calib": None})
    files.check_outputs({"-o": tmp_path / "new.tcx", "--report": None}, {"the model": model})
    with pytest.raises(ValueError, match="-o and --stats would write the same file"):
        files.check_outputs({"-o": tmp_path / "s.json", "--stats": tmp_path / "s.json"}, {})


def test_new_directory_rule(tmp_path):
    files.check_new_directory(tmp_path / "new")
    files.check_new_directory(tmp_path)  # empty
    (tmp_path / "node.json").write_text("my notes")
    with pytest.raises(ValueError, match="not empty"):
        files.check_new_directory(tmp_path)
    with pytest.raises(ValueError, match="not a directory"):
        files.check_new_directory(tmp_path / "node.json")


def test_interrupted_write_leaves_the_old_file(tmp_path):
    p = tmp_path / "out.json"
    p.write_text("old")
    with pytest.raises(RuntimeError), files.atomic_write(p) as f:
        f.write("half of the new")
        raise RuntimeError("interrupted")
    assert p.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.json"]  # no temporary file left behind
    files.write_bytes(p, "new")
    assert p.read_text() == "new"
    files.save_npz(tmp_path / "out", {"z": np.zeros(2)})  # exactly the path: no .npz appended
    np.testing.assert_array_equal(files.load_npz(tmp_path / "out")["z"], np.zeros(2))


def test_atomic_path_for_a_writer_that_takes_a_path(tmp_path):
    p = tmp_path / "trace.json"
    p.write_text("old")
    with files.atomic_path(p) as tmp:
        assert os.path.dirname(tmp) == str(tmp_path) and tmp != str(p)
        with open(tmp, "w") as f:
            f.write("new")
        assert p.read_text() == "old"
    assert p.read_text() == "new" and os.listdir(tmp_path) == ["trace.json"]
    with files.atomic_path("/dev/null") as tmp:  # a device is written in place, never replaced
        assert tmp == "/dev/null"
    with pytest.raises(IsADirectoryError, match=f"{tmp_path}: is a directory"):
        files.write_bytes(tmp_path, b"x")


def test_a_file_is_hashed_and_searched_in_pieces_as_if_whole(tmp_path):
    # a needle across each piece boundary, at the very start and at the very end
    import hashlib

    rng = np.random.default_rng(7)
    data = bytearray(rng.integers(0, 256, 3 * 4096 + 17, dtype=np.uint8).tobytes())
    needle = b"location"
    data[4096 - 3:4096 - 3 + len(needle)] = needle
    path = tmp_path / "m.onnx"
    path.write_bytes(bytes(data))
    pieces = list(files.chunks(path, overlap=len(needle) - 1, size=4096))
    assert len(pieces) == 4 and any(needle in p for p in pieces) and needle not in pieces[0]
    assert files.file_contains(path, needle)
    assert files.file_sha256(path) == hashlib.sha256(bytes(data)).hexdigest()
    path.write_bytes(bytes(data[:100]))
    assert not files.file_contains(path, needle)
    for at in (0, 100 - len(needle)):
        d = bytearray(data[:100])
        d[at:at + len(needle)] = needle
        path.write_bytes(bytes(d))
        assert files.file_contains(path, needle)
    path.write_bytes(b"")
    assert not files.file_contains(path, needle)
    assert files.file_sha256(path) == hashlib.sha256(b"").hexdigest()
    assert files.file_sha256_and_contains(path, needle) == (hashlib.sha256(b"").hexdigest(), False)
    # hashed and searched in one read: a needle at each place across a piece boundary
    for at in range(4096 - len(needle), 4096 + 1):
        d = bytearray(data)
        d[4096 - 3:4096 - 3 + len(needle)] = b"x" * len(needle)
        d[at:at + len(needle)] = needle
        path.write_bytes(bytes(d))
        want = (hashlib.sha256(bytes(d)).hexdigest(), True)
        assert files.file_sha256_and_contains(path, needle, size=4096) == want, at
    path.write_bytes(bytes(data[:4096 - 3]) + b"x" * 64)
    assert not files.file_sha256_and_contains(path, needle, size=4096)[1]
