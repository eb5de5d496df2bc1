"""QOperator models (QLinearConv, QLinearMatMul from ONNX Runtime's quantiser in
QOperator format; MatMulInteger built here) compile through their QDQ form, with the
matrix ops folded into int8, and match ONNX Runtime's run of the same model."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quant = pytest.importorskip("onnxruntime.quantization")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tilecore  # noqa: E402


class _Reader(quant.CalibrationDataReader):
    def __init__(self, name, samples):
        self.it = iter([{name: s} for s in samples])

    def get_next(self):
        return next(self.it, None)


def _ort(model, feed):
    # Without graph optimisations ONNX Runtime runs each node as the ONNX spec says (a QDQ
    # pair, a float op between): its fused int8 kernels on CPUs without VNNI saturate u8 x s8
    # pair sums in 16 bits (vpmaddubsw), an oracle that depends on the machine.
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feed)[0]


def _ours(model, feed, report):
    return list(tilecore.compile(model, report=report).run(feed).values())[0]


@pytest.mark.parametrize("per_channel", [True, False])
def test_qlinearconv_chain(tmp_path, per_channel):
    from test_compare_precision import _float_model

    rng = np.random.default_rng(6)
    onnx.save(_float_model(rng), tmp_path / "f.onnx")
    quant.quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"),
                          _Reader("x", rng.standard_normal((8, 1, 3, 16, 16)).astype(np.float32)),
                          quant_format=quant.QuantFormat.QOperator, per_channel=per_channel)
    q = onnx.load(tmp_path / "q.onnx")
    assert sum(n.op_type == "QLinearConv" for n in q.graph.node) == 4
    x = {"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
    report = {}
    ours, ref = _ours(q, x, report), _ort(q, x)
    assert len(report["qdq"]["folded"]) == 4
    last = [n for n in q.graph.node if n.op_type == "QLinearConv"][-1]
    scale = float(numpy_helper.to_array(next(t for t in q.graph.initializer if t.name == last.input[6])))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=scale * 1.001)  # at most one output step off


def test_qlinearmatmul(tmp_path):
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((32, 16)) * 0.2).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "f.onnx")
    quant.quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"),
                          _Reader("x", rng.standard_normal((8, 4, 32)).astype(np.float32)),
                          quant_format=quant.QuantFormat.QOperator)
    q = onnx.load(tmp_path / "q.onnx")
    assert "QLinearMatMul" in [n.op_type for n in q.graph.node]
    x = {"x": rng.standard_normal((4, 32)).astype(np.float32)}
    report = {}
    ours, ref = _ours(q, x, report), _ort(q, x)
    assert report["qdq"]["folded"] == ["mm_quant"]
    scale = float(numpy_helper.to_array(next(t for t in q.graph.initializer if t.name == "y_scale")))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=scale * 1.001)


@pytest.mark.parametrize("adtype,per_column", [(np.uint8, False), (np.int8, True)])
def test_matmulinteger_is_exact(adtype, per_column):
    rng = np.random.default_rng(8)
    lo, hi = (0, 256) if adtype == np.uint8 else (-128, 128)
    b = rng.integers(-128, 128, (48, 10)).astype(np.int8)
    a_zp = np.array(7 if adtype == np.uint8 else -3, adtype)
    b_zp = rng.integers(-5, 5, 10).astype(np.int8) if per_column else np.array(2, np.int8)
    a_type = TensorProto.UINT8 if adtype == np.uint8 else TensorProto.INT8
    g = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"], name="mmi")], "mmi",
                          [helper.make_tensor_value_info("a", a_type, [3, 48])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [3, 10])],
                          [numpy_helper.from_array(b, "b"), numpy_helper.from_array(a_zp, "az"),
                           numpy_helper.from_array(b_zp, "bz")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    a = rng.integers(lo, hi, (3, 48)).astype(adtype)
    ours = list(tilecore.compile(m).run({"a": a}).values())[0]
    want = (a.astype(np.int64) - int(a_zp)) @ (b.astype(np.int64) - b_zp.astype(np.int64))  # numpy, exact
    np.testing.assert_array_equal(ours, want.astype(np.int32))
    if adtype == np.int8:  # (ONNX Runtime's u8 x s8 kernel saturates pair sums in 16 bits on
        # CPUs without VNNI, whatever the session options: numpy is the oracle there)
        np.testing.assert_array_equal(ours, _ort(m, {"a": a}))


def test_convinteger_is_exact():
    rng = np.random.default_rng(9)
    x = rng.integers(0, 256, (1, 3, 7, 7)).astype(np.uint8)
    w = rng.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8)
    xz, wz = np.array(9, np.uint8), np.array(131, np.uint8)
    g = helper.make_graph([helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], name="ci", pads=[1, 1, 1, 1])],
                          "ci", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 7, 7])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 4, 7, 7])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(xz, "xz"),
                           numpy_helper.from_array(wz, "wz")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    ours = list(tilecore.compile(m).run({"x": x}).values())[0]
    np.testing.assert_array_equal(ours, _ort(m, {"x": x}))


def test_qlinearmatmul_float16_scales():
    rng = np.random.default_rng(10)
    b = rng.integers(0, 256, (16, 5)).astype(np.uint8)
    inits = [numpy_helper.from_array(np.array(v, dt), n) for n, v, dt in
             [("as", 0.02, np.float16), ("az", 120, np.uint8), ("bs", 0.01, np.float16), ("bz", 128, np.uint8),
              ("ys", 0.05, np.float16), ("yz", 100, np.uint8)]] + [numpy_helper.from_array(b, "b")]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], name="qmm")
    g = helper.make_graph([node], "qmm", [helper.make_tensor_value_info("a", TensorProto.UINT8, [4, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [4, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    a = rng.integers(0, 256, (4, 16)).astype(np.uint8)
    ours = list(tilecore.compile(m).run({"a": a}).values())[0]
    np.testing.assert_allclose(ours.astype(int), _ort(m, {"a": a}).astype(int), atol=1)  # (one step of rounding)


def test_dynamic_quantize_linear_against_numpy():
    g = helper.make_graph([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"], name="dq")], "dql",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 50])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [6, 50]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
                           helper.make_tensor_value_info("z", TensorProto.UINT8, [])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    exe = tilecore.compile(m)
    rng = np.random.default_rng(10)
    for x in (rng.standard_normal((6, 50)) * 3, rng.uniform(0.5, 2, (6, 50)), -rng.uniform(0.5, 2, (6, 50))):
        x = x.astype(np.float32)
        out = exe.run({"x": x})
        # the ONNX definition, in numpy
        scale = np.float32((max(0.0, x.max()) - min(0.0, x.min())) / np.float32(255))
        zp = np.uint8(np.clip(np.rint(np.float32(-min(0.0, x.min())) / scale), 0, 255))
        y = np.clip(np.rint(x / scale) + int(zp), 0, 255).astype(np.uint8)
        assert out["s"] == pytest.approx(scale, rel=1e-7) and out["z"] == zp
        np.testing.assert_array_equal(out["y"], y)


def test_dynamically_quantised_matmul(tmp_path):
    # quantize_dynamic: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul, exact
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((32, 16)) * 0.2).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "f.onnx")
    quant.quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "d.onnx"))
    q = onnx.load(tmp_path / "d.onnx")
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= {n.op_type for n in q.graph.node}
    exe = tilecore.compile(q)
    for k in range(3):
        x = {"x": (rng.standard_normal((4, 32)) * (k + 1)).astype(np.float32)}
        np.testing.assert_array_equal(list(exe.run(x).values())[0], _ort(q, x))


# ---- int8 in, int8 out: no Quantize/Dequantize step, the requantisation in the epilogue ---

def _int8_matmul_model(m, k, n, x_zp, y_zp, seed=0):
    """A QLinearMatMul with int8 data in and out (the graph's input and output), per-tensor
    scales and the given zero points."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-127, 128, (k, n), dtype=np.int8)
    consts = {"xs": np.float32(0.02), "xz": np.int8(x_zp), "w": w, "ws": np.float32(0.01), "wz": np.int8(0),
              "ys": np.float32(0.02 * 0.01 * np.sqrt(k) * 40), "yz": np.int8(y_zp)}
    node = helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="mm")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, [m, n])],
                          [numpy_helper.from_array(np.asarray(v), name) for name, v in consts.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), consts


