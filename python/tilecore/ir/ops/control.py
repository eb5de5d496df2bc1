"""tilecore/ir/ops/control.py — control flow: If, Loop, Scan.

Subgraph attributes are callables `body(*arrays) -> list` supplied by the evaluator
(they see the enclosing scope); at inference time they may be GraphInfo objects with
`.infer(input_infos)`, which these ops use to type their outputs. A body given only as
a callable cannot be inferred without running it, so inference then returns no
output descriptions (the evaluator takes the types from the values).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._util import fail
from .registry import REQUIRED, Operand, Result, SequenceInfo, TensorInfo, register_op


def _inferable(body):
    return body is not None and hasattr(body, "infer")


def _merge(a, b):
    """The common description of two branch outputs (dims that differ become None)."""
    if a is None or b is None:
        return a or b
    if isinstance(a, SequenceInfo) or isinstance(b, SequenceInfo):
        return SequenceInfo(a.elem if isinstance(a, SequenceInfo) else None)
    dtype = a.dtype if a.dtype is not None else b.dtype  # (a branch that could not be inferred: None)
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return TensorInfo(None, dtype)
    return TensorInfo(tuple(x if x == y else None for x, y in zip(a.shape, b.shape)), dtype)


def _if_infer(attrs, inputs):
    then_b, else_b = attrs["then_branch"], attrs["else_branch"]
    if not (_inferable(then_b) and _inferable(else_b)):
        return []
    cond = inputs[0]
    if cond.value is not None:
        return list((then_b if bool(np.asarray(cond.value).reshape(-1)[0]) else else_b).infer([]))
    return [_merge(a, b) for a, b in zip(then_b.infer([]), else_b.infer([]))]


@register_op("If", attrs={"then_branch": ("graph", REQUIRED), "else_branch": ("graph", REQUIRED)}, inputs=(1, 1),
             outputs=(1, -1), since_version=1, infer=_if_infer)
def if_(attrs: dict[str, Any], cond: Operand) -> Result:
    """Runs then_branch when the one-element bool `cond` is true, else else_branch;
    their outputs (tensors, sequences or optionals) are the op's."""
    c = np.asarray(cond)
    if c.size != 1:
        raise fail("If", f"cond must hold one element, got shape {c.shape}")
    branch = attrs["then_branch"] if bool(c.reshape(-1)[0]) else attrs["else_branch"]
    if branch is None:
        raise fail("If", "needs then_branch and else_branch")
    return tuple(branch())


def _loop_infer(attrs, inputs):
    body = attrs["body"]
    if not _inferable(body):
        return []
    carried = list(inputs[2:])
    it = TensorInfo((), np.dtype(np.int64))
    cond = TensorInfo((), np.dtype(bool))
    outs = list(body.infer([it, cond] + carried))[1:]
    finals = [_merge(o, c) if isinstance(c, TensorInfo) else o for o, c in zip(outs, carried)]
    scans = [TensorInfo((None,) + tuple(o.shape), o.dtype) if isinstance(o, TensorInfo) and o.shape is not None
             else o for o in outs[len(carried):]]
    return finals + scans


@register_op("Loop", attrs={"body": ("graph", REQUIRED)}, inputs=(2, -1), outputs=(1, -1), since_version=1,
             infer=_loop_infer)
def loop(attrs: dict[str, Any], trip_count: Operand, cond: Operand, *carried: Operand) -> Result:
    """Runs body(iteration, cond, *carried) -> (cond, *carried, *scan) while the
    iteration is below the optional int64 trip count M and the optional bool cond
    holds; returns the final carried values and the scan outputs stacked on a new
    axis 0 (empty float32 arrays when the body never ran)."""
    body = attrs["body"]
    if trip_count is None and cond is None:
        raise fail("Loop", "needs a trip count or a condition (it would never stop)")
    limit = None if trip_count is None else int(np.asarray(trip_count).reshape(-1)[0])
    keep_going = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
    values = list(carried)
    scans = []
    i = 0
    while keep_going and (limit is None or i < limit):
        outs = list(body(np.asarray(i, np.int64), np.asarray(keep_going), *values))
        if len(outs) < 1 + len(values):
            raise fail("Loop", f"the body gave {len(outs)} outputs, needs at least {1 + len(values)}")
        keep_going = bool(np.asarray(outs[0]).reshape(-1)[0])
        values = outs[1:1 + len(values)]
        step = outs[1 + len(values):]
        if not scans:
            scans = [[] for _ in step]
        for acc, v in zip(scans, step):
            acc.append(np.asarray(v))
        i += 1
    return tuple(values + [np.stack(acc) for acc in scans])


def _scan_layout(attrs, n_scan, n_out_scan):
    in_axes = list(attrs.get("scan_input_axes") or [0] * n_scan)
    in_dirs = list(attrs.get("scan_input_directions") or attrs.get("directions") or [0] * n_scan)
    out_axes = list(attrs.get("scan_output_axes") or [0] * n_out_scan)
    out_dirs = list(attrs.get("scan_output_directions") or [0] * n_out_scan)
    return in_axes, in_dirs, out_axes, out_dirs


