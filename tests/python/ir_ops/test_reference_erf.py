"""The error function of the reference implementations on float32 (C++,
src/ir/reference_erf.cc): the Erf op and Gelu's exact form against scipy's float32 erf and
the numpy form of Gelu, bit for bit, over seeded arguments from the tiny to the saturated."""
import numpy as np
import pytest
import scipy.special as scipy_special

from tilecore.ffi.nd import from_dlpack
from tilecore.ir import _ffi_api
from tilecore.ir.ops import get_op


def run(name, x, **attrs):
    schema = get_op(name)
    return schema.reference(schema.fill_attrs(attrs), x)


def _arguments():
    rng = np.random.default_rng(20261206)
    parts = [
        rng.standard_normal(300_000) * 2,  # activations
        rng.uniform(-7, 7, 300_000),  # every piece, and past erf's saturation at 6
        10.0 ** rng.uniform(-45, 0, 100_000) * rng.choice([-1, 1], 100_000),  # tiny, subnormal
        np.arange(-6.5, 6.5, 0.25),  # the pieces' ends
        np.nextafter(np.arange(-6.5, 6.5, 0.25, dtype=np.float32), np.float32(np.inf)),
        [0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 3.85, 3.9, 5.999, 6.0, 1e30, -1e30],
    ]
    return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)


def test_erf_is_scipys_bit_for_bit():
    x = _arguments()
    got = run("Erf", x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), scipy_special.erf(x).view(np.uint32))


def test_gelu_is_the_numpy_form_bit_for_bit():
    x = _arguments()
    with np.errstate(all="ignore"):
        want = (np.float32(0.5) * x * (1 + scipy_special.erf(x / np.float32(np.sqrt(2))))).astype(np.float32)
        got = run("Gelu", x)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_nan_and_odd_shapes():
    x = np.array([[np.nan, -np.nan, 1.0], [-2.0, 0.5, np.nan]], np.float32)[:, ::-1]  # (a strided view)
    got = run("Erf", x)
    assert got.shape == (2, 3)
    assert np.isnan(got).tolist() == np.isnan(x).tolist()
    np.testing.assert_array_equal(got[~np.isnan(x)], scipy_special.erf(x[~np.isnan(x)]))
    assert run("Erf", np.zeros((0, 4), np.float32)).shape == (0, 4)
    scalar = run("Erf", np.float32(0.5))
    assert scalar == scipy_special.erf(np.float32(0.5))


def test_float64_and_float16_keep_their_precision():
    x = np.linspace(-3, 3, 1001)
    np.testing.assert_array_equal(run("Erf", x), scipy_special.erf(x))
    h = x.astype(np.float16)
    got = run("Erf", h)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, scipy_special.erf(h.astype(np.float32)).astype(np.float16))


def test_the_kernels_refuse_other_arrays():
    x = np.zeros(4, np.float64)
    with pytest.raises(TypeError, match="ReferenceErf: expects contiguous float32"):
        _ffi_api.ReferenceErf(from_dlpack(x), from_dlpack(x))
    a, b = np.zeros(4, np.float32), np.zeros(5, np.float32)
    with pytest.raises(ValueError, match="ReferenceGelu: the input has 4 elements, the output 5"):
        _ffi_api.ReferenceGelu(from_dlpack(a), from_dlpack(b))
