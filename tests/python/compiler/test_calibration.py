"""Calibration against numpy: the tensors of a small model computed here by hand, their
min/max and percentile thresholds, the KL search against a plain-loop transcription of
TensorRT's entropy calibration, the automatic choice against the quantisation error on
the real values, and the JSON table (round trip, validation naming the entry)."""
import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tilecore.compiler.calibration import (CalibrationError, CalibTable, calibrate, threshold_kl,  # noqa: E402
                                           quantisation_mse)


def _model():
    """y = Relu(x @ W + b) * 3; x (1, 4, 8)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 6)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "b"], ["add"], name="add"),
             helper.make_node("Relu", ["add"], ["relu"], name="relu"),
             helper.make_node("Mul", ["relu", "three"], ["y"], name="mul")]
    g = helper.make_graph(nodes, "calib", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
                           numpy_helper.from_array(np.array(3.0, np.float32), "three")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), w, b


def _samples(n=6, seed=1):
    return {"x": np.random.default_rng(seed).standard_normal((n, 1, 4, 8)).astype(np.float32)}


def _by_hand(x, w, b):
    mm = x @ w
    add = mm + b
    relu = np.maximum(add, 0)
    return {"x": x, "mm": mm, "add": add, "relu": relu, "y": relu * 3}


def test_minmax_is_the_absolute_maximum_of_every_tensor():
    m, w, b = _model()
    s = _samples()
    table = calibrate(m, s, method="minmax")
    ref = _by_hand(s["x"], w, b)
    assert set(table.thresholds) == set(ref)
    for name, v in ref.items():
        assert table.thresholds[name] == pytest.approx(float(np.abs(v).max()), rel=1e-6), name
        assert table.methods[name] == "minmax"


def test_percentile_is_the_bin_of_the_order_statistic():
    m, w, b = _model()
    s = _samples(40)
    table = calibrate(m, s, method="percentile", percentile=99.0)
    ref = _by_hand(s["x"], w, b)
    for name, v in ref.items():
        a = np.sort(np.abs(v).ravel().astype(np.float64))
        width = a[-1] / 2048
        k = int(np.ceil(0.99 * a.size))  # the k-th smallest |x| reaches 99 % of the count
        t = table.thresholds[name]
        assert t - width * 1.001 <= a[k - 1] <= t * 1.000001, name


def _kl_reference(hist, levels):
    """TensorRT's entropy calibration, as plain loops."""
    best, best_i = None, None
    n = len(hist)
    for i in range(levels, n + 1):
        p = [float(h) for h in hist[:i]]
        p[-1] += float(sum(hist[i:]))
        merged = i // levels
        q = [0.0] * i
        for k in range(levels):
            lo = k * merged
            hi = i if k == levels - 1 else lo + merged
            chunk = hist[lo:hi]
            nz = sum(1 for h in chunk if h != 0)
            for j in range(lo, hi):
                if hist[j] != 0:
                    q[j] = float(sum(chunk)) / nz
        ps, qs = sum(p), sum(q)
        kl = 0.0
        for pj, qj in zip(p, q):
            if pj > 0:
                kl += pj / ps * np.log((pj / ps) / (qj / qs if qj > 0 else 1e-12))
        if best is None or kl < best:
            best, best_i = kl, i
    return best_i


def test_kl_matches_a_plain_transcription():
    rng = np.random.default_rng(5)
    v = np.abs(np.concatenate([rng.standard_normal(20000), rng.standard_normal(30) * 12]))
    hist, _ = np.histogram(v, bins=300, range=(0, v.max()))
    width = v.max() / 300
    i = _kl_reference(hist, 32)
    assert threshold_kl(hist, width, levels=32) == pytest.approx((i + 0.5) * width)
    assert (i + 0.5) * width < 0.6 * v.max()  # the outliers are clipped


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kl_with_empty_bins_matches_the_transcription(seed):
    # sparse histograms: empty bins inside the levels and at candidate edges with a tail beyond
    rng = np.random.default_rng(seed)
    hist = rng.integers(0, 50, 200).astype(np.float64) * (rng.random(200) < 0.4)
    hist[-1] = 3
    i = _kl_reference(hist, 16)
    assert threshold_kl(hist, 0.1, levels=16) == pytest.approx((i + 0.5) * 0.1)


def test_auto_picks_the_least_quantisation_error():
    # a Gaussian tensor of 2^19 values with one far outlier: min/max wastes the int8
    # range (its rounding noise, 60^2 / 127^2 / 12, beats the clipping error 60^2 / 2^19)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 1, 256, 256)).astype(np.float32)
    x[3, 0, 1, 2] = 60.0
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256, 256])])
    m_model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    table = calibrate(m_model, {"x": x}, method="auto")
    cands = table.stats["x"]["candidates"]
    assert set(cands) == {"minmax", "percentile", "kl"}

    def real_mse(t):  # on the values themselves
        s = t / 127
        return float(np.mean((x - np.clip(np.rint(x / s), -127, 127) * s) ** 2))

    errs = {k: real_mse(t) for k, t in cands.items()}
    assert table.methods["x"] == min(errs, key=errs.get)
    assert table.methods["x"] != "minmax"
    assert quantisation_mse(np.array([0, 10.0]), 1.0, 1.5) == pytest.approx(0.0)  # 1.5 is a level
    # one collection, every method: the same thresholds as calibrating with that method
    for m in ("minmax", "percentile", "kl"):
        assert table.with_method(m).thresholds == pytest.approx(calibrate(m_model, {"x": x}, method=m).thresholds)


