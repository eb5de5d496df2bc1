"""TfIdfVectorizer on the host (src/compiler/host_tfidf.cc): n-gram counts of integer tokens
with skips, min and max gram lengths, TF, IDF and TFIDF weighting, [C] and [N, C] inputs in
int32 and int64, compiled from the model's bytes.

Compared with ONNX Runtime, exactly, and with ONNX's reference (onnx.reference.ReferenceEvaluator)
where it computes what the operator's text says: it weighs output element i by weights[i] where
the text (and ONNX Runtime since 1.32) weighs n-gram i by weights[i], which differ when
ngram_indexes is not the identity, and it fails on IDF and TFIDF without weights (it takes the
length of the absent list). Its TFIDF multiplies count and weight once where ONNX Runtime and
tilecore add the weight per occurrence in float32: equal to the last bit."""
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import tilecore
from tilecore import compiler

ort = pytest.importorskip("onnxruntime")

DTYPES = {np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}
# the pool of the ONNX node tests: unigrams 2 3 5 4, bigrams (5 6) (7 8) (6 7)
POOL = dict(ngram_counts=[0, 4], ngram_indexes=list(range(7)), pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7])


def model(shape, dtype, **attrs):
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    width = max(attrs["ngram_indexes"]) + 1
    out = [width] if len(shape) == 1 else [shape[0], width]
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", DTYPES[dtype], list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])


def check(m, xs, onnxruntime=True):
    """Compiles `m` once and runs it on each of `xs`, against the oracles."""
    attrs = {a.name: helper.get_attribute_value(a) for a in m.graph.node[0].attribute}
    mode, weights = attrs["mode"].decode(), attrs.get("weights")
    identity = attrs["ngram_indexes"] == list(range(len(attrs["ngram_indexes"])))
    reference = mode == "TF" or (weights and identity)
    rep = {}
    exe = tilecore.compile(m.SerializeToString(), report=rep)
    assert [p["where"] for p in rep["placement"]] == ["host"], rep["placement"]
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]) if onnxruntime else None
    ref = ReferenceEvaluator(m) if reference else None
    for x in xs:
        got = exe.run({"x": x})["y"]
        assert got.dtype == np.float32
        if sess:
            np.testing.assert_array_equal(got, sess.run(None, {"x": x})[0], err_msg=f"onnxruntime: x = {x.tolist()}")
        if ref:
            np.testing.assert_allclose(got, ref.run(None, {"x": x})[0], rtol=2e-7 if mode == "TFIDF" else 0,
                                       err_msg=f"reference: x = {x.tolist()}")
        assert sess or ref


CASES = [
    # mode, min, max, skip, extra attributes
    ("TF", 1, 1, 0, {}),
    ("TF", 2, 2, 0, {}),
    ("TF", 1, 2, 3, {}),
    ("TF", 2, 2, 5, {}),
    ("IDF", 1, 2, 2, {}),
    ("IDF", 1, 2, 2, dict(weights=[0.5, 1.5, 2.25, 3.0, 0.125, 7.0, 0.1])),
    ("TFIDF", 1, 2, 1, {}),
    ("TFIDF", 1, 2, 4, dict(weights=[0.5, 1.5, 2.25, 3.0, 0.125, 7.0, 0.1])),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}..{c[2]}-skip{c[3]}{'-w' if c[4] else ''}")
def test_modes_grams_and_skips(case):
    mode, lo, hi, skip, extra = case
    rng = np.random.default_rng(lo * 100 + hi * 10 + skip)
    for shape, dtype in (((12,), np.int32), ((3, 9), np.int64)):
        m = model(shape, dtype, mode=mode, min_gram_length=lo, max_gram_length=hi, max_skip_count=skip,
                  **POOL, **extra)
        xs = [rng.integers(1, 9, shape).astype(dtype) for _ in range(3)]
        check(m, xs)


