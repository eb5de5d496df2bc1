"""Bias correction (docs/precision.md): with calibration samples, the bias of an int8, f16 or
bf16 Conv/Gemm absorbs the expected output shift that rounding its weights causes,
``sum_k (w_used - w)[c, k] * E[x_k]``. Checked against a float64 numpy reference: the shift
reported is the one numpy computes from the independently quantised weights, and the output
error on other samples than the calibration ones goes down."""
import numpy as np
import pytest
from onnx import helper

import tilecore

from test_driver import make_model
from test_precision import conv_ref, q_weights

ml_dtypes = pytest.importorskip("ml_dtypes")

RNG = np.random.default_rng(31)


def positive_inputs(n):
    """Inputs with a large mean per channel and small fluctuations (a Relu's output is >= 0
    with a mean of the order of its spread): what makes E[x] matter."""
    mean = RNG.uniform(0.5, 1.5, (1, 1, 6, 1, 1)).astype(np.float32)
    return (mean + 0.2 * RNG.standard_normal((n, 1, 6, 9, 9))).astype(np.float32)


def two_layer_model():
    w = (RNG.standard_normal((12, 6, 3, 3)) * 0.2).astype(np.float32)
    b = (RNG.standard_normal(12) * 0.1).astype(np.float32)
    g = (RNG.standard_normal((10, 12 * 7 * 7)) * 0.05).astype(np.float32)
    c = (RNG.standard_normal((1, 10)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv"),
             helper.make_node("Relu", ["y"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "g", "c"], ["z"], name="fc", transB=1)]
    model = make_model(nodes, [("x", [1, 6, 9, 9], np.float32)], ["y", "z"], [("w", w), ("b", b), ("g", g), ("c", c)])
    return model, w, b, g, c


def reference(x, w, b, g, c):
    """float64: the Conv's output and the Gemm's (no padding: every output sees every input channel
    at every tap, so the expected shift is the same everywhere)."""
    y = conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64))
    z = np.maximum(y, 0).reshape(len(x), -1) @ g.T.astype(np.float64) + c.astype(np.float64)
    return y, z


def errors(exe, xs, w, b, g, c):
    """Mean squared error of each output against the float64 reference over the samples."""
    ey = ez = 0.0
    for x in xs:
        y, z = reference(x, w, b, g, c)
        out = exe.run({"x": x})
        ey += np.mean((out["y"] - y) ** 2) / len(xs)
        ez += np.mean((out["z"] - z) ** 2) / len(xs)
    return ey, ez


@pytest.mark.parametrize("precision", ["int8", "bf16"])
def test_bias_correction_reduces_the_output_error(precision):
    model, w, b, g, c = two_layer_model()
    calib, evals = positive_inputs(16), positive_inputs(8)
    rep_on, rep_off = {}, {}
    on = tilecore.compile(model, precision=precision, calib_samples={"x": calib}, report=rep_on)
    off = tilecore.compile(model, precision=precision, calib_samples={"x": calib}, bias_correction=False,
                           report=rep_off)
    # the Gemm's bias (kept as a Gemm by FoldMatMulBias) absorbs its shift in every precision
    assert set(rep_on["precision"]["bias_correction"]) == {"conv", "fc"}
    assert rep_off["precision"]["bias_correction"] == {}
    # the shift the Conv's bias absorbed is what numpy computes from the calibration mean
    mean = calib.astype(np.float64).mean(axis=(0, 1, 3, 4))
    if precision == "int8":
        wq, sw = q_weights(w.astype(np.float64), 0)
        used = wq * sw.astype(np.float64).reshape(-1, 1, 1, 1)
    else:
        used = w.astype(ml_dtypes.bfloat16).astype(np.float64)
    shift = np.einsum("mchw,c->m", used - w.astype(np.float64), mean)
    assert rep_on["precision"]["bias_correction"]["conv"] == pytest.approx(np.abs(shift).max(), rel=1e-6)
    (ey_on, ez_on), (ey_off, ez_off) = errors(on, evals, w, b, g, c), errors(off, evals, w, b, g, c)
    assert ey_on < 0.7 * ey_off, (ey_on, ey_off)
    assert ez_on < 0.9 * ez_off, (ez_on, ez_off)


def test_bias_correction_needs_samples():
    """With thresholds alone (no samples) nothing is corrected, and the result is the plain
    quantisation's."""
    model, w, b, g, c = two_layer_model()
    calib = positive_inputs(4)
    rep = {}
    table = tilecore.compile(model, precision="int8", calib_samples={"x": calib}, bias_correction=False, report=rep)
    again = tilecore.compile(model, precision="int8", calib=rep["precision"]["thresholds"], report=rep)
    assert rep["precision"]["bias_correction"] == {}
    x = positive_inputs(1)[0]
    np.testing.assert_array_equal(table.run({"x": x})["z"], again.run({"x": x})["z"])


def test_measured_means_are_reused_without_the_samples():
    """What auto_mixed does between its compilations: the thresholds and channel means of a
    first compilation, given back as a Calibration, give the same executable."""
    from tilecore.compiler.precision import Calibration

    model, *_ = two_layer_model()
    calib = positive_inputs(4)
    rep = {}
    first = tilecore.compile(model, precision="int8", calib_samples={"x": calib}, report=rep)
    means = {k: np.asarray(v) for k, v in rep["precision"]["channel_means"].items()}
    assert set(means) == {"x", "f"}  # the Conv's data input and the Gemm's
    np.testing.assert_allclose(means["x"], calib.astype(np.float64).mean(axis=(0, 1, 3, 4)), rtol=1e-12)
    again = tilecore.compile(model, precision="int8", calib=Calibration(rep["precision"]["thresholds"], means))
    x = positive_inputs(1)[0]
    np.testing.assert_array_equal(first.run({"x": x})["z"], again.run({"x": x})["z"])
