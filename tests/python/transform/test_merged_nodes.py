"""The graph passes record the model's nodes they merge into another (graph_pass_internal.h,
Rewriter::Replace): the node that remains carries `_merged` [[name, op type], ...], so
debuggers and profiles still name every node of the model."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tilecore import frontend, transform


def _merged(node):
    return [(str(n), str(op)) for n, op in node.attrs.get("_merged", [])]


def test_a_folded_batch_norm_is_recorded_on_its_conv():
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")] + [
        numpy_helper.from_array((rng.random(4) + 0.5).astype(np.float32), n) for n in ("g", "b", "mu", "var")]
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
         helper.make_node("BatchNormalization", ["c", "g", "b", "mu", "var"], ["y"], name="bn")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    graph = transform.FoldBatchNorm()(frontend.from_onnx(helper.make_model(g)))
    (conv,) = graph.nodes
    assert str(conv.name) == "conv" and _merged(conv) == [("bn", "BatchNormalization")]


def test_a_recognised_gelu_records_the_ops_it_replaces_and_what_they_had_merged():
    # x * 0.5 * (1 + erf(x / sqrt(2))), as torch exports Gelu
    c = {n: numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
         (("s2", 1.4142135), ("one", 1.0), ("half", 0.5))}
    nodes = [helper.make_node("Div", ["x", "s2"], ["d"], name="div"), helper.make_node("Erf", ["d"], ["e"], name="erf"),
             helper.make_node("Add", ["e", "one"], ["a"], name="add"), helper.make_node("Mul", ["x", "a"], ["m"], name="mul"),
             helper.make_node("Mul", ["m", "half"], ["y"], name="mul_half")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], list(c.values()))
    graph = transform.RecognizeActivations()(frontend.from_onnx(helper.make_model(g)))
    (gelu,) = graph.nodes
    assert str(gelu.op_type) == "Gelu"
    names = {n for n, _ in _merged(gelu)} | {str(gelu.name)}
    assert names == {"div", "erf", "add", "mul", "mul_half"}
