"""The ONNX backend node tests compiled and run by tilecore, case by case.

Each case of the node tests shipped in the ``onnx`` package (one small model, its data
sets of inputs and expected outputs) is first run by ONNX Runtime, the oracle: a case it
fails does not count. Then ``tilecore.compile`` builds the model (npu strategies and
tilecore's own host kernels) and ``Executable.run`` runs every data set; the outputs are
compared with the expected ones with the case's tolerances (the backend tests' rtol=1e-3,
atol=1e-7 unless the case says otherwise). Ops whose outputs are random draws are compared
by shape and dtype only. Graph inputs that only feed operands tilecore needs when compiling
(Slice's starts, Resize's scales, a reduction's axes, ...: COMPILE_TIME_OPERANDS) are bound
to each data set's values as initializers, as a deployed model carries them, unless
``bind=False``: then the model is compiled as ``tilecore compile`` takes the file, every
input fed when it runs.

The model reaches ``tilecore.compile`` through one of ``ENTRY_POINTS``: ``bytes`` (its
serialised bytes, as ``tilecore compile`` reads a file) or ``graph`` (the Graph that
``tilecore.frontend.from_onnx`` makes of it); both must give the same result.

    from tilecore.compiler import conformance
    cases = conformance.load_cases(r"^test_(relu|add)$")
    row = conformance.run_case(cases[0])  # {"case", "status", "reason", "places", ...}

``status`` is ``pass``, ``fail`` (wrong values, shape or dtype: ``reason`` gives the max
error), ``compile`` (``tilecore.compile`` raised: the first line of its message), ``run``
(``Executable.run`` raised) or ``skip`` (ONNX Runtime fails the case). ``outcome`` sorts
the statuses for a sweep: ``pass``, ``refused`` (a named error: tilecore's or the
importer's error types, from compiling or from a check when running), ``wrong`` (wrong
values, shape or dtype: silently wrong), ``rounding`` (a 16-bit float output off the
expected data by more than the case's tolerance but at most ULPS_16 units in the last
place: the expected data of such cases round in float16 at every step of the reference,
tilecore rounds each node's result once) or ``crashed`` (any other exception, a worker
that died, a hang). ``places`` maps each
node (as compiled) to ``npu``, ``host`` or ``view``. benchmarks/compiled_node_tests.py is the
full sweep (cases as ``tilecore bench`` jobs, whose compare stage uses this module's
comparison); tests/python/compiler/test_compiled_node_tests.py a slice of it.
"""
from __future__ import annotations

import collections
import re
import time
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

#: Ops whose outputs are random draws: only shape and dtype can agree.
RANDOM_OPS = frozenset({"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform",
                        "RandomUniformLike"})

_CASES = None


def _all_cases():
    global _CASES
    if _CASES is None:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            from onnx.backend.test.case.node import collect_testcases

            _CASES = [c for c in collect_testcases() if c.model is not None and c.data_sets]
    return _CASES


def load_cases(name_regex: str | None = None) -> list[Any]:
    """The node-test cases (onnx's TestCase: name, model, data_sets, rtol, atol) whose
    names match ``name_regex`` (``re.search``), in the onnx package's order."""
    pat = re.compile(name_regex) if name_regex else None
    return [c for c in _all_cases() if pat is None or pat.search(c.name)]


def case_op_type(case: Any) -> str:
    """The op type a case tests: its one node's, or (an ``_expanded`` function body) the
    most common one."""
    kinds = collections.Counter(n.op_type for n in case.model.graph.node)
    return kinds.most_common(1)[0][0] if kinds else ""


def _as_array(value):
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [_as_array(v) for v in value]
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def data_sets(case: Any) -> list[tuple[dict[str, Any], list[str], list[Any]]]:
    """[(feed by input name, output names, expected outputs)], one per data set."""
    inits = {init.name for init in case.model.graph.initializer}
    names_in = [i.name for i in case.model.graph.input if i.name not in inits]
    names_out = [o.name for o in case.model.graph.output]
    out = []
    for inputs, outputs in case.data_sets:
        out.append((dict(zip(names_in, [_as_array(v) for v in inputs])), names_out, [_as_array(v) for v in outputs]))
    return out


