"""tdb, the TC1 debugger (docs/tdb.md).

    dbg = tilecore.tdb.Debugger("kernel.tcm", inputs={"A": a, "B": b, "C": c})
    dbg.run_commands("b tadd; run; x C; next 10; reverse-next 10; quit")
    dbg = tilecore.tdb.Debugger("model.tcx", inputs={"x": x}, ref_data="ref.npz")
    dbg.run_commands("b op:Conv; run; info loc; p conv_out; continue")

The core (:class:`Debugger`) controls execution; breakpoints, display, the
info commands and data-check are :class:`Plugin` subclasses. The stop conditions and the history
for reverse execution live in C++ (``debug.*``, include/tilecore/debug/engine.h).
"""

from __future__ import annotations

from .core import CommandError, Debugger, mnemonics
from .datacheck import DataCheckPlugin
from .model import ModelTarget
from .plugins import BreakpointPlugin, DisplayPlugin, InfoPlugin, Plugin
from .target import AssemblyTarget, KernelModuleTarget, Symbol, Target, TargetError, open_target

__all__ = ["AssemblyTarget", "BreakpointPlugin", "CommandError", "DataCheckPlugin", "Debugger", "DisplayPlugin",
           "InfoPlugin", "KernelModuleTarget", "ModelTarget", "Plugin", "Symbol", "Target", "TargetError", "mnemonics", "open_target"]