def _requantised(x, c):
    """numpy's int8 Y of the form (docs/precision.md): sat(round_even(f32(f32(acc) * s) + y_zp))
    with acc = sum (x - x_zp) w exactly and s = f32(w_scale * f32(x_scale / y_scale))."""
    acc = (x.astype(np.int64) - int(c["xz"])) @ c["w"].astype(np.int64)
    factor = np.float32(np.float64(c["xs"]) / np.float64(c["ys"]))
    s = np.float32(c["ws"] * factor)
    v = (acc.astype(np.float32) * s).astype(np.float32) + np.float32(int(c["yz"]))
    return np.clip(np.rint(v), -128, 127).astype(np.int8)


@pytest.mark.parametrize("shape,plan", [((70, 300, 150), "tiled"),     # K > 256: vector requantisation
                                        ((33, 200, 40), "tiled"),      # K in one mm: the mm's epilogue
                                        ((256, 512, 256), "pipelined"),
                                        ((4, 768, 768), "column")])
def test_qlinearmatmul_int8_in_and_out(shape, plan):
    m, k, n = shape
    model, consts = _int8_matmul_model(m, k, n, x_zp=3, y_zp=-5)
    report = {}
    exe = tilecore.compile(model, report=report)
    body = str(next(iter(report["npu_funcs"].values())))
    assert {"Bsh": "pipelined", "Ash": "column"}.get(next((b for b in ("Bsh", "Ash") if b in body), ""), "tiled") == plan
    assert report["qdq"]["int8_outputs"] == ["mm"]
    x = np.random.default_rng(1).integers(-128, 128, (m, k), dtype=np.int8)
    y = exe.run({"x": x})["y"]
    assert [o["op_type"] for o in exe.stats()["ops"]] == ["MatMul"]  # no Quantize/Dequantize step
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, _requantised(x, consts))
    ref = _ort(model, {"x": x})  # QLinearMatMul's own multiplier x_scale * w_scale / y_scale
    assert np.abs(y.astype(int) - ref.astype(int)).max() <= 1 and np.mean(y == ref) > 0.99


