"""tilecore.transform: passes over the Kernel IR and the pass infrastructure.

    from tilecore import transform
    with transform.PassContext(opt_level=2, instruments=[transform.PassTimingInstrument()]):
        func = transform.Sequential([transform.Simplify(), transform.UnrollLoop()])(func)

A pass applies to an IRModule or to a single PrimFunc (wrapped in a module and
unwrapped again). See docs/passes.md.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Mapping

from ..ffi.object import Object, register_object
from ..ffi._base import _ffi_core


def _api(name):
    f = _ffi_core._get_global_func("transform." + name)
    if f is None:
        raise AttributeError(f"the tilecore library does not register 'transform.{name}'")
    return f


@register_object("transform.PassInfo")
class PassInfo(Object):
    __slots__ = ()


@register_object("transform.Pass")
class Pass(Object):
    """A pass: call it on an IRModule or a PrimFunc."""

    __slots__ = ()

    def __call__(self, mod_or_func: Any) -> Any:
        return _api("RunPass")(self, mod_or_func)

    def __repr__(self) -> str:
        return f"Pass({self.info.name})"


@register_object("transform.PassInstrument")
class PassInstrument(Object):
    """Callbacks around passes; build your own with :func:`make_instrument`."""

    __slots__ = ()


@register_object("transform.PassContext")
class PassContext(Object):
    """Options for the passes run inside ``with PassContext(...)``.

    :param opt_level: passes with a higher opt_level are skipped (default 2).
    :param config: options by name, e.g. ``{"transform.UnrollLoop.auto_max_extent": 8}``.
    :param disabled: names of passes not to run.
    :param instruments: PassInstruments (timing, IR dumps, your own).
    """

    __slots__ = ()

    def __init__(self, opt_level: int = 2, config: Mapping[str, Any] | None = None,
                 disabled: Iterable[str] | None = None, instruments: Iterable[PassInstrument] | None = None) -> None:
        self.__init_handle_by_constructor__(
            _api("PassContext"), opt_level, dict(config or {}), list(disabled or []), list(instruments or []))

    def __enter__(self):
        _api("EnterPassContext")(self)
        return self

    def __exit__(self, *exc) -> bool:
        _api("ExitPassContext")(self)
        return False

    @staticmethod
    def current() -> PassContext:
        return _api("PassContextCurrent")()


def make_instrument(name: str, enter_ctx: Callable[[], Any] | None = None, exit_ctx: Callable[[], Any] | None = None,
                    should_run: Callable[[Any, PassInfo], bool] | None = None,
                    before: Callable[[Any, PassInfo], Any] | None = None,
                    after: Callable[[Any, PassInfo], Any] | None = None) -> PassInstrument:
    """A PassInstrument from Python callables; before/after/should_run get (mod, info)."""
    return _api("PassInstrument")(name, enter_ctx, exit_ctx, should_run, before, after)


def PassTimingInstrument() -> PassInstrument:  # noqa: N802
    """Records each pass's wall time; read it with :func:`render_pass_timing`."""
    return _api("PassTimingInstrument")()


def render_pass_timing(instrument: PassInstrument) -> str:
    return _api("RenderPassTiming")(instrument)


def DumpIR(folder: str | os.PathLike[str]) -> PassInstrument:  # noqa: N802
    """Writes the module's script text before and after each pass into ``folder``."""
    return _api("DumpIRInstrument")(str(folder))


def Sequential(passes: Iterable[Pass], name: str = "Sequential") -> Pass:  # noqa: N802
    return _api("Sequential")(list(passes), name)


def prim_func_pass(fn: Callable[[Any, Any, PassContext], Any], opt_level: int = 0, name: str | None = None) -> Pass:
    """A pass from a Python function ``fn(func, mod, ctx) -> func``."""
    return _api("CreatePrimFuncPass")(fn, opt_level, name or getattr(fn, "__name__", "PythonPass"))


def simplify_expr(expr: Any) -> Any:
    """Simplifies one expression (free variables have unknown ranges)."""
    return _api("SimplifyExpr")(expr)


def const_int_bound(expr: Any, ranges: Mapping[Any, tuple[int, int]] | None = None) -> tuple[int, int]:
    """``(lo, hi)`` of an integer expression; ``ranges`` maps Var -> (min, extent)."""
    r = _api("ConstIntBound")(expr, {k: list(v) for k, v in (ranges or {}).items()} if ranges else None)
    return (r[0], r[1])


def _pass(name):
    def make() -> Pass:
        return _api(name)()

    make.__name__ = name
    make.__doc__ = f"The pass ``transform.{name}`` (see docs/passes.md)."
    return make


Simplify = _pass("Simplify")
UnrollLoop = _pass("UnrollLoop")
LowerAsyncDMA = _pass("LowerAsyncDMA")
PlanLocalMemory = _pass("PlanLocalMemory")
LoopPartition = _pass("LoopPartition")
VectorizeLoop = _pass("VectorizeLoop")
EmitTileIntrinsics = _pass("EmitTileIntrinsics")
FlattenBuffer = _pass("FlattenBuffer")


def DefaultKernelPipeline(opt_level: int = 2) -> Pass:  # noqa: N802
    """The kernel passes in the order the codegen runs them (``transform.DefaultKernelPipeline``).

    :param opt_level: 0 runs only what the codegen needs (VectorizeLoop, UnrollLoop,
        LowerAsyncDMA, FlattenBuffer, Simplify, PlanLocalMemory); 1 and above add
        Simplify, LoopPartition and EmitTileIntrinsics. See docs/passes.md for the
        output contract.
    """
    return _api("DefaultKernelPipeline")(int(opt_level))


# ---------------------------------------------------------------------------
# Graph passes (run on an ir.Graph; see docs/frontend.md)
# ---------------------------------------------------------------------------
def InferTypes(input_shapes: Mapping[str, Iterable[int]] | None = None,  # noqa: N802
               fold_constants: bool = False) -> Pass:
    """``transform.InferTypes``: every value's type from its op's registered infer.

    :param input_shapes: input name -> shape, binding the inputs' symbolic dimensions.
    :param fold_constants: also compute the outputs of nodes whose inputs are constants, in
        the same sweep (a chain of shapes computed from shapes is typed at once);
        FoldConstants then drops those nodes.
    """
    shapes = None if input_shapes is None else {k: [int(d) for d in v] for k, v in input_shapes.items()}
    return _api("InferTypes")(shapes, bool(fold_constants))


def graph_pass(fn: Callable[[Any, PassContext], Any], opt_level: int = 0, name: str | None = None) -> Pass:
    """A graph pass from a Python function ``fn(graph, ctx) -> graph``."""
    return _api("CreateGraphPass")(fn, opt_level, name or getattr(fn, "__name__", "PythonGraphPass"))


FoldConstants = _pass("FoldConstants")
EliminateDeadCode = _pass("EliminateDeadCode")
EliminateCommonSubexpr = _pass("EliminateCommonSubexpr")
FoldBatchNorm = _pass("FoldBatchNorm")
GemmToMatMul = _pass("GemmToMatMul")
FoldChannelScale = _pass("FoldChannelScale")
FoldMatMulBias = _pass("FoldMatMulBias")
HoistActivations = _pass("HoistActivations")
RecognizeActivations = _pass("RecognizeActivations")
RecognizeNormalization = _pass("RecognizeNormalization")
CanonicalizeGraph = _pass("CanonicalizeGraph")
