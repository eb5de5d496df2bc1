"""tilecore/compiler/int8_edges.py — int8 activations between ops (docs/precision.md,
"int8 between ops").

An int8 Conv normally stores f32 and its int8 readers quantise that on load. When every
reader of its output is an int8 Conv on the npu — reading it as data (all with one
``tc_x_scale`` and zero point, as they are: the scale is the tensor's calibrated
threshold) or as a fused residual — or a MaxPool whose output is read so, the output
is stored in int8 instead (the MaxPool runs in int8: the max of quantised values is the
quantised max):

- the producer gets ``tc_y_scale`` / ``tc_y_zero_point`` and quantises in its epilogue
  with the same operations its readers used on load, so the data readers see the same
  bits as before, from a quarter of the bytes;
- a residual reader gets ``tc_residual_scale`` / ``tc_residual_zero_point`` and
  dequantises on load: the one place the result changes (the residual is int8, as in
  any int8 engine, instead of f32). A value only residual readers read (a downsample
  branch) is quantised with its own calibrated threshold.
"""

from __future__ import annotations

from typing import Any, Callable


def assign(nodes: list[Any], info: dict[str, tuple], graph_outputs: set[str],
           HasStrategy: Callable[..., str], TensorSpec: Callable[..., Any],
           thresholds: dict[str, float] | None = None) -> list[str]:
    """Makes the eligible Conv outputs int8 in place (``info``, attributes and input
    specs); returns their value names. A value read only as a residual takes its scale
    from its own calibrated threshold in ``thresholds`` (symmetric, zero point 0)."""
    from .fuse_epilogue import value_readers
    from .precision import activation_scale

    readers = value_readers(nodes)

    def int8_readers(name, depth=0):
        """(data scales, residual readers, MaxPools) when every reader of ``name`` takes it
        in int8 (a MaxPool: through its output), else None."""
        rs = readers.get(name, [])
        if name in graph_outputs or not rs or info[name][1] != "float32" or depth > 4:
            return None
        scales, residual, pools = set(), [], []
        for r, i in rs:
            if r.where != "npu":
                return None
            if r.op == "MaxPool" and len(r.outs) == 1:
                sub = int8_readers(str(r.outs[0].name), depth + 1)
                if sub is None:
                    return None
                scales |= sub[0]
                residual += sub[1]
                pools += [r] + sub[2]
            elif r.op != "Conv" or r.attrs.get("tc_precision") != "int8":
                return None
            elif i == 0 and r.attrs.get("tc_x_scale"):
                scales.add((float(r.attrs["tc_x_scale"]), int(r.attrs.get("tc_x_zero_point", 0))))
            elif r.attrs.get("tc_residual") and i == len(r.ins) - 1:
                residual.append(r)
            else:
                return None
        return scales, residual, pools

    done = []
    for nd in nodes:
        if (nd.op != "Conv" or nd.where != "npu" or nd.attrs.get("tc_precision") != "int8"
                or len(nd.outs) != 1):
            continue
        y = str(nd.outs[0].name)
        found = int8_readers(y)
        if found is not None and not found[0] and found[1] and not found[2] and y in (thresholds or {}):
            found[0].add((activation_scale(thresholds[y]), 0))  # residual readers only
        if found is None or len(found[0]) != 1:
            continue
        (scale, zero_point), residual_readers, pools = found[0].pop(), found[1], found[2]
        values = [y] + [str(p.outs[0].name) for p in pools]
        touched = {id(x): x for x in [nd] + pools + residual_readers}
        for v in values:
            touched.update({id(r): r for r, _ in readers.get(v, [])})
        saved = [(x, x.attrs, x.in_specs) for x in touched.values()]
        old = {v: info[v] for v in values}
        for v in values:
            info[v] = (info[v][0], "int8")
        nd.attrs = dict(nd.attrs, tc_y_scale=scale, tc_y_zero_point=zero_point)
        for r in residual_readers:
            r.attrs = dict(r.attrs, tc_residual_scale=scale, tc_residual_zero_point=zero_point)
        refused = False
        for x, _, _ in saved:
            x.in_specs = [None if v is None else TensorSpec(*info[str(v.name)]) for v in x.ins]
            refused = refused or bool(HasStrategy(x.op, x.attrs, x.in_specs))
        if refused:  # a strategy refuses the int8 form: the edges stay f32
            info.update(old)
            for x, attrs, specs in saved:
                x.attrs, x.in_specs = attrs, specs
            continue
        done += values
    return done