def test_int8_matmul_pipeline_is_ordered(hazard_checked):
    """The pipelined plan stages the weights in L2 a block at a time, each behind a barrier
    that leaves the engines running (tir.barrier_no_drain): no L1/L2 access is unordered."""
    model, consts = _int8_matmul_model(256, 512, 256, x_zp=0, y_zp=0)
    report = {}
    exe = tilecore.compile(model, report=report)
    body = str(next(iter(report["npu_funcs"].values())))
    assert "tir.barrier_no_drain" in body and "A0b" in body  # chunk 0's second half: a buffer of its own
    x = np.random.default_rng(2).integers(-128, 128, (256, 512), dtype=np.int8)
    np.testing.assert_array_equal(exe.run({"x": x})["y"], _requantised(x, consts))
    assert hazard_checked() == []


def test_int8_matmul_kernel_on_the_c_target():
    """The same kernel built for the C target (the barrier without drain is a barrier of the
    cluster's threads there) computes the same bytes."""
    model, consts = _int8_matmul_model(256, 512, 256, x_zp=-2, y_zp=7)
    report = {}
    tilecore.compile(model, report=report)
    f = next(iter(report["npu_funcs"].values()))
    mod = tilecore.build(f, target="c")
    x = np.random.default_rng(3).integers(-128, 128, (256, 512), dtype=np.int8)
    w = consts["w"]
    bias = (-int(consts["xz"]) * w.astype(np.int64).sum(axis=0)).astype(np.int32)  # the fold's int32 bias
    y = np.zeros((256, 256), np.int8)
    mod[f.attrs["global_symbol"]](x, w, bias, np.full(256, consts["ws"], np.float32), y)
    np.testing.assert_array_equal(y, _requantised(x, consts))


def test_int8_output_read_as_b_of_a_matmul_of_two_activations():
    """attention's attn x V with V = MatMul(x, Wv) quantised: V's MatMul stores int8, and the
    MatMul of two activations reads it as its B as it is (the DequantizeLinear has no zero
    point: 0 of its input's type)."""
    rng = np.random.default_rng(9)
    w = rng.integers(-127, 128, (32, 24), dtype=np.int8)
    sx, sw, sv, sa = 0.02, 0.01, 0.05, 0.01
    c = {"sx": np.float32(sx), "z": np.int8(0), "w": w, "sw": np.float32(sw), "sv": np.float32(sv),
         "sa": np.float32(sa)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "z"], ["xq"], name="qx"),
             helper.make_node("DequantizeLinear", ["xq", "sx", "z"], ["xd"], name="dqx"),
             helper.make_node("DequantizeLinear", ["w", "sw"], ["wd"], name="dqw"),
             helper.make_node("MatMul", ["xd", "wd"], ["v"], name="v_proj"),
             helper.make_node("QuantizeLinear", ["v", "sv", "z"], ["vq"], name="qv"),
             helper.make_node("DequantizeLinear", ["vq", "sv"], ["vd"], name="dqv"),
             helper.make_node("QuantizeLinear", ["a", "sa", "z"], ["aq"], name="qa"),
             helper.make_node("DequantizeLinear", ["aq", "sa", "z"], ["ad"], name="dqa"),
             helper.make_node("MatMul", ["ad", "vd"], ["y"], name="attn_v")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32]),
                                       helper.make_tensor_value_info("a", TensorProto.FLOAT, [8, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 24])],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in c.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    feed = {"x": rng.standard_normal((16, 32)).astype(np.float32),
            "a": rng.random((8, 16)).astype(np.float32)}
    report = {}
    exe = tilecore.compile(model, report=report, group=False)  # a step per node
    assert sorted(report["qdq"]["folded"]) == ["attn_v", "v_proj"] and report["qdq"]["int8_outputs"] == ["v_proj"]
    y = exe.run(feed)["y"]
    assert [o["op_type"] for o in exe.stats()["ops"]] == ["MatMul", "MatMul"]  # no Q/DQ step
    # numpy: V in int8 as the epilogue requantises it, then the int8 product of two activations
    xq = np.clip(np.rint(feed["x"] * np.float32(1 / np.float64(np.float32(sx)))), -128, 127)
    acc = xq.astype(np.int64) @ w.astype(np.int64)
    s = np.float32(np.float32(sw) * np.float32(np.float64(np.float32(sx)) / np.float64(np.float32(sv))))
    vq = np.clip(np.rint((acc.astype(np.float32) * s).astype(np.float32)), -128, 127).astype(np.int64)
    aq = np.clip(np.rint(feed["a"] * np.float32(1 / np.float64(np.float32(sa)))), -128, 127).astype(np.int64)
    ref = (aq @ vq).astype(np.float32) * np.float32(np.float32(sa) * np.float32(sv))
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_allclose(y, _ort(model, feed), rtol=0, atol=2 * sa * sv * 16 * 127)
