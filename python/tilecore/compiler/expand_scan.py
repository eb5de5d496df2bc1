"""Scan nodes unrolled over their (static) number of iterations into copies of their body,
so that the iterations run on the npu (and the host where they must) as any other nodes.

ONNX's Scan (opset 9 and later) runs its body once per slice of the scan inputs along
their scan axes, carrying N state variables from one iteration to the next. Unrolled,
iteration t is:

- each scan input sliced at t (or T-1-t for a reversed one, ``scan_input_directions``)
  along its axis: a ``Gather`` of index t, which drops the axis as the body expects;
- the body's nodes, their values renamed per iteration; names the body reads from the
  graph around it stay as they are;
- the state outputs feeding the next iteration's state inputs.

The last iteration's states are the Scan's state outputs; each scan output is the
iterations' values stacked along its ``scan_output_axes`` entry (``Unsqueeze`` and
``Concat``, in reverse for ``scan_output_directions`` 1).

A Scan is left as it is (the driver then reports it) when the number of iterations is not
static, is 0, or is above ``MAX_ITERATIONS``, when its body holds a subgraph, or at opset 8
(a batch axis and ``sequence_lens``).
"""
from __future__ import annotations

from typing import Any, Callable

MAX_ITERATIONS = 1024
MAX_NODES = 20000  # the unrolled nodes of one Scan


def expand_scan(graph: Any, unsupported: Callable[[str, str], bool]) -> Any:
    """``graph`` (a typed Graph) with its Scan nodes unrolled when ``unsupported("Scan", "")``
    is true; ``graph`` itself when none is."""
    from .. import transform
    from ..frontend import onnx as fo

    if not unsupported("Scan", ""):
        return graph
    opsets = {str(k): int(v) for k, v in graph.opsets.items()}
    replacements = {}
    for k, node in enumerate(graph.nodes):
        if str(node.op_type) != "Scan" or str(node.domain) not in ("", "ai.onnx"):
            continue
        done = _unroll(node, opsets, f"{node.name or 'Scan'}/unrolled{k}/")
        if done is not None:
            replacements[k] = done
    if not replacements:
        return graph
    return transform.InferTypes({})(fo.replace_nodes(graph, replacements))


def _ints(v, n, default):
    return [int(x) for x in v] if v is not None else [default] * n


