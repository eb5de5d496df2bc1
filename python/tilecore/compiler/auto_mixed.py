"""Automatic mixed precision: ``tilecore.compile(..., auto_mixed=TARGET_COSINE)``.

The model is compiled in the asked precision (int8, f16 or bf16) and run next to its f32
compilation on the evaluation samples, every intermediate kept. While the lowest output
cosine is below the target, the most sensitive matrix nodes still in the narrow precision
move to bf16 (to f32 when the precision is bf16 or f16): one node, then two, four, ...
per round. A node's sensitivity is how much it lowers the cosine: the cosine lost from
its data input to its output, ``(1 - cos(out)) - (1 - cos(in))``, on the first evaluation
sample. The result says which nodes moved and the cosine after each round.
"""
import numpy as np

from .compare import metrics


def _cosines(exe, ref_exe, samples, names=None):
    """Lowest cosine per output over the samples, and the first sample's per-value cosines."""
    lowest, per_value = {}, None
    for i, feed in enumerate(samples):
        got, want = exe.run(feed), ref_exe.run(feed)
        keys = names if names is not None else list(got)
        for k in keys:
            if k in got and k in want:
                c = metrics(got[k], want[k])["cosine"]
                if i == 0:
                    per_value = per_value or {}
                    per_value[k] = c
                if names is None or k in names:
                    lowest[k] = min(lowest.get(k, 1.0), c)
    return lowest, per_value or {}


def search(compile_fn, model, target_cosine, precision, qtable, compile_kw, samples, fallback="bf16"):
    """(executable, report): the mixed-precision executable meeting ``target_cosine`` on
    ``samples`` (a list of feeds) if moving nodes can, and what was done.
    ``compile_fn(model, precision=, qtable=, keep_intermediates=, report=, **compile_kw)``."""
    if not samples:
        raise ValueError("auto_mixed needs evaluation samples: give calib_samples= (the first ones are used)")
    if precision in ("f16", "bf16"):
        fallback = "f32"
    qtable = dict(qtable or {})
    ref_rep = {}
    ref = compile_fn(model, precision="f32", qtable=None, keep_intermediates=True, report=ref_rep, **compile_kw)
    outputs = None
    rounds, moved, batch = [], [], 1
    while True:
        rep = {}
        exe = compile_fn(model, precision=precision, qtable=qtable, keep_intermediates=True, report=rep, **compile_kw)
        if outputs is None:
            outputs = list(rep["graph_outputs"])
        lowest, _ = _cosines(exe, ref, samples, outputs)
        cos = min(lowest.values()) if lowest else 1.0
        rounds.append({"moved": len(moved), "cosine": cos})
        narrow = [n for n, p in rep["precision"]["assigned"].items() if p == precision]
        if cos >= target_cosine or not narrow:
            break
        _, per_value = _cosines(exe, ref, samples[:1])
        sens = []
        for n in narrow:
            io = rep["precision"]["io"].get(n)
            if io is None or io[1] not in per_value:
                continue
            c_in = per_value.get(io[0], 1.0)
            sens.append(((1 - per_value[io[1]]) - (1 - c_in), n))
        sens.sort(reverse=True)
        take = [n for _, n in sens[:batch]] or narrow[:batch]
        for n in take:
            qtable[n] = fallback
            moved.append(n)
        batch *= 2
    final_rep = {}
    exe = compile_fn(model, precision=precision, qtable=qtable, keep_intermediates=False, report=final_rep,
                     **compile_kw)
    return exe, {"target": float(target_cosine), "cosine": cos, "met": bool(cos >= target_cosine),
                 "moved": moved, "moved_to": fallback, "rounds": rounds, "qtable": qtable,
                 "samples": len(samples)}, final_rep
