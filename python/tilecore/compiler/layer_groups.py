"""Layer groups (docs/compiler.md, "Layer groups"): runs of consecutive npu steps compiled
as one kernel whose intermediates stay in the cluster's shared L2 instead of the DDR.

A group is a run of npu steps in execution order, broken by a host step. A free view
(Reshape, Flatten, ...) inside a run is an alias: its output is its input's bytes, in L2
when the input is an intermediate. An intermediate is a value
a member writes that only members read and that is not a graph output; it takes a place
in the group kernel's L2 arena from the first member that uses it to the last (C++
``compiler.GroupKernels``), so intermediates that are not live at once share L2. A group
grows while the intermediates live at any one member fit ``L2_BUDGET``, the rest of L2
left to the members' own staging (a Conv's input, a MatMul's weights), and while its
kernel would take at most ``max_params()`` parameters. A group whose kernel does not build (L2
overflows once the members' own buffers are placed) is grouped again at ``L2_BUDGET_SAFE``,
then split in halves, down to single steps.

Batch slices (TPU-MLIR's n-slicing): a CNN's first layers at a batch B > 1 write
activations that no longer fit L2 (ResNet-50's layer1 at batch 8: 6.4 MB a tensor), while
their weights are small. Of the npu steps from a stretch's start that each compute each image
apart (batch_rows' op sets), the head and the slice count S (a divisor of B) the cost model
finds fastest (``Groups.sliced_head``) are grouped at B/S images: the members are lowered for
one slice, and the group kernel runs them S times (``GroupKernels(slices=S)``), each run
reading and writing its slice's rows of the DDR tensors and keeping the slice's
intermediates in L2. The rest of the stretch is grouped at the whole batch.
"""
from typing import Any, Callable, Sequence

import numpy as np

from ..arch import params as _params
from .batch_rows import ELEMENTWISE, PER_IMAGE
from .pipeline import raise_if_defect

