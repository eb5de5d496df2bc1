"""RNN, GRU and LSTM unrolled by the driver (compiler/expand_recurrent.py) and run by
tilecore, against ONNX Runtime (onnx's reference evaluator where ONNX Runtime lacks layout 1;
the reference ignores sequence_lens): directions, biases, initial states,
sequence lengths shorter than the sequence, layout 1, clip, linear_before_reset,
peepholes and non-default activations."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
ort = pytest.importorskip("onnxruntime")

import tilecore  # noqa: E402

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def model_and_feed(op, T=3, B=2, I=3, H=4, direction="forward", bias=True, lens=None, initial=True,
                   peep=False, layout=0, seed=0, outputs=("Y", "Y_h"), **attrs):
    rng = np.random.default_rng(seed)
    D = 2 if direction == "bidirectional" else 1
    G = GATES[op]
    feed = {"X": rng.normal(0, 1, (T, B, I) if layout == 0 else (B, T, I)).astype(np.float32),
            "W": rng.normal(0, 0.5, (D, G * H, I)).astype(np.float32),
            "R": rng.normal(0, 0.5, (D, G * H, H)).astype(np.float32)}
    names = ["X", "W", "R", "", "", ""]
    if bias:
        feed["B"], names[3] = rng.normal(0, 0.5, (D, 2 * G * H)).astype(np.float32), "B"
    if lens is not None:
        feed["L"], names[4] = np.array(lens, np.int32), "L"
    if initial:
        sh = (D, B, H) if layout == 0 else (B, D, H)
        feed["H0"], names[5] = rng.normal(0, 1, sh).astype(np.float32), "H0"
        if op == "LSTM":
            feed["C0"] = rng.normal(0, 1, sh).astype(np.float32)
            names.append("C0")
    if peep:
        if len(names) == 6:
            names.append("")
        feed["P"] = rng.normal(0, 0.5, (D, 3 * H)).astype(np.float32)
        names.append("P")
    while names and names[-1] == "":
        names.pop()
    outs = list(outputs)
    node = helper.make_node(op, names, outs, hidden_size=H, direction=direction, layout=layout, **attrs)
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    g = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info(k, elem[v.dtype], list(v.shape))
                                                for k, v in feed.items()],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), feed


def oracle(model, feed):
    if any(a.name == "layout" and a.i == 1 for a in model.graph.node[0].attribute):
        from onnx.reference import ReferenceEvaluator  # (ONNX Runtime has no layout 1)

        return ReferenceEvaluator(model).run(None, feed)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


def check(model, feed):
    expected = oracle(model, feed)
    got = tilecore.compile(model).run(feed)
    for name, e in zip([o.name for o in model.graph.output], expected):
        np.testing.assert_allclose(got[name], e, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_directions_with_sequence_lengths(op, direction):
    outputs = ("Y", "Y_h", "Y_c") if op == "LSTM" else ("Y", "Y_h")
    check(*model_and_feed(op, direction=direction, lens=[3, 2], outputs=outputs))


def test_gru_linear_before_reset_and_clip():
    check(*model_and_feed("GRU", linear_before_reset=1, clip=0.7))


def test_lstm_peepholes_and_layout1():
    check(*model_and_feed("LSTM", peep=True, layout=1, outputs=("Y", "Y_h", "Y_c"), direction="bidirectional"))


def test_lstm_activations_and_input_forget():
    check(*model_and_feed("LSTM", peep=True, outputs=("Y", "Y_h", "Y_c"), direction="bidirectional", input_forget=1,
                          activations=["HardSigmoid", "LeakyRelu", "Tanh"] * 2,
                          activation_alpha=[0.3, 0.1, 1.0] * 2, activation_beta=[0.4, 0.0, 0.0] * 2))


def test_rnn_without_bias_or_initial_state_runs_on_the_npu():
    model, feed = model_and_feed("RNN", bias=False, initial=False)
    report = {}
    exe = tilecore.compile(model, report=report)
    where = {p["op_type"]: p["where"] for p in report["placement"]}
    assert where["MatMul"] == "npu" and where["Tanh"] == "npu"
    expected = oracle(model, feed)
    got = exe.run(feed)
    np.testing.assert_allclose(got["Y"], expected[0], rtol=1e-4, atol=1e-5)
