"""Scan unrolled over its iterations (compiler/expand_scan.py): states carried, scan inputs
sliced along any axis in either direction, scan outputs stacked along any axis in either
direction, a body reading constants and values of the graph around it. Compared with
ONNX Runtime on the same inputs."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tilecore
from tilecore import frontend

ort = pytest.importorskip("onnxruntime")
F = TensorProto.FLOAT


def scan_model(in_axes, in_dirs, out_axes, out_dirs):
    # body: s' = s + x * w + c (c a constant of the graph around, w a graph input read from
    # inside), y = s' * 2, z = x - s'
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_t", "w"], ["xw"]), helper.make_node("Add", ["s_in", "xw"], ["s1"]),
         helper.make_node("Add", ["s1", "c"], ["s_out"]), helper.make_node("Mul", ["s_out", "two"], ["y_t"]),
         helper.make_node("Sub", ["x_t", "s_out"], ["z_t"])],
        "body", [helper.make_tensor_value_info("s_in", F, [3]), helper.make_tensor_value_info("x_t", F, [3])],
        [helper.make_tensor_value_info(n, F, [3]) for n in ("s_out", "y_t", "z_t")])
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.float32([0.5, -1, 2]), "c")),
             helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.float32(2), "two")),
             helper.make_node("Scan", ["s0", "x"], ["s", "y", "z"], body=body, num_scan_inputs=1,
                              scan_input_axes=in_axes, scan_input_directions=in_dirs,
                              scan_output_axes=out_axes, scan_output_directions=out_dirs)]
    x_shape = [4, 3] if in_axes[0] in (0, -2) else [3, 4]
    y_shape = [4, 3] if out_axes[0] in (0, -2) else [3, 4]
    z_shape = [4, 3] if out_axes[1] in (0, -2) else [3, 4]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("s0", F, [3]),
                                       helper.make_tensor_value_info("x", F, x_shape),
                                       helper.make_tensor_value_info("w", F, [3])],
                          [helper.make_tensor_value_info("s", F, [3]), helper.make_tensor_value_info("y", F, y_shape),
                           helper.make_tensor_value_info("z", F, z_shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), x_shape


@pytest.mark.parametrize("in_axes,in_dirs,out_axes,out_dirs", [
    ([0], [0], [0, 0], [0, 0]),
    ([1], [1], [1, 0], [0, 1]),
    ([-1], [0], [-1, -2], [1, 0]),
])
def test_a_scan_unrolled_matches_onnx_runtime(in_axes, in_dirs, out_axes, out_dirs):
    m, x_shape = scan_model(in_axes, in_dirs, out_axes, out_dirs)
    rng = np.random.default_rng(3)
    feeds = {"s0": rng.standard_normal(3).astype(np.float32), "x": rng.standard_normal(x_shape).astype(np.float32),
             "w": rng.standard_normal(3).astype(np.float32)}
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    rep = {}
    got = tilecore.compile(m.SerializeToString(), report=rep).run(feeds)
    assert "Scan" not in {p["op_type"] for p in rep["placement"]}
    for name, w in zip(("s", "y", "z"), want):
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_reference_evaluator_runs_a_body_that_reads_a_folded_constant():
    # constant folding replaces `c` and `two` by values; the body reads them by name and must
    # see the folded values (before, evaluate failed: "neither a graph input, a constant ...")
    m, x_shape = scan_model([0], [0], [0, 0], [0, 0])
    feeds = {"s0": np.float32([1, 2, 3]), "x": np.arange(12, dtype=np.float32).reshape(x_shape),
             "w": np.float32([1, 0, -1])}
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = frontend.evaluate(frontend.from_onnx(m), feeds)
    got = got if isinstance(got, dict) else dict(zip(("s", "y", "z"), got))
    for name, w in zip(("s", "y", "z"), want):
        np.testing.assert_allclose(np.asarray(got[name]), w, rtol=1e-6, err_msg=name)


def test_an_unknown_element_type_stays_unknown_through_inference():
    # a Transpose of a value whose element type is not known was typed float64 (numpy's
    # np.dtype(None)); it must stay unknown, so a declared float32 is not contradicted
    from tilecore.ir.ops import _util

    assert _util.tensor([2, 3], None).dtype is None
    assert _util.tensor([2, 3], np.float32).dtype == np.float32