L2_BYTES = _params()["l2_bytes"]  # TC1's shared L2
# bytes of L2 the intermediates of one group may take at one member (the rest: the members'
# own buffers: weights staged or prefetched, a Conv's staged input, the handoff area)
L2_BUDGET = L2_BYTES * 85 // 100
# the budget a run is grouped again with when its kernel does not build at L2_BUDGET (its
# members' own buffers took more than the rest)
L2_BUDGET_SAFE = L2_BYTES * 3 // 4
# the budget of a group run in slices of the batch: it prefetches no weights, so its
# intermediates may take more of L2
L2_BUDGET_SLICED = L2_BYTES * 9 // 10
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
        self.member_costs: list[dict[str, Any]] = []  # the cost model's, per member (the driver's)
        self.member_pc: list[dict[str, list[list[int]]]] = []  # per member, its code (member_code)
        self.member_plans: list[str] = []  # per member, its strategy's plan ("" none: plan_registry.h)
        # weight name -> {"reader", "bytes", "during": members fetching it, "bytes_during":
        # member -> the bytes fetched during it} (weight_prefetch.py)
        self.prefetch: dict[str, dict[str, Any]] = {}
        self.member_inputs: list[list[str]] = []  # per member, the values it reads ("" omitted)
        # the runs of the members: once, or once per slice of the batch (each its images' rows)
        self.slices = 1
        # value name -> (byte offset in L2, dtype, shape): the intermediates' places (l2_places)
        self.l2_places: dict[str, tuple[int, str, list[int]]] = {}
        # the members that are Concats written in place: their inputs' producers wrote their
        # bytes (GroupKernels' in_place_concats); they copy nothing
        self.in_place: list[int] = []

    def summary(self, buffer_of: Callable[[str], int] | None = None) -> dict[str, Any]:
        """The group as the report lists it and the step's debug info records it; with
        ``members``: per member, its op type and the cost model's estimate of its cycles
        in the group, its MACs and what bounds it, ``plan`` (the plan its strategy chose, where
        the strategy names its plans: docs/compiler.md, "Plans"), ``pc``, its instructions per core
        (``{core: [[begin, end], ...]}``, what the simulator measures it by), and, given
        ``buffer_of`` (a DDR value's buffer index), ``in`` (the values it reads) and ``out``
        (where each value it writes lives, member_places)."""
        out = {"step": self.step_name, "nodes": [m.step_name for m in self.members], "internal": self.internal,
               "l2_bytes": self.l2_bytes, "prefetch": self.prefetch}
        if self.slices > 1:
            out["slices"] = self.slices
        if self.member_costs:
            out["members"] = [{"node": m.step_name, "op": m.op, "est_cycles": int(c["cycles"]),
                               "macs": int(c["macs"]), "bound_by": str(c["bound_by"])}
                              for m, c in zip(self.members, self.member_costs)]
            # (a member run once per slice holds only its slice in L2, where the debuggers
            # would read a whole tensor: they take such a group as one step)
            if len(self.member_pc) == len(self.members) and self.slices == 1:
                for entry, pc in zip(out["members"], self.member_pc):
                    entry["pc"] = pc
            if len(self.member_plans) == len(self.members):
                for entry, plan in zip(out["members"], self.member_plans):
                    if plan:
                        entry["plan"] = plan
            for k in self.in_place:
                out["members"][k]["in_place"] = True
            if buffer_of is not None and len(self.member_inputs) == len(self.members) and self.slices == 1:
                for entry, m, ins in zip(out["members"], self.members, self.member_inputs):
                    entry["in"] = list(ins)
                    entry["out"] = self.member_places(m, buffer_of)
        return out

    def member_places(self, member: Any, buffer_of: Callable[[str], int]) -> list[dict[str, Any]]:
        """Where each value ``member`` writes lives once the member is complete: an
        intermediate in its L2 place (``offset`` bytes into L2, the whole tensor row-major
        in ``dtype`` and ``shape``, until its last reader is done), any other in the DDR
        buffer of the group's output (``buffer``, an index of the executable's buffers)."""
        places = []
        for v in member.outs:
            name = str(v.name)
            if name in self.l2_places:
                offset, dtype, shape = self.l2_places[name]
                places.append({"value": name, "space": "l2", "offset": offset, "dtype": dtype, "shape": shape})
            else:
                places.append({"value": name, "space": "ddr", "buffer": buffer_of(name)})
        return places


def member_code(module: Any, function: str, count: int, empty: Sequence[int] = ()) -> list[dict[str, list[list[int]]]]:
    """Per member of a group kernel (``function`` of the npu ``module``), its instructions
    on each core that runs the kernel: ``{core: [[begin, end), ...]}``, core a decimal
    string (a JSON key), from the module's member table (the code generator's record of
    each member's ``cores`` loops); [] when the table does not cover ``count`` members
    (the members in ``empty``, in-place Concats, have no code: {})."""
    info = next((f for f in module.info["functions"] if f["name"] == function), None)
    if info is None:
        return []
    sections = info["program"].sections
    out: list[dict[str, list[list[int]]]] = [{} for _ in range(count)]
    for section, begin, end, member in (tuple(int(x) for x in e) for e in info["member_table"]):
        if not 0 <= member < count:
            return []
        for core in sections[section]["cores"]:
            if core < int(info["cores"]):
                out[member].setdefault(str(core), []).append([begin, end])
    return out if all(o or m in empty for m, o in enumerate(out)) else []


def _bytes(info, name, itemsize):
    shape, dtype = info[name]
    return int(np.prod(shape, dtype=np.int64)) * itemsize(dtype)


