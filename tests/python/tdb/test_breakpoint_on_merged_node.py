"""A breakpoint on a node the graph passes merged into another (a BatchNormalization folded
into its Conv's weights when compiling) stops before the step that computes it, as one on a
node fused into an epilogue does (docs/tdb.md)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

import tilecore
from tilecore import cli


def test_b_on_a_folded_batch_norm_stops_before_its_conv(tmp_path, capsys):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.1, "w")
    bn = [numpy_helper.from_array((rng.random(16) + 0.5).astype(np.float32), n) for n in ("g", "b", "mu", "var")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c0"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c0", "g", "b", "mu", "var"], ["c1"], name="bn1"),
             helper.make_node("Relu", ["c1"], ["y"], name="relu1")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])], [w] + bn)
    tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()).save(
        tmp_path / "m.tcx")
    np.savez(tmp_path / "in.npz", x=rng.standard_normal((1, 8, 16, 16)).astype(np.float32))
    rc = cli.main(["tdb", str(tmp_path / "m.tcx"), "--inputs", str(tmp_path / "in.npz"), "--do", "b bn1; r; q"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "Breakpoint 1, node `conv1` (Conv, npu, computes `relu1` (Relu), `bn1` (BatchNormalization)) is next" in out
