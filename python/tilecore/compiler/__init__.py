"""The model compiler's op strategies: one op (type, attributes, static shapes and
dtypes) lowered to a Kernel IR PrimFunc for the npu target, tiled so any shape fits
L1 and split over the cores. See docs/compiler.md.

    spec = compiler.TensorSpec((64, 32), "float32")
    f = compiler.LowerOp("MatMul", {}, [a, b], [y], "npu -cores=4")
    compiler.HasStrategy("MatMul", {}, [a, b])   # "" or the reason it runs on the host
    compiler.HasHostKernel("ArgMax", {}, [a])     # "" or the reason it runs nowhere
    f = compiler.LowerHostOp("ArgMax", {"axis": 1}, [a], [y])   # build with target="c"
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..ffi._base import _ffi_core
from ..ffi.object import Object, register_object
from ..target import Target


class _Api:
    def __getattr__(self, name):
        func = _ffi_core._get_global_func("compiler." + name)
        if func is None:
            raise AttributeError(f"the tilecore library does not register 'compiler.{name}'")
        setattr(self, name, func)
        return func


_ffi = _Api()


@register_object("compiler.TensorSpec")
class TensorSpec(Object):
    """A tensor's static shape (ints) and dtype (a numpy-style name, or a numpy dtype)."""

    __slots__ = ()

    def __new__(cls, shape, dtype):
        shape = [int(d) for d in shape]
        if not isinstance(dtype, str):
            try:
                import numpy as np

                dtype = np.dtype(dtype).name
            except TypeError:
                dtype = str(dtype)
        return _ffi.TensorSpec(shape, dtype)

    def __repr__(self) -> str:
        return f"TensorSpec({tuple(int(d) for d in self.shape)}, {str(self.dtype)!r})"


def strategy_name(op_type: str, domain: str = "") -> str:
    """The name the strategy and host-kernel registries know an op by: the bare op type in
    ONNX's and tilecore's own domains, ``domain::Op`` in any other."""
    return op_type if domain in ("", "ai.onnx", "tilecore") else f"{domain}::{op_type}"


def _spec(x):
    if x is None or isinstance(x, TensorSpec):
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # a numpy array or similar
        return TensorSpec(x.shape, str(x.dtype))
    raise TypeError(f"expected a TensorSpec, an array or None, got {type(x).__name__}")


def _attrs(attrs):
    out = {}
    for k, v in (attrs or {}).items():
        if isinstance(v, (list, tuple)):
            v = [x if isinstance(x, str) else x.decode() if isinstance(x, bytes) else
                 int(x) if isinstance(x, (bool, int)) or hasattr(x, "__index__") else float(x) for x in v]
        elif isinstance(v, bool):
            v = int(v)
        elif isinstance(v, bytes):
            v = v.decode()
        elif hasattr(v, "item") and not isinstance(v, str):
            v = v.item()
        out[str(k)] = v
    return out


def HasStrategy(op_type: str, attrs: Mapping[str, Any] | None, inputs: Sequence[Any]) -> str:
    """"" when ``op_type`` with these attributes and inputs has an npu strategy, else the reason."""
    return str(_ffi.HasStrategy(op_type, _attrs(attrs), [_spec(x) for x in inputs]))


def LowerOp(op_type: str, attrs: Mapping[str, Any] | None, inputs: Sequence[Any], outputs: Sequence[Any],
            target: str | Target = "npu -cores=4") -> Any:
    """The PrimFunc of one op: params are the inputs then the outputs, as global buffers."""
    return _ffi.LowerOp(op_type, _attrs(attrs), [_spec(x) for x in inputs], [_spec(x) for x in outputs],
                        Target(target))


def HasHostKernel(op_type: str, attrs: Mapping[str, Any] | None, inputs: Sequence[Any]) -> str:
    """"" when ``op_type`` can run on the host (a host kernel, or its npu strategy on
    float32/int32 copies when only the dtypes stop it), else why it runs nowhere."""
    return str(_ffi.HasHostKernel(op_type, _attrs(attrs), [_spec(x) for x in inputs]))


def LowerHostOp(op_type: str, attrs: Mapping[str, Any] | None, inputs: Sequence[Any], outputs: Sequence[Any]) -> Any:
    """The host PrimFunc of one op, built with ``tilecore.build(f, target="c")``: params are
    the data inputs then the outputs, as for LowerOp."""
    return _ffi.LowerHostOp(op_type, _attrs(attrs), [_spec(x) for x in inputs], [_spec(x) for x in outputs])


def compiler_attrs() -> dict[str, tuple[str, str]]:
    """The compiler's own node attributes (C++, compiler_attrs.h; docs/compiler.md, "Compiler
    attributes"): name -> ``(kind, doc)``, kind one of int, float, string, ints or attrs (a
    family ``tc_lut.*``). HasStrategy and HasHostKernel refuse a ``tc_`` attribute that is not
    here, or not of its kind, with a reason naming it."""
    return {str(name): (str(kind), str(doc)) for name, kind, doc in _ffi.CompilerAttrs()}


def list_plans() -> list[dict[str, Any]]:
    """The named plans of the strategies that choose among several lowerings of one op (C++,
    plan_registry.h; docs/compiler.md, "Plans"): per family, ``op``, ``name``, ``doc`` and
    ``last_resort`` (the plan every shape has, which cannot be disabled). A family named in
    ``PipelineOptions(disable=[...])`` (``tilecore compile --disable-pass NAME``) is not
    offered to the cost model; the lowering a search returns says its plan in its attribute
    ``plan``."""
    return [{"op": str(op), "name": str(name), "doc": str(doc), "last_resort": bool(last)}
            for op, name, doc, last in _ffi.ListPlans()]


