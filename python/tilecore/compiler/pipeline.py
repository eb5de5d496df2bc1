"""The model compiler's pipeline (docs/compiler.md, "The pipeline"): its passes by name, in
order, and the tooling every compile runs them under: per-pass wall time and memory, the
graph printed or dumped after chosen passes, each graph pass checked against the imported
model (``verify_each``), and passes disabled by name for bisection.

    opts = PipelineOptions(print_after=["FoldBatchNorm"], dump_dir="passes/", verify_each=True,
                           disable=["LayerGroups"])
    exe = compiler.compile("model.onnx", pipeline=opts, report=report)
    report["passes"]          # [{"pass", "level", "seconds", "rss_delta_mb"}, ...] in the order run

Graph passes run on the Graph IR (C++, under a ``transform.PassContext`` whose ``disabled``
list and instruments this module fills); the driver's passes run on the steps the
partition made. Both write the same text form (``graph.text()`` for the first, one line per
node with its placement and the attributes the compiler gave it for the second).
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, TextIO

import numpy as np

from . import list_plans as _list_plans

# name -> (where, what it does); in the order a compile runs them. "required" passes cannot
# be disabled (the rest of the pipeline needs their output).
GRAPH_PASSES = {
    "Import": "ONNX -> Graph IR: every node checked against its op's schema, types inferred",
    "ExpandUnsupported": "QOperator nodes to their QDQ form; RNN/GRU/LSTM, Scan and ONNX functions that run "
                         "nowhere expanded to nodes that run",
    "CanonicalizeGraph": "the passes below down to InferTypes, in this order (one Sequential)",
    "EliminateCommonSubexpr": "one node for nodes of one op, attributes and inputs",
    "FoldConstants": "nodes whose inputs are all constants evaluated to constants",
    "FoldBatchNorm": "BatchNormalization after a Conv folded into its weights and bias",
    "GemmToMatMul": "Gemm as MatMul + Add (its transposes folded into constant operands)",
    "FoldChannelScale": "a constant per-channel Mul after a Conv or MatMul (through its bias Add and a Transpose) "
                        "folded into its weights and bias",
    "RecognizeActivations": "Gelu, SiLU, HardSwish, the attention NaN mask: one node each",
    "RecognizeNormalization": "LayerNormalization, RMSNorm written as reductions: one node each",
    "EliminateDeadCode": "nodes no output depends on removed",
    "InferTypes": "every value's type from its op's inference",
    "FoldMatMulBias": "MatMul + Add of a constant bias as one Gemm (the bias in the matrix engine)",
    "HoistActivations": "an activation after a Conv's Reshapes and Transposes moved before them (into its "
                        "epilogue); not in int8",
    "InlineConstantIfs": "an If whose condition is a constant replaced by the branch taken",
    "Decompose": "ops with no strategy and no host kernel written as ops that have one",
}
DRIVER_PASSES = {
    "Partition": "each node placed on the npu, the host, or as a free view; the reason when not the npu",
    "Precision": "the quantised model's QDQ pairs folded; each matrix node's precision and its thresholds",
    "FuseEpilogue": "a Conv's or Gemm's bias, residual Add, channel scale and activation in its epilogue; attention's "
                    "operand scales and head Transposes in its MatMuls, a NaN mask after a Softmax of finite scores "
                    "dropped",
    "Int8Edges": "values stored in int8 between int8 matrix ops, and the lookup tables / Softmax / transposes "
                 "fused into their readers",
    "ChannelScaleToWeights": "a squeeze-excite's channel scale (in [0, 1]) on an int8 Conv's weights, once per "
                             "image, instead of on its input, when the weights are the fewer",
    "BlockDiagonalGroups": "an int8 grouped Conv of few channels a group as one of fewer, wider groups, its weights "
                           "block-diagonal, when the cost model finds it faster",
    "ShareQuantisation": "one quantisation of an f32 value several int8 matrix ops read (a norm's int8 output, "
                         "alone when nothing reads its f32 one)",
    "SiblingGemms": "int8 Gemms of one input (attention's projections) as one Gemm",
    "GemmNorm": "an int8 Gemm's LayerNormalization in its epilogue",
    "Lower": "each step's kernel: its strategy's plan (the cost model ranks the candidates)",
    "LayerGroups": "runs of npu steps as one kernel, their intermediates in L2",
    "BatchSlices": "at a batch above 1, the first steps as a layer group run once per slice of the batch, when "
                   "the cost model finds it faster",
    "WeightPrefetch": "weights copied into L2 during the members before their reader",
    "Handoff": "each member's first loads issued during the member before it",
    "ConcatInPlace": "a Concat in a layer group whose inputs' producers write them into its output's place, "
                     "copying nothing",
    "Build": "each kernel compiled to TC1 machine code (a layer group's in LayerGroups)",
    "PlanMemory": "buffers placed in the arena by their live ranges",
    "Assemble": "the executable: constants, buffers, steps and their debug info",
}
REQUIRED = {"Import", "ExpandUnsupported", "InferTypes", "Partition", "Precision", "Lower", "Build", "PlanMemory",
            "Assemble"}
PASSES = {**GRAPH_PASSES, **DRIVER_PASSES}
# passes with no text of their own after them (print_after refuses them; a dump skips them)
NO_TEXT = {"BatchSlices": "runs inside LayerGroups: print after LayerGroups",
           "WeightPrefetch": "runs inside LayerGroups: print after LayerGroups",
           "Handoff": "runs inside LayerGroups: print after LayerGroups",
           "ConcatInPlace": "runs inside LayerGroups: print after LayerGroups",
           "Build": "makes machine code, not a graph: print after LayerGroups",
           "Assemble": "makes the executable, not a graph: print after PlanMemory"}

# verify_each: a graph pass keeps the imported model's outputs when every output has this
# cosine with them and no element differs by more than this fraction of its largest value
VERIFY_EACH_COSINE = 0.99999
VERIFY_EACH_RELATIVE = 1e-3


def _rss_mb() -> float | None:
    """The process's resident memory now (Linux), in MiB."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        return None


