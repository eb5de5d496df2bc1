"""benchmarks/onnx_node_tests.py — tilecore against the ONNX backend node tests.

The node tests shipped in the `onnx` package (`onnx.backend.test.case.node`) are a
suite nobody here wrote: one small model per case with its inputs and expected
outputs. This script runs every case (or a filtered subset) three ways:

- ONNX Runtime, the oracle: a case counts only when ONNX Runtime passes it;
- tilecore: `tilecore.frontend.from_onnx` (import, shape inference, folding) then
  `tilecore.frontend.evaluate` with the registry's reference implementations;
  with `--direct`, the op library alone (the nodes walked in file order with the
  registry's `reference` and `infer`, no importer), to test ops in isolation;

and compares outputs (values with the case's tolerances, and shapes: the inferred
output shapes must equal the expected ones). It prints a line per op type and a
summary, and with `--report DIR` writes `cases.json` and `op_types.json`.

    python benchmarks/onnx_node_tests.py                      # every case
    python benchmarks/onnx_node_tests.py --ops Conv,Relu -v   # some op types, each failure shown
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time
import warnings

import numpy as np

# The ONNX Runtime oracle and the reading of case data are the compiled-mode sweep's
# (tilecore.compiler.conformance), so both sweeps gate on the same thing.
from tilecore.compiler.conformance import _as_array, _ort_run


def _load_cases(op_filter=None, name_filter=None):
    """(cases kept by the filters, the op type of every case by name)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases
        cases = collect_testcases()
    cases = [case for case in cases if case.model is not None and case.data_sets]
    op_type_of = case_op_types(cases)
    out = []
    for case in cases:
        if op_filter and op_type_of[case.name] not in op_filter:
            continue
        if name_filter and not re.search(name_filter, case.name):
            continue
        out.append(case)
    return out, op_type_of


def case_op_types(cases):
    """The op type each case tests, by case name. A case's model holds that one op,
    except the `_expanded` cases (the op's function body, many nodes), which take the
    op type of the case they expand."""
    by_name = {}
    for case in cases:
        nodes = case.model.graph.node
        if len(nodes) == 1:
            by_name[case.name] = nodes[0].op_type
    for case in cases:
        if case.name not in by_name:
            base = re.sub(r"_expanded(_ver\d+)?$", "", case.name)
            kinds = collections.Counter(n.op_type for n in case.model.graph.node)
            by_name[case.name] = by_name.get(base, kinds.most_common(1)[0][0])
    return by_name


def _close(expected, actual, rtol, atol):
    """Why `actual` differs from `expected`, or None when they agree."""
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"expected a sequence of {len(expected)}, got {type(actual).__name__}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            why = _close(e, a, rtol, atol)
            if why:
                return f"element {i}: {why}"
        return None
    if expected is None:
        return None if actual is None else "expected an empty optional"
    expected = np.asarray(expected)
    if actual is None:
        return "no output"
    actual = np.asarray(actual)
    if tuple(actual.shape) != tuple(expected.shape):
        return f"shape {tuple(actual.shape)} != expected {tuple(expected.shape)}"
    if expected.dtype == object or actual.dtype == object:
        return None if expected.tolist() == actual.tolist() else "string values differ"
    if expected.dtype != actual.dtype:
        return f"dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype.kind in "biu":
        bad = np.flatnonzero(expected != actual)
        return None if bad.size == 0 else f"{bad.size} of {expected.size} values differ (first at {bad[0]})"
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    ok = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    if ok.all():
        return None
    bad = np.flatnonzero(~ok.ravel())
    i = bad[0]
    return f"{bad.size} of {e.size} values differ (first at {i}: {a.ravel()[i]!r} vs {e.ravel()[i]!r})"


def _case_data(case):
    inputs, outputs = case.data_sets[0]
    inputs, outputs = [_as_array(v) for v in inputs], [_as_array(v) for v in outputs]
    names_in = [i.name for i in case.model.graph.input
                if i.name not in {init.name for init in case.model.graph.initializer}]
    names_out = [o.name for o in case.model.graph.output]
    feed = dict(zip(names_in, inputs))
    return feed, names_out, list(outputs)


