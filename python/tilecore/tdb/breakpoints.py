"""The breakpoints plugin: b/break, tbreak, condition, ignore, enable, disable,
delete, watch/rwatch/awatch and info b. Each breakpoint is one or more stops of
the C++ engine (a source line has a pc per core); conditions and temporary
breakpoints are handled here, when a stop happens."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from .core import CommandError, _suggest, ffi, mnemonics, parse_int
from .plugins import SPACES, Plugin, complete_words, parse_location, split_core

if TYPE_CHECKING:
    from .core import Debugger
    from .model import Member, Node


def _where(m, name):
    """" (inside the layer group ...)" when node ``name`` runs inside a group's step."""
    return f" ({m.in_group(name)})" if m.in_group(name) else ""


class Breakpoint:
    def __init__(self, number: int, spec: str, kind: str, stops: Any, temporary: bool = False,
                 condition: str | None = None) -> None:
        self.number, self.spec, self.kind, self.stops = number, spec, kind, stops
        self.temporary, self.condition, self.enabled = temporary, condition, True
        self.rejected = 0  # hits whose condition was false


class GraphBreakpoint(Breakpoint):
    """A breakpoint on a model's graph, checked between nodes (in Python, once per node):
    ``location`` (an ONNX node name) and ``op`` (an op type) stop before the node starts,
    ``value`` after the node producing the value has run, and ``value-watch`` after a node
    produces a value (one, or any with ``*``) that has NaN, Inf or elements outside [lo, hi]."""

    def __init__(self, number: int, spec: str, gkind: str, target: str, label: str, temporary: bool = False,
                 condition: str | None = None, test: tuple = None) -> None:
        super().__init__(number, spec, label, [], temporary, condition)
        self.gkind, self.target, self.test = gkind, target, test
        self.kind_args = []
        self.count = 0   # hits, ignored ones included (like the engine's count)
        self.ignore = 0


VALUE_TESTS = ("nan", "inf", "outside")


def value_problem(arr: np.ndarray, test: tuple) -> str | None:
    """A description of what ``test`` (("nan",), ("inf",), ("outside", lo, hi)) finds in arr, or None."""
    flat = np.asarray(arr).reshape(-1)
    if test[0] == "nan":
        bad = np.isnan(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, bool)
        what = "NaN"
    elif test[0] == "inf":
        bad = np.isinf(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, bool)
        what = "Inf"
    else:
        lo, hi = test[1], test[2]
        bad = ~((flat >= lo) & (flat <= hi))  # NaN is outside any range
        what = f"element(s) outside [{lo:g}, {hi:g}]"
    n = int(bad.sum())
    if not n:
        return None
    first = int(np.argmax(bad))
    index = [int(i) for i in np.unravel_index(first, np.shape(arr))]
    return f"{n} {what}, the first at {index} = {flat[first].item()!r}"