class _RunPeak:
    """``Groups.peak_l2_bytes`` of a run of steps, kept as steps are appended: a value counts
    once its last reader joins (each value at most once), over the positions from its first
    use to that reader, so appending costs the spans it closes, not the whole run again (a
    model of thousands of npu steps, an unrolled LSTM, would take minutes)."""

    def __init__(self, groups: "Groups") -> None:
        self.groups = groups
        self.reset()

    def reset(self) -> None:
        self.span, self.inside, self.written, self.counted, self.live = {}, set(), set(), set(), []
        self.peak = 0

    def add(self, step: tuple) -> int:
        """Appends ``step`` (a driver step tuple); returns the run's peak."""
        g = self.groups
        nd, _, _, in_params = step
        pos = len(self.live)
        self.live.append(0)
        self.inside.add(id(nd))
        for v in list(nd.ins[:in_params]) + list(nd.outs):
            if v is not None:
                n = g.root(str(v.name))
                self.span[n] = (self.span.get(n, (pos, pos))[0], pos)
        for v in nd.outs:
            if str(v.name):
                self.written.add(str(v.name))
        for v in nd.ins:
            n = None if v is None else g.root(str(v.name))
            if (n is None or n not in self.written or n in self.counted or n in g.graph_outputs
                    or not g.readers.get(n) or not all(id(r) in self.inside for r in g.readers[n])):
                continue
            self.counted.add(n)
            first, last = self.span[n]
            size = _bytes(g.info, n, g.itemsize)
            for p in range(first, last + 1):
                self.live[p] += size
                self.peak = max(self.peak, self.live[p])
        return self.peak


class _RunParams:
    """The parameters (DDR values: inputs, constants included, and outputs) the group kernel
    of a run of steps would take, kept as steps are appended: a value the run writes is an
    output while a reader outside the run, or the graph, needs it."""

    def __init__(self, groups: "Groups") -> None:
        self.groups = groups
        self.reset()

    def reset(self) -> None:
        # waiting: each value the run writes -> the readers of it not in the run yet
        self.inputs, self.waiting, self.outputs = set(), {}, 0

    def add(self, step: tuple) -> int:
        """Appends ``step`` (a driver step tuple); returns the run's parameter count."""
        g = self.groups
        nd, _, _, in_params = step
        for v in nd.ins[:in_params]:
            n = OMITTED if v is None else g.root(str(v.name))
            if n not in self.waiting:
                self.inputs.add(n)
            elif id(nd) in self.waiting[n]:
                self.waiting[n].discard(id(nd))
                if not self.waiting[n] and n not in g.graph_outputs:
                    self.outputs -= 1
        for v in nd.outs:
            n = g.root(str(v.name))
            if str(v.name) and n not in self.waiting:
                self.waiting[n] = {id(r) for r in g.readers.get(n, [])}
                if self.waiting[n] or n in g.graph_outputs:
                    self.outputs += 1
        return len(self.inputs) + self.outputs


def max_params() -> int:
    """The most parameters a group kernel takes (the npu's limit on a kernel's arguments)."""
    from . import _ffi

    return int(_ffi.GroupMaxParams())


