"""Activation calibration for int8: a threshold per tensor from sample inputs.

    table = calibrate("model.onnx", {"input": x16})   # x16: (N, *input_shape), sample i = x16[i]
    table.thresholds["conv1_out"]                     # symmetric absmax: scale = threshold / 127
    table.methods["conv1_out"]                        # "minmax", "percentile" or "kl"
    table.save("calib.json"); CalibTable.load("calib.json")

Every float tensor of the model (its inputs and every node output) is collected by ONNX
Runtime with all values added as graph outputs, one sample at a time, in two passes: the
first finds each tensor's absolute maximum, the second fills a histogram of |x| of
``bins`` (2048) bins over [0, absmax]. The thresholds, all from that histogram:

* ``minmax``: the absolute maximum;
* ``percentile``: the upper edge of the bin where the cumulative count reaches
  ``percentile`` (99.99) per cent of the values;
* ``kl``: TensorRT's entropy calibration: for each candidate i of 128..bins bins, the
  reference distribution is the first i bins with the clipped tail added to the last
  one, the candidate is those i bins merged into 128 levels and spread back uniformly
  over the non-empty bins; the i of the least KL divergence gives the threshold
  (i + 0.5) bin widths. Exact zeros are left out of its histogram: they quantise
  exactly at any threshold, and a Relu's spike of zeros merged into the first level
  would push the search to the narrowest levels (a threshold of 1/8 of the maximum);
* ``auto``: per tensor, the one of the three whose symmetric int8 quantisation
  (scale threshold / 127, round, clip to +-127) has the least mean squared error over
  the histogram (each bin's values taken at the bin centre, exact zeros without error).

A tensor that is zero on every sample gets threshold 0: its range is degenerate, and the
compiler keeps the nodes that would quantise it in f32, naming it. A tiny range is kept
as it is (a model whose activations are 1e-14 quantises them at that scale). The table is a JSON file (``save``/``load``) meant to be edited: ``load`` validates the
version and every entry and names the entry at fault.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Mapping

import numpy as np

METHODS = ("minmax", "percentile", "kl")
FORMAT = "tilecore-calibration"
VERSION = 1
_KL_LEVELS = 128


class CalibrationError(ValueError):
    """Bad samples or a bad calibration table: the message names the input or entry."""


def check_samples(samples: Mapping[str, Any]) -> None:
    """CalibrationError naming the input, the sample and the index of the first NaN or
    infinity in calibration samples (input name -> array (N, *shape)): one such value
    makes every threshold and channel mean it reaches meaningless, and the compiled model
    with them, so samples are refused rather than used."""
    for name, a in samples.items():
        a = np.asarray(a)
        if a.dtype.kind not in "fc" or a.ndim == 0 or np.isfinite(a).all():
            continue
        at = np.argwhere(~np.isfinite(a))[0]
        v = a[tuple(at)]
        what = "NaN" if np.isnan(v) else ("inf" if v.real > 0 or v.imag > 0 else "-inf")
        raise CalibrationError(f"calibration samples: input `{name}` sample {at[0]} holds {what} at "
                               f"[{', '.join(str(int(i)) for i in at[1:])}]")


def check_statistic(value: str, statistic: float, sample: int) -> None:
    """CalibrationError when a value the model computes from (finite) samples is NaN or
    infinite: its threshold or mean would be too, so the value and the sample are named."""
    if not math.isfinite(statistic):
        what = "NaN" if math.isnan(statistic) else "infinite"
        raise CalibrationError(f"calibration samples: value `{value}` is {what} on sample {sample} (the model "
                               "computes it from finite inputs), so no threshold or mean can be measured for it")


class CalibTable:
    """Per-tensor int8 thresholds (symmetric absmax) and how each was chosen.

    ``thresholds``: value name -> float (what ``compile(..., calib=)`` consumes);
    ``methods``: value name -> the method that gave it; ``stats``: value name -> dict of
    ``absmax`` and every candidate threshold (informative); ``meta``: how it was made.
    """

    def __init__(self, thresholds: Mapping[str, float], methods: Mapping[str, str] | None = None,
                 stats: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None) -> None:
        self.thresholds = {str(k): float(v) for k, v in thresholds.items()}
        self.methods = dict(methods or {})
        self.stats = dict(stats or {})
        self.meta = dict(meta or {})

    def __repr__(self) -> str:
        return f"CalibTable({len(self.thresholds)} tensors, method={self.meta.get('method', '?')})"

    def scale(self, name: str) -> float:
        """The int8 scale of ``name``: threshold / 127."""
        return self.thresholds[name] / 127.0

    def with_method(self, method: str) -> CalibTable:
        """A table of the same tensors with ``method``'s threshold for each (from the
        candidates an ``auto`` calibration keeps; a tensor without one keeps its own)."""
        if method not in METHODS:
            raise CalibrationError(f"calibration method `{method}` is not one of {', '.join(METHODS)}")
        thresholds, methods = dict(self.thresholds), dict(self.methods)
        for n, st in self.stats.items():
            cand = st.get("candidates", {}) if isinstance(st, dict) else {}
            if method in cand and n in thresholds:
                thresholds[n] = float(cand[method])
                methods[n] = method
        return CalibTable(thresholds, methods, self.stats, dict(self.meta, method=method))

    def to_json(self) -> dict[str, Any]:
        tensors = {}
        for name, t in self.thresholds.items():
            e = {"threshold": t, "method": self.methods.get(name, "manual")}
            if name in self.stats:
                e.update(self.stats[name])
            tensors[name] = e
        return {"format": FORMAT, "version": VERSION, **self.meta, "tensors": tensors}

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the table as JSON, atomically (an interrupted write leaves the old file)."""
        from ..runtime.files import write_bytes

        write_bytes(path, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], where: str = "calibration table") -> CalibTable:
        if not isinstance(doc, dict):
            raise CalibrationError(f"{where}: expected a JSON object, got {type(doc).__name__}")
        if doc.get("format", FORMAT) != FORMAT:
            raise CalibrationError(f"{where}: format `{doc.get('format')}` is not `{FORMAT}`")
        if "version" not in doc:
            raise CalibrationError(f"{where}: no `version` field")
        if doc["version"] != VERSION:
            raise CalibrationError(f"{where}: version {doc['version']!r} is not supported (this tilecore reads "
                                   f"version {VERSION})")
        tensors = doc.get("tensors")
        if not isinstance(tensors, dict):
            raise CalibrationError(f"{where}: `tensors` must be an object of value name -> entry")
        thresholds, methods, stats = {}, {}, {}
        for name, e in tensors.items():
            here = f"{where}: entry `{name}`"
            if isinstance(e, (int, float)) and not isinstance(e, bool):
                e = {"threshold": e}  # the short hand-edited form: name -> threshold
            if not isinstance(e, dict):
                raise CalibrationError(f"{here}: expected an object with `threshold` or a number")
            t = e.get("threshold")
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
                raise CalibrationError(f"{here}: threshold must be a finite number >= 0 (0: zero on every sample), "
                                       f"got {t!r}")
            m = e.get("method", "manual")
            if m not in METHODS + ("manual",):
                raise CalibrationError(f"{here}: method `{m}` is not one of {', '.join(METHODS + ('manual',))}")
            thresholds[name] = float(t)
            methods[name] = m
            extra = {k: v for k, v in e.items() if k not in ("threshold", "method")}
            if extra:
                stats[name] = extra
        meta = {k: v for k, v in doc.items() if k not in ("format", "version", "tensors")}
        return cls(thresholds, methods, stats, meta)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CalibTable:
        """Reads and validates a table :meth:`save` wrote (or a hand-edited one); a file that
        is not a regular file, not UTF-8 or not JSON is a CalibrationError naming it."""
        from ..runtime.files import load_json

        try:
            doc = load_json(path)
        except ValueError as e:
            raise CalibrationError(f"calibration table {e}") from None
        return cls.from_json(doc, where=f"calibration table `{os.fspath(path)}`")


