"""tilecore.frontend.onnx — ONNX models into the Graph IR.

The `onnx` package reads the file format (protobuf, external data); everything after
that is tilecore's: values, nodes and subgraphs become Graph IR objects, every
attribute is checked against the op's schema in the registry, each node's
attributes get "_opset" (the model's opset of the node's domain), and the graph
goes through the C++ passes InferTypes (symbols bound from `input_shapes`) and
FoldConstants.

Errors are ONNXImportError (a ValueError) or NotImplementedError (an op, attribute
or dtype tilecore does not support) and name the file, the node, the op type and
the opset; nothing a file holds makes the importer crash.

A model file is held to ONNX's own rules where ONNX Runtime holds it to them (the op's
ONNX schema from ``onnx.defs`` at the model's opset): the IR version, each name defined
once, attribute types, input and output counts, tensor or sequence where the schema
says so, no undefined element types in the graph's signature, and no op whose
definition at the model's opset is older than the one tilecore implements (Add before
opset 7 broadcast differently).
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

import numpy as np

from ..ffi import error as _error
from ..ir import graph as G
from ..ir.ops.registry import kind_mismatch, onnx_schema

#: The oldest default-domain opset the importer takes.
MIN_OPSET = 1
#: The oldest IR version the importer takes (ONNX Runtime's oldest).
MIN_IR_VERSION = 3


class ImportError_(_error.ValueError):  # noqa: N801  (not the builtin ImportError)
    """A model tilecore cannot read: malformed or truncated file, dangling names,
    inconsistent declarations."""


class UnsupportedError(_error.NotImplementedError):
    """An op type, attribute, dtype or construct tilecore does not support."""


def _max_opset() -> int:
    import onnx.defs

    return onnx.defs.onnx_opset_version()


# ---------------------------------------------------------------------------
# Reading the file
# ---------------------------------------------------------------------------
def _load(path_or_model):
    import onnx

    if isinstance(path_or_model, onnx.ModelProto):
        return path_or_model, "<ModelProto>", None
    if isinstance(path_or_model, (bytes, bytearray)):
        return _parse(bytes(path_or_model), "<bytes>"), "<bytes>", None
    if not isinstance(path_or_model, (str, os.PathLike)):
        raise TypeError(f"from_onnx: expected a path, bytes or onnx.ModelProto, got {type(path_or_model).__name__}")
    path = os.fspath(path_or_model)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ImportError_(f"cannot read ONNX file '{path}': {exc.strerror or exc}") from None
    model = _parse(data, path)
    return model, path, os.path.dirname(os.path.abspath(path))


def _parse(data: bytes, where: str):
    import onnx

    if not data:
        raise ImportError_(f"ONNX file '{where}' is empty")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # google.protobuf.message.DecodeError and friends
        raise ImportError_(f"ONNX file '{where}' is malformed or truncated (protobuf: "
                           f"{str(exc) or type(exc).__name__})") from None
    if not model.HasField("graph"):
        raise ImportError_(f"ONNX file '{where}' holds no graph (not an ONNX model, or truncated)")
    return model


def _load_external(model, base_dir, where):
    from onnx import external_data_helper

    if base_dir is None:
        base_dir = os.getcwd()
    tensors = [t for t in external_data_helper._get_all_tensors(model) if external_data_helper.uses_external_data(t)]
    for t in tensors:
        info = external_data_helper.ExternalDataInfo(t)
        loc = info.location
        full = os.path.normpath(os.path.join(base_dir, loc))
        if os.path.isabs(loc) or ".." in loc.replace("\\", "/").split("/"):
            raise ImportError_(f"ONNX file '{where}': tensor '{t.name}' names external data '{loc}' outside the "
                               "model's folder")
        if not os.path.isfile(full):
            raise ImportError_(f"ONNX file '{where}': external data '{loc}' of tensor '{t.name}' is missing")
        try:
            external_data_helper.load_external_data_for_tensor(t, base_dir)
        except Exception as exc:
            raise ImportError_(f"ONNX file '{where}': cannot read external data '{loc}' of tensor '{t.name}': "
                               f"{exc}") from None
        del t.external_data[:]
        t.data_location = 0


# ---------------------------------------------------------------------------
# Types and tensors
# ---------------------------------------------------------------------------
def _np_dtype(elem_type: int, where: str):
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:
        from onnx import TensorProto

        known = ", ".join(sorted(k for k in TensorProto.DataType.keys() if k != "UNDEFINED"))
        raise UnsupportedError(f"{where}: unsupported tensor element type {elem_type} (supported: {known})") from None


def _convert_type(tp, where: str):
    kind = tp.WhichOneof("value")
    if kind is None:
        return None
    if kind == "tensor_type":
        tt = tp.tensor_type
        dtype = _np_dtype(tt.elem_type, where) if tt.elem_type else None
        shape = None
        if tt.HasField("shape"):
            shape = []
            for d in tt.shape.dim:
                which = d.WhichOneof("value")
                if which == "dim_value":
                    if d.dim_value < 0:
                        raise ImportError_(f"{where}: negative dimension {d.dim_value}")
                    shape.append(int(d.dim_value))
                elif which == "dim_param" and d.dim_param:
                    shape.append(str(d.dim_param))
                else:
                    shape.append(None)
        return G.TensorType(shape, "" if dtype is None else G._dtype_name(dtype))
    if kind == "sequence_type":
        return G.SequenceType(_convert_type(tp.sequence_type.elem_type, where))
    if kind == "optional_type":
        return G.OptionalType(_convert_type(tp.optional_type.elem_type, where))
    raise UnsupportedError(f"{where}: unsupported value type '{kind}' (supported: tensor, sequence, optional)")


def _to_array(tensor, where: str):
    from onnx import numpy_helper

    _np_dtype(tensor.data_type, where)
    try:
        return numpy_helper.to_array(tensor)
    except Exception as exc:
        raise ImportError_(f"{where}: tensor '{tensor.name}' is malformed ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None


def _sparse_to_array(sp, where: str):
    values = _to_array(sp.values, where)
    indices = _to_array(sp.indices, where).astype(np.int64)
    dims = tuple(int(d) for d in sp.dims)
    dense = np.zeros(dims, dtype=values.dtype)
    try:
        if indices.ndim == 1:
            dense.reshape(-1)[indices] = values
        else:
            dense[tuple(indices.T)] = values
    except (IndexError, ValueError) as exc:
        raise ImportError_(f"{where}: sparse tensor '{sp.values.name}' has bad indices ({exc})") from None
    return dense


# ---------------------------------------------------------------------------
# Graphs
# ---------------------------------------------------------------------------
def _value_kind(t) -> str:
    """"tensor", "sequence", "optional" or "" (unknown) for a value's type."""
    if isinstance(t, G.SequenceType):
        return "sequence"
    if isinstance(t, G.OptionalType):
        return "optional"
    return "tensor" if isinstance(t, G.TensorType) else ""