def _unroll(node, opsets, prefix):
    """(NodeProtos, TensorProtos) of the unrolled Scan, or None when it is left as it is."""
    import numpy as np
    from onnx import helper, numpy_helper

    from ..frontend import onnx as fo

    attrs = {str(a): v for a, v in node.attrs.items()}
    opset = int(attrs.get("_opset", opsets.get("", 0)))
    body = attrs.get("body")
    if opset < 9 or body is None or "num_scan_inputs" not in attrs:
        return None
    m = int(attrs["num_scan_inputs"])
    ins, outs = list(node.inputs), list(node.outputs)
    n = len(ins) - m
    body_ins, body_outs = list(body.inputs), list(body.outputs)
    k_out = len(body_outs) - n
    if n < 0 or len(body_ins) != n + m or k_out < 0 or len(outs) > n + k_out:
        return None
    in_axes = _ints(attrs.get("scan_input_axes"), m, 0)
    in_dirs = _ints(attrs.get("scan_input_directions"), m, 0)
    out_axes = _ints(attrs.get("scan_output_axes"), k_out, 0)
    out_dirs = _ints(attrs.get("scan_output_directions"), k_out, 0)
    if len(in_axes) != m or len(in_dirs) != m or len(out_axes) != k_out or len(out_dirs) != k_out:
        return None
    lengths = set()
    for j in range(m):
        v = ins[n + j]
        t = getattr(v, "type", None) if v is not None else None
        if t is None or not getattr(t, "rank_known", False):
            return None
        rank = len(t.shape)
        a = in_axes[j] + rank if in_axes[j] < 0 else in_axes[j]
        if not 0 <= a < rank or not isinstance(t.shape[a], int):
            return None
        in_axes[j] = a
        lengths.add(int(t.shape[a]))
    if len(lengths) != 1:
        return None
    steps = lengths.pop() if m else 0
    body_nodes = list(body.nodes)
    if not 0 < steps <= MAX_ITERATIONS or steps * (len(body_nodes) + m + 2) > MAX_NODES:
        return None
    try:
        protos = [fo.onnx_node(b, opsets) for b in body_nodes]
    except Exception:  # noqa: BLE001 — a subgraph or an attribute ONNX cannot hold: left as it is
        return None
    for j in range(k_out):  # (a negative axis needs the rank; Unsqueeze checks the others)
        if out_axes[j] >= 0:
            continue
        t = getattr(body_outs[n + j], "type", None)
        if t is None or not getattr(t, "rank_known", False) or out_axes[j] + len(t.shape) + 1 < 0:
            return None
        out_axes[j] += len(t.shape) + 1

    nodes, inits = [], []
    unsqueeze_input = opsets.get("", 0) >= 13
    # constants of the graph around that only the body reads (folded into values, so no node
    # of the graph holds them any more): initializers of the unrolled nodes
    inner = {str(v.name) for v in body_ins} | {str(v.name) for b in body_nodes for v in b.outputs if v is not None}
    for b in body_nodes:
        for v in b.inputs:
            if v is not None and str(v.name) and str(v.name) not in inner and v.data is not None:
                inner.add(str(v.name))
                inits.append(numpy_helper.from_array(np.asarray(v.numpy()), str(v.name)))
    axes_const = {}

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def axes_of(a):
        if a not in axes_const:
            axes_const[a] = const(f"{prefix}axes{a}", np.array([a], np.int64))
        return axes_const[a]

    states = [str(v.name) if v is not None else "" for v in ins[:n]]
    stacked = [[] for _ in range(k_out)]
    for t in range(steps):
        step = f"{prefix}t{t}/"
        rename = {}
        for i in range(n):
            rename[str(body_ins[i].name)] = states[i]
        for j in range(m):
            index = const(f"{step}index{j}", np.array(steps - 1 - t if in_dirs[j] else t, np.int64))
            sliced = f"{step}slice{j}"
            nodes.append(helper.make_node("Gather", [str(ins[n + j].name), index], [sliced], axis=in_axes[j],
                                          name=sliced))
            rename[str(body_ins[n + j].name)] = sliced
        for p in protos:
            q = type(p)()
            q.CopyFrom(p)
            for i, name in enumerate(q.input):
                q.input[i] = rename.get(name, name)
            for i, name in enumerate(q.output):
                if name:
                    rename[name] = f"{step}{name}"
                    q.output[i] = rename[name]
            q.name = f"{step}{q.name or q.op_type}"
            nodes.append(q)
        got = [rename.get(str(v.name), str(v.name)) for v in body_outs]
        states = got[:n]
        for j in range(k_out):
            stacked[j].append(got[n + j])
    for i in range(min(n, len(outs))):
        if outs[i] is not None and str(outs[i].name):
            nodes.append(helper.make_node("Identity", [states[i]], [str(outs[i].name)], name=f"{prefix}state{i}"))
    for j in range(k_out):
        if n + j >= len(outs) or outs[n + j] is None or not str(outs[n + j].name):
            continue
        parts = []
        for s, value in enumerate(stacked[j]):
            name = f"{prefix}out{j}/t{s}"
            if unsqueeze_input:
                nodes.append(helper.make_node("Unsqueeze", [value, axes_of(out_axes[j])], [name], name=name))
            else:
                nodes.append(helper.make_node("Unsqueeze", [value], [name], axes=[out_axes[j]], name=name))
            parts.append(name)
        if out_dirs[j]:
            parts.reverse()
        nodes.append(helper.make_node("Concat", parts, [str(outs[n + j].name)], axis=out_axes[j],
                                      name=f"{prefix}out{j}"))
    return nodes, inits
