"""tests/python/ir_ops/test_ops_nn_conv.py — convolutions and pooling: the ONNX node
tests of their op types, and hand-written checks against loop-nest references for
what those tests do not reach (groups with dilation and asymmetric pads, 1-D and
3-D, the transposed convolution's scatter, ceil_mode windows, symbolic shapes)."""
import itertools

import numpy as np
import pytest

from node_cases_nn import parametrize, run_case
from tilecore.ir.ops import OpError, TensorInfo, get_op

OPS = {"Conv", "ConvTranspose", "CausalConvWithState", "AveragePool", "MaxPool", "MaxUnpool", "LpPool",
       "GlobalAveragePool", "GlobalMaxPool", "DeformConv", "Col2Im"}


@parametrize(OPS)
def test_node_case(case):
    run_case(case)


def call(op, attrs, *inputs):
    schema = get_op(op)
    return schema.reference(schema.fill_attrs(dict(attrs, _opset=22)), *inputs)


def infer(op, attrs, *inputs):
    schema = get_op(op)
    return schema.infer(schema.fill_attrs(dict(attrs, _opset=22)), list(inputs))


def conv_loops(x, w, b, strides, dilations, pads, group):
    """Conv by its definition: one multiply-add per output, input channel and tap."""
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    k = x.ndim - 2
    kernel = w.shape[2:]
    outs = [(x.shape[2 + i] + pads[i] + pads[k + i] - (kernel[i] - 1) * dilations[i] - 1) // strides[i] + 1
            for i in range(k)]
    y = np.zeros((n, m, *outs))
    for bi, mi in itertools.product(range(n), range(m)):
        g = mi // (m // group)
        for o in itertools.product(*[range(v) for v in outs]):
            acc = 0.0 if b is None else float(b[mi])
            for ci in range(cg):
                for t in itertools.product(*[range(v) for v in kernel]):
                    pos = [o[i] * strides[i] + t[i] * dilations[i] - pads[i] for i in range(k)]
                    if all(0 <= p < x.shape[2 + i] for i, p in enumerate(pos)):
                        acc += float(x[(bi, g * cg + ci) + tuple(pos)]) * float(w[(mi, ci) + t])
            y[(bi, mi) + o] = acc
    return y