def plan_names(text: Any) -> list[str]:
    """The plan names of a comma-separated ``compiler.disabled_plans`` value, sorted, once each."""
    return sorted({n.strip() for n in str(text or "").split(",") if n.strip()})


def disableable_plans() -> list[str]:
    """The plans a compile may be told not to offer: every registered one but the plans of
    last resort."""
    return [p["name"] for p in _list_plans() if not p["last_resort"]]


def plan_refusal(name: str) -> str:
    """Why plan ``name`` cannot be disabled ("" when it can): no plan has that name, or it is
    its strategy's plan of last resort."""
    plans = {p["name"]: p for p in _list_plans()}
    if name not in plans:
        return f"no plan `{name}` (the plans that may be disabled: {', '.join(disableable_plans())})"
    if plans[name]["last_resort"]:
        return f"`{name}` is the {plans[name]['op']} strategy's plan of last resort, which every shape has"
    return ""


# Errors that only a defect of the compiler's own Python raises: a plan that does not fit or
# lower fails in C++ (an FFI error, a TilecoreError) or with a ValueError the planner raises.
_DEFECTS = (TypeError, AttributeError, NameError, KeyError, IndexError, AssertionError, ZeroDivisionError)


def raise_if_defect(e: BaseException) -> None:
    """Re-raises ``e`` when it is a defect of the compiler (one of ``_DEFECTS`` raised in
    Python): a fallback takes a plan that failed for another correct one, never a bug for a
    plan that did not fit (a split group or a dropped prefetch that hides it)."""
    from ..ffi.error import TilecoreError

    if isinstance(e, _DEFECTS) and not isinstance(e, TilecoreError):
        raise e


