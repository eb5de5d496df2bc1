"""benchmarks/host_kernel_node_tests.py — the ONNX backend node tests run node by node
through tilecore's own kernels, every kernel built for the `c` target (no simulator).

For every case (see onnx_node_tests.py), the nodes are walked in file order. Each node
goes where the compiler would put it: its npu strategy (`compiler.HasStrategy` and
`LowerOp`) when it has one, else the host (`compiler.HasHostKernel` and `LowerHostOp`),
else the case is unsupported with the reason. The kernel is built with
`tilecore.build(f, target="c")` and run on the values the previous kernels produced;
the output shapes and dtypes each kernel is compiled for come from the op library's
shape inference (its reference run on the same values). `Constant` nodes are folded
(their value is known when compiling). The case's outputs are compared with the
expected ones with the case's tolerances.

Only cases ONNX Runtime passes count. It prints a line per op type that does not pass
fully, the reasons of the failures, and the summary:

    python benchmarks/host_kernel_node_tests.py                 # every case
    python benchmarks/host_kernel_node_tests.py --ops ArgMax -v # some op types, failures shown
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_node_tests as nt  # noqa: E402

FOLDED = {"Constant"}


class Unsupported(Exception):
    pass


def _plain_attrs(attrs):
    out = {}
    for k, v in attrs.items():
        if isinstance(v, np.ndarray) and v.size == 1 and v.dtype.kind in "biuf":
            v = v.reshape(()).item()  # a one-value tensor attribute (ConstantOfShape's value)
        if isinstance(v, (bool, int, float, str)) or isinstance(v, np.generic):
            out[k] = v
        elif isinstance(v, (list, tuple)) and all(isinstance(x, (bool, int, float, np.generic)) for x in v):
            out[k] = list(v)
        elif isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
            continue  # string lists (e.g. activations) are not read by the kernels
        elif v is None:
            continue
        else:
            raise Unsupported(f"attribute {k} of type {type(v).__name__}")
    return out


class Runner:
    def __init__(self):
        import tilecore
        from tilecore import compiler
        self.tilecore, self.compiler = tilecore, compiler
        self.cache = {}
        self.builds = 0

    def kernel(self, op, attrs, in_specs, out_specs):
        """(where, function, number of input params), built for the c target and cached."""
        c = self.compiler
        key = (op, repr(sorted(attrs.items())), repr(in_specs), repr(out_specs))
        if key in self.cache:
            return self.cache[key]
        why_npu = c.HasStrategy(op, attrs, in_specs)
        f = None
        if not why_npu:
            try:
                where, f = "npu", c.LowerOp(op, attrs, in_specs, out_specs, "npu -cores=4")
            except ValueError:  # HasStrategy sees no outputs: one of them may be what TC1 lacks
                f = None
        if f is None:
            why_host = c.HasHostKernel(op, attrs, in_specs)
            if why_host:
                raise Unsupported(why_host)
            where, f = "host", c.LowerHostOp(op, attrs, in_specs, out_specs)
        # a bare op name such as "sqrt" clashes with the c target's math helpers
        f = f.with_attr("global_symbol", f"{where}_{f.attrs['global_symbol']}")
        mod = self.tilecore.build(f, target="c")
        self.builds += 1
        res = (where, mod[str(f.attrs["global_symbol"])], int(f.attrs["input_params"]))
        self.cache[key] = res
        return res

    def run_case(self, case):
        """(status, reason, places): status pass / fail / unsupported / error."""
        from onnx import numpy_helper
        from tilecore.ir.ops import get_op
        c = self.compiler
        feed, names_out, expected = nt._case_data(case)
        model = case.model
        opsets = {o.domain if o.domain != "ai.onnx" else "": o.version for o in model.opset_import}
        env = dict(feed)
        for init in model.graph.initializer:
            env[init.name] = numpy_helper.to_array(init)
        places = set()
        for node in model.graph.node:
            schema = get_op(node.op_type, node.domain)
            tag = node.op_type
            try:
                if schema is None:
                    raise Unsupported(f"op {node.op_type} is not registered")
                if any(a.g.node or a.graphs for a in node.attribute):
                    raise Unsupported(f"{node.op_type}: subgraphs run on no kernel")
                attrs = {a.name: nt._attr_value(a, lambda g: None) for a in node.attribute}
                attrs["_opset"] = opsets.get(node.domain, opsets.get("", 0))
                attrs = schema.fill_attrs(attrs, node.name or node.op_type)
                args = [env[n] if n else None for n in node.input]
                ref = schema.reference(attrs, *args)
                ref = ref if isinstance(ref, tuple) else (ref,)
                ref = tuple(np.asarray(r) if isinstance(r, np.generic) else r for r in ref)
                if node.op_type in FOLDED:
                    for name, value in zip(node.output, ref):
                        env[name] = value
                    continue
                for a in list(args) + list(ref):
                    if a is not None and not isinstance(a, np.ndarray):
                        raise Unsupported(f"{node.op_type}: a {type(a).__name__} value (sequences, optionals)")
                    if isinstance(a, np.ndarray) and a.dtype.kind in "OUSV":
                        raise Unsupported(f"{node.op_type}: dtype {a.dtype}")
                if node.op_type.startswith("Reduce") and len(args) > 1 and args[1] is not None:
                    # the axes input is a compile-time constant in a model: the compiler passes it as the attribute
                    attrs["axes"] = [int(a) for a in np.asarray(args[1]).ravel()]
                if node.op_type == "CumSum" and len(args) > 1 and args[1] is not None:
                    attrs["axis"] = int(np.asarray(args[1]).ravel()[0])  # likewise the axis input
                if node.op_type == "Dropout" and len(args) > 2 and args[2] is not None:
                    attrs["training_mode"] = int(bool(np.asarray(args[2]).ravel()[0]))  # a compile-time flag
                if node.op_type == "Pad" and len(args) > 1:
                    for name, a in zip(["pads", "value", "axes"], args[1:]):
                        if a is not None and np.asarray(a).size:
                            a = np.asarray(a).ravel()
                            attrs[name] = a[0].item() if name == "value" else [int(v) for v in a]
                if node.op_type == "Slice" and len(args) > 1:
                    for name, a in zip(["starts", "ends", "axes", "steps"], args[1:]):
                        if a is not None:
                            attrs[name] = [int(v) for v in np.asarray(a).ravel()]
                attrs = _plain_attrs(attrs)
                try:
                    in_specs = [None if a is None else c.TensorSpec(a.shape, str(a.dtype)) for a in args]
                    out_specs = [c.TensorSpec(np.asarray(o).shape, str(np.asarray(o).dtype)) for o in ref]
                except ValueError as exc:
                    raise Unsupported(f"a dtype tilecore's IR lacks ({_first(exc)})")
                n_out = len([o for o in node.output])
                outs_ref = list(ref[:n_out])
                out_specs = [c.TensorSpec(np.asarray(o).shape, str(np.asarray(o).dtype)) for o in outs_ref]
                try:
                    where, fn, n_in = self.kernel(node.op_type, attrs, in_specs, out_specs)
                except Unsupported:
                    raise
                except Exception as exc:  # noqa: BLE001 — reported per case
                    return "error", f"{tag}: lowering/building: {type(exc).__name__}: {_first(exc)}", places
                places.add(where)
                ins = []
                for a in args[:n_in]:
                    a = np.zeros(1, np.float32) if a is None else np.ascontiguousarray(a)
                    ins.append(a.reshape(1) if a.ndim == 0 else a)
                outs = [np.zeros(max(1, o.size) if o.ndim == 0 or o.size == 0 else o.shape, o.dtype) for o in
                        (np.asarray(r) for r in outs_ref)]
                fn(*ins, *outs)
                for name, o, r in zip(node.output, outs, outs_ref):
                    r = np.asarray(r)
                    if name:
                        env[name] = o.reshape(r.shape) if o.size == r.size else o[:0].reshape(r.shape)
            except Unsupported as exc:
                return "unsupported", f"{tag}: {exc}", places
            except Exception as exc:  # noqa: BLE001
                return "error", f"{tag}: {type(exc).__name__}: {_first(exc)}", places
        for name, e in zip(names_out, expected):
            why = nt._compare(case, e, env.get(name))
            if why:
                return "fail", f"output {name}: {why}", places
        return "pass", "", places


def _first(exc):
    s = str(exc).strip()
    return s.splitlines()[0][:200] if s else ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", help="comma-separated op types (with their _expanded cases)")
    ap.add_argument("--cases", help="regex on case names")
    ap.add_argument("--report", help="folder for host_cases.json")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    args = ap.parse_args(argv)
    np.seterr(all="ignore")
    warnings.simplefilter("ignore")
    import tilecore.ir.ops  # noqa: F401

    cases, op_type_of = nt._load_cases(set(args.ops.split(",")) if args.ops else None, args.cases)
    runner = Runner()
    rows = []
    t0 = time.perf_counter()
    for n, case in enumerate(cases):
        if n % 200 == 0 and not args.verbose:
            print(f"  {n}/{len(cases)} cases, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        ort_why = nt.run_ort(case)
        if ort_why:
            continue
        status, why, places = runner.run_case(case)
        where = "+".join(sorted(places)) or "-"
        rows.append({"case": case.name, "op_type": op_type_of[case.name], "status": status, "where": where,
                     "reason": why})
        if args.verbose and status != "pass":
            print(f"  {case.name}: {status}: {why}")
    elapsed = time.perf_counter() - t0
    per_op = collections.defaultdict(collections.Counter)
    for r in rows:
        per_op[r["op_type"]][r["status"]] += 1
    for op in sorted(per_op):
        cnt = per_op[op]
        total = sum(cnt.values())
        if cnt["pass"] != total:
            print(f"{op:28s} {cnt['pass']:4d}/{total:<4d} fail {cnt['fail']:3d} unsupported {cnt['unsupported']:3d} "
                  f"error {cnt['error']:3d}")
    reasons = collections.Counter(r["reason"].split(":")[0] + ": " + r["status"] for r in rows if r["status"] != "pass")
    print("most common blockers (node op type: status):", ", ".join(f"{k} x{v}" for k, v in reasons.most_common(25)))
    passed = [r for r in rows if r["status"] == "pass"]
    where = collections.Counter(r["where"] for r in passed)
    print(f"passing cases by where they ran: {dict(where)}")
    print(f"tilecore kernels (c target) pass {len(passed)}/{len(rows)} ONNX-Runtime-passing cases "
          f"({100 * len(passed) / max(1, len(rows)):.1f}%) in {elapsed:.1f} s, {runner.builds} kernels built")
    if args.report:
        os.makedirs(args.report, exist_ok=True)
        with open(os.path.join(args.report, "host_cases.json"), "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
