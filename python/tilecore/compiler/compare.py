"""Every named tensor of a compiled model next to ONNX Runtime's in f32 (``tilecore compare``).

    report = compare_with_onnxruntime("model.onnx", {"input": x}, precision="int8", calib=table)
    report["first_divergent"]        # None, or the first value (topological order) below the threshold
    report["first_jump"]             # None, or the first node whose own error jumps (see below)
    report["tensors"]                # per value: name, node, op_type, cosine, euclidean, sqnr_db, jump_db, ...
    write_repro(report, "repro/")    # that node as a one-op model and its input arrays

Figures per tensor, ``a`` ours and ``b`` the reference, both in float64:
cosine ``a.b / (|a| |b|)``; Euclidean similarity ``1 - |a - b| / |b|`` (1 when equal,
0 when the error is as large as the reference, negative beyond); SQNR
``10 log10(|b|^2 / |a - b|^2)`` dB.

The reference is ONNX Runtime in f32. A model with QuantizeLinear -> DequantizeLinear
pairs (a QDQ model) is compared with the same model without its fake quantisation: each
pair is taken out (the DequantizeLinear's output is the QuantizeLinear's input) and each
DequantizeLinear of a constant is replaced by the dequantised constant, so the
quantisation error shows up at the pair that causes it. The pair's row is named by the
QuantizeLinear node and carries its scale and zero point.

The first jump separates "the inputs were already bad" from "this node is bad": a
node's ``jump_db`` is the lowest SQNR of its inputs (graph inputs and constants are
exact, counted as 200 dB) minus the SQNR of its output; the first jump is the first
diverged tensor (cosine below the threshold) whose ``jump_db`` is at least
``JUMP_DB`` (10 dB: its error is more than three times larger than any input's).

The model is compiled with ``keep_intermediates=True`` (every value its own buffer and an
extra output), run on the simulator, and run by ONNX Runtime with every intermediate
value added as a graph output. Values the graph passes removed (a Conv's output before
the BatchNorm folded into it, say) have no tilecore counterpart and are listed as
``not_compared``.

That program is not the one that ships: layer groups and epilogue fusion are off in it.
So the executable as ``tilecore compile`` makes it is run too, in the simulator's hazard
mode, and its outputs are compared with ONNX Runtime's (``shipped``); each value a step
of it writes is compared with the same value in the every-intermediate program, and the
first layer group or fused node that differs is named (``shipped["changed"]``): "this
group is wrong, the same nodes compiled one step each are right". Given ``read_shipped``
(tdb reads each layer-group member's output where it completes), every tensor the shipped
program exposes is compared with ONNX Runtime too (``shipped["tensors"]``); a shipped
program that is wrong where the every-intermediate one is right has its optimisations
bisected (``shipped["bisect"]``): groups off, one group apart at a time, fusion off.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

# Below these cosines a tensor has diverged, per precision.
THRESHOLDS = {"f32": 0.999, "f16": 0.999, "bf16": 0.999, "int8": 0.99}
JUMP_DB = 10.0
EXACT_DB = 200.0  # the SQNR a graph input or constant counts as


def metrics(ours: npt.ArrayLike, ref: npt.ArrayLike) -> dict[str, float]:
    """cosine, max abs error and SQNR (dB) of ``ours`` against ``ref`` (in float64)."""
    a = np.asarray(ours, dtype=np.float64).ravel()
    r = np.asarray(ref, dtype=np.float64).ravel()
    if a.shape != r.shape:
        return {"cosine": float("nan"), "euclidean": float("-inf"), "max_abs_error": float("inf"),
                "sqnr_db": float("-inf"),
                "shape_mismatch": True}
    err = a - r
    na, nr = np.linalg.norm(a), np.linalg.norm(r)
    if na == 0 and nr == 0:
        cos = 1.0
    elif na == 0 or nr == 0:
        cos = 0.0
    else:
        cos = float(np.dot(a, r) / (na * nr))
    noise = float(np.dot(err, err))
    signal = float(np.dot(r, r))
    if noise == 0:
        sqnr = float("inf")
    elif signal == 0:
        sqnr = float("-inf")
    else:
        sqnr = 10.0 * np.log10(signal / noise)
    eucl = 1.0 if nr == 0 and noise == 0 else (float("-inf") if nr == 0 else 1.0 - math.sqrt(noise) / float(nr))
    return {"cosine": cos, "euclidean": eucl, "max_abs_error": float(np.max(np.abs(err))) if err.size else 0.0,
            "sqnr_db": float(sqnr)}


def _load_model(model):
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    return onnx.load(str(model))


def onnxruntime_with_intermediates(model: Any, inputs: Mapping[str, np.ndarray],
                                   names: Mapping[str, tuple[Sequence[int], str]]) -> tuple[dict[str, np.ndarray], float]:
    """ONNX Runtime's values of ``names`` (a dict name -> (shape, dtype)) and its outputs;
    returns ({name: array}, seconds of the run)."""
    import onnx
    from onnx import helper

    from ..extras import require

    ort = require("onnxruntime", "comparing with ONNX Runtime")
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for name, (shape, dtype) in names.items():
        if name in have:
            continue
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        m.graph.output.append(helper.make_tensor_value_info(name, elem, list(shape)))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    t0 = time.perf_counter()
    res = sess.run(out_names, inputs)
    return dict(zip(out_names, res)), time.perf_counter() - t0


class CompareReport(dict):
    """The report (a JSON-able dict) and, as attributes, what ``write_repro`` needs: the
    compiled run's values (``ours``), the model (``model``) and each row's nodes
    (``groups``)."""

    def __init__(self, fields: Mapping[str, Any], ours: Any = None, model: Any = None, groups: Any = None) -> None:
        super().__init__(fields)
        self.ours = ours or {}
        self.model = model
        self.groups = groups or {}  # value name -> the nodes of its row (a pair, a merged group)


def _constants(model):
    from onnx import numpy_helper

    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
    return consts


def _dequantize(q, scale, zp, axis):
    shape = [1] * q.ndim
    if np.size(scale) > 1:
        shape[axis % q.ndim] = np.size(scale)
    z = 0 if zp is None else np.asarray(zp).astype(np.int64).reshape(shape)
    return ((q.astype(np.int64) - z).astype(np.float32) * np.asarray(scale, np.float32).reshape(shape))


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return a.i
    return default


def float_reference(model: Any) -> tuple[Any, dict[str, str], dict[str, str]]:
    """``model`` without its fake quantisation, and the aliases: (ModelProto, {value name
    of a DequantizeLinear output: the value it stands for}, {DequantizeLinear output:
    its QuantizeLinear node}). The model itself when it has no QuantizeLinear ->
    DequantizeLinear pair or constant DequantizeLinear."""
    import onnx
    from onnx import helper, numpy_helper

    consts = _constants(model)
    producer = {o: n for n in model.graph.node for o in n.output}
    alias, pair_q, folded, relu = {}, {}, {}, set()
    for n in model.graph.node:
        if n.op_type != "DequantizeLinear" or n.domain not in ("", "ai.onnx"):
            continue
        src = n.input[0]
        scale = consts.get(n.input[1])
        zp = consts.get(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        if src in consts and scale is not None:
            folded[n.output[0]] = _dequantize(consts[src], scale, zp, _attr(n, "axis", 1))
        elif src in producer and producer[src].op_type == "QuantizeLinear":
            q = producer[src]
            alias[n.output[0]] = q.input[0]
            pair_q[n.output[0]] = q
            qzp = consts.get(q.input[2]) if len(q.input) > 2 and q.input[2] else None
            if qzp is None or int(np.min(qzp)) == (np.iinfo(qzp.dtype).min if qzp.dtype.kind == "i" else 0):
                relu.add(n.output[0])  # the range starts at 0: a fused Relu, kept
    if not alias and not folded:
        return model, {}, {}
    names = {o for n in model.graph.node for o in n.output} | {i.name for i in model.graph.input} | set(consts)
    relu_nodes = {}
    for k in sorted(relu):  # the pair's value becomes Relu(its input), under a fresh name
        fresh, j = f"{alias[k]}/relu", 1
        while fresh in names:
            j += 1
            fresh = f"{alias[k]}/relu{j}"
        names.add(fresh)
        relu_nodes[k] = helper.make_node("Relu", [alias[k]], [fresh], name=f"{pair_q[k].name}/relu")
    # resolve chains (a pair whose input is itself a pair's output)
    for k in list(alias):
        v = alias[k]
        while v in alias:
            v = alias[v]
        alias[k] = v
    for k, r in relu_nodes.items():
        r.input[0] = alias[k]
        alias[k] = r.output[0]
    m = onnx.ModelProto()
    m.CopyFrom(model)
    nodes = []
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and (n.output[0] in alias or n.output[0] in folded):
            if n.output[0] in relu_nodes:
                nodes.append(relu_nodes[n.output[0]])
            continue
        for i, x in enumerate(n.input):
            if x in alias:
                n.input[i] = alias[x]
        nodes.append(n)
    # QuantizeLinear nodes nobody reads any more
    used = {x for n in nodes for x in n.input} | {o.name for o in m.graph.output}
    nodes = [n for n in nodes if not (n.op_type == "QuantizeLinear" and not any(o in used for o in n.output))]
    for o in m.graph.output:
        if o.name in alias:  # an output that is a pair: an Identity keeps its name
            nodes.append(helper.make_node("Identity", [alias[o.name]], [o.name]))
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    for name, v in folded.items():
        m.graph.initializer.append(numpy_helper.from_array(v, name))
    return m, alias, pair_q


def _quant_params(node, consts, calib=None, name=None):
    """The quantisation parameters a row reports: a QuantizeLinear's scale and zero point,
    or the calibration thresholds of the node's inputs and output (the int8 scale is
    threshold / 127, or / 255 for a value >= 0 by construction: docs/precision.md)."""
    if node is not None and node.op_type in ("QuantizeLinear", "DequantizeLinear"):
        scale = consts.get(node.input[1])
        zp = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        q = {"axis": _attr(node, "axis", 1)}
        if scale is not None:
            q["scale"] = np.asarray(scale).ravel().tolist() if np.size(scale) > 1 else float(scale)
        if zp is not None:
            q["zero_point"] = np.asarray(zp).ravel().tolist() if np.size(zp) > 1 else int(zp)
        return q
    thresholds = getattr(calib, "thresholds", calib) if calib is not None else None
    if not thresholds or node is None:
        return {}
    q = {}
    ins = {x: {"threshold": float(thresholds[x])} for x in node.input if x in thresholds}
    if ins:
        q["inputs"] = ins  # what a quantised node's tc_x_scale comes from
    if name in thresholds:
        q["output"] = {"threshold": float(thresholds[name])}
    return q


def _group(node, producer, available, limit=16):
    """The ONNX nodes that make ``node``'s output from values the compiled run has
    (walking up through values the graph passes merged away, a Conv's output before the
    BatchNorm folded into it): (nodes in graph order, their outside inputs)."""
    group, outside, todo = [node], [], [x for x in node.input if x]
    while todo:
        x = todo.pop(0)
        p = producer.get(x)
        if available(x) or p is None or len(group) >= limit:
            if x not in outside:
                outside.append(x)
        elif not any(p is g for g in group):
            group.insert(0, p)
            todo.extend(y for y in p.input if y)
    return group, outside


def compare_with_onnxruntime(model: Any, inputs: Mapping[str, np.ndarray], target: str = "npu -cores=4",
                             precision: str = "f32", threshold: float | None = None,
                             progress: Callable[..., Any] | None = None, calib: Any = None,
                             jump_db: float = JUMP_DB, shipped: bool = True, fuse: bool = True,
                             group: bool = True, read_shipped: Callable[..., list[dict[str, Any]]] | None = None,
                             bisect: bool = True) -> CompareReport:
    """Compiles ``model`` with every intermediate kept, runs it and ONNX Runtime (f32; a
    QDQ model without its fake quantisation) on ``inputs`` and compares each tensor both
    have. ``calib`` goes to the compiler (int8). With ``shipped``, the executable as it
    ships (compiled with ``fuse`` and ``group``) is run too: the report's ``shipped`` has
    its outputs' figures against ONNX Runtime, the races the simulator's hazard mode saw,
    and ``changed``, the first layer group or fused node whose values differ from the
    every-intermediate program's (compiler/verify.py; in f16, bf16 and int8 not one whose
    value is as near to ONNX Runtime's as the every-intermediate program's: the two round
    in different places), or None. ``read_shipped(exe,
    inputs)`` gives every value the shipped executable exposes where it completes, layer
    group members included (``tilecore.tdb.capture.values_where_complete``, what the CLI
    passes): ``shipped["tensors"]`` compares each with ONNX Runtime and
    ``shipped["first_divergent"]`` names the first below the threshold. With ``bisect``, a
    shipped program that is wrong where the every-intermediate one is right is compiled
    again with one optimisation off at a time (``shipped["bisect"]``, :func:`bisect_optimisations`).
    Returns the report (a JSON-able dict)."""
    from . import verify as _verify
    from .driver import compile as _compile

    proto = _load_model(model)
    ref_model, alias, pair_q = float_reference(proto)
    if threshold is None:  # a QDQ model computes in int8 whatever the precision says
        threshold = THRESHOLDS["int8" if ref_model is not proto else precision] if precision in THRESHOLDS else 0.99
    threshold = float(threshold)
    shapes = {k: tuple(np.shape(v)) for k, v in inputs.items()}
    kw = {} if calib is None else {"calib": calib}
    compiled = {}
    exe = _compile(proto, target=target, precision=precision, input_shapes=shapes, keep_intermediates=True,
                   progress=progress, report=compiled, **kw)
    assigned = compiled.get("precision", {}).get("assigned", {})
    expected = exe.outputs
    consts = _constants(proto)
    producer = {}
    order = []
    for node in proto.graph.node:
        for o in node.output:
            if o:
                producer[o] = node
                order.append(o)
    t0 = time.perf_counter()
    ours = exe.run(inputs)
    sim_seconds = time.perf_counter() - t0
    shipped_exe = None
    if shipped:
        shipped_exe = _compile(proto, target=target, precision=precision, input_shapes=shapes, fuse=fuse, group=group,
                               **kw)
        ours, kept_steps = _verify.observe(exe, inputs, target)
    ref_values = {n for node in ref_model.graph.node for n in node.output} | {i.name for i in ref_model.graph.input}

    def ref_name(n):
        return alias.get(n, n)

    common = {n: expected[n] for n in order if n in ours and ref_name(n) in ref_values
              and np.dtype(expected[n][1]).kind == "f"}
    wanted = {}
    for n, sd in common.items():
        wanted.setdefault(ref_name(n), sd)
    ref, ort_seconds = onnxruntime_with_intermediates(ref_model, inputs, wanted)
    ref.update({k: v for k, v in inputs.items() if k not in ref})
    sqnr = {}  # value name -> our SQNR (inputs and constants exact)

    def input_sqnr(x, seen=()):
        """Our SQNR of value ``x``; a value not compared (an integer one, one the passes
        removed) has the worst of its producer's inputs'."""
        if not x or x in consts or x in inputs:
            return EXACT_DB
        if x in sqnr:
            return sqnr[x]
        node = producer.get(x)
        if node is None or x in seen:
            return EXACT_DB
        return min([input_sqnr(y, seen + (x,)) for y in node.input if y] or [EXACT_DB])

    rows, first, jump, groups = [], None, None, {}
    for name in order:
        if name not in common or ref_name(name) not in ref:
            continue
        node = producer[name]
        shown = pair_q.get(name, node)  # a QDQ pair is reported as its QuantizeLinear
        row = {"name": name, "node": shown.name, "op_type": shown.op_type}
        if name in pair_q:
            row["pair"] = [shown.name, node.name]
        row.update(metrics(ours[name], ref[ref_name(name)]))
        s = min(row["sqnr_db"], EXACT_DB)
        sqnr[name] = s
        if name in pair_q:
            group, ins = [shown, node], [x for x in shown.input[:1]]
        else:
            group, ins = _group(node, producer, lambda x: x in consts or x in inputs or x in ours)
            ins.sort(key=lambda x: x in consts)  # data inputs first
            if len(group) > 1:  # values between them were merged away by the graph passes
                row["group"] = [g.name for g in group]
        groups[name] = group
        in_db = min([input_sqnr(x) for x in ins] or [EXACT_DB])
        row["input_sqnr_db"] = in_db
        row["jump_db"] = in_db - s
        row["diverged"] = bool(not row["cosine"] >= threshold)
        row["inputs"] = [{"name": x, "shape": list(np.shape(ours[x])) if x in ours else
                          (list(np.shape(consts[x])) if x in consts else list(np.shape(inputs.get(x, ())))),
                          "constant": x in consts} for x in ins]
        row["shape"] = list(np.shape(ours[name]))
        row["quantisation"] = _quant_params(shown, consts, calib, name)
        if len(group) > 1 and name not in pair_q:  # the thresholds of the group's outside inputs
            qin = {}
            for g in group:
                qin.update({k: v for k, v in _quant_params(g, consts, calib, None).get("inputs", {}).items()
                            if k in ins})
            row["quantisation"].pop("inputs", None)
            if qin:
                row["quantisation"]["inputs"] = qin
        precs = {assigned.get(g.name, "f32") for g in group if g.op_type != "QuantizeLinear"} - {"f32"}
        row["precision"] = "int8" if name in pair_q else (min(precs) if precs else "f32")
        if row["diverged"] and first is None:
            first = row
        if row["diverged"] and jump is None and row["jump_db"] >= jump_db:
            jump = row
        rows.append(row)
    outputs = [o.name for o in proto.graph.output]
    shipped_rep = None
    if shipped_exe is not None:
        outs, steps = _verify.observe(shipped_exe, inputs, target)
        figures = {n: metrics(outs[n], ref[ref_name(n)]) for n in outs if ref_name(n) in ref}
        # (ONNX Runtime's values as the reference: in f16, bf16 and int8 the two programs round
        # in different places by design, and a value as near to it as the nodes alone passes)
        ort_values = {n: ref[ref_name(n)] for st in steps for n in st["values"] if ref_name(n) in ref}
        _, changed = _verify.first_changed(steps, kept_steps, precision, ort_values)
        shipped_rep = {
            "steps": len(steps),
            "groups": sum(1 for st in steps if st["members"]),
            "fused": sum(1 for st in steps if st["fused"] and not st["members"]),
            "outputs": figures,
            "diverged": any(not f["cosine"] >= threshold for f in figures.values()),
            "hazards": [{"step": st["node"], "message": h} for st in steps for h in st["hazards"]],
            "changed": None if changed is None else {k: v for k, v in changed.items()},
        }
        exact = set(consts) | set(inputs)
        if read_shipped is not None:
            shipped_rep.update(_shipped_tensors(read_shipped(shipped_exe, inputs), ref, ref_name, threshold, exact))
        kept_right = not any(r["diverged"] for r in rows if r["name"] in outputs)
        member_wrong = (shipped_rep.get("first_divergent") or {}).get("group") is not None
        if bisect and kept_right and (shipped_rep["diverged"] or member_wrong or changed is not None):
            def compile_again(**change):
                return _compile(proto, target=target, precision=precision, input_shapes=shapes, **change, **kw)

            def judge(e):
                outs = e.run(inputs)
                figures = [metrics(outs[n], ref[ref_name(n)])["cosine"] for n in outs if ref_name(n) in ref]
                worst = min(figures, default=1.0)
                return bool(worst >= threshold), worst

            suspect = {x for x in ((shipped_rep.get("first_divergent") or {}).get("group"),
                                   (changed or {}).get("step")) if x}
            shipped_rep["bisect"] = bisect_optimisations(compile_again, judge, steps, suspect,
                                                         min([f["cosine"] for f in figures.values()], default=1.0))
    return CompareReport({
        "model": proto.graph.name,
        "precision": precision,
        "threshold": threshold,
        "jump_db": jump_db,
        "reference": "onnxruntime f32" + (" without fake quantisation" if ref_model is not proto else ""),
        "tensors": rows,
        "outputs": [r for r in rows if r["name"] in outputs],
        "first_divergent": first,
        "first_jump": jump,
        "not_compared": [n for n in order if n not in common],
        "simulated_run_seconds": sim_seconds,
        "onnxruntime_seconds": ort_seconds,
        "cycles": exe.stats()["cycles"],
        "shipped": shipped_rep,
    }, ours={**{k: np.asarray(v) for k, v in inputs.items()}, **ours}, model=proto, groups=groups)


def _shipped_tensors(rows: Sequence[dict[str, Any]], ref: Mapping[str, np.ndarray], ref_name: Callable[[str], str],
                     threshold: float, exact: set[str]) -> dict[str, Any]:
    """The shipped program's values (``read_shipped``'s rows, in the order they complete)
    against ONNX Runtime's: ``tensors`` (per float value with a reference: its figures,
    where it was read and whether it ``diverged``), ``first_divergent`` (the first row below
    ``threshold``, with a ``verdict``: wrong itself when every input it read agrees) and
    ``not_compared`` (values without a float reference)."""
    out, first, skipped, diverged = [], None, [], {}
    for r in rows:
        name, a = r["value"], np.asarray(r["array"])
        if ref_name(name) not in ref or a.dtype.kind != "f":
            skipped.append(name)
            continue
        row = {"name": name, "node": r["node"], "op_type": r["op_type"], "step": r["step"], "group": r["group"],
               "member": r["member"]}
        row.update(metrics(a, ref[ref_name(name)]))
        row["diverged"] = bool(not row["cosine"] >= threshold)
        diverged[name] = row["diverged"]
        if row["diverged"] and first is None:
            bad = [i for i in r["inputs"] if diverged.get(i)]
            unknown = [i for i in r["inputs"] if i not in diverged and i not in exact]
            row["inputs"] = list(r["inputs"])
            row["verdict"] = (f"its inputs already differ ({', '.join(bad)})" if bad else
                              "it is wrong itself: every input it read agrees" if not unknown else
                              f"its inputs {', '.join(unknown)} were not compared")
            first = row
        out.append(row)
    return {"tensors": out, "first_divergent": first, "not_compared": skipped}


def bisect_optimisations(compile_again: Callable[..., Any], judge: Callable[[Any], tuple[bool, float]],
                         steps: Sequence[dict[str, Any]], suspects: set[str], shipped_cosine: float) -> dict[str, Any]:
    """The smallest change of the shipped program that makes the model right.
    ``compile_again(**options)`` compiles the model with compile options changed,
    ``judge(exe)`` runs it (True when its outputs agree with the reference, their lowest
    cosine); ``steps`` are the shipped program's (verify.observe), ``suspects`` the step
    names a comparison points at. Layer groups off first; when that is right, one group
    apart at a time (``ungroup``: the suspects first, then halves of the groups), the rest
    as shipped; else epilogue fusion off; else what only the every-intermediate program
    turns off (int8 edges, shared quantisation, buffer reuse). Returns ``tried`` (each
    change, whether it was right and its cosine) and ``culprit`` (``kind`` group, groups,
    fusion or intermediates, the group's ``index`` (1-based), ``step`` and ``members``, and
    a ``message``), None when no change made it right."""
    tried = []

    def attempt(change, **options):
        ok, cos = judge(compile_again(**options))
        tried.append({"change": change, "right": ok, "cosine": cos})
        return ok

    groups = [st for st in steps if st["members"]]
    culprit = None

    def group_culprit(k):
        st = groups[k]
        m = list(st["members"])  # (all of them in "members"; the message names a few of a long list)
        named = ", ".join(m) if len(m) <= 8 else f"{', '.join(m[:3])}, ... {', '.join(m[-2:])}"
        return {"kind": "group", "index": k + 1, "step": st["node"], "members": m,
                "outputs": list(st["outputs"]), "data_inputs": list(st["data_inputs"]),
                "message": f"layer group {k + 1} `{st['node']}` ({len(m)} members: {named}) is wrong; the "
                           f"same nodes compiled alone are right (outputs at cosine {tried[-1]['cosine']:.6f} with "
                           f"it apart, {shipped_cosine:.6f} as shipped)"}

    if groups and attempt("layer groups off", group=False):
        def apart(ks):
            names = [f"{k + 1}" for k in ks]
            return attempt(f"layer group{'s' if len(ks) > 1 else ''} {', '.join(names)} apart",
                           ungroup=[m for k in ks for m in groups[k]["members"]])

        first = [k for k, st in enumerate(groups) if st["node"] in suspects]
        if len(groups) == 1:
            culprit = group_culprit(0)
        elif first and apart(first[:1]):
            culprit = group_culprit(first[0])
        else:
            left = list(range(len(groups)))
            while len(left) > 1:
                half = left[:len(left) // 2]
                if apart(half):
                    left = half
                elif apart(left[len(half):]):
                    left = left[len(half):]
                else:
                    break
                if len(left) == 1:
                    culprit = group_culprit(left[0])
            if culprit is None:
                culprit = {"kind": "groups", "message": "the layer groups are wrong together (no one group apart "
                                                        "makes the model right); compiled without layer groups it "
                                                        "is right"}
    elif attempt("epilogue fusion off", fuse=False):
        fused = [st["node"] for st in steps if st["fused"] and not st["members"]]
        culprit = {"kind": "fusion", "steps": fused,
                   "message": f"epilogue fusion is wrong ({len(fused)} fused node(s): {', '.join(fused[:6])}); "
                              f"the same nodes compiled one step each are right"}
    else:
        culprit = {"kind": "intermediates",
                   "message": "an optimisation only the every-intermediate program turns off (int8 edges, shared "
                              "quantisation, buffer reuse) is wrong: with every intermediate kept the model is right"}
    return {"tried": tried, "culprit": culprit}


def _start_repro(directory, proto, graph, filename: str, arrays: dict) -> str:
    """Writes ``graph`` as a model of ``proto``'s opsets and IR version to ``directory``/
    ``filename``, with its data inputs' arrays (``inputs.npz``); returns the model's path.
    ``directory`` must be new or empty: a user's files of the same names are never replaced."""
    from onnx import helper

    from ..runtime.files import check_new_directory, save_npz, write_bytes

    m = helper.make_model(graph, opset_imports=list(proto.opset_import))
    m.ir_version = proto.ir_version
    check_new_directory(directory, "the repro")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, filename)
    write_bytes(path, m.SerializeToString())
    save_npz(os.path.join(directory, "inputs.npz"), arrays)
    return path


