"""Bad input to `tilecore compile`, `compare` and `run`: output paths that are input files,
calibration and input files that are not what they claim, bad flag values. Each is one
line on stderr naming the file, input or flag, status 1 (2 for argparse's usage errors),
before any slow work and without touching a file -- never a traceback or a lost model."""
import os
import subprocess
import sys

import numpy as np
import pytest

from tilecore import cli

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402


@pytest.fixture()
def work(tmp_path, monkeypatch):
    """A folder with m.onnx (x[4,16] -> MatMul -> Add -> y[4,8]), m.tcx, in.npz and calib.npz."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                           helper.make_node("Add", ["h", "b"], ["y"], name="add")], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [4, 8])],
                          [helper.make_tensor("w", TP.FLOAT, w.shape, w.ravel()),
                           helper.make_tensor("b", TP.FLOAT, b.shape, b)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    monkeypatch.chdir(tmp_path)
    onnx.save(m, "m.onnx")
    import tilecore

    tilecore.compile(m).save("m.tcx")
    np.savez("in.npz", x=rng.standard_normal((4, 16)).astype(np.float32))
    np.savez("calib.npz", x=rng.standard_normal((8, 4, 16)).astype(np.float32))
    return tmp_path


def _main(capsys, *argv):
    """(status, stdout, stderr) of `tilecore ARGV` run in this process (argparse's exit 2 included)."""
    try:
        rc = cli.main(list(argv))
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return rc, out, err


def _unchanged(*paths):
    return {p: open(p, "rb").read() for p in paths}


@pytest.mark.parametrize("argv, path, what", [
    (["compile", "m.onnx", "-o", "m.onnx"], "m.onnx", "model"),                                    # F11
    (["compile", "m.onnx", "-o", "./m.onnx"], "./m.onnx", "model"),
    (["compile", "m.onnx", "-o", "o.tcx", "--precision", "int8", "--calib", "calib.npz",
      "--calib-table", "m.onnx"], "m.onnx", "model"),                                             # F12
    (["compile", "m.onnx", "-o", "o.tcx", "--precision", "int8", "--calib", "calib.npz",
      "--calib-table", "calib.npz"], "calib.npz", "--calib"),
    (["compile", "m.onnx", "-o", "calib.npz", "--precision", "int8", "--calib", "calib.npz"], "calib.npz", "--calib"),
    (["compile", "m.onnx", "-o", "in.npz", "--verify", "in.npz"], "in.npz", "--verify"),
    (["compare", "m.onnx", "--inputs", "in.npz", "--report", "m.onnx"], "m.onnx", "model"),       # F13
    (["compare", "m.onnx", "--inputs", "in.npz", "--report", "in.npz"], "in.npz", "--inputs"),
    (["run", "m.tcx", "--inputs", "in.npz", "-o", "in.npz"], "in.npz", "--inputs"),
    (["run", "m.tcx", "--inputs", "in.npz", "-o", "in"], "in.npz", "--inputs"),  # np.savez's .npz
    (["run", "m.tcx", "--inputs", "in.npz", "--stats", "m.tcx"], "m.tcx", "executable"),
    (["run", "m.tcx", "--inputs", "in.npz", "--trace", "in.npz"], "in.npz", "--inputs"),
])
def test_output_that_is_an_input_is_refused(work, capsys, argv, path, what):
    before = _unchanged("m.onnx", "m.tcx", "in.npz", "calib.npz")
    rc, out, err = _main(capsys, *argv)
    assert rc == 1 and err == f"tilecore: error: {path}: the output would overwrite the input {what}\n"
    assert out == ""  # refused before any work
    assert _unchanged("m.onnx", "m.tcx", "in.npz", "calib.npz") == before


def test_output_through_a_symlink_is_refused(work, capsys):
    os.symlink("m.onnx", "link.onnx")
    rc, _, err = _main(capsys, "compile", "m.onnx", "-o", "link.onnx", "--quiet")
    assert rc == 1 and "the output would overwrite the input model" in err
    assert open("m.onnx", "rb").read()[:8] != b"TCEXEC\0\0"


def test_repro_into_a_directory_that_is_not_empty_is_refused_first(work, capsys):
    # F13: the whole table was printed, then node.json replaced (or Errno 17 for a file)
    os.mkdir("work")
    with open("work/node.json", "w") as f:
        f.write("my own notes")
    argv = ["compare", "m.onnx", "--inputs", "in.npz", "--precision", "int8", "--calib", "calib.npz",
            "--threshold", "0.9999999", "--quiet"]
    rc, out, err = _main(capsys, *argv, "--repro", "work")
    assert rc == 1 and "work: the directory is not empty" in err and out == ""
    assert open("work/node.json").read() == "my own notes"
    rc, out, err = _main(capsys, *argv, "--repro", "work/node.json")
    assert rc == 1 and "work/node.json: exists and is not a directory" in err and out == ""
    rc, out, err = _main(capsys, *argv, "--repro", "new")
    assert rc == 1 and "repro: new/node.onnx" in out  # a new directory is written
    assert sorted(os.listdir("new")) == ["inputs.npz", "node.json", "node.onnx", "outputs.npz"]


@pytest.mark.parametrize("content, words", [
    (b"PK\x03\x04garbage", "not a valid .npz archive"),     # F17: zipfile.BadZipFile traceback
    (b"hello", "not an .npz archive"),                      # numpy: "pickled (object) data"
])
@pytest.mark.parametrize("cmd", ["run", "compare"])
def test_inputs_file_that_is_not_an_npz_is_named(work, capsys, cmd, content, words):
    with open("bad.npz", "wb") as f:
        f.write(content)
    model = "m.tcx" if cmd == "run" else "m.onnx"
    rc, _, err = _main(capsys, cmd, model, "--inputs", "bad.npz", "--quiet")
    assert rc == 1 and err.startswith(f"tilecore: error: bad.npz: {words}"), err


@pytest.mark.parametrize("argv", [
    ["run", "m.tcx", "--inputs", "INPUT", "--quiet"],
    ["compare", "m.onnx", "--inputs", "INPUT", "--quiet"],
    ["compile", "m.onnx", "-o", "o.tcx", "--precision", "int8", "--calib", "INPUT", "--quiet"],
    ["compile", "m.onnx", "-o", "o.tcx", "--precision", "int8", "--calib-table", "INPUT", "--quiet"],
    ["compile", "m.onnx", "-o", "o.tcx", "--qtable", "INPUT", "--quiet"],
])
@pytest.mark.parametrize("special", ["/dev/zero", "FIFO"])
def test_non_regular_files_are_refused_without_reading(work, argv, special):
    # in a child process: a regression would read /dev/zero forever or block on the FIFO
    if special == "FIFO":
        special = str(work / "fifo")
        os.mkfifo(special)
    argv = [special if a == "INPUT" else a for a in argv]
    p = subprocess.run([sys.executable, "-m", "tilecore", *argv], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stderr.startswith("tilecore: error: "), p.stderr
    assert p.stderr.endswith(f"{special}: not a regular file\n") and p.stderr.count("\n") == 1, p.stderr


@pytest.mark.parametrize("precision", ["int8", "f16"])
@pytest.mark.parametrize("bad, word", [(np.nan, "NaN"), (np.inf, "inf")])
def test_non_finite_calibration_sample_is_named_and_nothing_written(work, capsys, precision, bad, word):
    # F2 (NaN: exit 0 and a model off by 1e6, or all NaN in f16), F18 (inf: "range ... is not finite")
    c = np.load("calib.npz")["x"]
    c[2, 1, 7] = bad
    np.savez("calib.npz", x=c)
    rc, _, err = _main(capsys, "compile", "m.onnx", "-o", "o.tcx", "--precision", precision, "--calib", "calib.npz",
                       "--quiet")
    assert rc == 1
    assert err == f"tilecore: error: calib.npz: calibration samples: input `x` sample 2 holds {word} at [1, 7]\n"
    assert not os.path.exists("o.tcx")


def test_file_errors_name_the_file_not_the_model(work, capsys):
    # F18: a text --calib "holds pickled data"; a non-UTF-8 --qtable was blamed on the model
    with open("calib.txt", "w") as f:
        f.write("hello")
    rc, _, err = _main(capsys, "compile", "m.onnx", "-o", "o.tcx", "--precision", "int8", "--calib", "calib.txt")
    assert rc == 1 and err.startswith("tilecore: error: calib.txt: not an .npz archive") and "pickled" not in err
    with open("q.txt", "wb") as f:
        f.write(b"\xff\xfe mm int8")
    rc, _, err = _main(capsys, "compile", "m.onnx", "-o", "o.tcx", "--qtable", "q.txt")
    assert rc == 1 and err == "tilecore: error: q.txt: not UTF-8 text (byte 0xff at offset 0)\n"
    with open("t.json", "w") as f:
        f.write("{")
    rc, _, err = _main(capsys, "compile", "m.onnx", "-o", "o.tcx", "--precision", "int8", "--calib-table", "t.json")
    assert rc == 1 and err.startswith("tilecore: error: calibration table t.json: not valid JSON")


@pytest.mark.parametrize("target, words", [
    ("llvm", "argument --target: unknown target kind `llvm` (known: "),                  # F18
    ("npu -cores=1 -cores=2", "argument --target: target `npu`: option -cores given twice"),  # F20
    ("npu -cores=99", "argument --target: target `npu`: bad value for option -cores=99"),
])
@pytest.mark.parametrize("cmd", ["compile", "compare"])
def test_bad_target_is_a_usage_error_naming_the_flag(work, capsys, cmd, target, words):
    argv = ["compile", "m.onnx", "-o", "o.tcx"] if cmd == "compile" else ["compare", "m.onnx", "--inputs", "in.npz"]
    rc, _, err = _main(capsys, *argv, "--target", target)
    assert rc == 2 and words in err and "node" not in err and err.count("unknown target kind") <= 1


@pytest.mark.parametrize("cosine", ["nan", "1.5", "-1", "inf", "0", "abc"])
def test_auto_mixed_cosine_outside_zero_one_is_refused(work, capsys, cosine):
    # F20: nan, 1.5, -1 and inf were accepted; 1.5 moved every matrix node to bf16
    rc, _, err = _main(capsys, "compile", "m.onnx", "-o", "o.tcx", "--precision", "int8", "--calib", "calib.npz",
                       "--auto-mixed", cosine)
    assert rc == 2 and f"argument --auto-mixed: expected a target cosine in (0, 1], e.g. 0.999, got '{cosine}'" in err


def test_calib_table_without_int8_is_refused(work, capsys):
    # F20: --calib-table with --precision f32 was read and ignored
    rc, _, err = _main(capsys, "compile", "m.onnx", "-o", "o.tcx", "--precision", "int8", "--calib", "calib.npz",
                       "--calib-table", "t.json", "--quiet")
    assert rc == 0 and os.path.exists("t.json")
    rc, _, err = _main(capsys, "compile", "m.onnx", "-o", "o.tcx", "--calib-table", "t.json", "--quiet")
    assert rc == 1 and "--calib-table t.json: a calibration table holds int8 thresholds, which --precision f32" in err
    with open("q.json", "w") as f:
        f.write('{"mm": "int8"}')
    rc, out, err = _main(capsys, "compile", "m.onnx", "-o", "o.tcx", "--calib-table", "t.json", "--qtable", "q.json",
                         "--quiet")
    assert rc == 0 and "1 matrix node(s) in int8" in out, err


@pytest.mark.parametrize("dtype, words", [(">f4", "dtype >f4 is big-endian"), ("U3", "dtype <U3 (text)"),
                                          ("c8", "dtype <c8 (complex)")])
def test_run_input_of_a_dtype_tc1_has_not_names_the_input(work, capsys, dtype, words):
    # F18: "Invalid data type `>f4`" without the input's name
    np.savez("in.npz", x=np.ones((4, 16)).astype(dtype))
    rc, _, err = _main(capsys, "run", "m.tcx", "--inputs", "in.npz", "--quiet")
    assert rc == 1 and err.startswith(f"tilecore: error: input `x`: {words}") and "expects x: float32[4, 16]" in err


def test_run_writes_its_outputs(work, capsys):
    rc, _, err = _main(capsys, "run", "m.tcx", "--inputs", "in.npz", "-o", "out", "--stats", "s.json", "--quiet")
    assert rc == 0, err
    x = np.load("in.npz")["x"]
    import json

    import tilecore

    ref = tilecore.runtime.load_executable("m.tcx").run({"x": x})["y"]
    np.testing.assert_array_equal(np.load("out.npz")["y"], ref)  # -o out wrote out.npz, as np.savez names it
    assert json.load(open("s.json"))["steps"] >= 1
    assert not [f for f in os.listdir(".") if f.endswith(".tmp")]


@pytest.mark.parametrize("argv, path, what", [
    (["check", "m.tcx", "--inputs", "in.npz", "--ref_data", "calib.npz", "--report", "in.npz"], "in.npz", "--inputs"),
    (["check", "m.tcx", "--inputs", "in.npz", "--ref_data", "calib.npz", "--report", "calib.npz"], "calib.npz",
     "--ref_data calib.npz"),
    (["viz", "m.onnx", "-o", "m.onnx"], "m.onnx", "model"),
])
def test_check_and_viz_outputs_follow_the_same_rule(work, capsys, argv, path, what):
    before = _unchanged("m.onnx", "m.tcx", "in.npz", "calib.npz")
    rc, _, err = _main(capsys, *argv)
    assert rc == 1 and err.endswith(f"{path}: the output would overwrite the input {what}\n"), err
    assert _unchanged("m.onnx", "m.tcx", "in.npz", "calib.npz") == before


def test_an_import_error_names_the_model_file_once(work, capsys):
    # F18: the importer names the file; the CLI added it a second time.
    m = onnx.load("m.onnx")
    m.graph.node[0].input.pop()  # MatMul with one input
    onnx.save(m, "one_input.onnx")
    rc, _, err = _main(capsys, "compile", "one_input.onnx", "-o", "o.tcx", "--quiet")
    assert rc == 1 and err.count("one_input.onnx") == 1, err
    assert "node 'mm' (MatMul, opset 17): 1 input; MatMul takes 2" in err and not os.path.exists("o.tcx")
