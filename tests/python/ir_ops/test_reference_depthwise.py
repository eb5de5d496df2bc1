"""The reference's depthwise 2-D Conv of float32 (C++, src/ir/reference_depthwise.cc) against
its numpy form bit for bit, and against a float64 sum over the kernel offsets, over seeded
shapes, strides, dilations and pads; other shapes and dtypes keep the numpy form."""
import numpy as np
import pytest

from tilecore.ffi.nd import from_dlpack
from tilecore.ir import _ffi_api
from tilecore.ir.ops._conv import _depthwise_numpy, conv_nd, out_size, pad_spatial

CASES = [  # (N, C, H, W, KH, KW, strides, dilations, pads)
    (1, 96, 56, 56, 7, 7, (1, 1), (1, 1), (3, 3, 3, 3)),  # ConvNeXt's
    (2, 32, 17, 23, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1)),  # MobileNet's stride-2 blocks, a batch
    (1, 8, 15, 9, 5, 3, (1, 2), (2, 1), (4, 1, 2, 0)),  # uneven everything
    (1, 4, 6, 6, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),
    (3, 5, 9, 31, 3, 5, (3, 1), (1, 3), (0, 6, 2, 6)),
]


def _float64_sums(xp, w, strides, dilations, outs):
    n, c = xp.shape[:2]
    y = np.zeros((n, c, *outs))
    for kh in range(w.shape[2]):
        for kw in range(w.shape[3]):
            win = xp[:, :, kh * dilations[0]::strides[0], kw * dilations[1]::strides[1]][:, :, :outs[0], :outs[1]]
            y += win.astype(np.float64) * w[None, :, 0, kh, kw, None, None]
    return y


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}x{c[2]}x{c[3]}k{c[4]}x{c[5]}s{c[6]}d{c[7]}" for c in CASES])
def test_depthwise_is_the_numpy_form_bit_for_bit(case):
    n, c, h, wd, kh, kw, strides, dilations, pads = case
    rng = np.random.default_rng(sum(case[:6]))
    x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
    w = rng.standard_normal((c, 1, kh, kw)).astype(np.float32)
    got = conv_nd(x, w, None, strides=strides, dilations=dilations, pads=pads, group=c)
    xp = pad_spatial(x, pads)
    outs = [out_size(x.shape[2 + i], w.shape[2 + i], strides[i], dilations[i], pads[i], pads[2 + i]) for i in range(2)]
    want = _depthwise_numpy(xp, w, strides, dilations, outs)
    assert got.dtype == np.float32 and got.shape == want.shape == (n, c, *outs)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    np.testing.assert_allclose(got, _float64_sums(xp, w, strides, dilations, outs), rtol=1e-5, atol=1e-5)


def test_nan_and_signed_zero_as_numpy():
    x = np.zeros((1, 2, 4, 4), np.float32)
    x[0, 0, 1, 1] = np.nan
    w = -np.ones((2, 1, 3, 3), np.float32)  # products of +0 are -0; numpy's sum from +0 stays +0
    got = conv_nd(x, w, None, strides=(1, 1), dilations=(1, 1), pads=(1, 1, 1, 1), group=2)
    want = _depthwise_numpy(pad_spatial(x, (1, 1, 1, 1)), w, (1, 1), (1, 1), (4, 4))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.isnan(got[0, 0]).sum() == 9 and not np.signbit(got[0, 1]).any()


def test_other_dtypes_and_ranks_keep_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 10)).astype(np.float32)  # 1-D
    w = rng.standard_normal((3, 1, 3)).astype(np.float32)
    y = conv_nd(x, w, None, strides=(1,), dilations=(1,), pads=(1, 1), group=3)
    np.testing.assert_array_equal(y, _depthwise_numpy(pad_spatial(x, (1, 1)), w, (1,), (1,), (10,)))
    x64 = rng.standard_normal((1, 3, 5, 5))
    w64 = rng.standard_normal((3, 1, 3, 3))
    y64 = conv_nd(x64, w64, None, strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0), group=3)
    assert y64.dtype == np.float64
    np.testing.assert_array_equal(y64, _depthwise_numpy(x64, w64, (1, 1), (1, 1), (3, 3)))


def test_the_kernel_refuses_what_does_not_agree():
    xp, w, y = np.zeros((1, 2, 5, 5), np.float32), np.zeros((2, 1, 3, 3), np.float32), np.zeros((1, 2, 4, 3), np.float32)
    with pytest.raises(ValueError, match="ReferenceDepthwise2d: shapes, strides and dilations do not agree"):
        _ffi_api.ReferenceDepthwise2d(from_dlpack(xp), from_dlpack(w), from_dlpack(y), [1, 1], [1, 1])
    with pytest.raises(TypeError, match="ReferenceDepthwise2d: expects contiguous 4-D float32"):
        x64 = np.zeros((1, 2, 5, 5))
        _ffi_api.ReferenceDepthwise2d(from_dlpack(x64), from_dlpack(w), from_dlpack(y), [1, 1], [1, 1])
    y_read_only = np.zeros((1, 2, 3, 3), np.float32)
    y_read_only.flags.writeable = False
    with pytest.raises(ValueError, match="ReferenceDepthwise2d: the output is read-only"):
        _ffi_api.ReferenceDepthwise2d(from_dlpack(xp), from_dlpack(w), from_dlpack(y_read_only), [1, 1], [1, 1])


def test_read_only_inputs():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
    x.flags.writeable = False  # (no pads: the kernel reads x itself)
    w.flags.writeable = False
    got = conv_nd(x, w, None, strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0), group=3)
    np.testing.assert_array_equal(got.view(np.uint32), _depthwise_numpy(x, w, (1, 1), (1, 1), (4, 4)).view(np.uint32))