def write_group_repro(report: CompareReport, directory: str | os.PathLike[str]) -> str | None:
    """Writes the layer group ``report``'s bisection found wrong as a small ONNX model
    (``group.onnx``: the group's nodes, its constants, its data inputs as graph inputs and
    the values it writes for later steps as outputs), the arrays its inputs had (from the
    every-intermediate run, which is right: ``inputs.npz``), what the same nodes compiled
    one step each wrote (``expected.npz``) and what it is (``group.json``). Returns the model's
    path, or None when no group was found wrong. ``directory`` must be new or empty."""
    from onnx import helper, numpy_helper

    from ..runtime.files import save_npz, write_bytes

    culprit = ((report.get("shipped") or {}).get("bisect") or {}).get("culprit") or {}
    if culprit.get("kind") != "group":
        return None
    proto, ours = report.model, report.ours
    consts = _constants(proto)
    producer = {o: n for n in proto.graph.node for o in n.output}
    ins = set(culprit["data_inputs"])
    picked, todo = set(), list(culprit["outputs"])
    while todo:  # from the group's outputs up to its inputs: every node of the group
        x = todo.pop()
        p = producer.get(x)
        if x in ins or x in consts or p is None or id(p) in picked:
            continue
        picked.add(id(p))
        todo.extend(y for y in p.input if y)
    nodes = [n for n in proto.graph.node if id(n) in picked]
    used = [x for n in nodes for x in n.input if x]
    data_in, inits, arrays = [], [], {}
    for x in dict.fromkeys(used):
        if x in consts and x not in producer:
            inits.append(numpy_helper.from_array(np.asarray(consts[x]), x))
        elif x in ins:
            arrays[x] = np.asarray(ours[x])
            data_in.append(helper.make_tensor_value_info(x, helper.np_dtype_to_tensor_dtype(arrays[x].dtype),
                                                         list(arrays[x].shape)))
    outs = [helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(np.asarray(ours[o]).dtype),
                                          list(np.shape(ours[o]))) for o in culprit["outputs"]]
    g = helper.make_graph(nodes, f"repro_group_{culprit['index']}", data_in, outs, inits)
    path = _start_repro(directory, proto, g, "group.onnx", arrays)
    save_npz(os.path.join(directory, "expected.npz"), {o: np.asarray(ours[o]) for o in culprit["outputs"]})
    info = dict(culprit, nodes=[n.name for n in nodes], model=report["model"], precision=report["precision"])
    write_bytes(os.path.join(directory, "group.json"), json.dumps(info, indent=1, default=float))
    return path


