"""If nodes whose condition is a constant replaced by the nodes of the branch they take.

An exported model or an ONNX function body (AffineGrid's picks its 2-D or 3-D form by
the rank of ``size``) often branches on a value that constant folding knows. No kernel
runs an If; its taken branch is plain nodes, which do. The branch's nodes join the
graph where the If was (ONNX names are unique across a model and its subgraphs, so they
keep theirs) and an Identity gives each If output its branch output.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def inline_constant_ifs(graph: Any) -> Any:
    """``graph`` with each If of a constant one-element condition replaced by its taken
    branch; ``graph`` itself when there is none. Types are not inferred: run
    ``transform.InferTypes`` after."""
    from ..ir.graph import Graph, Node

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
        nodes.extend(branch.nodes)
        for k, (got, out) in enumerate(zip(branch.outputs, n.outputs)):
            if str(out.name):
                nodes.append(Node("Identity", [got], [out], {"_opset": opset}, f"{n.name or 'If'}/out{k}", ""))
        changed = True
    if not changed:
        return graph
    return Graph(str(graph.name), list(graph.inputs), list(graph.outputs), nodes,
                 {str(k): int(v) for k, v in graph.opsets.items()})