# ---- thresholds from a histogram of |x| ----------------------------------------------------

def threshold_percentile(hist: np.ndarray, width: float, percentile: float) -> float:
    """Upper edge of the bin where the cumulative count reaches ``percentile`` %."""
    total = hist.sum()
    if total == 0:
        return 0.0
    cdf = np.cumsum(hist)
    i = int(np.searchsorted(cdf, total * percentile / 100.0))
    return float(min(i + 1, len(hist)) * width)


def threshold_kl(hist: np.ndarray, width: float, levels: int = _KL_LEVELS) -> float:
    """TensorRT-style entropy calibration over ``hist`` (bins of ``width``).

    Every candidate i of ``levels``..n bins at once, from prefix sums: with P the first i
    bins (the tail sum(hist[i:]) added to bin i-1) and Q those bins merged into
    ``levels`` levels (the last level takes the remainder) and spread back uniformly over
    the non-empty bins, KL(P/|P| || Q/|Q|) is
    ``(sum p log p - sum p log q) / |P| + (W / |P|) (log |Q| - log |P|)`` over the bins
    where q > 0 (W their mass), plus, when bin i-1 is empty but the tail is not, the
    tail's term against a q of 1e-12. The first i of least divergence wins."""
    h = np.asarray(hist, dtype=np.float64)
    n = len(h)
    total = h.sum()
    if total == 0:
        return 0.0
    if n <= levels:
        return float(n * width)
    i = np.arange(levels, n + 1)
    cs = np.concatenate([[0.0], np.cumsum(h)])
    nzc = np.concatenate([[0], np.cumsum(h > 0)])
    hlogh = np.concatenate([[0.0], np.cumsum(np.where(h > 0, h * np.log(np.where(h > 0, h, 1.0)), 0.0))])
    merged = i // levels
    starts = merged[:, None] * np.arange(levels)[None, :]
    ends = starts + merged[:, None]
    ends[:, -1] = i
    level_sum = cs[ends] - cs[starts]
    level_nz = nzc[ends] - nzc[starts]
    ok = level_nz > 0
    avg = np.where(ok, level_sum / np.where(ok, level_nz, 1), 1.0)
    # sum over the non-empty bins j < i of hist[j] log q[j]
    plogq = np.sum(np.where(ok, level_sum * np.log(np.where(ok, avg, 1.0)), 0.0), axis=1)
    qs = cs[i]
    tail = total - qs
    last = h[i - 1]
    p_last = last + tail
    with np.errstate(divide="ignore", invalid="ignore"):
        kl_last_full = ((hlogh[i - 1] + p_last * np.log(np.where(p_last > 0, p_last, 1.0))
                         - plogq - tail * np.log(avg[:, -1])) / total + (np.log(qs) - np.log(total)))
        tail_p = tail / total
        smoothed = np.where(tail > 0, tail_p * np.log(np.where(tail > 0, tail_p, 1.0) / 1e-12), 0.0)
        kl_last_empty = (hlogh[i - 1] - plogq) / total + (qs / total) * (np.log(qs) - np.log(total)) + smoothed
        kl = np.where(last > 0, kl_last_full, kl_last_empty)
    kl = np.where(qs > 0, kl, np.inf)
    return float((i[int(np.argmin(kl))] + 0.5) * width)