def test_trigrams_shared_outputs_and_wide_tokens():
    # lengths 1..3 with only 2..3 counted (the unigrams still take their numbers), two n-grams
    # at one output index, tokens beyond int32 and negative ones
    big = 2**40
    attrs = dict(min_gram_length=2, max_gram_length=3, max_skip_count=2,
                 ngram_counts=[0, 3, 9], ngram_indexes=[5, 4, 3, 0, 1, 2, 1, 6, 6],
                 pool_int64s=[1, 2, big, 1, 2, 2, -3, big, 1, 1, 2, -3, big, 1, 1],
                 weights=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, -0.25, 0.5, 1.5])
    rng = np.random.default_rng(3)
    tokens = np.array([1, 2, -3, big], np.int64)
    for mode in ("TF", "IDF", "TFIDF"):  # IDF: an output two n-grams share takes the last one found's weight
        check(model((2, 10), np.int64, mode=mode, **attrs), [tokens[rng.integers(0, 4, (2, 10))] for _ in range(4)])


def test_random_pools():
    # small vocabularies, so that n-grams repeat and overlap, against both oracles
    rng = np.random.default_rng(7)
    for trial in range(4):
        counts, pool, start = [], [], 0
        for n in (1, 2, 3):
            counts.append(start)
            grams = {tuple(rng.integers(0, 4, n).tolist()) for _ in range(5)}
            for g in sorted(grams):
                pool.extend(g)
            start += n * len(grams)
        total = counts[1] + (counts[2] - counts[1]) // 2 + (len(pool) - counts[2]) // 3
        lo = int(rng.integers(1, 3))
        attrs = dict(mode=["TF", "IDF", "TFIDF"][trial % 3], min_gram_length=lo,
                     max_gram_length=int(rng.integers(lo, 4)), max_skip_count=int(rng.integers(0, 4)),
                     ngram_counts=counts, ngram_indexes=rng.permutation(total).tolist(), pool_int64s=pool)
        if trial % 2:
            attrs["weights"] = rng.uniform(0.1, 3, total).astype(np.float32).tolist()
        shape, dtype = ((15,), np.int32) if trial < 2 else ((2, 11), np.int64)
        check(model(shape, dtype, **attrs), [rng.integers(0, 4, shape).astype(dtype) for _ in range(3)])


def test_a_repeated_ngram_counts_at_its_last_entry():
    # as the reference counts it (ONNX Runtime refuses a repeated n-gram)
    attrs = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0, ngram_counts=[0, 2],
                 ngram_indexes=[0, 1, 2, 3], pool_int64s=[4, 4, 4, 5, 4, 5])
    check(model((6,), np.int32, **attrs), [np.array([4, 5, 4, 5, 5, 4], np.int32)], onnxruntime=False)


def test_refusals_name_the_reason():
    X = compiler.TensorSpec((2, 5), "int64")
    strings = dict(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0, ngram_counts=[0],
                   ngram_indexes=[0, 1], pool_strings=["a", "b"])
    assert "string n-grams (pool_strings)" in compiler.HasHostKernel("TfIdfVectorizer", strings, [X])
    bad = dict(strings, pool_strings=None, pool_int64s=[1, 2], mode="BM25")
    assert "mode `BM25`" in compiler.HasHostKernel("TfIdfVectorizer", bad, [X])
    bad = dict(bad, mode="TF", min_gram_length=3)
    assert "min_gram_length 3 and max_gram_length 1" in compiler.HasHostKernel("TfIdfVectorizer", bad, [X])
    bad = dict(bad, min_gram_length=1, ngram_indexes=[0])
    assert "more n-grams than ngram_indexes" in compiler.HasHostKernel("TfIdfVectorizer", bad, [X])
    floats = compiler.TensorSpec((2, 5), "float32")
    assert "int32 and int64 tokens" in compiler.HasHostKernel("TfIdfVectorizer", dict(bad, ngram_indexes=[0, 1]),
                                                              [floats])
    with pytest.raises(ValueError, match="TfIdfVectorizer.*mode `BM25`"):
        compiler.LowerHostOp("TfIdfVectorizer", dict(bad, mode="BM25"), [X], [compiler.TensorSpec((2, 2), "float32")])