def compare(expected: Any, actual: Any, rtol: float, atol: float) -> str | None:
    """Why ``actual`` differs from ``expected`` (with the max error), or None."""
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"expected a sequence of {len(expected)}, got {type(actual).__name__}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            why = compare(e, a, rtol, atol)
            if why:
                return f"element {i}: {why}"
        return None
    if expected is None:
        return None if actual is None else "expected an empty optional"
    if actual is None:
        return "no output"
    expected, actual = np.asarray(expected), np.asarray(actual)
    if tuple(actual.shape) != tuple(expected.shape):
        return f"shape {tuple(actual.shape)} != expected {tuple(expected.shape)}"
    if expected.dtype == object or actual.dtype == object:
        return None if expected.tolist() == actual.tolist() else "string values differ"
    if expected.dtype != actual.dtype:
        return f"dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype.kind in "biu":
        bad = np.flatnonzero(expected != actual)
        if bad.size == 0:
            return None
        err = np.abs(expected.astype(np.float64) - actual.astype(np.float64)).max()
        return f"{bad.size} of {expected.size} values differ (max abs error {err:.4g})"
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    with np.errstate(all="ignore"):
        ok = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        if ok.all():
            return None
        diff = np.abs(a - e)[~ok]
        err = np.nanmax(diff) if np.isfinite(diff).any() or not np.isnan(diff).all() else float("nan")
    return f"{int((~ok).sum())} of {e.size} values differ (max abs error {err:.4g})"


#: A 16-bit float output at most this many units in the last place off the expected data
#: is a ``rounding`` outcome, not a ``wrong`` one.
ULPS_16 = 2


def first_difference(case: Any, names: Sequence[str], expected: Sequence[Any], got: Mapping[str, Any],
                     data_set: int) -> tuple[str | None, bool]:
    """The first output of data set ``data_set`` that differs from its expected value, as
    (reason, within 16-bit rounding), or (None, False) when every output matches."""
    for name, e in zip(names, expected):
        why = _compare_case(case, e, got.get(name))
        if why:
            rounding = within_16bit_rounding(e, got.get(name))
            why = f"output {name}: {why}" + (f" (data set {data_set})" if data_set else "")
            if rounding:
                why += f" (within {ULPS_16} units in the last place of {np.asarray(e).dtype})"
            return why, rounding
    return None, False


def within_16bit_rounding(expected: Any, actual: Any, ulps: int = ULPS_16) -> bool:
    """Whether a float16 or bfloat16 ``actual`` is at most ``ulps`` units in the last place
    (of the expected value, in that type) off ``expected`` everywhere (NaN where it is)."""
    e, a = np.asarray(expected), np.asarray(actual)
    if e.shape != a.shape or e.dtype != a.dtype or e.dtype.itemsize != 2 or e.dtype.kind not in "fV":
        return False
    if e.dtype.kind == "f" and e.dtype != np.float16 and not e.dtype.name == "bfloat16":
        return False
    mantissa = 10 if e.dtype == np.float16 else 7
    e64, a64 = e.astype(np.float64), a.astype(np.float64)
    with np.errstate(all="ignore"):
        ulp = np.exp2(np.floor(np.log2(np.abs(e64))) - mantissa)
        ulp = np.where(np.isfinite(ulp) & (ulp > 0), ulp, np.exp2(-14 - mantissa))
        ok = (np.abs(a64 - e64) <= ulps * ulp) | (np.isnan(e64) & np.isnan(a64)) | (e64 == a64)
    return bool(ok.all())


def _compare_case(case, expected, actual):
    if {n.op_type for n in case.model.graph.node} & RANDOM_OPS and not isinstance(expected, list) \
            and expected is not None and actual is not None:
        e, a = np.asarray(expected), np.asarray(actual)
        if e.shape != a.shape or e.dtype != a.dtype:
            return f"random output: shape/dtype {a.shape} {a.dtype} != expected {e.shape} {e.dtype}"
        return None
    return compare(expected, actual, case.rtol, case.atol)


def _ort_bits(array):
    """The unsigned type of the same width for bfloat16/float8 arrays (ONNX Runtime's Python
    API takes those as raw bits only), else None."""
    if array.dtype.kind == "V" or (array.dtype.kind == "f" and array.dtype.type.__module__.startswith("ml_dtypes")):
        return {1: np.uint8, 2: np.uint16}.get(array.dtype.itemsize)
    return None


