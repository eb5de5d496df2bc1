"""tilecore/ir/ops/registry.py — the graph-operator registry as Python sees it.

Each graph operator (an ONNX op type, or a custom one) is described once: its
attribute schema with defaults, its input and output counts, a type and shape
inference function, and a reference implementation in numpy. The importer uses the
schema to check attributes, shape inference and constant folding use `infer` and
`reference`, and `tilecore.frontend.evaluate` runs a whole graph with the reference
implementations, so every later stage of compilation can be compared with it.

    @register_op("LeakyRelu", attrs={"alpha": ("float", 0.01)}, infer=same_as_input(0))
    def leaky_relu(attrs, x):
        return np.where(x >= 0, x, x * np.asarray(attrs["alpha"], x.dtype))

`reference(attrs, *inputs)` gets every schema attribute in `attrs` (defaults filled
in) and numpy arrays for the inputs (None for an omitted optional input, a list of
arrays for a sequence). It returns one array or a tuple of them.
`infer(attrs, inputs)` gets a TensorInfo (or SequenceInfo, or None) per input and
returns one per output; it raises OpError for input the op cannot take.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

#: An input of a reference implementation: an array, None for an omitted optional
#: input, a list of arrays for a sequence.
Operand = Optional[Union[np.ndarray, List[np.ndarray]]]
#: What a reference implementation returns: one output, or a tuple of them.
Result = Union[Operand, Tuple[Operand, ...]]

ATTR_KINDS = ("int", "float", "string", "ints", "floats", "strings", "tensor", "graph", "graphs")


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Default of an attribute that must be given.
REQUIRED = _Required()


class OpError(ValueError):
    """An operator cannot take the inputs or attributes it was given."""


@dataclass(frozen=True)
class TensorInfo:
    """What is known of a tensor before it is computed.

    `shape` holds an int per static dimension, a str for a symbolic one and None for
    an unknown one; `shape` itself is None when not even the rank is known. `value`
    is the tensor when it is a known constant."""

    shape: Optional[Tuple[Any, ...]]
    dtype: np.dtype
    value: Optional[np.ndarray] = None

    @property
    def rank(self) -> Optional[int]:
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, (int, np.integer)) for d in self.shape)

    @staticmethod
    def of(array: np.ndarray, keep_value: bool = True) -> "TensorInfo":
        array = np.asarray(array) if not isinstance(array, np.ndarray) else array
        return TensorInfo(tuple(int(d) for d in array.shape), array.dtype, array if keep_value else None)


@dataclass(frozen=True)
class SequenceInfo:
    """A sequence of tensors (ONNX seq(tensor)); `elem` describes every element."""

    elem: Optional[TensorInfo]
    length: Optional[int] = None
    value: Optional[list] = None


@dataclass
class OpSchema:
    """One operator: name, domain, attribute schema, arity, inference, reference."""

    name: str
    domain: str
    attrs: Dict[str, Tuple[str, Any]]
    inputs: Tuple[int, int]
    outputs: Tuple[int, int]
    infer: Optional[Callable[..., List[Any]]]
    reference: Callable[..., Any]
    since_version: int = 1
    doc: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    def key(self) -> Tuple[str, str]:
        return (self.domain, self.name)

    def fill_attrs(self, given: Dict[str, Any], where: str = "") -> Dict[str, Any]:
        """`given` checked against the schema, with defaults for what is absent.

        Names starting with "_" (such as "_opset") are the importer's own and pass
        through."""
        prefix = f"{where}: " if where else ""
        out: Dict[str, Any] = {}
        for name, value in given.items():
            if name not in self.attrs and not name.startswith("_"):
                known = ", ".join(sorted(self.attrs)) or "none"
                raise OpError(f"{prefix}{self.name} has no attribute '{name}' (it takes: {known})")
            out[name] = value
        for name, (kind, default) in self.attrs.items():
            if name in out:
                continue
            if default is REQUIRED:
                raise OpError(f"{prefix}{self.name} needs the attribute '{name}' ({kind})")
            out[name] = default
        return out


_REGISTRY: Dict[Tuple[str, str], OpSchema] = {}
_LISTENERS: List[Callable[[OpSchema], None]] = []


def register_op(name: str, *, domain: str = "", attrs: Optional[Dict[str, Tuple[str, Any]]] = None,
                inputs: Tuple[int, int] = (1, 1), outputs: Tuple[int, int] = (1, 1),
                infer: Optional[Callable[..., List[Any]]] = None, since_version: int = 1,
                override: bool = False, **extra: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering `reference` (the decorated function) as op `name`.

    `attrs` maps an attribute name to `(kind, default)`, kind one of ATTR_KINDS and
    default REQUIRED when it must be given. `inputs`/`outputs` are (min, max) counts,
    max -1 for variadic. Registering a name twice is an error unless `override`."""
    attrs = dict(attrs or {})
    for attr_name, spec in attrs.items():
        if not (isinstance(spec, tuple) and len(spec) == 2 and spec[0] in ATTR_KINDS):
            raise TypeError(f"register_op({name!r}): attribute {attr_name!r} needs (kind, default) "
                            f"with kind in {ATTR_KINDS}, got {spec!r}")

    def decorate(reference: Callable[..., Any]) -> Callable[..., Any]:
        schema = OpSchema(name=name, domain=domain, attrs=attrs, inputs=tuple(inputs), outputs=tuple(outputs),
                          infer=infer, reference=reference, since_version=since_version,
                          doc=(reference.__doc__ or "").strip(), extra=extra)
        if schema.key() in _REGISTRY and not override:
            raise ValueError(f"graph op {domain + '::' if domain else ''}{name} is already registered "
                             "(pass override=True to replace it)")
        _REGISTRY[schema.key()] = schema
        for listener in _LISTENERS:
            listener(schema)
        return reference

    return decorate


