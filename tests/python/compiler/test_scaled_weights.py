"""A squeeze-excite's channel scale on an int8 Conv's weights (docs/compiler.md, "Channel
scale on the weights"): the ChannelScaledWeights kernel against a numpy reference written
here, and whole squeeze-excite blocks against ONNX Runtime and against the same model
compiled with the scale on the input."""
import zlib

import numpy as np
import pytest
import onnx.compose
from onnx import helper

import tilecore
from tilecore import compiler
from tilecore.compiler import scaled_weights
from tilecore.compiler.pipeline import PipelineOptions

from strategy_util import run_lowered
from test_driver import excite_nodes, make_model, ort_run
from test_driver import se_block as shared_se_block

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _seeded(request):
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def scaled_weights_ref(w, s, b, zero_point):
    """W' = W * s rounded to nearest even (saturating), B' = B - zero point * the rows' sums."""
    prod = w.astype(np.float32) * s.reshape((1, -1) + (1,) * (w.ndim - 2)).astype(np.float32)
    wq = np.clip(np.rint(prod), -128, 127).astype(np.int8)
    sums = wq.reshape(w.shape[0], -1).astype(np.int64).sum(1)
    return wq, (b.astype(np.int64) - zero_point * sums).astype(np.int32)


@pytest.mark.parametrize("rows,channels,kernel,zero_point", [
    (24, 144, 1, -121),  # EfficientNet's features.2.1 projection: an item a core
    (40, 240, 1, 5),
    (13, 7, 3, -128),    # rows that split into items of one, 3x3 taps
    (80, 480, 1, 127),
    (16, 32, 1, 0),
])
def test_channel_scaled_weights_match_numpy(rows, channels, kernel, zero_point):
    w = RNG.integers(-127, 128, (rows, channels, kernel, kernel)).astype(np.int8)
    s = RNG.uniform(0, 1, (1, channels, 1, 1)).astype(np.float32)
    s.flat[:3] = [1.0, 0.0, 0.5]  # the ends, and ties (an odd weight times 0.5) to even
    b = RNG.integers(-2 ** 30, 2 ** 30, rows).astype(np.int32)
    got_w, got_b = np.zeros_like(w), np.zeros(rows, np.int32)
    run_lowered("ChannelScaledWeights", {"zero_point": zero_point}, [w, s, b], [got_w, got_b])
    want_w, want_b = scaled_weights_ref(w, s, b, zero_point)
    np.testing.assert_array_equal(got_w, want_w)
    np.testing.assert_array_equal(got_b, want_b)


def test_channel_scaled_weights_are_checked():
    spec = compiler.TensorSpec
    w, s, b = spec((8, 16, 1, 1), "int8"), spec((1, 16, 1, 1), "float32"), spec((8,), "int32")
    assert compiler.HasStrategy("ChannelScaledWeights", {"zero_point": 3}, [w, s, b]) == ""
    assert "float32 with the weights' 16 input channels" in compiler.HasStrategy(
        "ChannelScaledWeights", {}, [w, spec((1, 8, 1, 1), "float32"), b])
    assert "the weights must be int8" in compiler.HasStrategy(
        "ChannelScaledWeights", {}, [spec((8, 16, 1, 1), "float32"), s, b])
    assert "int32 with the weights' 8 rows" in compiler.HasStrategy("ChannelScaledWeights", {}, [w, s, spec((8,), "float32")])
    assert "zero_point out of the int8 range" in compiler.HasStrategy("ChannelScaledWeights", {"zero_point": 200}, [w, s, b])
    wide = spec((8, 520, 1, 1), "int8")
    assert "rows of 520 weights (at most 516" in compiler.HasStrategy(
        "ChannelScaledWeights", {}, [wide, spec((520,), "float32"), b])


