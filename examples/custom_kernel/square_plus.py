"""A custom operator written in the kernel DSL and compiled inside a model.

The graph op `example::SquarePlus` (y = x * x + bias) is declared once with its shape
inference and numpy reference (`register_op`); `register_kernel` gives it an npu
implementation written with `tilecore.script`. A model that uses it between two Convs
then compiles like any other (the Convs on the matrix engine, the custom op as a step
running the kernel below) and its outputs are checked against the numpy reference.

    python examples/custom_kernel/square_plus.py
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tilecore import compiler, frontend
from tilecore import script as S
from tilecore.ir.ops import TensorInfo, register_op


# 1. The graph op: attributes, shape inference, the numpy reference.
@register_op("SquarePlus", domain="example", attrs={"bias": ("float", 0.0)},
             infer=lambda attrs, inputs: [TensorInfo(inputs[0].shape, inputs[0].dtype)])
def square_plus(attrs, x):
    """x * x + bias"""
    return (x * x + np.float32(attrs["bias"])).astype(x.dtype)


# 2. Its npu kernel: called with the node's attributes and its tensors' static shapes and
# dtypes, it returns a DSL kernel taking one global pointer per input, then per output.
def takes(attrs, inputs):
    return "" if inputs[0].dtype == "float32" else f"the kernel is float32 only, not {inputs[0].dtype}"


@compiler.register_kernel("SquarePlus", domain="example", supports=takes)
def square_plus_kernel(attrs, inputs, outputs, cores):
    n, bias = inputs[0].numel, float(attrs["bias"])
    per = -(-n // (8 * cores)) * 8  # each core: whole registers of 8 floats

    @S.prim_func(num_cores=cores)
    def square_plus_npu(x: S.ptr("float32", "global"), y: S.ptr("float32", "global")):
        begin = S.get_local_id() * per
        for i in range(begin, begin + per, 8):
            if i < n:
                m = S.tail_mask(n - i, 8)  # the lanes before the tensor's end
                v = S.vload(x + i, mask=m)
                S.vstore(v * v + bias, y + i, mask=m)

    return square_plus_npu


def model(bias=0.25, channels=8):
    """Conv -> example::SquarePlus -> Conv, seeded weights."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((channels, 3, 3, 3)).astype(np.float32) * 0.2, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, channels, 1, 1)).astype(np.float32) * 0.2, "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("SquarePlus", ["a"], ["b"], name="square_plus", domain="example", bias=bias),
             helper.make_node("Conv", ["b", "w2"], ["y"], name="conv2")]
    graph = helper.make_graph(nodes, "square_plus_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                       [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])],
                              initializer=[w1, w2])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("example", 1)])


if __name__ == "__main__":
    onnx_model = model()
    report = {}
    exe = compiler.compile(onnx_model.SerializeToString(), "npu -cores=4", report=report)
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    y = exe.run({"x": x})["y"]
    want = frontend.evaluate(frontend.from_onnx(onnx_model.SerializeToString()), {"x": x})["y"]
    print("steps run by a custom kernel:", report["custom_kernels"])
    print("largest difference from the numpy reference:", float(np.abs(y - want).max()))
    assert np.allclose(y, want, rtol=1e-5, atol=1e-5)