def test_table_round_trip_and_validation(tmp_path):
    m, _, _ = _model()
    table = calibrate(m, _samples(), method="kl")
    p = tmp_path / "t.json"
    table.save(p)
    again = CalibTable.load(p)
    assert again.thresholds == table.thresholds and again.methods == table.methods
    doc = json.loads(p.read_text())
    assert doc["version"] == 1
    doc["tensors"]["relu"]["threshold"] = -1
    p.write_text(json.dumps(doc))
    with pytest.raises(CalibrationError, match="entry `relu`.*finite number >= 0"):
        CalibTable.load(p)
    doc["tensors"]["relu"] = 2.5  # the short form: name -> threshold
    p.write_text(json.dumps(doc))
    assert CalibTable.load(p).thresholds["relu"] == 2.5
    doc["version"] = 7
    p.write_text(json.dumps(doc))
    with pytest.raises(CalibrationError, match="version 7"):
        CalibTable.load(p)


def test_bad_samples_name_the_input():
    m, _, _ = _model()
    with pytest.raises(CalibrationError, match="input `x` has shape"):
        calibrate(m, {"x": np.zeros((2, 4, 8), np.float32)})
    with pytest.raises(CalibrationError, match="no array for input"):
        calibrate(m, {"z": np.zeros((2, 1, 4, 8), np.float32)})
    with pytest.raises(CalibrationError, match="method `best`"):
        calibrate(m, _samples(), method="best")
    with pytest.raises(CalibrationError, match="input `x` is int32, the model takes float32"):
        calibrate(m, {"x": np.zeros((2, 1, 4, 8), np.int32)})
    s64 = {"x": _samples()["x"].astype(np.float64)}  # numpy's default: converted
    assert calibrate(m, s64).thresholds == calibrate(m, _samples()).thresholds


@pytest.mark.npu
def test_compile_names_samples_without_the_models_shape():
    from tilecore.compiler import compile as compile_model
    from tilecore.compiler.driver import CompileError

    m, _, _ = _model()  # x: [1, 4, 8]; samples of (N, 4, 8) lack the batch dim
    with pytest.raises(CompileError, match=r"input `x` has samples of shape \[4, 8\].*the model takes \[1, 4, 8\]"):
        compile_model(m, precision="int8", calib_samples={"x": np.zeros((2, 4, 8), np.float32)})


@pytest.mark.npu
def test_cli_compile_writes_then_reuses_the_table(tmp_path, capsys):
    from tilecore import cli

    m, _, _ = _model()
    onnx.save(m, tmp_path / "m.onnx")
    s = _samples()
    np.savez(tmp_path / "cal.npz", **s)
    args = ["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.tcx"), "--precision", "int8", "--quiet"]
    assert cli.main(args + ["--calib", str(tmp_path / "cal.npz"), "--calib-method", "minmax",
                            "--calib-table", str(tmp_path / "t.json")]) == 0
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["method"] == "minmax" and doc["samples"] == 6
    assert doc["tensors"]["x"]["threshold"] == pytest.approx(float(np.abs(s["x"]).max()))
    assert "calibration table of 5 tensors" in capsys.readouterr().out
    doc["tensors"]["x"]["threshold"] = "big"
    (tmp_path / "t.json").write_text(json.dumps(doc))
    assert cli.main(args + ["--calib-table", str(tmp_path / "t.json")]) == 1
    assert "entry `x`: threshold must be a finite number >= 0" in capsys.readouterr().err


def test_kl_leaves_exact_zeros_out():
    # a Relu output: half exact zeros, which would be one spike in the first KL level
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 1, 64, 64)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 64])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    t = calibrate(m, {"x": x}, method="kl").thresholds["y"]
    y = np.maximum(x, 0)
    hist, _ = np.histogram(y[y != 0], bins=2048, range=(0, y.max()))
    assert t == pytest.approx(threshold_kl(hist, y.max() / 2048))
    assert t > 0.6 * y.max()