class BreakpointPlugin(Plugin):
    """b/break, tbreak, condition, ignore, enable, disable, delete, watch/rwatch/awatch, info b."""

    name = "breakpoints"

    def __init__(self, tdb: Debugger) -> None:
        super().__init__(tdb)
        self.bps = {}
        self.by_stop = {}
        self.next_number = 1
        self.pending = []  # specs given before start: set when the engine exists

    def on_load(self) -> None:
        self.tdb.info_handlers["breakpoints"] = (self.info_breakpoints, None)
        self.tdb.info_handlers["b"] = (self.info_breakpoints, None)
        self.tdb.info_handlers["break"] = (self.info_breakpoints, None)
        self.tdb.info_handlers["watchpoints"] = (self.info_breakpoints, None)

    def on_start(self) -> None:
        # A new engine (first start) has no stops: recreate them. Same engine: keep.
        for bp in self.bps.values():
            if not bp.stops:
                bp.stops = self._create(bp.kind_args)
                for sid in bp.stops:
                    self.by_stop[sid] = bp
                if not bp.enabled:
                    for sid in bp.stops:
                        ffi.SetStop(self.tdb.engine, sid, 0, -1)

    # -- parsing a spec into engine stops
    def _kinds(self, spec, core):
        """A breakpoint spec -> (description, [(kind, args), ...])."""
        t = self.tdb
        words = spec.split()
        head = words[0]
        mn = mnemonics()
        if head.startswith("*"):
            pc = parse_int(head[1:], "pc")
            return f"pc {pc}", [("pc", dict(core=core, pc=pc))]
        m = re.fullmatch(r"(din|dout|mm|vec)#(\d+)", head)
        if m:
            return f"command {m.group(2)} of {m.group(1)}", [("command", dict(core=core, engine=m.group(1), command=int(m.group(2))))]
        if head in mn:
            return f"instruction {head}", [("mnemonic", dict(core=core, op=head))]
        if re.fullmatch(r"(ddr|l2|l1):.+", head):
            mode = {"r": "read", "w": "write", "rw": "access", "read": "read", "write": "write", "access": "access"}
            how = words[1] if len(words) > 1 else "rw"
            if how not in mode:
                raise CommandError(f"access kind must be r, w or rw, got '{how}'")
            space, addr, n, _, _ = parse_location(t, head)
            n = n or 1
            return (f"{space}:{addr:#x}+{n} {how}",
                    [("watch", dict(core=core, space=space, lo=addr, hi=addr + n, mode=mode[how]))])
        m = re.fullmatch(r"asm:(\d+)", head)
        if m:
            line = int(m.group(1))
            pcs = t.target.pcs_at_listing_line(line)
            if not pcs:
                raise CommandError(f"assembly line {line} has no instruction")
            return f"asm:{line}", [("pc", dict(core=c, pc=pc)) for c, lst in pcs.items() for pc in lst
                                    if core is None or c == core]
        m = re.fullmatch(r"(?:(.+):)?(\d+)", head)
        if m:
            file = m.group(1) or t.target.source_path
            line = int(m.group(2))
            if file is None:
                raise CommandError("the target has no source file for a bare line number")
            pcs = t.target.pcs_at_location(file, line)
            if not pcs:
                files = ", ".join(os.path.basename(f) for f in t.target.files()) or "none"
                raise CommandError(f"no instruction at {file}:{line} (source files: {files})")
            return f"{os.path.basename(file)}:{line}", [("pc", dict(core=c, pc=pc)) for c, lst in pcs.items()
                                                      for pc in lst if core is None or c == core]
        close = [x for x in mn if x.startswith(head.split(".")[0])][:6]
        raise CommandError(f"'{head}' is not an instruction mnemonic, *PC, ENGINE#N, SPACE:ADDR, FILE:LINE or asm:LINE"
                           + (f" (did you mean {', '.join(close)}?)" if close else ""))

    def _graph_spec(self, words):
        """A model breakpoint spec -> (kind, target, description), or None for a kernel spec.
        Explicit: loc:NODE, #loc("NODE"), op:TYPE, %VALUE, value:VALUE, graph:LINE or mlir:LINE (the
        node that line of the compiled graph's text defines); a bare word is a node
        name, else an op type, else a graph value, else (kernel kinds) a mnemonic and the rest."""
        m = self.tdb.model
        if len(words) != 1:
            return None
        w = words[0]
        line = re.fullmatch(r"(graph|mlir):(\d+)", w)
        if line:
            name = self._graph_line(int(line.group(2)))
            return "location", name, f"{line.group(1)}:{line.group(2)}, node `{name}`" + _where(m, name)
        explicit = re.fullmatch(r'(?:loc:(.+)|#loc\("?(.+?)"?\)|op:(.+)|%(.+)|value:(.+))', w)
        if explicit:
            loc = explicit.group(1) or explicit.group(2)
            if loc is not None:
                if not m.find_nodes(loc):
                    raise CommandError(f"no node named `{loc}`" + _suggest(loc, m.node_names()))
                return "location", loc, f"node `{loc}`" + _where(m, loc)
            if explicit.group(3) is not None:
                op = explicit.group(3)
                if op not in m.op_types():
                    raise CommandError(f"no node of op type {op} (the model has {', '.join(m.op_types())})")
                return "op", op, f"op type {op}"
            val = explicit.group(4) or explicit.group(5)
            if val not in m.values:
                raise CommandError(f"no graph value `{val}`" + _suggest(val, list(m.values)))
            return "value", val, f"value `{val}` produced"
        if m.find_nodes(w):
            return "location", w, f"node `{w}`" + _where(m, w)
        if w in m.op_types():
            return "op", w, f"op type {w}"
        if w in m.values and w not in mnemonics():
            return "value", w, f"value `{w}` produced"
        return None

    def _graph_line(self, line):
        """The node that line ``line`` of the compiled graph's text defines (TPU-MLIR's b mlir:LINE)."""
        from .graphtext import GraphText

        t, m = self.tdb, self.tdb.model
        if t.graph_text is None:
            where = f" ({os.path.splitext(m.path)[0]}.graph)" if m.path else ""
            raise CommandError("no graph text for this executable: compile with --dump-graph, which writes it beside "
                               f"the .tcx{where}, or give tdb --graph FILE")
        cache = getattr(self, "_texts", {})
        self._texts = cache
        if t.graph_text not in cache:
            cache[t.graph_text] = GraphText(t.graph_text)
        text = cache[t.graph_text]
        name = text.node_at(line)
        if not m.find_nodes(name):
            raise CommandError(f"line {line} of {text.path} defines node `{name}`, which this executable does not run "
                               "(the compiler folded it away, or the graph text is another executable's)")
        return name

    def _graph_hit(self, bp, what):
        """Counts a hit of a graph breakpoint; the message if it stops (ignore count, condition)."""
        if not bp.enabled:
            return None
        bp.count += 1
        if bp.ignore:
            bp.ignore -= 1
            return None
        if bp.condition:
            try:
                ok = bool(self.tdb.evaluate(bp.condition))
            except CommandError as e:
                self.tdb.error(f"condition of breakpoint {bp.number} ({bp.condition}): {e}")
                ok = True
            if not ok:
                bp.rejected += 1
                return None
        label = "Watchpoint" if bp.kind == "watchpoint" else "Breakpoint"
        text = f"{'Temporary ' + label.lower() if bp.temporary else label} {bp.number}, {what}"
        if bp.temporary:
            self.bps.pop(bp.number, None)
        return text

    def _graph_bps(self, *kinds):
        return [bp for bp in list(self.bps.values()) if isinstance(bp, GraphBreakpoint) and bp.gkind in kinds]

    def before_node(self, node: Node) -> list[str] | None:
        out = []
        for bp in self._graph_bps("location", "op"):
            if self._on_member(bp, node):
                continue  # it stops where the member starts (before_member)
            # a node fused into this one's epilogue is computed by it: stop before it
            if (bp.gkind == "location" and node.computes(bp.target)) or \
                    (bp.gkind == "op" and node.computes_op(bp.target)):
                text = self._graph_hit(bp, f"node {node.describe()} is next")
                if text:
                    out.append(text)
        return out

    @staticmethod
    def _on_member(bp, node):
        """Whether a node or op breakpoint names members of ``node``'s layer group (whose code
        the file records) rather than the group's step itself."""
        if not node.group:
            return False
        if bp.gkind == "op":
            return bp.target != node.op_type and any(g.op == bp.target for g in node.group)
        return bp.target != node.name and node.member(bp.target) is not None

    def _member_bps(self, node, member):
        return [bp for bp in self._graph_bps("location", "op") if bp.enabled and self._on_member(bp, node)
                and bp.target == (member.name if bp.gkind == "location" else member.op)]

    def member_events(self, node: Node) -> set[tuple[str, int]]:
        return {("start", g.index) for g in node.group if self._member_bps(node, g)}

    def before_member(self, node: Node, member: Member) -> list[str] | None:
        out = []
        for bp in self._member_bps(node, member):
            text = self._graph_hit(bp, f"member {member.index + 1} of {len(node.group)} {member.describe()} of layer "
                                       f"group `{node.name}` (node {node.index + 1}) starts")
            if text:
                out.append(text)
        return out

    def _host_accesses(self, node):
        """Memory watchpoints on DDR that a host node's call touched (the simulator does not
        see host calls): [(bp, "wrote"|"read", value name, lo, hi)]."""
        m = self.tdb.model
        found = []
        for bp in list(self.bps.values()):
            if isinstance(bp, GraphBreakpoint) or not bp.enabled:
                continue
            for kind, a in getattr(bp, "kind_args", []):
                if kind != "watch" or a["space"] != "ddr":
                    continue
                for names, verb, bit in ((node.outputs, "wrote", "write"), (node.inputs, "read", "read")):
                    if a["mode"] not in (bit, "access"):
                        continue
                    for name in names:
                        v = m.values.get(name)
                        if v is None:
                            continue
                        lo = m.value_address(v)
                        if lo < a["hi"] and a["lo"] < lo + v.nbytes:
                            found.append((bp, verb, name, max(lo, a["lo"]), min(lo + v.nbytes, a["hi"])))
        return found

    def after_node(self, node: Node) -> list[str] | None:
        out = []
        m = self.tdb.model
        if node.where == "host":
            shown = set()
            for bp, verb, name, lo, hi in self._host_accesses(node):
                if bp.number in shown:
                    continue
                shown.add(bp.number)
                bp.host_hits = getattr(bp, "host_hits", 0) + 1
                out.append(f"Watchpoint {bp.number}: {bp.spec}: host node `{node.onnx_name}` ({node.op_type}) {verb} "
                           f"ddr[{lo:#x}, {hi:#x}) (value `{name}`)")
        for bp in self._graph_bps("value", "value-watch"):
            names = node.outputs if bp.target == "*" else [bp.target] if bp.target in node.outputs else []
            for name in names:
                if bp.gkind == "value":
                    text = self._graph_hit(bp, f"value `{name}` produced by node `{node.onnx_name}` ({node.op_type})")
                else:
                    v = m.values.get(name)
                    if v is None:
                        continue
                    problem = value_problem(m.read_value(self.tdb.sim, name), bp.test)
                    text = problem and self._graph_hit(
                        bp, f"value `{name}` produced by node `{node.onnx_name}` ({node.op_type}) has {problem}")
                if text:
                    out.append(text)
                    break
        return out

    def _create(self, kinds):
        ids = []
        for kind, a in kinds:
            ids.append(ffi.AddStop(self.tdb.engine, kind, -1 if a.get("core") is None else a["core"], a.get("op", ""),
                                   a.get("pc", 0), a.get("engine", ""), a.get("command", 0), a.get("space", ""),
                                   a.get("lo", 0), a.get("hi", 0), a.get("mode", "")))
        return ids

    def add(self, arg: str, temporary: bool = False, what: str = "break") -> Breakpoint | None:
        arg = arg.strip()
        if not arg:
            return self.info_breakpoints("")
        cond = None
        if " if " in f" {arg} ":
            arg, _, cond = f" {arg} ".partition(" if ")
            arg, cond = arg.strip(), cond.strip()
            if not cond:
                raise CommandError("empty condition after 'if'")
            try:
                compile(cond, "<condition>", "eval")
            except SyntaxError as e:
                raise CommandError(f"bad condition '{cond}': {e.msg}") from None
        words, core = split_core(arg.split())
        if not words:
            raise CommandError(f"usage: {what} SPEC [core N] [if CONDITION]")
        if core is not None and not 0 <= core < self.tdb.sim.cores:
            raise CommandError(f"core {core} does not exist (cores 0..{self.tdb.sim.cores - 1})")
        graph = self._graph_spec(words) if self.tdb.model is not None and core is None else None
        if graph is not None:
            gkind, target, desc = graph
            n = self.next_number
            self.next_number += 1
            bp = GraphBreakpoint(n, desc, gkind, target, "breakpoint", temporary, cond)
            self.bps[n] = bp
            self.tdb.message(f"{'Temporary breakpoint' if temporary else 'Breakpoint'} {n}: {desc}"
                             + (f" if {cond}" if cond else ""))
            return bp
        desc, kinds = self._kinds(" ".join(words), core)
        if not kinds:
            raise CommandError(f"{desc} has no instruction on core {core}")
        return self._register(desc, kinds, temporary, cond, "watchpoint" if kinds[0][0] == "watch" else "breakpoint")

    def _register(self, desc, kinds, temporary, cond, label):
        n = self.next_number
        self.next_number += 1
        bp = Breakpoint(n, desc, label, self._create(kinds), temporary, cond)
        bp.kind_args = kinds
        m = self.tdb.model
        if m is not None and any(k == "pc" for k, _ in kinds):
            # a pc means an instruction of one kernel: that of the current node
            node = m.node()
            if node is None or node.where != "npu":
                self._register_failed(bp)
                raise CommandError(f"{desc}: a pc, source or assembly line needs a current npu node")
            bp.kernel = (node.step["module"], node.step["function"])
            bp.spec += f" in kernel `{bp.kernel[1]}`"
        self.bps[n] = bp
        for sid in bp.stops:
            self.by_stop[sid] = bp
        self.tdb.message(f"{'Temporary ' if temporary else ''}{label.capitalize()} {n}: {desc}"
                         + (f" if {cond}" if cond else ""))
        return bp

    def do_break(self, arg: str) -> None:
        """b(reak) [SPEC [core N] [if CONDITION]]
        Set a breakpoint; without argument, list them. SPEC is an instruction mnemonic (dma.in, mm,
        tadd, ...), *PC (an instruction index), ENGINE#N (the N-th command, from 0, issued to din,
        dout, mm or vec), FILE:LINE or LINE (kernel source), asm:LINE (assembly listing), or
        SPACE:ADDR[+LEN] [r|w|rw] (stop when an instruction or command accesses the range).
        In a model also: NODE or loc:NODE (an ONNX node name: before it starts), op:TYPE or TYPE
        (before each node of that op type), %VALUE or value:VALUE (after the node producing it),
        graph:LINE or mlir:LINE (the node that line of the compiled graph's text defines)."""
        self.add(arg)

    do_b = do_break

    def do_tbreak(self, arg: str) -> None:
        """tbreak SPEC [core N] [if CONDITION]
        Set a temporary breakpoint, deleted when first hit."""
        self.add(arg, temporary=True, what="tbreak")

    def _watch(self, arg, mode, what):
        words, core = split_core(arg.split())
        m = self.tdb.model
        if m is not None and words and (words[0] in m.values or words[0] == "*") and \
                (len(words) > 1 or words[0] == "*"):
            if what != "watch" or core is not None:
                raise CommandError("a value condition is set with: watch VALUE|* nan|inf|outside LO HI")
            test = tuple(words[1:]) or ("nan",)
            if test[0] not in VALUE_TESTS or (test[0] == "outside") != (len(test) == 3) or \
                    (test[0] != "outside" and len(test) != 1):
                raise CommandError("usage: watch VALUE|* nan | inf | outside LO HI")
            if test[0] == "outside":
                try:
                    test = ("outside", float(test[1]), float(test[2]))
                except ValueError:
                    raise CommandError(f"range bounds must be numbers, got {test[1]} {test[2]}") from None
                if np.isnan(test[1]) or np.isnan(test[2]):
                    raise CommandError(f"outside {words[2]} {words[3]}: a bound is NaN")
                if test[1] > test[2]:
                    raise CommandError(f"outside {words[2]} {words[3]}: LO {test[1]:g} is above HI {test[2]:g} "
                                       "(give outside LO HI with LO <= HI)")
            n = self.next_number
            self.next_number += 1
            target = "any value" if words[0] == "*" else f"value `{words[0]}`"
            cond = "NaN" if test[0] == "nan" else "Inf" if test[0] == "inf" else f"outside [{test[1]:g}, {test[2]:g}]"
            bp = GraphBreakpoint(n, f"{target} has {cond}", "value-watch", words[0], "watchpoint", test=test)
            self.bps[n] = bp
            self.tdb.message(f"Watchpoint {n}: {bp.spec}")
            return bp
        if len(words) != 1:
            raise CommandError(f"usage: {what} LOCATION [core N] (SPACE:ADDR[+LEN], BUFFER or BUFFER[I])")
        space, addr, n, _, sym_core = parse_location(self.tdb, words[0])
        if core is None and space == "l1":
            core = sym_core
        n = n or 4
        desc = f"{words[0]} ({space}:{addr:#x}+{n}) {mode}"
        return self._register(desc, [("watch", dict(core=core, space=space, lo=addr, hi=addr + n, mode=mode))], False,
                              None, "watchpoint")

    def do_watch(self, arg: str) -> None:
        """watch LOCATION [core N] | watch VALUE|* nan|inf|outside LO HI
        Stop after an instruction or command writes the location (SPACE:ADDR[+LEN], BUFFER, BUFFER[I]).
        In a model, with a condition: stop after the node producing VALUE (any value with *) when the
        value has a NaN, an Inf, or an element outside [LO, HI]."""
        self._watch(arg, "write", "watch")

    def do_rwatch(self, arg: str) -> None:
        """rwatch LOCATION [core N]
        Stop after an instruction or command reads the location."""
        self._watch(arg, "read", "rwatch")

    def do_awatch(self, arg: str) -> None:
        """awatch LOCATION [core N]
        Stop after an instruction or command reads or writes the location."""
        self._watch(arg, "access", "awatch")

    def _numbers(self, arg, what):
        """The breakpoint numbers a list names (N, or A-B: the existing breakpoints in that
        range, never every number of it), each of them existing."""
        nums = []
        for part in re.split(r"[,\s]+", arg.strip()):
            if not part:
                continue
            if "-" in part[1:]:
                a, b = part.split("-", 1)
                lo, hi = parse_int(a, "breakpoint number"), parse_int(b, "breakpoint number")
                if lo > hi:
                    raise CommandError(f"range {part}: {lo} is above {hi} (give LOW-HIGH)")
                found = [n for n in sorted(self.bps) if lo <= n <= hi]
                if not found:
                    raise CommandError(f"no breakpoint numbered {lo} to {hi}" + self._existing())
                nums.extend(found)
            else:
                n = parse_int(part, "breakpoint number")
                if n not in self.bps:
                    raise CommandError(f"no breakpoint number {n}" + self._existing())
                nums.append(n)
        return list(dict.fromkeys(nums))

    def _existing(self):
        if not self.bps:
            return " (there are none)"
        nums = sorted(self.bps)
        shown = ", ".join(map(str, nums if len(nums) <= 8 else nums[:4] + ["..."] + nums[-2:]))
        return f" (the breakpoints are {shown})"

    def _register_failed(self, bp) -> None:
        for sid in bp.stops:
            ffi.RemoveStop(self.tdb.engine, sid)

    def _armed(self, bp):
        """Whether the engine should check ``bp`` now: enabled, and for a pc breakpoint of a
        model, the current node runs its kernel."""
        kernel = getattr(bp, "kernel", None)
        if not bp.enabled or kernel is None:
            return bp.enabled
        node = self.tdb.model.node()
        return node is not None and node.where == "npu" and (node.step["module"], node.step["function"]) == kernel

    def on_node_load(self, node: Node) -> None:
        for bp in self.bps.values():
            if getattr(bp, "kernel", None) is not None:
                for sid in bp.stops:
                    ffi.SetStop(self.tdb.engine, sid, 1 if self._armed(bp) else 0, -1)

    def _set_enabled(self, arg, on, what) -> None:
        nums = self._numbers(arg, what) if arg.strip() else list(self.bps)
        for n in nums:
            self.bps[n].enabled = on
            for sid in self.bps[n].stops:
                ffi.SetStop(self.tdb.engine, sid, 1 if self._armed(self.bps[n]) else 0, -1)
        self.tdb.message(f"{'Enabled' if on else 'Disabled'} breakpoint(s) {', '.join(map(str, nums))}")

    def do_enable(self, arg: str) -> None:
        """enable [N[,N...]]
        Enable breakpoints (all without argument); a list may use commas and ranges: 1,2,5-7."""
        self._set_enabled(arg, True, "enable")

    def do_disable(self, arg: str) -> None:
        """disable [N[,N...]]
        Disable breakpoints (all without argument)."""
        self._set_enabled(arg, False, "disable")

    def do_delete(self, arg: str) -> None:
        """d(elete) [N[,N...]]
        Delete breakpoints (all without argument)."""
        nums = self._numbers(arg, "delete") if arg.strip() else list(self.bps)
        for n in nums:
            self._remove(n)
        self.tdb.message(f"Deleted breakpoint(s) {', '.join(map(str, nums))}" if nums else "No breakpoints")

    do_d = do_delete

    def _remove(self, n) -> None:
        bp = self.bps.pop(n)
        for sid in bp.stops:
            ffi.RemoveStop(self.tdb.engine, sid)
            self.by_stop.pop(sid, None)

    def do_condition(self, arg: str) -> bool | None:
        """condition N [CONDITION]
        Stop at breakpoint N only when the Python expression CONDITION is true (none: always)."""
        words = arg.split(None, 1)
        if not words:
            raise CommandError("usage: condition N [CONDITION]")
        n = self._numbers(words[0], "condition")[0]
        cond = words[1].strip() if len(words) > 1 else None
        if cond:
            try:
                compile(cond, "<condition>", "eval")
            except SyntaxError as e:
                raise CommandError(f"bad condition '{cond}': {e.msg}") from None
        self.bps[n].condition = cond
        self.tdb.message(f"Breakpoint {n} is now {'conditional: ' + cond if cond else 'unconditional'}")

    def do_ignore(self, arg: str) -> bool | None:
        """ignore N COUNT
        Pass over the next COUNT hits of breakpoint N."""
        words = arg.split()
        if len(words) != 2:
            raise CommandError("usage: ignore N COUNT")
        n = self._numbers(words[0], "ignore")[0]
        count = parse_int(words[1], "count")
        if count < 0:
            raise CommandError(f"count must be >= 0, got {count}")
        if isinstance(self.bps[n], GraphBreakpoint):
            self.bps[n].ignore = count
        for sid in self.bps[n].stops:
            ffi.SetStop(self.tdb.engine, sid, -1, count)
        self.tdb.message(f"Will ignore next {count} crossings of breakpoint {n}.")

    def hits(self, bp: Breakpoint) -> int:
        if isinstance(bp, GraphBreakpoint):
            return bp.count - bp.rejected
        total = getattr(bp, "host_hits", 0)
        for s in ffi.Stops(self.tdb.engine):
            if s["id"] in bp.stops:
                total += s["hits"]
        return total - bp.rejected

    def info_breakpoints(self, arg: str) -> None:
        if not self.bps:
            self.tdb.message("No breakpoints")
            return
        self.tdb.message(f"{'Num':<4}{'Type':<12}{'Disp':<5}{'Enb':<4}{'Hits':>6}  What")
        for n, bp in self.bps.items():
            what = bp.spec + (f" if {bp.condition}" if bp.condition else "")
            self.tdb.message(f"{n:<4}{bp.kind:<12}{'del' if bp.temporary else 'keep':<5}{'y' if bp.enabled else 'n':<4}"
                             f"{self.hits(bp):>6}  {what}")

    def accept_stop(self, report: dict[str, Any]) -> bool:
        keep = []
        for h in report["hits"]:
            bp = self.by_stop.get(h["id"])
            if bp is not None and bp.condition:
                try:
                    ok = bool(self.tdb.evaluate(bp.condition, h["core"]))
                except CommandError as e:  # a bad condition stops, like gdb
                    self.tdb.error(f"condition of breakpoint {bp.number} ({bp.condition}): {e}")
                    ok = True
                if not ok:
                    bp.rejected += 1
                    continue
            keep.append(h)
        if report["hits"] and not keep:
            return False
        report["hits"] = keep
        return True

    def on_stop(self, report: dict[str, Any]) -> None:
        t = self.tdb
        shown = set()
        for h in report["hits"]:
            bp = self.by_stop.get(h["id"])
            if bp is None or bp.number in shown:
                continue
            shown.add(bp.number)
            if bp.kind == "watchpoint":
                verb = "wrote" if h["write"] else "read"
                unit = "front end" if h["agent"] == "sc" else f"{h['agent']} engine"
                inst = t.sim.instruction_at(h["core"], h["pc"])
                loc = t.target.location(h["core"], h["pc"])
                t.message(f"Watchpoint {bp.number}: {bp.spec}: core {h['core']} pc {h['pc']} `{inst}` ({unit}) {verb} "
                          f"{h['space']}[{h['lo']:#x}, {h['hi']:#x})" + (f" at {loc}" if loc else ""))
            else:
                t.message(f"{'Temporary breakpoint' if bp.temporary else 'Breakpoint'} {bp.number}, {bp.spec}")
        for n in list(shown):
            if n in self.bps and self.bps[n].temporary:
                self._remove(n)

    # -- completion
    def complete_break(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        t = self.tdb
        words = list(mnemonics()) + [f"{e}#" for e in ("din", "dout", "mm", "vec")] + [f"{s}:" for s in SPACES]
        words += ["asm:"] + [os.path.basename(f) + ":" for f in t.target.files()]
        if t.model is not None:
            words += t.model.node_names() + t.model.op_types() + [f"op:{o}" for o in t.model.op_types()]
            words += [f"%{v}" for v in t.model.values] + [f"loc:{n}" for n in t.model.node_names()]
            words += ["graph:", "mlir:"] if t.graph_text is not None else []
        return complete_words(text, words)

    complete_b = complete_tbreak = complete_break

    def complete_enable(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        return complete_words(text, [str(n) for n in self.bps])

    complete_disable = complete_delete = complete_d = complete_condition = complete_ignore = complete_enable

    def complete_watch(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        if len(line[:begidx].split()) >= 2 and self.tdb.model is not None:
            return complete_words(text, ["nan", "inf", "outside"])
        m = self.tdb.model
        names = list(m.values) + ["*"] if m is not None else list(self.tdb.symbols)
        return complete_words(text, names + [f"{s}:" for s in SPACES])

    complete_rwatch = complete_awatch = complete_watch


