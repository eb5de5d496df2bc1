"""tdb, the TC1 debugger (docs/tdb.md).

    dbg = tilecore.tdb.Debugger("kernel.tcm", inputs={"A": a, "B": b, "C": c})
    dbg.run_commands("b tadd; run; x C; next 10; reverse-next 10; quit")

The core (:class:`Debugger`) controls execution; breakpoints, display and the
info commands are :class:`Plugin` subclasses. The stop conditions and the history
for reverse execution live in C++ (``debug.*``, include/tilecore/debug/engine.h).
"""
from .core import CommandError, Debugger, mnemonics
from .plugins import BreakpointPlugin, DisplayPlugin, InfoPlugin, Plugin
from .target import AssemblyTarget, KernelModuleTarget, Symbol, Target, TargetError, open_target

__all__ = ["AssemblyTarget", "BreakpointPlugin", "CommandError", "Debugger", "DisplayPlugin", "InfoPlugin",
           "KernelModuleTarget", "Plugin", "Symbol", "Target", "TargetError", "mnemonics", "open_target"]
