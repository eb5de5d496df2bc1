"""The Graph IR from Python: typed values, nodes and graphs (C++ objects, see
include/tilecore/ir/graph.h and docs/frontend.md), a GraphBuilder, and the bridge
that mirrors every op of the Python op library into the C++ registry.

    b = GraphBuilder("main", opsets={"": 17})
    x = b.input("x", ("N", 4), "float32")
    w = b.constant("w", np.ones((4, 3), np.float32))
    (y,) = b.add("MatMul", [x, w])
    (z,) = b.add("Relu", [y], name="relu1")
    b.output(z)
    g = b.build()
    print(g)                  # one line per node
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ..ffi.object import Object, register_object
from ..ffi._base import _ffi_core
from . import _ffi_api

if TYPE_CHECKING:
    import numpy.typing as npt

# ---------------------------------------------------------------------------
# Arrays between numpy and the FFI
# ---------------------------------------------------------------------------
_DLPACK_KINDS = {"b", "i", "u", "f"}


class HostArray:
    """A numpy array of a dtype DLPack cannot carry (strings, float8, ...), passed
    through C++ as an opaque object."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __repr__(self) -> str:
        return f"HostArray({self.array!r})"


def _dlpackable(a: np.ndarray) -> bool:
    return a.dtype.kind in _DLPACK_KINDS and a.dtype.name in {
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64"}


def to_ffi_array(a: Any) -> Any:
    """numpy (or scalar, list of arrays) -> what the C++ evaluator stores: an NDArray
    sharing the memory, a list for a sequence, a HostArray for other dtypes."""
    if a is None:
        return None
    if isinstance(a, _ffi_core.NDArray) or isinstance(a, HostArray):
        return a
    if isinstance(a, list):
        return [to_ffi_array(x) for x in a]
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
    if _dlpackable(a):
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        from ..ffi.nd import from_dlpack

        return from_dlpack(a)
    return HostArray(a)


def to_numpy(a: Any) -> Any:
    """The inverse of to_ffi_array (zero copy for NDArrays on the host)."""
    if a is None:
        return None
    if isinstance(a, HostArray):
        return a.array
    if isinstance(a, _ffi_core.NDArray):
        return np.from_dlpack(a)
    if isinstance(a, np.ndarray):
        return a
    if isinstance(a, (list, tuple)) or type(a).__name__ == "Array":
        return [to_numpy(x) for x in a]
    return a


# ---------------------------------------------------------------------------
# Object classes
# ---------------------------------------------------------------------------
def _text_of_type(t):
    return _ffi_api.TypeToText(t)


@register_object("ir.QuantParams")
class QuantParams(Object):
    """Quantisation parameters: real = (q - zero_point) * scale; axis -1 per tensor."""

    __slots__ = ()

    def __init__(self, scale: npt.ArrayLike, zero_point: npt.ArrayLike, axis: int = -1, dtype: str = "int8") -> None:
        self.__init_handle_by_constructor__(_ffi_api.QuantParams, to_ffi_array(np.asarray(scale)),
                                            to_ffi_array(np.asarray(zero_point)), int(axis), str(dtype))


@register_object("ir.TensorType")
class TensorType(Object):
    """A tensor type: shape (int | str symbol | None unknown per dim; None = unknown rank), dtype (numpy
    spelling), layout, optional QuantParams."""

    __slots__ = ()

    def __init__(self, shape: Sequence[int | str | None] | None, dtype: npt.DTypeLike = "float32", layout: str = "",
                 quant: QuantParams | None = None) -> None:
        dims = None if shape is None else [None if d is None else (d if isinstance(d, str) else int(d))
                                           for d in shape]
        self.__init_handle_by_constructor__(_ffi_api.TensorType, dims, _dtype_name(dtype), layout, quant)

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        return static_shape_of_type(self)

    def __repr__(self) -> str:
        return _text_of_type(self)


@register_object("ir.SequenceType")
class SequenceType(Object):
    __slots__ = ()

    def __init__(self, elem: Any = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.SequenceType, elem)

    def __repr__(self) -> str:
        return _text_of_type(self)


@register_object("ir.OptionalType")
class OptionalType(Object):
    __slots__ = ()

    def __init__(self, elem: Any = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.OptionalType, elem)

    def __repr__(self) -> str:
        return _text_of_type(self)


@register_object("ir.Value")
class Value(Object):
    """A named value; ``data`` is the constant (NDArray) or None."""

    __slots__ = ()

    def __init__(self, name: str, type: Any = None, data: Any = None) -> None:  # noqa: A002
        self.__init_handle_by_constructor__(_ffi_api.Value, str(name), type,
                                            None if data is None else to_ffi_array(data))

    def numpy(self) -> np.ndarray | None:
        """The constant as a numpy array (None when not constant)."""
        return to_numpy(self.data)

    def __repr__(self) -> str:
        return f"%{self.name}: {_text_of_type(self.type)}"


@register_object("ir.Node")
class Node(Object):
    """One operator application; ``name`` is the ONNX node name."""

    __slots__ = ()

    def __init__(self, op_type: str, inputs: Sequence[Value | None], outputs: Sequence[Value],
                 attrs: Mapping[str, Any] | None = None, name: str = "", domain: str = "") -> None:
        self.__init_handle_by_constructor__(_ffi_api.Node, op_type, domain, name, _attrs_to_ffi(attrs or {}),
                                            list(inputs), list(outputs))

    def __repr__(self) -> str:
        return f"Node({self.op_type} @ {self.name!r})"


@register_object("ir.Graph")
class Graph(Object):
    """A graph: inputs, outputs, nodes in topological order, opsets. ``print(g)`` shows its text."""

    __slots__ = ()

    def __init__(self, name: str, inputs: Sequence[Value], outputs: Sequence[Value], nodes: Sequence[Node],
                 opsets: Mapping[str, int] | None = None) -> None:
        self.__init_handle_by_constructor__(_ffi_api.Graph, name, list(inputs), list(outputs), list(nodes),
                                            dict(opsets or {}))

    def text(self) -> str:
        return _ffi_api.GraphToText(self)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {len(self.nodes)} nodes>"


@register_object("ir.GraphOpDef")
class GraphOpDef(Object):
    """An entry of the C++ graph-op registry."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"GraphOpDef({(self.domain + '::') if self.domain else ''}{self.name})"


def _dtype_name(dtype) -> str:
    if isinstance(dtype, str) and dtype in ("string", "object"):
        return "string"
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return str(dtype)
    if dt.kind in ("O", "U", "S"):
        return "string"
    return dt.name


def numpy_dtype(name: str) -> np.dtype | None:
    """The numpy dtype of a Graph IR dtype name ("string" -> object)."""
    if not name:
        return None
    if name == "string":
        return np.dtype(object)
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes  # noqa: F401  (registers bfloat16, float8_*, int4 ...)

        return np.dtype(getattr(ml_dtypes, name))


def static_shape_of_type(t: Any) -> Optional[tuple]:
    if not isinstance(t, TensorType) or not t.rank_known:
        return None
    dims = list(t.shape)
    if all(isinstance(d, int) for d in dims):
        return tuple(dims)
    return None


def _attrs_to_ffi(attrs: Dict[str, Any]) -> Dict[str, Any]:
    out = {}
    for k, v in attrs.items():
        if isinstance(v, np.ndarray):
            v = to_ffi_array(v)
        elif isinstance(v, (np.integer,)):
            v = int(v)
        elif isinstance(v, (np.floating,)):
            v = float(v)
        out[k] = v
    return out


# ---------------------------------------------------------------------------
# GraphBuilder
# ---------------------------------------------------------------------------
class GraphBuilder:
    """Builds a Graph node by node (names made unique)."""

    def __init__(self, name: str = "main", opsets: Mapping[str, int] | None = None) -> None:
        self.name = name
        self.opsets = dict(opsets if opsets is not None else {"": 17})
        self._inputs: List[Value] = []
        self._outputs: List[Value] = []
        self._nodes: List[Node] = []
        self._used = set()
        # hint -> the last suffix tried: names are only ever added, so every smaller
        # suffix stays taken and the search resumes there (linear in the graph, not
        # quadratic for a chain of one op type).
        self._next_suffix: Dict[str, int] = {}

    def fresh(self, hint: str) -> str:
        """`hint`, or `hint_1`, `hint_2`, ... : the first name not yet used."""
        hint = hint or "v"
        k = self._next_suffix.get(hint, 0)
        name = hint if k == 0 else f"{hint}_{k}"
        while name in self._used:
            k += 1
            name = f"{hint}_{k}"
        self._next_suffix[hint] = k
        self._used.add(name)
        return name

    def input(self, name: str, shape: Sequence[int | str | None], dtype: npt.DTypeLike = "float32") -> Value:
        v = Value(self.fresh(name), TensorType(shape, dtype))
        self._inputs.append(v)
        return v

    def constant(self, name: str, array: npt.ArrayLike) -> Value:
        a = np.asarray(array)
        return Value(self.fresh(name), TensorType(a.shape, a.dtype), a)

    def add(self, op_type: str, inputs: Sequence[Value | None], attrs: Mapping[str, Any] | None = None,
            num_outputs: int = 1, name: str | None = None, domain: str = "",
            outputs: Sequence[str] | None = None) -> List[Value]:
        """Appends a node; returns its output Values (untyped until InferTypes)."""
        node_name = self.fresh(name or op_type)
        if outputs is None:
            outputs = [node_name + "_out" + ("" if num_outputs == 1 else str(i)) for i in range(num_outputs)]
        outs = [Value(self.fresh(o)) for o in outputs]
        self._nodes.append(Node(op_type, inputs, outs, attrs, node_name, domain))
        return outs

    def output(self, *values: Value) -> None:
        self._outputs.extend(values)

    def build(self) -> Graph:
        return Graph(self.name, self._inputs, self._outputs, self._nodes, self.opsets)


# ---------------------------------------------------------------------------
# The bridge: Python op library -> C++ registry
# ---------------------------------------------------------------------------
def _attr_to_py(v):
    if isinstance(v, _ffi_core.NDArray):
        return np.from_dlpack(v)
    if isinstance(v, HostArray):
        return v.array
    if type(v).__name__ == "Array":
        return [_attr_to_py(x) for x in v]
    return v


class GraphInfo:
    """A subgraph attribute at inference time: ``infer(input_infos)`` gives its outputs' infos."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def infer(self, input_infos: Sequence[Any] | None) -> list[Any]:
        """The body's output infos with its inputs typed from ``input_infos`` (the
        declared output types when the body cannot be inferred)."""
        # Type inference is a transform pass; the IR reaches it by its registered name, as
        # a lower layer reaches a later one (docs/architecture.md), not by importing it.
        from ..ffi.function import get_global_func

        infer_types = get_global_func("transform.InferTypes")(None, False)
        g = self.graph
        declared = [_type_to_info(o.type, o.data) for o in g.outputs]
        infos = list(input_infos or [])
        inputs = []
        for k, v in enumerate(g.inputs):
            info = infos[k] if k < len(infos) else None
            t = _info_to_type(info) if info is not None and getattr(info, "dtype", 1) is not None else None
            if isinstance(t, Value):
                t = t.type
            inputs.append(Value(v.name, t if t is not None else v.type))
        try:
            typed = infer_types(Graph(g.name, inputs, list(g.outputs), list(g.nodes), dict(g.opsets)))
        except Exception:  # noqa: BLE001  (the op's own checks report a bad body when it runs)
            return declared
        out = []
        for o, d in zip(typed.outputs, declared):
            i = _type_to_info(o.type, None)
            out.append(i if getattr(i, "dtype", None) is not None or d is None else d)
        return out


def _py_attrs(attrs, for_infer: bool) -> Dict[str, Any]:
    out = {}
    for k, v in attrs.items():
        if isinstance(v, Graph):
            out[k] = GraphInfo(v) if for_infer else v
        elif isinstance(v, _ffi_core.Function):
            out[k] = _body_callable(v)
        else:
            out[k] = _attr_to_py(v)
    return out


def _body_callable(fn):
    def body(*arrays):
        res = fn(*[to_ffi_array(a) for a in arrays])
        return [to_numpy(r) for r in res]

    return body


def _type_to_info(t, data=None):
    from .ops.registry import SequenceInfo, TensorInfo

    if isinstance(t, SequenceType):
        elem = _type_to_info(t.elem) if t.elem is not None else None
        return SequenceInfo(elem)
    if isinstance(t, OptionalType):
        return _type_to_info(t.elem, data) if t.elem is not None else None
    value = to_numpy(data) if data is not None else None
    if isinstance(value, list):
        return SequenceInfo(TensorInfo.of(value[0], False) if value else None, len(value), value)
    if t is None:
        if value is not None:
            return TensorInfo.of(value)
        return TensorInfo(None, None)
    shape = tuple(t.shape) if t.rank_known else None
    return TensorInfo(shape, numpy_dtype(t.dtype), value)


def _info_to_type(info):
    from .ops.registry import SequenceInfo, TensorInfo

    if info is None:
        return None
    if isinstance(info, SequenceInfo):
        return SequenceType(_info_to_type(info.elem) if info.elem is not None else None)
    if isinstance(info, TensorInfo):
        shape = None if info.shape is None else [
            d if isinstance(d, str) or d is None else int(d) for d in info.shape]
        dtype = "" if info.dtype is None else _dtype_name(info.dtype)
        t = TensorType(shape, dtype)
        if info.value is not None:
            v = np.asarray(info.value)
            if info.dtype is not None and v.dtype != np.dtype(info.dtype):
                v = v.astype(info.dtype)
            return Value("", TensorType(v.shape, v.dtype), v)
        return t
    raise TypeError(f"infer returned {type(info).__name__}, expected TensorInfo or SequenceInfo")


def _make_infer(schema):
    from .ops.registry import OpError, SequenceInfo, TensorInfo, kind_mismatch, onnx_schema

    def infer(attrs, inputs):
        a = schema.fill_attrs(_py_attrs(attrs, True))
        infos = [None if v is None else _type_to_info(v.type, v.data) for v in inputs]
        if "_opset" in a and any(isinstance(i, SequenceInfo) for i in infos):  # a sequence where ONNX wants a tensor
            spec = onnx_schema(schema.name, schema.domain, a["_opset"])
            for k, i in enumerate(infos):
                why = kind_mismatch(spec, k, "sequence") if isinstance(i, SequenceInfo) else None
                if why:
                    raise OpError(f"{schema.name}: {why}")
        try:
            outs = schema.infer(a, infos)
        except (AttributeError, TypeError):
            unknown = [k for k, i in enumerate(infos) if isinstance(i, TensorInfo) and i.dtype is None]
            if not unknown:
                raise
            raise OpError(f"{schema.name}: the element type of input {unknown[0]} is not known (the op "
                          "that makes it could not infer it)") from None
        if isinstance(outs, tuple):
            outs = list(outs)
        elif not isinstance(outs, list):
            outs = [outs]
        return [_info_to_type(o) for o in outs]

    return infer


def _make_reference(schema):
    multi = schema.outputs[1] != 1

    def reference(attrs, inputs):
        a = schema.fill_attrs(_py_attrs(attrs, False))
        args = [to_numpy(x) for x in inputs]
        out = schema.reference(a, *args)
        n_out = a.get("_num_outputs", 1)
        if isinstance(out, tuple) or (isinstance(out, list) and multi and n_out != 1):
            outs = list(out)
        else:
            outs = [out]
        return [to_ffi_array(o) for o in outs]

    return reference


def _mirror(schema) -> None:
    from .ops.registry import REQUIRED

    attrs = {}
    for name, (kind, default) in schema.attrs.items():
        required = default is REQUIRED
        d = None if required else default
        if isinstance(d, np.ndarray):
            d = to_ffi_array(d)
        elif isinstance(d, tuple):
            d = list(d)
        attrs[name] = [kind, d, required]
    mn_in, mx_in = schema.inputs
    mn_out, mx_out = schema.outputs
    opdef = _ffi_api.GraphOpDef(schema.name, schema.domain, attrs, int(mn_in), int(mx_in), int(mn_out), int(mx_out),
                                int(schema.since_version), _make_infer(schema) if schema.infer else None,
                                _make_reference(schema), schema.doc or "")
    _ffi_api.RegisterGraphOp(opdef, True)


_BRIDGE_INSTALLED = False


def install_registry_bridge() -> None:
    """Mirrors every op of tilecore.ir.ops (registered so far and later) into the C++ registry."""
    global _BRIDGE_INSTALLED
    if _BRIDGE_INSTALLED:
        return
    _BRIDGE_INSTALLED = True
    from .ops import registry

    registry.on_register(_mirror)


def get_graph_op(name: str, domain: str = "") -> GraphOpDef | None:
    """The C++ registry's entry for an op, or None."""
    return _ffi_api.GetGraphOp(name, domain)


def list_graph_ops(domain: str | None = None) -> list[GraphOpDef]:
    return list(_ffi_api.ListGraphOps(domain))


def evaluate(graph: Graph, inputs: Dict[str, Any], keep_intermediates: bool = False) -> Dict[str, Any]:
    """Runs ``graph`` with the registered reference implementations (C++ ir.EvaluateGraph).

    :param inputs: graph input name -> numpy array (or a list of arrays for a sequence).
    :return: output name -> numpy array (and every intermediate value when asked).
    """
    install_registry_bridge()
    feed = {k: to_ffi_array(v) for k, v in inputs.items()}
    res = _ffi_api.EvaluateGraph(graph, feed, bool(keep_intermediates))
    return {k: to_numpy(v) for k, v in res.items()}
