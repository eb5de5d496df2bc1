"""Custom kernels (docs/compiler.md, "Custom kernels"): a kernel written in the DSL
(``tilecore.script``) registered as the npu implementation of a graph op, so that the op
runs inside a compiled model as one of its steps.

The op is a graph op like any other (``tilecore.ir.ops.register_op``: its attributes, shape
inference and numpy reference, which the importer, the evaluator, calibration and
``verify=`` use); the kernel is what the npu runs for it::

    @register_op("SquareBias", domain="example", attrs={"bias": ("float", 0.0)}, infer=...)
    def square_bias(attrs, x):
        return x * x + np.float32(attrs["bias"])

    @compiler.register_kernel("SquareBias", domain="example")
    def square_bias_kernel(attrs, inputs, outputs, cores):
        n = inputs[0].numel                   # shapes and dtypes are static: a kernel per call

        @S.prim_func(num_cores=cores)
        def kernel(x: S.ptr("float32", "global"), y: S.ptr("float32", "global")):
            ...
        return kernel

The kernel takes one ``global`` pointer per data input, then one per output, each of the
tensor's dtype (the compiler refuses another signature, naming the param). ``supports``
(``(attrs, inputs) -> ""`` or the reason) limits the kernel to some calls: registered for a
built-in op (``domain=""``), it overrides the built-in strategy for those calls only.
A step run by a custom kernel stays out of layer groups and of epilogue fusion (its
kernel is the engineer's, as written).
"""
from __future__ import annotations

import atexit
from typing import Any, Callable, Sequence

from . import _ffi, strategy_name

_registered: set[str] = set()


def _remove_all() -> None:
    for name in sorted(_registered):
        _ffi.RemoveCustomKernel(name)
    _registered.clear()

class KernelSpec:
    """What a kernel factory gets per tensor: ``shape`` (a tuple of ints), ``dtype`` (a numpy
    name) and ``numel``."""

    __slots__ = ("shape", "dtype", "numel")

    def __init__(self, spec: Any) -> None:
        self.shape = tuple(int(d) for d in spec.shape)
        self.dtype = str(spec.dtype)
        n = 1
        for d in self.shape:
            n *= d
        self.numel = n

    def __repr__(self) -> str:
        return f"KernelSpec({self.shape}, {self.dtype!r})"


def _plain(v: Any) -> Any:
    if isinstance(v, (str, int, float)) or v is None:
        return v
    if hasattr(v, "__len__") and not hasattr(v, "shape"):
        return [_plain(x) for x in v]
    return v


def _user_attrs(attrs: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    # the node's own with the op's defaults, and its constant inputs' (not _opset)
    return {**defaults, **{str(k): _plain(v) for k, v in attrs.items() if not str(k).startswith("_")}}


def _specs(xs: Sequence[Any]) -> list[KernelSpec | None]:
    return [None if x is None else KernelSpec(x) for x in xs]


def register_kernel(op_type: str, domain: str = "", *,
                    supports: Callable[[dict[str, Any], list[KernelSpec | None]], str | None] | None = None
                    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``factory(attrs, inputs, outputs, cores)`` becomes the npu implementation
    of graph op ``op_type`` of ``domain``. It returns a DSL kernel (``@S.prim_func``, or its
    ``.prim_func``) for those tensors (``KernelSpec``s; None for an omitted optional input)
    on ``cores`` cores. Registering the op again replaces the kernel.

    :param supports: ``supports(attrs, inputs)``: "" (or None) when the kernel takes the
        call, else the reason; without it every call. A call it declines goes to the
        op's built-in strategy, or to the host when there is none.
    :raises ValueError: no graph op ``op_type`` in ``domain`` is registered (its shape
        inference and numpy reference come first: ``tilecore.ir.ops.register_op``).
    """
    from ..ir.graph import get_graph_op

    op = get_graph_op(op_type, domain)
    if op is None:
        raise ValueError(f"register_kernel: no graph op {op_type!r} in domain {domain!r}; register it first "
                         "(tilecore.ir.ops.register_op: its attributes, shape inference and numpy reference)")
    name = strategy_name(op_type, domain)
    defaults = {str(k): _plain(v[1]) for k, v in op.attrs.items() if not v[2]}

    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        def check(attrs, inputs):
            added = sorted(str(k) for k in attrs if str(k).startswith("tc_") and str(k) not in _constant_input_attrs())
            if added:  # (a fusion's: the kernel would not compute what the attribute asks)
                return f"the custom kernel takes the node as the model has it, not with the compiler's {added[0]}"
            if supports is None:
                return ""
            return str(supports(_user_attrs(attrs, defaults), _specs(inputs)) or "")

        def lower(attrs, inputs, outputs, cores):
            kernel = factory(_user_attrs(attrs, defaults), _specs(inputs), _specs(outputs), int(cores))
            from ..ir import PrimFunc
            from ..script import Kernel

            if isinstance(kernel, Kernel):
                return kernel.prim_func
            if not isinstance(kernel, PrimFunc):
                raise TypeError(f"the kernel factory {factory.__name__} returned {type(kernel).__name__}, not a "
                                "DSL kernel (@S.prim_func) or a PrimFunc")
            return kernel

        if not _registered:  # (the registry holds Python callables: dropped before Python is)
            atexit.register(_remove_all)
        _registered.add(name)

        _ffi.RegisterCustomKernel(name, check, lower)
        return factory

    return decorate


def _constant_input_attrs() -> set[str]:  # a constant input given as an attribute (the partition's)
    from .driver import CONSTANT_INPUT_ATTRS

    return {attr for rows in CONSTANT_INPUT_ATTRS.values() for _, attr, _ in rows if attr.startswith("tc_")}


def registered() -> set[str]:
    """The ops a custom kernel is registered for (their strategy names: ``Op`` or ``domain::Op``)."""
    return set(_registered)


def remove_kernel(op_type: str, domain: str = "") -> bool:
    """Forgets the custom kernel of ``op_type`` (the built-in strategy, if any, takes every
    call again); whether one was registered."""
    name = strategy_name(op_type, domain)
    _registered.discard(name)
    return bool(_ffi.RemoveCustomKernel(name))


def takes(op: str, attrs: dict[str, Any], in_specs: Sequence[Any]) -> bool:
    """Whether a custom kernel runs ``op`` (the registry's name) for these inputs."""
    from . import _attrs

    return bool(_ffi.CustomKernelTakes(op, _attrs(attrs), list(in_specs)))
