"""Small compiled models for the tdb model tests: a Conv chain with a free view and two
host nodes (float64), its inputs and ONNX Runtime's value of every intermediate."""
import numpy as np

import tilecore


def graph():
    """The ONNX model: conv -> relu -> add(relu, conv) -> flat (view) -> fc -> cast (host) -> bias64 (host)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    m = (rng.standard_normal((8 * 6 * 6, 10)) * 0.1).astype(np.float32)
    k = rng.standard_normal((1, 10))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "c"], ["a"], name="add"),
             helper.make_node("Flatten", ["a"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "m"], ["z"], name="fc"),
             helper.make_node("Cast", ["z"], ["z64"], name="cast", to=TensorProto.DOUBLE),
             helper.make_node("Add", ["z64", "k"], ["y"], name="bias64")]
    inits = [helper.make_tensor(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape, a.flatten())
             for n, a in (("w", w), ("b", b), ("m", m), ("k", k))]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


NODES = ["conv", "relu", "add", "flat", "fc", "cast", "bias64"]
WHERE = ["npu", "npu", "npu", "view", "npu", "host", "host"]


def inputs():
    return {"x": np.random.default_rng(1).standard_normal((1, 3, 6, 6)).astype(np.float32)}


def reference(model, feeds):
    """ONNX Runtime's value of every node output (the model with all of them as outputs)."""
    import onnx
    import onnxruntime
    from onnx import helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have:
                m.graph.output.append(helper.make_empty_tensor_value_info(o))
    sess = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def build(tmp_path):
    """(path of the .tcx, path of the inputs .npz, the reference dict, the onnx path)."""
    import onnx

    model = graph()
    onnx.save(model, str(tmp_path / "chain.onnx"))
    exe = tilecore.compile(model, group=False)  # a step per node: the session stops at each
    exe.save(str(tmp_path / "chain.tcx"))
    x = inputs()
    np.savez(tmp_path / "in.npz", **x)
    ref = reference(model, x)
    np.savez(tmp_path / "ref.npz", **ref)
    return tmp_path / "chain.tcx", tmp_path / "in.npz", ref, tmp_path / "chain.onnx"
