"""ONNX nodes that nothing in tilecore runs, replaced by their ONNX function bodies.

Many ONNX ops (Attention, RotaryEmbedding, SoftmaxCrossEntropyLoss, Mish, ...) are defined
in their schema by a function: a subgraph of simpler ops. When an op has neither an npu
strategy nor a host kernel, the driver inlines that body (the one of the newest function
version not newer than the model's opset) before importing, so the simpler ops run on the
npu or the host instead. Context-dependent bodies are built from the node's input types
(from ONNX shape inference). Bodies are expanded again while they hold such ops.
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

    out = []
    for inner in f.node:
        if any(a.type in (a.GRAPH, a.GRAPHS) for a in inner.attribute):
            return None  # subgraphs would need their outer names renamed too
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
            else:
                n.attribute.add().CopyFrom(a)
        out.append(n)
    return out


def expand_functions(model: Any, unsupported: Callable[[str, str], bool], max_rounds: int = 4) -> Any:
    """A copy of ``model`` (ModelProto) whose nodes with ``unsupported(op_type, domain)``
    true and a function body are inlined; ``model`` itself when there is none."""
    import onnx
    from onnx import defs

    if not any(unsupported(n.op_type, n.domain) for n in model.graph.node):
        return model
    model = onnx.ModelProto.FromString(model.SerializeToString())
    opsets = {("" if o.domain == "ai.onnx" else o.domain): int(o.version) for o in model.opset_import}
    counter = 0
    for _ in range(max_rounds):
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 — only context-dependent bodies need the types
            inferred = model
        types = {}
        for v in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
            types[v.name] = v.type
        for init in inferred.graph.initializer:
            t = onnx.helper.make_tensor_type_proto(init.data_type, list(init.dims))
            types.setdefault(init.name, t)
        nodes, changed = [], False
        for node in model.graph.node:
            domain = "" if node.domain == "ai.onnx" else node.domain
            body = None
            if unsupported(node.op_type, domain):
                try:
                    schema = defs.get_schema(node.op_type, opsets.get(domain, 1), domain)
                except Exception:  # noqa: BLE001 — no schema: left for the driver to report
                    schema = None
                if schema is not None:
                    f = _schema_function(schema, opsets.get(domain, 1), node,
                                         [types.get(x) if x else onnx.TypeProto() for x in node.input])
                    if f is not None:
                        counter += 1
                        body = _inline(node, f, schema, f"{node.name or node.op_type}/fn{counter}/")
                        if body is not None:
                            for o in f.opset_import:
                                d = "" if o.domain == "ai.onnx" else o.domain
                                if d not in opsets:
                                    opsets[d] = int(o.version)
                                    model.opset_import.add(domain=d, version=int(o.version))
            if body is None:
                nodes.append(node)
            else:
                nodes.extend(body)
                changed = True
        if not changed:
            break
        del model.graph.node[:]
        model.graph.node.extend(nodes)
        if not any(unsupported(n.op_type, n.domain) for n in model.graph.node):
            break
    return model
