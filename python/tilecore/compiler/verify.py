"""Differential verification of a compiled model (docs/compiler.md, "Verification"):
``tilecore.compile(..., verify=True)`` and ``tilecore compile --verify``.

The executable that ships is run on sample inputs on a simulator in hazard mode, and
every value each of its steps writes is read as the step ends (``Executable.run``'s
``observe``). Three checks, each naming what fails:

- **hazards**: an L1 or L2 access of one engine not ordered against another's by a wait
  or a barrier (the simulator's hazard mode) is a race; the step it happened in is named.
- **optimisations**: the same model compiled with every node a step of its own (no layer
  groups, no epilogue fusion, the same precision and thresholds) is run on the same
  inputs; each value a step of the shipped program writes is compared with the same
  value there. The first layer group or fused node whose output differs is named: the
  optimisation changed the model.
- **reference**: the outputs, and in f32 each node's output of the per-node compilation,
  against the reference evaluator (``tilecore.frontend.evaluate``, numpy per ONNX op).
  In f16/bf16/int8 the outputs' cosine is reported, not judged (the precision costs
  accuracy; ``tilecore compare`` says where).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..ir.graph import Graph
    from ..runtime import Executable

from .driver import CompileError
from .int8_edges import dequantise

# the simulator behind this npu device runs the checks (npu:0, the user's, is untouched)
VERIFY_DEVICE = 15
# lowest cosine of a value of the shipped program against the per-node program: the two
# compute the same arithmetic, so beyond rounding in another order they agree
OPTIMISATION_COSINE = {"f32": 0.99999, "f16": 0.9999, "bf16": 0.9999, "int8": 0.999}
# lowest cosine of an f32 value against the reference evaluator
REFERENCE_COSINE = 0.9999
# ... unless it is within rounding noise: each element within this share of the largest
# |input| of the step that wrote it (the mean of a normalised tensor is 0 up to rounding,
# and its cosine says nothing)
NOISE = {"f32": 1e-5, "f16": 4e-3, "bf16": 1.6e-2, "int8": 1.6e-2}


# in f16, bf16 and int8 a value may be this many times farther from the reference than the
# one-node-a-step program's (1 - cosine), plus NARROW_SLACK: each program rounds in its own
# places, neither is the model's f32
NARROW_ERROR = 2.0
NARROW_SLACK = 1e-4


class VerifyError(CompileError):
    """A compiled model that does not pass ``verify``: the message names the check, the
    step (a layer group and its members, a fused node, or a node) and the figures."""


def sample_inputs(inputs: Mapping[str, tuple[Sequence[int], str]], seed: int = 0) -> dict[str, np.ndarray]:
    """One seeded input per executable input: standard normal floats; integers in [0, 2)
    and booleans at random (any table of two rows or more takes them as indices)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, dtype) in inputs.items():
        dt = np.dtype("uint16" if dtype == "bfloat16" else dtype)
        if dtype == "bfloat16":
            import ml_dtypes

            out[name] = rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
        elif dt.kind == "f":
            out[name] = rng.standard_normal(shape).astype(dt)
        elif dt.kind == "b":
            out[name] = rng.integers(0, 2, shape).astype(bool)
        else:
            out[name] = rng.integers(0, 2, shape).astype(dt)
    return out


def cosine(a: Any, b: Any) -> float:
    """The cosine of two arrays as flat f64 vectors (1.0 when both are all zeros, -1.0
    when only one is, or when either holds a NaN or an infinity the other does not)."""
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        return -1.0
    fa, fb = np.isfinite(a), np.isfinite(b)
    if not np.array_equal(fa, fb) or not np.array_equal(a[~fa], b[~fb], equal_nan=True):
        return -1.0
    a, b = a[fa], b[fb]
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 1.0 if na == nb else -1.0
    return float(a @ b / (na * nb))


def _steps(exe) -> list[dict[str, Any]]:
    """Per step: name, op type, the values it writes, and what it stands for (a group's
    members, the nodes fused into it)."""
    import json

    d = exe.describe()
    consts = {d["buffers"][c["buffer"]]["name"] for c in d["constants"]}
    out = []
    for st in d["steps"]:
        dbg = st.get("debug", {})
        group = json.loads(dbg["group"]) if "group" in dbg else None
        out.append({"node": st["node"], "op_type": st["op_type"], "where": st["kind"],
                    "args": [d["buffers"][a]["name"] for a in st["args"]],
                    "outputs": [n for n in dbg.get("outputs", "").split(",") if n],
                    "data_inputs": [n for n in dbg.get("inputs", "").split(",") if n and n not in consts],
                    "members": group["nodes"] if group else [],
                    "fused": [n for n, _ in json.loads(dbg["fused"])] if "fused" in dbg else [],
                    "codes": json.loads(dbg["quantised"]) if "quantised" in dbg else {}})
    return out


