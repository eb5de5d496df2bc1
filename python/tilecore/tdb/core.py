"""tdb's core: a ``cmd.Cmd`` that only controls execution.

Conventions (those of Python's ``cmd`` and ``pdb``): command ``foo`` runs
``do_foo``, ``help foo`` prints its docstring (first line = usage, abbreviation in
parentheses), aliases are assignments (``do_n = do_next``), an empty line repeats
the last command, and every line of output goes through :meth:`message` or
:meth:`error` (which prefixes ``***``). Breakpoints, display and the info commands
are plugins (``plugins.py``); the core calls each plugin at load, start, before and
after each step (only for plugins that ask: ``wants_steps``), stop and end.
"""

from __future__ import annotations

import cmd
import os
import rlcompleter
import sys
import traceback
from typing import IO, TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from .. import sim as _sim
from ..ffi.error import TilecoreError
from .target import Target, TargetError, open_target

if TYPE_CHECKING:
    from .model import Member
    from .plugins import Plugin

UNITS = ("scalar", "simd", "din", "dout", "mm", "vec")
ENGINE_UNITS = {"dma": ("din", "dout"), "din": ("din",), "dout": ("dout",), "mm": ("mm",), "vec": ("vec",),
                "scalar": ("scalar", "simd"), "simd": ("simd",)}


class _Api:
    def __getattr__(self, name):
        from ..ffi._base import _ffi_core

        f = _ffi_core._get_global_func("debug." + name)
        if f is None:
            raise AttributeError(f"the tilecore library does not register 'debug.{name}'")
        setattr(self, name, f)
        return f


ffi = _Api()


class CommandError(Exception):
    """A mistake in a debugger command; shown as ``*** command: message``."""


def mnemonics() -> dict[str, str]:
    """{mnemonic: unit} of every TC1 instruction, from the instruction table."""
    if not hasattr(mnemonics, "cache"):
        mnemonics.cache = {str(m): str(u) for m, u in ffi.Mnemonics()}
    return mnemonics.cache


def parse_int(text: str, what: str = "number") -> int:
    try:
        return int(str(text), 0)
    except ValueError:
        raise CommandError(f"{what} must be an integer, got '{text}'") from None


