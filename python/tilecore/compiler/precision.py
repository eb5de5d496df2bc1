"""Precision assignment for the model compiler's matrix ops (docs/precision.md).

The driver calls :func:`assign` after partitioning: each npu Conv, MatMul and Gemm node
gets the precision asked for it (``precision``, or its entry in a ``qtable``) by
rewriting its attributes and constant inputs:

- ``f16``/``bf16``: attribute ``tc_precision``; a constant weight (input 1) is stored
  in the narrow type (rounded to nearest even), activations are converted in L1;
- ``int8``: the quantised-node form: ``tc_x_scale`` (and ``tc_b_scale`` for a MatMul
  of two activations) from the activation thresholds, symmetric per-output-channel int8
  weights, an int32 bias and the per-channel ``w_scale`` as input 3.

A node already in the quantised form (made by an importer from a model's own scales)
is left as it is. A node the strategy cannot take in the asked precision (an int8
ConvTranspose) stays f32 and is listed in the report.

Thresholds are symmetric absolute maxima: ``scale = threshold / 127``. Without a
calibration table they are the min/max over :func:`tilecore.frontend.evaluate`'s values
on the calibration samples (:func:`minmax_thresholds`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

MATRIX_OPS = ("Conv", "MatMul", "Gemm", "ConvTranspose")  # ConvTranspose: f16/bf16 only
INT8_OPS = ("Conv", "MatMul", "Gemm")
NARROW = {"f16": "float16", "bf16": "bfloat16"}
QMAX = 127


class ConstantValue:
    """A constant the precision pass made (a converted weight, an int32 bias, w_scale):
    what the driver reads of a graph value (name, data, numpy())."""

    __slots__ = ("data", "name")

    def __init__(self, name: str, data: np.ndarray) -> None:
        self.name = name
        self.data = data

    def numpy(self) -> np.ndarray:
        return self.data


def fresh_name(base: str, info: dict[str, tuple]) -> str:
    """A value name no value of ``info`` has: ``base``, else ``base#2``, ``base#3``, ... (a
    name made from a node's, which may be empty or repeated)."""
    name, k = base, 1
    while name in info:
        k += 1
        name = f"{base}#{k}"
    return name


class Calibration:
    """What the calibration samples gave, to compile again without them: ``thresholds``
    (value name -> int8 threshold) and ``channel_means`` (data input name -> per-channel
    mean, for the bias correction)."""

    def __init__(self, thresholds: Mapping[str, float] | None, channel_means: Mapping[str, np.ndarray] | None) -> None:
        self.thresholds = dict(thresholds or {})
        self.channel_means = dict(channel_means or {})


def narrow_array(a: npt.ArrayLike, precision: str) -> np.ndarray:
    """``a`` rounded to f16/bf16 (nearest even) as a numpy array of that type."""
    if precision == "bf16":
        import ml_dtypes

        return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16)
    return np.asarray(a, np.float32).astype(np.float16)