class _Importer:
    def __init__(self, where: str, opsets: Dict[str, int], strict: bool = False) -> None:
        self.where = where
        self.opsets = opsets
        # ``strict``: the nodes are a model file's, held to their ONNX schemas (a node
        # tilecore's own passes make may take tilecore's extra inputs and attributes)
        self.strict = strict
        self.ir_version = 0

    def check_schema(self, node, index, opdef, opset: int, ins: list) -> None:
        """The node checked against its ONNX schema at ``opset``: that the op exists there
        and its definition is not older than tilecore's, the attribute types and the required
        attributes, the input and
        output counts (a required one not left empty) and the kinds of its inputs."""
        from onnx import AttributeProto as A

        where = self.node_where(node, index)
        domain = node.domain if node.domain not in ("", "ai.onnx") else ""
        schema = onnx_schema(node.op_type, domain, opset)
        if schema is None:
            if domain == "":
                raise ImportError_(f"{where}: ai.onnx has no op '{node.op_type}' at opset {opset}")
            return  # (a domain ONNX does not define: tilecore's registry alone)
        if schema.since_version < int(opdef.since_version):
            raise UnsupportedError(
                f"{where}: opset {opset} defines {node.op_type} as its version {schema.since_version}, whose "
                f"semantics (broadcasting, attributes) differ from the version {opdef.since_version} tilecore "
                f"implements; convert the model to opset {opdef.since_version} or later "
                "(onnx.version_converter)")
        for a in node.attribute:
            formal = schema.attributes.get(a.name)
            if formal is None:
                continue  # (the registry's check of the names has run)
            want = A.AttributeType.Name(int(formal.type)) if int(formal.type) in A.AttributeType.values() else \
                str(formal.type)
            got = A.AttributeType.Name(a.type) if a.type in A.AttributeType.values() else str(a.type)
            if got != want:
                raise ImportError_(f"{where}: attribute '{a.name}' is of type {got}; {node.op_type} takes "
                                   f"{want} (ONNX {node.op_type}-{schema.since_version})")
        given = {a.name for a in node.attribute}
        for name, formal in schema.attributes.items():
            if formal.required and name not in given:
                raise ImportError_(f"{where}: attribute '{name}' is required and missing "
                                   f"(ONNX {node.op_type}-{schema.since_version})")
        for what, names, lo, hi, formals in (("inputs", node.input, schema.min_input, schema.max_input, schema.inputs),
                                             ("outputs", node.output, schema.min_output, schema.max_output,
                                              schema.outputs)):
            if not lo <= len(names) <= hi:
                span = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi < 2**31 - 1 else f"at least {lo}"
                raise ImportError_(f"{where}: {len(names)} {what if len(names) != 1 else what[:-1]}; "
                                   f"{node.op_type} takes {span}")
            for k, n in enumerate(names):
                formal = formals[min(k, len(formals) - 1)] if formals else None
                if not n and formal is not None and formal.option == type(formal.option).Single:
                    raise ImportError_(f"{where}: {what[:-1]} {k} ({formal.name}) is required and left empty")
                if not n and formal is not None and formal.option == type(formal.option).Variadic:
                    raise ImportError_(f"{where}: {what[:-1]} {k} ({formal.name}) is left empty; only an optional "
                                       f"{what[:-1]} may be, not one of a variadic list")
        for k, v in enumerate(ins):
            why = None if v is None else kind_mismatch(schema, k, _value_kind(v.type))
            if why:
                raise ImportError_(f"{where}: {why}: '{v.name}' is {v.type}")

    def check_signature(self, gp, main: bool) -> None:
        """A model file's graph: each initializer and input named once, no negative
        initializer dimension, no undefined element type among inputs and outputs, and no
        initializer shadowing an input from IR version 4 (ONNX makes it the input's default
        value, which a caller may replace; an executable has no defaults). ``main``: the
        model's graph, not a subgraph (whose signature may leave types to inference)."""
        where = f"{self.where}: graph '{gp.name}'" if gp.name else self.where
        seen: Dict[str, str] = {}
        for kind, names in (("initializer", [t.name for t in gp.initializer]),
                            ("sparse initializer", [t.values.name for t in gp.sparse_initializer])):
            for n in names:
                if n in seen:
                    raise ImportError_(f"{where}: {kind} '{n}' is defined twice (ONNX names a value once)")
                seen[n] = kind
        for t in list(gp.initializer) + [sp.values for sp in gp.sparse_initializer]:
            if any(d < 0 for d in t.dims):
                raise ImportError_(f"{where}: initializer '{t.name}' has a negative dimension "
                                   f"({list(t.dims)})")
        names = set()
        for vi in gp.input:
            if vi.name in names:
                raise ImportError_(f"{where}: graph input '{vi.name}' is listed twice")
            names.add(vi.name)
            if vi.name in seen and self.ir_version >= 4:
                raise UnsupportedError(
                    f"{where}: graph input '{vi.name}' has an initializer of the same name: at IR version "
                    f"{self.ir_version} ONNX makes the initializer the input's default value, which a caller may "
                    "replace, and a tilecore executable has no default inputs; remove the input from the graph's "
                    "inputs to compile the initializer as a constant, or the initializer to feed the input")
        for kind, vis in (("input", gp.input), ("output", gp.output)) if main else ():
            for vi in vis:
                if vi.type.WhichOneof("value") == "tensor_type" and vi.type.tensor_type.elem_type == 0:
                    raise ImportError_(f"{where}: graph {kind} '{vi.name}' has element type 0 (UNDEFINED)")

    def node_where(self, node, index) -> str:
        name = node.name or f"#{index}"
        domain = node.domain if node.domain not in ("", "ai.onnx") else ""
        return (f"{self.where}: node '{name}' ({domain + '::' if domain else ''}{node.op_type}, opset "
                f"{self.opsets.get(domain, 0)})")

    def attr(self, a, node, index, scope):
        from onnx import AttributeProto as A

        where = self.node_where(node, index)
        if a.ref_attr_name:
            raise UnsupportedError(f"{where}: attribute '{a.name}' refers to a function attribute; "
                                   "model-local functions are not supported")
        t = a.type
        if t == A.FLOAT:
            return float(a.f)
        if t == A.INT:
            return int(a.i)
        if t == A.STRING:
            return a.s.decode("utf-8", "replace")
        if t == A.TENSOR:
            return _to_array(a.t, where)
        if t == A.SPARSE_TENSOR:
            return _sparse_to_array(a.sparse_tensor, where)
        if t == A.GRAPH:
            return self.graph(a.g, scope, f"{node.name or node.op_type}.{a.name}")
        if t == A.FLOATS:
            return [float(x) for x in a.floats]
        if t == A.INTS:
            return [int(x) for x in a.ints]
        if t == A.STRINGS:
            return [s.decode("utf-8", "replace") for s in a.strings]
        if t == A.TENSORS:
            return [_to_array(x, where) for x in a.tensors]
        if t == A.TYPE_PROTO:
            return str(a.tp)
        if t == A.GRAPHS:
            return [self.graph(g, scope, f"{node.name or node.op_type}.{a.name}") for g in a.graphs]
        raise UnsupportedError(f"{where}: attribute '{a.name}' has unsupported kind "
                               f"{A.AttributeType.Name(t) if t in A.AttributeType.values() else t} "
                               "(supported: float, int, string, tensor, sparse_tensor, graph, type_proto and their lists)")

    def nodes(self, node_protos, scope: Dict[str, Any], chain: list, value_types: Dict[str, Any],
              bound: Optional[Dict[str, Any]] = None) -> list:
        """Graph IR Nodes of ``node_protos``: their inputs looked up in ``chain`` (scopes,
        innermost first), their outputs entered into ``scope`` (``bound``: output name ->
        the existing Value it is)."""

        def lookup(n):
            for s in chain:
                if n in s:
                    return s[n]
            return None

        nodes = []
        for index, node in enumerate(node_protos):
            domain = node.domain if node.domain not in ("", "ai.onnx") else ""
            where = self.node_where(node, index)
            opdef = G.get_graph_op(node.op_type, domain)
            opset = self.opsets.get(domain)
            if opdef is None:
                n = len(G.list_graph_ops(domain))
                raise UnsupportedError(
                    f"{where}: unsupported op type '{node.op_type}' in domain '{domain or 'ai.onnx'}' "
                    f"(tilecore supports {n} op types in that domain; tilecore.ir.ops.list_ops() lists them)")
            if opset is None:
                raise ImportError_(f"{where}: the model imports no opset for domain '{domain or 'ai.onnx'}'")
            attrs: Dict[str, Any] = {}
            schema_attrs = opdef.attrs
            for a in node.attribute:
                if a.name not in schema_attrs:
                    known = ", ".join(sorted(schema_attrs.keys())) or "none"
                    raise UnsupportedError(f"{where}: unsupported attribute '{a.name}' ({node.op_type} takes: "
                                           f"{known})")
                attrs[a.name] = self.attr(a, node, index, chain)
            attrs["_opset"] = int(opset)
            ins = []
            for k, n in enumerate(node.input):
                if not n:
                    ins.append(None)
                    continue
                v = lookup(n)
                if v is None:
                    raise ImportError_(f"{where}: input {k} '{n}' is not a graph input, an initializer or the "
                                       "output of an earlier node (a missing initializer, or nodes out of "
                                       "topological order)")
                ins.append(v)
            if self.strict:
                self.check_schema(node, index, opdef, opset, ins)
            outs = []
            for n in node.output:
                if n and lookup(n) is not None and n in scope:
                    raise ImportError_(f"{where}: output '{n}' is already defined (ONNX values are assigned once)")
                v = (bound or {}).get(n) or G.Value(n, value_types.get(n))
                if n:
                    scope[n] = v
                outs.append(v)
            nodes.append(G.Node(node.op_type, ins, outs, attrs, node.name, domain))
        return nodes

    def graph(self, gp, outer: Optional[list], name: Optional[str] = None):
        scope: Dict[str, G.Value] = {}
        chain = [scope] + (outer or [])

        def lookup(n):
            for s in chain:
                if n in s:
                    return s[n]
            return None

        value_types = {}
        for vi in list(gp.value_info) + list(gp.output):
            if vi.HasField("type"):
                value_types[vi.name] = _convert_type(vi.type, f"{self.where}: value '{vi.name}'")
        if self.strict:
            self.check_signature(gp, main=outer is None)
        for init in gp.initializer:
            arr = _to_array(init, f"{self.where}: initializer '{init.name}'")
            scope[init.name] = G.Value(init.name, G.TensorType(arr.shape, arr.dtype), arr)
        for sp in gp.sparse_initializer:
            arr = _sparse_to_array(sp, f"{self.where}: sparse initializer")
            scope[sp.values.name] = G.Value(sp.values.name, G.TensorType(arr.shape, arr.dtype), arr)
        inputs = []
        for vi in gp.input:
            if vi.name in scope:  # an initializer listed as an input (IR version < 4): a constant
                continue          # (from IR version 4 the input's default: check_signature refuses it)
            t = _convert_type(vi.type, f"{self.where}: input '{vi.name}'") if vi.HasField("type") else None
            v = G.Value(vi.name, t)
            scope[vi.name] = v
            inputs.append(v)
        nodes = self.nodes(gp.node, scope, chain, value_types)
        outputs = []
        for vo in gp.output:
            v = lookup(vo.name)
            if v is None:
                raise ImportError_(f"{self.where}: graph output '{vo.name}' is never computed")
            outputs.append(v)
        opsets = {k: int(v) for k, v in self.opsets.items()}
        return G.Graph(name or gp.name or "main", inputs, outputs, nodes, opsets)


