"""ConvTranspose (zero insertion by DMA + implicit GEMM) on 4 simulated TC1 cores
against the op library's numpy reference and, for one case, a hand-computed scatter."""
import numpy as np
import pytest

from tilecore import compiler
from strategy_util import check_op, rand

CASES = [
    # x shape, w shape, attrs
    ((1, 3, 5, 6), (3, 4, 3, 3), {}),
    ((2, 4, 5, 5), (4, 3, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 4, 4, 7), (4, 2, 2, 3), {"strides": [2, 3], "output_padding": [1, 2]}),
    ((1, 6, 5, 4), (6, 2, 3, 2), {"group": 3, "dilations": [2, 1], "pads": [2, 0, 1, 1]}),
    ((1, 4, 3, 5), (4, 1, 3, 3), {"group": 4, "strides": [2, 2]}),              # depthwise
    ((1, 2, 4, 4), (2, 3, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 4, 4), (2, 3, 3, 3), {"strides": [2, 2], "output_shape": [9, 8]}),
    ((2, 3, 11), (3, 5, 4), {"strides": [3], "pads": [1, 2]}),                  # 1-D
    ((1, 300, 6, 9), (300, 130, 2, 2), {"strides": [2, 2]}),                    # channel chunks, TM remainder
    ((1, 2, 3, 150), (2, 2, 1, 3), {"strides": [1, 2]}),                        # column tiles (OW > 256)
]


@pytest.mark.parametrize("xs,ws,attrs", CASES, ids=[str(i) for i in range(len(CASES))])
def test_conv_transpose(xs, ws, attrs):
    x, w = rand(xs, 1, -1, 1), rand(ws, 2, -1, 1)
    check_op("ConvTranspose", attrs, [x, w], rtol=1e-4, atol=1e-4)


def test_bias():
    x, w, b = rand((1, 3, 4, 4), 1, -1, 1), rand((3, 5, 3, 3), 2, -1, 1), rand((5,), 3)
    check_op("ConvTranspose", {"strides": [2, 2], "pads": [1, 0, 0, 1]}, [x, w, b], rtol=1e-4, atol=1e-4)


def test_hand_computed_scatter():
    # 1-D, stride 2: every input pixel scatters x[i] * w[k] to 2 i + k
    x = np.array([[[1.0, 2.0, 3.0]]], np.float32)
    w = np.array([[[1.0, 10.0, 100.0]]], np.float32)
    want = np.array([[[1, 10, 102, 20, 203, 30, 300]]], np.float32)
    check_op("ConvTranspose", {"strides": [2]}, [x, w], out_shapes=[(1, 1, 7)], out_dtypes=[np.float32])
    from strategy_util import run_op
    outs, _, _ = run_op("ConvTranspose", {"strides": [2]}, [x, w])
    np.testing.assert_allclose(outs[0], want)


def test_host_reasons():
    x = compiler.TensorSpec((1, 2, 4, 4, 4), "float32")
    w = compiler.TensorSpec((2, 2, 3, 3, 3), "float32")
    assert "1-D and 2-D" in compiler.HasStrategy("ConvTranspose", {}, [x, w])


def test_bigger_than_l1():
    # a 1.3 MiB input, a 2x upsampling decoder step
    x, w = rand((1, 64, 64, 80), 4, -1, 1), rand((64, 4, 2, 2), 5, -1, 1)
    check_op("ConvTranspose", {"strides": [2, 2]}, [x, w], rtol=1e-4, atol=1e-4)


def test_random_sample():
    # a fixed random sample of geometries (1-D and 2-D), against the op library's reference
    rng = np.random.default_rng(11)
    for _ in range(16):
        nd = int(rng.integers(1, 3))
        g = int(rng.choice([1, 2]))
        c, m = g * int(rng.integers(1, 4)), g * int(rng.integers(1, 4))
        k = [int(v) for v in rng.integers(1, 4, nd)]
        s = [int(v) for v in rng.integers(1, 4, nd)]
        d = [int(v) for v in rng.integers(1, 3, nd)]
        pads = [int(rng.integers(0, (k[i % nd] - 1) * d[i % nd] + 1)) for i in range(2 * nd)]
        op = [int(rng.integers(0, max(s[i], d[i]))) for i in range(nd)]
        x = rand((int(rng.integers(1, 3)), c) + tuple(int(v) for v in rng.integers(2, 7, nd)), 1, -1, 1)
        w = rand((c, m // g) + tuple(k), 2, -1, 1)
        attrs = {"group": g, "strides": s, "dilations": d, "pads": pads, "output_padding": op}
        check_op("ConvTranspose", attrs, [x, w], rtol=1e-4, atol=1e-4)