def run_ort(case):
    """None when ONNX Runtime passes the case, else why not."""
    import onnxruntime as ort
    ort.set_default_logger_severity(3)  # the oracle's own failures are reported per case, not logged
    feed, names_out, expected = _case_data(case)
    try:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sess = ort.InferenceSession(case.model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        got = _ort_run(ort, sess, case, feed, names_out, expected)
    except Exception as exc:  # the oracle fails: the case does not count
        return f"onnxruntime: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    for name, e, a in zip(names_out, expected, got):
        why = _close(e, a, case.rtol, case.atol)
        if why:
            return f"onnxruntime: output {name}: {why}"
    return None


def _attr_value(attr, run_graph):
    from onnx import AttributeProto, helper, numpy_helper
    if attr.type == AttributeProto.TENSOR:
        return numpy_helper.to_array(attr.t)
    if attr.type == AttributeProto.TENSORS:
        return [numpy_helper.to_array(t) for t in attr.tensors]
    if attr.type == AttributeProto.GRAPH:
        return run_graph(attr.g)
    if attr.type == AttributeProto.GRAPHS:
        return [run_graph(g) for g in attr.graphs]
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode() for v in value]
    return value


def direct_run(model, feed):
    """The op library alone: the nodes of `model` run in file order with each op's
    `reference` (outer-scope names visible to subgraphs); shapes from each op's
    `infer` on the input values. Returns (outputs by name, inferred output shapes)."""
    from onnx import numpy_helper
    from tilecore.ir.ops import get_op, TensorInfo
    import tilecore.ir.ops  # noqa: F401  (registers the op library)
    opsets = {o.domain if o.domain != "ai.onnx" else "": o.version for o in model.opset_import}
    shapes = {}

    def run_graph_proto(graph, env):
        env = dict(env)
        for init in graph.initializer:
            env[init.name] = numpy_helper.to_array(init)
        for node in graph.node:
            schema = get_op(node.op_type, node.domain)
            if schema is None:
                raise NotImplementedError(f"op {node.domain + '::' if node.domain else ''}{node.op_type} "
                                          "is not registered")
            attrs = {a.name: _attr_value(a, lambda g, env=env: _body(g, env)) for a in node.attribute}
            attrs["_opset"] = opsets.get(node.domain, opsets.get("", 0))
            attrs = schema.fill_attrs(attrs, node.name or node.op_type)
            args = [env[n] if n else None for n in node.input]
            if schema.infer is not None:
                infos = [None if a is None else (a if isinstance(a, list) else TensorInfo.of(np.asarray(a)))
                         for a in args]
                for name, info in zip(node.output, schema.infer(attrs, infos)):
                    if info is not None and hasattr(info, "shape"):
                        shapes[name] = info.shape
            result = schema.reference(attrs, *args)
            if not isinstance(result, tuple):
                result = (result,)
            for name, value in zip(node.output, result):
                if name:
                    env[name] = value
        return env

    def _body(graph, outer):
        def body(*arrays):
            names = [i.name for i in graph.input]
            env = run_graph_proto(graph, {**outer, **dict(zip(names, arrays))})
            return [env[o.name] for o in graph.output]
        return body

    env = run_graph_proto(model.graph, dict(feed))
    return {o.name: env.get(o.name) for o in model.graph.output}, shapes


#: Ops whose outputs are random draws: only shape and dtype can agree with the expected
#: outputs (how ONNX Runtime's own runner of these tests treats them).
RANDOM_OPS = {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}


def _int_range(dtype):
    """(min, max) of an integer dtype (numpy's or ml_dtypes' 2- and 4-bit ones), or None."""
    try:
        import ml_dtypes
        info = ml_dtypes.iinfo(dtype)
    except (ImportError, ValueError, TypeError):
        try:
            info = np.iinfo(dtype)
        except (ValueError, TypeError):
            return None
    return int(info.min), int(info.max)


def _undefined(case, expected):
    """The elements of a Cast or CastLike case's output that the ONNX spec leaves undefined
    (a float cast to an integer type out of its range: "undefined if OOR"; the node tests of
    onnx 1.23 expect 0 there), as a boolean mask; None for any other case."""
    nodes = case.model.graph.node
    if len(nodes) != 1 or nodes[0].op_type not in ("Cast", "CastLike") or expected is None \
            or isinstance(expected, list):
        return None
    x = np.asarray(_case_data(case)[0][nodes[0].input[0]])
    e = np.asarray(expected)
    bounds = _int_range(e.dtype)
    if x.dtype.kind != "f" and x.dtype.name not in ("bfloat16", "float16") or bounds is None \
            or x.shape != e.shape:
        return None
    wide = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(wide) | (wide < bounds[0]) | (wide > bounds[1])


