"""tilecore/ir/ops/signal.py — signal processing: the Hann, Hamming and Blackman windows,
DFT, STFT and MelWeightMatrix.

Complex tensors are real tensors with a last axis of 2 (real, imaginary); a last axis
of 1 is a real signal. Transforms run in float64 and are rounded to the input dtype.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import is_float, onnx_dtype, opset, wide
from .infer import normalize_axis
from .registry import OpError, Operand, Result, TensorInfo, register_op


def _scalar_int(v, what, name):
    a = np.asarray(v)
    if a.size != 1:
        raise OpError(f"{name}: {what} must be a scalar, got shape {a.shape}")
    return int(a.ravel()[0])


def _window_infer(name):
    def infer(attrs, inputs):
        size = inputs[0]
        out = onnx_dtype(attrs["output_datatype"], name)
        if size.value is not None:
            return [TensorInfo((_scalar_int(size.value, "size", name),), out)]
        return [TensorInfo((None,), out)]
    return infer


def _window(name, fn, doc) -> None:
    def reference(attrs, size):
        n = _scalar_int(size, "size", name)
        if n < 0:
            raise OpError(f"{name}: size must be >= 0, got {n}")
        denom = n if attrs["periodic"] else n - 1
        k = np.arange(n, dtype=np.float64)
        w = fn(2 * np.pi * k / denom) if denom > 0 else np.ones(n)
        return w.astype(onnx_dtype(attrs["output_datatype"], name))
    reference.__doc__ = doc
    register_op(name, attrs={"output_datatype": ("int", 1), "periodic": ("int", 1)}, since_version=17,
                infer=_window_infer(name))(reference)


_window("HannWindow", lambda t: 0.5 - 0.5 * np.cos(t),
        "HannWindow(size): 0.5 - 0.5 cos(2 pi n / N), N = size (periodic) or size - 1; in output_datatype.")
_window("HammingWindow", lambda t: 25 / 46 - (1 - 25 / 46) * np.cos(t),
        "HammingWindow(size): 25/46 - 21/46 cos(2 pi n / N), N = size (periodic) or size - 1.")
_window("BlackmanWindow", lambda t: 0.42 - 0.5 * np.cos(t) + 0.08 * np.cos(2 * t),
        "BlackmanWindow(size): 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N).")


# ---- DFT ----------------------------------------------------------------------------------------

def _dft_axis(attrs, rank, axis_in):
    if opset(attrs) >= 20:
        axis = -2 if axis_in is None else _scalar_int(axis_in, "axis", "DFT")
    else:
        axis = attrs["axis"] if attrs["axis"] is not None else 1
    axis = normalize_axis(axis, rank, where="DFT")
    if axis == rank - 1:
        raise OpError("DFT: axis cannot be the last (complex component) axis")
    return axis


def _dft_infer(attrs, inputs):
    x = inputs[0]
    if not is_float(np.dtype(x.dtype)):
        raise OpError(f"DFT: input must be a float type, got {np.dtype(x.dtype)}")
    if x.shape is None:
        return [TensorInfo(None, x.dtype)]
    if x.shape[-1] not in (1, 2, None) and not isinstance(x.shape[-1], str):
        raise OpError(f"DFT: the last axis must be 1 (real) or 2 (complex), got shape {x.shape}")
    axis_in = inputs[2] if len(inputs) > 2 else None
    if axis_in is not None and axis_in.value is None:
        return [TensorInfo((None,) * (len(x.shape) - 1) + (2,), x.dtype)]
    axis = _dft_axis(attrs, len(x.shape), None if axis_in is None else axis_in.value)
    length_in = inputs[1] if len(inputs) > 1 else None
    n = x.shape[axis]
    irfft = bool(attrs["inverse"] and attrs["onesided"])
    if length_in is not None:
        n = None if length_in.value is None else _scalar_int(length_in.value, "dft_length", "DFT")
    elif irfft:
        n = 2 * (n - 1) if isinstance(n, int) else None
    if irfft:
        shape = list(x.shape)
        shape[axis], shape[-1] = n, 1
        return [TensorInfo(tuple(shape), x.dtype)]
    if attrs["onesided"] and isinstance(n, int):
        n = n // 2 + 1
    elif attrs["onesided"]:
        n = None
    shape = list(x.shape)
    shape[axis] = n
    shape[-1] = 2
    return [TensorInfo(tuple(shape), x.dtype)]


def _to_complex(x):
    w = wide(np.asarray(x)).astype(np.float64)
    return w[..., 0] + 1j * w[..., 1] if w.shape[-1] == 2 else w[..., 0].astype(np.complex128)


def _from_complex(c, dtype):
    return np.stack([c.real, c.imag], axis=-1).astype(dtype)


@register_op("DFT", attrs={"axis": ("int", None), "inverse": ("int", 0), "onesided": ("int", 0)}, inputs=(1, 3),
             since_version=17, infer=_dft_infer)
def dft(attrs: dict[str, Any], x: Operand, dft_length: Operand = None, axis_in: Operand = None) -> Result:
    """DFT(input, dft_length, axis): the (inverse, 1/N-scaled) discrete Fourier transform along `axis`
    (attribute before opset 20, default 1; input after, default -2) of a real [..., 1] or complex [..., 2]
    signal, zero-padded or cut to dft_length; onesided keeps N//2 + 1 bins, and with inverse takes such a
    one-sided spectrum to a real [..., 1] signal of dft_length (default 2 (N - 1)) samples; float types."""
    x = np.asarray(x)
    if x.shape[-1] not in (1, 2):
        raise OpError(f"DFT: the last axis must be 1 (real) or 2 (complex), got shape {x.shape}")
    axis = _dft_axis(attrs, x.ndim, axis_in)
    c = _to_complex(x)
    irfft = bool(attrs["inverse"] and attrs["onesided"])
    if dft_length is not None:
        n = _scalar_int(dft_length, "dft_length", "DFT")
    else:
        n = 2 * (c.shape[axis] - 1) if irfft else c.shape[axis]
    if irfft:  # one-sided spectrum in, real signal of n samples out
        return np.fft.irfft(c, n=n, axis=axis)[..., np.newaxis].astype(x.dtype)
    if attrs["inverse"]:
        out = np.fft.ifft(c, n=n, axis=axis)
    else:
        out = np.fft.fft(c, n=n, axis=axis)
    if attrs["onesided"]:
        out = np.take(out, np.arange(n // 2 + 1), axis=axis)
    return _from_complex(out, x.dtype)


# ---- STFT ---------------------------------------------------------------------------------------

def _stft_params(signal_shape, frame_step, window, frame_length):
    step = _scalar_int(frame_step, "frame_step", "STFT")
    if frame_length is not None:
        length = _scalar_int(frame_length, "frame_length", "STFT")
    elif window is not None:
        length = int(np.asarray(window).shape[0])
    else:
        raise OpError("STFT: needs a window or a frame_length")
    if window is not None and np.asarray(window).shape[0] != length:
        raise OpError(f"STFT: window of {np.asarray(window).shape[0]} values for frame_length {length}")
    if step <= 0 or length <= 0 or length > signal_shape[1]:
        raise OpError(f"STFT: frame_step {step} / frame_length {length} do not fit a signal of {signal_shape[1]}")
    return step, length, 1 + (signal_shape[1] - length) // step


def _stft_infer(attrs, inputs):
    sig = inputs[0]
    step_i, window_i = inputs[1], inputs[2] if len(inputs) > 2 else None
    length_i = inputs[3] if len(inputs) > 3 else None
    if sig.shape is None or len(sig.shape) != 3:
        raise OpError(f"STFT: signal must be [batch, length, 1 or 2], got {sig.shape}")
    known = step_i.value is not None and (length_i is None or length_i.value is not None) and \
        isinstance(sig.shape[1], int) and (window_i is None or window_i.shape is not None)
    if not known:
        return [TensorInfo((sig.shape[0], None, None, 2), sig.dtype)]
    window = None if window_i is None else np.zeros(window_i.shape)
    step, length, frames = _stft_params(sig.shape, step_i.value, window,
                                        None if length_i is None else length_i.value)
    bins = length // 2 + 1 if attrs["onesided"] else length
    return [TensorInfo((sig.shape[0], frames, bins, 2), sig.dtype)]


@register_op("STFT", attrs={"onesided": ("int", 1)}, inputs=(2, 4), since_version=17, infer=_stft_infer)
def stft(attrs: dict[str, Any], signal: Operand, frame_step: Operand, window: Operand = None,
         frame_length: Operand = None) -> Result:
    """STFT(signal, frame_step, window, frame_length): [batch, frames, bins, 2], the DFT of each frame of
    frame_length samples every frame_step, times the window; onesided keeps length//2 + 1 bins."""
    signal = np.asarray(signal)
    step, length, frames = _stft_params(signal.shape, frame_step, window, frame_length)
    c = _to_complex(signal)
    w = np.ones(length) if window is None else wide(np.asarray(window)).astype(np.float64)
    idx = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    framed = c[:, idx] * w
    out = np.fft.fft(framed, axis=-1)
    if attrs["onesided"]:
        out = out[..., :length // 2 + 1]
    return _from_complex(out, signal.dtype)


# ---- MelWeightMatrix ----------------------------------------------------------------------------

def _mel_infer(attrs, inputs):
    out = onnx_dtype(attrs["output_datatype"], "MelWeightMatrix")
    bins, dft_len = inputs[0], inputs[1]
    rows = None if dft_len.value is None else _scalar_int(dft_len.value, "dft_length", "MelWeightMatrix") // 2 + 1
    cols = None if bins.value is None else _scalar_int(bins.value, "num_mel_bins", "MelWeightMatrix")
    return [TensorInfo((rows, cols), out)]


@register_op("MelWeightMatrix", attrs={"output_datatype": ("int", 1)}, inputs=(5, 5), since_version=17,
             infer=_mel_infer)
def mel_weight_matrix(attrs: dict[str, Any], num_mel_bins: Operand, dft_length: Operand, sample_rate: Operand,
                      lower_edge_hertz: Operand, upper_edge_hertz: Operand) -> Result:
    """MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
    [dft_length//2 + 1, num_mel_bins] triangular filters with peak 1 whose edges step by
    (mel(upper) - mel(lower)) / (num_mel_bins + 2) on the scale mel(f) = 2595 log10(1 + f/700), as ONNX
    Runtime computes them; in output_datatype."""
    n_mel = _scalar_int(num_mel_bins, "num_mel_bins", "MelWeightMatrix")
    n_dft = _scalar_int(dft_length, "dft_length", "MelWeightMatrix")
    rate = float(np.asarray(sample_rate).ravel()[0])
    lo = float(np.asarray(lower_edge_hertz).ravel()[0])
    hi = float(np.asarray(upper_edge_hertz).ravel()[0])
    if n_mel <= 0 or n_dft <= 0 or rate <= 0 or not 0 <= lo < hi:
        raise OpError(f"MelWeightMatrix: needs num_mel_bins, dft_length, sample_rate > 0 and 0 <= lower < upper "
                      f"edge, got {n_mel}, {n_dft}, {rate}, {lo}, {hi}")
    spec_bins = n_dft // 2 + 1
    lo_mel = 2595 * np.log10(1 + lo / 700)
    hi_mel = 2595 * np.log10(1 + hi / 700)
    points = np.arange(n_mel + 2) * ((hi_mel - lo_mel) / (n_mel + 2)) + lo_mel
    hz = 700 * (np.power(10, points / 2595) - 1)
    edges = (((n_dft + 1) * hz) // rate).astype(np.int64)
    out = np.zeros((spec_bins, n_mel))
    for i in range(n_mel):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            if 0 <= center < spec_bins:
                out[center, i] = 1
        else:
            for j in range(left, center + 1):
                if 0 <= j < spec_bins:
                    out[j, i] = (j - left) / (center - left)
        if right > center:
            for j in range(center, right):
                if 0 <= j < spec_bins:
                    out[j, i] = (right - j) / (right - center)
    return out.astype(onnx_dtype(attrs["output_datatype"], "MelWeightMatrix"))
