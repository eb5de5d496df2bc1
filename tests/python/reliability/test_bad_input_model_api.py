"""Bad input to the model API: calibration samples holding NaN or infinity, calibration
files that are not what they claim, bad targets and target cosines, and run inputs of a
dtype TC1 has not. Each is a ValueError naming the input, the sample, the file or the
flag's value, never a compiled model that is silently wrong."""
import os

import numpy as np
import pytest

import tilecore
from tilecore.compiler.calibration import CalibrationError, CalibTable, calibrate, load_samples
from tilecore.compiler.precision import load_qtable

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402


def _model(first_op=None):
    """x[4,16] -> (first_op) -> MatMul w[16,8] -> Add b -> Relu -> y[4,8]."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    nodes, src = [], "x"
    if first_op:
        nodes.append(helper.make_node(first_op, ["x"], ["x1"], name="first"))
        src = "x1"
    nodes += [helper.make_node("MatMul", [src, "w"], ["h"], name="mm"),
              helper.make_node("Add", ["h", "b"], ["a"], name="add"),
              helper.make_node("Relu", ["a"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [4, 8])],
                          [helper.make_tensor("w", TP.FLOAT, w.shape, w.ravel()),
                           helper.make_tensor("b", TP.FLOAT, b.shape, b)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _samples(bad=None, at=(0, 0, 0)):
    s = np.random.default_rng(1).standard_normal((8, 4, 16)).astype(np.float32)
    if bad is not None:
        s[at] = bad
    return {"x": s}


@pytest.mark.parametrize("precision", ["int8", "f16"])
@pytest.mark.parametrize("bad, word", [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_non_finite_calibration_sample_is_named(precision, bad, word):
    # F2: int8 thresholds and the f16 bias correction both read the samples
    with pytest.raises(ValueError) as e:
        tilecore.compile(_model(), precision=precision, calib_samples=_samples(bad, (3, 2, 5)))
    assert str(e.value) == f"calibration samples: input `x` sample 3 holds {word} at [2, 5]"


def test_nan_through_calibrate_and_auto_mixed():
    # F2: the ONNX Runtime calibration and auto_mixed's evaluation samples
    with pytest.raises(CalibrationError, match=r"^calibration samples: input `x` sample 0 holds NaN at \[0, 0\]$"):
        calibrate(_model(), _samples(np.nan), method="minmax")
    with pytest.raises(ValueError, match="input `x` sample 0 holds NaN"):
        tilecore.compile(_model(), precision="int8", calib_samples=_samples(np.nan), auto_mixed=0.99)


def test_float64_sample_beyond_float32_is_named():
    # 1e39 is finite in float64 and inf once converted to the model's float32
    s = _samples()["x"].astype(np.float64)
    s[1, 0, 0] = 1e39
    with pytest.raises(CalibrationError, match=r"input `x` sample 1 holds inf at \[0, 0\]"):
        calibrate(_model(), {"x": s}, method="minmax")


def test_value_non_finite_from_finite_samples_is_named():
    # Log of a negative sample: the input is finite, the value the model computes is NaN
    m = _model("Log")
    with pytest.raises(ValueError, match=r"value `x1` is NaN on sample 0"):
        tilecore.compile(m, precision="int8", calib_samples=_samples())
    with pytest.raises(CalibrationError, match=r"value `x1` is NaN on sample 0"):
        calibrate(m, _samples(), method="minmax")


def test_finite_samples_still_calibrate():
    exe = tilecore.compile(_model(), precision="int8", calib_samples=_samples())
    x = _samples()["x"][0]
    ref = tilecore.compile(_model()).run({"x": x})["y"]
    y = exe.run({"x": x})["y"]
    assert np.abs(y - ref).max() < 0.1 * np.abs(ref).max()


def test_calibration_files_name_themselves(tmp_path):
    # F18: a text file as --calib said "pickled (object) data"; a NaN in the file names it
    text = tmp_path / "calib.npz"
    text.write_text("hello")
    with pytest.raises(CalibrationError, match=r"calib.npz: not an .npz archive"):
        load_samples(text)
    nan = tmp_path / "nan.npz"
    np.savez(nan, **_samples(np.nan))
    with pytest.raises(CalibrationError, match=r"nan.npz: calibration samples: input `x` sample 0 holds NaN"):
        load_samples(nan)
    with pytest.raises(CalibrationError, match="^/dev/zero: not a regular file$"):
        load_samples("/dev/zero")
    table = tmp_path / "t.json"
    table.write_bytes(b"\xff{}")
    with pytest.raises(CalibrationError, match=r"t.json: not UTF-8 text \(byte 0xff at offset 0\)"):
        CalibTable.load(table)
    with pytest.raises(CalibrationError, match="/dev/zero: not a regular file"):
        CalibTable.load("/dev/zero")


def test_calibration_table_round_trip_is_atomic(tmp_path):
    path = tmp_path / "t.json"
    CalibTable({"x": 1.5}).save(path)
    assert CalibTable.load(path).thresholds == {"x": 1.5}
    assert os.listdir(tmp_path) == ["t.json"]


def test_qtable_errors_name_the_qtable(tmp_path):
    # F18: a non-UTF-8 qtable was blamed on the model
    q = tmp_path / "q.txt"
    q.write_bytes(b"\xff\xfe mm int8")
    with pytest.raises(ValueError, match=r"q.txt: not UTF-8 text \(byte 0xff"):
        load_qtable(q)
    q.write_text('{"mm": ')
    with pytest.raises(ValueError, match="q.txt: not valid JSON"):
        load_qtable(q)
    with pytest.raises(ValueError, match="^/dev/zero: not a regular file$"):
        load_qtable("/dev/zero")
    q.write_text('{"mm": 1}')
    with pytest.raises(ValueError, match="q.txt: every value must be a precision name"):
        load_qtable(q)


@pytest.mark.parametrize("target, message", [
    ("llvm", "target: unknown target kind `llvm` (known: "),
    ("npu -cores=1 -cores=2", "target `npu`: option -cores given twice"),
])
def test_bad_target_is_the_targets_error_not_a_nodes(target, message):
    # F18: "node `mm` (MatMul) on the npu: node `mm` (MatMul) on the npu: unknown target kind"
    with pytest.raises(ValueError) as e:
        tilecore.compile(_model(), target=target)
    assert str(e.value).startswith(message), str(e.value)
    assert "node" not in str(e.value)


@pytest.mark.parametrize("cosine", [float("nan"), 1.5, -1.0, 0.0, float("inf"), "abc"])
def test_auto_mixed_cosine_must_be_in_zero_one(cosine):
    # F20: 1.5 moved every matrix node to bf16
    with pytest.raises(ValueError, match=r"auto_mixed: a target cosine must be (a number )?in \(0, 1\]"):
        tilecore.compile(_model(), precision="int8", calib_samples=_samples(), auto_mixed=cosine)


@pytest.mark.parametrize("value, words", [
    (np.ones((4, 16), ">f4"), "dtype >f4 is big-endian (convert it with .astype('<f4'))"),
    (np.ones((4, 16)).astype("U3"), "dtype <U3 (text)"),
    (np.ones((4, 16), np.complex64), "dtype <c8 (complex)"),
    (np.ones((4, 16)).astype(object), "dtype |O (Python objects)"),
    ("abc", "dtype <U3 (text)"),
])
def test_run_input_of_a_dtype_tc1_has_not_is_named(value, words):
    # F18: "Invalid data type `>f4`" without the input's name
    exe = tilecore.compile(_model())
    with pytest.raises(ValueError) as e:
        exe.run({"x": value})
    assert str(e.value).startswith(f"input `x`: {words}"), str(e.value)
    assert str(e.value).endswith("the executable expects x: float32[4, 16]")
