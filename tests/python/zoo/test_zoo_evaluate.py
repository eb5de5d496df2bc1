"""tests/python/zoo/test_zoo_evaluate.py — every zoo model computed by tilecore and
compared with ONNX Runtime (the oracle): cosine >= 0.99999 on seeded inputs.

test_op_library_runs_the_model: the nodes of the exported file run in order with the
op library's own reference implementations (``tilecore.ir.ops``), so every operator
the zoo uses is checked at model scale, apart from the importer.

test_canonicalisation_counts and test_imported_and_canonicalised_model_evaluates_like_onnx_runtime:
``tilecore.frontend.from_onnx``, ``transform.CanonicalizeGraph`` with its rewrite counts
asserted per model, and ``tilecore.frontend.evaluate`` of the imported and of the
canonical graph.

Fast by default (ResNet-18, the BERT layer, the YOLO-like detector); ResNet-50 and
MobileNetV2 too when TILECORE_ZOO_ALL=1.
"""
import os

import numpy as np
import pytest

zoo = pytest.importorskip("tilecore.zoo")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("torch")
ops = pytest.importorskip("tilecore.ir.ops")
from onnx import helper, numpy_helper  # noqa: E402

ALL = os.environ.get("TILECORE_ZOO_ALL") == "1"
big = pytest.mark.skipif(not ALL, reason="large model: set TILECORE_ZOO_ALL=1")
MODELS = ["resnet18", "bert_layer", "yolo_like"] + [
    pytest.param(n, marks=big) for n in ("resnet50", "mobilenet_v2")]
MIN_COSINE = 0.99999


def cosine(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _attr(a):
    if a.type == onnx.AttributeProto.TENSOR:
        return numpy_helper.to_array(a.t)
    value = helper.get_attribute_value(a)
    return value.decode() if isinstance(value, bytes) else value


def run_op_library(model, feed):
    """The graph's nodes in file order, each by its registered reference implementation."""
    opset = {o.domain: o.version for o in model.opset_import}.get("", 0)
    env = dict(feed)
    env.update({t.name: numpy_helper.to_array(t) for t in model.graph.initializer})
    for node in model.graph.node:
        schema = ops.get_op(node.op_type, node.domain)
        assert schema is not None, f"{node.op_type} ({node.name}) is not registered"
        attrs = {a.name: _attr(a) for a in node.attribute}
        attrs["_opset"] = opset
        result = schema.reference(schema.fill_attrs(attrs, node.name), *[env[n] if n else None for n in node.input])
        for name, value in zip(node.output, result if isinstance(result, tuple) else (result,)):
            env[name] = value
    return {o.name: env[o.name] for o in model.graph.output}


def ort_run(path, feed):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))


@pytest.mark.parametrize("name", MODELS)
def test_op_library_runs_the_model(zoo_export, name):
    path = zoo_export(name)
    model = onnx.load(path)
    feed = {k: v[0] for k, v in zoo.sample_inputs(name, 1, seed=11).items()}
    expected = ort_run(path, feed)
    got = run_op_library(model, feed)
    for out, ref in expected.items():
        assert got[out].shape == ref.shape and got[out].dtype == ref.dtype
        assert cosine(got[out], ref) >= MIN_COSINE, out
        # Relative to the output's range (YOLO's boxes are in pixels, up to ~1500).
        assert np.abs(got[out] - ref).max() <= 1e-3 * max(1.0, np.abs(ref).max())


# ---- through the importer: from_onnx, CanonicalizeGraph, evaluate ----------------------
# What canonicalisation must do to each model, read off the architecture: every
# BatchNorm follows a Conv and folds into it; the classifier's Gemm becomes MatMul + Add;
# the BERT layer's erf GELU is recognised once (its LayerNorm and Softmax are single ONNX
# ops already); each YOLO Conv block's SiLU (Sigmoid + Mul) is recognised, leaving the
# head's 3 decode Sigmoids.
CANONICAL = {
    "resnet18": ({"transform.FoldBatchNorm.folded": 20, "transform.GemmToMatMul.rewritten": 1},
                 {"BatchNormalization": 0, "Gemm": 0, "Conv": 20}),
    "resnet50": ({"transform.FoldBatchNorm.folded": 53, "transform.GemmToMatMul.rewritten": 1},
                 {"BatchNormalization": 0, "Gemm": 0, "Conv": 53}),
    "mobilenet_v2": ({"transform.FoldBatchNorm.folded": 52, "transform.GemmToMatMul.rewritten": 1},
                     {"BatchNormalization": 0, "Gemm": 0, "Conv": 52}),
    "bert_layer": ({"transform.RecognizeActivations.gelu_erf": 1},
                   {"Erf": 0, "LayerNormalization": 2, "Softmax": 1, "MatMul": 8}),
    "yolo_like": ({"transform.FoldBatchNorm.folded": 57, "transform.RecognizeActivations.silu": 57},
                  {"BatchNormalization": 0, "Sigmoid": 3, "Conv": 60}),
}


def _frontend():
    fe = pytest.importorskip("tilecore.frontend")
    if not hasattr(fe, "from_onnx") or not hasattr(fe, "evaluate"):
        pytest.skip("tilecore.frontend has no importer yet")
    from tilecore import transform
    if not hasattr(transform, "CanonicalizeGraph"):
        pytest.skip("transform.CanonicalizeGraph is not there yet")
    return fe, transform


def graph_op_counts(graph):
    counts = {}
    for node in graph.nodes:
        counts[str(node.op_type)] = counts.get(str(node.op_type), 0) + 1
    return counts


def _import_and_canonicalise(zoo_export, name):
    fe, transform = _frontend()
    graph = fe.from_onnx(zoo_export(name))
    with transform.PassContext(opt_level=2) as ctx:
        canonical = transform.CanonicalizeGraph()(graph)
    return fe, graph, canonical, {str(k): int(v) for k, v in dict(ctx.stats).items()}


@pytest.mark.parametrize("name", MODELS)
def test_canonicalisation_counts(zoo_export, name):
    _, _, canonical, stats = _import_and_canonicalise(zoo_export, name)
    counters, ops_after = CANONICAL[name]
    for key, count in counters.items():
        assert stats.get(key, 0) == count, (key, stats)
    after = graph_op_counts(canonical)
    for op, count in ops_after.items():
        assert after.get(op, 0) == count, (op, after)


@pytest.mark.parametrize("name", ["resnet18", "bert_layer", "yolo_like"] + MODELS[3:])
def test_imported_and_canonicalised_model_evaluates_like_onnx_runtime(zoo_export, name):
    fe, graph, canonical, _ = _import_and_canonicalise(zoo_export, name)
    feed = {k: v[0] for k, v in zoo.sample_inputs(name, 1, seed=12).items()}
    expected = ort_run(zoo_export(name), feed)
    for g in (graph, canonical):
        got = fe.evaluate(g, feed)
        for out, ref in expected.items():
            assert got[out].shape == ref.shape
            assert cosine(got[out], ref) >= MIN_COSINE, out