def dequantised(a: np.ndarray, code: Sequence[float] | None) -> np.ndarray:
    """A copy of a value as a step wrote it, in the model's terms: a value the model has in
    floating point but the program stores in int8 (an int8 edge: the step's debug entry
    ``quantised`` gives its scale and zero point) as the f32 it stands for."""
    return a.copy() if code is None else dequantise(a, code)


def observe(exe: Executable, feeds: Mapping[str, np.ndarray], target: str) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """Runs ``exe`` on a simulator in hazard mode: (the outputs, per step ``values`` it wrote
    and the ``hazards`` in L1/L2 raised while it ran)."""
    from .. import runtime

    steps = _steps(exe)
    runtime.npu_configure(VERIFY_DEVICE, f"{target} -mode=hazard")
    sim = runtime.npu_simulator(VERIFY_DEVICE)
    seen = [0]
    codes = {n: c for st in steps for n, c in st["codes"].items()}

    def after(t, args):
        st = steps[t]
        wanted = set(st["outputs"])
        st["values"] = {n: dequantised(a.numpy(), codes.get(n)) for n, a in zip(st["args"], args) if n in wanted}
        # the largest |x| of the data (not the weights) the step read: its rounding noise's scale
        data = set(st["data_inputs"]) - wanted
        st["input_scale"] = max([float(np.max(np.abs(_values(dequantised(a.numpy(), codes.get(n)))), initial=0.0))
                                 for n, a in zip(st["args"], args) if n in data], default=0.0)
        hz = sim.hazards()
        st["hazards"] = [h["message"] for h in hz[seen[0]:] if h["space"] != "ddr"]
        seen[0] = len(hz)

    try:
        outs = exe.run(dict(feeds), device=VERIFY_DEVICE, observe=after)
    finally:
        runtime.npu_configure(VERIFY_DEVICE, target)  # (frees the checked simulator's memory)
    return outs, steps


def _what(st) -> str:
    if st["members"]:
        m = st["members"]
        names = ", ".join(m) if len(m) <= 8 else f"{', '.join(m[:3])}, ... {', '.join(m[-2:])}"
        return f"layer group `{st['node']}` ({len(m)} nodes: {names})"
    if st["fused"]:
        return f"node `{st['node']}` ({st['op_type']}) with {', '.join(st['fused'])} fused into it"
    return f"node `{st['node']}` ({st['op_type']}, {st['where']})"


def _values(a):
    """``a`` as f64 (bfloat16 arrays come from the simulator as uint16 or ml_dtypes)."""
    return np.asarray(a).astype(np.float64)


def agreement(a: Any, b: Any, noise: float) -> float:
    """The cosine of ``a`` against ``b``, or 1.0 when no element differs by more than
    ``noise`` (an absolute bound, see :func:`noise_bounds`)."""
    a, b = _values(a), _values(b)
    if a.shape == b.shape and np.all(np.isfinite(a) == np.isfinite(b)) and \
            np.max(np.abs(np.where(np.isfinite(a), a - b, 0.0)), initial=0.0) <= noise:
        return 1.0
    return cosine(a, b)


def noise_bounds(steps: Sequence[dict[str, Any]], precision: str) -> dict[str, float]:
    """Value name -> the rounding noise it may carry: NOISE of the largest data input of
    the step that wrote it, or more when it reads a value that is itself noise (at most
    ten times its bound: the mean of a normalised tensor, and what a Conv and a Relu make
    of it, are rounding noise throughout)."""
    bound: dict[str, float] = {}
    for st in steps:
        own = NOISE[precision] * st.get("input_scale", 0.0)
        carried = max([bound.get(n, 0.0) for n in st.get("data_inputs", ())], default=0.0)
        for n, v in st["values"].items():
            b = max(own, carried)
            size = float(np.max(np.abs(_values(v)), initial=0.0))
            bound[n] = b if size <= 10 * b else own
    return bound


