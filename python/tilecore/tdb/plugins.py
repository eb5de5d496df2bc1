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

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from .core import CommandError, parse_int

if TYPE_CHECKING:
    from .core import Debugger
    from .model import Member, Node
    from .target import Symbol

SPACES = ("ddr", "l2", "l1")
DTYPES = {"i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16", "i32": "int32", "u32": "uint32",
          "f16": "float16", "f32": "float32", "bf16": "bfloat16"}


class Plugin:
    """Base class of tdb plugins. Override any callback; all default to doing nothing."""

    name = "plugin"
    #: True: tdb calls before_step/after_step around every instruction (slow: one
    #: Python call per instruction); False: the simulator runs freely between stops.
    wants_steps = False

    def __init__(self, tdb: Debugger) -> None:
        self.tdb = tdb

    def on_load(self) -> None:
        """The target is loaded and every plugin registered."""

    def on_start(self) -> None:
        """The program was (re)loaded and its inputs written (start, run)."""

    def before_step(self) -> None:
        """Before each instruction (only with wants_steps)."""

    def after_step(self) -> None:
        """After each instruction (only with wants_steps)."""

    def on_node_load(self, node: Node) -> None:
        """Models: an npu node's kernel was loaded (before its first instruction)."""

    def before_node(self, node: Node) -> list[str] | None:
        """Models: the node is about to start; return messages to stop before it."""
        return None

    def after_node(self, node: Node) -> list[str] | None:
        """Models: the node has run (its outputs are in memory); return messages to stop."""
        return None

    def member_events(self, node: Node) -> set[tuple[str, int]]:
        """Models: which boundaries of the layer group members of ``node`` (an npu node
        whose ``group`` is recorded) the plugin needs: ("start", k) and ("end", k) for
        member k. The run stops inside the group only at those (docs/tdb.md)."""
        return set()

    def before_member(self, node: Node, member: Member) -> list[str] | None:
        """Models: a member of ``node``'s layer group starts (a core is before its first
        instruction), if the plugin asked for its ("start", k); return messages to stop."""
        return None

    def after_member(self, node: Node, member: Member) -> list[str] | None:
        """Models: a member is complete (every core passed its code; its outputs are at their
        places), if the plugin asked for its ("end", k); return messages to stop."""
        return None

    def accept_stop(self, report: dict[str, Any]) -> bool:
        """Return False to ignore this breakpoint stop and continue (conditions)."""
        return True

    def on_stop(self, report: dict[str, Any]) -> None:
        """Execution stopped; ``report`` has reason, executed and hits."""

    def on_end(self) -> None:
        """The program finished."""

    def on_quit(self) -> None:
        """The debugger is leaving."""


def load_plugin_file(path: str | os.PathLike[str]) -> list[type[Plugin]]:
    """The Plugin subclasses defined in a Python file (a regular ``.py`` file: a folder, a
    device or another kind of file is refused by name before anything of it runs)."""
    import sys
    import types

    from ..runtime import files

    path = os.fspath(path)
    if not os.path.exists(path):
        raise CommandError(f"plugin file {path} does not exist")
    if os.path.isdir(path):
        raise CommandError(f"plugin file {path} is a folder (give the Python files in it: --plugins {path}/NAME.py)")
    if not path.endswith(".py"):
        raise CommandError(f"plugin file {path} is not a Python file (.py)")
    try:
        source = files.read_text(path)
    except (OSError, ValueError) as e:
        raise CommandError(f"plugin file {e}") from None
    name = "tdb_plugin_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    try:
        code = compile(source, path, "exec")
    except SyntaxError as e:
        raise CommandError(f"plugin file {path}, line {e.lineno}: {e.msg}") from None
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod  # (dataclasses and pickling look a class's module up)
    try:
        exec(code, mod.__dict__)  # noqa: S102  (the user's own plugin)
    except Exception as e:  # noqa: BLE001  (whatever the file raises while it loads)
        sys.modules.pop(name, None)
        raise CommandError(f"plugin file {path}: {type(e).__name__}: {e}") from None
    found = [v for v in vars(mod).values() if isinstance(v, type) and issubclass(v, Plugin) and v.__module__ == name]
    if not found:
        raise CommandError(f"plugin file {path} defines no subclass of tilecore.tdb.Plugin")
    return found


# ---- shared parsing -----------------------------------------------------------------------------

def split_core(args: list[str]) -> tuple[list[str], int | None]:
    """Removes a trailing ``core N`` from a list of words; returns (words, core or None)."""
    if len(args) >= 2 and args[-2] == "core":
        return args[:-2], parse_int(args[-1], "core")
    return args, None


def parse_location(tdb: Debugger, text: str) -> tuple[str, int, int | None, np.dtype | None, Symbol | None]:
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


def parse_format(fmt: str) -> tuple[tuple[int, ...] | None, str | None]:
    """``x`` format ``[COUNT[xCOUNT...]][DTYPE]`` -> (shape or None, numpy dtype name or None)."""
    m = re.fullmatch(r"(\d+(?:x\d+)*)?(i8|u8|i16|u16|i32|u32|f16|bf16|f32)?", fmt)
    if not m or not fmt:
        raise CommandError(f"bad format '/{fmt}' (COUNT[xCOUNT...] then a type: {' '.join(DTYPES)})")
    shape = tuple(int(d) for d in m.group(1).split("x")) if m.group(1) else None
    if shape is not None and 0 in shape:
        raise CommandError("a count must be >= 1")
    return shape, (DTYPES[m.group(2)] if m.group(2) else None)


def complete_words(text: str, words: Iterable[str]) -> list[str]:
    return sorted(w for w in words if w.startswith(text))


# The built-in plugins (imported last: they build on the helpers above).
from .breakpoints import BreakpointPlugin  # noqa: E402
from .inspection import DisplayPlugin, InfoPlugin  # noqa: E402

__all__ = ["Plugin", "BreakpointPlugin", "DisplayPlugin", "InfoPlugin", "load_plugin_file"]
