"""``tilecore compare`` on quantised models: a QDQ model made by ONNX Runtime's quantiser
is compared with its float self (pairs taken out, fused Relus kept); one scale set 100x
off must be named as the first jump, the nodes after it as "inputs already bad", and
``--repro`` must write that pair as a model ONNX Runtime runs. Figures checked against
numpy (Euclidean similarity, SQNR)."""
import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quant = pytest.importorskip("onnxruntime.quantization")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tilecore import cli  # noqa: E402
from tilecore.compiler.compare import compare_with_onnxruntime, metrics, write_repro  # noqa: E402


def _float_model(rng):
    nodes, inits, prev = [], [], "x"
    for i, (ci, co) in enumerate([(3, 8), (8, 8), (8, 8), (8, 4)]):
        inits += [numpy_helper.from_array((rng.standard_normal((co, ci, 3, 3)) * 0.3).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(co) * 0.1).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1], name=f"conv{i}"),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        prev = f"r{i}"
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4, 16, 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.fixture(scope="module")
def qdq(tmp_path_factory):
    rng = np.random.default_rng(0)
    d = tmp_path_factory.mktemp("qdq")
    onnx.save(_float_model(rng), d / "f.onnx")
    cal = rng.standard_normal((8, 1, 3, 16, 16)).astype(np.float32)

    class Reader(quant.CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": c} for c in cal])

        def get_next(self):
            return next(self.it, None)

    quant.quantize_static(str(d / "f.onnx"), str(d / "q.onnx"), Reader(), quant_format=quant.QuantFormat.QDQ,
                          per_channel=True)
    x = {"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
    return onnx.load(d / "q.onnx"), x


def _mis_set(model, value, factor):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for t in m.graph.initializer:
        if t.name == f"{value}_scale":
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(factor), t.name))
            return m
    raise AssertionError(f"no scale for {value}")


def test_qdq_model_agrees_with_its_float_self(qdq):
    model, x = qdq
    rep = compare_with_onnxruntime(model, x)
    assert rep["threshold"] == 0.99 and "without fake quantisation" in rep["reference"]
    assert rep["first_divergent"] is None and rep["first_jump"] is None
    pairs = [r for r in rep["tensors"] if "pair" in r]
    assert len(pairs) == 5 and all(r["op_type"] == "QuantizeLinear" for r in pairs)
    assert all(r["sqnr_db"] > 25 for r in rep["tensors"])  # int8 noise, nothing more


@pytest.mark.parametrize("factor", [100.0, 0.01])
def test_mis_set_scale_is_the_first_jump(qdq, factor, tmp_path):
    model, x = qdq
    rep = compare_with_onnxruntime(_mis_set(model, "r1", factor), x)
    jump = rep["first_jump"]
    assert jump is not None and jump["node"] == "r1_QuantizeLinear", jump
    assert jump["quantisation"]["zero_point"] == -128
    scale = float(numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "r1_scale")))
    assert jump["quantisation"]["scale"] == pytest.approx(scale * factor, rel=1e-6)
    names = [r["node"] for r in rep["tensors"]]
    for r in rep["tensors"][:names.index("r1_QuantizeLinear")]:
        assert not r["diverged"], r["node"]
    later = rep["tensors"][names.index("r1_QuantizeLinear") + 1:]
    assert later and all(r["jump_db"] < 10 for r in later if r["op_type"] == "Conv")  # inputs already bad

    path = write_repro(rep, tmp_path / "repro")
    one = onnx.load(path)
    assert [n.name for n in one.graph.node] == ["r1_QuantizeLinear", "r1_DequantizeLinear"]
    with np.load(tmp_path / "repro" / "inputs.npz") as z:
        feed = {k: z[k] for k in z.files}
    assert list(feed) == ["r1"]
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    with np.load(tmp_path / "repro" / "outputs.npz") as z:
        np.testing.assert_array_equal(z[z.files[0]], got)  # the pair reproduces on its own
    info = json.loads((tmp_path / "repro" / "node.json").read_text())
    assert info["node"] == "r1_QuantizeLinear" and info["shape"] == [1, 8, 16, 16]


