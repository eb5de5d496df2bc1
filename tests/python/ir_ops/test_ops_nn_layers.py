"""tests/python/ir_ops/test_ops_nn_layers.py — attention, recurrent, image,
sequence, control-flow and detection ops: the ONNX node tests of their op types plus
independent numpy checks (plain softmax attention, an Elman RNN loop, resize by
repetition and by hand-computed interpolation, identity sampling grids, round trips,
Loop/Scan with Python bodies, a hand-worked NMS)."""
import numpy as np
import pytest

from node_cases_nn import parametrize, run_case
from tilecore.ir.ops import OpError, SequenceInfo, TensorInfo, get_op

OPS = {"RNN", "LSTM", "GRU", "Attention", "FlexAttention", "LinearAttention", "RotaryEmbedding", "Resize",
       "Upsample", "GridSample", "AffineGrid", "RoiAlign", "CenterCropPad", "DepthToSpace", "SpaceToDepth",
       "If", "Loop", "Scan", "SequenceInsert", "SequenceMap", "SplitToSequence", "SequenceConstruct", "SequenceAt",
       "SequenceEmpty", "SequenceErase", "SequenceLength", "ConcatFromSequence", "OptionalGetElement",
       "OptionalHasElement", "Optional", "NonMaxSuppression"}

F32 = np.dtype(np.float32)


@parametrize(OPS)
def test_node_case(case):
    run_case(case)


def call(op, attrs, *inputs, opset=22, domain=""):
    schema = get_op(op, domain)
    return schema.reference(schema.fill_attrs(dict(attrs, _opset=opset)), *inputs)


def infer(op, attrs, *inputs, opset=22):
    schema = get_op(op)
    return schema.infer(schema.fill_attrs(dict(attrs, _opset=opset)), list(inputs))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_attention_is_softmax_qk_v():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 4, 3, 8)).astype(np.float32)
    k = rng.standard_normal((2, 2, 5, 8)).astype(np.float32)
    v = rng.standard_normal((2, 2, 5, 6)).astype(np.float32)
    y, pk, pv, qk = call("Attention", {}, q, k, v, opset=23)
    kk, vv = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)       # grouped-query heads
    scores = q.astype(np.float64) @ np.swapaxes(kk, -1, -2) / np.sqrt(8)
    np.testing.assert_allclose(y, softmax(scores) @ vv, rtol=1e-5, atol=1e-5)
    causal = np.where(np.arange(5)[None, :] <= np.arange(3)[:, None], 0, -np.inf)
    y, *_ = call("Attention", dict(is_causal=1), q, k, v, opset=23)
    np.testing.assert_allclose(y, softmax(scores + causal) @ vv, rtol=1e-5, atol=1e-5)
    infos = infer("Attention", dict(q_num_heads=4, kv_num_heads=2), TensorInfo(("B", 3, 32), F32),
                  TensorInfo(("B", 5, 16), F32), TensorInfo(("B", 5, 12), F32), None,
                  TensorInfo(("B", 2, 7, 8), F32), TensorInfo(("B", 2, 7, 6), F32))
    assert [i.shape for i in infos] == [("B", 3, 24), ("B", 2, 12, 8), ("B", 2, 12, 6), ("B", 4, 3, 12)]


def test_rnn_matches_elman_loop():
    rng = np.random.default_rng(1)
    seq, batch, inp, hid = 4, 2, 3, 5
    x = rng.standard_normal((seq, batch, inp)).astype(np.float32)
    w = rng.standard_normal((1, hid, inp)).astype(np.float32)
    r = rng.standard_normal((1, hid, hid)).astype(np.float32) * 0.5
    b = rng.standard_normal((1, 2 * hid)).astype(np.float32)
    lens = np.array([4, 2], np.int32)
    y, y_h = call("RNN", dict(hidden_size=hid), x, w, r, b, lens)
    h = np.zeros((batch, hid))
    want = np.zeros((seq, 1, batch, hid))
    for t in range(seq):
        new = np.tanh(x[t] @ w[0].T + h @ r[0].T + b[0, :hid] + b[0, hid:])
        live = (t < lens)[:, None]
        h = np.where(live, new, h)
        want[t, 0] = np.where(live, new, 0)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_h[0], h, rtol=1e-5, atol=1e-5)
    infos = infer("LSTM", dict(hidden_size=hid, direction="bidirectional"), TensorInfo(("S", "B", inp), F32),
                  TensorInfo((2, 4 * hid, inp), F32), TensorInfo((2, 4 * hid, hid), F32))
    assert [i.shape for i in infos] == [("S", 2, "B", hid), (2, "B", hid), (2, "B", hid)]
    with pytest.raises(OpError, match="RNN: activation 'Gelu'"):
        call("RNN", dict(hidden_size=hid, activations=["Gelu"]), x, w, r)


