"""Executables with buckets at the runtime's level (docs/executable.md, "Buckets"):
``runtime.join_buckets`` of executables built by hand (y = x + w, one npu kernel per row
count), each bucket's run and a padded smaller batch against numpy, the ``buckets``,
``batch_axes`` and ``bucket(i)`` views, the version 3 file and its round trip, the constants
held once, and the errors of joining and of shapes no bucket takes."""
import json

import numpy as np
import pytest

import tilecore
from tilecore import ir, runtime
from tilecore.runtime import ExecutableBuilder

pytestmark = pytest.mark.npu

COLS = 8
W = np.array([0.5, -1.0, 2.0, -4.0, 8.0, 0.25, -0.125, 3.0], np.float32)
RNG = np.random.default_rng(7)


def add_rows_kernel(rows):
    """y[r, j] = x[r, j] + w[j] for ``rows`` rows of COLS float32."""
    ib = ir.IRBuilder("add_rows")
    x = ib.buffer_param("x", (rows * COLS,), "float32")
    w = ib.buffer_param("w", (COLS,), "float32")
    y = ib.buffer_param("y", (rows * COLS,), "float32")
    with ib.for_range(0, rows, name="r") as r:
        with ib.for_range(0, COLS, name="j") as j:
            y[r * COLS + j] = x[r * COLS + j] + w[j]
    return ib.get()


_MODULES = {}


def module(rows):
    if rows not in _MODULES:
        _MODULES[rows] = tilecore.build(add_rows_kernel(rows), target="npu -cores=1")
    return _MODULES[rows]


def program(rows, w=W, big=None, names=("x", "y"), dtype="float32"):
    """x: [rows, COLS] -> y = x + w; ``big`` an extra constant (unused by the step) that makes
    the constants' share of the file large."""
    b = ExecutableBuilder(precision="f32")
    x = b.add_buffer(names[0], (rows, COLS), dtype)
    wb = b.add_constant("w", np.asarray(w, np.float32))
    if big is not None:
        b.add_constant("big", big)
    y = b.add_buffer(names[1], (rows, COLS), "float32")
    b.add_input(names[0], x)
    b.add_output(names[1], y)
    b.add_step("npu", module(rows), "add_rows", [x, wb, y], node="add", op_type="Add")
    return b.build()


@pytest.fixture(scope="module")
def parts():
    return [program(r) for r in (1, 2, 4)]


@pytest.fixture(scope="module")
def exact(parts):
    return runtime.join_buckets(parts)


@pytest.fixture(scope="module")
def batched(parts):
    return runtime.join_buckets(parts, {"x": 0, "y": 0})


def x_rows(n):
    return RNG.standard_normal((n, COLS)).astype(np.float32)


def test_each_bucket_runs_its_shape(exact):
    for index, rows in [(1, 2), (0, 1), (2, 4)]:
        x = x_rows(rows)
        y = exact.run({"x": x})["y"]
        np.testing.assert_array_equal(y, x + W)  # f32 adds: exact
        assert exact.stats()["bucket"] == {"index": index, "buckets": 3, "inputs": f"x: float32[{rows}, {COLS}]"}


def test_views_of_the_buckets(exact, batched):
    assert exact.buckets == [{"inputs": {"x": [r, COLS]}, "outputs": {"y": [r, COLS]},
                              "arena_size": b["arena_size"], "steps": 1} for r, b in zip((1, 2, 4), exact.buckets)]
    # x, w (32 B) and y one after another at 64-byte boundaries: the arena ends with y
    assert [b["arena_size"] for b in exact.buckets] == [128 + 32, 128 + 64, 192 + 128]
    assert exact.batch_axes == {}
    assert batched.batch_axes == {"x": 0, "y": 0}
    # an executable without buckets is one bucket
    one = program(2)
    assert len(one.buckets) == 1 and one.buckets[0]["inputs"] == {"x": [2, COLS]} and one.batch_axes == {}
    # bucket 0 is what the plain views show
    assert exact.inputs == {"x": ((1, COLS), "float32")}


def test_bucket_i_is_a_plain_executable(exact):
    b = exact.bucket(2)
    assert len(b.buckets) == 1 and b.batch_axes == {}
    assert b.inputs == {"x": ((4, COLS), "float32")} and b.outputs == {"y": ((4, COLS), "float32")}
    x = x_rows(4)
    np.testing.assert_array_equal(b.run({"x": x})["y"], x + W)
    assert "bucket" not in b.stats()
    with pytest.raises(ValueError, match=r"input `x` is float32\[2, 8\]; the executable expects x: float32\[4, 8\]"):
        b.run({"x": x_rows(2)})
    for bad in (3, -1):
        with pytest.raises(IndexError, match=rf"bucket {bad}: the executable has 3 \(0 to 2\)"):
            exact.bucket(bad)
    # saved alone it is a version 2 file of one bucket
    data = b.to_bytes()
    assert data[8:12] == (2).to_bytes(4, "little")
    again = runtime.load_executable_bytes(data)
    assert len(again.buckets) == 1
    np.testing.assert_array_equal(again.run({"x": x})["y"], x + W)