def from_onnx(path_or_model: str | os.PathLike[str] | bytes | Any, input_shapes: Optional[Dict[str, Any]] = None,
              fold_constants: bool = True) -> G.Graph:
    """An ONNX model as a Graph, types inferred and constants folded.

    :param path_or_model: a path to a .onnx file (external data is read from beside
        it), the file's bytes, or an ``onnx.ModelProto``.
    :param input_shapes: input name -> shape (tuple of int), binding the model's
        symbolic dimensions (a symbol takes the same size in every input).
    :param fold_constants: run FoldConstants after InferTypes (default True).
    :raises ONNXImportError: malformed or truncated file, dangling value names, a
        declared shape the graph contradicts — naming the file and the node.
    :raises NotImplementedError: an op type, attribute or dtype tilecore does not
        support — naming the op type, the node, the opset and what is supported.
    """
    from .. import transform

    G.install_registry_bridge()
    model, where, base_dir = _load(path_or_model)
    opsets: Dict[str, int] = {}
    for o in model.opset_import:
        opsets["" if o.domain in ("", "ai.onnx") else o.domain] = int(o.version)
    if not opsets:
        raise ImportError_(f"ONNX file '{where}' imports no opset (opset_import is empty)")
    newest = _max_opset()
    if "" in opsets and not MIN_OPSET <= opsets[""] <= newest:
        raise UnsupportedError(f"ONNX file '{where}': opset {opsets['']} of ai.onnx is not supported "
                               f"(supported: {MIN_OPSET} to {newest})")
    if len(model.functions):
        names = ", ".join(f.name for f in model.functions)
        used = {n.op_type for n in model.graph.node}
        if any(f.name in used for f in model.functions):
            raise UnsupportedError(f"ONNX file '{where}': model-local functions ({names}) are not supported")
    import onnx

    if not MIN_IR_VERSION <= model.ir_version <= onnx.IR_VERSION:
        raise ImportError_(f"ONNX file '{where}': IR version {model.ir_version} is not supported (supported: "
                           f"{MIN_IR_VERSION} to {onnx.IR_VERSION}, the onnx package's)")
    _load_external(model, base_dir, where)
    importer = _Importer(where, opsets, strict=True)
    importer.ir_version = int(model.ir_version)
    graph = importer.graph(model.graph, None)
    shapes = {k: [int(d) for d in v] for k, v in (input_shapes or {}).items()}
    graph = transform.InferTypes(shapes)(graph)
    if fold_constants:
        graph = transform.FoldConstants()(graph)
    return graph


