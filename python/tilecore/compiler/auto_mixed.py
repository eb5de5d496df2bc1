"""Automatic mixed precision: ``tilecore.compile(..., auto_mixed=TARGET_COSINE)``.

The model is compiled in the asked precision (int8, f16 or bf16) and run next to its f32
compilation on the evaluation samples. While the lowest output cosine is below the
target, the most sensitive matrix nodes still in the narrow precision move to bf16 (to
f32 when the precision is bf16 or f16): one node, then two, four, ... per round; the
round that meets the target is then bisected, so no more nodes move than the target needs
(among the most sensitive first).

A node's sensitivity is the output cosine it costs alone: ``1 - cos`` of the model's
outputs on the first evaluation sample when only that node is in the narrow precision
and every other matrix node in the fallback one (one compilation and run per node; the
kernels are shared between them). Measuring the error a node adds between its own input
and output instead misleads on deep networks, which amplify upstream noise: the late
layers look worst while the error comes from the early ones. The result says which
nodes moved, their sensitivities and the cosine after each round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from .compare import metrics

if TYPE_CHECKING:
    import numpy as np


def _output_cosine(exe, ref_outs, samples, outputs):
    """The lowest cosine of ``exe``'s outputs against ``ref_outs`` (one dict per sample)."""
    worst = 1.0
    for feed, want in zip(samples, ref_outs):
        got = exe.run(feed)
        worst = min([worst] + [metrics(got[k], want[k])["cosine"] for k in outputs])
    return worst


def search(compile_fn: Callable[..., Any], model: Any, target_cosine: float, precision: str,
           qtable: Mapping[str, str] | None, compile_kw: dict[str, Any], samples: Sequence[Mapping[str, np.ndarray]],
           fallback: str = "bf16") -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(executable, report, compile report): the mixed-precision executable meeting
    ``target_cosine`` on ``samples`` (a list of feeds) if moving nodes can, and what was
    done. ``compile_fn(model, precision=, qtable=, keep_intermediates=, report=, **compile_kw)``."""
    if not samples:
        raise ValueError("auto_mixed needs evaluation samples: give calib_samples= (the first ones are used)")
    if precision in ("f16", "bf16"):
        fallback = "f32"
    qtable = dict(qtable or {})
    ref = compile_fn(model, precision="f32", qtable=None, keep_intermediates=False, report={}, **compile_kw)
    ref = [ref.run(feed) for feed in samples]
    rep = {}
    exe = compile_fn(model, precision=precision, qtable=qtable, keep_intermediates=False, report=rep, **compile_kw)
    outputs = list(rep["graph_outputs"])
    cos = _output_cosine(exe, ref, samples, outputs)
    rounds, moved, sensitivity = [{"moved": 0, "cosine": cos}], [], {}
    narrow = [n for n, p in rep["precision"]["assigned"].items() if p == precision]
    if cos < target_cosine and narrow:
        for n in narrow:  # each node alone in the narrow precision
            alone = dict(qtable)
            alone.update({m: fallback for m in narrow if m != n})
            e = compile_fn(model, precision=precision, qtable=alone, keep_intermediates=False, report={}, **compile_kw)
            sensitivity[n] = 1.0 - _output_cosine(e, ref, samples[:1], outputs)
        order = sorted(narrow, key=lambda n: -sensitivity[n])
        base = dict(qtable)

        def attempt(count):
            table = dict(base)
            table.update({n: fallback for n in order[:count]})
            r = {}
            e = compile_fn(model, precision=precision, qtable=table, keep_intermediates=False, report=r, **compile_kw)
            c = _output_cosine(e, ref, samples, outputs)
            rounds.append({"moved": count, "cosine": c})
            return e, r, c, table

        lo, count, batch = 0, 0, 1
        while cos < target_cosine and count < len(order):
            lo, count = count, min(count + batch, len(order))
            exe, rep, cos, qtable = attempt(count)
            batch *= 2
        # the last round may have moved more than needed: bisect between it and the one before
        hi = count
        while cos >= target_cosine and hi - lo > 1:
            mid = (lo + hi) // 2
            e, r, c, t = attempt(mid)
            if c >= target_cosine:
                hi, exe, rep, cos, qtable = mid, e, r, c, t
            else:
                lo = mid
        if cos >= target_cosine:
            count = hi
        moved = order[:count]
    return exe, {"target": float(target_cosine), "cosine": cos, "met": bool(cos >= target_cosine),
                 "moved": moved, "moved_to": fallback, "sensitivity": {n: sensitivity[n] for n in moved},
                 "rounds": rounds, "qtable": qtable, "samples": len(samples)}, rep
