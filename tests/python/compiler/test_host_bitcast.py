"""BitCast on the host: the bytes of the input read as another dtype of the same width,
against numpy's view (NaN payloads, -0.0 and infinities included)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

import tilecore  # noqa: E402
from tilecore import compiler  # noqa: E402


def bitcast(x, to):
    code = helper.np_dtype_to_tensor_dtype(np.dtype(to))
    node = helper.make_node("BitCast", ["x"], ["y"], to=code)
    g = helper.make_graph([node], "bitcast", [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))],
                          [helper.make_tensor_value_info("y", code, list(x.shape))])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 26)])
    report = {}
    y = tilecore.compile(model, report=report).run({"x": x})["y"]
    assert [p["where"] for p in report["placement"]] == ["host"]
    return y


@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.int32, np.float32), (np.float64, np.uint64),
                                     (np.int16, np.float16), (np.float16, np.uint16), (np.int8, np.uint8)])
def test_bitcast_is_numpy_view(src, dst):
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, (3, 8 * np.dtype(src).itemsize), dtype=np.uint8)
    x = raw.view(src).copy()
    if np.dtype(src).kind == "f":  # (signed zero, infinities and NaN among the values)
        x.flat[:4] = np.array([-0.0, np.inf, -np.inf, np.nan], src)
        nan_bits = {2: [0x7C01, 0xFE37], 4: [0x7F800001, 0xFFC01234], 8: [0x7FF0000000000001, 0xFFF8000000ABCDEF]}
        x.view(f"u{np.dtype(src).itemsize}").flat[4:6] = nan_bits[np.dtype(src).itemsize]  # NaN payloads
    y = bitcast(x, dst)
    expected = x.view(dst)
    assert y.dtype == expected.dtype and y.shape == expected.shape
    np.testing.assert_array_equal(y.view(np.uint8), expected.view(np.uint8))


def test_bitcast_between_widths_says_why():
    S = compiler.TensorSpec
    why = compiler.HasHostKernel("BitCast", {"to": 7}, [S([2, 4], "float32")])
    assert "between widths" in why
