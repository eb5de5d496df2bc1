"""Layer groups (docs/compiler.md, "Layer groups"): runs of consecutive npu steps compiled
as one kernel whose intermediates stay in the cluster's shared L2 instead of the DDR.

A group is a run of npu steps in execution order, broken by a host step and by a free
view (Reshape, Flatten, ...). An intermediate is a value
a member writes that only members read and that is not a graph output; it becomes an
L2 allocation of the group's kernel (C++ ``compiler.GroupKernels``). A group grows while
its intermediates fit ``L2_BUDGET`` together, the rest of L2 left to the members' own
staging (a Conv's input, a MatMul's weights). A group whose kernel does not build (L2
overflows once the members' own buffers are placed) falls back to its members' steps.
"""
import json
from typing import Any, Callable, Sequence

import numpy as np

# bytes of L2 the intermediates of one group may take (of TC1's 4 MiB)
L2_BUDGET = 2 << 20
OMITTED = "\0omitted"  # the name an omitted input goes by here


class GroupNode:
    """The step of a layer group, standing where its first member stood: ``ins`` and
    ``outs`` are the values the group reads and writes in the DDR (inputs first in the
    order the members take them, constants included)."""

    def __init__(self, members: list[Any], ins: list[Any], outs: list[Any], internal: list[str],
                 l2_bytes: int) -> None:
        first = members[0]
        self.members, self.internal, self.l2_bytes = members, internal, l2_bytes
        self.index, self.node, self.name = first.index, None, first.name
        self.op, self.attrs, self.where, self.reason = "Group", {}, "npu", ""
        self.ins, self.outs, self.in_specs = ins, outs, None
        self.step_name = f"{first.step_name}+{len(members) - 1}"

    def debug(self) -> str:
        """What the executable's debug info records for the step (debuggers, profiles)."""
        return json.dumps({"nodes": [m.step_name for m in self.members], "internal": self.internal,
                           "l2_bytes": self.l2_bytes})


def _bytes(info, name, itemsize):
    shape, dtype = info[name]
    return int(np.prod(shape, dtype=np.int64)) * itemsize(dtype)


def plan(nodes: Sequence[Any], steps: Sequence[tuple], info: dict[str, tuple], graph_outputs: set[str],
         itemsize: Callable[[str], int]) -> list[tuple[list[int], list[str]]]:
    """The groups of ``steps`` (the driver's (node, module, function, input params) list):
    lists of step indices, two or more each, with the names of their intermediates."""
    readers = {}  # value name -> nodes reading it (fused nodes, which have no step, do not)
    for nd in nodes:
        if nd.where == "dropped":
            continue
        for v in nd.ins:
            if v is not None:
                readers.setdefault(str(v.name), []).append(nd)
    position = {id(nd): i for i, (nd, *_) in enumerate(steps)}
    groups, run = [], []

    def intermediates(members):
        inside = {id(m) for m in members}
        names = []
        for m in members:
            for v in m.outs:
                n = str(v.name)
                if n and n not in graph_outputs and readers.get(n) and all(id(r) in inside for r in readers[n]):
                    names.append(n)
        return names

    def close():
        if len(run) > 1:
            groups.append(([position[id(m)] for m in run], intermediates(run)))
        run.clear()

    for nd in nodes:
        if nd.where == "dropped":
            continue
        in_params = next((p for s, _, _, p in steps if s is nd), None) if nd.where == "npu" else None
        if nd.where != "npu" or in_params is None:
            close()
            continue
        run.append(nd)
        if sum(_bytes(info, n, itemsize) for n in intermediates(run)) > L2_BUDGET:
            run.pop()
            close()
            run.append(nd)
    close()
    return groups


def apply(groups: Sequence[tuple[list[int], list[str]]], steps: Sequence[tuple], funcs: Sequence[Any],
          info: dict[str, tuple], itemsize: Callable[[str], int],
          build_group: Callable[..., tuple]) -> tuple[list[tuple], list[Any], list[GroupNode]]:
    """``steps`` with each group's members replaced by one step. ``funcs[i]`` is the strategy
    PrimFunc of step i; ``build_group(indices, funcs, args, inputs, outputs)`` returns
    (module, function, PrimFunc) or raises, and the group's members then stay steps. Returns the new
    steps, their PrimFuncs, and the groups made (GroupNode)."""
    out, out_funcs, made = [], [], []
    by_first = {g[0][0]: g for g in groups}
    i = 0
    while i < len(steps):
        g = by_first.get(i)
        if g is None:
            out.append(steps[i])
            out_funcs.append(funcs[i])
            i += 1
            continue
        idx, internal = g
        members = [steps[k][0] for k in idx]
        ids, args, values = {}, [], {}  # an omitted input (None) is the driver's placeholder
        for k in idx:
            nd, _, _, in_params = steps[k]
            row = []
            for v in list(nd.ins[:in_params]) + list(nd.outs):
                n = OMITTED if v is None else str(v.name)
                values.setdefault(n, v)
                row.append(ids.setdefault(n, len(ids)))
            args.append(row)
        internal_set = set(internal)
        written = {str(v.name) for m in members for v in m.outs}
        ins = [n for n in values if n not in written and n not in internal_set]
        outs = [n for n in values if n in written and n not in internal_set]
        try:
            mod, fn, f = build_group(idx, [funcs[k] for k in idx], args, [ids[n] for n in ins], [ids[n] for n in outs])
        except Exception:  # noqa: BLE001 (the members' own steps are a correct program)
            for k in idx:
                out.append(steps[k])
                out_funcs.append(funcs[k])
            i = idx[-1] + 1
            continue
        node = GroupNode(members, [values[n] for n in ins], [values[n] for n in outs], internal,
                         sum(_bytes(info, n, itemsize) for n in internal))
        made.append(node)
        out.append((node, mod, fn, len(ins)))
        out_funcs.append(f)
        i = idx[-1] + 1
    return out, out_funcs, made
