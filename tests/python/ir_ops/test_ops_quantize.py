"""tests/python/ir_ops/test_ops_quantize.py — quantisation ops: node tests plus numpy checks of
rounding, saturation and per-axis parameters."""
import numpy as np
import pytest

from ir_ops_cases import check_ops
from tilecore.ir.ops import OpError, get_op

QUANT = set("""QuantizeLinear DequantizeLinear DynamicQuantizeLinear MatMulInteger ConvInteger QLinearMatMul
QLinearConv""".split())


def test_node_cases():
    passed, failures = check_ops(QUANT)
    assert not failures, "\n".join(failures)
    assert passed > 20


def run(name, *args, **attrs):
    schema = get_op(name)
    return schema.reference(schema.fill_attrs(attrs), *args)


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -300.0, 300.0], np.float32)
    assert run("QuantizeLinear", x, np.float32(1.0), np.int8(0)).tolist() == [0, 2, 2, -128, 127]
    assert run("QuantizeLinear", x, np.float32(1.0)).dtype == np.uint8
    per_axis = run("QuantizeLinear", np.ones((2, 2), np.float32), np.array([1.0, 0.5], np.float32),
                   np.array([0, 1], np.uint8), axis=1)
    assert per_axis.tolist() == [[1, 3], [1, 3]]
    with pytest.raises(OpError, match="per-axis scale"):
        run("QuantizeLinear", np.ones((2, 3), np.float32), np.array([1.0, 0.5], np.float32), axis=1)


def test_integer_kernels_against_numpy():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 255, (3, 4), dtype=np.uint8)
    b = rng.integers(-128, 127, (4, 2), dtype=np.int8)
    got = run("MatMulInteger", a, b, np.uint8(10), np.int8(-3))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, (a.astype(np.int64) - 10) @ (b.astype(np.int64) + 3))
    x = rng.integers(0, 255, (1, 2, 5, 5), dtype=np.uint8)
    w = rng.integers(0, 255, (3, 2, 3, 3), dtype=np.uint8)
    y = run("ConvInteger", x, w, np.uint8(1), None, pads=[1, 1, 1, 1])
    ref = np.zeros((1, 3, 5, 5), np.int64)
    xp = np.pad(x.astype(np.int64) - 1, [(0, 0), (0, 0), (1, 1), (1, 1)])
    for m in range(3):
        for i in range(5):
            for j in range(5):
                ref[0, m, i, j] = (xp[0, :, i:i + 3, j:j + 3] * w[m].astype(np.int64)).sum()
    np.testing.assert_array_equal(y, ref)
