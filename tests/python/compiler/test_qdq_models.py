"""QDQ models as ONNX Runtime's quantiser writes them (quantize_static, QDQ format,
per-channel int8 weights, calibrated on seeded samples) compile and match ONNX Runtime's
run of the same quantised model: a small Conv chain and the zoo's ResNet-18."""
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


def _quantise(src, dst, name, samples, per_channel=True):
    quant.quantize_static(str(src), str(dst), _Reader(name, samples), quant_format=quant.QuantFormat.QDQ,
                          per_channel=per_channel, activation_type=quant.QuantType.QInt8,
                          weight_type=quant.QuantType.QInt8)
    return onnx.load(dst)


def _ort(model, feed):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)


@pytest.mark.parametrize("per_channel", [True, False])
def test_small_qdq_conv_chain(tmp_path, per_channel):
    from test_compare_precision import _float_model

    rng = np.random.default_rng(4)
    onnx.save(_float_model(rng), tmp_path / "f.onnx")
    cal = rng.standard_normal((8, 1, 3, 16, 16)).astype(np.float32)
    q = _quantise(tmp_path / "f.onnx", tmp_path / "q.onnx", "x", cal, per_channel)
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op_type for n in q.graph.node}
    report = {}
    exe = tilecore.compile(q, report=report)
    assert report["host_steps"] == 0  # Q and DQ on the npu
    x = {"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
    ours = list(exe.run(x).values())[0]
    ref = _ort(q, x)[0]
    assert metrics(ours, ref)["cosine"] >= 0.999


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
    exe = tilecore.compile(q)
    x = {name: zoo.sample_inputs("resnet18", 1, seed=2)[name][0]}
    ours = exe.run(x)["logits"]
    ref = _ort(q, x)[0]
    assert metrics(ours, ref)["cosine"] >= 0.999