def se_block(gate="Sigmoid", size=56):
    """test_driver's squeeze-excite block with ``gate`` at size x size (its projection's 512
    weights against 32 x size^2 inputs), its weights this module's."""
    return shared_se_block(randn, gate, size)


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize("gate", ["Sigmoid", "HardSigmoid"])
def test_squeeze_excite_projection_scales_its_weights(gate):
    """The projection reads the Relu's int8 output as it is stored, with weights scaled per
    image: verify passes (every step against the model compiled a node a step), the output
    agrees with ONNX Runtime and with the scale on the input, in fewer cycles."""
    model = se_block(gate)
    samples = {"x": np.stack([randn(1, 8, 56, 56) for _ in range(4)])}
    x = randn(1, 8, 56, 56)
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, verify={"x": x}, report=rep)
    assert rep["scaled_weights"] == [{"node": "project", "step": "project/scaled_weights"}]
    assert rep["verify"]["checks"] == {"hazards": "pass", "optimisations": "pass", "reference": "reported"}
    on_input = tilecore.compile(model, precision="int8", calib_samples=samples,
                                pipeline=PipelineOptions(disable=["ChannelScaleToWeights"]))
    got, ref, other = exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], on_input.run({"x": x})["y"]
    assert cosine(got, ref) > 0.995 and cosine(got, ref) >= cosine(other, ref) - 1e-3
    assert cosine(got, other) > 0.999
    assert exe.stats()["cycles"] < on_input.stats()["cycles"]


def test_a_scale_not_known_to_lie_in_0_1_stays_on_the_input():
    """A Relu gate may exceed 1 (W * s would leave W's scale): the projection scales its input."""
    model = se_block("Relu")
    samples = {"x": np.stack([randn(1, 8, 56, 56) for _ in range(4)])}
    rep = {}
    tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    assert rep["scaled_weights"] == []
    assert {"node": "project", "fused": ["excite"]} in rep["fused"]


def test_the_weights_must_be_the_fewer():
    """Per element the weights take five vector passes to the input's four, and the step a
    member's start: EfficientNet's early projections gain, its 14 x 14 ones would not."""
    assert scaled_weights.worth_it(24 * 144, 144 * 56 * 56, 4)
    assert scaled_weights.worth_it(40 * 144, 144 * 28 * 28, 4)
    assert not scaled_weights.worth_it(80 * 480, 480 * 14 * 14, 4)
    assert not scaled_weights.worth_it(512, 32 * 14 * 14, 4)  # too small to pay for its step


def narrow_se_block(channels=16, size=56):
    """MobileNetV3-Small's first block: a 3x3 depthwise Conv and its Relu, a HardSigmoid
    squeeze-excite, then a 1x1 projection as wide as its input (channels^2 weights against
    channels x size^2 inputs)."""
    c = channels
    w0, w1, w2 = randn(c, 1, 3, 3, scale=0.3), randn(c // 2, c, 1, 1, scale=0.3), randn(c, c // 2, 1, 1, scale=0.3)
    wp = randn(c, c, 1, 1, scale=0.2)
    b1, b2, bp = randn(c // 2, scale=0.1), randn(c, scale=0.1), randn(c, scale=0.1)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="dw", pads=[1, 1, 1, 1], group=c),
             helper.make_node("Relu", ["a"], ["ar"], name="relu0"),
             *excite_nodes("HardSigmoid"),
             helper.make_node("Conv", ["m", "wp", "bp"], ["y"], name="project")]
    inits = [("w0", w0), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("wp", wp), ("bp", bp)]
    return make_model(nodes, [("x", [1, c, size, size], np.float32)], ["y"], inits)


def test_the_cost_model_moves_the_scale_the_vector_passes_would_not():
    """16 x 16 weights over 16 x 56 x 56 inputs save too few vector passes for a step of
    their own, but the projection that scales its patches has no transposed plan: the cost
    model finds the step and the projection reading X as stored faster, and the simulator
    agrees; the output agrees with ONNX Runtime as the scale on the input does."""
    assert not scaled_weights.worth_it(16 * 16, 16 * 56 * 56, 4)
    model = narrow_se_block()
    samples = {"x": np.stack([randn(1, 16, 56, 56) for _ in range(4)])}
    x = randn(1, 16, 56, 56)
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, verify={"x": x}, report=rep)
    assert rep["scaled_weights"] == [{"node": "project", "step": "project/scaled_weights"}]
    assert rep["verify"]["checks"]["optimisations"] == "pass"
    on_input = tilecore.compile(model, precision="int8", calib_samples=samples,
                                pipeline=PipelineOptions(disable=["ChannelScaleToWeights"]))
    got, ref, other = exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], on_input.run({"x": x})["y"]
    assert cosine(got, ref) > 0.995 and cosine(got, ref) >= cosine(other, ref) - 1e-3
    assert exe.stats()["cycles"] < on_input.stats()["cycles"]