def _tiny_conv_model(scale):
    """y = Conv(Relu(Conv(x * scale))): every activation about `scale` (torchvision's
    EfficientNet-B0 with random weights reaches 1e-14)."""
    rng = np.random.default_rng(7)
    w1 = (rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32)
    w2 = (rng.standard_normal((8, 16, 1, 1)) * 0.3).astype(np.float32)
    nodes = [helper.make_node("Mul", ["x", "s"], ["xs"], name="scale"),
             helper.make_node("Conv", ["xs", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
             helper.make_node("Conv", ["r1", "w2"], ["y"], name="conv2")]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])],
                          [numpy_helper.from_array(np.array(scale, np.float32), "s"),
                           numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.npu
def test_a_tiny_range_is_kept_and_the_cli_calibrates_as_the_api(tmp_path, capsys):
    """Activations of 1e-14 quantise at that scale (the table once raised every threshold
    to 1e-6, and the CLI's int8 outputs were all zeros); by default the CLI's thresholds
    are the API's (min/max over the same samples)."""
    import onnxruntime as ort

    import tilecore
    from tilecore import cli, runtime
    from tilecore.compiler.verify import cosine

    m = _tiny_conv_model(1e-14)
    onnx.save(m, tmp_path / "m.onnx")
    s = {"x": np.random.default_rng(2).standard_normal((4, 1, 8, 8, 8)).astype(np.float32)}
    np.savez(tmp_path / "cal.npz", **s)
    assert cli.main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.tcx"), "--precision", "int8",
                     "--quiet", "--calib", str(tmp_path / "cal.npz"), "--calib-table", str(tmp_path / "t.json")]) == 0
    assert "2 matrix node(s) in int8" in capsys.readouterr().out
    table = CalibTable.load(tmp_path / "t.json")
    assert 1e-15 < table.thresholds["xs"] < 1e-12
    x = {"x": np.random.default_rng(3).standard_normal((1, 8, 8, 8)).astype(np.float32)}
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    y_cli = runtime.load_executable(tmp_path / "m.tcx").run(x)["y"]
    rep = {}
    y_api = tilecore.compile(m, precision="int8", calib_samples=s, report=rep).run(x)["y"]
    assert cosine(y_cli, ref) > 0.99 and cosine(y_api, ref) > 0.99
    for name in ("xs", "r1"):
        assert table.thresholds[name] == pytest.approx(rep["precision"]["thresholds"][name], rel=1e-5)


def test_a_tensor_zero_on_every_sample_keeps_its_readers_in_f32():
    """A degenerate range (0 on every calibration sample) gives no int8 scale: the Conv
    reading it stays in f32 and the report names the tensor."""
    import tilecore

    m = _tiny_conv_model(0.0)
    s = {"x": np.random.default_rng(2).standard_normal((2, 1, 8, 8, 8)).astype(np.float32)}
    assert calibrate(m, s).thresholds["xs"] == 0.0
    rep = {}
    tilecore.compile(m, precision="int8", calib_samples=s, report=rep)
    falls = {f["node"]: f["reason"] for f in rep["precision"]["fallbacks"]}
    assert falls["conv1"] == "calibration: `xs` is zero on every sample (a degenerate range)"
    assert "conv1" not in rep["precision"]["assigned"]


def test_a_table_of_the_onnx_values_gives_the_compilers_views_their_ranges():
    """A 3-D MatMul + bias becomes a 2-D Gemm between Reshapes (FoldMatMulBias): the table,
    calibrated on the ONNX model, names the 3-D values; the Gemm writes the 2-D one. A
    view's values are its input's, so each takes the other's range: the dense -> Gelu ->
    dense chain keeps its int8 edges (the Gelu a lookup table in the first dense), and the
    executable is the one calibrating in the compile gives, bit for bit (the CLI's --calib
    compiles with the table and the samples)."""
    import onnxruntime as ort

    import tilecore
    from tilecore.compiler.verify import cosine

    rng = np.random.default_rng(5)
    w1, b1 = (rng.standard_normal((32, 64)) * 0.2).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    w2, b2 = (rng.standard_normal((64, 32)) * 0.2).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="dense1"),
             helper.make_node("Add", ["m1", "b1"], ["a1"], name="bias1"),
             helper.make_node("Gelu", ["a1"], ["g"], name="gelu"),
             helper.make_node("MatMul", ["g", "w2"], ["m2"], name="dense2"),
             helper.make_node("Add", ["m2", "b2"], ["y"], name="bias2")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    s = {"x": rng.standard_normal((8, 1, 16, 32)).astype(np.float32)}
    table = calibrate(m, s, method="minmax")
    assert "a1" in table.thresholds and not any(k.endswith("_2d") for k in table.thresholds)
    r_table, r_samples = {}, {}
    # (the samples too, as the CLI passes them: the bias correction's channel means)
    by_table = tilecore.compile(m, precision="int8", calib=table, calib_samples=s, report=r_table)
    by_samples = tilecore.compile(m, precision="int8", calib_samples=s, report=r_samples)
    assert sorted(r_table["int8_edges"]) == sorted(r_samples["int8_edges"])
    assert {"a1", "g"} <= set(r_table["int8_edges"])
    x = {"x": rng.standard_normal((1, 16, 32)).astype(np.float32)}
    y = by_table.run(x)["y"]
    np.testing.assert_array_equal(y, by_samples.run(x)["y"])
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    assert cosine(y, ref) > 0.99
