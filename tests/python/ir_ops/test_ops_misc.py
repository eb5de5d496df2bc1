"""tests/python/ir_ops/test_ops_misc.py — strings, ai.onnx.ml, training optimisers, signal, Det/EyeLike,
Bernoulli and ImageDecoder: node tests plus checks of edge cases."""
import numpy as np
import pytest

from ir_ops_cases import check_ops
from tilecore.ir.ops import OpError, TensorInfo, get_op

MISC = set("""StringConcat StringNormalizer StringSplit RegexFullMatch TfIdfVectorizer ArrayFeatureExtractor Binarizer
LabelEncoder TreeEnsemble Adagrad Adam Momentum Bernoulli BlackmanWindow HammingWindow HannWindow DFT STFT
MelWeightMatrix Det EyeLike ImageDecoder""".split())


def test_node_cases():
    passed, failures = check_ops(MISC)
    assert not failures, "\n".join(failures)
    assert passed > 20


def run(name, *args, domain="", **attrs):
    schema = get_op(name, domain)
    return schema.reference(schema.fill_attrs(attrs), *args)


def test_string_split_default_delimiter_and_inference():
    y, z = run("StringSplit", np.array(["  a  b ", "c"], dtype=object))
    assert y.tolist() == [["a", "b"], ["c", ""]] and z.tolist() == [2, 1]
    schema = get_op("StringSplit")
    out = schema.infer(schema.fill_attrs({}), [TensorInfo(("n",), np.dtype(object))])
    assert out[0].shape == ("n", None) and out[1].dtype == np.int64
    with pytest.raises(OpError, match="pattern"):
        run("RegexFullMatch", np.array(["a"], dtype=object), pattern="(")


def test_dft_roundtrip_and_det():
    x = np.random.default_rng(2).standard_normal((1, 8, 1)).astype(np.float32)
    spec = run("DFT", x, None, np.int64(1))
    back = run("DFT", spec, None, np.int64(1), inverse=1)
    np.testing.assert_allclose(back[..., 0], x[..., 0], atol=1e-5)
    np.testing.assert_allclose(back[..., 1], 0, atol=1e-5)
    m = np.array([[[2.0, 1.0], [1.0, 3.0]]], np.float32)
    assert run("Det", m).tolist() == pytest.approx([5.0])
    with pytest.raises(OpError, match="square"):
        run("Det", np.zeros((2, 3), np.float32))


def test_bernoulli_shape_dtype_and_seed():
    p = np.full((3, 4), 0.5, np.float32)
    a = run("Bernoulli", p, seed=1.0, dtype=7)
    assert a.shape == (3, 4) and a.dtype == np.int64 and set(np.unique(a)) <= {0, 1}
    np.testing.assert_array_equal(a, run("Bernoulli", p, seed=1.0, dtype=7))


def test_image_decoder_names_bad_data():
    pytest.importorskip("PIL")
    with pytest.raises(OpError, match="not a decodable image"):
        run("ImageDecoder", np.frombuffer(b"not an image", np.uint8))
