"""A LayerNormalization that also stores its result in int8 for an int8 matrix reader
(tc_q_scale, docs/precision.md): the f32 result near numpy's, the int8 one exactly
i8(f32(f32(y * f32(1 / scale)) + zp)) of it, in one quantising pass."""
import numpy as np
import pytest

import tilecore.ir
from tilecore import compiler

from strategy_util import run_lowered
from test_layernorm_int8_input import layernorm_ref


@pytest.mark.parametrize("rows,width,zp", [(3136, 96, 0), (784, 192, -5), (196, 384, 7)])
def test_layernorm_int8_output_is_the_f32_result_quantised(rows, width, zp):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((1, rows, width)).astype(np.float32) * 3 + 1
    gamma = rng.uniform(0.5, 1.5, width).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, width).astype(np.float32)
    scale = 0.031
    attrs = {"axis": -1, "epsilon": 1e-6, "tc_q_scale": scale, "tc_q_zero_point": zp}
    y, q = run_lowered("LayerNormalization", attrs, [x, gamma, beta],
                       [np.zeros(x.shape, np.float32), np.zeros(x.shape, np.int8)])
    np.testing.assert_allclose(y, layernorm_ref(x, gamma, beta, 1e-6), rtol=1e-4, atol=1e-4)
    inv = np.float32(1.0 / scale)
    want = np.clip(np.rint((y * inv).astype(np.float32) + np.float32(zp)), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(q, want)
    specs = [compiler.TensorSpec(a.shape, str(a.dtype)) for a in (x, gamma, beta)]
    outs = [compiler.TensorSpec(x.shape, "float32"), compiler.TensorSpec(x.shape, "int8")]
    text = tilecore.ir.script(compiler.LowerOp("LayerNormalization", attrs, specs, outs))
    stores = [line for line in text.splitlines() if "= int8(" in line]
    assert stores and all("= int8(Yv" in line for line in stores), stores  # one pass, from y itself