@dataclass
class PipelineOptions:
    """What to do around the passes of one compile.

    :param print_after: pass names (or ``"all"``) after which the graph's text is written to
        ``stream`` (default stderr).
    :param dump_dir: a folder: the text after every pass, ``NNNN_<Pass>.graph`` in the order run.
    :param verify_each: after every graph pass, the graph is evaluated (the reference
        evaluator, seeded inputs) and its outputs compared with the imported model's
        (cosine >= VERIFY_EACH_COSINE, no element off by more than VERIFY_EACH_RELATIVE of the
        largest); the first pass that changes them is a CompileError naming it. The
        executable is then verified as ``verify=True`` does, which names the step.
    :param disable: pass names not to run (not the ``REQUIRED`` ones), and names of plans
        the strategies are not to offer (``tilecore.compiler.list_plans()``; not a plan of last
        resort): for bisection.
    """

    print_after: Sequence[str] | str = ()
    dump_dir: str | os.PathLike[str] | None = None
    verify_each: bool = False
    disable: Sequence[str] = ()
    stream: TextIO | None = None
    _checked: bool = field(default=False, repr=False)

    def check(self) -> None:
        """ValueError naming a pass that does not exist, cannot be disabled or has no text to
        print; or a dump folder that holds another compile's dumps."""
        names = [self.print_after] if isinstance(self.print_after, str) else list(self.print_after)
        for n in names:
            if n != "all" and n not in PASSES:
                raise ValueError(f"print_after: no pass `{n}` (the passes: {', '.join(PASSES)}, or all)")
            if n in NO_TEXT:
                raise ValueError(f"print_after: `{n}` {NO_TEXT[n]}")
        plans = {p["name"] for p in _list_plans()}
        for n in self.disable:
            if n in plans:  # (a family of plans: docs/compiler.md, "Plans")
                why = plan_refusal(n)
                if why:
                    raise ValueError(f"disable: {why}")
                continue
            if n not in PASSES:
                raise ValueError(f"disable: no pass or plan `{n}` (the passes: {', '.join(PASSES)}; the plans "
                                 f"that may be disabled: {', '.join(disableable_plans())})")
            if n in REQUIRED:
                raise ValueError(f"disable: `{n}` is required (the passes after it need its output); "
                                 f"these can be disabled: {', '.join(p for p in PASSES if p not in REQUIRED)}")
        if self.dump_dir is not None and os.path.isdir(self.dump_dir) and \
                any(f.endswith(".graph") for f in os.listdir(self.dump_dir)):
            raise ValueError(f"dump_dir: {os.fspath(self.dump_dir)} holds .graph files already (another "
                             "compile's?): give an empty or new folder")

    @property
    def disabled_plans(self) -> list[str]:
        """The names in ``disable`` that are plans (not passes), sorted."""
        plans = {p["name"] for p in _list_plans()}
        return sorted({n for n in self.disable if n in plans})

    @property
    def inspects(self) -> bool:
        """Whether it prints, dumps or verifies (not only disables)."""
        return bool(self.print_after) or self.dump_dir is not None or self.verify_each