class Debugger(cmd.Cmd):
    """The TC1 debugger.

    :param target: a :class:`Target`, a path (``.tcm`` kernel module, ``.s`` assembly, ``.tcx``
        model, or a folder holding a ``.tcx`` with its inputs and references: folder.py) or a
        :class:`tilecore.runtime.Executable`.
    :param inputs: a dict (or ``.npz`` path) of input arrays by parameter name.
    :param plugins: extra plugin classes or paths of Python files defining them.
    :param ref_data: models: reference tensors by ONNX value name (``.npz`` path(s) or a dict)
        for the data-check plugin.
    :param graph: models: the compiled graph's text (``tilecore compile --dump-graph``) that
        ``b graph:LINE`` reads; by default ``NAME.graph`` beside ``NAME.tcx``.
    :param stdin, stdout: file objects (default: the terminal).
    :param verbose: show progress while running.
    """

    prompt = "(tdb) "
    identchars = cmd.Cmd.identchars + "-"  # reverse-next, reverse-continue
    doc_header = "Commands (help COMMAND for details):"

    def __init__(self, target: Target | str | os.PathLike[str], inputs: Mapping[str, Any] | None = None,
                 plugins: Iterable[type | str] = (), stdin: IO[str] | None = None, stdout: IO[str] | None = None,
                 verbose: bool = False, sim_target: str | None = None, function: str | None = None,
                 mode: str = "functional+timing", ref_data: Any = None,
                 graph: str | os.PathLike[str] | None = None) -> None:
        super().__init__(stdin=stdin, stdout=stdout)
        from .folder import target_files

        # a folder: its .tcx, inputs, references and graph text; a .tcx: the graph text beside it
        target, inputs, ref_data, graph = target_files(target, inputs, ref_data, graph)
        self.graph_text = None if graph is None else os.fspath(graph)  # for b graph:LINE
        self.errors = 0  # commands that failed (`***` lines)
        if stdin is not None:
            self.use_rawinput = False
        self.verbose = verbose
        if not isinstance(target, Target) and type(target).__name__ == "Executable":
            from .model import ModelTarget

            target = ModelTarget(target)
        self.target = target if isinstance(target, Target) else open_target(target, function)
        if isinstance(inputs, (str, bytes)) or hasattr(inputs, "__fspath__"):
            from ..runtime import files

            inputs = files.load_npz(inputs)
        self.inputs = dict(inputs or {})
        if hasattr(self.target, "for_inputs"):  # an executable with buckets: the one the inputs take
            self.target = self.target.for_inputs(self.inputs)
        cores = max(self.target.cores, 1)
        self.sim = _sim.Simulator(sim_target or f"npu -cores={cores}", mode=mode)
        self.engine = ffi.Create(self.sim.handle)  # stops may be set before start
        if getattr(self.target, "kind", "") == "model":
            # A model's history restarts at each npu node, so it is off unless asked for
            # ('record on'): logging every tile write's old bytes halves the speed of a run.
            ffi.SetRecording(self.engine, False)
        self.symbols = {}
        self.started = False
        self.finished = False
        self.fault = None
        self.refused = None           # models: why the current node cannot be loaded
        self.core = 0                 # the core commands refer to by default
        self.last_stop = None
        self.total_instructions = None  # known after one complete run
        self.model = self.target if getattr(self.target, "kind", "") == "model" else None
        self.base_position = 0        # models: instructions of the nodes already run
        self.node_instructions = {}   # models: node index -> instructions it took
        self.members_started: list[bool] = []   # models: the current layer group's members
        self.members_complete: list[bool] = []
        self.namespace = {"tdb": self, "sim": self.sim, "np": np}
        self.plugins = []
        self.info_handlers = {}       # info SUBCOMMAND -> (function, completer or None)
        from . import plugins as builtin
        from .datacheck import DataCheckPlugin

        for p in (builtin.BreakpointPlugin, builtin.DisplayPlugin, builtin.InfoPlugin, DataCheckPlugin, *plugins):
            self.add_plugin(p)
        if ref_data is not None:
            if self.model is None:
                raise TargetError("--ref_data needs a model (.tcx): a kernel has no graph values to compare")
            self.plugin("data-check").set_reference(ref_data)
        self._call("on_load")

    # ---- output ------------------------------------------------------------------------
    def message(self, text: str = "") -> None:
        print(text, file=self.stdout)

    def error(self, text: str) -> None:
        self.errors += 1  # (a scripted session, `tdb --do`, exits 1 when any command failed)
        print("***", text, file=self.stdout)

    def progress(self, done: int, total: int, what: str) -> None:
        """With -v: a tqdm bar on a terminal's stderr, else a line per report."""
        bar = getattr(self, "_bar", None)
        if bar is None and sys.stderr.isatty() and total:
            try:
                from tqdm import tqdm

                bar = self._bar = tqdm(total=total, leave=False, file=sys.stderr)
            except ImportError:
                bar = self._bar = False
        if bar:
            bar.set_postfix_str(what[:40], refresh=False)
            bar.update(max(done - bar.n, 0))
            if done >= total:
                bar.close()
                self._bar = None
            return
        self.message(f"progress: {what}")

    # ---- plugins -------------------------------------------------------------------------
    def add_plugin(self, plugin: type | str | os.PathLike[str]) -> Plugin:
        """Adds a plugin class (or a path of a Python file whose Plugin subclasses are added)."""
        from .plugins import Plugin, load_plugin_file

        if isinstance(plugin, str):
            for cls in load_plugin_file(plugin):
                self.add_plugin(cls)
            return
        inst = plugin(self) if isinstance(plugin, type) else plugin
        if not isinstance(inst, Plugin):
            raise TypeError(f"a tdb plugin must subclass tilecore.tdb.Plugin, got {type(inst).__name__}")
        self.plugins.append(inst)
        for attr in dir(inst):
            if attr.startswith(("do_", "complete_", "help_")):
                setattr(self, attr, getattr(inst, attr))
        return inst

    def plugin(self, name: str) -> Plugin | None:
        for p in self.plugins:
            if p.name == name:
                return p
        return None

    def _call(self, hook, *args) -> None:
        for p in self.plugins:
            getattr(p, hook)(*args)

    def get_names(self) -> list[str]:
        return dir(self)

    def preloop(self) -> None:
        # Complete whole node and value names (`/layer1/conv/Conv`, `%x`, `loc:n`, `ddr:0x10`):
        # '/', ':', '%', '#', '-' are not word breaks here, unlike readline's default.
        try:
            import readline
        except ImportError:
            return
        readline.set_completer_delims(" \t\n`!@$^&*()=+[{]};'\",<>?|~")

    # ---- command dispatch ----------------------------------------------------------------
    def onecmd(self, line: str) -> bool:
        name = self.parseline(line)[0] or (line.split()[0] if line.split() else "")
        try:
            return super().onecmd(line)
        except CommandError as e:
            self.error(f"{self._canonical(name)}: {e}")
        except _sim.SimError as e:
            if e.fault == "Usage":
                self.error(f"{self._canonical(name)}: {e.reason or e}")
            else:
                self.fault = e
                self.error(f"{self._canonical(name)}: the program faulted: {e}")
        except (TilecoreError, TargetError, ValueError, TypeError, KeyError, IndexError, OverflowError) as e:
            self.error(f"{self._canonical(name)}: {e}")
        except Exception as e:  # noqa: BLE001  (never let a command kill the session)
            self.error(f"{self._canonical(name)}: internal error {type(e).__name__}: {e}")
            if self.verbose:
                traceback.print_exc(file=self.stdout)
        return False

    def parseline(self, line: str) -> tuple[str | None, str | None, str]:
        command, arg, line = super().parseline(line)
        return (command.replace("-", "_") if command else command), arg, line

    def _canonical(self, name):
        f = getattr(self, "do_" + name.replace("-", "_"), None)
        return f.__name__[3:].replace("_", "-") if f is not None and hasattr(f, "__name__") else name

    def default(self, line: str) -> bool | None:
        if line.startswith("!"):
            return self.do_py(line[1:])
        self.error(f"{line.split()[0]}: unknown command (try 'help')")

    def emptyline(self) -> bool:
        if self.lastcmd:
            return self.onecmd(self.lastcmd)
        return False

    def run_commands(self, commands: str | Sequence[str]) -> bool:
        """Runs commands (a list, or one string separated by ';'); stops at quit."""
        if isinstance(commands, str):
            commands = [c for c in commands.split(";")]
        for c in commands:
            c = c.strip()
            if not c:
                continue
            self.message(self.prompt + c)
            if self.onecmd(c):
                return True
        return False

    # ---- state ---------------------------------------------------------------------------
    def require_started(self) -> None:
        if not self.started:
            raise CommandError("the program is not started (use 'start' or 'run')")

    def current_pc(self, core: int | None = None) -> int:
        return self.sim.pc(self.core if core is None else core)

    def position(self) -> Any:
        return ffi.Position(self.engine) if self.engine is not None else 0

    def stopped_core(self) -> int:
        """The core of the last stop, else the selected core."""
        hits = (self.last_stop or {}).get("hits") or []
        return hits[0]["core"] if hits else self.core

    def where(self, core: int | None = None) -> str:
        """``core C pc P `inst` at file:line`` for a core."""
        core = self.core if core is None else core
        if self.model is not None:
            node = self.model.node()
            if node is None:
                return "the model has finished"
            head = f"node {node.index + 1} of {len(self.model.nodes)} {node.describe()}"
            if node.where == "host":
                return f"{head}: one host call (`{node.step['function']}`), not run yet"
            if node.where == "view":
                return f"{head}: a view of `{node.inputs[0]}` as `{node.outputs[0]}`, no code"
            if self.position() == 0:
                head = "before " + head
            if node.group:
                head += ", " + self.member_state(core)
            if self.sim.halted(core):
                return f"{head}: core {core} halted"
            pc = self.sim.pc(core)
            return f"{head}: core {core} pc {pc}: {self.sim.instruction_at(core, pc) or '<past the end>'}"
        pc = self.sim.pc(core)
        if self.sim.halted(core):
            return f"core {core} halted"
        text = self.sim.instruction_at(core, pc) or "<past the end>"
        loc = self.target.location(core, pc)
        return f"core {core} pc {pc}: {text}" + (f"    at {loc}" if loc else "")

    def start(self) -> None:
        """Loads the program, writes the inputs and prepares the debugging engine."""
        self.finished = False
        self.fault = None
        self.refused = None
        self.last_stop = None
        if self.model is not None:
            self.symbols = self.model.prepare(self.sim, self.inputs)
            self.base_position = 0
            self.started = True
            self.enter_node(0)
            self.at_first_node = True  # the first resume checks the breakpoints before node 0
        else:
            self.sim.load(self.target.program)
            self.symbols = self.target.prepare(self.sim, self.inputs)
            ffi.Begin(self.engine)
        self.started = True
        self.namespace.update({"symbols": self.symbols})
        self._call("on_start")

    # ---- running ------------------------------------------------------------------------
    def require_runnable(self) -> None:
        self.require_started()
        if self.finished:
            raise CommandError("the program has finished (use 'run' to start again)")
        if self.fault is not None:
            raise CommandError(f"the program faulted at core {self.fault.core} pc {self.fault.pc} "
                               "(go back with reverse-next, or start again with run)")
        if self.refused:
            raise CommandError(self.refused)

    def resume(self, max_instructions: int = 0, units: Iterable[str] = (),
               pcs: Mapping[int, Sequence[int]] | None = None, stop_before: Any = None,
               node_end: bool = False, stop_member: Any = None) -> dict[str, Any]:
        """Runs until a stop, ``max_instructions`` (0: no limit) or the end; reports the stop.

        For a model, ``stop_before(node)`` (true: stop before that node starts),
        ``stop_member(node, member)`` (true: stop where that member of the node's layer group
        starts) and ``node_end`` (stop when the current node ends) are graph-level transient stops."""
        self.require_runnable()
        if self.model is not None:
            rep = self._resume_model(max_instructions, units, stop_before, node_end, stop_member)
        else:
            rep = self._resume_kernel(max_instructions, units, pcs)
        self.report(rep)
        return rep

    def _resume_kernel(self, max_instructions=0, units=(), pcs=None):
        """The kernel part of resume: runs the loaded program; returns the report."""
        mask = 0
        for u in units:
            mask |= 1 << UNITS.index(u)
        pc_lists = []
        if pcs:
            pc_lists = [list(pcs.get(c, [])) for c in range(self.sim.cores)]
        steppers = [p for p in self.plugins if p.wants_steps]
        left = max_instructions
        while True:
            if steppers:
                for p in steppers:
                    p.before_step()
                rep = dict(ffi.Resume(self.engine, 1, mask, pc_lists).items())
                if rep["executed"]:
                    for p in steppers:
                        p.after_step()
                if rep["reason"] == "step" and (left == 0 or left > 1):
                    left = left - 1 if left else 0
                    continue
            elif self.verbose and max_instructions == 0:
                rep = dict(ffi.Resume(self.engine, 1 << 20, mask, pc_lists).items())
                if rep["reason"] == "step":
                    self.progress(self.position(), self.total_instructions,
                                  f"{self.position()} instructions, {self.sim.cycle()} cycles"
                                  + (f" ({100 * self.position() // self.total_instructions}%)"
                                     if self.total_instructions else ""))
                    continue
            else:
                rep = dict(ffi.Resume(self.engine, left, mask, pc_lists).items())
            rep["hits"] = [dict(h.items()) for h in rep["hits"]]
            if rep["reason"] in ("breakpoint", "watchpoint") and not all(p.accept_stop(rep) for p in self.plugins):
                continue  # a condition said no
            break
        return rep

    # ---- models: node after node ------------------------------------------------------------
    def enter_node(self, index: int) -> None:
        """Makes node ``index`` current: an npu node's kernel is loaded (stopped before its
        first instruction) and the reverse-execution history restarts there."""
        m = self.model
        m.current = index
        node = m.node(index)
        if node is not None and node.where == "npu":
            try:
                m.load_node(self.sim, node)
            except Exception as e:  # refused as Executable.run refuses it: nothing of it may run
                self.refused = f"node {index + 1} `{node.onnx_name}` cannot run: {e}"
                raise
            ffi.Begin(self.engine)
            self._call("on_node_load", node)
        # a layer group's members: which have started, and which are complete
        self.members_started = [False] * len(node.group) if node is not None else []
        self.members_complete = [False] * len(node.group) if node is not None else []

    def member_at(self, core: int | None = None) -> Member | None:
        """The member of the current layer group whose code the core is in (None: outside
        every member's code, or no group)."""
        node = self.model.node() if self.model is not None else None
        if node is None or not node.group:
            return None
        core = self.core if core is None else core
        pc = self.sim.pc(core)
        return next((g for g in node.group if g.contains(core, pc)), None)

    def member_state(self, core: int | None = None) -> str:
        """Where the core is among the current layer group's members: in one (and whether it is
        complete), or between two."""
        node = self.model.node()
        g = self.member_at(core)
        n = len(node.group)
        if g is not None:
            return f"in member {g.index + 1} of {n} {g.describe()}"
        done = [h for h in node.group if self.members_complete[h.index]]
        ahead = [h for h in node.group if not self.members_started[h.index]]
        parts = ([f"after member {done[-1].index + 1} of {n} {done[-1].describe()} (complete)"] if done else []) + \
                ([f"before member {ahead[0].index + 1} of {n} {ahead[0].describe()}"] if ahead else [])
        return ", ".join(parts) or "outside the members' code"

    def _member_stops(self, node, stop_member=None):
        """The pcs per core where the run must stop for the member boundaries the plugins
        (and a transient ``stop_member``: every member's start) need ({core: [pc, ...]}), the
        events pending."""
        wanted = set().union(*(p.member_events(node) for p in self.plugins))
        if stop_member is not None:
            wanted |= {("start", g.index) for g in node.group}
        pcs: dict[int, set[int]] = {}
        for kind, k in wanted:
            g = node.group[k]
            if not g.pc:  # a member without code (an in-place Concat): done where the last before it with code is
                g = next((h for h in reversed(node.group[:k]) if h.pc), None)
                kind = "end" if g is not None else "none"
                k = g.index if g is not None else k
            if kind == "start" and not self.members_started[k]:
                for core in g.pc:
                    pcs.setdefault(core, set()).add(g.begin(core))
            elif kind == "end" and not self.members_complete[k]:
                for core in g.pc:
                    if not self._passed(core, g.end(core)):
                        pcs.setdefault(core, set()).add(g.end(core))
        return {c: sorted(v) for c, v in pcs.items()}, wanted

    def _passed(self, core, end):
        return self.sim.halted(core) or self.sim.pc(core) >= end

    def _member_progress(self, node, wanted, finished=False, stop_member=None):
        """Marks the members that started or completed by now (the cores' pcs: each core
        runs the members' code in order), and returns the messages of the plugins that
        asked for those boundaries ("" for a member ``stop_member`` stops at)."""
        messages = []
        for g in node.group:
            k = g.index
            # a member without code (an in-place Concat) starts and completes with the one before it
            now = finished or (not g.pc and (k == 0 or self.members_complete[k - 1]))
            if not self.members_started[k] and (now or any(self._passed(c, g.begin(c)) for c in g.pc)):
                self.members_started[k] = True
                if ("start", k) in wanted:
                    messages += [t for p in self.plugins for t in (p.before_member(node, g) or [])]
                    if stop_member is not None and not finished and stop_member(node, g):
                        messages.append("")
            if not self.members_complete[k] and (now or (g.pc and all(self._passed(c, g.end(c)) for c in g.pc))):
                self.members_complete[k] = True
                if ("end", k) in wanted:
                    messages += [t for p in self.plugins for t in (p.after_member(node, g) or [])]
        return messages

    def _resume_group(self, node, left, units, stop_member=None):
        """Runs a layer group's kernel like _resume_kernel, stopping at the member boundaries
        the plugins need (transient pc stops: where none is needed, at full speed); a boundary
        whose plugins return messages is a stop ("node" report with the messages)."""
        executed = 0
        while True:
            pcs, wanted = self._member_stops(node, stop_member)
            rep = self._resume_kernel(left - executed if left else 0, units, pcs or None)
            executed += rep["executed"]
            rep["executed"] = executed
            finished = rep["reason"] == "finished"
            messages = self._member_progress(node, wanted, finished, stop_member)
            if finished:
                rep["member_messages"] = messages
                return rep
            ours = rep["reason"] == "transient" and all(
                h["pc"] in pcs.get(h["core"], ()) and mnemonics().get(h["op"]) not in units for h in rep["hits"])
            if not ours:
                rep.setdefault("messages", [])[:0] = messages
                return rep
            if messages:
                return {"reason": "node", "executed": executed, "hits": [], "messages": messages}
            if left and executed >= left:
                return {"reason": "step", "executed": executed, "hits": []}

    def _resume_model(self, max_instructions, units, stop_before, node_end, stop_member=None):
        m = self.model
        left = max_instructions
        executed = 0
        # (resuming where a stop before this node was reported does not stop there again)
        first = not getattr(self, "at_first_node", False)
        # (after start, the first node's breakpoints count, but not a transient stop before it:
        # next node and until go somewhere from here)
        here = not first
        self.at_first_node = False
        while True:
            node = m.node()
            if node is None:
                return {"reason": "finished", "executed": executed, "hits": []}
            if not first:
                messages = [t for p in self.plugins for t in (p.before_node(node) or [])]
                if stop_before is not None and not here and stop_before(node):
                    messages.append("")
                if messages:
                    return {"reason": "node", "executed": executed, "hits": [], "messages": messages}
            first = here = False
            if node.where == "npu":
                if self.verbose:
                    self.progress(node.index + 1, len(m.nodes), f"node {node.index + 1} of {len(m.nodes)} {node.describe()}")
                rep = self._resume_group(node, left, units, stop_member) if node.group else \
                    self._resume_kernel(left, units)
                executed += rep["executed"]
                if rep["reason"] != "finished":
                    rep["executed"] = executed
                    return rep
                member_messages = rep.get("member_messages", [])
                if left:
                    left = max(left - rep["executed"], 0) or -1
                ran = self.position()
            else:
                member_messages = []
                if node.where == "host":
                    m.run_host_node(self.sim, node)
                executed += 1
                if left:
                    left = (left - 1) or -1
                ran = 0
            self.node_instructions[node.index] = ran
            self.base_position += ran
            messages = member_messages + [t for p in self.plugins for t in (p.after_node(node) or [])]
            self.enter_node(node.index + 1)
            if messages or node_end or left == -1:
                nxt = m.node()
                if nxt is None:
                    return {"reason": "finished", "executed": executed, "hits": [], "messages": messages}
                # Stopping here is also stopping before the next node: its breakpoints count now.
                messages += [t for p in self.plugins for t in (p.before_node(nxt) or [])]
                return {"reason": "node" if messages or node_end else "step", "executed": executed, "hits": [],
                        "messages": messages}

    def report(self, rep: dict[str, Any]) -> None:
        self.last_stop = rep
        if rep["hits"]:
            self.core = rep["hits"][0]["core"]
        for text in rep.get("messages", ()):
            if text:
                self.message(text)
        if rep["reason"] == "finished" and self.model is not None:
            self.finished = True
            self.total_instructions = self.base_position
            m = self.model
            self.message(f"model finished: {len(m.nodes)} nodes ({sum(n.where == 'npu' for n in m.nodes)} npu, "
                         f"{sum(n.where == 'host' for n in m.nodes)} host, {sum(n.where == 'view' for n in m.nodes)} "
                         f"views), {self.base_position} instructions")
            self._call("on_stop", rep)
            self._call("on_end")
            return
        if rep["reason"] == "finished":
            self.finished = True
            self.total_instructions = self.position()
            st = self.sim.stats()
            self.message(f"program finished: {st['instructions']} instructions, {st['commands']} tile commands, "
                         f"{st['cycles']} cycles")
            self._call("on_stop", rep)
            self._call("on_end")
            return
        self._call("on_stop", rep)

    def run_to_position(self, position: Any) -> dict[str, Any]:
        rep = dict(ffi.ReverseTo(self.engine, int(position)).items())
        rep["hits"] = []
        self.finished = False
        self.fault = None
        return rep

    # ---- commands --------------------------------------------------------------------------
    def do_start(self, arg: str) -> bool | None:
        """s(tart)
        Load the target and initialise the simulator (memory cleared, inputs written); stop before the first instruction."""
        if arg.strip():
            raise CommandError("takes no argument")
        self.sim_clear()
        self.start()
        self.message(f"{self.target.kind} `{self.target.name}` on {self.sim.cores} core(s); "
                     f"{len(self.symbols)} {'graph value' if self.model is not None else 'buffer'}(s); "
                     "stopped before the first instruction")
        self.message(self.where())

    do_s = do_start

    def sim_clear(self) -> None:
        """Zeroes what the previous run wrote (the simulator is reused): the buffers,
        every range in the write log, L2 and each core's L1. Clearing all of DDR
        would touch every page of it."""
        cfg = self.sim.config
        if self.started:
            for space, core, lo, hi in ffi.WrittenRanges(self.engine):
                self.sim.write(space, lo, np.zeros(hi - lo, np.uint8), core=core)
            if self.target.program is not None:
                self.sim.load(self.target.program)
            for name, s in self.symbols.items() if self.model is None else ():  # a model's arena is zeroed whole
                self.sim.write(s.space, s.address, np.zeros(s.nbytes, np.uint8), core=s.core)
            self.sim.write("l2", 0, np.zeros(cfg["l2_bytes"], np.uint8))
            for c in range(self.sim.cores):
                self.sim.write("l1", 0, np.zeros(cfg["l1_bytes"], np.uint8), core=c)

    def do_run(self, arg: str) -> bool | None:
        """r(un)
        Run from the start (re-initialising) until a breakpoint or the end."""
        if arg.strip():
            raise CommandError("takes no argument")
        self.sim_clear()
        self.start()
        self.resume()

    do_r = do_run

    def do_next(self, arg: str) -> bool | None:
        """n(ext) [N] | n(ext) dma|din|dout|mm|vec|scalar [N] | n(ext) node [N]
        Execute the next N instructions (default 1) of all cores, in simulation order (in a model,
        a host node or a view counts as one); with an engine, run until just before the N-th next
        instruction that issues a command to it; with node (models), until the N-th next node starts
        (inside a layer group whose members' code is recorded, a member's start counts as a node's)."""
        self.require_started()
        args = arg.split()
        if args and args[0] == "node" and self.model is not None:
            n = parse_int(args[1], "count") if len(args) > 1 else 1
            if n < 1 or len(args) > 2:
                raise CommandError("usage: next node [N] with N >= 1")
            seen = [0]

            def nth(*node_or_member):  # a node's start, or a layer group member's, counts one
                seen[0] += 1
                return seen[0] >= n
            self.resume(0, stop_before=nth, stop_member=nth)
            return
        if args and args[0] in ENGINE_UNITS:
            n = parse_int(args[1], "count") if len(args) > 1 else 1
            if n < 1 or len(args) > 2:
                raise CommandError("usage: next ENGINE [N] with N >= 1")
            for _ in range(n):
                self.require_runnable()
                if self.model is not None:  # one step first (maybe into the next node), model-aware
                    if self.resume(1)["reason"] != "step":
                        return
                    rep = self.resume(0, units=ENGINE_UNITS[args[0]])
                    if rep["reason"] != "transient":
                        return
                    continue
                rep = dict(ffi.Resume(self.engine, 1, 0, []).items())
                rep["hits"] = [dict(h.items()) for h in rep["hits"]]
                if rep["reason"] != "step":
                    self.report(rep)
                    return
                rep = self.resume(0, units=ENGINE_UNITS[args[0]])
                if rep["reason"] != "transient":
                    return
            return
        if len(args) > 1:
            raise CommandError("usage: next [N] | next ENGINE [N]")
        n = parse_int(args[0], "count") if args else 1
        if n < 1:
            raise CommandError(f"count must be >= 1, got {n}")
        self.resume(n)

    do_n = do_next

    def complete_next(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        return [u for u in list(ENGINE_UNITS) + (["node"] if self.model is not None else []) if u.startswith(text)]

    def do_continue(self, arg: str) -> bool | None:
        """c(ont(inue))
        Continue until a breakpoint or watchpoint stops, or the program ends."""
        if arg.strip():
            raise CommandError("takes no argument")
        self.resume()

    do_c = do_cont = do_continue

    def _line_of(self, core):
        loc = self.target.location(core, self.sim.pc(core))
        if loc is None:
            return None, None
        f, _, ln = loc.rpartition(":")
        return f, int(ln)

    def do_until(self, arg: str) -> bool | None:
        """unt(il) [LINE] | unt(il) [NODE]
        Without argument, continue until a kernel source line greater than the current one is
        reached (on the current core); with LINE, until a line >= LINE is reached.
        In a model: until node NODE (ONNX node name) starts, where it starts inside its layer group
        for a member; without argument, the next node (inside a layer group, the next member)."""
        self.require_started()
        if self.model is not None:
            name = arg.strip()
            if name and not self.model.find_nodes(name):
                raise CommandError(f"no node named `{name}`" + _suggest(name, self.model.node_names()))
            if not name:  # the next node, or the next member inside a layer group
                self.resume(0, stop_before=lambda node: True, stop_member=lambda node, member: True)
                return

            def member(node):  # a member of the node's layer group (not the group's step itself)
                return node.name != name and node.member(name) is not None

            self.resume(0, stop_before=lambda node: node.computes(name) and not member(node),
                        stop_member=lambda node, g: g.name == name and member(node))
            return
        core = self.core
        file, line = self._line_of(core)
        if file is None:
            raise CommandError("no source line for the current instruction")
        target_line = parse_int(arg.strip(), "line") if arg.strip() else line + 1
        pcs = {}
        for c in range(self.sim.cores):
            locs = ((pc, self._loc_tuple(c, pc)) for _, pc in self._all_pcs(c))
            pcs[c] = [pc for pc, loc in locs if loc is not None and loc[0] == file and loc[1] >= target_line]
        self.resume(0, pcs=pcs)

    do_unt = do_until

    def complete_until(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        return complete_node_names(self, text)

    complete_unt = complete_until

    def do_finish(self, arg: str) -> bool | None:
        """finish
        Continue until the current core leaves the current kernel source line (its statement);
        in a model, until the current node has run (stopping before the next one)."""
        self.require_started()
        if arg.strip():
            raise CommandError("takes no argument")
        if self.model is not None:
            self.resume(0, node_end=True)
            return
        core = self.core
        here = self._loc_tuple(core, self.sim.pc(core))
        if here is None:
            raise CommandError("no source line for the current instruction")
        pcs = {core: [pc for _, pc in self._all_pcs(core) if self._loc_tuple(core, pc) not in (here, None)]}
        self.resume(0, pcs=pcs)

    def _loc_tuple(self, core, pc):
        loc = self.target.location(core, pc)
        if loc is None:
            return None
        f, _, ln = loc.rpartition(":")
        return f, int(ln)

    def _all_pcs(self, core):
        n = 0
        while self.sim.instruction_at(core, n):
            yield core, n
            n += 1

    def require_kernel_history(self) -> None:
        if self.model is None:
            return
        node = self.model.node()
        if node is None or node.where != "npu":
            raise CommandError(f"{self.where()}: reverse execution goes back within an npu node's kernel only")

    def do_reverse_next(self, arg: str) -> bool | None:
        """reverse-next [N] (rn)
        Go back N instructions (default 1): memory, registers, queues and clocks as they were
        (in a model, within the current npu node, with 'record on')."""
        self.require_started()
        self.require_kernel_history()
        n = parse_int(arg.strip(), "count") if arg.strip() else 1
        if n < 1:
            raise CommandError(f"count must be >= 1, got {n}")
        pos = self.position()
        rep = self.run_to_position(max(pos - n, 0))
        self.report(rep)

    do_rn = do_reverse_next

    def do_reverse_continue(self, arg: str) -> bool | None:
        """reverse-continue (rc)
        Go back to the most recent breakpoint or watchpoint hit before the current position
        (in a model, within the current npu node)."""
        self.require_started()
        self.require_kernel_history()
        if arg.strip():
            raise CommandError("takes no argument")
        rep = dict(ffi.ReverseContinue(self.engine).items())
        rep["hits"] = [dict(h.items()) for h in rep["hits"]]
        self.finished = False
        self.fault = None
        self.report(rep)

    do_rc = do_reverse_continue

    def do_record(self, arg: str) -> bool | None:
        """record [on|off]
        Show or switch the history that reverse-next, reverse-continue and info writes use
        (on by default; off saves the cost of logging every memory write)."""
        self.require_started()
        a = arg.strip()
        if a not in ("", "on", "off"):
            raise CommandError(f"expected on or off, got '{a}'")
        if a:
            ffi.SetRecording(self.engine, a == "on")
        h = ffi.History(self.engine)
        self.message(f"recording {'on' if h['recording'] else 'off'}")

    def complete_record(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        return [w for w in ("on", "off") if w.startswith(text)]

    def do_core(self, arg: str) -> bool | None:
        """core [N]
        Show or select the core that info, x, set and finish refer to."""
        if arg.strip():
            n = parse_int(arg.strip(), "core")
            if not 0 <= n < self.sim.cores:
                raise CommandError(f"core {n} does not exist (cores 0..{self.sim.cores - 1})")
            self.core = n
        self.message(f"core {self.core}")

    def do_py(self, arg: str) -> bool | None:
        """py STATEMENT
        Run a Python statement in the debugger's namespace (tdb, sim, np, symbols; buffers by name)."""
        if not arg.strip():
            raise CommandError("usage: py STATEMENT")
        ns = self.eval_namespace()
        try:
            code = compile(arg, "<tdb>", "single")
        except SyntaxError as e:
            raise CommandError(f"syntax error: {e.msg}") from None
        saved = sys.stdout
        sys.stdout = self.stdout
        try:
            exec(code, self.namespace, ns)  # noqa: S102  (the user's own statement)
        except Exception as e:  # noqa: BLE001
            self.error(f"py: {type(e).__name__}: {e}")
        finally:
            sys.stdout = saved
        for k, v in ns.assigned.items():
            self.namespace[k] = v

    def complete_py(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        completer = rlcompleter.Completer(dict(self.namespace, **{k: None for k in self.symbols}))
        out, i = [], 0
        while True:
            c = completer.complete(text, i)
            if c is None:
                return out
            out.append(c)
            i += 1

    def eval_namespace(self, core: int | None = None) -> Mapping[str, Any]:
        return _Namespace(self, self.core if core is None else core)

    def evaluate(self, expr: str, core: int | None = None) -> Any:
        """Evaluates a Python expression with registers, pc, core and buffers by name."""
        try:
            code = compile(expr, "<tdb>", "eval")
        except SyntaxError as e:
            raise CommandError(f"'{expr}' is not a Python expression ({e.msg})") from None
        try:
            return eval(code, self.namespace, self.eval_namespace(core))  # noqa: S307
        except NameError as e:
            name = getattr(e, "name", None) or str(e)
            known = list(self.model.values) if self.model is not None else list(self.symbols)
            what = "graph value" if self.model is not None else "buffer"
            raise CommandError(f"`{name}` is not a {what}, a register or a Python name" + _suggest(name, known)) \
                from None
        except Exception as e:  # noqa: BLE001  (the user's expression)
            raise CommandError(f"{expr}: {type(e).__name__}: {e}") from None

    def do_quit(self, arg: str) -> bool:
        """q(uit)
        Leave the debugger."""
        self._call("on_quit")
        return True

    do_q = do_exit = do_quit

    def do_EOF(self, arg: str) -> bool:  # noqa: N802  (cmd's name for end of input)
        self.message("")
        return True

    def do_help(self, arg: str) -> bool | None:
        """h(elp) [COMMAND]
        List the commands, or show the usage and description of one."""
        if arg.strip():
            f = getattr(self, "do_" + arg.strip().replace("-", "_"), None)
            if f is None or not f.__doc__:
                raise CommandError(f"no command '{arg.strip()}'")
            self.message(_dedent(f.__doc__))
            return
        return super().do_help(arg)

    do_h = do_help

    def completenames(self, text: str, *ignored) -> list[str]:
        return sorted({n[3:].replace("_", "-") for n in self.get_names()
                       if n.startswith("do_" + text.replace("-", "_")) and n != "do_EOF"})


def _suggest(name, names):
    import difflib

    close = difflib.get_close_matches(name, names, n=4)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def complete_node_names(tdb: Debugger, text: str) -> list[str]:
    return sorted(n for n in tdb.model.node_names() if n.startswith(text)) if tdb.model is not None else []


def _dedent(doc):
    lines = doc.strip("\n").splitlines()
    return "\n".join(line.strip() if i else line.strip() for i, line in enumerate(lines))


class _Namespace(dict):
    """Locals for conditions, display and py: registers of one core, pc, core, cycle,
    and buffers by name (read from simulated memory when used)."""

    def __init__(self, tdb: Debugger, core: int) -> None:
        super().__init__()
        self.tdb, self.c = tdb, core
        self.assigned = {}

    def __getitem__(self, key):
        if key in self.assigned:
            return self.assigned[key]
        t, sim = self.tdb, self.tdb.sim
        if key == "core":
            return self.c
        if key == "pc":
            return sim.pc(self.c)
        if key == "cycle":
            return sim.cycle()
        if key == "node" and t.model is not None:
            return t.model.node()
        if len(key) >= 2 and key[0] in "xvp" and key[1:].isdigit():
            r = int(key[1:])
            if key[0] == "x" and r < 32:
                return sim.xreg(self.c, r)
            if key[0] == "v" and r < 32:
                return sim.vreg(self.c, r, "int32")
            if key[0] == "p" and r < 8:
                return sim.preg(self.c, r)
        if key in t.symbols:
            s = t.symbols[key]
            return sim.read(s.space, s.address, s.shape, s.dtype, core=s.core)
        raise KeyError(key)

    def __setitem__(self, key, value) -> None:
        self.assigned[key] = value

    def __contains__(self, key) -> bool:
        try:
            self[key]
            return True
        except KeyError:
            return False