def write_repro(report: CompareReport, directory: str | os.PathLike[str]) -> str | None:
    """Writes the first jump (else the first divergent) node of ``report`` (a
    :class:`CompareReport`) as a one-op
    ONNX model (a QDQ pair: its two nodes; nodes the graph passes merged, a Conv and
    its BatchNorm: all of them) with its constants, the arrays its data
    inputs had in the compiled run (``inputs.npz``) and what it is (``node.json``).
    Returns the model's path, or None when nothing diverged. ``directory`` must be new or
    empty (ValueError otherwise: files of the same names are never replaced)."""
    from onnx import helper, numpy_helper

    from ..runtime.files import save_npz, write_bytes

    row = report.get("first_jump") or report.get("first_divergent")
    if row is None:
        return None
    proto, ours = report.model, report.ours
    picked = report.groups.get(row["name"]) or [n for n in proto.graph.node if row["name"] in n.output]
    nodes = [n for n in proto.graph.node if any(n is p for p in picked)]  # graph order
    consts = _constants(proto)
    produced = {o for n in nodes for o in n.output}
    data_in, inits, arrays = [], [], {}
    for n in nodes:
        for x in n.input:
            if not x or x in produced or x in arrays or any(i.name == x for i in inits):
                continue
            if x in consts:
                inits.append(numpy_helper.from_array(np.asarray(consts[x]), x))
            else:
                a = np.asarray(ours[x])
                arrays[x] = a
                data_in.append(helper.make_tensor_value_info(
                    x, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)))
    out = row["name"]
    o = np.asarray(ours[out])
    g = helper.make_graph(nodes, f"repro_{row['node']}", data_in,
                          [helper.make_tensor_value_info(out, helper.np_dtype_to_tensor_dtype(o.dtype),
                                                         list(o.shape))], inits)
    path = _start_repro(directory, proto, g, "node.onnx", arrays)
    info = {k: v for k, v in row.items()}
    info.update({"model": report["model"], "precision": report["precision"], "reference": report["reference"]})
    save_npz(os.path.join(directory, "outputs.npz"), {out: o})  # what the compiled model gave
    write_bytes(os.path.join(directory, "node.json"), json.dumps(info, indent=1, default=float))
    return path