def quantisation_mse(hist: np.ndarray, width: float, threshold: float, qmax: int = 127) -> float:
    """Mean squared error of symmetric int8 quantisation with ``threshold`` over the
    histogram of |x| (values at their bin centres)."""
    total = hist.sum()
    if total == 0 or threshold <= 0:
        return 0.0
    centres = (np.arange(len(hist)) + 0.5) * width
    scale = threshold / qmax
    q = np.clip(np.round(centres / scale), 0, qmax) * scale
    return float(np.dot(hist, (centres - q) ** 2) / total)


# ---- collecting the tensors -----------------------------------------------------------------

def float_values(model: Any) -> list[str]:
    """Names of the float32 tensors of ``model``: graph inputs and node outputs."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model)
    types = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        types[vi.name] = vi.type.tensor_type.elem_type
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    for node in model.graph.node:
        names.extend(o for o in node.output if o)
    f32 = onnx.TensorProto.FLOAT
    return [n for n in names if types.get(n) == f32]


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
              "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
              "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


class Collector:
    """Runs the model on one sample at a time with every float tensor as an output."""

    def __init__(self, model: Any, samples: Mapping[str, np.ndarray] | None = None) -> None:
        import onnx
        from onnx import helper

        from ..extras import require

        ort = require("onnxruntime", "calibration on ONNX Runtime")

        from .compare import _load_model

        model = _load_model(model)
        inits = {t.name for t in model.graph.initializer}
        self.inputs = [i.name for i in model.graph.input if i.name not in inits]
        self.names = float_values(model)
        m = onnx.ModelProto()
        m.CopyFrom(model)
        have = {o.name for o in m.graph.output}
        for n in self.names:
            if n not in have and n not in self.inputs:
                m.graph.output.append(helper.make_empty_tensor_value_info(n))
                m.graph.output[-1].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        self.sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        self.out_names = [o.name for o in self.sess.get_outputs()]
        self.samples, self.count = self._check(samples) if samples is not None else ({}, 0)

    def with_samples(self, samples: Mapping[str, np.ndarray]) -> Collector:
        """This collector (its session) on other samples: a shard reuses the session."""
        self.samples, self.count = self._check(samples)
        return self

    def _check(self, samples):
        missing = [n for n in self.inputs if n not in samples]
        if missing:
            raise CalibrationError(f"calibration samples: no array for input(s) {', '.join(missing)} "
                                   f"(have {', '.join(sorted(samples)) or 'none'})")
        count, arrays = None, {}
        shapes = {i.name: i.shape for i in self.sess.get_inputs()}
        types = {i.name: _ORT_TYPES.get(i.type) for i in self.sess.get_inputs()}
        for n in self.inputs:
            a = np.asarray(samples[n])
            want_t = types.get(n)
            if want_t is not None and a.dtype != want_t:
                if a.dtype.kind == "f" and np.dtype(want_t).kind == "f":
                    with np.errstate(over="ignore"):  # beyond the range: inf, which check_samples names
                        a = a.astype(want_t)  # float64 samples for a float32 model: converted
                else:
                    raise CalibrationError(f"calibration samples: input `{n}` is {a.dtype}, the model takes "
                                           f"{np.dtype(want_t)}")
            want = shapes[n]
            if a.ndim != len(want) + 1:
                raise CalibrationError(f"calibration samples: input `{n}` has shape {a.shape}, expected "
                                       f"(N, {', '.join(str(d) for d in want)})")
            for d, w in zip(a.shape[1:], want):
                if isinstance(w, int) and d != w:
                    raise CalibrationError(f"calibration samples: input `{n}` has shape {a.shape}, expected "
                                           f"(N, {', '.join(str(d) for d in want)})")
            if count is not None and a.shape[0] != count:
                raise CalibrationError(f"calibration samples: input `{n}` has {a.shape[0]} samples, the others "
                                       f"{count}")
            count = a.shape[0]
            arrays[n] = a
        if not count:
            raise CalibrationError("calibration samples: no samples (N = 0)")
        check_samples(arrays)  # after the conversion above: a float64 beyond float32's range is inf now
        return arrays, count

    def __iter__(self):
        """One dict name -> array per sample."""
        for i in range(self.count):
            feed = {n: np.ascontiguousarray(a[i]) for n, a in self.samples.items()}
            res = dict(zip(self.out_names, self.sess.run(self.out_names, feed)))
            res.update(feed)
            yield {n: res[n] for n in self.names if n in res}


def collect_absmax(collector: Collector, first_sample: int = 0) -> dict[str, float]:
    """The map of the first pass: value name -> max |x| over the collector's samples
    (``first_sample``: the index of its first sample in the whole set, for errors)."""
    absmax: dict[str, float] = {}
    for i, values in enumerate(collector):
        for n, v in values.items():
            m = float(np.max(np.abs(v))) if v.size else 0.0
            check_statistic(n, m, first_sample + i)
            absmax[n] = max(absmax.get(n, 0.0), m)
    return absmax


def merge_absmax(parts: list[dict[str, float]]) -> dict[str, float]:
    """The reduce of the first pass: the max per value (exact in any order)."""
    out: dict[str, float] = {}
    for part in parts:
        for n, m in part.items():
            out[n] = max(out.get(n, 0.0), m)
    return out


def collect_histograms(collector: Collector, absmax: Mapping[str, float],
                       bins: int = 2048) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The map of the second pass: (value name -> int64 counts of |x| in ``bins`` bins over
    [0, absmax], value name -> count of exact zeros) over the collector's samples. The
    edges come from the merged ``absmax`` alone, so every shard bins a value the same."""
    hists = {n: np.zeros(bins, dtype=np.int64) for n in absmax}
    zeros = dict.fromkeys(absmax, 0)  # exact zeros: quantised exactly at any threshold
    for values in collector:
        for n, v in values.items():
            if absmax.get(n, 0) > 0:
                h, _ = np.histogram(np.abs(v), bins=bins, range=(0.0, absmax[n]))
                hists[n] += h
                zeros[n] += int(v.size - np.count_nonzero(v))
    return hists, zeros


