"""Shape buckets from the command line (docs/compiler.md, "Shape buckets"; docs/executable.md,
"Buckets"): `tilecore compile --input-shape x:{...}` / `--dim` / `--batch`, `run` and `profile`
naming the bucket a run took, `tdb` and `check` on any bucket (`--bucket`), against ONNX
Runtime; the flags' errors."""
import json

import numpy as np
import onnx
import pytest

from tilecore import cli
from tilecore.cli.compile import parse_batch, parse_dim, parse_input_shape

from test_buckets import CLASSES, ort_run, small_cnn

ort = pytest.importorskip("onnxruntime")


def test_flags_parse():
    assert parse_input_shape("x:{1,2,4},3,8,8") == ("x", [(1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8)])
    assert parse_input_shape("ids:1,{32,64}") == ("ids", [(1, 32), (1, 64)])
    assert parse_input_shape("x:1,3,8,8") == ("x", (1, 3, 8, 8))
    for bad in ("x:{1,2},{3,4}", "x:{}", "x:{1,a},3", "x:1,,2"):
        with pytest.raises(ValueError, match="--input-shape"):
            parse_input_shape(bad)
    assert parse_dim("N=1,2,4") == ("N", [1, 2, 4])
    for bad in ("N", "N=", "N=0,1", "=1"):
        with pytest.raises(ValueError, match="--dim"):
            parse_dim(bad)
    assert parse_batch("N") == "N" and parse_batch("x:0,m:1") == {"x": 0, "m": 1}
    with pytest.raises(ValueError, match="--batch"):
        parse_batch("x:first")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("buckets_cli")
    model = small_cnn()
    onnx.save(model, d / "m.onnx")
    rng = np.random.default_rng(8)
    xs = {n: rng.standard_normal((n, 3, 8, 8)).astype(np.float32) for n in (1, 2, 3, 4)}
    for n, x in xs.items():
        np.savez(d / f"in{n}.npz", x=x)
    return d, model, xs


@pytest.mark.npu
def test_compile_run_and_profile(files, capsys):
    d, model, xs = files
    rc = cli.main(["compile", str(d / "m.onnx"), "-o", str(d / "m.tcx"), "--input-shape", "x:{1,2,4},3,8,8",
                   "--batch", "x:0", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "3 buckets, constants stored once" in out
    assert "bucket 2: x[4, 3, 8, 8]" in out and "batch axes: x:0, y:0" in out
    for n, bucket, padded in [(2, 1, False), (3, 2, True)]:
        rc = cli.main(["run", str(d / "m.tcx"), "--inputs", str(d / f"in{n}.npz"), "-o", str(d / f"out{n}.npz"),
                       "--stats", str(d / f"st{n}.json"), "--quiet"])
        out = capsys.readouterr().out
        assert rc == 0
        assert f"bucket {bucket} of 3 (x: float32[{4 if padded else n}, 3, 8, 8])" in out
        assert ("the batch of 3 padded to it and the outputs cropped" in out) == padded
        y = np.load(d / f"out{n}.npz")["y"]
        assert y.shape == (n, CLASSES)
        np.testing.assert_allclose(y, ort_run(model, {"x": xs[n]}), rtol=1e-4, atol=1e-4)
        st = json.loads((d / f"st{n}.json").read_text())
        assert st["bucket"]["index"] == bucket and ("padded_from" in st["bucket"]) == padded
    rc = cli.main(["profile", str(d / "m.tcx"), "--inputs", str(d / "in4.npz"), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("bucket 2 of 3 (x: float32[4, 3, 8, 8])")
    # a batch no bucket holds: the buckets listed
    np.savez(d / "in5.npz", x=np.zeros((5, 3, 8, 8), np.float32))
    rc = cli.main(["run", str(d / "m.tcx"), "--inputs", str(d / "in5.npz"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and "no bucket of the executable takes the inputs x: [5, 3, 8, 8]" in err
    assert "bucket 2: x: float32[4, 3, 8, 8]" in err


@pytest.mark.npu
def test_dims_and_their_errors(files, capsys):
    d, model, xs = files
    rc = cli.main(["compile", str(d / "m.onnx"), "-o", str(d / "d.tcx"), "--dim", "N=1,2", "--quiet"])
    assert rc == 0 and "2 buckets" in capsys.readouterr().out
    rc = cli.main(["run", str(d / "d.tcx"), "--inputs", str(d / "in1.npz"), "-o", str(d / "d1.npz"), "--quiet"])
    assert rc == 0
    np.testing.assert_allclose(np.load(d / "d1.npz")["y"], ort_run(model, {"x": xs[1]}), rtol=1e-4, atol=1e-4)
    capsys.readouterr()
    rc = cli.main(["compile", str(d / "m.onnx"), "-o", str(d / "e.tcx"), "--dim", "M=1,2", "--quiet"])
    assert rc == 1 and "dims: `M` is no symbolic dimension of the model's inputs (N)" in capsys.readouterr().err
    rc = cli.main(["compile", str(d / "m.onnx"), "-o", str(d / "e.tcx"), "--dim", "N=0", "--quiet"])
    assert rc == 1 and "--dim `N=0`" in capsys.readouterr().err


@pytest.mark.npu
def test_tdb_and_check_on_a_bucket(files, capsys):
    d, model, xs = files
    assert cli.main(["compile", str(d / "m.onnx"), "-o", str(d / "t.tcx"), "--dim", "N=1,2,4", "--quiet"]) == 0
    capsys.readouterr()
    # the bucket the inputs take, without --bucket
    assert cli.main(["tdb", str(d / "t.tcx"), "--inputs", str(d / "in2.npz"), "--do", "start"]) == 0
    assert "t.tcx [bucket 1]" in capsys.readouterr().out
    assert cli.main(["tdb", str(d / "t.tcx"), "--inputs", str(d / "in4.npz"), "--bucket", "2", "--do",
                     "start"]) == 0
    assert "t.tcx [bucket 2]" in capsys.readouterr().out
    assert cli.main(["tdb", str(d / "t.tcx"), "--inputs", str(d / "in4.npz"), "--bucket", "7", "--do", "start"]) == 1
    assert "--bucket 7, and its buckets are 0 to 2" in capsys.readouterr().err
    # check against ONNX Runtime's tensors at batch 4, on bucket 2
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.savez(d / "ref4.npz", y=sess.run(None, {"x": xs[4]})[0])
    rc = cli.main(["check", str(d / "t.tcx"), "--inputs", str(d / "in4.npz"), "--ref_data", str(d / "ref4.npz"),
                   "--bucket", "2"])
    out = capsys.readouterr().out
    assert rc == 0 and "0 failed" in out