class Groups:
    """The layer groups of the driver's ``steps`` ((node, module, function, input params)
    tuples in execution order): ``runs`` are lists of step indices, two or more each. The
    steps named in ``apart`` are left out of every run (each breaks the run it was in)."""

    def __init__(self, nodes: Sequence[Any], steps: Sequence[tuple], info: dict[str, tuple],
                 graph_outputs: set[str], itemsize: Callable[[str], int], apart: Sequence[str] = (),
                 step_cycles: Callable[[int, tuple, int], int | None] | None = None) -> None:
        self.steps, self.info, self.graph_outputs, self.itemsize = steps, info, graph_outputs, itemsize
        # (step, positions of its params in L2, slices) -> the cost model's cycles of the step
        # for one slice of the batch (None: it does not lower so); None: no batch slices
        self.step_cycles = step_cycles
        self.alias = {}  # a free view's output -> the value whose bytes it is
        for nd in nodes:
            if nd.where == "view":
                src = str(nd.ins[0].name)
                self.alias[str(nd.outs[0].name)] = self.alias.get(src, src)
        # value name (its bytes' owner) -> nodes reading it, through views (fused nodes, which
        # have no step, and the views themselves do not count)
        self.readers = {}
        for nd in nodes:
            if nd.where in ("dropped", "view"):
                continue
            for v in nd.ins:
                if v is not None:
                    self.readers.setdefault(self.root(str(v.name)), []).append(nd)
        position = {id(nd): i for i, (nd, *_) in enumerate(steps)}
        self.runs, stretch = [], []  # (a stretch: npu steps one after another)
        self.slices = {}  # a sliced run's first step -> its slice count
        for nd in nodes:
            if nd.where in ("dropped", "view"):
                continue
            if nd.where != "npu" or id(nd) not in position or nd.step_name in apart:
                self.add_runs(stretch)
                stretch = []
                continue
            stretch.append(position[id(nd)])
        self.add_runs(stretch)

    def add_runs(self, stretch: Sequence[int]) -> None:
        """The runs of a stretch: its sliced head (``sliced_head``) at one slice of the batch,
        the rest at the whole batch."""
        head, slices = self.sliced_head(stretch)
        for run in self.split(head, L2_BUDGET_SLICED, slices):
            if len(run) > 1:
                self.runs.append(run)
                self.slices[run[0]] = slices
        self.runs += [r for r in self.split(stretch[len(head):], L2_BUDGET) if len(r) > 1]

    def batch_of(self, k: int) -> int:
        """The batch B > 1 that is the first dimension of every activation step ``k`` reads and
        writes, each of the rank of its output, when the step computes each image apart (an
        op of batch_rows' PER_IMAGE, or ELEMENTWISE with its constants broadcast along the
        batch); else 1."""
        nd, _, _, in_params = self.steps[k]
        if nd.op not in PER_IMAGE and nd.op not in ELEMENTWISE:
            return 1
        rank = max((len(self.info[str(v.name)][0]) for v in nd.outs), default=0)
        if rank == 0:
            return 1
        batches = set()
        for v in list(nd.ins[:in_params]) + list(nd.outs):
            if v is None:
                continue
            if getattr(v, "data", None) is not None:
                if nd.op in ELEMENTWISE and len(v.numpy().shape) >= rank and v.numpy().shape[0] != 1:
                    return 1  # (a constant with rows of its own per image)
                continue
            # (a slice is a run of the bytes when the batch is the outermost dimension; an
            # activation of a lower rank broadcasts along the batch, its first dimension
            # another's)
            shape = self.info[str(v.name)][0]
            if len(shape) != rank:
                return 1
            batches.add(int(shape[0]))
        return batches.pop() if len(batches) == 1 and min(batches) > 1 else 1

    def sliced_head(self, stretch: Sequence[int]) -> tuple[list[int], int]:
        """The steps at the start of ``stretch`` to run in slices of the batch, and how many
        slices. Of the steps from its start that each compute each image apart
        (``batch_of``), the head and the slice count whose steps the cost model finds fastest
        (``step_cycles``, step by step): the head's run once per slice, their tensors where
        the runs of the head at that slice place them (``split``), the steps after it once,
        at the whole batch, their tensors where the runs of the rest of the stretch place
        them; against every step run at the whole batch. ([], 1) when no head of two steps
        or more is faster."""
        if self.step_cycles is None:
            return [], 1
        cand, batch = [], 1
        for k in stretch:
            b = self.batch_of(k)
            if b == 1 or batch not in (1, b):
                break
            cand.append(k)
            batch = b
        if len(cand) < 2:
            return [], 1

        def cycles(steps, runs, slices):  # the steps' cycles, their tensors where the runs place them
            total = 0
            for run in runs:
                inside = set(self.intermediates(run))
                for k in run:
                    if k not in steps:
                        continue
                    nd, _, _, in_params = self.steps[k]
                    where = tuple(p for p, v in enumerate(list(nd.ins[:in_params]) + list(nd.outs))
                                  if v is not None and self.root(str(v.name)) in inside)
                    c = self.step_cycles(k, where, slices)
                    if c is None:
                        return None
                    total += slices * c
            return total

        best, best_cycles = ([], 1), cycles(set(cand), self.split(stretch, L2_BUDGET), 1)
        if best_cycles is None:
            return [], 1
        for slices in (s for s in range(batch, 1, -1) if batch % s == 0):
            for end in range(2, len(cand) + 1):
                head = cand[:end]
                inside = cycles(set(head), self.split(head, L2_BUDGET_SLICED, slices), slices)
                if inside is None:
                    break  # (a step with no plan for the slice ends every longer head)
                rest = cycles(set(cand[end:]), self.split(stretch[end:], L2_BUDGET), 1)
                if rest is not None and inside + rest < best_cycles:
                    best, best_cycles = (head, slices), inside + rest
        return best

    def split(self, idx: Sequence[int], budget: int, slices: int = 1) -> list[list[int]]:
        """The steps ``idx`` (one after another) as runs, in order: a run grows while the
        intermediates live at any one member fit ``budget`` (with ``slices``, one slice of
        them: the intermediates are activations, a slice's rows each) and while its kernel
        would take at most ``max_params()`` parameters (split in halves afterwards, it would
        end where its length says)."""
        budget *= slices
        runs, run = [], []
        peak = _RunPeak(self)  # peak_l2_bytes of the run, kept as it grows
        params, limit = _RunParams(self), max_params()  # its parameters, kept as it grows
        for k in idx:
            step = self.steps[k]
            if run and (peak.add(step) > budget or params.add(step) > limit):
                runs.append(run)
                run = []
                peak.reset()
                params.reset()
            if not run:
                peak.add(step)
                params.add(step)
            run.append(k)
        return runs + ([run] if run else [])

    def root(self, name: str) -> str:
        """The value whose bytes ``name`` is (itself unless a free view made it)."""
        return self.alias.get(name, name)

    def intermediates(self, idx: Sequence[int]) -> list[str]:
        """The values the steps ``idx`` write that only they read (and no graph output)."""
        members = [self.steps[k][0] for k in idx]
        inside = {id(m) for m in members}
        names = []
        for m in members:
            for v in m.outs:
                n = str(v.name)
                if (n and n not in self.graph_outputs and self.readers.get(n)
                        and all(id(r) in inside for r in self.readers[n])):
                    names.append(n)
        return names

    def l2_bytes(self, names: Sequence[str]) -> int:
        return sum(_bytes(self.info, n, self.itemsize) for n in names)

    def peak_l2_bytes(self, idx: Sequence[int]) -> int:
        """The most L2 the intermediates of the steps ``idx`` take at one member: each is
        live from the first member that writes or reads it to the last (as GroupKernels
        places them; its packing may add a little)."""
        span = {}  # name -> (first, last) position in idx
        for pos, k in enumerate(idx):
            nd, _, _, in_params = self.steps[k]
            for v in list(nd.ins[:in_params]) + list(nd.outs):
                if v is not None:
                    n = self.root(str(v.name))
                    first, _ = span.get(n, (pos, pos))
                    span[n] = (first, pos)
        names = self.intermediates(idx)
        live = [0] * len(idx)
        for n in names:
            first, last = span[n]
            for pos in range(first, last + 1):
                live[pos] += _bytes(self.info, n, self.itemsize)
        return max(live, default=0)

    def apply(self, funcs: Sequence[Any], build_group: Callable[..., tuple]) -> tuple[list[tuple], list[Any],
                                                                                       list[GroupNode]]:
        """The steps with each group's members replaced by one step. ``funcs[i]`` gives the
        strategy PrimFunc of step i when called (None for a host step); ``build_group(indices,
        funcs, args, inputs, outputs, slices, sliced)`` (``sliced``: the ids of the inputs and
        outputs a group run in ``slices`` slices reads and writes a slice of each time)
        returns (module, function, PrimFunc) or raises: a group that does not build (L2
        overflows once its members' own buffers are placed) is grouped again at
        ``L2_BUDGET_SAFE``, then split in halves, down to single steps. Returns the new
        steps, their PrimFuncs, and the groups made."""
        steps = self.steps
        out, out_funcs, made = [], [], []
        self.splits = []  # each group split in halves, its nodes and why its kernel did not build
        # each run grouped again at L2_BUDGET_SAFE (its nodes, why its kernel did not build):
        # the budget's second try, as a plan that does not fit L1 is not a fallback
        self.regrouped = []

        def emit(idx, safe=False, slices=1):
            if len(idx) == 1:
                out.append(steps[idx[0]])
                out_funcs.append(funcs[idx[0]])
                return
            internal = self.intermediates(idx)
            members = [steps[k][0] for k in idx]
            ids, args, values = {}, [], {}  # an omitted input (None) is the driver's placeholder
            for k in idx:
                nd, _, _, in_params = steps[k]
                row = []
                for v in list(nd.ins[:in_params]) + list(nd.outs):
                    n = OMITTED if v is None else self.root(str(v.name))
                    values.setdefault(n, v)
                    row.append(ids.setdefault(n, len(ids)))
                args.append(row)
            internal_set = set(internal)
            written = {str(v.name) for m in members for v in m.outs}
            ins = [n for n in values if n not in written and n not in internal_set]
            outs = [n for n in values if n in written and n not in internal_set]
            # (a sliced group's activations in the DDR: each run reads and writes its rows)
            sliced = [ids[n] for n in ins + outs if values[n] is not None and getattr(values[n], "data", None) is None
                      ] if slices > 1 else []
            try:
                mod, fn, f = build_group(idx, [funcs[k] for k in idx], args, [ids[n] for n in ins],
                                         [ids[n] for n in outs], slices, sliced)
            except Exception as e:  # noqa: BLE001 (smaller groups, or the members' own steps, are correct programs)
                raise_if_defect(e)
                entry = {"nodes": [steps[k][0].name or steps[k][0].step_name for k in idx],
                         "reason": (str(e).splitlines() or [type(e).__name__])[0]}
                parts = self.split(idx, L2_BUDGET_SAFE, slices) if not safe else [idx]
                if len(parts) > 1:
                    self.regrouped.append(entry)
                else:  # (it fits the safe budget too)
                    self.splits.append(entry)
                    half = len(idx) // 2
                    parts = [idx[:half], idx[half:]]
                for part in parts:
                    emit(part, safe=True, slices=slices)
                return
            node = GroupNode(members, [values[n] for n in ins], [values[n] for n in outs], internal,
                             self.peak_l2_bytes(idx) // slices)
            node.slices = slices
            name_of = {i: n for n, i in ids.items()}
            fetched = [[int(x) for x in r] for r in (f.attrs["prefetch"] if "prefetch" in f.attrs else [])]
            for t, m, begin, end in fetched:
                last = max(mm for tt, mm, _, _ in fetched if tt == t)  # the reader: the first after it
                row = node.prefetch.setdefault(name_of[t], {"reader": next(
                    members[k].step_name for k, a in enumerate(args) if t in a and k > last),
                    "bytes": 0, "during": [], "bytes_during": {}})
                row["bytes"] += end - begin
                row["during"].append(members[m].step_name)
                donor = row["bytes_during"]
                donor[members[m].step_name] = donor.get(members[m].step_name, 0) + end - begin
            node.member_inputs = [["" if v is None else str(v.name) for v in steps[k][0].ins[:steps[k][3]]]
                                  for k in idx]
            # (the arena is the group kernel's outermost L2 allocation: it starts at L2 byte 0)
            for row in (f.attrs["l2_places"] if "l2_places" in f.attrs else []):
                t, offset, dtype, shape = row
                node.l2_places[name_of[int(t)]] = (int(offset), str(dtype), [int(d) for d in shape])
            node.in_place = [int(k) for k in (f.attrs["in_place_concats"] if "in_place_concats" in f.attrs else [])]
            made.append(node)
            out.append((node, mod, fn, len(ins)))
            out_funcs.append(f)

        by_first = {r[0]: r for r in self.runs}
        i = 0
        while i < len(steps):
            run = by_first.get(i)
            if run is None:
                emit([i])
                i += 1
            else:
                emit(run, slices=self.slices.get(i, 1))
                i = run[-1] + 1
        return out, out_funcs, made