def merge_histograms(parts: list[tuple[dict[str, np.ndarray], dict[str, int]]]) -> tuple[dict[str, np.ndarray],
                                                                                        dict[str, int]]:
    """The reduce of the second pass: counts added (integers: exact in any order)."""
    hists: dict[str, np.ndarray] = {}
    zeros: dict[str, int] = {}
    for h, z in parts:
        for n, counts in h.items():
            hists[n] = hists[n] + counts if n in hists else counts.copy()
        for n, c in z.items():
            zeros[n] = zeros.get(n, 0) + c
    return hists, zeros


def check_method(method: str, percentile: float) -> None:
    if method not in METHODS + ("auto",):
        raise CalibrationError(f"calibration method `{method}` is not one of auto, {', '.join(METHODS)}")
    if not 0 < percentile <= 100:
        raise CalibrationError(f"percentile {percentile} is not in (0, 100]")


def table_from_statistics(names: list[str], absmax: Mapping[str, float], hists: Mapping[str, np.ndarray],
                          zeros: Mapping[str, int], count: int, method: str = "auto", percentile: float = 99.99,
                          bins: int = 2048) -> CalibTable:
    """The :class:`CalibTable` of merged statistics (``names``: the values in the model's
    order; ``count``: the samples they were collected over)."""
    thresholds, methods, stats = {}, {}, {}
    for n in names:
        if n not in absmax:
            continue
        amax = absmax[n]
        if amax == 0:  # degenerate: the compiler keeps its readers wider
            thresholds[n], methods[n] = 0.0, "minmax"
            stats[n] = {"absmax": 0.0}
            continue
        width = amax / bins
        h = hists[n].astype(np.float64)
        cand = {"minmax": amax}
        if method in ("percentile", "auto"):
            cand["percentile"] = threshold_percentile(h, width, percentile)
        nonzero = h.copy()
        nonzero[0] -= zeros[n]  # a Relu's zeros: no error at any threshold, and a spike KL cannot merge
        if method in ("kl", "auto"):
            cand["kl"] = threshold_kl(nonzero, width) if nonzero.sum() > 0 else amax
        if method == "auto":
            mse = {k: quantisation_mse(nonzero, width, t) * nonzero.sum() / h.sum() for k, t in cand.items()}
            chosen = min(METHODS, key=lambda k: (mse[k], METHODS.index(k)))
        else:
            chosen = method
        thresholds[n] = float(cand[chosen])
        methods[n] = chosen
        stats[n] = {"absmax": amax, "candidates": {k: float(v) for k, v in cand.items()}}
    meta = {"method": method, "samples": count, "bins": bins, "percentile": percentile}
    return CalibTable(thresholds, methods, stats, meta)


