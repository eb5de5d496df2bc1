"""The reference's erf and exact Gelu of float32 (C++, src/ir/reference_erf.cc) against
scipy's float32 erf and the numpy form of Gelu bit for bit, over seeded arguments from
subnormal to saturated, the boundaries of its two approximations, the elements whose erf lies
near a float32 rounding boundary (rounded from erf in long double), and special values; NaN
arguments are counted and taken from scipy."""
import math

import numpy as np
import pytest
import scipy.special

from tilecore.ffi.nd import from_dlpack
from tilecore.ir import _ffi_api
from tilecore.ir.ops.activation import _gelu
from tilecore.ir.ops.elementwise import _erf


def _arguments():
    rng = np.random.default_rng(20261206)
    parts = [rng.standard_normal(200_000) * s for s in (1e-3, 0.3, 1.0, 3.0, 10.0)]
    parts += [rng.uniform(lo, hi, 100_000) for lo, hi in ((0.98, 1.02), (1.38, 1.45), (3.8, 4.2), (5.5, 5.8))]
    parts.append(rng.uniform(-1, 1, 50_000) * 1e-39)  # subnormal float32
    parts.append(10.0 ** rng.uniform(-30, 30, 50_000) * rng.choice([-1, 1], 50_000))
    x = np.concatenate(parts).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 4.0, -4.0, np.sqrt(2), 1e-45,
                        np.finfo(np.float32).max, np.nextafter(np.float32(1), np.float32(0))], np.float32)
    return np.concatenate([x, special, -x[:1000]])


def _same_bits(a, b):
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def test_erf_is_scipys_float32_erf_bit_for_bit():
    x = _arguments()
    got = _erf(x)
    want = scipy.special.erf(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    assert _same_bits(got, want).all(), x[~_same_bits(got, want)][:10]
    # and glibc's erf of double rounded once (scipy's is cephes'), on a slice
    some = x[::97]
    glibc = np.array([math.erf(float(v)) for v in some]).astype(np.float32)
    assert _same_bits(got[::97], glibc).all()


def test_gelu_is_the_numpy_form_bit_for_bit():
    x = _arguments()
    half, root2 = np.float32(0.5), np.float32(np.sqrt(2))
    with np.errstate(invalid="ignore"):  # (-inf * 0)
        got = _gelu({"approximate": "none"}, x)
        want = half * x * (np.float32(1) + scipy.special.erf(x / root2))
    assert got.dtype == np.float32 and want.dtype == np.float32
    assert _same_bits(got, want).all(), x[~_same_bits(got, want)][:10]
    assert np.isinf(got[x == np.inf]).all() and np.isnan(got[x == -np.inf]).all()


def _near_a_rounding_boundary(x):
    """The elements whose double erf (scipy's) lies within 1e-13 of it from a float32 rounding
    boundary: the ones the vectorised passes cannot round surely."""
    r = scipy.special.erf(x.astype(np.float64))
    w = np.abs(r) * 1e-13
    return (r - w).astype(np.float32) != (r + w).astype(np.float32)


# (where long double is double, the kernels leave these elements to the caller: scipy)
PRECISE_LONG_DOUBLE = np.finfo(np.longdouble).nmant >= 63


def test_elements_near_a_rounding_boundary_are_scipys_and_only_nan_arguments_are_left():
    x = (np.random.default_rng(3).standard_normal(4_000_000) * 0.5).astype(np.float32)
    x = np.concatenate([x, (np.random.default_rng(5).uniform(1, 4, 2_000_000)).astype(np.float32)])
    near = _near_a_rounding_boundary(x)
    assert 5 < near.sum() < 200  # (about 3 in a million)
    x[:3] = np.nan  # (counted: the caller's form passes their payloads on)
    y = np.empty_like(x)
    unsure = _ffi_api.ReferenceErf(from_dlpack(x), from_dlpack(y))
    assert unsure == np.isnan(y).sum()
    assert unsure == (3 if PRECISE_LONG_DOUBLE else 3 + near[3:].sum())
    want = scipy.special.erf(x)
    np.testing.assert_array_equal(_erf(x)[near].view(np.uint32), want[near].view(np.uint32))
    # Gelu's: its erf's argument is x / sqrt(2) in float32
    half, root2 = np.float32(0.5), np.float32(np.sqrt(2))
    near_u = _near_a_rounding_boundary(x / root2)
    assert near_u.sum() > 5
    got = _gelu({"approximate": "none"}, x)
    want = half * x * (np.float32(1) + scipy.special.erf(x / root2))
    np.testing.assert_array_equal(got[near_u].view(np.uint32), want[near_u].view(np.uint32))


def test_nan_payloads_are_the_numpy_forms():
    x = np.array([0x7FC12345, 0xFFC00001, 0x7FA00000], np.uint32).view(np.float32)  # (the last signalling)
    half, root2 = np.float32(0.5), np.float32(np.sqrt(2))
    with np.errstate(invalid="ignore"):
        want_gelu = half * x * (np.float32(1) + scipy.special.erf(x / root2))
        got_gelu = _gelu({"approximate": "none"}, x)
    np.testing.assert_array_equal(got_gelu.view(np.uint32), want_gelu.view(np.uint32))
    np.testing.assert_array_equal(_erf(x).view(np.uint32), scipy.special.erf(x).view(np.uint32))


def test_shapes_layouts_and_other_dtypes():
    zero_d = np.array(0.7, np.float32)
    assert _erf(zero_d).shape == () and _erf(zero_d) == scipy.special.erf(zero_d)
    assert _gelu({"approximate": "none"}, zero_d).shape == ()
    m = np.random.default_rng(4).standard_normal((40, 30)).astype(np.float32)
    for view in (m.T, m[::3, 1::2], np.asfortranarray(m)):  # (not C-contiguous)
        np.testing.assert_array_equal(_erf(view), scipy.special.erf(view))
        assert _erf(view).shape == view.shape
    x = np.linspace(-3, 3, 101)  # float64: scipy's
    np.testing.assert_array_equal(_erf(x), scipy.special.erf(x))


def test_the_kernels_refuse_what_does_not_agree():
    x, y = np.zeros(4, np.float32), np.zeros(5, np.float32)
    with pytest.raises(ValueError, match="ReferenceErf: the input has 4 elements, the output 5"):
        _ffi_api.ReferenceErf(from_dlpack(x), from_dlpack(y))
    with pytest.raises(TypeError, match="ReferenceGelu: expects contiguous float32 host arrays"):
        _ffi_api.ReferenceGelu(from_dlpack(np.zeros(4)), from_dlpack(np.zeros(4)))
    y_read_only = np.zeros(4, np.float32)
    y_read_only.flags.writeable = False
    with pytest.raises(ValueError, match="ReferenceGelu: the output is read-only"):
        _ffi_api.ReferenceGelu(from_dlpack(x), from_dlpack(y_read_only))
    a = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="ReferenceErf: the output overlaps the input"):
        _ffi_api.ReferenceErf(from_dlpack(a), from_dlpack(a))
    with pytest.raises(ValueError, match="ReferenceGelu: the output overlaps the input"):
        _ffi_api.ReferenceGelu(from_dlpack(a[:6]), from_dlpack(a[2:]))
    x.flags.writeable = False  # (a read-only input is read)
    np.testing.assert_array_equal(_erf(x), np.zeros(4, np.float32))