@pytest.mark.npu
def test_cli_compare_repro(qdq, tmp_path, capsys):
    model, x = qdq
    onnx.save(_mis_set(model, "r2", 100.0), tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **x)
    rc = cli.main(["compare", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"), "--repro",
                   str(tmp_path / "r"), "--report", str(tmp_path / "r.json"), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 1 and "first jump: node `r2_QuantizeLinear` (QuantizeLinear)" in out
    assert (tmp_path / "r" / "node.onnx").exists()
    assert json.loads((tmp_path / "r.json").read_text())["first_jump"]["node"] == "r2_QuantizeLinear"


def test_euclidean_and_sqnr_by_hand():
    b = np.array([3.0, 4.0])
    a = np.array([3.0, 4.5])
    m = metrics(a, b)
    assert m["euclidean"] == pytest.approx(1 - 0.5 / 5.0)
    assert m["sqnr_db"] == pytest.approx(10 * np.log10(25 / 0.25))


def test_calib_threshold_100x_off_names_its_consumer(tmp_path, capsys):
    from tilecore.compiler.calibration import CalibTable, calibrate

    rng = np.random.default_rng(0)
    model = _float_model(rng)
    cal = {"x": rng.standard_normal((8, 1, 3, 16, 16)).astype(np.float32)}
    x = {"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
    table = calibrate(model, cal)
    rep = compare_with_onnxruntime(model, x, precision="int8", calib=table)
    assert rep["first_divergent"] is None and all(r["cosine"] > 0.999 for r in rep["tensors"])
    assert {r["node"]: r["precision"] for r in rep["tensors"]}["conv2"] == "int8"
    # r1's threshold 100x too large: conv2, which quantises r1 on load, is the bad node
    table.thresholds["r1"] *= 100
    table.save(tmp_path / "t.json")
    rep = compare_with_onnxruntime(model, x, precision="int8", calib=CalibTable.load(tmp_path / "t.json"))
    jump = rep["first_jump"]
    assert jump["node"] == "conv2" and jump["op_type"] == "Conv"
    assert jump["quantisation"]["inputs"]["r1"]["threshold"] == pytest.approx(table.thresholds["r1"])
    assert jump["inputs"][0] == {"name": "r1", "shape": [1, 8, 16, 16], "constant": False}
    # through the CLI, reusing the edited table
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **x)
    rc = cli.main(["compare", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"), "--precision", "int8",
                   "--calib-table", str(tmp_path / "t.json"), "--repro", str(tmp_path / "r"), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 1 and "first jump: node `conv2` (Conv)" in out
    one = onnx.load(tmp_path / "r" / "node.onnx")
    assert [n.op_type for n in one.graph.node] == ["Conv"] and len(one.graph.initializer) == 2


def test_repro_of_a_node_reading_a_graph_input(qdq, tmp_path):
    # the input's own pair mis-set: the repro's data input is the graph input
    model, x = qdq
    rep = compare_with_onnxruntime(_mis_set(model, "x", 100.0), x)
    assert rep["first_jump"]["node"] == "x_QuantizeLinear"
    json.dumps(rep, default=float)  # the report itself is JSON
    path = write_repro(rep, tmp_path)
    with np.load(tmp_path / "inputs.npz") as z:
        np.testing.assert_array_equal(z["x"], x["x"])
    assert onnx.load(path).graph.input[0].name == "x"


def test_jump_in_a_conv_merged_with_its_batchnorm(tmp_path):
    # Conv -> BatchNorm -> Relu twice: the passes fold each BatchNorm into its Conv, so the
    # Conv's own output has no counterpart; the row is the pair, and so is the repro
    from tilecore.compiler.calibration import calibrate

    rng = np.random.default_rng(3)
    nodes, inits, prev = [], [], "x"
    for i, (ci, co) in enumerate([(3, 8), (8, 8)]):
        inits += [numpy_helper.from_array((rng.standard_normal((co, ci, 3, 3)) * 0.3).astype(np.float32), f"w{i}")]
        for p, v in (("s", rng.uniform(0.5, 1.5, co)), ("b", rng.standard_normal(co) * 0.1),
                     ("m", rng.standard_normal(co) * 0.1), ("v", rng.uniform(0.5, 1.5, co))):
            inits.append(numpy_helper.from_array(v.astype(np.float32), f"{p}{i}"))
        nodes += [helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1], name=f"conv{i}"),
                  helper.make_node("BatchNormalization", [f"c{i}", f"s{i}", f"b{i}", f"m{i}", f"v{i}"], [f"n{i}"],
                                   name=f"bn{i}"),
                  helper.make_node("Relu", [f"n{i}"], [f"r{i}"], name=f"relu{i}")]
        prev = f"r{i}"
    g = helper.make_graph(nodes, "convbn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8, 12, 12])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    table = calibrate(model, {"x": rng.standard_normal((8, 1, 3, 12, 12)).astype(np.float32)}, method="minmax")
    table.thresholds["r0"] *= 100
    x = {"x": rng.standard_normal((1, 3, 12, 12)).astype(np.float32)}
    rep = compare_with_onnxruntime(model, x, precision="int8", calib=table)
    jump = rep["first_jump"]
    assert jump["node"] == "bn1" and jump["group"] == ["conv1", "bn1"] and jump["precision"] == "int8"
    assert jump["inputs"][0]["name"] == "r0" and jump["quantisation"]["inputs"]["r0"]["threshold"] == \
        pytest.approx(table.thresholds["r0"])
    path = write_repro(rep, tmp_path)
    one = onnx.load(path)
    assert [n.name for n in one.graph.node] == ["conv1", "bn1"]
    with np.load(tmp_path / "inputs.npz") as z:
        feed = {k: z[k] for k in z.files}
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    with np.load(tmp_path / "outputs.npz") as z:
        ours = z[z.files[0]]
    assert metrics(ours, ref)["cosine"] < 0.99  # the repro shows the fault on its own