class Pipeline:
    """The passes of one compile as they run: records each one's time and memory, and does
    what ``options`` asks after it."""

    def __init__(self, options: PipelineOptions | None) -> None:
        self.options = options or PipelineOptions()
        self.options.check()
        pa = self.options.print_after
        self._print = set(PASSES) if pa == "all" or (not isinstance(pa, str) and "all" in pa) else \
            ({pa} if isinstance(pa, str) else set(pa))
        self.records: list[dict[str, Any]] = []
        self._stack: list[tuple[str, float, float | None, int]] = []
        self._dumped = 0
        self._reference: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None = None
        self._last_key: tuple[str, str] | None = None
        if self.options.dump_dir is not None:
            os.makedirs(self.options.dump_dir, exist_ok=True)

    def disabled(self, name: str) -> bool:
        return name in self.options.disable

    # ---- timing ---------------------------------------------------------------------
    def begin(self, name: str) -> None:
        """A pass starts (``end`` closes it)."""
        index = len(self.records)
        self.records.append({"pass": name, "level": len(self._stack), "seconds": 0.0, "rss_delta_mb": None})
        self._stack.append((name, time.perf_counter(), _rss_mb(), index))

    def end(self, text: Callable[[], str] | None = None, graph: Any = None) -> None:
        """The pass begun last is done: timed, then ``text()`` printed and dumped as asked
        (``graph`` verified, for a graph pass)."""
        name, t0, rss0, index = self._stack.pop()
        rec = self.records[index]
        rec["seconds"] = time.perf_counter() - t0
        rss = _rss_mb()
        if rss is not None and rss0 is not None:
            rec["rss_delta_mb"] = round(rss - rss0, 1)
        if text is not None:
            self._after(name, text, graph)

    # ---- after a pass ---------------------------------------------------------------
    def _after(self, name: str, text: Callable[[], str], graph: Any = None) -> None:
        want_print = name in self._print
        if not (want_print or self.options.dump_dir is not None or (self.options.verify_each and graph is not None)):
            return
        body = text()
        if want_print:
            out = self.options.stream or sys.stderr
            out.write(f"// ---- after {name} ----\n{body}\n")
        if self.options.dump_dir is not None:
            path = os.path.join(os.fspath(self.options.dump_dir), f"{self._dumped:04d}_{name}.graph")
            with open(path, "w", encoding="utf-8") as f:
                f.write(body if body.endswith("\n") else body + "\n")
            self._dumped += 1
        if self.options.verify_each and graph is not None and self._reference is not None:
            # (a pass that changes only constants' values leaves the text as it was)
            key = (body, _constants_digest(graph))
            if key != self._last_key:
                self._verify_graph(name, graph)
            self._last_key = key

    def set_reference(self, graph: Any) -> None:
        """verify_each's reference: ``graph`` (the model as imported, before any pass
        rewrote it) evaluated on seeded inputs."""
        from ..frontend import evaluate
        from .driver import CompileError
        from .verify import sample_inputs

        inputs = {}
        for v in graph.inputs:
            t = v.type
            if any(not isinstance(d, (int, np.integer)) for d in t.shape):
                raise CompileError(f"verify_each: input `{v.name}` has the symbolic shape {list(t.shape)}: "
                                   "give it a static one (input_shapes=, --input-shape)")
            inputs[str(v.name)] = (tuple(int(d) for d in t.shape), str(t.dtype))
        feeds = sample_inputs(inputs)
        try:
            self._reference = (feeds, dict(evaluate(graph, feeds)))
        except Exception as e:  # noqa: BLE001 (re-raised naming what failed)
            raise CompileError("verify_each: the reference evaluator cannot run the model as imported: "
                               f"{(str(e).splitlines() or [type(e).__name__])[0]}") from e

    def _verify_graph(self, name: str, graph: Any) -> None:
        from ..frontend import evaluate
        from .driver import CompileError
        from .verify import cosine

        feeds, want = self._reference
        try:
            got = evaluate(graph, feeds)
        except Exception as e:  # noqa: BLE001 (the graph after the pass does not even evaluate: the pass's fault)
            raise CompileError(f"verify_each: the graph after pass {name} does not evaluate: "
                               f"{(str(e).splitlines() or [type(e).__name__])[0]}") from e
        for out, ref in want.items():
            if out not in got:
                raise CompileError(f"verify_each: pass {name} removed output `{out}`")
            a, b = np.asarray(got[out]), np.asarray(ref)
            if a.shape != b.shape or a.dtype != b.dtype:
                raise CompileError(f"verify_each: pass {name} changed output `{out}` from {b.dtype}{list(b.shape)} "
                                   f"to {a.dtype}{list(a.shape)}")
            if b.dtype.kind not in "fc":
                if not np.array_equal(a, b):
                    raise CompileError(f"verify_each: pass {name} changed output `{out}` "
                                       f"({int(np.sum(a != b))} of {b.size} elements differ)")
                continue
            c = cosine(a, b)
            scale = float(np.max(np.abs(b[np.isfinite(b)]), initial=0.0))
            worst = float(np.max(np.abs(np.where(np.isfinite(b), a - b, 0.0)), initial=0.0))
            if c < VERIFY_EACH_COSINE or worst > VERIFY_EACH_RELATIVE * max(scale, 1e-30):
                raise CompileError(f"verify_each: pass {name} changed output `{out}`: cosine {c:.7f} with the "
                                   f"imported model's, largest difference {worst:.3g} (largest value {scale:.3g})")

    # ---- running passes -------------------------------------------------------------
    @contextlib.contextmanager
    def graph_passes(self) -> Iterator[None]:
        """The C++ graph passes run inside this: disabled ones skipped, each timed, printed,
        dumped and verified as asked."""
        from .. import transform

        def before(mod, info):
            self.begin(str(info.name))

        def after(mod, info):
            graph = mod.attrs["graph"] if "graph" in mod.attrs else None
            known = graph is not None and str(info.name) in PASSES
            self.end(graph.text if known else None, graph if known else None)

        cur = transform.PassContext.current()
        disabled = [str(x) for x in cur.disabled] + [n for n in self.options.disable if n in GRAPH_PASSES]
        ctx = transform.PassContext(opt_level=int(cur.opt_level), config=dict(cur.config.items()), disabled=disabled,
                                    instruments=[*cur.instruments,
                                                 transform.make_instrument("pipeline", before=before, after=after)])
        with ctx:
            yield

    @contextlib.contextmanager
    def step(self, name: str, text: Callable[[], str] | None = None, graph: Callable[[], Any] | None = None
             ) -> Iterator[None]:
        """A pass the driver runs (a Python graph step or one of DRIVER_PASSES): timed, then
        ``text()`` printed and dumped as asked (``graph()`` verified, for a graph step)."""
        self.begin(name)
        ok = False
        try:
            yield
            ok = True
        finally:
            if ok:
                self.end(text, graph() if graph is not None else None)
            else:
                self.end()