def quantise_weights(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-channel int8: (q int8, scale f32 per channel along ``axis``) with
    ``scale = f32(absmax / 127)`` (1 for an all-zero channel) and
    ``q = clip(round_half_even(w / scale), -127, 127)`` computed in float64."""
    w = np.asarray(w, np.float32)
    red = tuple(i for i in range(w.ndim) if i != axis)
    amax = np.max(np.abs(w), axis=red).astype(np.float64)
    scale = np.where(amax > 0, amax / QMAX, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w.astype(np.float64) / scale.astype(np.float64).reshape(shape)), -QMAX, QMAX)
    return q.astype(np.int8), scale


def quantise_bias(b: np.ndarray, x_scale: float, w_scale: np.ndarray | float) -> np.ndarray:
    """int32 ``round_half_even(b / (x_scale * w_scale))`` (float64), saturated."""
    s = np.float64(np.float32(x_scale)) * np.asarray(w_scale, np.float64)
    q = np.rint(np.asarray(b, np.float64) / s)
    return np.clip(q, -(2 ** 31), 2 ** 31 - 1).astype(np.int32)


def activation_scale(threshold: float, unsigned: bool = False) -> float:
    """The per-tensor scale of an activation of symmetric threshold ``threshold`` (over
    255 steps for a value that is >= 0 by construction)."""
    t = float(threshold)
    return float(np.float32(t / (2 * QMAX + 1 if unsigned else QMAX))) if t > 0 else 1.0


def thresholds_of(calib: Any) -> dict[str, float] | None:
    """A mapping value name -> threshold from ``calib`` (a mapping, or an object with a
    ``.thresholds`` mapping)."""
    if calib is None:
        return None
    t = getattr(calib, "thresholds", calib)
    try:
        out = {str(k): float(v) for k, v in dict(t).items()}
    except (TypeError, ValueError) as e:
        raise ValueError(f"calib: expected a mapping value name -> threshold (float) or an object with "
                         f".thresholds of that form ({e})") from None
    bad = [k for k, v in out.items() if not (np.isfinite(v) and v >= 0)]
    if bad:
        raise ValueError(f"calib: thresholds must be finite and >= 0 (0: zero on every sample): "
                         f"{', '.join(f'`{k}` = {out[k]}' for k in bad[:5])}")
    return out


def degenerate_range(name: str, threshold: float) -> str:
    """Why ``name``'s calibrated range cannot give an int8 scale ("" when it can): zero on
    every sample, or so small that threshold / 255 is below float32's smallest normal."""
    if threshold <= 0:
        return f"calibration: `{name}` is zero on every sample (a degenerate range)"
    if threshold / (2 * QMAX + 1) < np.finfo(np.float32).tiny:
        return f"calibration: the range of `{name}` (absmax {threshold:.3g}) underflows an int8 scale"
    return ""


def minmax_thresholds(graph: Any, samples: Mapping[str, np.ndarray], names: Iterable[str]) -> dict[str, float]:
    """max |v| of each value in ``names`` over the samples (dict input -> (N, *shape)),
    evaluated with the reference implementations (``tilecore.frontend.evaluate``)."""
    return activation_statistics(graph, samples, names, {})[0]


def activation_statistics(graph: Any, samples: Mapping[str, np.ndarray], names: Iterable[str],
                          mean_axes: Mapping[str, int]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """(absmax, means) over the samples (dict input -> (N, *shape)) evaluated with the
    reference implementations (``tilecore.frontend.evaluate``): ``absmax`` the max |v| of
    each value in ``names``, ``means`` the mean of each value of ``mean_axes`` (value name
    -> channel axis) over every axis but that one (float64, one entry per channel)."""
    from ..ir.graph import evaluate

    if not samples:
        raise ValueError("int8 needs calib= (thresholds) or calib_samples= (input name -> array (N, *shape))")
    counts = {k: len(v) for k, v in samples.items()}
    n = min(counts.values())
    if n == 0 or len(set(counts.values())) != 1:
        raise ValueError(f"calib_samples: every input needs the same number N > 0 of samples, got {counts}")
    from .calibration import check_samples, check_statistic

    check_samples(samples)
    for v in graph.inputs:  # a sample is one input as the model takes it: (N, *its shape)
        name, shape = str(v.name), tuple(v.type.shape)
        got = np.shape(samples[name])[1:] if name in samples else None
        if got is not None and all(isinstance(d, (int, np.integer)) for d in shape) and tuple(got) != shape:
            raise ValueError(f"calib_samples: input `{name}` has samples of shape {list(got)} (after the sample "
                             f"axis); the model takes {list(shape)}: give an array (N, {', '.join(map(str, shape))})")
    want = set(names)
    out, sums = {}, {}
    for i in range(n):
        feed = {k: np.asarray(v[i]) for k, v in samples.items()}
        vals = dict(feed)  # the graph inputs are not among the intermediates
        vals.update(evaluate(graph, feed, keep_intermediates=True))
        means = {}  # value name -> its mean per channel, where the pass for its max made them
        for k in vals:  # in the order the model computes them: the first non-finite value is named
            if k in want:
                m, means[k] = _absmax_and_mean(np.asarray(vals[k]), mean_axes.get(k))
                check_statistic(k, m, i)
                out[k] = max(out.get(k, 0.0), m)
        for k, axis in mean_axes.items():
            # (a value the loop above measured has its mean, or none that applies, already)
            mean = means[k] if k in means else _absmax_and_mean(np.asarray(vals.get(k, ())), axis, absmax=False)[1]
            if mean is not None:
                check_statistic(k, float(np.sum(mean)), i)
                sums[k] = sums.get(k, 0.0) + mean
    return out, {k: s / n for k, s in sums.items()}


def _absmax_and_mean(v: np.ndarray, axis: int | None, absmax: bool = True) -> tuple[float, np.ndarray | None]:
    """(max |v|, the float64 mean of v over every axis but ``axis``): the mean None without an
    axis or where it does not apply (no such axis, no elements). A float32 array takes one pass
    in C++ (ir.ReferenceActivationStatistics: the same max, and numpy's sums bit for bit); other
    arrays numpy's max, min and mean of a float64 copy."""
    has_mean = axis is not None and v.ndim > 0 and -v.ndim <= axis < v.ndim and v.size > 0
    if v.dtype == np.float32 and v.size:
        from ..ir import _ffi_api
        from ..ir.graph import to_ffi_array

        x = to_ffi_array(np.ascontiguousarray(v))
        if not has_mean:
            return float(_ffi_api.ReferenceActivationStatistics(x, 0, None)), None
        sums = np.empty(v.shape[axis], np.float64)
        m = float(_ffi_api.ReferenceActivationStatistics(x, axis % v.ndim, to_ffi_array(sums)))
        return m, sums / float(v.size // v.shape[axis])
    m = 0.0
    if absmax and v.size:
        w = v if v.dtype.kind == "f" else v.astype(np.float64)  # (abs and max are exact in any float type)
        m = max(float(w.max()), -float(w.min()))  # (no temporary |v|)
    if not has_mean:
        return m, None
    red = tuple(j for j in range(v.ndim) if j != axis % v.ndim)
    return m, np.asarray(v, np.float64).mean(axis=red)


def mean_axis(nd: Any) -> int | None:
    """The channel axis of a matrix node's data input whose mean :func:`bias_shift` needs
    (Conv: 1, MatMul and Gemm: the last, the reduced K), or None (no constant weights)."""
    if nd.op not in INT8_OPS or len(nd.ins) < 2 or not _is_const(nd.ins[1]) or nd.ins[0] is None:
        return None
    if nd.op == "Gemm" and int(nd.attrs.get("transA", 0)):
        return None
    return 1 if nd.op == "Conv" else -1


def bias_shift(op: str, attrs: Mapping[str, Any], w: npt.ArrayLike, w_used: npt.ArrayLike,
               mean: npt.ArrayLike) -> np.ndarray | None:
    """The expected output shift, per output channel, that using weights ``w_used``
    instead of ``w`` causes when the data input's per-channel mean is ``mean``:
    ``sum_k (w_used - w)[c, k] * E[x_k]`` (float64). A Conv's zero padding is ignored (the
    border outputs see fewer inputs); grouped Convs take each group's channels."""
    dw = np.asarray(w_used, np.float64) - np.asarray(w, np.float64)
    mean = np.asarray(mean, np.float64).reshape(-1)
    if op == "Conv":
        m, cg = dw.shape[0], dw.shape[1]
        group = int(attrs.get("group", 1))
        if mean.size != cg * group or m % group:
            return None
        per_out = mean.reshape(group, cg)[np.arange(m) // (m // group)]  # [M, C/group]
        return np.einsum("mc,mc->m", dw.reshape(m, cg, -1).sum(axis=2), per_out)
    if op == "Gemm" and int(attrs.get("transB", 0)):
        return dw @ mean if dw.ndim == 2 and dw.shape[1] == mean.size else None
    return mean @ dw if dw.ndim == 2 and dw.shape[0] == mean.size else None


def load_qtable(path: str | os.PathLike[str]) -> dict[str, str]:
    """A per-node precision table from a file: a JSON object {"node name": "precision"}, or
    text with one `node_name precision` per line (`#` starts a comment; the name is all
    but the last word, so it may hold spaces)."""
    from ..runtime.files import read_text

    text = read_text(path)  # its errors name the file: not regular, too large, not UTF-8
    if text.lstrip().startswith("{"):
        import json

        try:
            table = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        if not all(isinstance(v, str) for v in table.values()):
            raise ValueError(f"{path}: every value must be a precision name")
        return {str(k): v for k, v in table.items()}
    table = {}
    for i, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, prec = line.rpartition(" ")
        if not name.strip():
            raise ValueError(f"{path}:{i}: expected `node_name precision`, got `{line}`")
        table[name.strip()] = prec
    return table


# ops whose output is >= 0 whatever the input, ops whose output has a small negative
# minimum whatever the input (x sigmoid(x) at x = -1.2785, x relu6(x + 3) / 6 at x = -1.5),
# and ops whose output stays within its input's range
_NONNEGATIVE_OPS = frozenset({"Relu", "Sigmoid", "Softmax", "Abs"})
_BOUNDED_BELOW_OPS = {"SiLU": -0.27846454, "HardSwish": -0.375}
_SIGN_KEEPING_OPS = frozenset({"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Flatten", "Reshape",
                               "Squeeze", "Unsqueeze", "Transpose", "Identity"})


def lower_bounds(nodes: Sequence[Any]) -> dict[str, float]:
    """Values with a lower bound by construction -> that bound: 0 after a Relu, a Clip at a
    non-negative minimum, a Softmax, ...; SiLU's and HardSwish's minima after those; kept
    through pooling and layout ops, the lowest of a Concat's inputs."""
    out: dict[str, float] = {}
    for nd in nodes:  # topological order
        op, ins = nd.op, [v for v in nd.ins]
        lo = None
        if op in _NONNEGATIVE_OPS:
            lo = 0.0
        elif op in _BOUNDED_BELOW_OPS:
            lo = _BOUNDED_BELOW_OPS[op]
        elif op == "Clip":
            m = nd.attrs.get("min")
            if m is None and len(ins) > 1 and _is_const(ins[1]):
                m = float(np.asarray(ins[1].numpy()).ravel()[0]) if np.size(ins[1].numpy()) else None
            lo = 0.0 if m is not None and float(m) >= 0 else None
        elif op in _SIGN_KEEPING_OPS:
            lo = out.get(str(ins[0].name)) if ins and ins[0] is not None else None
        elif op == "Concat" and ins and all(v is not None and str(v.name) in out for v in ins):
            lo = min(out[str(v.name)] for v in ins)
        if lo is not None:
            out.update({str(v.name): lo for v in nd.outs})
    return out


def bounded_scale(threshold: float, lo: float) -> tuple[float, int]:
    """(scale, zero point) of an activation within [lo, threshold], lo < 0 small (a SiLU's
    output): the 256 codes span that range instead of [-threshold, threshold], the lowest
    code at or below lo: scale = (threshold - lo) / 254, zero point -128 + ceil(-lo / scale)."""
    scale = float(np.float32((float(threshold) - lo) / (2 * QMAX)))
    return scale, int(-QMAX - 1 + int(np.ceil(-lo / scale)))


def _is_const(v) -> bool:
    return v is not None and getattr(v, "data", None) is not None


def quantisable_inputs(nd: Any) -> list[str] | None:
    """Names of the activations an int8 node quantises (input 0, and B of a MatMul of
    two activations), or None when the node has no int8 form here."""
    if nd.op not in INT8_OPS or len(nd.ins) < 2 or nd.ins[0] is None or _is_const(nd.ins[0]):
        return None
    if nd.op == "MatMul" and not _is_const(nd.ins[1]):
        return [str(nd.ins[0].name), str(nd.ins[1].name)]
    if not _is_const(nd.ins[1]):
        return None
    return [str(nd.ins[0].name)]


def _to_int8(nd, info, thresholds, fresh, bounds=None, mean=None, corrected=None) -> str:
    """Rewrites ``nd`` into the quantised-node form; returns the reason when it cannot.
    A data input that is >= 0 by construction uses the whole int8 range: scale =
    threshold / 255 and zero point -128 (folded into the int32 bias); one with a small
    negative bound by construction (``bounds``: :func:`lower_bounds`), the range from that
    bound up (:func:`bounded_scale`). With ``mean`` (the
    data input's per-channel mean on the calibration samples) the bias is corrected for
    the shift the weights' quantisation causes (:func:`bias_shift`); ``corrected`` gets
    the node's name -> the largest |shift| relative to the output channels' |bias| + 1."""
    names = quantisable_inputs(nd)
    bounds = bounds or {}
    if names is None:
        return "no int8 form (constant data input or non-constant weights)"
    missing = [n for n in names if n not in thresholds]
    if missing:
        return f"no threshold for {', '.join(missing)}"
    for n in names:
        why = degenerate_range(n, thresholds[n])
        if why:
            return why
    # (a MatMul of two activations: the kernel corrects the zero point with B's column sums)
    lo = bounds.get(names[0])
    if lo is not None and lo >= 0:  # the whole range for values >= 0
        x_scale, zp = activation_scale(thresholds[names[0]], True), -128
    elif lo is not None and -lo < thresholds[names[0]]:  # (a SiLU's output: a narrower range)
        x_scale, zp = bounded_scale(thresholds[names[0]], lo)
    else:
        x_scale, zp = activation_scale(thresholds[names[0]]), 0
    attrs = dict(nd.attrs)
    attrs.update(tc_precision="int8", tc_x_scale=x_scale)
    if zp:
        attrs["tc_x_zero_point"] = zp
    if len(names) == 2:  # MatMul of two activations
        attrs["tc_b_scale"] = activation_scale(thresholds[names[1]])
        nd.attrs = attrs
        return ""
    w = np.asarray(nd.ins[1].numpy(), np.float32)
    bias = np.asarray(nd.ins[2].numpy(), np.float32) if len(nd.ins) > 2 and _is_const(nd.ins[2]) else None
    if len(nd.ins) > 2 and nd.ins[2] is not None and bias is None:
        return "a non-constant bias"
    if nd.op == "Conv":
        axis = 0
    elif nd.op == "MatMul":
        if w.ndim != 2:
            return "int8 MatMul weights must be 2-D"
        axis = 1
    else:  # Gemm
        if int(attrs.get("transA", 0)):
            return "Gemm with transA"
        axis = 0 if int(attrs.get("transB", 0)) else 1
        alpha, beta = float(attrs.pop("alpha", 1.0)), float(attrs.pop("beta", 1.0))
        w = w * np.float32(alpha)
        if bias is not None:
            n = w.shape[axis]
            if bias.size not in (1, n) or (bias.ndim == 2 and bias.shape[0] != 1):
                return "Gemm's C is not a per-column bias"
            bias = np.broadcast_to(bias.reshape(-1), (n,)) * np.float32(beta)
    q, w_scale = quantise_weights(w, axis)
    if mean is not None:
        shape = [1] * w.ndim
        shape[axis] = -1
        shift = bias_shift(nd.op, attrs, w, q.astype(np.float64) * w_scale.astype(np.float64).reshape(shape), mean)
        if shift is not None:
            bias = (np.zeros(shift.shape) if bias is None else bias.reshape(-1).astype(np.float64)) - shift
            if corrected is not None:
                corrected[nd.name] = float(np.max(np.abs(shift)))
    base = str(nd.ins[1].name)
    new_w = ConstantValue(fresh(base + "/int8"), q)
    new_s = ConstantValue(fresh(base + "/w_scale"), w_scale)
    new_b = None
    if bias is not None or zp:
        n = w_scale.shape[0]
        qb = np.zeros(n, np.int64) if bias is None else quantise_bias(bias.reshape(-1), x_scale, w_scale).astype(np.int64)
        if zp:  # sum_k (q - zp) w = sum_k q w - zp * sum_k w
            red = tuple(i for i in range(q.ndim) if i != axis)
            qb = qb - zp * q.astype(np.int64).sum(axis=red)
        # headroom: a depthwise Conv's taps (at most 256 of 128 x 128: 2^22) added to the
        # bias never leave the int32 range, where the vector engine saturates and the matrix
        # engine wraps
        qb = np.clip(qb, -(2 ** 31 - 2 ** 23), 2 ** 31 - 2 ** 23).astype(np.int32)
        bname = str(nd.ins[2].name) if len(nd.ins) > 2 and nd.ins[2] is not None else base
        new_b = ConstantValue(fresh(bname + "/int32"), qb)
    nd.ins = [nd.ins[0], new_w, new_b, new_s]
    for v in (new_w, new_s, new_b):
        if v is not None:
            info[v.name] = (tuple(v.data.shape), str(v.data.dtype))
    nd.attrs = attrs
    return ""


def _to_narrow(nd, precision, info, fresh, mean=None, corrected=None) -> str:
    """Marks ``nd`` f16/bf16 and stores its constant weights narrow. With ``mean`` (see
    :func:`_to_int8`) the f32 bias of a Conv or Gemm absorbs the shift the rounding of the
    weights causes."""
    attrs = dict(nd.attrs)
    attrs["tc_precision"] = precision
    nd.attrs = attrs
    if len(nd.ins) > 1 and _is_const(nd.ins[1]):
        w = np.asarray(nd.ins[1].numpy(), np.float32)
        a = narrow_array(w, precision)
        v = ConstantValue(fresh(f"{nd.ins[1].name}/{precision}"), a)
        info[v.name] = (tuple(a.shape), NARROW[precision])
        nd.ins = [nd.ins[0], v] + list(nd.ins[2:])
        if mean is not None and nd.op in ("Conv", "Gemm"):
            _correct_narrow_bias(nd, w, a, mean, info, fresh, corrected)
    return ""


def _correct_narrow_bias(nd, w, w_used, mean, info, fresh, corrected):
    shift = bias_shift(nd.op, nd.attrs, w, np.asarray(w_used, np.float32), mean)
    if shift is None:
        return
    n = shift.shape[0]
    bias = nd.ins[2] if len(nd.ins) > 2 else None
    if nd.op == "Gemm":  # y = alpha A B + beta C: C absorbs alpha * shift / beta
        beta = float(nd.attrs.get("beta", 1.0))
        if bias is None or not _is_const(bias) or beta == 0 or np.size(bias.numpy()) not in (1, n):
            return
        c = np.asarray(bias.numpy(), np.float64)
        if c.ndim == 2 and c.shape[0] != 1:
            return
        shift = shift * float(nd.attrs.get("alpha", 1.0)) / beta
        new = (np.broadcast_to(c.reshape(-1), (n,)) - shift).astype(np.float32).reshape((1, n) if c.ndim == 2 else (n,))
    else:
        if bias is not None and not _is_const(bias):
            return
        b = np.zeros(n) if bias is None else np.asarray(bias.numpy(), np.float64).reshape(-1)
        new = (b - shift).astype(np.float32)
    v = ConstantValue(fresh(f"{bias.name if bias is not None else nd.ins[1].name}/corrected"), new)
    info[v.name] = (tuple(new.shape), "float32")
    nd.ins = list(nd.ins[:2]) + [v] + list(nd.ins[3:])
    if corrected is not None:
        corrected[nd.name] = float(np.max(np.abs(shift)))


def assign(nodes: Sequence[Any], info: dict[str, Any], precision: str, qtable: Mapping[str, str] | None,
           thresholds: Mapping[str, float] | None, HasStrategy: Callable[..., str], TensorSpec: type,
           means: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Sets each npu matrix node's precision (rewriting ``nd.attrs``, ``nd.ins``,
    ``nd.in_specs``, adding the new constants to ``info``). ``means``: data input name ->
    per-channel mean on the calibration samples, for the bias correction. Returns
    {"assigned": {node: precision}, "fallbacks": [{node, op_type, asked, reason}],
    "io": {node: (data input, output)} of every npu matrix node, "thresholds": the ones used,
    "bias_correction": {node: largest |shift| absorbed by its bias}}."""
    used = set(info)
    counter = {}

    def fresh(base):
        name, k = base, counter.get(base, 1)
        while name in used:
            k += 1
            name = f"{base}_{k}"
        counter[base] = k
        used.add(name)
        return name

    known = {nd.name for nd in nodes}
    unknown = sorted(set(qtable or {}) - known)
    if unknown:
        raise ValueError(f"qtable: no node named {', '.join(f'`{n}`' for n in unknown[:5])} in the graph "
                         "(names are the ONNX node names after the graph passes)")
    assigned, fallbacks, io, corrected = {}, [], {}, {}
    bounds = lower_bounds(nodes)
    for nd in nodes:
        if nd.where != "npu" or nd.op not in MATRIX_OPS:
            continue
        if nd.ins and nd.ins[0] is not None and nd.outs:
            io[nd.name] = (str(nd.ins[0].name), str(nd.outs[0].name))
        if str(nd.attrs.get("tc_precision", "f32")) not in ("f32", ""):  # already in a form (an importer's)
            assigned[nd.name] = str(nd.attrs["tc_precision"])
            continue
        want = (qtable or {}).get(nd.name, precision)
        if want == "f32":
            continue
        saved = (nd.attrs, list(nd.ins), nd.in_specs)
        mean = (means or {}).get(str(nd.ins[0].name)) if nd.ins and nd.ins[0] is not None else None
        tried = {}
        if want == "int8":
            why = _to_int8(nd, info, thresholds or {}, fresh, bounds, mean, tried)
        else:
            why = _to_narrow(nd, want, info, fresh, mean, tried)
        if not why:
            nd.in_specs = [None if v is None else TensorSpec(*info[str(v.name)]) for v in nd.ins]
            why = str(HasStrategy(nd.op, nd.attrs, nd.in_specs))
            if why and nd.attrs.get("tc_b_scale") and nd.attrs.get("tc_x_zero_point"):
                # A's zero point has limits (docs/precision.md): A symmetric then
                a = str(nd.ins[0].name)
                symmetric = {k: v for k, v in nd.attrs.items() if k != "tc_x_zero_point"}
                symmetric["tc_x_scale"] = activation_scale(thresholds[a])
                if not str(HasStrategy(nd.op, symmetric, nd.in_specs)):
                    nd.attrs, why = symmetric, ""
        if why:
            nd.attrs, nd.ins, nd.in_specs = saved
            fallbacks.append({"node": nd.name, "op_type": nd.op, "asked": want, "reason": why})
            continue
        assigned[nd.name] = want
        corrected.update(tried)
    return {"assigned": assigned, "fallbacks": fallbacks, "io": io, "thresholds": dict(thresholds or {}),
            "bias_correction": corrected}
