"""The display and info plugins: display/undisplay, info asm|reg|engines|progress|
loc|src|ir|writes|symbols|history, x (examine memory as a typed array), p (a graph
value of a model) and set."""

from __future__ import annotations

import math
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from .core import CommandError, ffi, parse_int
from .plugins import SPACES, DTYPES, Plugin, complete_words, parse_format, parse_location, split_core

if TYPE_CHECKING:
    from .core import Debugger

# What one x shows at most: a memory dump of more is not read by anyone (and a count of
# 10^11 would allocate without bound before printing).
MAX_EXAMINE_BYTES = 64 << 20


def summarize(arr: np.ndarray, full: bool = False) -> str:
    """A tensor as text: all of it when small (or ``full``), else its statistics and first elements."""
    if full or arr.size <= 64:
        with np.printoptions(threshold=max(arr.size, 1000), linewidth=100):
            return str(arr)
    flat = arr.reshape(-1)
    head = np.array2string(flat[:8], separator=", ", max_line_width=1000)[:-1] + ", ...]"
    if arr.dtype.kind == "f":
        finite = flat[np.isfinite(flat)]
        nan, inf = int(np.isnan(flat).sum()), int(np.isinf(flat).sum())
        stats = (f"min {finite.min():.6g} max {finite.max():.6g} mean {finite.mean():.6g}" if finite.size else "no finite")
        stats += (f", {nan} NaN" if nan else "") + (f", {inf} Inf" if inf else "")
    else:
        stats = f"min {flat.min()} max {flat.max()}"
    return f"{arr.size} elements, {stats}\nflat: {head}"


def fit_dtype(value: Any, dtype: str, where: str) -> np.ndarray:
    """``value`` (a number or an array) as a flat array of ``dtype`` (bfloat16: as float32),
    or CommandError naming ``where`` when a value does not fit: a fraction or a number out of
    range for an integer type, a finite number that would become infinite in a float type."""
    target = np.dtype("float32" if dtype == "bfloat16" else dtype)
    a = np.asarray(value)
    if a.dtype.kind not in "biuf":
        raise CommandError(f"{where} = {value!r}: not a number (or an array of numbers) for {dtype}")
    a = a.reshape(-1)
    if target.kind in "iub":
        if a.dtype.kind == "f":
            bad = ~np.isfinite(a) | (a != np.trunc(a))
            if bad.any():
                raise CommandError(f"{where} = {a[bad][0].item()!r}: {dtype} holds integers only")
        info = np.iinfo(target) if target.kind != "b" else None
        lo, hi = (info.min, info.max) if info is not None else (0, 1)
        wide = a.astype(np.float64) if a.dtype.kind == "f" else a.astype(object)
        bad = (wide < lo) | (wide > hi)
        if np.asarray(bad, bool).any():
            raise CommandError(f"{where} = {a[np.asarray(bad, bool)][0].item()!r}: outside {dtype}'s range "
                               f"[{lo}, {hi}]")
        return a.astype(target)
    with np.errstate(over="ignore", invalid="ignore"):
        out = a.astype(target)
    bad = np.isinf(out) & np.isfinite(a.astype(np.float64))
    if bad.any():
        raise CommandError(f"{where} = {a[bad][0].item()!r}: larger than {dtype} holds (its largest finite value is "
                           f"{np.finfo(target).max:g})")
    return out


# constants `info loc` names before it counts the rest
INFO_LOC_CONSTANTS = 4

class DisplayPlugin(Plugin):
    """display EXPR / undisplay: shown at every stop."""

    name = "display"

    def __init__(self, tdb: Debugger) -> None:
        super().__init__(tdb)
        self.items = {}
        self.next_number = 1

    def on_load(self) -> None:
        self.tdb.info_handlers["display"] = (self.info_display, None)

    def show(self, n: int, expr: str) -> None:
        t = self.tdb
        if expr.split()[0] in ("x", "info", "p", "print") or expr.startswith("x/"):
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

    def do_display(self, arg: str) -> bool | None:
        """display [EXPR]
        Show EXPR at every stop (a Python expression with registers and buffers by name, or an
        'x ...' / 'info ...' / 'p ...' command); without argument, show all now."""
        expr = arg.strip()
        if not expr:
            for n, e in self.items.items():
                self.show(n, e)
            return
        if not (expr.split()[0] in ("x", "info", "p", "print") or expr.startswith("x/")):
            try:
                compile(expr, "<display>", "eval")
            except SyntaxError as e:
                raise CommandError(f"bad expression '{expr}': {e.msg}") from None
        n = self.next_number
        self.next_number += 1
        self.items[n] = expr
        if self.tdb.started:
            self.show(n, expr)

    def do_undisplay(self, arg: str) -> bool | None:
        """undisplay [N[,N...]]
        Stop showing display expressions (all without argument)."""
        nums = [parse_int(x, "display number") for x in re.split(r"[,\s]+", arg.strip()) if x] or list(self.items)
        for n in nums:
            if n not in self.items:
                raise CommandError(f"no display number {n}")
            del self.items[n]

    def info_display(self, arg: str) -> None:
        if not self.items:
            self.tdb.message("No display expressions")
        for n, e in self.items.items():
            self.tdb.message(f"{n}: {e}")

    def on_stop(self, report: dict[str, Any]) -> None:
        if report["reason"] == "finished":
            return
        for n, e in self.items.items():
            self.show(n, e)