def first_changed(steps: Sequence[dict[str, Any]], plain_steps: Sequence[dict[str, Any]],
                  precision: str, ref: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Each step of the shipped program (:func:`observe`'s ``steps``) against the same
    values in the one-node-a-step program: (per step ``node``, ``cosine`` (the lowest of
    its values), ``members``, ``fused``; the first step below OPTIMISATION_COSINE, as
    ``step``, ``value``, ``cosine`` and a ``message`` naming it, or None).

    In f16, bf16 and int8 the two programs round in different places by design (a value
    stored narrow between two steps in one stays f32 inside a fused epilogue in the other;
    a fused activation quantises once where its own step would quantise again; an int8
    residual is added in int8), and the difference accumulates: a value below the bound
    passes when it is no farther from the reference evaluator's (``ref``) than
    NARROW_ERROR times the one-node-a-step program's value (its plain cosine; the row
    records both, as ``reference`` and ``alone_reference``). In f32 the arithmetic is the same: no such
    allowance."""
    alone = {n: v for st in plain_steps for n, v in st["values"].items()}
    bound = OPTIMISATION_COSINE[precision]
    noise = noise_bounds(plain_steps, precision)
    rows, changed = [], None
    rounding = precision != "f32"
    for st in steps:
        common = [n for n in st["values"] if n in alone]
        if not common:
            continue
        cos = {n: agreement(st["values"][n], alone[n], noise.get(n, 0.0)) for n in common}
        worst = min(common, key=cos.get)
        row = {"node": st["node"], "cosine": cos[worst], "members": st["members"], "fused": st["fused"]}
        rows.append(row)
        if cos[worst] < bound and rounding and ref is not None:
            low = [n for n in common if cos[n] < bound and n in ref]
            shipped = {n: agreement(st["values"][n], ref[n], noise.get(n, 0.0)) for n in low}
            # (the one-node-a-step value's plain cosine: its noise allowance would make it exact)
            by_itself = {n: cosine(alone[n], ref[n]) for n in low}
            if len(low) == sum(1 for n in common if cos[n] < bound) and all(
                    1.0 - shipped[n] <= NARROW_ERROR * (1.0 - by_itself[n]) + NARROW_SLACK for n in low):
                row["reference"], row["alone_reference"] = shipped[worst], by_itself[worst]
                continue
        if cos[worst] < bound and changed is None:
            why = ("this optimisation changes the model" if st["members"] or st["fused"] else
                   "an optimisation of its inputs or outputs (int8 edges, a shared quantisation) changes the model")
            if rounding and ref is not None and worst in ref:
                why += (f" (the two programs round in different places in {precision}, but against the reference "
                        f"evaluator it is at "
                        f"{agreement(st['values'][worst], ref[worst], noise.get(worst, 0.0)):.6f}, the nodes alone "
                        f"at {cosine(alone[worst], ref[worst]):.6f})")
            changed = {"step": st["node"], "members": st["members"], "fused": st["fused"], "value": worst,
                       "cosine": cos[worst],
                       "message": f"{_what(st)} writes `{worst}` at cosine {cos[worst]:.6f} against the same nodes "
                                  f"compiled one step each (at least {bound} expected): {why}"}
    return rows, changed


def verify(exe: Executable, compile_plain: Callable[[], Executable], graph: Graph, precision: str, target: str,
           feeds: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The checks of this module on ``exe`` (``compile_plain()`` gives the per-node
    compilation, ``graph`` the Graph the reference evaluator runs). Returns the report's
    ``verify`` entry: ``checks`` (name -> "pass"), ``steps`` (per shipped step, the lowest
    cosine of its values against the per-node program), ``outputs`` (output -> cosine
    against the reference); raises VerifyError on the first check that fails."""
    from ..ir.graph import evaluate

    rep: dict[str, Any] = {"precision": precision, "checks": {}}
    outs, steps = observe(exe, feeds, target)
    for st in steps:
        if st["hazards"]:
            raise VerifyError(f"verify: {len(st['hazards'])} unordered access(es) in {_what(st)} "
                              f"(the simulator's hazard mode), first: {st['hazards'][0]}")
    rep["checks"]["hazards"] = "pass"

    plain = compile_plain()
    plain_outs, plain_steps = observe(plain, feeds, target)
    for st in plain_steps:
        if st["hazards"]:
            raise VerifyError(f"verify: {len(st['hazards'])} unordered access(es) in {_what(st)} of the per-node "
                              f"compilation (the simulator's hazard mode), first: {st['hazards'][0]}")
    ref = evaluate(graph, dict(feeds), keep_intermediates=True)
    noise = noise_bounds(plain_steps, precision)
    if precision == "f32":  # each node alone first: a wrong kernel is not an optimisation's fault
        for st in plain_steps:
            for n, v in st["values"].items():
                c = agreement(v, ref[n], noise[n]) if n in ref else 1.0
                if c < REFERENCE_COSINE:
                    raise VerifyError(f"verify: {_what(st)} computes `{n}` at cosine {c:.6f} against the reference "
                                      f"evaluator (at least {REFERENCE_COSINE} expected in f32)")
    rep["steps"], changed = first_changed(steps, plain_steps, precision, ref)
    if changed is not None:
        raise VerifyError(f"verify: {changed['message']}")
    rep["checks"]["optimisations"] = "pass"

    rep["outputs"] = {n: agreement(outs[n], ref[n], noise.get(n, 0.0)) for n in outs if n in ref}
    if precision == "f32":
        for n, c in rep["outputs"].items():
            if c < REFERENCE_COSINE:
                raise VerifyError(f"verify: output `{n}` at cosine {c:.6f} against the reference evaluator "
                                  f"(at least {REFERENCE_COSINE} expected in f32)")
    rep["checks"]["reference"] = "pass" if precision == "f32" else "reported"
    return rep
