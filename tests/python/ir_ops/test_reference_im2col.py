"""The reference's 2-D Conv patches of float32 (C++, src/ir/reference_im2col.cc) against
numpy's im2col of the padded input, value for value, over seeded shapes, strides, dilations
and pads (cropping ones too); and the Conv built on them against a float64 sum over the
kernel offsets. Leading crops and other dtypes keep the numpy form."""
import numpy as np
import pytest

from tilecore.ir import _ffi_api
from tilecore.ir.graph import to_ffi_array
from tilecore.ir.ops._conv import _patches, conv_nd, im2col, out_size, pad_spatial

CASES = [  # (N, C, H, W, KH, KW, strides, dilations, pads)
    (1, 3, 224, 224, 7, 7, (2, 2), (1, 1), (3, 3, 3, 3)),  # ResNet's stem
    (2, 16, 14, 14, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),  # a 3x3 block, a batch
    (1, 8, 15, 9, 5, 3, (1, 2), (2, 1), (4, 1, 2, 0)),  # uneven everything
    (1, 4, 9, 11, 1, 1, (2, 2), (1, 1), (0, 0, 0, 0)),  # a strided 1x1 (a downsample)
    (1, 5, 12, 10, 3, 4, (3, 1), (1, 3), (0, 6, 2, 6)),  # pads wider than the kernel
    (1, 3, 8, 8, 3, 3, (1, 1), (1, 1), (2, 2, -1, -1)),  # trailing crops
    (1, 2, 4, 3, 3, 3, (4, 4), (1, 1), (9, 9, 9, 9)),  # windows entirely in the padding
]


def _outs(x, kernel, strides, dilations, pads):
    return tuple(out_size(x.shape[2 + i], kernel[i], strides[i], dilations[i], pads[i], pads[2 + i]) for i in range(2))


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}x{c[2]}x{c[3]}k{c[4]}x{c[5]}s{c[6]}d{c[7]}p{c[8]}" for c in CASES])
def test_patches_are_numpy_im2col_of_the_padded_input(case):
    n, c, h, w, kh, kw, strides, dilations, pads = case
    rng = np.random.default_rng(sum(case[:6]))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    outs = _outs(x, (kh, kw), strides, dilations, pads)
    got = _patches(x, (kh, kw), strides, dilations, pads, outs)
    want = im2col(pad_spatial(x, pads), (kh, kw), strides, dilations, outs)
    assert got.dtype == np.float32 and got.shape == want.shape == (n, c, kh, kw, *outs)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))  # (-0 and NaN bits too)


@pytest.mark.parametrize("case", CASES[1:4], ids=["block", "uneven", "downsample"])
def test_conv_on_the_patches_is_the_float64_sum(case):
    n, c, h, w, kh, kw, strides, dilations, pads = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((6, c, kh, kw)).astype(np.float32)
    got = conv_nd(x, wt, None, strides=strides, dilations=dilations, pads=pads)
    xp = pad_spatial(x.astype(np.float64), pads)
    oh, ow = _outs(x, (kh, kw), strides, dilations, pads)
    want = np.zeros((n, 6, oh, ow))
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dilations[0]::strides[0], j * dilations[1]::strides[1]][:, :, :oh, :ow]
            want += np.einsum("nchw,mc->nmhw", win, wt[:, :, i, j].astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_leading_crops_and_other_dtypes_keep_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 9, 9)).astype(np.float32)
    pads = (-1, 0, 1, 1)  # a leading crop
    outs = _outs(x, (3, 3), (1, 1), (1, 1), pads)
    np.testing.assert_array_equal(_patches(x, (3, 3), (1, 1), (1, 1), pads, outs),
                                  im2col(pad_spatial(x, pads), (3, 3), (1, 1), (1, 1), outs))
    x64 = x.astype(np.float64)
    outs = _outs(x64, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1))
    got = _patches(x64, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), outs)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, im2col(pad_spatial(x64, (1, 1, 1, 1)), (3, 3), (1, 1), (1, 1), outs))


def test_bad_arguments_are_named():
    x = np.zeros((1, 2, 4, 4), np.float32)
    cols = np.zeros((1, 2, 3, 3, 2, 2), np.float32)
    with pytest.raises(TypeError, match="ReferenceIm2col2d: expects"):
        _ffi_api.ReferenceIm2col2d(to_ffi_array(x.astype(np.float64)), to_ffi_array(cols), [1, 1], [1, 1], [0, 0])
    with pytest.raises(ValueError, match="do not agree"):
        _ffi_api.ReferenceIm2col2d(to_ffi_array(x), to_ffi_array(cols), [1, 1], [1, 1], [-1, 0])
    with pytest.raises(ValueError, match="do not agree"):
        _ffi_api.ReferenceIm2col2d(to_ffi_array(x), to_ffi_array(cols[:, :1]), [1, 1], [1, 1], [0, 0])
