"""docs/compiler.md, "Conformance": what the host-kernel sweep's remaining failures are. The
ops it once listed as having no kernel have one; an int64 index tensor is taken by the npu
kernel call but not by the c one, which the sweep calls (the int32 words its kernel reads)."""
import numpy as np
import pytest

import tilecore
from tilecore import compiler

T = compiler.TensorSpec


def test_the_ops_once_listed_as_kernelless_have_kernels():
    f32 = "float32"
    assert compiler.HasStrategy("Sin", {}, [T((4, 8), f32)]) == ""
    assert compiler.HasStrategy("Cos", {}, [T((4, 8), f32)]) == ""
    assert compiler.HasHostKernel("Sin", {}, [T((4, 8), "float64")]) == ""
    assert compiler.HasHostKernel("Einsum", {"equation": "ij,jk->ik"}, [T((4, 8), f32), T((8, 3), f32)]) == ""
    assert compiler.HasHostKernel("GridSample", {}, [T((1, 2, 4, 4), f32), T((1, 3, 3, 2), f32)]) == ""
    assert compiler.HasHostKernel("NonMaxSuppression", {}, [T((1, 6, 4), f32), T((1, 1, 6), f32)]) == ""


def _argmax():
    return compiler.LowerOp("ArgMax", {"axis": 1, "keepdims": 1}, [T((3, 4), "float32")], [T((3, 1), "int64")], "npu")


@pytest.mark.npu
def test_the_npu_kernel_call_takes_an_int64_output():
    f = _argmax()
    x = np.random.default_rng(0).random((3, 4)).astype("float32")
    y = np.zeros((3, 1), "int64")
    tilecore.build(f, target="npu")[f.attrs["global_symbol"]](x, y)
    np.testing.assert_array_equal(y[:, 0], x.argmax(1))


def test_the_c_kernel_call_takes_only_the_int32_words():
    f = _argmax()
    x = np.random.default_rng(0).random((3, 4)).astype("float32")
    with pytest.raises(TypeError, match=r"argument #1 \(out0\) must have dtype int32, got int64"):
        tilecore.build(f, target="c")[f.attrs["global_symbol"]](x, np.zeros((3, 1), "int64"))
