"""Failures the graph fuzzer (fuzz_graphs.py, benchmarks/graph_fuzz.py) found, each
minimized and written by hand with onnx.helper: the model compiled with the default
options, run on the simulator and compared with ONNX Runtime like the fuzzer does
(fuzz_graphs.compare). Each is a strict xfail naming the defect until it is fixed; then
remove the mark and the pattern's entry in fuzz_graphs.KNOWN_DEFECTS."""
import pathlib
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import fuzz_graphs as fg  # noqa: E402

pytestmark = pytest.mark.npu


def model(nodes, inputs, outputs, inits=()):
    """A model of ``nodes``; ``inputs`` and ``outputs`` as (name, shape), float32."""
    graph = helper.make_graph(nodes, "case", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
                              [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", fg.OPSET)])
    m.ir_version = 10
    return m


def assert_matches_onnxruntime(m, seed=0):
    """Compiled with the default options and run: every output as ONNX Runtime's."""
    import tilecore

    rng = np.random.default_rng(seed)
    feeds = {vi.name: rng.standard_normal([d.dim_value for d in vi.type.tensor_type.shape.dim]).astype(np.float32)
             for vi in m.graph.input}
    want = fg.ort_outputs(m, feeds)
    got = tilecore.compile(m.SerializeToString()).run(feeds)
    for name, w in want.items():
        why = fg.compare(got[name], w)
        assert why is None, f"output `{name}`: {why}"


# ONNX's length_resized taken as the output's length, as ONNX Runtime and PyTorch take it and
# the spec's text reads (length_resized: the length of the resized tensor); ONNX's reference
# (and the expected data of test_resize_downsample_scales_linear_align_corners, which ONNX
# Runtime fails) takes input length x scale, which differs when that is not a whole number.
@pytest.mark.parametrize("ctm,mode,width,scale", [("align_corners", "linear", 5, 0.5),
                                                  ("align_corners", "nearest", 17, 1.5),
                                                  ("pytorch_half_pixel", "linear", 3, 0.5)])
def test_resize_fractional_output_length(ctm, mode, width, scale):
    out = int(np.floor(width * scale))
    m = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode, coordinate_transformation_mode=ctm)],
              [("x", [1, 1, 1, width])], [("y", [1, 1, 1, out])],
              [("scales", np.array([1, 1, 1, scale], np.float32))])
    assert_matches_onnxruntime(m)


@pytest.mark.parametrize("mode,width,scale", [("linear", 4, 0.5), ("nearest", 16, 1.5)])
def test_resize_align_corners_integral_scale(mode, width, scale):
    """The same Resize where input length x scale is an integer matches (the defect is the
    fractional length only)."""
    out = int(width * scale)
    m = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode,
                                coordinate_transformation_mode="align_corners")],
              [("x", [1, 1, 1, width])], [("y", [1, 1, 1, out])],
              [("scales", np.array([1, 1, 1, scale], np.float32))])
    assert_matches_onnxruntime(m)


def test_relu_then_matmul_group_orders_its_l2_load():
    """Found with `benchmarks/graph_fuzz.py --verify-every`: the outputs matched ONNX Runtime,
    and verify's hazard check reported the MatMul's load of A's second 64 columns and the mm
    on the first 64 as a race (the mm's operand counted by its bounding range, which spans
    both halves' rows); compared by their bytes, they are apart."""
    import tilecore

    rng = np.random.default_rng(0)
    m = model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("MatMul", ["a", "w"], ["y"])],
              [("x", [4, 128])], [("y", [4, 64])],
              [("w", (rng.standard_normal((128, 64)) / np.sqrt(128)).astype(np.float32))])
    assert_matches_onnxruntime(m)
    tilecore.compile(m.SerializeToString(), verify={"x": rng.standard_normal((4, 128)).astype(np.float32)})


def test_verify_accepts_the_mean_of_a_normalised_tensor():
    """Found with `benchmarks/graph_fuzz.py --verify-every` (an SE block after an
    InstanceNormalization): the outputs match ONNX Runtime to within rounding of the
    inputs' scale, but verify named GlobalAveragePool as computing its output at cosine
    0.27 (its output is 0 up to rounding: verify now takes a value within rounding noise
    of the step's inputs as agreeing)."""
    import tilecore

    m = model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["n"]),
               helper.make_node("GlobalAveragePool", ["n"], ["y"])],
              [("x", [1, 4, 8, 8])], [("y", [1, 4, 1, 1])],
              [("s", np.ones(4, np.float32)), ("b", np.zeros(4, np.float32))])
    assert_matches_onnxruntime(m)
    tilecore.compile(m.SerializeToString(),
                     verify={"x": np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32)})


def test_verify_accepts_rounding_noise_carried_through_a_conv():
    """Found with `benchmarks/graph_fuzz.py --verify-every` (an SE block after an
    InstanceNormalization) after verify took noise within 1e-5 of a step's inputs as
    agreeing: the noise of the mean goes on through the SE block's Conv, and the Relu
    after it reads only noise (verify now carries a value's noise bound to the steps that
    read it while the value is noise)."""
    import tilecore

    rng = np.random.default_rng(0)
    m = model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["n"]),
               helper.make_node("GlobalAveragePool", ["n"], ["g"]),
               helper.make_node("Conv", ["g", "w", "cb"], ["h"]),
               helper.make_node("Relu", ["h"], ["y"])],
              [("x", [1, 4, 8, 8])], [("y", [1, 2, 1, 1])],
              [("s", np.ones(4, np.float32)), ("b", np.zeros(4, np.float32)),
               ("w", (rng.standard_normal((2, 4, 1, 1)) / 2).astype(np.float32)), ("cb", np.zeros(2, np.float32))])
    assert_matches_onnxruntime(m)
    tilecore.compile(m.SerializeToString(), verify={"x": rng.standard_normal((1, 4, 8, 8)).astype(np.float32)})