# ---------------------------------------------------------------------------
# Graph IR nodes as ONNX nodes, and ONNX nodes into a Graph
# ---------------------------------------------------------------------------
def _attr_proto(name: str, value: Any, attr_type: Optional[int], where: str):
    from onnx import AttributeProto as A, helper, numpy_helper

    if type(value).__name__ == "Graph" or (isinstance(value, list) and any(type(x).__name__ == "Graph"
                                                                          for x in value)):
        raise UnsupportedError(f"{where}: attribute '{name}' holds a subgraph, which has no ONNX form here")
    if attr_type in (A.TENSOR, A.SPARSE_TENSOR) or isinstance(value, np.ndarray):
        return helper.make_attribute(name, numpy_helper.from_array(np.asarray(value)), attr_type=A.TENSOR)
    if attr_type == A.TENSORS:
        return helper.make_attribute(name, [numpy_helper.from_array(np.asarray(x)) for x in value],
                                     attr_type=A.TENSORS)
    if attr_type == A.TYPE_PROTO or attr_type == A.TYPE_PROTOS:
        raise UnsupportedError(f"{where}: attribute '{name}' is a type, which has no ONNX form here")
    return helper.make_attribute(name, value, attr_type=attr_type)


def onnx_node(node: G.Node, opsets: Optional[Dict[str, int]] = None) -> Any:
    """The ONNX NodeProto of a Graph IR node: its op type, domain, name, the names of its
    inputs and outputs ("" for an omitted one) and its attributes, typed by the op's ONNX
    schema (the ``_``-prefixed attributes tilecore adds are left out).

    :param opsets: the graph's opsets (domain -> version), for the schema's attribute types.
    :raises UnsupportedError: an attribute ONNX cannot hold here (a subgraph, a type).
    """
    import onnx
    from onnx import defs

    from ..ffi.container import Array

    op, domain = str(node.op_type), str(node.domain)
    where = f"node '{node.name}' ({op})"
    try:
        schema = defs.get_schema(op, int((opsets or {}).get(domain, defs.onnx_opset_version())), domain)
        types = {k: int(a.type) for k, a in schema.attributes.items()}
    except Exception:  # noqa: BLE001 — no ONNX schema: the attribute types follow the values
        types = {}

    def py(v):
        if isinstance(v, Array):
            return [py(x) for x in v]
        if hasattr(v, "__dlpack__") and not isinstance(v, np.ndarray):
            return G.to_numpy(v)
        return v

    proto = onnx.NodeProto()
    proto.op_type, proto.domain, proto.name = op, domain, str(node.name)
    proto.input.extend("" if v is None else str(v.name) for v in node.inputs)
    proto.output.extend(str(v.name) for v in node.outputs)
    for k, v in node.attrs.items():
        if not str(k).startswith("_"):
            proto.attribute.append(_attr_proto(str(k), py(v), types.get(str(k)), where))
    return proto


