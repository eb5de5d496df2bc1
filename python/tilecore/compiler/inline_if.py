"""If nodes whose condition is a constant replaced by the nodes of the branch they take.

An exported model or an ONNX function body (AffineGrid's picks its 2-D or 3-D form by
the rank of ``size``) often branches on a value that constant folding knows. No kernel
runs an If; its taken branch is plain nodes, which do. The branch's nodes join the
graph where the If was, their values renamed under the If's name and its first output's
(the branches of two Ifs may use the same names; a subgraph inside the branch reads them
under their new names),
and an Identity gives each If output its branch output.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def inline_constant_ifs(graph: Any) -> Any:
    """``graph`` with each If of a constant one-element condition replaced by its taken
    branch; ``graph`` itself when there is none. Types are not inferred: run
    ``transform.InferTypes`` after."""
    from ..ir.graph import Graph, Node, Value

    opset = int({str(k): int(v) for k, v in graph.opsets.items()}.get("", 1))
    nodes, changed = [], False
    for n in graph.nodes:
        cond = n.inputs[0] if str(n.op_type) == "If" and str(n.domain) in ("", "ai.onnx") and n.inputs else None
        value = None if cond is None or cond.data is None else np.asarray(cond.numpy())
        branch = None
        if value is not None and value.size == 1:
            branch = n.attrs.get("then_branch" if bool(value.reshape(-1)[0]) else "else_branch")
        if branch is None or len(list(branch.outputs)) != len(list(n.outputs)):
            nodes.append(n)
            continue
        # the branch's values renamed under the If's name and its first output's (unique in the
        # graph, and the same whenever the If is inlined): two Ifs' branches may reuse a name
        tag = next((str(v.name) for v in n.outputs if str(v.name)), str(len(nodes)))
        prefix, renamed = f"{n.name or 'If'}/{tag}/", {}

        def value(v):
            return None if v is None else renamed.get(str(v.name), v)

        for b in branch.nodes:
            outs = []
            for v in b.outputs:
                if str(v.name):
                    renamed[str(v.name)] = Value(prefix + str(v.name), v.type)
                outs.append(renamed.get(str(v.name), v))
            attrs = {k: _reads_renamed(a, renamed) for k, a in b.attrs.items()}
            nodes.append(Node(str(b.op_type), [value(v) for v in b.inputs], outs, attrs,
                              prefix + (str(b.name) or str(b.op_type)), str(b.domain)))
        for k, (got, out) in enumerate(zip(branch.outputs, n.outputs)):
            if str(out.name):
                nodes.append(Node("Identity", [value(got)], [out], {"_opset": opset}, f"{prefix}out{k}", ""))
        changed = True
    if not changed:
        return graph
    return Graph(str(graph.name), list(graph.inputs), list(graph.outputs), nodes,
                 {str(k): int(v) for k, v in graph.opsets.items()})


def _reads_renamed(attr: Any, renamed: dict) -> Any:
    """A node attribute with the subgraphs in it reading the values ``renamed`` (old name ->
    new Value) by their new names; any other attribute as it is."""
    from ..ir.graph import Graph, Node

    if type(attr).__name__ != "Graph":
        return attr
    inner = {str(v.name) for v in attr.inputs} | {str(v.name) for b in attr.nodes for v in b.outputs}
    todo = {k: v for k, v in renamed.items() if k not in inner}

    def value(v):
        return None if v is None else todo.get(str(v.name), v)

    nodes = [Node(str(b.op_type), [value(v) for v in b.inputs], list(b.outputs),
                  {k: _reads_renamed(a, todo) for k, a in b.attrs.items()}, str(b.name), str(b.domain))
             for b in attr.nodes]
    return Graph(str(attr.name), list(attr.inputs), [value(v) for v in attr.outputs], nodes,
                 {str(k): int(v) for k, v in attr.opsets.items()})