def _constants_digest(graph: Any) -> str:
    """A digest of the values of the graph's constants (its text shows only their types)."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    seen = set()
    for nd in graph.nodes:
        for v in nd.inputs:
            if v is not None and v.data is not None and str(v.name) not in seen:
                seen.add(str(v.name))
                h.update(str(v.name).encode())
                h.update(np.ascontiguousarray(v.numpy()).tobytes())
    return h.hexdigest()


def nodes_text(nodes: Sequence[Any], info: dict[str, tuple], title: str = "steps") -> str:
    """The driver's nodes as text, one line each (the form of ``graph.text()``, with where
    each runs and the attributes the compiler gave it; a layer group with its members)."""

    def ty(name):
        if name not in info:
            return ""
        shape, dtype = info[name]
        short = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int8": "i8", "uint8": "u8",
                 "int32": "i32", "int64": "i64", "bool": "bool"}.get(str(dtype), str(dtype))
        return f": {short}[{','.join(str(int(d)) for d in shape)}]"

    def attr_text(attrs):
        items = []
        for k in sorted(attrs):
            if k.startswith("_"):
                continue
            v = attrs[k]
            if isinstance(v, float):
                v = f"{v:g}"
            elif isinstance(v, str):
                v = f'"{v}"'
            elif isinstance(v, (list, tuple)):
                if len(v) > 8:
                    v = "[" + ",".join(str(x) for x in list(v)[:8]) + f",...{len(v)}]"
                else:
                    v = "[" + ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v) + "]"
            elif not isinstance(v, (int, bool)):
                v = type(v).__name__
            items.append(f"{k}={v}")
        return f" {{{', '.join(items)}}}" if items else ""

    def line(nd, indent):
        outs = ", ".join(f"%{v.name}{ty(str(v.name))}" for v in nd.outs if v is not None and str(v.name))
        ins = ", ".join("_" if v is None else f"%{v.name}" for v in nd.ins)
        where = nd.where or "?"
        return f"{indent}{outs} = {nd.op}({ins}){attr_text(nd.attrs)} on {where} @ \"{nd.name}\""

    lines = [f"{title} {{"]
    for nd in nodes:
        members = getattr(nd, "members", None)
        if members:
            lines.append(f"  group \"{nd.step_name}\" (L2 {nd.l2_bytes} B) {{")
            lines += [line(m, "    ") for m in members]
            lines.append("  }")
        elif getattr(nd, "where", None) != "dropped":
            lines.append(line(nd, "  "))
    lines.append("}")
    return "\n".join(lines)