# ---- info, x, set ------------------------------------------------------------------------------

class InfoPlugin(Plugin):
    """info asm|reg|engines|progress|loc|src|writes|symbols|history, x, set."""

    name = "info"

    def on_load(self) -> None:
        h = self.tdb.info_handlers
        h.update({"asm": (self.info_asm, None), "reg": (self.info_reg, None), "registers": (self.info_reg, None),
                  "engines": (self.info_engines, None), "progress": (self.info_progress, None),
                  "loc": (self.info_loc, None), "src": (self.info_src, None), "writes": (self.info_writes, None),
                  "symbols": (self.info_symbols, None), "history": (self.info_history, None),
                  "ir": (self.info_ir, None), "nodes": (self.info_ir, None)})

    def on_stop(self, report: dict[str, Any]) -> None:
        t = self.tdb
        if report["reason"] == "finished":
            return
        if report["reason"] == "history-start":
            t.message("reached the start of the recorded history")
        t.message(t.where(t.core))

    def do_info(self, arg: str) -> bool | None:
        """i(nfo) WHAT [ARGS]
        WHAT: asm [N] (listing around the pc), reg [x|v|p] [core N], engines, progress,
        loc, src [N], ir [N] (models: the graph nodes around the current one), writes LOCATION,
        symbols, history, b(reakpoints), display, check (data-check results)."""
        words = arg.split(None, 1)
        if not words:
            raise CommandError(f"usage: info {'|'.join(sorted(self.tdb.info_handlers))}")
        handler = self.tdb.info_handlers.get(words[0])
        if handler is None:
            raise CommandError(f"unknown subcommand '{words[0]}' (one of {', '.join(sorted(self.tdb.info_handlers))})")
        handler[0](words[1] if len(words) > 1 else "")

    do_i = do_info

    def complete_info(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        if len(line[:begidx].split()) <= 1:
            return complete_words(text, self.tdb.info_handlers)
        return complete_words(text, list(self.tdb.symbols) + [f"{s}:" for s in SPACES] + ["core"])

    complete_i = complete_info

    def info_asm(self, arg: str) -> None:
        t = self.tdb
        t.require_started()
        if t.model is not None and (t.model.node() is None or t.model.node().where != "npu"):
            raise CommandError(f"{t.where()}: no TC1 instructions here")
        n = parse_int(arg.strip(), "count") if arg.strip() else 5
        core = t.core
        pc = t.sim.pc(core)
        for p in range(max(pc - n, 0), pc + n + 1):
            text = t.sim.instruction_at(core, p)
            if not text:
                break
            ln = t.target.listing_line(core, p)
            t.message(f"{'=>' if p == pc else '  '} {p:5d}  {text:<48s}" + (f" ; asm:{ln}" if ln else ""))

    def info_reg(self, arg: str) -> None:
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

    def info_engines(self, arg: str) -> None:
        t = self.tdb
        t.require_started()
        for c in range(t.sim.cores):
            st = ffi.EngineStatus(t.engine, c)
            parts = [f"{e}: issued {st[e]['issued']} done {st[e]['completed']} queued {st[e]['queued']}"
                     for e in ("din", "dout", "mm", "vec")]
            t.message(st["state"])
            t.message("    " + "; ".join(parts))

    def info_progress(self, arg: str) -> None:
        t = self.tdb
        t.require_started()
        if t.model is not None:
            m, node = t.model, t.model.node()
            total = t.base_position + (t.position() if node is not None and node.where == "npu" else 0)
            done = node.index if node is not None else len(m.nodes)
            t.message(f"node {min(done + 1, len(m.nodes))} of {len(m.nodes)} ({done} done), {total} instructions "
                      "executed" + (f" of {t.total_instructions} ({100 * total // max(t.total_instructions, 1)}%)"
                                    if t.total_instructions else "") + (", finished" if t.finished else ""))
            t.message("  " + t.where())
            return
        pos = t.position()
        total = t.total_instructions
        t.message(f"{pos} instructions executed" + (f" of {total} ({100 * pos // max(total, 1)}%)" if total else "")
                  + f", cycle {t.sim.cycle()}" + (", finished" if t.finished else ""))
        for c in range(t.sim.cores):
            t.message("  " + t.where(c))

    def info_loc(self, arg: str) -> None:
        t = self.tdb
        t.require_started()
        if t.model is not None:
            node = t.model.node()
            if node is None:
                t.message("the model has finished")
                return
            t.message(f"node {node.index + 1} of {len(t.model.nodes)}: `{node.name}`, ONNX node `{node.onnx_name}`, "
                      f"op type {node.op_type}, on the {node.where}")
            for label, names in (("inputs", node.inputs), ("outputs", node.outputs)):
                parts, constants = [], []
                for n in names:
                    v = t.model.values.get(n)
                    text = f"{n}: {v.dtype}{list(v.shape)}" if v is not None else (n or "<omitted>")
                    # a layer group reads its members' weights: past a few, only counted
                    is_const = v is not None and v.buffer in t.model.constant_buffers
                    (constants if is_const else parts).append(text)
                shown = constants if len(constants) <= INFO_LOC_CONSTANTS else constants[:INFO_LOC_CONSTANTS] + [
                    f"... and {len(constants) - INFO_LOC_CONSTANTS} more constants (`info symbols` lists them)"]
                t.message(f"  {label}: {', '.join(parts + shown) or '-'}")
            if node.where != "npu":
                return
            g = t.member_at()
            if g is not None:
                places = ", ".join(f"{p['value']} at l2:{p['offset']:#x}" if p["space"] == "l2" else
                                   f"{p['value']} in the DDR" for p in g.places)
                t.message(f"  member {g.index + 1} of {len(node.group)} of the layer group: `{g.name}`, op type "
                          f"{g.op}; reads {', '.join(i for i in g.inputs if i) or '-'}; writes {places}")
            t.message(f"  kernel `{node.step['function']}`, {t.position()} instructions into it")
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

    def info_ir(self, arg: str) -> None:
        """Models: the graph nodes around the current one (where each runs, values read and written)."""
        t = self.tdb
        if t.model is None:
            return self.info_src(arg)
        n = parse_int(arg.strip(), "count") if arg.strip() else 5
        m = t.model
        cur = m.current
        for node in m.nodes[max(cur - n, 0):cur + n + 1]:
            t.message(f"{'=>' if node.index == cur else '  '} {node.index + 1:4d}  {node.where:<4} {node.op_type:<12} "
                      f"{node.onnx_name}: {', '.join(node.inputs)} -> {', '.join(node.outputs)}")
        if cur >= len(m.nodes):
            t.message("=> (finished)")

    def info_src(self, arg: str) -> None:
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

    def info_writes(self, arg: str) -> None:
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

    def info_symbols(self, arg: str) -> None:
        t = self.tdb
        if not t.symbols:
            t.message("No buffers")
        for s in t.symbols.values():
            t.message(repr(s))

    def info_history(self, arg: str) -> None:
        t = self.tdb
        t.require_started()
        h = ffi.History(t.engine)
        t.message(f"recording {'on' if h['recording'] else 'off'}: from instruction {h['start']}, {h['snapshots']} "
                  f"snapshots, {h['writes']} writes logged ({h['undo_bytes']} bytes to undo)")

    # -- x
    def do_x(self, arg: str) -> bool | None:
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
        count = math.prod(shape)
        if count * itemsize > MAX_EXAMINE_BYTES:
            raise CommandError(f"{'x/' + fmt if fmt else 'x'} {words[0]}: {count} elements of {dtype} "
                               f"({count * itemsize} bytes); x shows at most {MAX_EXAMINE_BYTES} bytes at once "
                               "(give a smaller COUNT, or examine it in parts)")
        raw = t.sim.read(space, addr, count * itemsize, "uint8", core=core)
        if dtype == "bfloat16":
            arr = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
        else:
            arr = raw.view(dtype).reshape(shape)
        t.message(f"{space}:{addr:#x}" + (f" core {core}" if space == "l1" else "") + f" {dtype}{list(shape)}:")
        with np.printoptions(threshold=4096, linewidth=100):
            t.message(str(arr))
        t.namespace["_"] = arr

    def complete_x(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        names = list(self.tdb.model.values) if self.tdb.model is not None else list(self.tdb.symbols)
        return complete_words(text, names + [f"{s}:" for s in SPACES] + ["core"])

    # -- p (graph values)
    def do_print(self, arg: str) -> bool | None:
        """p(rint)[/full] VALUE | p(rint) EXPR
        Print a graph value of a model (ONNX value name) as the typed tensor the compiler laid out,
        saying where it lives and whether it is produced yet (large tensors: their statistics and
        first elements, all of it with /full); otherwise evaluate a Python EXPR."""
        t = self.tdb
        t.require_started()
        name = arg.strip()
        full = name.startswith("/full ")
        if full:
            name = name[6:].strip()
        elif name.startswith("/") and (t.model is None or name not in t.model.values):  # (ONNX names may be /a/b)
            fmt = name.split()[0]
            raise CommandError(f"unknown format {fmt} (print takes /full: all of a value; x/FMT VALUE shows its "
                               "bytes as another type)")
        if not name:
            raise CommandError("usage: p[/full] VALUE | p EXPR")
        m = t.model
        if m is not None and name not in m.values and name in m.member_outputs:
            return self._print_member_output(name, full)
        if m is None or name not in m.values:
            value = t.evaluate(name)
            with np.printoptions(threshold=4096, linewidth=100):
                t.message(f"{name} = {value!r}" if not isinstance(value, np.ndarray) else f"{name} =\n{value}")
            return
        v = m.values[name]
        arr = t.sim.read("ddr", m.value_address(v), v.shape, v.dtype)
        if v.producer is None:
            state = "a constant" if v.buffer in m.constant_buffers else "a model input"
        else:
            prod = m.nodes[v.producer]
            if m.current <= v.producer:
                state = f"NOT produced yet (node `{prod.onnx_name}` has not run: the bytes are stale)"
            else:
                state = f"produced by node {prod.index + 1} `{prod.onnx_name}` ({prod.op_type})"
                later = m.clobbered_by(v)
                if later is not None and later.index < m.current:
                    state += f"; its bytes were reused by node {later.index + 1} `{later.onnx_name}` since (stale)"
        t.message(f"`{name}`: {v.dtype}{list(v.shape)} at ddr:{m.value_address(v):#x}, {state}")
        t.message(summarize(arr, full))
        t.namespace["_"] = arr

    def _print_member_output(self, name: str, full: bool) -> None:
        """A layer group's L2 intermediate: from its place, saying whether the member that
        writes it is complete and whether the place still holds it (until the last member
        reading it is complete)."""
        t = self.tdb
        m = t.model
        index, k, place = m.member_outputs[name]
        node = m.nodes[index]
        g = node.group[k]
        readers = [h.index for h in node.group if name in h.inputs]
        last = max(readers, default=k)
        arr = m.read_value(t.sim, name)
        who = f"member {g.describe()} of layer group `{node.name}`"
        if m.current < index or (m.current == index and not t.members_complete[k]):
            state = f"NOT produced yet ({who} is not complete: the bytes are stale)"
        elif m.current > index:
            state = f"produced by {who}, which has finished: L2 may have held other data since (stale)"
        elif t.members_complete[last] and last != k:
            state = (f"produced by {who}; its last reader `{node.group[last].name}` is complete, so its place may "
                     "hold another intermediate since (stale)")
        else:
            state = f"produced by {who}, in its L2 place"
        t.message(f"`{name}`: {arr.dtype}{list(arr.shape)} at l2:{place['offset']:#x}, {state}")
        t.message(summarize(arr, full))
        t.namespace["_"] = arr

    do_p = do_print

    def complete_print(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        m = self.tdb.model
        return complete_words(text, list(m.values) + list(m.member_outputs) if m is not None
                              else list(self.tdb.symbols))

    complete_p = complete_print

    # -- set
    def do_set(self, arg: str) -> bool | None:
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
            word = fit_dtype(value, "int64", lhs).reshape(-1)
            if word.size != 1 or not -(1 << 31) <= int(word[0]) < (1 << 32):
                raise CommandError(f"x{r} = {rhs}: a register holds one 32-bit word (-2^31 .. 2^32-1)")
            t.sim.set_xreg(core, r, int(word[0]) & 0xFFFFFFFF)
            t.message(f"x{r} = {int(word[0]) & 0xFFFFFFFF:#x} (core {core})")
            return
        space, addr, nbytes, sym_dtype, sym_core = parse_location(t, lhs)
        dtype = dtype or (sym_dtype.name if sym_dtype is not None else None)
        if dtype is None:
            raise CommandError(f"give the type to write: set/TYPE {lhs} = ...")
        data = fit_dtype(value, dtype, lhs)
        if dtype == "bfloat16":
            data = (data.view(np.uint32) >> 16).astype(np.uint16)
        if nbytes is not None and data.nbytes < nbytes and data.size == 1:
            data = np.repeat(data, nbytes // data.itemsize)
        if nbytes is not None and data.nbytes > nbytes:
            raise CommandError(f"{data.nbytes} bytes do not fit {lhs} ({nbytes} bytes)")
        mem_core = sym_core if sym_core is not None else core
        ffi.HostWrite(t.engine, space, mem_core, addr, np.ascontiguousarray(data).view(np.uint8))
        t.message(f"wrote {data.nbytes} bytes at {space}:{addr:#x}")

    complete_set = complete_x

