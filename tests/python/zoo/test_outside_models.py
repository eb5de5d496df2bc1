"""tests/python/zoo/test_outside_models.py — a seeded slice of the outside model corpus
(tilecore.zoo.outside; benchmarks/model_corpus.py sweeps all of it): one model each from
torchvision, timm and transformers, and transformers' Llama through the
torch.export-based exporter, compiled with default options in f32, run on the
simulator and compared with ONNX Runtime on the same seeded inputs.

The packages come from scripts/bootstrap.sh; a test skips only on a machine without them.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("torch")

from tilecore.zoo import outside  # noqa: E402

# (model, the package that defines it): the smallest of each source that passes in f32
SLICE = [
    ("shufflenet_v2_x1_0", "torchvision"),
    ("timm/lcnet_050", "timm"),
    ("hf/bert", "transformers"),
    ("hf/llama", "transformers"),  # the classic exporter refuses it (aten::diff): dynamo
]


def _need(package):
    if importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed (scripts/bootstrap.sh installs it)")
    outside.import_torchvision()  # before timm and transformers, which import it
    if package != "torchvision":
        pytest.importorskip(package)


def test_selection_and_inputs():
    everything = outside.names()
    assert len(everything) == len(set(everything))
    for source in outside.SOURCES:
        picked = outside.names(source)
        assert picked and all(outside.info(n)["source"] == source for n in picked)
    assert outside.names("hf/bert,Swin")[0] == "hf/bert"
    assert {outside.info(n)["family"] for n in outside.names("Swin")} == {"Swin"}
    with pytest.raises(outside.ZooError, match="names no model"):
        outside.names("no_such_model")
    # sample i depends on (name, seed, i) only; token ids are int64 within the vocabulary
    a = outside.sample_inputs("hf/bert", 3, 0)["input_ids"]
    b = outside.sample_inputs("hf/bert", 1, 0)["input_ids"]
    assert a.dtype == np.int64 and a.shape == (3, 1, 32) and 0 <= a.min() and a.max() < 1000
    np.testing.assert_array_equal(a[:1], b)
    img = outside.sample_inputs("mobilenet_v3_small", 2, 1)["input"]
    assert img.dtype == np.float32 and img.shape == (2, 1, 3, 224, 224)


@pytest.mark.parametrize("name, package", SLICE, ids=[s[0] for s in SLICE])
def test_f32_matches_onnxruntime(zoo_cache, name, package):
    import tilecore
    from tilecore.compiler.compare import metrics

    _need(package)
    if name == "hf/llama":
        pytest.importorskip("onnxscript")
    path, feeds = outside.build(name)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    assert names == outside.info(name)["outputs"]
    want = sess.run(names, feeds)
    got = tilecore.compile(path).run(feeds)
    for n, w in zip(names, want):
        assert metrics(got[n], w)["cosine"] >= 0.9999, n


def test_export_is_deterministic(zoo_cache):
    _need("transformers")
    first, _ = outside.build("hf/bert")
    with open(first, "rb") as f:
        data = f.read()
    again, _ = outside.build("hf/bert", path=zoo_cache / "again.onnx", cache=False)
    with open(again, "rb") as f:
        assert f.read() == data