def test_smaller_batch_runs_padded_in_the_next_larger_bucket(batched):
    for rows, index in [(3, 2), (1, 0), (2, 1)]:
        x = x_rows(rows)
        y = batched.run({"x": x})["y"]
        assert y.shape == (rows, COLS)
        np.testing.assert_array_equal(y, x + W)
        st = batched.stats()["bucket"]
        assert st["index"] == index
        assert st.get("padded_from") == (3 if rows == 3 else None)
    # the padded rows are zeros: the step's x, seen after the step
    seen = []
    x = x_rows(3)
    batched.run({"x": x}, observe=lambda step, args: seen.append(args[0].numpy().copy()))
    np.testing.assert_array_equal(seen[0], np.concatenate([x, np.zeros((1, COLS), np.float32)]))
    # the padded run's rows are the exact bucket's rows
    full = batched.run({"x": x})["y"]
    for r in range(3):
        np.testing.assert_array_equal(batched.run({"x": x[r:r + 1]})["y"], full[r:r + 1])


def add_cols_kernel(rows):
    """y[j, r] = x[j, r] + w[j] for COLS x ``rows`` float32: the batch is axis 1."""
    ib = ir.IRBuilder("add_cols")
    x = ib.buffer_param("x", (COLS * rows,), "float32")
    w = ib.buffer_param("w", (COLS,), "float32")
    y = ib.buffer_param("y", (COLS * rows,), "float32")
    with ib.for_range(0, COLS, name="j") as j:
        with ib.for_range(0, rows, name="r") as r:
            y[j * rows + r] = x[j * rows + r] + w[j]
    return ib.get()


def test_batch_on_an_inner_axis_pads_and_crops_every_row():
    parts = []
    for rows in (2, 4):
        b = ExecutableBuilder(precision="f32")
        x = b.add_buffer("x", (COLS, rows), "float32")
        wb = b.add_constant("w", W)
        y = b.add_buffer("y", (COLS, rows), "float32")
        b.add_input("x", x)
        b.add_output("y", y)
        m = tilecore.build(add_cols_kernel(rows), target="npu -cores=1")
        b.add_step("npu", m, "add_cols", [x, wb, y], node="add", op_type="Add")
        parts.append(b.build())
    exe = runtime.join_buckets(parts, {"x": 1, "y": 1})
    x = RNG.standard_normal((COLS, 3)).astype(np.float32)
    seen = []
    y = exe.run({"x": x}, observe=lambda step, args: seen.append(args[0].numpy().copy()))["y"]
    assert y.shape == (COLS, 3)
    np.testing.assert_array_equal(y, x + W[:, None])
    np.testing.assert_array_equal(seen[0], np.concatenate([x, np.zeros((COLS, 1), np.float32)], axis=1))
    assert exe.stats()["bucket"] == {"index": 1, "buckets": 2, "inputs": f"x: float32[{COLS}, 4]", "padded_from": 3}
    np.testing.assert_array_equal(exe.run({"x": x[:, :1]})["y"], x[:, :1] + W[:, None])
    assert exe.stats()["bucket"]["index"] == 0 and exe.stats()["bucket"]["padded_from"] == 1


BUCKET_LIST = (r"its buckets:\n  bucket 0: x: float32\[1, 8\]\n  bucket 1: x: float32\[2, 8\]\n"
               r"  bucket 2: x: float32\[4, 8\]")


def test_shapes_no_bucket_takes_list_the_buckets(exact, batched):
    with pytest.raises(ValueError, match=r"no bucket of the executable takes the inputs x: \[3, 8\] \(it runs exact "
                                         r"shapes only\); " + BUCKET_LIST):
        exact.run({"x": x_rows(3)})
    for shape in [(5, COLS), (3, COLS + 1), (0, COLS)]:
        with pytest.raises(ValueError, match=r"\(a smaller batch runs in a larger bucket; every other dimension must "
                                             r"be a bucket's\); " + BUCKET_LIST):
            batched.run({"x": np.zeros(shape, np.float32)})
    with pytest.raises(ValueError, match="unknown input `z`"):
        exact.run({"z": x_rows(1)})
    with pytest.raises(ValueError, match="missing input `x`"):
        exact.run({})


