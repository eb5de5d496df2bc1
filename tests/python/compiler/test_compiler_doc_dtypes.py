"""docs/compiler.md, "What exists": the npu strategies' element-wise arithmetic takes float32
and int32 (MaxPool also int8); Conv, MatMul and Gemm compute in float16, bfloat16 or int8
under the precision modes; a float16 or int8 element-wise node runs on the host, exactly."""
import numpy as np
import pytest

import tilecore
from tilecore import compiler

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

T = compiler.TensorSpec


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_npu_element_wise_arithmetic_refuses_the_dtype_naming_what_it_takes(dtype):
    why = compiler.HasStrategy("Add", {}, [T((4, 8), dtype), T((4, 8), dtype)])
    assert f"has dtype {dtype}; the npu strategy takes float32 int32" in why


def test_max_pool_takes_int8_on_the_npu():
    assert compiler.HasStrategy("MaxPool", {"kernel_shape": [2, 2]}, [T((1, 4, 8, 8), "int8")]) == ""


@pytest.mark.parametrize("onnx_type,np_type", [(TensorProto.FLOAT16, np.float16), (TensorProto.INT8, np.int8)])
def test_float16_and_int8_element_wise_nodes_run_on_the_host(onnx_type, np_type):
    g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["s"], name="add"),
                           helper.make_node("Mul", ["s", "y"], ["z"], name="mul")], "g",
                          [helper.make_tensor_value_info("x", onnx_type, [4, 8]),
                           helper.make_tensor_value_info("y", onnx_type, [4, 8])],
                          [helper.make_tensor_value_info("z", onnx_type, [4, 8])])
    exe = tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    x = (np.arange(32).reshape(4, 8) % 5).astype(np_type)
    y = np.full((4, 8), 3, np_type)
    z = exe.run({"x": x, "y": y})["z"]
    assert z.dtype == np_type
    np.testing.assert_array_equal(z, (x + y) * y)
    assert [(s["name"], s["where"]) for s in exe.stats()["ops"]] == [("add", "host"), ("mul", "host")]


@pytest.mark.npu
@pytest.mark.parametrize("precision", ["f16", "bf16", "int8"])
def test_matrix_ops_compute_in_the_precision_asked(precision):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 16)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])],
                          [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.flatten())])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    calib = {"x": rng.standard_normal((4, 8, 32)).astype(np.float32)} if precision == "int8" else None
    exe = tilecore.compile(model, precision=precision, calib_samples=calib)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    y = exe.run({"x": x})["y"]
    assert exe.stats()["precision"] == precision
    exe_f32 = tilecore.compile(model)
    y32 = exe_f32.run({"x": x})["y"]
    assert exe_f32.stats()["precision"] == "f32"
    ref = x @ w
    assert not np.array_equal(y, y32)  # rounded operands: not the f32 result
    np.testing.assert_allclose(y, ref, rtol=0.1, atol=0.15)