def onnx_type(value: G.Value | None) -> Any:
    """The ONNX TypeProto of a Value's tensor type (dtype and shape as far as known); an
    empty TypeProto when the value has none or its dtype has no ONNX element type."""
    import onnx
    from onnx import helper

    t = getattr(value, "type", None)
    if not isinstance(t, G.TensorType) or not t.dtype:
        return onnx.TypeProto()
    try:
        elem = helper.np_dtype_to_tensor_dtype(G.numpy_dtype(str(t.dtype)))
    except Exception:  # noqa: BLE001 — a dtype ONNX does not name (string is object)
        return onnx.TypeProto()
    shape = None
    if t.rank_known:
        shape = [d if isinstance(d, (int, str)) else None for d in t.shape]
    return helper.make_tensor_type_proto(elem, shape)


def replace_nodes(graph: G.Graph, replacements: Dict[int, tuple], opsets: Optional[Dict[str, int]] = None) -> G.Graph:
    """``graph`` with each node ``i`` of ``replacements`` replaced by ONNX nodes.

    ``replacements[i]`` is ``(node_protos, initializers)``: NodeProtos in topological order
    and the TensorProtos they read. They are imported as ``from_onnx`` imports a model's
    nodes (each op and attribute checked against the registry, ``_opset`` set); a name they
    read or write that is a value of the graph is that Value, so the replaced node's
    outputs keep their Values and their readers need no change. Types of the new values
    are not inferred: run ``transform.InferTypes`` after.

    :param opsets: the graph's opsets with any domain the new nodes add (default: the graph's).
    """
    opsets = {str(k): int(v) for k, v in (opsets or graph.opsets).items()}
    imp = _Importer(f"graph '{graph.name}'", opsets)
    scope: Dict[str, Any] = {str(v.name): v for v in graph.inputs}
    for n in graph.nodes:
        for v in list(n.inputs) + list(n.outputs):
            if v is not None and str(v.name):
                scope.setdefault(str(v.name), v)
    nodes = []
    for i, n in enumerate(graph.nodes):
        if i not in replacements:
            nodes.append(n)
            continue
        protos, inits = replacements[i]
        local: Dict[str, Any] = {}
        for t in inits:
            arr = _to_array(t, f"{imp.where}: constant '{t.name}'")
            local[t.name] = G.Value(t.name, G.TensorType(arr.shape, arr.dtype), arr)
        bound = {str(v.name): v for v in n.outputs if str(v.name)}
        nodes.extend(imp.nodes(protos, local, [local, scope], {}, bound))
        scope.update(local)
    return G.Graph(str(graph.name), list(graph.inputs), list(graph.outputs), nodes, opsets)