def list_host_kernels() -> list[str]:
    """The op types with a host kernel of their own (others may run on the host through
    their npu strategy)."""
    return [str(s) for s in _ffi.ListHostKernels()]


def list_strategies() -> list[str]:
    """The op types with a strategy."""
    return [str(s) for s in _ffi.ListStrategies()]


def PlanMemory(sizes: Sequence[int], first: Sequence[int], last: Sequence[int],
               alignment: int = 64) -> tuple[list[int], int, int, int]:
    """Offsets for buffers of ``sizes`` bytes live over steps [first, last] (C++, greedy by
    size): returns ``(offsets, arena_size, total_size, lower_bound)``."""
    res = [int(x) for x in _ffi.PlanMemory([int(s) for s in sizes], [int(x) for x in first],
                                           [int(x) for x in last], int(alignment))]
    n = len(res) - 3
    return res[:n], res[n], res[n + 1], res[n + 2]


def GroupKernels(funcs: Sequence[Any], args: Sequence[Sequence[int]], inputs: Sequence[int],  # noqa: N802
                 outputs: Sequence[int], name: str = "group", prefetch: Sequence[Sequence[int]] = (),
                 l2_bytes: int | None = None, l1_bytes: int | None = None, handoff: str = "early",
                 concat_in_place: bool = True, slices: int = 1, sliced: Sequence[int] = ()) -> Any:
    """One kernel running the strategy PrimFuncs ``funcs`` in order (C++, kernel_group.h):
    ``args[i][k]`` is the id of the tensor param k of funcs[i] is; ``inputs`` and
    ``outputs`` are the ids that become the group's params; every other id is an
    intermediate in the shared L2. ``prefetch`` rows ``(tensor, member, begin, end)``
    copy bytes [begin, end) of input ``tensor`` into L2 during member ``member``, for the
    members after it that read it (docs/compiler.md, "Weight prefetch"). Each member's first
    loads of the inputs are handed to the member before it (docs/compiler.md, "Handoff"):
    ``handoff`` "none", "late" (after its work) or "early" (spread over it where the buffers
    they fill fit ``l1_bytes`` beside every member's own; attr "early_handoffs" counts them).
    With ``concat_in_place``, a Concat member whose inputs are each one run of its output's
    bytes has their producers write them there and copies nothing (attr "in_place_concats")."""
    from ..arch import params

    l2_bytes = params()["l2_bytes"] if l2_bytes is None else l2_bytes  # TC1's, by default
    l1_bytes = params()["l1_bytes"] if l1_bytes is None else l1_bytes
    modes = {"none": 0, "late": 1, "early": 2}
    if handoff not in modes:
        raise ValueError(f"GroupKernels: handoff {handoff!r}: one of none, late, early")
    return _ffi.GroupKernels(list(funcs), [[int(a) for a in row] for row in args], [int(i) for i in inputs],
                             [int(o) for o in outputs], str(name), [[int(x) for x in row] for row in prefetch],
                             int(l2_bytes), int(l1_bytes), modes[handoff], bool(concat_in_place), int(slices),
                             [int(t) for t in sliced])


def estimate_cost(func: Any, target: str = "npu -cores=4") -> dict[str, Any]:
    """The cost model's estimate of an npu PrimFunc (a strategy's, before the kernel
    pipeline) on ``target``, priced with the simulator's per-command formulas (C++,
    docs/cost_model.md): a dict with ``cycles``, ``engine_busy`` (per core: din, dout,
    mm, vec and sc cycles), ``ddr_cycles`` and ``l2_cycles`` (shared-level occupancy),
    ``ddr_bytes``, ``macs``, ``commands``, ``local_bytes`` (L1 per core of its buffers)
    and ``bound_by``; for a layer group's kernel, ``members``: per member in order, its
    ``start``, ``end`` and ``cycles`` (the sum of its ``runs``' spans: a group run in slices
    runs each member once per slice), ``macs``, ``ddr_cycles`` and ``bound_by``."""
    m = _ffi.EstimateKernelCost(func, Target(target))
    out = {str(k): v for k, v in m.items()}
    out["bound_by"] = str(out["bound_by"])
    out["engine_busy"] = [{str(k): int(v) for k, v in c.items()} for c in out["engine_busy"]]
    for k in ("cycles", "ddr_cycles", "l2_cycles", "ddr_bytes", "macs", "commands", "local_bytes"):
        out[k] = int(out[k])
    out["members"] = [{str(k): (str(v) if str(k) == "bound_by" else int(v)) for k, v in m.items()}
                      for m in out["members"]]
    return out


from .custom_kernel import register_kernel, remove_kernel  # noqa: E402
from .driver import CompileError, compile  # noqa: E402,A004
from .verify import VerifyError  # noqa: E402

__all__ = ["TensorSpec", "HasStrategy", "LowerOp", "list_strategies", "HasHostKernel", "LowerHostOp",
           "compiler_attrs", "list_host_kernels", "PlanMemory", "GroupKernels", "estimate_cost", "CompileError",
           "VerifyError", "compile", "register_kernel", "remove_kernel"]
