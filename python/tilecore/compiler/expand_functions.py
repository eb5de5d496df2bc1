"""Graph nodes that nothing in tilecore runs, replaced by their ONNX function bodies.

Many ONNX ops (Attention, RotaryEmbedding, SoftmaxCrossEntropyLoss, Mish, ...) are defined
in their schema by a function: a subgraph of simpler ops. When an op has neither an npu
strategy nor a host kernel, or a node of it is refused by both as it is typed (its shapes,
dtypes and attributes), the driver inlines that body (the one of the newest function
version not newer than the graph's opset) into the Graph, so the simpler ops run on the npu
or the host instead. The bodies come from the ONNX schemas, not from the model, so a Graph
made by ``frontend.from_onnx`` (or by hand) expands as the model it came from would.
Context-dependent bodies are built from the node's attributes and inferred input types.
Bodies are expanded again while they hold such ops.
"""
from __future__ import annotations

from typing import Any, Callable


def _schema_function(schema, opset, node, input_types):
    """The FunctionProto of ``schema`` for a model at ``opset``, or None."""
    from onnx import FunctionProto

    best = None  # (version, kind)
    for v in schema.function_opset_versions:
        if v <= opset and (best is None or v > best[0]):
            best = (v, "plain")
    for v in schema.context_dependent_function_opset_versions:
        if v <= opset and (best is None or v > best[0]):
            best = (v, "context")
    if best is None:
        return None
    if best[1] == "plain":
        text = schema.get_function_with_opset_version(best[0])
    else:
        if any(t is None for t in input_types):
            return None
        text = schema.get_context_dependent_function_with_opset_version(
            best[0], node.SerializeToString(), [t.SerializeToString() for t in input_types])
    if not text:
        return None
    f = FunctionProto()
    f.ParseFromString(text)
    return f


def _has_function(op, domain, opsets):
    """Whether the ONNX schema of ``op`` at the graph's opset has a function body."""
    from onnx import defs

    try:
        schema = defs.get_schema(op, opsets.get(domain, 1), domain)
    except Exception:  # noqa: BLE001 — no schema for it: no function body to expand
        return False
    return bool(schema.has_function or schema.has_context_dependent_function)


def _inline(node, f, schema, prefix):
    """The nodes of ``f`` with ``node``'s inputs, outputs and attributes substituted."""
    from onnx import NodeProto

    rename = {}
    for i, name in enumerate(f.input):
        rename[name] = node.input[i] if i < len(node.input) else ""
    for i, name in enumerate(f.output):
        if i < len(node.output) and node.output[i]:
            rename[name] = node.output[i]
    attrs = {a.name: a for a in node.attribute}
    for name, a in schema.attributes.items():
        if name not in attrs and a.default_value.name:
            attrs[name] = a.default_value

    def new_name(n):
        if n == "":
            return ""
        return rename.get(n, prefix + n)

    def renamed(inner):
        n = NodeProto()
        n.CopyFrom(inner)
        del n.input[:]
        del n.output[:]
        n.input.extend(new_name(x) for x in inner.input)
        n.output.extend(new_name(x) for x in inner.output)
        n.name = prefix + (inner.name or inner.op_type)
        del n.attribute[:]
        for a in inner.attribute:
            if a.ref_attr_name:
                src = attrs.get(a.ref_attr_name)
                if src is None:
                    continue  # an optional attribute the node does not set
                b = n.attribute.add()
                b.CopyFrom(src)
                b.name = a.name
                continue
            b = n.attribute.add()
            b.CopyFrom(a)
            for g in ([b.g] if b.type == b.GRAPH else list(b.graphs) if b.type == b.GRAPHS else []):
                subgraph(g)
        return n

    def subgraph(g):
        # every name of a body (a Scan's, an If's branch) renamed as the function's own: the
        # names it reads from the function are the renamed ones, its own get the prefix
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            vi.name = new_name(vi.name)
        for t in g.initializer:
            t.name = new_name(t.name)
        nodes = [renamed(x) for x in g.node]
        del g.node[:]
        g.node.extend(nodes)

    return [renamed(inner) for inner in f.node]


def expand_functions(graph: Any, unsupported: Callable[[str, str], bool], max_rounds: int = 4,
                     refused: Callable[[Any, dict], bool] | None = None) -> Any:
    """``graph`` (a typed Graph) with its nodes for which ``unsupported(op_type, domain)`` is
    true, or ``refused(node, opsets)`` (the node as typed runs nowhere), and that have a
    function body replaced by the body; ``graph`` itself when none is."""
    from onnx import TypeProto, defs

    from .. import transform
    from ..frontend import onnx as fo

    opsets = {str(k): int(v) for k, v in graph.opsets.items()}
    counter = 0
    for _ in range(max_rounds):
        replacements = {}
        for i, node in enumerate(graph.nodes):
            op, domain = str(node.op_type), str(node.domain)
            if not unsupported(op, domain) and not (refused is not None and _has_function(op, domain, opsets)
                                                    and refused(node, opsets)):
                continue
            opset = opsets.get(domain, 1)
            try:
                schema = defs.get_schema(op, opset, domain)
                proto = fo.onnx_node(node, opsets)
            except Exception:  # noqa: BLE001 — no schema, or attributes ONNX cannot hold: left for the driver
                continue
            types = [TypeProto() if v is None else fo.onnx_type(v) for v in node.inputs]
            f = _schema_function(schema, opset, proto, [t if v is None or t.HasField("tensor_type") else None
                                                         for v, t in zip(node.inputs, types)])
            if f is None:
                continue
            counter += 1
            body = _inline(proto, f, schema, f"{node.name or op}/fn{counter}/")
            if body is None:
                continue
            for o in f.opset_import:
                opsets.setdefault("" if o.domain == "ai.onnx" else o.domain, int(o.version))
            replacements[i] = (body, [])
        if not replacements:
            break
        graph = transform.InferTypes({})(fo.replace_nodes(graph, replacements, opsets))
    return graph