def test_resize_nearest_by_repetition_and_linear_by_hand():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    scales = np.array([1, 1, 2, 3], np.float32)
    got = call("Resize", dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
               x, None, scales)
    np.testing.assert_array_equal(got, np.repeat(np.repeat(x, 2, axis=2), 3, axis=3))
    line = np.array([[[[0.0, 10.0]]]], np.float32)
    got = call("Resize", dict(mode="linear", coordinate_transformation_mode="align_corners"), line, None, None,
               np.array([1, 1, 1, 5]))
    np.testing.assert_allclose(got.reshape(-1), [0, 2.5, 5, 7.5, 10])
    got = call("Resize", dict(mode="linear"), line, None, None, np.array([1, 1, 1, 4]))
    # half_pixel: x_src = (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped at the edges
    np.testing.assert_allclose(got.reshape(-1), [0, 2.5, 7.5, 10])
    (y,) = infer("Resize", dict(keep_aspect_ratio_policy="not_larger", axes=[2, 3]), TensorInfo((1, 3, 20, 10), F32),
                 None, None, TensorInfo((2,), np.dtype(np.int64), np.array([8, 8])))
    assert y.shape == (1, 3, 8, 4)
    (y,) = infer("Resize", {}, TensorInfo(("N", 3, 20, 10), F32), None, TensorInfo((4,), F32))
    assert y.shape == (None, None, None, None)
    with pytest.raises(OpError, match="Resize: needs exactly one of scales and sizes"):
        call("Resize", {}, x, None, scales, np.array([1, 1, 4, 9]))


def test_grid_sample_identity_grid_and_block_round_trips():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (2, 1, 1))
    for align in (0, 1):
        grid = call("AffineGrid", dict(align_corners=align), theta, np.array(x.shape))
        assert grid.shape == (2, 4, 5, 2)
        got = call("GridSample", dict(align_corners=align), x, grid)
        np.testing.assert_allclose(got, x, rtol=1e-5, atol=1e-5)
    y = rng.standard_normal((1, 8, 2, 3)).astype(np.float32)
    for mode in ("DCR", "CRD"):
        up = call("DepthToSpace", dict(blocksize=2, mode=mode), y)
        assert up.shape == (1, 2, 4, 6)
        np.testing.assert_array_equal(call("SpaceToDepth", dict(blocksize=2, mode=mode), up, opset=28), y)
    with pytest.raises(OpError, match="DepthToSpace: 6 channels"):
        infer("DepthToSpace", dict(blocksize=2), TensorInfo((1, 6, 2, 2), F32))


def test_sequences():
    a, b = np.zeros((2, 3), np.float32), np.ones((4, 3), np.float32)
    seq = call("SequenceConstruct", {}, a, b)
    seq = call("SequenceInsert", {}, seq, a, np.array(-1))
    assert [s.shape[0] for s in seq] == [2, 2, 4]
    assert call("SequenceLength", {}, seq).dtype == np.int64
    assert call("SequenceAt", {}, seq, np.array(-1)).shape == (4, 3)
    assert len(call("SequenceErase", {}, seq)) == 2
    assert call("ConcatFromSequence", dict(axis=0), seq).shape == (8, 3)
    parts = call("SplitToSequence", dict(axis=0), b, np.array(3))
    assert [p.shape[0] for p in parts] == [3, 1]
    parts = call("SplitToSequence", dict(axis=1, keepdims=0), b)
    assert [p.shape for p in parts] == [(4,)] * 3
    (info,) = infer("SequenceConstruct", {}, TensorInfo(("N", 3), F32), TensorInfo(("N", 3), F32))
    assert isinstance(info, SequenceInfo) and info.length == 2 and info.elem.shape == ("N", 3)
    with pytest.raises(OpError, match="SequenceAt: position 3"):
        call("SequenceAt", {}, seq, np.array(3))
    assert call("OptionalHasElement", {}, None).item() is False
    with pytest.raises(OpError, match="OptionalGetElement: the optional is empty"):
        call("OptionalGetElement", {}, None)


def test_loop_and_scan_with_python_bodies():
    def body(i, cond, total):
        total = total + i
        return [np.asarray(i < 3), total, total * 10]
    final, scanned = call("Loop", dict(body=body), np.array(10, np.int64), np.array(True), np.array(0, np.int64))
    assert final == 0 + 1 + 2 + 3 and scanned.tolist() == [0, 10, 30, 60]

    def cumsum(acc, x):
        acc = acc + x
        return [acc, acc]
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    state, out = call("Scan", dict(body=cumsum, num_scan_inputs=1), np.zeros(3, np.float32), xs)
    np.testing.assert_array_equal(out, np.cumsum(xs, axis=0))
    state, out = call("Scan", dict(body=cumsum, num_scan_inputs=1, scan_input_directions=[1],
                                   scan_output_axes=[1]), np.zeros(3, np.float32), xs)
    np.testing.assert_array_equal(out, np.cumsum(xs[::-1], axis=0).T)
    assert call("If", dict(then_branch=lambda: [np.array(1)], else_branch=lambda: [np.array(2)]),
                np.array([False]))[0] == 2
    with pytest.raises(OpError, match="Loop: needs a trip count or a condition"):
        call("Loop", dict(body=body), None, None)


def test_non_max_suppression_by_hand():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3], [1, 1, 0, 0]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7, 0.6]]], np.float32)
    # box 1 overlaps box 0 (IoU 0.82), box 3 is box 0 with flipped corners (IoU 1)
    got = call("NonMaxSuppression", {}, boxes, scores, np.array([5]), np.array([0.5], np.float32))
    assert got.tolist() == [[0, 0, 0], [0, 0, 2]]
    got = call("NonMaxSuppression", {}, boxes, scores, np.array([5]), np.array([0.9], np.float32),
               np.array([0.75], np.float32))
    assert got.tolist() == [[0, 0, 0], [0, 0, 1]]
    (info,) = infer("NonMaxSuppression", {}, TensorInfo((1, 4, 4), F32), TensorInfo((1, 1, 4), F32))
    assert info.shape == (None, 3) and info.dtype == np.int64