def _ort_run(ort, sess, case, feed, names_out, expected):
    from onnx import helper

    if not any(_ort_bits(v) for v in list(feed.values()) + expected if isinstance(v, np.ndarray)):
        return sess.run(None, feed)
    types = {v.name: v.type.tensor_type.elem_type for v in list(case.model.graph.input) + list(case.model.graph.output)}
    binding = sess.io_binding()
    for name, value in feed.items():
        bits = _ort_bits(value) if isinstance(value, np.ndarray) else None
        if bits is None:
            binding.bind_cpu_input(name, np.ascontiguousarray(value))
        else:
            binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
                np.ascontiguousarray(value).view(bits), types[name]))
    buffers = {}
    for name, e in zip(names_out, expected):
        e = np.asarray(e)
        bits = _ort_bits(e)
        if bits is None:
            binding.bind_output(name, "cpu")
        else:
            buffers[name] = np.zeros(e.shape, bits)
            binding.bind_ortvalue_output(name, ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
                buffers[name], types[name]))
    sess.run_with_iobinding(binding)
    outs = binding.get_outputs()
    return [buffers[n].view(helper.tensor_dtype_to_np_dtype(types[n])) if n in buffers else outs[i].numpy()
            for i, n in enumerate(names_out)]


def ort_reason(case: Any) -> str | None:
    """None when ONNX Runtime passes every data set of the case, else why not."""
    from ..extras import require

    ort = require("onnxruntime", "checking ONNX Runtime's results")
    ort.set_default_logger_severity(4)  # the oracle's own failures are this function's answer, not logs
    try:
        so = ort.SessionOptions()
        so.log_severity_level = 4
        sess = ort.InferenceSession(case.model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        for feed, names_out, expected in data_sets(case):
            got = _ort_run(ort, sess, case, feed, names_out, expected)
            for name, e, a in zip(names_out, expected, got):
                why = _compare_case(case, e, a)
                if why:
                    return f"output {name}: {why}"
    except Exception as exc:  # noqa: BLE001 — the oracle fails: the case does not count
        return f"{type(exc).__name__}: {_first_line(exc)}"
    return None


def _first_line(exc):
    """The message's first line; when it only announces a list ("cannot compile 1 node(s)
    of graph g:"), the list's first entry too."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines()]
    if not lines or not lines[0]:
        return type(exc).__name__
    s = lines[0]
    if s.endswith(":") and len(lines) > 1:
        s = f"{s} {lines[1]}"
    return s[:400]


#: Operands whose values tilecore needs when compiling (they set shapes or index
#: arithmetic): op type -> input positions. A deployed model carries them as initializers.
COMPILE_TIME_OPERANDS = {
    "Slice": (1, 2, 3, 4), "Pad": (1, 2, 3), "Split": (1,), "Tile": (1,), "Resize": (1, 2, 3), "Upsample": (1,),
    "Reshape": (1,), "Expand": (1,), "ConstantOfShape": (0,), "Squeeze": (1,), "Unsqueeze": (1,), "CumSum": (1,), "CumProd": (1,),
    "TopK": (1,), "Range": (0, 1, 2), "OneHot": (1,), "CenterCropPad": (1,),
    "BlackmanWindow": (0,), "HannWindow": (0,), "HammingWindow": (0,),
    **{op: (1,) for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                           "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")},
}


def compile_time_inputs(model: Any) -> list[str]:
    """The graph inputs that only feed COMPILE_TIME_OPERANDS (in the main graph)."""
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    uses = collections.defaultdict(list)
    for node in model.graph.node:
        for k, x in enumerate(node.input):
            uses[x].append(k in COMPILE_TIME_OPERANDS.get(node.op_type, ()))
        for a in node.attribute:  # a subgraph may read any outer value at run time
            for g in list(a.graphs) + ([a.g] if a.HasField("g") else []):
                for n in g.node:
                    for x in n.input:
                        uses[x].append(False)
    return [n for n in names if uses[n] and all(uses[n])]


def bind_inputs(model: Any, values: Mapping[str, Any]) -> Any:
    """A copy of ``model`` with the inputs in ``values`` made initializers."""
    from onnx import ModelProto, numpy_helper

    m = ModelProto.FromString(model.SerializeToString())
    keep = [i for i in m.graph.input if i.name not in values]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    for name, v in values.items():
        m.graph.initializer.append(numpy_helper.from_array(np.asarray(v), name))
    return m


#: How a case's model reaches ``tilecore.compile``: ``bytes``, its serialised bytes (what
#: ``tilecore compile`` reads from a file); ``graph``, ``tilecore.frontend.from_onnx`` of it.
ENTRY_POINTS = ("bytes", "graph")


def _refused(exc):
    """Whether ``exc`` is a named error (tilecore's or the driver's), not a crash."""
    from ..ffi.error import TilecoreError
    from .driver import CompileError

    return isinstance(exc, CompileError) or (isinstance(exc, TilecoreError) and exc.kind != "InternalError")


def _compile(model, entry, report):
    import tilecore
    from tilecore import frontend

    if entry == "graph":
        return tilecore.compile(frontend.from_onnx(model), report=report)
    if entry == "bytes":
        return tilecore.compile(model.SerializeToString(), report=report)
    raise ValueError(f"entry `{entry}` is not one of {', '.join(ENTRY_POINTS)}")


def run_case(case: Any, check_ort: bool = True, entry: str = "bytes", bind: bool = True) -> dict[str, Any]:
    """One case compiled and run: a dict with ``case``, ``op_type``, ``status``, ``outcome``,
    ``reason``, ``places`` (node name -> [op type, npu/host/view]) and ``seconds``.

    :param entry: how the model reaches ``tilecore.compile`` (``ENTRY_POINTS``).
    :param bind: graph inputs that only feed compile-time operands become initializers
        (per data set); ``False`` compiles the model as it is.
    """
    t0 = time.perf_counter()
    row = {"case": case.name, "op_type": case_op_type(case), "status": "pass", "outcome": "pass", "reason": "",
           "places": {}}
    if check_ort:
        why = ort_reason(case)
        if why:
            row.update(status="skip", outcome="skip", reason=f"onnxruntime: {why}", seconds=time.perf_counter() - t0)
            return row
    bound = compile_time_inputs(case.model) if bind else []
    if bound:
        row["bound_inputs"] = bound
    exe, exe_key = None, None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for k, (feed, names_out, expected) in enumerate(data_sets(case)):
            model = case.model
            if bound:
                fixed = {n: feed.pop(n) for n in bound}
                model = bind_inputs(case.model, fixed)
                key = repr([(n, np.asarray(v).tolist()) for n, v in fixed.items()])
            else:
                key = ""
            if exe is None or key != exe_key:
                report = {}
                try:
                    exe, exe_key = _compile(model, entry, report), key
                except Exception as exc:  # noqa: BLE001 — reported per case
                    row.update(status="compile", outcome="refused" if _refused(exc) else "crashed",
                               reason=f"{type(exc).__name__}: {_first_line(exc)}")
                    break
                row["places"] = {p["name"]: [p["op_type"], p["where"]] for p in report.get("placement", [])}
            try:
                got = exe.run(feed)
            except Exception as exc:  # noqa: BLE001 — recorded in the case's row (status run)
                row.update(status="run", outcome="refused" if _refused(exc) else "crashed",
                           reason=f"{type(exc).__name__}: {_first_line(exc)}")
                break
            why, rounding = first_difference(case, names_out, expected, got, k)
            if why:
                row.update(status="fail", outcome="rounding" if rounding else "wrong", reason=why)
                break
    row["seconds"] = time.perf_counter() - t0
    return row


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Figures of a sweep: counts, pass rate, the op types run on the npu in passing cases
    and the failures grouped by reason."""
    counted = [r for r in rows if r["status"] != "skip"]
    passed = [r for r in counted if r["status"] == "pass"]
    npu_ops = sorted({p[0] for r in passed for p in r["places"].values() if p[1] == "npu"})
    groups = collections.defaultdict(list)
    for r in counted:
        if r["status"] != "pass":
            groups[reason_group(r)].append(r["case"])
    return {
        "cases": len(rows),
        "ort_passes": len(counted),
        "ort_skipped": len(rows) - len(counted),
        "passes": len(passed),
        "pass_rate": len(passed) / max(1, len(counted)),
        "outcomes": dict(collections.Counter(r.get("outcome", "pass") for r in counted)),
        "npu_op_types": npu_ops,
        "failure_groups": dict(sorted(groups.items(), key=lambda kv: -len(kv[1]))),
    }


def reason_group(row: Mapping[str, Any]) -> str:
    """A failure's reason with its case-specific details (numbers, value names) dropped."""
    why = row["reason"]
    if row["status"] == "fail":
        why = re.sub(r"^output \S+: ", "", why)
        why = re.sub(r"\d+ of \d+ values differ.*", "values differ", why)
        why = re.sub(r"\(data set \d+\)", "", why)
    why = re.sub(r"^CompileError: cannot compile \d+ node\(s\) of graph `[^`]*`: ", "", why)
    why = re.sub(r"`[^`]*`", "`…`", why)
    why = re.sub(r"\((ai\.onnx\.ml::|com\.microsoft::)?[A-Z]\w*\)", "(op)", why)
    why = re.sub(r"(for|kernel for) (ai\.onnx\.ml::|com\.microsoft::)?[A-Z]\w*", r"\1 op", why)
    why = re.sub(r"^node `…` \(op\): npu: no npu strategy for op; host: .*", "no npu strategy and no host kernel", why)
    why = re.sub(r"\d+", "N", why)
    return f"{row['status']}: {why.strip()}"[:200]

