"""What int8 calibration measures of an activation in one pass (ir.ReferenceActivationStatistics,
src/ir/reference_statistics.cc, through compiler.precision._absmax_and_mean): max |x| against
numpy's, and the per-channel mean against numpy's mean of the float64 array, bit for bit,
also where the order of the additions changes the sum (magnitudes far apart)."""
import numpy as np
import pytest

from tilecore.compiler.precision import _absmax_and_mean
from tilecore.ir import _ffi_api
from tilecore.ir.graph import to_ffi_array


def numpy_mean(x: np.ndarray, axis: int) -> np.ndarray:
    red = tuple(j for j in range(x.ndim) if j != axis % x.ndim)
    return np.asarray(x, np.float64).mean(axis=red)


def far_apart(shape, seed):
    """float32 values whose float64 sums round, so that the order of the additions shows:
    thousands beside +-3e19 (a double's 53 bits keep the small ones only where the large ones
    have cancelled)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(1000)
    pick = rng.random(shape)
    x[pick < 0.05] = np.float32(3e19)
    x[pick > 0.95] = np.float32(-3e19)
    return x


SHAPES_AXES = [((1, 64, 56, 56), 1), ((1, 3, 224, 224), 1), ((1, 2048, 7, 7), 1), ((2, 8, 30, 30), 1),
               ((3, 4, 17, 1), 1), ((1, 1, 50, 60), 1), ((4, 5, 3, 3), 1), ((2, 6, 200), 1), ((1, 5, 7), 1),
               ((1, 197, 768), -1), ((2, 50, 64), -1), ((4096, 3), -1), ((7, 5), 1), ((5000, 1), -1),
               ((3, 1000, 1), -1), ((9,), 0), ((130,), 0), ((2, 3, 4, 5), 2), ((2, 1, 50), 1),
               ((2, 1, 1, 700), 1), ((1000, 3, 2), 1), ((64, 3, 5), 1), ((1, 1), 1)]


@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
def test_the_mean_is_numpys_bit_for_bit(shape, axis):
    for data in (np.random.default_rng(3).standard_normal(shape).astype(np.float32) * 7, far_apart(shape, 4)):
        m, mean = _absmax_and_mean(data, axis)
        assert m == float(np.abs(data).max())
        want = numpy_mean(data, axis)
        assert mean.dtype == np.float64 and mean.shape == want.shape
        np.testing.assert_array_equal(mean, want)


def test_the_order_matters_for_these_sums():
    # (such data is the test: summed one by one, the means differ from numpy's)
    x = np.random.default_rng(0).standard_normal((1, 4, 20, 20)).astype(np.float32) * np.float32(1000)
    x[0, :, 5, 5], x[0, :, 15, 15] = np.float32(3e19), np.float32(-3e19)
    one_by_one = np.array([sum(float(v) for v in x[0, c].ravel()) for c in range(4)]) / 400
    assert not np.array_equal(one_by_one, numpy_mean(x, 1))
    np.testing.assert_array_equal(_absmax_and_mean(x, 1)[1], numpy_mean(x, 1))


def test_absmax_of_special_values():
    x = np.array([[-0.0, 1.5, -7.25], [3.0, -2.0, 0.5]], np.float32)
    assert _absmax_and_mean(x, None) == (7.25, None)
    assert _absmax_and_mean(np.array([-np.inf, 1.0], np.float32), None)[0] == np.inf
    x = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    m, mean = _absmax_and_mean(x, 0)
    assert np.isnan(m)
    np.testing.assert_array_equal(mean, [np.nan, 2.5])
    assert _absmax_and_mean(np.zeros((0, 3), np.float32), 1) == (0.0, None)
    assert _absmax_and_mean(np.float32(-4.0), 0) == (4.0, None)  # (0-d: no axis to keep)
    assert _absmax_and_mean(np.full((3, 3), -0.0, np.float32), None)[0] == 0.0


def test_strided_and_other_dtypes_match_numpy():
    x = np.random.default_rng(5).standard_normal((4, 6, 10)).astype(np.float32)
    t = x.transpose(2, 1, 0)  # (not contiguous: copied first)
    m, mean = _absmax_and_mean(t, 1)
    assert m == float(np.abs(t).max())
    np.testing.assert_array_equal(mean, numpy_mean(t, 1))
    for v in (x.astype(np.float64), x.astype(np.float16), (x * 10).astype(np.int32)):
        m, mean = _absmax_and_mean(v, -1)
        assert m == float(np.abs(v.astype(np.float64)).max())
        np.testing.assert_array_equal(mean, numpy_mean(v, -1))


def test_bad_arguments_are_refused_by_name():
    x = to_ffi_array(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="float32"):
        _ffi_api.ReferenceActivationStatistics(to_ffi_array(np.ones(3, np.float64)), 0, None)
    with pytest.raises(ValueError, match="axis 2 out of range"):
        _ffi_api.ReferenceActivationStatistics(x, 2, to_ffi_array(np.zeros(3)))
    with pytest.raises(TypeError, match="3 elements"):
        _ffi_api.ReferenceActivationStatistics(x, 1, to_ffi_array(np.zeros(2)))
    with pytest.raises(TypeError, match="float64"):
        _ffi_api.ReferenceActivationStatistics(x, 1, to_ffi_array(np.zeros(3, np.float32)))
    sums = np.zeros(3)
    sums.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        _ffi_api.ReferenceActivationStatistics(x, 1, to_ffi_array(sums))
