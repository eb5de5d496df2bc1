"""tdb plugins: the base class and the built-in breakpoints, display and info.

A plugin receives the debugger's lifecycle callbacks and may add commands: any
``do_NAME`` / ``complete_NAME`` / ``help_NAME`` method becomes a debugger command.

    class CountDma(tilecore.tdb.Plugin):
        name = "count-dma"
        wants_steps = True            # call before_step/after_step for every instruction
        def on_start(self): self.n = 0
        def after_step(self): self.n += self.tdb.sim.instruction_at(0, self.tdb.sim.pc(0)).startswith("dma")
        def do_dmas(self, arg):
            "dmas\\n Print how many DMA instructions are next in line."
            self.tdb.message(str(self.n))

Plugins that set ``wants_steps`` make tdb single-step (a Python call per
instruction); the built-in ones do not, so ``continue`` runs at the simulator's speed.
"""
import importlib.util
import os
import re

import numpy as np

from .core import CommandError, ENGINE_UNITS, ffi, mnemonics, parse_int

SPACES = ("ddr", "l2", "l1")
DTYPES = {"i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16", "i32": "int32", "u32": "uint32",
          "f16": "float16", "f32": "float32", "bf16": "bfloat16"}


class Plugin:
    """Base class of tdb plugins. Override any callback; all default to doing nothing."""

    name = "plugin"
    #: True: tdb calls before_step/after_step around every instruction (slow: one
    #: Python call per instruction); False: the simulator runs freely between stops.
    wants_steps = False

    def __init__(self, tdb):
        self.tdb = tdb

    def on_load(self):
        """The target is loaded and every plugin registered."""

    def on_start(self):
        """The program was (re)loaded and its inputs written (start, run)."""

    def before_step(self):
        """Before each instruction (only with wants_steps)."""

    def after_step(self):
        """After each instruction (only with wants_steps)."""

    def accept_stop(self, report):
        """Return False to ignore this breakpoint stop and continue (conditions)."""
        return True

    def on_stop(self, report):
        """Execution stopped; ``report`` has reason, executed and hits."""

    def on_end(self):
        """The program finished."""

    def on_quit(self):
        """The debugger is leaving."""


