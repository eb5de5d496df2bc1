"""QDQ models as ONNX Runtime's quantiser writes them (quantize_static, QDQ format,
per-channel or per-tensor int8 weights, calibrated on seeded samples) compile with their
Conv/MatMul folded into the int8 quantised-node form and match ONNX Runtime's run of the
same quantised model: a small Conv chain (to one output quantisation step) and the zoo's
ResNet-18 (cosine >= 0.999)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quant = pytest.importorskip("onnxruntime.quantization")

import tilecore  # noqa: E402
from tilecore.compiler.compare import metrics  # noqa: E402


class _Reader(quant.CalibrationDataReader):
    def __init__(self, name, samples):
        self.it = iter([{name: s} for s in samples])

    def get_next(self):
        return next(self.it, None)


def _quantise(src, dst, name, samples, per_channel=True, activations=quant.QuantType.QInt8):
    quant.quantize_static(str(src), str(dst), _Reader(name, samples), quant_format=quant.QuantFormat.QDQ,
                          per_channel=per_channel, activation_type=activations,
                          weight_type=quant.QuantType.QInt8)
    return onnx.load(dst)


def _ort(model, feed):
    # Without graph optimisations ONNX Runtime runs each node as the ONNX spec says (a QDQ
    # pair, a float op between): its fused int8 kernels on CPUs without VNNI saturate u8 x s8
    # pair sums in 16 bits (vpmaddubsw), an oracle that depends on the machine.
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feed)


@pytest.mark.parametrize("per_channel,activations", [(True, "QInt8"), (False, "QInt8"), (True, "QUInt8")])
def test_small_qdq_conv_chain(tmp_path, per_channel, activations):
    from test_compare_precision import _float_model

    rng = np.random.default_rng(4)
    onnx.save(_float_model(rng), tmp_path / "f.onnx")
    cal = rng.standard_normal((8, 1, 3, 16, 16)).astype(np.float32)
    q = _quantise(tmp_path / "f.onnx", tmp_path / "q.onnx", "x", cal, per_channel,
                  getattr(quant.QuantType, activations))
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op_type for n in q.graph.node}
    zp = onnx.numpy_helper.to_array(next(t for t in q.graph.initializer if t.name == "r0_zero_point"))
    assert zp.dtype == (np.uint8 if activations == "QUInt8" else np.int8)  # uint8: moved to int8 by -128
    report = {}
    exe = tilecore.compile(q, report=report)
    assert report["host_steps"] == 0  # Q and DQ on the npu
    assert report["qdq"]["folded"] == ["conv0", "conv1", "conv2", "conv3"] and not report["qdq"]["kept"]
    x = {"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
    ours = list(exe.run(x).values())[0]
    ref = _ort(q, x)[0]
    assert metrics(ours, ref)["cosine"] >= 0.999
    out_scale = float(onnx.numpy_helper.to_array(next(t for t in q.graph.initializer if t.name == "r3_scale")))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=out_scale * 1.001)  # at most one step off


@pytest.mark.npu
def test_folding_refuses_what_it_cannot_express(tmp_path, capsys):
    # a weight DequantizeLinear with a non-zero zero point is not the symmetric int8 form
    from test_compare_precision import _float_model

    rng = np.random.default_rng(5)
    onnx.save(_float_model(rng), tmp_path / "f.onnx")
    q = _quantise(tmp_path / "f.onnx", tmp_path / "q.onnx", "x", rng.standard_normal((4, 1, 3, 16, 16))
                  .astype(np.float32))
    for t in q.graph.initializer:
        if t.name == "w1_zero_point":
            z = onnx.numpy_helper.to_array(t).copy()
            z[0] = 1
            t.CopyFrom(onnx.numpy_helper.from_array(z, t.name))
    from tilecore import cli

    onnx.save(q, tmp_path / "q2.onnx")
    assert cli.main(["compile", str(tmp_path / "q2.onnx"), "-o", str(tmp_path / "q2.tcx"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "3 matrix node(s) in int8" in out and "kept in f32: conv1 (Conv): weights with a non-zero zero point" in out
    report = {}
    exe = tilecore.compile(q, report=report)
    assert "conv1" not in report["qdq"]["folded"]
    assert report["qdq"]["kept"] == [{"node": "conv1", "op_type": "Conv", "reason": "weights with a non-zero zero point"}]
    x = {"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
    assert metrics(list(exe.run(x).values())[0], _ort(q, x)[0])["cosine"] >= 0.999  # conv1 in f32, still right


def test_resnet18_qdq_matches_onnxruntime(tmp_path):
    from test_driver import _resnet18_runs

    why = _resnet18_runs()
    if why:
        pytest.skip(why)
    from tilecore import zoo

    try:
        path = zoo.export("resnet18")
    except zoo.ZooError as e:
        pytest.skip(str(e))
    cal = zoo.sample_inputs("resnet18", 16, seed=1)
    (name,) = cal
    q = _quantise(path, tmp_path / "r18_qdq.onnx", name, cal[name])
    report = {}
    exe = tilecore.compile(q, report=report)
    assert len(report["qdq"]["folded"]) == 21 and not report["qdq"]["kept"]  # 20 Conv and the fc Gemm
    x = {name: zoo.sample_inputs("resnet18", 1, seed=2)[name][0]}
    ours = exe.run(x)["logits"]
    ref = _ort(q, x)[0]
    assert metrics(ours, ref)["cosine"] >= 0.999


def test_matmul_of_two_qdq_activations(tmp_path):
    # attention's scores: Q·Kᵀ of two activations, quantised symmetrically by ORT
    rng = np.random.default_rng(9)
    wq = (rng.standard_normal((32, 32)) * 0.2).astype(np.float32)
    wk = (rng.standard_normal((32, 32)) * 0.2).astype(np.float32)
    from onnx import TensorProto, helper, numpy_helper

    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "wq"], ["q"], name="proj_q"),
         helper.make_node("MatMul", ["x", "wk"], ["k"], name="proj_k"),
         helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[1, 0]),
         helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores")],
        "attn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [16, 16])],
        [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(wk, "wk")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "f.onnx")
    quant.quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"),
                          _Reader("x", rng.standard_normal((8, 16, 32)).astype(np.float32)),
                          quant_format=quant.QuantFormat.QDQ, activation_type=quant.QuantType.QInt8,
                          weight_type=quant.QuantType.QInt8, extra_options={"ActivationSymmetric": True})
    q = onnx.load(tmp_path / "q.onnx")
    report = {}
    exe = tilecore.compile(q, report=report)
    assert "scores" in report["qdq"]["folded"] and {"proj_q", "proj_k"} <= set(report["qdq"]["folded"])
    x = {"x": rng.standard_normal((16, 32)).astype(np.float32)}
    assert metrics(list(exe.run(x).values())[0], _ort(q, x)[0])["cosine"] >= 0.999
