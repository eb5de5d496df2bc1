"""tests/python/ir_ops/test_ops_normalization.py — normalization, Dropout and losses: node tests plus
numpy checks (GroupNorm's per-group scale before opset 21, BatchNorm training statistics)."""
import numpy as np
import pytest

from ir_ops_cases import check_ops
from tilecore.ir.ops import OpError, TensorInfo, get_op

NORM = set("""BatchNormalization InstanceNormalization LayerNormalization GroupNormalization RMSNormalization
LpNormalization MeanVarianceNormalization LRN Dropout""".split())
LOSS = {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}


@pytest.mark.parametrize("family", [NORM, LOSS], ids=["normalization", "loss"])
def test_node_cases(family):
    passed, failures = check_ops(family)
    assert not failures, "\n".join(failures)
    assert passed > 20


def run(name, *args, **attrs):
    schema = get_op(name)
    return schema.reference(schema.fill_attrs(attrs), *args)


def test_group_norm_scale_per_group_before_21():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    scale, bias = np.array([2.0, 3.0], np.float32), np.array([0.5, -1.0], np.float32)
    y = run("GroupNormalization", x, scale, bias, num_groups=2, _opset=18)
    g = x.reshape(2, 2, -1)
    norm = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-5)).reshape(x.shape)
    ref = norm * np.repeat(scale, 2)[None, :, None] + np.repeat(bias, 2)[None, :, None]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(OpError, match="do not split"):
        run("GroupNormalization", x, scale, bias, num_groups=3)


def test_batch_norm_training_mode():
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    ones, zeros = np.ones(2, np.float32), np.zeros(2, np.float32)
    y, rm, rv = run("BatchNormalization", x, ones, zeros, zeros, ones, training_mode=1, momentum=0.5)
    mean = x.transpose(1, 0, 2).reshape(2, -1).mean(1)
    np.testing.assert_allclose(rm, 0.5 * mean, rtol=1e-6)
    np.testing.assert_allclose(y.mean(axis=(0, 2)), 0, atol=1e-5)


def test_layer_norm_outputs_and_inference():
    schema = get_op("LayerNormalization")
    out = schema.infer(schema.fill_attrs({"axis": 1}), [TensorInfo(("n", 4, 5), np.dtype(np.float16)),
                                                        TensorInfo((4, 5), np.dtype(np.float16)), None])
    assert out[0].dtype == np.float16 and out[1].shape == ("n", 1, 1) and out[1].dtype == np.float32


def test_loss_ignore_index_and_reduction():
    logp = np.log(np.array([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]], np.float32))
    target = np.array([0, -1, 1], np.int64)
    loss = run("NegativeLogLikelihoodLoss", logp, target, ignore_index=-1)
    np.testing.assert_allclose(loss, -(np.log(0.5) + np.log(0.8)) / 2, rtol=1e-6)
    none = run("NegativeLogLikelihoodLoss", logp, target, ignore_index=-1, reduction="none")
    assert none[1] == 0 and none.shape == (3,)
    with pytest.raises(OpError, match="outside"):
        run("NegativeLogLikelihoodLoss", logp, np.array([0, 5, 1], np.int64))