def _compare(case, expected, actual):
    """Why `actual` differs from `expected` for this case, or None."""
    if {n.op_type for n in case.model.graph.node} & RANDOM_OPS and not isinstance(expected, list) \
            and expected is not None and actual is not None:
        e, a = np.asarray(expected), np.asarray(actual)
        if e.shape != a.shape or e.dtype != a.dtype:
            return f"random output: shape/dtype {a.shape} {a.dtype} != expected {e.shape} {e.dtype}"
        return None
    undefined = _undefined(case, expected)
    if undefined is not None and undefined.any() and actual is not None \
            and np.asarray(actual).shape == undefined.shape:
        keep = ~undefined
        return _close(np.asarray(expected)[keep], np.asarray(actual)[keep], case.rtol, case.atol)
    return _close(expected, actual, case.rtol, case.atol)


def run_tilecore(case, direct=False):
    """(status, reason): status 'pass', 'fail' (wrong or mis-shaped result) or
    'error' (an exception: unsupported op, import error, ...)."""
    feed, names_out, expected = _case_data(case)
    try:
        if direct:
            got, inferred = direct_run(case.model, feed)
        else:
            import tilecore.frontend as fe
            graph = fe.from_onnx(case.model)
            got = fe.evaluate(graph, feed)
            inferred = {v.name: fe.static_shape(v) for v in graph.outputs}
    except Exception as exc:
        msg = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        return "error", msg[:300]
    for name, e in zip(names_out, expected):
        if name not in got:
            return "fail", f"output {name} missing"
        why = _compare(case, e, got[name])
        if why:
            return "fail", f"output {name}: {why}"
        shape = inferred.get(name)
        if shape is not None and not isinstance(e, list) and e is not None \
                and tuple(shape) != tuple(np.asarray(e).shape):
            return "fail", f"output {name}: inferred shape {tuple(shape)} != expected {np.asarray(e).shape}"
    return "pass", ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", help="comma-separated op types to run, each with its _expanded cases "
                    "(default: all)")
    ap.add_argument("--cases", help="regex on case names")
    ap.add_argument("--direct", action="store_true", help="test the op library alone (no importer)")
    ap.add_argument("--report", help="folder for cases.json and op_types.json")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    ap.add_argument("--min-pass", type=float, default=None,
                    help="exit 1 when the pass rate over ORT-passing cases is below this (0..1)")
    args = ap.parse_args(argv)
    np.seterr(all="ignore")
    warnings.simplefilter("ignore")

    # tilecore itself must import: a missing build is not a thousand failed cases.
    import tilecore.frontend  # noqa: F401
    import tilecore.ir.ops  # noqa: F401

    op_filter = set(args.ops.split(",")) if args.ops else None
    cases, op_type_of = _load_cases(op_filter, args.cases)
    rows = []
    t0 = time.perf_counter()
    for case in cases:
        ort_why = run_ort(case)
        status, why = run_tilecore(case, args.direct)
        rows.append({"case": case.name, "op_type": op_type_of[case.name], "ort_pass": ort_why is None,
                     "ort_reason": ort_why or "", "status": status, "reason": why})
        if args.verbose and status != "pass" and ort_why is None:
            print(f"  {case.name}: {status}: {why}")
    elapsed = time.perf_counter() - t0

    per_op = collections.defaultdict(lambda: collections.Counter())
    for r in rows:
        if r["ort_pass"]:
            per_op[r["op_type"]][r["status"]] += 1
    counted = [r for r in rows if r["ort_pass"]]
    passed = sum(r["status"] == "pass" for r in counted)
    for op in sorted(per_op):
        c = per_op[op]
        total = sum(c.values())
        if c["pass"] != total:
            print(f"{op:32s} {c['pass']:4d}/{total:<4d} fail {c['fail']:3d} error {c['error']:3d}")
    ops_full = sum(1 for c in per_op.values() if c["pass"] == sum(c.values()))
    rate = passed / max(1, len(counted))
    print(f"op types fully passing: {ops_full}/{len(per_op)}; ONNX Runtime passes {len(counted)} of "
          f"{len(rows)} cases")
    print(f"tilecore passes {passed}/{len(counted)} ONNX-Runtime-passing cases ({100 * rate:.1f}%) "
          f"in {elapsed:.1f} s{' (op library alone)' if args.direct else ''}")
    if args.report:
        os.makedirs(args.report, exist_ok=True)
        with open(os.path.join(args.report, "cases.json"), "w") as f:
            json.dump(rows, f, indent=1)
        with open(os.path.join(args.report, "op_types.json"), "w") as f:
            json.dump({op: dict(c) for op, c in sorted(per_op.items())}, f, indent=1)
    if args.min_pass is not None and rate < args.min_pass:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
