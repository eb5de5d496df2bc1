"""A small layer group for the tdb member tests: Conv -> Tanh (a member of its own: a Sigmoid
would be computed in the Conv's epilogue), three times, compiled for
two cores into one group step of six members (the first five write L2 intermediates, the
last the DDR output), its inputs and ONNX Runtime's value of every intermediate."""
import numpy as np

import tilecore
from tdb_models import reference

CONVS = 3
MEMBERS = [name for i in range(CONVS) for name in (f"conv{i}", f"tanh{i}")]
OUTPUTS = [value for i in range(CONVS) for value in (f"c{i}", f"s{i}")]


def graph(channels=8, hw=8):
    """The ONNX model: x -> conv0 -> tanh0 -> conv1 -> tanh1 -> conv2 -> tanh2 -> s2."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(CONVS):
        w = (rng.standard_normal((channels, channels, 3, 3)) * 0.2).astype(np.float32)
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, w.shape, w.ravel()))
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Tanh", [f"c{i}"], [f"s{i}"], name=f"tanh{i}"))
        prev = f"s{i}"
    g = helper.make_graph(nodes, "group", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [1, channels, hw, hw])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def build(tmp_path):
    """(path of the .tcx, path of the inputs .npz, the reference dict): the group's step
    is checked to hold the six members."""
    model = graph()
    exe = tilecore.compile(model, target="npu -cores=2")
    (step,) = exe.describe()["steps"]
    assert step["op_type"] == "Group", step
    exe.save(str(tmp_path / "group.tcx"))
    x = {"x": np.random.default_rng(1).standard_normal((1, 8, 8, 8)).astype(np.float32)}
    np.savez(tmp_path / "in.npz", **x)
    ref = reference(model, x)
    np.savez(tmp_path / "ref.npz", **ref)
    return tmp_path / "group.tcx", tmp_path / "in.npz", ref