def test_a_step_is_priced_less_the_start_its_group_hides():
    """32 -> 16 channels at 28 x 28: the step alone and the projection take about as long as
    the projection that scales its input, but in the layer group the step's start is hidden:
    the scale moves onto the weights, and the model runs faster than with it on the input."""
    assert not scaled_weights.worth_it(512, 32 * 28 * 28, 4)
    model = se_block("Sigmoid", 28)
    samples = {"x": np.stack([randn(1, 8, 28, 28) for _ in range(4)])}
    x = randn(1, 8, 28, 28)
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    assert rep["scaled_weights"] == [{"node": "project", "step": "project/scaled_weights"}]
    on_input = tilecore.compile(model, precision="int8", calib_samples=samples,
                                pipeline=PipelineOptions(disable=["ChannelScaleToWeights"]))
    got, ref = exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"]
    on_input.run({"x": x})
    assert cosine(got, ref) > 0.995
    assert exe.stats()["cycles"] < on_input.stats()["cycles"]


def test_the_cost_model_keeps_the_scale_on_the_input_where_the_step_is_slower(monkeypatch):
    """32 -> 16 channels at 14 x 14 (512 weights against 6,272 inputs): the cost model keeps
    the scale on the projection's input; forced onto the weights (worth_it always true) the
    model runs slower on the simulator."""
    model = se_block("Sigmoid", 14)
    samples = {"x": np.stack([randn(1, 8, 14, 14) for _ in range(4)])}
    x = randn(1, 8, 14, 14)
    rep = {}
    kept = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    assert rep["scaled_weights"] == []
    monkeypatch.setattr(scaled_weights, "worth_it", lambda *a: True)
    forced_rep = {}
    forced = tilecore.compile(model, precision="int8", calib_samples=samples, report=forced_rep)
    assert forced_rep["scaled_weights"] == [{"node": "project", "step": "project/scaled_weights"}]
    kept.run({"x": x})
    forced.run({"x": x})
    assert kept.stats()["cycles"] < forced.stats()["cycles"]


def test_unnamed_projections_take_weights_of_their_own():
    """Two unnamed squeeze-excite blocks beside each other, each projection's weights scaled:
    each reads its own scaled weights and bias (as the compile with the scales on the inputs
    computes), not the first's."""
    a, b = se_block("Sigmoid", 56), onnx.compose.add_prefix(se_block("Sigmoid", 56), "b_")
    nodes = list(a.graph.node) + list(b.graph.node)
    for nd in nodes:
        nd.name = ""
        nd.input[:] = ["x" if v == "b_x" else v for v in nd.input]
    g = helper.make_graph(nodes, "two", list(a.graph.input), list(a.graph.output) + list(b.graph.output),
                          list(a.graph.initializer) + list(b.graph.initializer))
    model = helper.make_model(g, opset_imports=list(a.opset_import))
    samples = {"x": np.stack([randn(1, 8, 56, 56) for _ in range(4)])}
    x = randn(1, 8, 56, 56)
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    assert len(rep["scaled_weights"]) == 2
    on_input = tilecore.compile(model, precision="int8", calib_samples=samples,
                                pipeline=PipelineOptions(disable=["ChannelScaleToWeights"]))
    got, other = exe.run({"x": x}), on_input.run({"x": x})
    for name in ("y", "b_y"):
        assert cosine(got[name], other[name]) > 0.999, name
