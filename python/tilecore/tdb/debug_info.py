"""The debug entries of a ``.tcx`` executable's steps (docs/executable.md, "What the compiler
driver supplies"), read and checked in one place for every tool that shows them: tdb and
``tilecore check`` (model.py), ``disasm``, ``viz`` and ``profile``.

A step may carry ``inputs`` and ``outputs`` (the ONNX values it reads and writes, one per
argument, comma-separated), ``views`` (JSON: the free views before it), ``fused`` (JSON: the
nodes computed in its epilogue), ``group`` (JSON: a layer group's members, the cost
model's estimate of each and, as ``pc``, the instructions that compute each on every core)
and ``quantised`` (JSON: the scale and zero point of each value it stores in int8 that the
model has in floating point).
The compiler writes them, but they are free text to the loader,
so an edited file may hold anything: each entry is checked against the step it describes
(types, one name per argument, a view's element count against its source value's, no
output renaming a model input or a constant, members' pc ranges inside the program of the
core that runs them and disjoint, a member's output in the DDR in a buffer the step writes),
and a violation is a :class:`TargetError`
naming the step and the entry, never a wrong display or an IndexError later.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping, Sequence

import numpy as np

from .target import TargetError


class View:
    """A free view before a step: ``output`` names the bytes of ``source`` with ``shape``."""

    def __init__(self, name: str, op: str, source: str, output: str, shape: Sequence[int]) -> None:
        self.name, self.op, self.source, self.output, self.shape = name, op, source, output, tuple(shape)


class StepDebug:
    """A step's checked debug entries.

    ``inputs`` is None when the step does not record them (executables older than the
    entry); ``outputs`` is [] without debug info (the written buffers are then unknown);
    ``quantised`` maps each value the step writes in int8 that the model has in floating
    point to its (scale, zero point): the stored q stands for ``(q - zero_point) * scale``;
    ``members`` is a layer group's per-member estimates (node, op, est_cycles, macs,
    bound_by, ``plan``: the plan its strategy chose, ``pc``: {core: [(begin, end), ...]},
    ``in`` and ``out``: the values the member reads and where each value it writes lives,
    and ``fused``: (name, op type) of the nodes fused into its epilogue; a key is absent when
    the file does not record it), [] without them; ``plan`` is the plan a step outside a
    layer group was lowered with, "" when its strategy names none."""

    def __init__(self) -> None:
        self.inputs: list[str] | None = None
        self.outputs: list[str] = []
        self.views: list[View] = []
        self.fused: list[tuple[str, str]] = []
        self.group_nodes: list[str] = []
        self.members: list[dict[str, Any]] = []
        self.quantised: dict[str, tuple[float, int]] = {}
        self.plan = ""

    def group_members(self) -> list[tuple[str, str]]:
        """(name, op type) of each member of a layer group ("" as the op without estimates)."""
        if self.members:
            return [(m["node"], m["op"]) for m in self.members]
        return [(n, "") for n in self.group_nodes]


def _json(dbg: Mapping[str, str], key: str, step: str) -> Any:
    try:
        return json.loads(dbg[key])
    except ValueError as e:
        raise TargetError(f"step `{step}`: its debug entry `{key}` is not JSON ({e})") from None


def _names(v: Any, n: int | None = None) -> bool:
    return isinstance(v, list) and (n is None or len(v) == n) and all(isinstance(x, str) for x in v)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _views(dbg, step) -> list[View]:
    value = _json(dbg, "views", step)
    if not isinstance(value, list):
        raise TargetError(f"step `{step}`: its debug entry `views` is not a list of [name, op, source, output, shape]")
    out = []
    for i, e in enumerate(value):
        if not (isinstance(e, list) and len(e) == 5 and _names(e[:4]) and isinstance(e[4], list)
                and all(_count(d) for d in e[4])):
            raise TargetError(f"step `{step}`: its debug entry `views` is not a list of [name, op, source, output, "
                              f"shape] with sizes >= 0 (entry {i} is {json.dumps(e)[:80]})")
        out.append(View(*e))
    return out


def _fused(dbg, step) -> list[tuple[str, str]]:
    value = _json(dbg, "fused", step)
    if not (isinstance(value, list) and all(_names(p, 2) for p in value)):
        raise TargetError(f"step `{step}`: its debug entry `fused` is not a list of [node, op type] pairs")
    return [(p[0], p[1]) for p in value]


def _quantised(dbg, step) -> dict[str, tuple[float, int]]:
    value = _json(dbg, "quantised", step)
    if not isinstance(value, dict):
        raise TargetError(f"step `{step}`: its debug entry `quantised` is not an object {{value: [scale, zero point]}}")
    out = {}
    for name, code in value.items():
        if not (isinstance(code, list) and len(code) == 2 and isinstance(code[0], (int, float))
                and not isinstance(code[0], bool) and math.isfinite(code[0]) and code[0] > 0
                and isinstance(code[1], int) and not isinstance(code[1], bool) and -128 <= code[1] <= 127):
            raise TargetError(f"step `{step}`: its debug entry `quantised` gives `{name}` {json.dumps(code)[:80]}, "
                              "not [scale (a finite number > 0), zero point (an integer in [-128, 127])]")
        out[name] = (float(code[0]), int(code[1]))
    return out


_MEMBER_FIELDS = {"node": str, "op": str, "est_cycles": int, "macs": int, "bound_by": str}


def _group(dbg, step, sd: StepDebug, args: Sequence[int], program_words: Mapping[int, int] | None = None) -> None:
    value = _json(dbg, "group", step)
    if not (isinstance(value, dict) and _names(value.get("nodes", []))):
        raise TargetError(f"step `{step}`: its debug entry `group` is not an object whose `nodes` is a list of "
                          "node names")
    sd.group_nodes = list(value.get("nodes", []))
    members = value.get("members") or []
    if not isinstance(members, list):
        raise TargetError(f"step `{step}`: its debug entry `group` has `members` that is not a list")
    for i, m in enumerate(members):
        wrong = [k for k, t in _MEMBER_FIELDS.items() if not isinstance(m, dict) or not (
            _count(m.get(k)) if t is int else isinstance(m.get(k), t))]
        if wrong:
            raise TargetError(f"step `{step}`: its debug entry `group` has member {i} with "
                              + ", ".join(f"`{k}` {'missing' if not isinstance(m, dict) or k not in m else repr(m[k])}"
                                          for k in wrong)
                              + " (node, op and bound_by are strings; est_cycles and macs integers >= 0)")
    if members and len(members) != len(sd.group_nodes):
        raise TargetError(f"step `{step}`: its debug entry `group` lists {len(sd.group_nodes)} nodes but "
                          f"{len(members)} members")
    sd.members = [{k: m[k] for k in _MEMBER_FIELDS} for m in members]
    for i, m in enumerate(members):  # a Concat whose inputs' producers wrote its bytes
        if "in_place" in m:
            if m["in_place"] is not True or m["op"] != "Concat":
                raise TargetError(f"step `{step}`: its debug entry `group` has member {i} with `in_place` "
                                  f"{json.dumps(m['in_place'])[:40]} (only a Concat member has it, true)")
            sd.members[i]["in_place"] = True
    for i, m in enumerate(members):  # the plan its strategy chose (docs/compiler.md, "Plans")
        if "plan" in m:
            if not isinstance(m["plan"], str):
                raise TargetError(f"step `{step}`: its debug entry `group` has member {i} with `plan` "
                                  f"{json.dumps(m['plan'])[:40]} (a string)")
            sd.members[i]["plan"] = m["plan"]
    with_pc = [i for i, m in enumerate(members) if "pc" in m]
    if with_pc and len(with_pc) != len(members):
        missing = next(i for i in range(len(members)) if i not in with_pc)
        raise TargetError(f"step `{step}`: its debug entry `group` has member {missing} without `pc` (member "
                          f"{with_pc[0]} has one: every member or none)")
    taken: dict[int, list[tuple[int, int, int]]] = {}  # core -> (begin, end, member)
    for i, m in enumerate(members if with_pc else []):
        sd.members[i]["pc"] = _member_pc(m["pc"], i, step, program_words, taken)
    with_out = [i for i, m in enumerate(members) if "out" in m or "in" in m]
    if with_out and len(with_out) != len(members):
        missing = next(i for i in range(len(members)) if i not in with_out)
        raise TargetError(f"step `{step}`: its debug entry `group` has member {missing} without `in` and `out` "
                          f"(member {with_out[0]} has them: every member or none)")
    for i, m in enumerate(members if with_out else []):
        if not _names(m.get("in")):
            raise TargetError(f"step `{step}`: its debug entry `group` has member {i} whose `in` is not a list of "
                              "value names")
        sd.members[i]["in"] = list(m["in"])
        sd.members[i]["out"] = _member_out(m.get("out"), i, step, sd, args)
    fused_ops = dict(sd.fused)
    for i, m in enumerate(members):
        if "fused" not in m:
            continue
        if not (_names(m["fused"]) and all(n in fused_ops for n in m["fused"])):
            raise TargetError(f"step `{step}`: its debug entry `group` has member {i} whose `fused` is not a list "
                              "of the names the step's entry `fused` lists")
        sd.members[i]["fused"] = [(n, fused_ops[n]) for n in m["fused"]]


def _member_out(value: Any, i: int, step: str, sd: StepDebug, args: Sequence[int]) -> list[dict[str, Any]]:
    """Member ``i``'s ``out`` (where each value it writes lives) checked: a list of
    {value, space: "ddr", buffer} (one of the step's output arguments, a value the step
    writes) or {value, space: "l2", offset, dtype, shape} (bytes >= 0, sizes >= 0)."""
    what = f"step `{step}`: its debug entry `group` has member {i} with `out`"
    if not isinstance(value, list):
        raise TargetError(f"{what} that is not a list of places ({{value, space, ...}})")
    written = args[len(args) - len(sd.outputs):] if sd.outputs else args
    out = []
    for k, place in enumerate(value):
        if not (isinstance(place, dict) and isinstance(place.get("value"), str) and place.get("space") in ("ddr", "l2")):
            raise TargetError(f"{what} whose place {k} is not an object with a `value` name and `space` ddr or l2")
        if place["space"] == "ddr":
            if not (_count(place.get("buffer")) and place["buffer"] in written):
                raise TargetError(f"{what} whose place {k} (`{place['value']}` in the DDR) has `buffer` "
                                  f"{place.get('buffer')!r}, not one of the buffers the step writes "
                                  f"({', '.join(map(str, written))})")
            if sd.outputs and place["value"] not in sd.outputs:
                raise TargetError(f"{what} whose place {k} puts `{place['value']}` in the DDR, but the step's "
                                  f"`outputs` ({', '.join(sd.outputs)}) do not name it")
            out.append({"value": place["value"], "space": "ddr", "buffer": place["buffer"]})
            continue
        shape = place.get("shape")
        if not (_count(place.get("offset")) and isinstance(place.get("dtype"), str) and isinstance(shape, list)
                and all(_count(d) for d in shape)):
            raise TargetError(f"{what} whose place {k} (`{place['value']}` in L2) needs `offset` (bytes >= 0), "
                              "`dtype` (a name) and `shape` (sizes >= 0)")
        try:
            np.dtype("uint16" if place["dtype"] == "bfloat16" else place["dtype"])
        except TypeError:
            raise TargetError(f"{what} whose place {k} (`{place['value']}` in L2) has the dtype "
                              f"{place['dtype']!r}, which is no dtype") from None
        out.append({"value": place["value"], "space": "l2", "offset": place["offset"], "dtype": place["dtype"],
                    "shape": list(shape)})
    return out


def _member_pc(value: Any, i: int, step: str, program_words: Mapping[int, int] | None,
               taken: dict[int, list[tuple[int, int, int]]]) -> dict[int, list[tuple[int, int]]]:
    """Member ``i``'s ``pc`` ({core: [[begin, end], ...]}) checked: types, each range inside
    the words of the program that core runs (``program_words``, when known), and no range
    shared with another member on one core (recorded in ``taken``)."""
    what = f"step `{step}`: its debug entry `group` has member {i} with `pc`"
    if not isinstance(value, dict):
        raise TargetError(f"{what} that is not an object {{core: [[begin, end], ...]}}")
    out = {}
    for key, ranges in value.items():
        if not (key.isdigit() and key.isascii()):
            raise TargetError(f"{what} for core {key!r} (cores are decimal numbers)")
        core = int(key)
        if program_words is not None and core not in program_words:
            raise TargetError(f"{what} for core {core}, which does not run the step's kernel (cores "
                              f"{', '.join(map(str, sorted(program_words)))} do)")
        if not (isinstance(ranges, list) and all(isinstance(r, list) and len(r) == 2 and _count(r[0])
                                                 and _count(r[1]) for r in ranges)):
            raise TargetError(f"{what} on core {core} that is not a list of [begin, end] pairs of integers >= 0")
        for begin, end in ranges:
            words = program_words[core] if program_words is not None else None
            if begin >= end or (words is not None and end > words):
                raise TargetError(f"{what} [{begin}, {end}) on core {core}, not a range inside its program"
                                  + (f" of {words} instructions" if words is not None else ""))
            other = next((o for o in taken.get(core, []) if begin < o[1] and o[0] < end), None)
            if other is not None:
                raise TargetError(f"{what} [{begin}, {end}) on core {core}, which overlaps member {other[2]}'s "
                                  f"[{other[0]}, {other[1]})")
            taken.setdefault(core, []).append((begin, end, i))
        out[core] = [(begin, end) for begin, end in ranges]
    return out


def program_words(modules: Sequence[Any], desc: Mapping[str, Any]) -> list[dict[int, int] | None]:
    """Per step of ``desc`` (``Executable.describe()``), the instructions of the program each
    core runs for it ({core: words}), None for a host step; ``modules`` is
    ``Executable.modules``."""
    info: dict[int, dict[str, dict[int, int]]] = {}
    out: list[dict[int, int] | None] = []
    for step in desc["steps"]:
        index = int(step["module"])
        if step["kind"] != "npu" or modules[index].kind != "npu":
            out.append(None)
            continue
        if index not in info:
            info[index] = {}
            for f in modules[index].info["functions"]:
                sections = f["program"].sections
                info[index][str(f["name"])] = {c: int(s["words"]) for s in reversed(sections) for c in s["cores"]
                                               if c < int(f["cores"])}
        out.append(info[index].get(str(step["function"])))
    return out


def read_debug_info(desc: Mapping[str, Any], modules: Sequence[Any] | None = None) -> list[StepDebug]:
    """The checked debug entries of every step of an executable (``Executable.describe()``),
    in step order; TargetError naming the step and the entry at the first violation. With
    ``modules`` (``Executable.modules``), a layer group member's ``pc`` ranges are checked
    against the programs of its step too."""
    words = program_words(modules, desc) if modules is not None else [None] * len(desc["steps"])
    buffers = desc["buffers"]

    def elements(b: int) -> int:
        return math.prod(int(d) for d in buffers[b]["shape"])

    fixed = {io["name"]: "a model input" for io in desc["inputs"]}
    fixed.update({buffers[c["buffer"]]["name"]: "a constant" for c in desc["constants"]})
    size = {io["name"]: elements(io["buffer"]) for io in desc["inputs"]}
    size.update({buffers[c["buffer"]]["name"]: elements(c["buffer"]) for c in desc["constants"]})
    out = []
    for step, step_words in zip(desc["steps"], words):
        name, dbg, args = step["node"], step.get("debug", {}), step["args"]
        sd = StepDebug()
        if dbg.get("views"):
            sd.views = _views(dbg, name)
        for v in sd.views:
            if v.output in fixed:
                raise TargetError(f"step `{name}`: its debug entry `views` names {fixed[v.output]}, `{v.output}`, "
                                  f"as the output of view `{v.name}`")
            if v.source in size:
                if math.prod(v.shape) != size[v.source]:
                    raise TargetError(f"step `{name}`: its debug entry `views` gives view `{v.name}` the shape "
                                      f"{list(v.shape)} ({math.prod(v.shape)} elements), but its source "
                                      f"`{v.source}` has {size[v.source]} elements")
                size[v.output] = size[v.source]
        if dbg.get("outputs"):
            sd.outputs = [o for o in dbg["outputs"].split(",") if o]
        if len(sd.outputs) > len(args):
            raise TargetError(f"step `{name}`: its debug entry `outputs` names {len(sd.outputs)} values but the step "
                              f"has {len(args)} arguments")
        for o in sd.outputs:
            if o in fixed:
                raise TargetError(f"step `{name}`: its debug entry `outputs` names {fixed[o]}, `{o}`, as a value "
                                  "the step writes")
        if "inputs" in dbg:
            sd.inputs = dbg["inputs"].split(",") if dbg["inputs"] else []
            if sd.outputs and len(sd.inputs) + len(sd.outputs) != len(args):
                raise TargetError(f"step `{name}`: its debug entries `inputs` and `outputs` name "
                                  f"{len(sd.inputs)} + {len(sd.outputs)} values but the step has {len(args)} arguments")
        for o, b in zip(sd.outputs, args[len(args) - len(sd.outputs):]):
            size[o] = elements(b)
        if dbg.get("fused"):
            sd.fused = _fused(dbg, name)
        if dbg.get("quantised"):
            sd.quantised = _quantised(dbg, name)
        if dbg.get("plan"):  # (a string entry: any text is a plan's name and sizes)
            sd.plan = str(dbg["plan"])
        if dbg.get("group"):
            _group(dbg, name, sd, args, step_words)
        out.append(sd)
    return out