def get_op(name: str, domain: str = "") -> Optional[OpSchema]:
    """The schema of op `name` in `domain` ("" and "ai.onnx" are the same), or None."""
    if domain == "ai.onnx":
        domain = ""
    return _REGISTRY.get((domain, name))


def list_ops(domain: Optional[str] = None) -> List[OpSchema]:
    """Every registered schema (of one domain when given), sorted by domain and name."""
    return sorted((s for s in _REGISTRY.values() if domain is None or s.domain == domain), key=OpSchema.key)


def on_register(listener: Callable[[OpSchema], None]) -> None:
    """Calls `listener(schema)` for every op registered so far and every later one
    (how the C++ registry mirrors the Python one)."""
    _LISTENERS.append(listener)
    for schema in list(_REGISTRY.values()):
        listener(schema)


def onnx_schema(op_type: str, domain: str, opset: int) -> Any:
    """ONNX's schema of ``op_type`` at ``opset`` (``onnx.defs``), or None when ONNX has none."""
    return _onnx_schema(op_type, domain, int(opset))


@functools.lru_cache(maxsize=None)
def _onnx_schema(op_type: str, domain: str, opset: int) -> Any:
    try:
        from onnx import defs

        return defs.get_schema(op_type, opset, domain)
    except Exception:  # noqa: BLE001 — onnx.defs.SchemaError (no such op at that opset), no onnx
        return None


def kind_mismatch(schema: Any, index: int, kind: str) -> Optional[str]:
    """Why a value of ``kind`` ("tensor", "sequence", "optional"; "" unknown) cannot be input
    ``index`` of an op whose ONNX schema is ``schema`` (``onnx_schema``), or None."""
    if schema is None or not kind or not schema.inputs:
        return None
    formal = schema.inputs[min(index, len(schema.inputs) - 1)]
    types = list(formal.types)
    takes = {"tensor": any(t.startswith(("tensor(", "sparse_tensor(")) for t in types),
             "sequence": any(t.startswith("seq(") for t in types),
             "optional": any(t.startswith("optional(") for t in types)}
    if not types or takes.get(kind, True):
        return None
    wanted = " or ".join(k for k, ok in takes.items() if ok) or "another type"
    return f"input {index} ({formal.name}) takes a {wanted}, not a {kind}"