def test_file_round_trip(tmp_path, batched):
    data = batched.to_bytes()
    assert data[:8] == b"TCEXEC\0\0" and data[8:12] == (3).to_bytes(4, "little")
    batched.save(tmp_path / "b.tcx")
    assert (tmp_path / "b.tcx").read_bytes() == data
    for again in (runtime.load_executable(tmp_path / "b.tcx"), runtime.load_executable_bytes(data)):
        assert again.buckets == batched.buckets and again.batch_axes == {"x": 0, "y": 0}
        for rows in (1, 2, 3, 4):
            x = x_rows(rows)
            np.testing.assert_array_equal(again.run({"x": x})["y"], x + W)
        assert again.to_bytes() == data
        # each bucket of the loaded file is a version 2 file of its own
        for i in range(3):
            alone = runtime.load_executable_bytes(again.bucket(i).to_bytes())
            x = x_rows(alone.buckets[0]["inputs"]["x"][0])
            np.testing.assert_array_equal(alone.run({"x": x})["y"], x + W)


def test_one_bucket_is_a_version_2_file(parts):
    one = runtime.join_buckets(parts[1:2])
    assert len(one.buckets) == 1
    assert one.to_bytes() == parts[1].to_bytes()
    assert one.to_bytes()[8:12] == (2).to_bytes(4, "little")


def test_joined_buckets_flatten(parts):
    two = runtime.join_buckets(parts[:2])
    three = runtime.join_buckets([two, parts[2]], {"x": 0, "y": 0})
    assert [b["inputs"]["x"][0] for b in three.buckets] == [1, 2, 4]
    x = x_rows(3)
    np.testing.assert_array_equal(three.run({"x": x})["y"], x + W)


def test_constants_are_stored_once():
    """A 64 KiB constant of random bytes (deflate cannot shrink it) in each of three buckets:
    the joined file holds it once."""
    big = RNG.standard_normal(16384).astype(np.float32)
    singles = [program(r, big=big) for r in (1, 2, 4)]
    joined = runtime.join_buckets(singles)
    size = len(joined.to_bytes())
    assert big.nbytes < size < big.nbytes + 16 * 1024, size
    assert size < 0.5 * sum(len(s.to_bytes()) for s in singles)
    # a different constant in one bucket is stored too
    other = runtime.join_buckets([singles[0], program(2, big=big[::-1].copy()), singles[2]])
    assert len(other.to_bytes()) > size + big.nbytes - 1024
    x = x_rows(2)
    np.testing.assert_array_equal(other.run({"x": x})["y"], x + W)


def test_join_errors_name_the_bucket(parts):
    with pytest.raises(ValueError, match="invalid buckets: none"):
        runtime.join_buckets([])
    with pytest.raises(ValueError, match=r"bucket 1: inputs 0 is u: float32\[2, 8\], in bucket 0 x: float32\[1, 8\]"):
        runtime.join_buckets([parts[0], program(2, names=("u", "y"))])
    with pytest.raises(ValueError, match=r"bucket 1: outputs 0 is v: float32\[2, 8\], in bucket 0 y: float32\[1, 8\]"):
        runtime.join_buckets([parts[0], program(2, names=("x", "v"))])
    with pytest.raises(ValueError, match=r"bucket 2 repeats the input shapes x: float32\[1, 8\]"):
        runtime.join_buckets([parts[0], parts[1], parts[0]])
    with pytest.raises(ValueError, match="`y` has no batch axis"):
        runtime.join_buckets(parts, {"x": 0})
    with pytest.raises(ValueError, match="`x`: batch axis 2 of rank 2"):
        runtime.join_buckets(parts, {"x": 2, "y": 0})
    with pytest.raises(ValueError, match="batch axis of `q`, which is no input or output"):
        runtime.join_buckets(parts, {"x": 0, "y": 0, "q": 0})
    # a batch axis along which the buckets' sizes disagree between input and output: axis 1 of
    # y is COLS in every bucket, axis 0 of x the rows
    with pytest.raises(ValueError, match=r"bucket 0: `y` has batch 8, its first input 1"):
        runtime.join_buckets(parts, {"x": 0, "y": 1})


def test_bucket_info_is_json(exact):
    info = json.loads(tilecore.get_global_func("runtime.ExecutableBucketInfo")(exact))
    assert [b["inputs"]["x"] for b in info["buckets"]] == [[1, COLS], [2, COLS], [4, COLS]]
    assert info["batch_axes"] == {}