def load_plugin_file(path):
    """The Plugin subclasses defined in a Python file."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CommandError(f"plugin file {path} does not exist")
    name = "tdb_plugin_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    found = [v for v in vars(mod).values() if isinstance(v, type) and issubclass(v, Plugin) and v.__module__ == name]
    if not found:
        raise CommandError(f"plugin file {path} defines no subclass of tilecore.tdb.Plugin")
    return found


# ---- shared parsing -----------------------------------------------------------------------------

def split_core(args):
    """Removes a trailing ``core N`` from a list of words; returns (words, core or None)."""
    if len(args) >= 2 and args[-2] == "core":
        return args[:-2], parse_int(args[-1], "core")
    return args, None


def parse_location(tdb, text):
    """``SPACE:ADDR[+LEN]``, ``SYMBOL`` or ``SYMBOL[I]`` -> (space, addr, nbytes or None, dtype or None, core)."""
    text = text.strip()
    m = re.fullmatch(r"(\w+)\[(.+)\]", text)
    if m and m.group(1) in tdb.symbols:
        s = tdb.symbols[m.group(1)]
        i = parse_int(m.group(2), "index")
        n = int(np.prod(s.shape))
        if not 0 <= i < n:
            raise CommandError(f"index {i} is outside {s.name} ({n} elements)")
        return s.space, s.address + i * s.dtype.itemsize, s.dtype.itemsize, s.dtype, s.core
    if text in tdb.symbols:
        s = tdb.symbols[text]
        return s.space, s.address, s.nbytes, s.dtype, s.core
    m = re.fullmatch(r"(ddr|l2|l1):([^+]+)(?:\+(.+))?", text)
    if not m:
        raise CommandError(f"'{text}' is not a location (SPACE:ADDR[+LEN] with SPACE ddr, l2 or l1, or a buffer name"
                           + (f": {', '.join(tdb.symbols)}" if tdb.symbols else "") + ")")
    addr = parse_int(m.group(2), "address")
    n = parse_int(m.group(3), "length") if m.group(3) else None
    if addr < 0 or (n is not None and n <= 0):
        raise CommandError(f"bad range '{text}'")
    return m.group(1), addr, n, None, None


def parse_format(fmt):
    """``x`` format ``[COUNT[xCOUNT...]][DTYPE]`` -> (shape or None, numpy dtype name or None)."""
    m = re.fullmatch(r"(\d+(?:x\d+)*)?(i8|u8|i16|u16|i32|u32|f16|bf16|f32)?", fmt)
    if not m or not fmt:
        raise CommandError(f"bad format '/{fmt}' (COUNT[xCOUNT...] then a type: {' '.join(DTYPES)})")
    shape = tuple(int(d) for d in m.group(1).split("x")) if m.group(1) else None
    if shape is not None and 0 in shape:
        raise CommandError("a count must be >= 1")
    return shape, (DTYPES[m.group(2)] if m.group(2) else None)


def complete_words(text, words):
    return sorted(w for w in words if w.startswith(text))


# ---- breakpoints ----------------------------------------------------------------------------------

class Breakpoint:
    def __init__(self, number, spec, kind, stops, temporary=False, condition=None):
        self.number, self.spec, self.kind, self.stops = number, spec, kind, stops
        self.temporary, self.condition, self.enabled = temporary, condition, True
        self.rejected = 0  # hits whose condition was false


class BreakpointPlugin(Plugin):
    """b/break, tbreak, condition, ignore, enable, disable, delete, watch/rwatch/awatch, info b."""

    name = "breakpoints"

    def __init__(self, tdb):
        super().__init__(tdb)
        self.bps = {}
        self.by_stop = {}
        self.next_number = 1
        self.pending = []  # specs given before start: set when the engine exists

    def on_load(self):
        self.tdb.info_handlers["breakpoints"] = (self.info_breakpoints, None)
        self.tdb.info_handlers["b"] = (self.info_breakpoints, None)
        self.tdb.info_handlers["break"] = (self.info_breakpoints, None)
        self.tdb.info_handlers["watchpoints"] = (self.info_breakpoints, None)

    def on_start(self):
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

    def _create(self, kinds):
        ids = []
        for kind, a in kinds:
            ids.append(ffi.AddStop(self.tdb.engine, kind, -1 if a.get("core") is None else a["core"], a.get("op", ""),
                                   a.get("pc", 0), a.get("engine", ""), a.get("command", 0), a.get("space", ""),
                                   a.get("lo", 0), a.get("hi", 0), a.get("mode", "")))
        return ids

    def add(self, arg, temporary=False, what="break"):
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
        desc, kinds = self._kinds(" ".join(words), core)
        if not kinds:
            raise CommandError(f"{desc} has no instruction on core {core}")
        return self._register(desc, kinds, temporary, cond, "watchpoint" if kinds[0][0] == "watch" else "breakpoint")

    def _register(self, desc, kinds, temporary, cond, label):
        n = self.next_number
        self.next_number += 1
        bp = Breakpoint(n, desc, label, self._create(kinds), temporary, cond)
        bp.kind_args = kinds
        self.bps[n] = bp
        for sid in bp.stops:
            self.by_stop[sid] = bp
        self.tdb.message(f"{'Temporary ' if temporary else ''}{label.capitalize()} {n}: {desc}"
                         + (f" if {cond}" if cond else ""))
        return bp

    def do_break(self, arg):
        """b(reak) [SPEC [core N] [if CONDITION]]
        Set a breakpoint; without argument, list them. SPEC is an instruction mnemonic (dma.in, mm,
        tadd, ...), *PC (an instruction index), ENGINE#N (the N-th command, from 0, issued to din,
        dout, mm or vec), FILE:LINE or LINE (kernel source), asm:LINE (assembly listing), or
        SPACE:ADDR[+LEN] [r|w|rw] (stop when an instruction or command accesses the range)."""
        self.add(arg)

    do_b = do_break

    def do_tbreak(self, arg):
        """tbreak SPEC [core N] [if CONDITION]
        Set a temporary breakpoint, deleted when first hit."""
        self.add(arg, temporary=True, what="tbreak")

    def _watch(self, arg, mode, what):
        words, core = split_core(arg.split())
        if len(words) != 1:
            raise CommandError(f"usage: {what} LOCATION [core N] (SPACE:ADDR[+LEN], BUFFER or BUFFER[I])")
        space, addr, n, _, sym_core = parse_location(self.tdb, words[0])
        if core is None and space == "l1":
            core = sym_core
        n = n or 4
        desc = f"{words[0]} ({space}:{addr:#x}+{n}) {mode}"
        return self._register(desc, [("watch", dict(core=core, space=space, lo=addr, hi=addr + n, mode=mode))], False,
                              None, "watchpoint")

    def do_watch(self, arg):
        """watch LOCATION [core N]
        Stop after an instruction or command writes the location (SPACE:ADDR[+LEN], BUFFER, BUFFER[I])."""
        self._watch(arg, "write", "watch")

    def do_rwatch(self, arg):
        """rwatch LOCATION [core N]
        Stop after an instruction or command reads the location."""
        self._watch(arg, "read", "rwatch")

    def do_awatch(self, arg):
        """awatch LOCATION [core N]
        Stop after an instruction or command reads or writes the location."""
        self._watch(arg, "access", "awatch")

    def _numbers(self, arg, what):
        nums = []
        for part in re.split(r"[,\s]+", arg.strip()):
            if not part:
                continue
            if "-" in part[1:]:
                a, b = part.split("-", 1)
                nums.extend(range(parse_int(a, "breakpoint number"), parse_int(b, "breakpoint number") + 1))
            else:
                nums.append(parse_int(part, "breakpoint number"))
        for n in nums:
            if n not in self.bps:
                raise CommandError(f"no breakpoint number {n}")
        return nums

    def _set_enabled(self, arg, on, what):
        nums = self._numbers(arg, what) if arg.strip() else list(self.bps)
        for n in nums:
            self.bps[n].enabled = on
            for sid in self.bps[n].stops:
                ffi.SetStop(self.tdb.engine, sid, 1 if on else 0, -1)
        self.tdb.message(f"{'Enabled' if on else 'Disabled'} breakpoint(s) {', '.join(map(str, nums))}")

    def do_enable(self, arg):
        """enable [N[,N...]]
        Enable breakpoints (all without argument); a list may use commas and ranges: 1,2,5-7."""
        self._set_enabled(arg, True, "enable")

    def do_disable(self, arg):
        """disable [N[,N...]]
        Disable breakpoints (all without argument)."""
        self._set_enabled(arg, False, "disable")

    def do_delete(self, arg):
        """d(elete) [N[,N...]]
        Delete breakpoints (all without argument)."""
        nums = self._numbers(arg, "delete") if arg.strip() else list(self.bps)
        for n in nums:
            self._remove(n)
        self.tdb.message(f"Deleted breakpoint(s) {', '.join(map(str, nums))}" if nums else "No breakpoints")

    do_d = do_delete

    def _remove(self, n):
        bp = self.bps.pop(n)
        for sid in bp.stops:
            ffi.RemoveStop(self.tdb.engine, sid)
            self.by_stop.pop(sid, None)

    def do_condition(self, arg):
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

    def do_ignore(self, arg):
        """ignore N COUNT
        Pass over the next COUNT hits of breakpoint N."""
        words = arg.split()
        if len(words) != 2:
            raise CommandError("usage: ignore N COUNT")
        n = self._numbers(words[0], "ignore")[0]
        count = parse_int(words[1], "count")
        if count < 0:
            raise CommandError(f"count must be >= 0, got {count}")
        for sid in self.bps[n].stops:
            ffi.SetStop(self.tdb.engine, sid, -1, count)
        self.tdb.message(f"Will ignore next {count} crossings of breakpoint {n}.")

    def hits(self, bp):
        total = 0
        for s in ffi.Stops(self.tdb.engine):
            if s["id"] in bp.stops:
                total += s["hits"]
        return total - bp.rejected

    def info_breakpoints(self, arg):
        if not self.bps:
            self.tdb.message("No breakpoints")
            return
        self.tdb.message(f"{'Num':<4}{'Type':<12}{'Disp':<5}{'Enb':<4}{'Hits':>6}  What")
        for n, bp in self.bps.items():
            what = bp.spec + (f" if {bp.condition}" if bp.condition else "")
            self.tdb.message(f"{n:<4}{bp.kind:<12}{'del' if bp.temporary else 'keep':<5}{'y' if bp.enabled else 'n':<4}"
                             f"{self.hits(bp):>6}  {what}")

    def accept_stop(self, report):
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

    def on_stop(self, report):
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
            if self.bps[n].temporary:
                self._remove(n)

    # -- completion
    def complete_break(self, text, line, begidx, endidx):
        t = self.tdb
        words = list(mnemonics()) + [f"{e}#" for e in ("din", "dout", "mm", "vec")] + [f"{s}:" for s in SPACES]
        words += ["asm:"] + [os.path.basename(f) + ":" for f in t.target.files()]
        return complete_words(text, words)

    complete_b = complete_tbreak = complete_break

    def complete_enable(self, text, line, begidx, endidx):
        return complete_words(text, [str(n) for n in self.bps])

    complete_disable = complete_delete = complete_d = complete_condition = complete_ignore = complete_enable

    def complete_watch(self, text, line, begidx, endidx):
        return complete_words(text, list(self.tdb.symbols) + [f"{s}:" for s in SPACES])

    complete_rwatch = complete_awatch = complete_watch


# ---- display ------------------------------------------------------------------------------------

class DisplayPlugin(Plugin):
    """display EXPR / undisplay: shown at every stop."""

    name = "display"

    def __init__(self, tdb):
        super().__init__(tdb)
        self.items = {}
        self.next_number = 1

    def on_load(self):
        self.tdb.info_handlers["display"] = (self.info_display, None)

    def show(self, n, expr):
        t = self.tdb
        if expr.split()[0] in ("x", "info") or expr.startswith("x/"):
            t.message(f"{n}: {expr}")
            t.onecmd(expr)
            return
        try:
            value = t.evaluate(expr)
        except CommandError as e:
            t.message(f"{n}: {expr} = <error: {e}>")
            return
        if isinstance(value, np.generic):
            value = value.item()
        t.message(f"{n}: {expr} = {value!r}" if not isinstance(value, np.ndarray) else f"{n}: {expr} =\n{value}")

    def do_display(self, arg):
        """display [EXPR]
        Show EXPR at every stop (a Python expression with registers and buffers by name, or an
        'x ...' / 'info ...' command); without argument, show all now."""
        expr = arg.strip()
        if not expr:
            for n, e in self.items.items():
                self.show(n, e)
            return
        if not (expr.split()[0] in ("x", "info") or expr.startswith("x/")):
            try:
                compile(expr, "<display>", "eval")
            except SyntaxError as e:
                raise CommandError(f"bad expression '{expr}': {e.msg}") from None
        n = self.next_number
        self.next_number += 1
        self.items[n] = expr
        if self.tdb.started:
            self.show(n, expr)

    def do_undisplay(self, arg):
        """undisplay [N[,N...]]
        Stop showing display expressions (all without argument)."""
        nums = [parse_int(x, "display number") for x in re.split(r"[,\s]+", arg.strip()) if x] or list(self.items)
        for n in nums:
            if n not in self.items:
                raise CommandError(f"no display number {n}")
            del self.items[n]

    def info_display(self, arg):
        if not self.items:
            self.tdb.message("No display expressions")
        for n, e in self.items.items():
            self.tdb.message(f"{n}: {e}")

    def on_stop(self, report):
        if report["reason"] == "finished":
            return
        for n, e in self.items.items():
            self.show(n, e)


# ---- info, x, set ------------------------------------------------------------------------------

class InfoPlugin(Plugin):
    """info asm|reg|engines|progress|loc|src|writes|symbols|history, x, set."""

    name = "info"

    def on_load(self):
        h = self.tdb.info_handlers
        h.update({"asm": (self.info_asm, None), "reg": (self.info_reg, None), "registers": (self.info_reg, None),
                  "engines": (self.info_engines, None), "progress": (self.info_progress, None),
                  "loc": (self.info_loc, None), "src": (self.info_src, None), "writes": (self.info_writes, None),
                  "symbols": (self.info_symbols, None), "history": (self.info_history, None)})

    def on_stop(self, report):
        t = self.tdb
        if report["reason"] == "finished":
            return
        if report["reason"] == "history-start":
            t.message("reached the start of the recorded history")
        t.message(t.where(t.core))

    def do_info(self, arg):
        """i(nfo) WHAT [ARGS]
        WHAT: asm [N] (listing around the pc), reg [x|v|p] [core N], engines, progress,
        loc, src [N], writes LOCATION, symbols, history, b(reakpoints), display."""
        words = arg.split(None, 1)
        if not words:
            raise CommandError(f"usage: info {'|'.join(sorted(self.tdb.info_handlers))}")
        handler = self.tdb.info_handlers.get(words[0])
        if handler is None:
            raise CommandError(f"unknown subcommand '{words[0]}' (one of {', '.join(sorted(self.tdb.info_handlers))})")
        handler[0](words[1] if len(words) > 1 else "")

    do_i = do_info

    def complete_info(self, text, line, begidx, endidx):
        if len(line[:begidx].split()) <= 1:
            return complete_words(text, self.tdb.info_handlers)
        return complete_words(text, list(self.tdb.symbols) + [f"{s}:" for s in SPACES] + ["core"])

    complete_i = complete_info

    def info_asm(self, arg):
        t = self.tdb
        t.require_started()
        n = parse_int(arg.strip(), "count") if arg.strip() else 5
        core = t.core
        pc = t.sim.pc(core)
        for p in range(max(pc - n, 0), pc + n + 1):
            text = t.sim.instruction_at(core, p)
            if not text:
                break
            ln = t.target.listing_line(core, p)
            t.message(f"{'=>' if p == pc else '  '} {p:5d}  {text:<48s}" + (f" ; asm:{ln}" if ln else ""))

    def info_reg(self, arg):
        t = self.tdb
        t.require_started()
        words, core = split_core(arg.split())
        core = t.core if core is None else core
        if not 0 <= core < t.sim.cores:
            raise CommandError(f"core {core} does not exist")
        which = words[0] if words else "x"
        if which == "x":
            t.message(f"core {core}  pc {t.sim.pc(core)}  cycle {t.sim.cycle()}")
            for r0 in range(0, 32, 4):
                t.message("  ".join(f"x{r:<2d} {t.sim.xreg(core, r):#010x}" for r in range(r0, r0 + 4)))
        elif which == "v":
            for r in range(32):
                t.message(f"v{r:<2d} " + " ".join(f"{int(w):#010x}" for w in t.sim.vreg(core, r, "uint32")))
        elif which == "p":
            t.message("  ".join(f"p{r} {t.sim.preg(core, r):#010x}" for r in range(8)))
        else:
            raise CommandError(f"register file must be x, v or p, got '{which}'")

    def info_engines(self, arg):
        t = self.tdb
        t.require_started()
        for c in range(t.sim.cores):
            st = ffi.EngineStatus(t.engine, c)
            parts = [f"{e}: issued {st[e]['issued']} done {st[e]['completed']} queued {st[e]['queued']}"
                     for e in ("din", "dout", "mm", "vec")]
            t.message(st["state"])
            t.message("    " + "; ".join(parts))

    def info_progress(self, arg):
        t = self.tdb
        t.require_started()
        pos = t.position()
        total = t.total_instructions
        t.message(f"{pos} instructions executed" + (f" of {total} ({100 * pos // max(total, 1)}%)" if total else "")
                  + f", cycle {t.sim.cycle()}" + (", finished" if t.finished else ""))
        for c in range(t.sim.cores):
            t.message("  " + t.where(c))

    def info_loc(self, arg):
        t = self.tdb
        t.require_started()
        core = t.core
        pc = t.sim.pc(core)
        loc = t.target.location(core, pc)
        ln = t.target.listing_line(core, pc)
        t.message(t.where(core))
        if ln:
            listing = t.target.listing()
            t.message(f"  asm:{ln}: {listing[ln - 1].strip() if ln <= len(listing) else ''}")
        if loc:
            file, _, line = loc.rpartition(":")
            src = t.target.source_lines(file)
            if src and int(line) <= len(src):
                t.message(f"  {os.path.basename(file)}:{line}: {src[int(line) - 1].strip()}")

    def info_src(self, arg):
        t = self.tdb
        t.require_started()
        n = parse_int(arg.strip(), "count") if arg.strip() else 5
        loc = t.target.location(t.core, t.sim.pc(t.core))
        if loc is None:
            raise CommandError("no source line for the current instruction")
        file, _, line = loc.rpartition(":")
        line = int(line)
        src = t.target.source_lines(file)
        if src is None:
            raise CommandError(f"cannot read {file}")
        for k in range(max(line - n, 1), min(line + n, len(src)) + 1):
            t.message(f"{'->' if k == line else '  '} {k:4d}  {src[k - 1]}")

    def info_writes(self, arg):
        t = self.tdb
        t.require_started()
        words, core = split_core(arg.split())
        if len(words) != 1:
            raise CommandError("usage: info writes LOCATION [core N]")
        space, addr, _, _, sym_core = parse_location(t, words[0])
        core = core if core is not None else (sym_core or 0)
        w = ffi.LastWrite(t.engine, space, core, addr)
        if not w["found"]:
            t.message(f"no write to {space}:{addr:#x} recorded since the start of the history")
            return
        if w["agent"] == "host":
            t.message(f"{space}:{addr:#x} was last written by the debugger ('set') after {w['position']} instructions")
            return
        inst = t.sim.instruction_at(w["core"], w["pc"])
        loc = t.target.location(w["core"], w["pc"])
        unit = "front end" if w["agent"] == "sc" else f"{w['agent']} engine"
        t.message(f"{space}:{addr:#x} was last written by core {w['core']} pc {w['pc']} `{inst}` ({unit}), "
                  f"range [{w['lo']:#x}, {w['hi']:#x}), after {w['position']} instructions" + (f", at {loc}" if loc else ""))

    def info_symbols(self, arg):
        t = self.tdb
        if not t.symbols:
            t.message("No buffers")
        for s in t.symbols.values():
            t.message(repr(s))

    def info_history(self, arg):
        t = self.tdb
        t.require_started()
        h = ffi.History(t.engine)
        t.message(f"recording {'on' if h['recording'] else 'off'}: from instruction {h['start']}, {h['snapshots']} "
                  f"snapshots, {h['writes']} writes logged ({h['undo_bytes']} bytes to undo)")

    # -- x
    def do_x(self, arg):
        """x[/FMT] LOCATION [core N]
        Examine memory as a typed array. FMT is COUNT[xCOUNT...] then a type (i8 u8 i16 u16 i32 u32
        f16 bf16 f32), e.g. x/16i32 ddr:0x10000, x/4x8f32 l1:0x100 core 1, x C, x/4 C, x C[3].
        LOCATION may also be written 'SPACE ADDR'. Default: the buffer's type and shape, or 16 u8."""
        t = self.tdb
        t.require_started()
        fmt = ""
        arg = arg.strip()
        if arg.startswith("/"):
            fmt, _, arg = arg[1:].partition(" ")
        words, core = split_core(arg.split())
        if len(words) == 2 and words[0] in SPACES:
            words = [f"{words[0]}:{words[1]}"]
        if len(words) != 1:
            raise CommandError("usage: x[/FMT] LOCATION [core N]")
        shape, dtype = parse_format(fmt) if fmt else (None, None)
        space, addr, nbytes, sym_dtype, sym_core = parse_location(t, words[0])
        core = core if core is not None else (sym_core if sym_core is not None else t.core)
        dtype = dtype or (sym_dtype.name if sym_dtype is not None else "uint8")
        itemsize = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
        if shape is None:
            if words[0] in t.symbols and sym_dtype is not None and sym_dtype.name == dtype:
                shape = t.symbols[words[0]].shape
            else:
                shape = (max((nbytes or 16) // itemsize, 1),)
        raw = t.sim.read(space, addr, int(np.prod(shape)) * itemsize, "uint8", core=core)
        if dtype == "bfloat16":
            arr = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
        else:
            arr = raw.view(dtype).reshape(shape)
        t.message(f"{space}:{addr:#x}" + (f" core {core}" if space == "l1" else "") + f" {dtype}{list(shape)}:")
        with np.printoptions(threshold=4096, linewidth=100):
            t.message(str(arr))
        t.namespace["_"] = arr

    def complete_x(self, text, line, begidx, endidx):
        return complete_words(text, list(self.tdb.symbols) + [f"{s}:" for s in SPACES] + ["core"])

    # -- set
    def do_set(self, arg):
        """set xN = VALUE [core N] | set BUFFER[I] = VALUE | set/TYPE SPACE:ADDR = V[, V...] [core N]
        Change a register or memory (VALUE is a Python expression). Memory writes are logged, so
        reverse execution undoes them."""
        t = self.tdb
        t.require_started()
        arg = arg.strip()
        dtype = None
        if arg.startswith("/"):
            fmt, _, arg = arg[1:].partition(" ")
            _, dtype = parse_format(fmt)
            if dtype is None:
                raise CommandError(f"set/{fmt}: give a type ({' '.join(DTYPES)})")
        if "=" not in arg:
            raise CommandError("usage: set xN = VALUE | set BUFFER[I] = VALUE | set/TYPE SPACE:ADDR = V, ...")
        lhs, _, rhs = arg.partition("=")
        rhs_words, core = split_core(rhs.split())
        rhs = " ".join(rhs_words)
        lhs = lhs.strip()
        core = t.core if core is None else core
        value = t.evaluate(rhs) if rhs else None
        if value is None:
            raise CommandError("no value after '='")
        m = re.fullmatch(r"x(\d+)", lhs)
        if m:
            r = int(m.group(1))
            if not 0 < r < 32:
                raise CommandError(f"x{r}: registers x1..x31 can be set (x0 is always 0)")
            t.sim.set_xreg(core, r, int(value) & 0xFFFFFFFF)
            t.message(f"x{r} = {int(value) & 0xFFFFFFFF:#x} (core {core})")
            return
        space, addr, nbytes, sym_dtype, sym_core = parse_location(t, lhs)
        dtype = dtype or (sym_dtype.name if sym_dtype is not None else None)
        if dtype is None:
            raise CommandError(f"give the type to write: set/TYPE {lhs} = ...")
        if dtype == "bfloat16":
            f = np.asarray(value, np.float32).reshape(-1)
            data = (f.view(np.uint32) >> 16).astype(np.uint16)
        else:
            data = np.asarray(value).astype(dtype).reshape(-1)
        if nbytes is not None and data.nbytes < nbytes and data.size == 1:
            data = np.repeat(data, nbytes // data.itemsize)
        if nbytes is not None and data.nbytes > nbytes:
            raise CommandError(f"{data.nbytes} bytes do not fit {lhs} ({nbytes} bytes)")
        mem_core = sym_core if sym_core is not None else core
        ffi.HostWrite(t.engine, space, mem_core, addr, np.ascontiguousarray(data).view(np.uint8))
        t.message(f"wrote {data.nbytes} bytes at {space}:{addr:#x}")

    complete_set = complete_x


__all__ = ["Plugin", "BreakpointPlugin", "DisplayPlugin", "InfoPlugin", "load_plugin_file"]
