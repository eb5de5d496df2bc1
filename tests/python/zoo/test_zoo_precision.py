"""tests/python/zoo/test_zoo_precision.py — accuracy gates of the precision modes
(docs/precision.md) on zoo models, against ONNX Runtime in f32: the BERT layer in int8
(calibrated by min/max on 16 seeded samples, evaluated on 4 others) and ResNet-18 in f16
and bf16. The full sweep (every model, 8 evaluation samples) is
``benchmarks/model_zoo.py --precision f16,bf16,int8``.
"""
import pytest

zoo = pytest.importorskip("tilecore.zoo")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("torch")

import tilecore  # noqa: E402 - after the skips, so a machine without them skips cleanly
from tilecore.compiler.compare import metrics  # noqa: E402


def lowest_cosine(exe, path, samples):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    n = len(next(iter(samples.values())))
    worst = 1.0
    for i in range(n):
        feed = {k: v[i] for k, v in samples.items()}
        got, want = exe.run(feed), sess.run(names, feed)
        worst = min([worst] + [metrics(got[k], w)["cosine"] for k, w in zip(names, want)])
    return worst


def test_bert_layer_int8(zoo_export):
    path = zoo_export("bert_layer")
    rep = {}
    exe = tilecore.compile(path, precision="int8", calib_samples=zoo.sample_inputs("bert_layer", 16, seed=0),
                           report=rep)
    assert len(rep["precision"]["assigned"]) == 8 and set(rep["precision"]["assigned"].values()) == {"int8"}
    assert lowest_cosine(exe, path, zoo.sample_inputs("bert_layer", 4, seed=1)) >= 0.99
    # the MACs the utilisation is counted from, whatever was fused: by hand, 128 rows through
    # the Q, K, V, output and two FFN projections, and 4 heads' scores and context
    dense = 128 * (256 * 768 + 256 * 256 + 2 * 256 * 1024)
    assert exe.stats()["macs"] == dense + 2 * 4 * 128 * 128 * 64


def test_bert_layer_int8_sibling_projections_keep_their_bits(zoo_export, monkeypatch):
    """The query, key and value projections read one int8 A: they become one Gemm
    (compiler/sibling_gemms.py) whose outputs are the three projections' bits exactly, as
    compiled apart; and the layer still matches ONNX Runtime."""
    from tilecore.compiler import sibling_gemms

    path = zoo_export("bert_layer")
    calib = zoo.sample_inputs("bert_layer", 16, seed=0)
    feed = {k: v[0] for k, v in zoo.sample_inputs("bert_layer", 1, seed=1).items()}
    rep = {}
    exe = tilecore.compile(path, precision="int8", calib_samples=calib, report=rep)
    fused = [e for e in rep["fused"] if "split" in e]
    assert [(e["node"], e["fused"], e["split"]) for e in fused] == [
        ("/attention/self/query/MatMul", ["/attention/self/key/MatMul", "/attention/self/value/MatMul"],
         [256, 256, 256])]
    monkeypatch.setattr(sibling_gemms, "fuse", lambda *a, **k: [])
    apart = tilecore.compile(path, precision="int8", calib_samples=calib)
    assert exe.run(feed)["output"].tobytes() == apart.run(feed)["output"].tobytes()
    assert lowest_cosine(exe, path, zoo.sample_inputs("bert_layer", 2, seed=1)) >= 0.99


@pytest.mark.parametrize("precision", ["f16", "bf16"])
def test_resnet18_narrow(zoo_export, precision):
    path = zoo_export("resnet18")
    exe = tilecore.compile(path, precision=precision)
    assert lowest_cosine(exe, path, zoo.sample_inputs("resnet18", 2, seed=1)) >= 0.999