@pytest.mark.parametrize("spatial,kernel,strides,dilations,pads,group", [
    ((9, 8), (3, 2), (2, 1), (2, 3), (1, 0, 2, 1), 2),
    ((11,), (3,), (3,), (2,), (2, 1), 3),
    ((5, 6, 4), (2, 3, 2), (1, 2, 1), (2, 1, 1), (0, 1, 1, 1, 0, 2), 2),
])
def test_conv_matches_loop_nest(spatial, kernel, strides, dilations, pads, group):
    rng = np.random.default_rng(0)
    c, m = 2 * group, 2 * group
    x = rng.standard_normal((2, c, *spatial)).astype(np.float32)
    w = rng.standard_normal((m, c // group, *kernel)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    attrs = dict(strides=list(strides), dilations=list(dilations), pads=list(pads), group=group)
    got = call("Conv", attrs, x, w, b)
    want = conv_loops(x, w, b, strides, dilations, pads, group)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    (info,) = infer("Conv", attrs, TensorInfo(x.shape, x.dtype), TensorInfo(w.shape, w.dtype), None)
    assert info.shape == got.shape


@pytest.mark.parametrize("spatial,kernel,strides,dilations,pads,c", [
    ((12, 12), (7, 7), (1, 1), (1, 1), (3, 3, 3, 3), 6),      # ConvNeXt's
    ((4, 3), (7, 7), (1, 1), (1, 1), (3, 3, 3, 3), 40),       # its last stage's (channels innermost)
    ((9, 8), (3, 2), (2, 1), (2, 3), (1, 0, 2, 1), 6),
    ((11,), (3,), (3,), (2,), (2, 1), 6),
    ((7,), (3,), (1,), (3,), (0, 2), 5),                       # unit strides, dilated
    ((7,), (3,), (1,), (2,), (3, 0), 30),
    ((5, 6, 4), (2, 3, 2), (1, 2, 1), (2, 1, 1), (0, 1, 1, 1, 0, 2), 6),
    ((4, 5, 3), (2, 3, 2), (1, 1, 1), (2, 1, 1), (1, 1, 0, 0, 1, 2), 6),
    ((3, 4, 3), (2, 3, 2), (1, 1, 1), (1, 1, 1), (1, 1, 0, 0, 1, 2), 64),
])
def test_depthwise_conv_matches_loop_nest(spatial, kernel, strides, dilations, pads, c):
    """A Conv with one input channel per output channel (its own path: a window per tap;
    with unit strides, windows of the flattened positions, channels innermost when many)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, c, *spatial)).astype(np.float32)
    w = rng.standard_normal((c, 1, *kernel)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    attrs = dict(strides=list(strides), dilations=list(dilations), pads=list(pads), group=c)
    got = call("Conv", attrs, x, w, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, conv_loops(x, w, b, strides, dilations, pads, c), rtol=1e-5, atol=1e-5)


def test_conv_float16_accumulates_in_float32():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 64, 3, 3)).astype(np.float16)
    w = rng.standard_normal((1, 64, 3, 3)).astype(np.float16)
    got = call("Conv", {}, x, w)
    want = conv_loops(x, w, None, (1, 1), (1, 1), (0, 0, 0, 0), 1)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_conv_same_padding_puts_the_odd_pad_where_onnx_says(auto_pad):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 1, 6, 6)).astype(np.float32)
    w = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    got = call("Conv", dict(auto_pad=auto_pad), x, w)
    # total pad 3 per dim: SAME_UPPER puts 2 at the end, SAME_LOWER 2 at the beginning
    pads = (1, 1, 2, 2) if auto_pad == "SAME_UPPER" else (2, 2, 1, 1)
    np.testing.assert_allclose(got, conv_loops(x, w, None, (1, 1), (1, 1), pads, 1), rtol=1e-5, atol=1e-5)


def conv_transpose_loops(x, w, strides, dilations, pads, group, out_sizes):
    n, c = x.shape[:2]
    mg = w.shape[1]
    k = x.ndim - 2
    y = np.zeros((n, mg * group, *out_sizes))
    for bi, ci in itertools.product(range(n), range(c)):
        g = ci // (c // group)
        for i in itertools.product(*[range(v) for v in x.shape[2:]]):
            for mi in range(mg):
                for t in itertools.product(*[range(v) for v in w.shape[2:]]):
                    pos = [i[d] * strides[d] + t[d] * dilations[d] - pads[d] for d in range(k)]
                    if all(0 <= p < out_sizes[d] for d, p in enumerate(pos)):
                        y[(bi, g * mg + mi) + tuple(pos)] += float(x[(bi, ci) + i]) * float(w[(ci, mi) + t])
    return y


def test_conv_transpose_matches_scatter_definition():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    attrs = dict(strides=[2, 3], dilations=[1, 2], pads=[1, 0, 0, 1], output_padding=[1, 0], group=2)
    got = call("ConvTranspose", attrs, x, w)
    # out = s*(in-1) + output_padding + (k-1)*d + 1 - pads
    outs = (2 * 2 + 1 + 3 - 1, 3 * 3 + 0 + 3 - 1)
    assert got.shape == (1, 6) + outs
    np.testing.assert_allclose(got, conv_transpose_loops(x, w, (2, 3), (1, 2), (1, 0), 2, outs), rtol=1e-5, atol=1e-5)
    (info,) = infer("ConvTranspose", attrs, TensorInfo(x.shape, x.dtype), TensorInfo(w.shape, w.dtype))
    assert info.shape == got.shape


def test_max_and_average_pool_ceil_mode():
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    attrs = dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    y, idx = call("MaxPool", attrs, x)
    # windows start at 0, 2, 4: the last holds one row/column of the input
    assert y.shape == (1, 1, 3, 3)
    np.testing.assert_array_equal(y[0, 0], [[6, 8, 9], [16, 18, 19], [21, 23, 24]])
    np.testing.assert_array_equal(idx[0, 0], [[6, 8, 9], [16, 18, 19], [21, 23, 24]])
    for include in (0, 1):
        avg = call("AveragePool", dict(attrs, count_include_pad=include), x)
        # the overhang of the partial windows never counts
        assert avg[0, 0, 2, 2] == 24.0
        assert avg[0, 0, 0, 2] == pytest.approx((4 + 9) / 2)
    floor = call("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2]), x)
    assert floor.shape == (1, 1, 2, 2)


def test_max_pool_of_a_node_without_indices_gives_the_values_only():
    # (a node with one output: the evaluator passes _num_outputs 1 and the indices, which
    # calibration never reads, are not computed)
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)[:, :, ::-1]
    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = call("MaxPool", dict(attrs, _num_outputs=1), x)
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y[0, 0], [[21, 23, 24], [16, 18, 19], [6, 8, 9]])  # (rows reversed)
    np.testing.assert_array_equal(y, call("MaxPool", attrs, x)[0])


def test_average_pool_count_include_pad():
    x = np.ones((1, 1, 3, 3), np.float32)
    attrs = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    assert call("AveragePool", attrs, x)[0, 0, 0, 0] == pytest.approx(1.0)
    assert call("AveragePool", dict(attrs, count_include_pad=1), x)[0, 0, 0, 0] == pytest.approx(4 / 9)


def test_max_pool_indices_storage_order():
    x = np.array([[[[1, 9], [3, 4]]]], np.float32)
    _, row = call("MaxPool", dict(kernel_shape=[2, 2]), x)
    _, col = call("MaxPool", dict(kernel_shape=[2, 2], storage_order=1), x)
    assert row.dtype == np.int64 and int(row.reshape(-1)[0]) == 1
    assert int(col.reshape(-1)[0]) == 2


def test_shape_inference_keeps_symbolic_dims():
    x = TensorInfo(("N", 3, 32, 31), np.dtype(np.float32))
    w = TensorInfo((8, 3, 3, 3), np.dtype(np.float32))
    (y,) = infer("Conv", dict(pads=[1, 1, 1, 1], strides=[2, 2]), x, w)
    assert y.shape == ("N", 8, 16, 16)
    (y,) = infer("Conv", dict(auto_pad="SAME_UPPER", strides=[2, 2]), x, w)
    assert y.shape == ("N", 8, 16, 16)
    (y,) = infer("Conv", {}, TensorInfo(("N", 3, "H", 31), np.dtype(np.float32)), w)
    assert y.shape == ("N", 8, None, 29)
    y, idx = infer("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
                   TensorInfo(("B", 4, 8, 8), np.dtype(np.float32)))
    assert y.shape == ("B", 4, 4, 4) and idx.dtype == np.int64
    (g,) = infer("GlobalAveragePool", {}, TensorInfo(("B", 4, "H", "W"), np.dtype(np.float32)))
    assert g.shape == ("B", 4, 1, 1)


def test_bad_input_is_a_named_error():
    x = TensorInfo((1, 4, 8, 8), np.dtype(np.float32))
    with pytest.raises(OpError, match="Conv: X has 4 channels"):
        infer("Conv", {}, x, TensorInfo((2, 3, 3, 3), np.dtype(np.float32)))
    with pytest.raises(OpError, match="Conv: kernel_shape"):
        infer("Conv", dict(kernel_shape=[3]), x, TensorInfo((2, 4, 3, 3), np.dtype(np.float32)))
    with pytest.raises(OpError, match="auto_pad"):
        infer("Conv", dict(auto_pad="SAME"), x, TensorInfo((2, 4, 3, 3), np.dtype(np.float32)))
    with pytest.raises(OpError, match="MaxPool: .*no output"):
        infer("MaxPool", dict(kernel_shape=[9, 9]), x)
    with pytest.raises(OpError, match="MaxPool needs the attribute 'kernel_shape'"):
        get_op("MaxPool").fill_attrs({})
    with pytest.raises(OpError, match="MaxUnpool"):
        call("MaxUnpool", dict(kernel_shape=[2, 2], strides=[2, 2]), np.ones((1, 1, 1, 1), np.float32),
             np.array([[[[7]]]], np.int64))
