"""Compress, EyeLike, Shrink and ai.onnx.ml's Binarizer and ArrayFeatureExtractor on the host,
against numpy."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import tilecore  # noqa: E402


def run(op, inputs, out_shape, out_type=None, where="host", **attrs):
    names = list(inputs)
    ttype = {np.dtype(k): v for k, v in [(np.float32, TensorProto.FLOAT), (np.int32, TensorProto.INT32),
                                         (np.bool_, TensorProto.BOOL), (np.int64, TensorProto.INT64),
                                         (np.float64, TensorProto.DOUBLE)]}
    node = helper.make_node(op, names, ["y"], **attrs)
    out_t = out_type if out_type is not None else ttype[inputs[names[0]].dtype]
    g = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info(n, ttype[v.dtype], list(v.shape))
                                               for n, v in inputs.items()],
                          [helper.make_tensor_value_info("y", out_t, list(out_shape))])
    report = {}
    y = tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]),
                         report=report).run(inputs)["y"]
    assert [p["where"] for p in report["placement"]] == ([] if where is None else [where])  # None: folded
    return y


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(axis):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    n = x.size if axis is None else x.shape[axis]
    cond = rng.random(n - 1) < 0.5  # (shorter than the axis, as ONNX allows)
    cond[0] = True
    want = np.compress(cond, x, axis=axis)
    attrs = {} if axis is None else {"axis": axis}
    np.testing.assert_array_equal(run("Compress", {"x": x, "c": cond}, want.shape, **attrs), want)


@pytest.mark.parametrize("k", [-2, 0, 3])
def test_eyelike(k):
    # int64 input: the host kernel (EyeLike of an int32 or float32 tensor runs on the npu). In a
    # model EyeLike folds (it reads only its input's type), so the kernel is lowered directly.
    from tilecore import compiler

    x = np.zeros((4, 6), np.int64)
    for dtype, attrs in ((np.float32, {"k": k, "dtype": TensorProto.FLOAT}), (np.int64, {"k": k})):
        f = compiler.LowerHostOp("EyeLike", attrs, [compiler.TensorSpec(x.shape, "int64")],
                                 [compiler.TensorSpec(x.shape, np.dtype(dtype).name)])
        y = np.zeros(x.shape, dtype)
        n = int(f.attrs["input_params"])  # (0: the kernel reads no input, only its shape)
        tilecore.build(f, target="c")[f.attrs["global_symbol"]](*[x][:n], y)
        np.testing.assert_array_equal(y, np.eye(4, 6, k, dtype=dtype))
    np.testing.assert_array_equal(run("EyeLike", {"x": x}, x.shape, k=k, where=None), np.eye(4, 6, k, dtype=np.int64))


@pytest.mark.parametrize("dtype,where", [(np.float64, "host"), (np.int64, "host"), (np.float32, "npu")])
def test_shrink(dtype, where):
    x = np.arange(-5, 6).astype(dtype)
    lambd, bias = 1.5, 1.0
    want = np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0)).astype(dtype)
    np.testing.assert_array_equal(run("Shrink", {"x": x}, x.shape, where=where, lambd=lambd, bias=bias), want)


def _ml_model(op, inputs, out_shape, inits=(), **attrs):
    ttype = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    node = helper.make_node(op, list(inputs) + [n for n, _ in inits], ["y"], domain="ai.onnx.ml", **attrs)
    g = helper.make_graph([node], "ml", [helper.make_tensor_value_info(n, ttype[v.dtype], list(v.shape))
                                         for n, v in inputs.items()],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
                          [helper.make_tensor(n, TensorProto.INT64, a.shape, a) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 3)])


def test_ml_binarizer_and_array_feature_extractor():
    x = np.random.default_rng(2).normal(size=(3, 5)).astype(np.float32)
    y = tilecore.compile(_ml_model("Binarizer", {"x": x}, x.shape, threshold=0.2)).run({"x": x})["y"]
    np.testing.assert_array_equal(y, (x > 0.2).astype(np.float32))
    idx = np.array([4, 0, 2], np.int64)
    m = _ml_model("ArrayFeatureExtractor", {"x": x}, (3, 3), inits=[("idx", idx)])
    np.testing.assert_array_equal(tilecore.compile(m).run({"x": x})["y"], x[:, [4, 0, 2]])
    # a negative index is out of range (ONNX Runtime: "must be in [0, 5)"), not wrapped
    m = _ml_model("ArrayFeatureExtractor", {"x": x}, (3, 3), inits=[("idx", np.array([4, 0, -1], np.int64))])
    with pytest.raises(ValueError, match=r"index -1 \(element 2\) is out of range"):
        tilecore.compile(m).run({"x": x})