def _scan_core(attrs, body, states, xs, length=None):
    n_scan = len(xs)
    in_axes, in_dirs, _, _ = _scan_layout(attrs, n_scan, 0)
    axes = [a % x.ndim for a, x in zip(in_axes, xs)]
    lengths = {x.shape[a] for x, a in zip(xs, axes)}
    if len(lengths) != 1:
        raise fail("Scan", f"scan inputs differ in length along their scan axes: {sorted(lengths)}")
    steps = lengths.pop() if length is None else length
    states = list(states)
    outs_per_step = []
    for t in range(steps):
        slices = [np.take(x, steps - 1 - t if d else t, axis=a) for x, a, d in zip(xs, axes, in_dirs)]
        outs = list(body(*states, *slices))
        states = outs[:len(states)]
        outs_per_step.append([np.asarray(o) for o in outs[len(states):]])
    return states, outs_per_step


def _stack_scan_outputs(attrs, per_step, n_out):
    _, _, out_axes, out_dirs = _scan_layout(attrs, 0, n_out)
    result = []
    for j in range(n_out):
        elems = [step[j] for step in per_step]
        if out_dirs[j]:
            elems = elems[::-1]
        rank = elems[0].ndim + 1
        result.append(np.stack(elems, axis=out_axes[j] % rank))
    return result


def _scan_infer(attrs, inputs):
    body = attrs["body"]
    if not _inferable(body):
        return []
    n_scan = attrs["num_scan_inputs"]
    opset = attrs.get("_opset") or 9
    given = list(inputs[1:]) if opset < 9 else list(inputs)
    states, xs = given[:len(given) - n_scan], given[len(given) - n_scan:]
    in_axes, _, _, _ = _scan_layout(attrs, n_scan, 0)
    slices = []
    for x, a in zip(xs, in_axes):
        if x.shape is None:
            slices.append(TensorInfo(None, x.dtype))
        else:
            a %= len(x.shape)
            slices.append(TensorInfo(x.shape[:a] + x.shape[a + 1:], x.dtype))
    outs = list(body.infer(states + slices))
    n_out = len(outs) - len(states)
    _, _, out_axes, _ = _scan_layout(attrs, n_scan, n_out)
    steps = None
    if xs and xs[0].shape is not None:
        steps = xs[0].shape[in_axes[0] % len(xs[0].shape)]
    result = outs[:len(states)]
    for o, a in zip(outs[len(states):], out_axes):
        if o.shape is None:
            result.append(TensorInfo(None, o.dtype))
            continue
        shape = list(o.shape)
        shape.insert(a % (len(shape) + 1), steps)
        result.append(TensorInfo(tuple(shape), o.dtype))
    return result


_SCAN_ATTRS = {"body": ("graph", REQUIRED), "num_scan_inputs": ("int", REQUIRED), "scan_input_axes": ("ints", None),
               "scan_input_directions": ("ints", None), "scan_output_axes": ("ints", None),
               "scan_output_directions": ("ints", None), "directions": ("ints", None)}


@register_op("Scan", attrs=_SCAN_ATTRS, inputs=(1, -1), outputs=(1, -1), since_version=8, infer=_scan_infer)
def scan(attrs: dict[str, Any], *inputs: Operand) -> Result:
    """Runs body(*states, *slices) -> (*states, *scan_out) over the scan inputs'
    slices along their scan axes (reversed per scan_input_directions), stacking the
    per-step outputs on scan_output_axes. Opset 8 takes a leading sequence_lens
    input and a batch axis 0 on every input."""
    body = attrs["body"]
    n_scan = attrs["num_scan_inputs"]
    if not n_scan:
        raise fail("Scan", "needs the attribute 'num_scan_inputs'")
    opset = attrs.get("_opset") or 9
    if opset >= 9:
        states, xs = inputs[:len(inputs) - n_scan], inputs[len(inputs) - n_scan:]
        states, per_step = _scan_core(attrs, body, states, xs)
        n_out = len(per_step[0]) if per_step else 0
        return tuple(list(states) + _stack_scan_outputs(attrs, per_step, n_out))
    seq_lens, rest = inputs[0], inputs[1:]
    states, xs = rest[:len(rest) - n_scan], rest[len(rest) - n_scan:]
    batch = xs[0].shape[0]
    finals, outs = [], []
    for b in range(batch):
        n = xs[0].shape[1] if seq_lens is None else int(np.asarray(seq_lens).reshape(-1)[b])
        st, per_step = _scan_core(attrs, body, [s[b] for s in states], [x[b, :n] for x in xs])
        finals.append(st)
        outs.append(_stack_scan_outputs(attrs, per_step, len(per_step[0]) if per_step else 0))
    result = [np.stack([f[i] for f in finals]) for i in range(len(states))]
    result += [np.stack([o[j] for o in outs]) for j in range(len(outs[0]))]
    return tuple(result)