def calibrate(model: Any, samples: Mapping[str, np.ndarray], method: str = "auto", percentile: float = 99.99,
              bins: int = 2048) -> CalibTable:
    """A :class:`CalibTable` of every float tensor of ``model`` (an ONNX path, bytes or
    ModelProto) over ``samples`` (input name -> array (N, *input_shape)).

    The work is a map-reduce of one shard (``tilecore.bench.calibration`` runs it over
    many: the table is the same bit for bit): a pass of absolute maxima merged by max,
    then a pass of histograms with edges fixed by them, merged by adding counts.

    :param method: ``"auto"`` (least quantisation MSE of the three per tensor),
        ``"minmax"``, ``"percentile"`` or ``"kl"``.
    :raises CalibrationError: a missing input, a shape or sample-count mismatch, a bad method.
    """
    check_method(method, percentile)
    col = Collector(model, samples)
    absmax = merge_absmax([collect_absmax(col)])
    hists, zeros = merge_histograms([collect_histograms(col, absmax, bins)])
    return table_from_statistics(col.names, absmax, hists, zeros, col.count, method, percentile, bins)


def load_samples(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The ``.npz`` of calibration samples: input name -> (N, *input_shape); a file that is
    not one (not a regular file, not a zip of arrays, Python objects inside) or that holds
    a NaN or an infinity is a CalibrationError naming the file."""
    from ..runtime.files import load_npz

    try:
        samples = load_npz(path)  # its errors name the file
    except ValueError as e:
        raise CalibrationError(str(e)) from None
    try:
        check_samples(samples)
    except CalibrationError as e:
        raise CalibrationError(f"{os.fspath(path)}: {e}") from None
    return samples
