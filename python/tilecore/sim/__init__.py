"""The TC1 simulator from Python.

    sim = tilecore.sim.Simulator(target="npu -cores=4", mode="functional+timing")
    sim.load(tilecore.arch.assemble(text))
    sim.write("ddr", 0x1000, a)                  # a numpy array (any dtype), copied in
    sim.run()                                    # raises SimError on any fault
    c = sim.read("ddr", 0x2000, (64, 64), "int32")
    print(sim.stats()["cycles"], sim.stats()["mac_utilisation"])
    sim.trace("trace.json")                      # chrome://tracing or ui.perfetto.dev

Modes: ``"functional+timing"`` (default), ``"functional"`` (data only),
``"timing"`` (cycles only) and ``"hazard"`` (also reports unsynchronised accesses,
:meth:`Simulator.hazards`). Memory spaces are ``"ddr"``, ``"l2"`` and ``"l1"``
(``core=`` selects the L1). See docs/tc1.md.
"""

from __future__ import annotations

import json
import numbers
import operator
import re
from typing import TYPE_CHECKING, Any

from ..ffi._base import _ffi_core
from ..arch import Program
from ..ffi.error import TilecoreError, register_error
from ..ffi.object import Object, register_object

if TYPE_CHECKING:
    import os

    import numpy as np
    import numpy.typing as npt


class _Api:
    """`sim.*` global functions, looked up once on first use."""

    def __getattr__(self, name):
        func = _ffi_core._get_global_func("sim." + name)
        if func is None:
            raise AttributeError(f"the tilecore library does not register 'sim.{name}'")
        setattr(self, name, func)
        return func


_ffi = _Api()

_FAULT_RE = re.compile(r"^core (\d+), pc (-?\d+)(?:, line (\d+))?(?: \(`(.*?)`\))?: (.*)$", re.S)


@register_error("SimError")
class SimError(TilecoreError, RuntimeError):
    """A fault of a simulated program (or a misuse of the simulator).

    Attributes: ``fault`` (``"IllegalInstruction"``, ``"MemoryFault"``,
    ``"BadDescriptor"``, ``"PcOutOfRange"``, ``"Deadlock"``, ``"Budget"``,
    ``"Usage"``), ``core`` (-1 when not tied to one core), ``pc``, ``line`` (assembly
    source line, 0 if unknown), ``instruction`` (its text) and ``reason``.
    """

    def __init__(self, message: str = "", *args: Any) -> None:
        super().__init__(message, *args)
        self.fault, self.core, self.pc, self.line, self.instruction, self.reason = "", -1, 0, 0, "", message
        last = None
        try:
            last = _ffi.LastFault()
        except Exception:  # noqa: BLE001  (a library without the sim layer)
            last = None
        if last is not None and last["message"] == message:
            self.fault = last["kind"]
            self.core, self.pc, self.line = last["core"], last["pc"], last["line"]
            self.instruction, self.reason = last["instruction"], last["reason"]
            return
        m = _FAULT_RE.match(message)
        if m:
            self.core, self.pc = int(m.group(1)), int(m.group(2))
            self.line = int(m.group(3) or 0)
            self.instruction, self.reason = m.group(4) or "", m.group(5)


@register_object("sim.Simulator")
class _SimulatorHandle(Object):
    __slots__ = ()


_MODES = ("functional+timing", "functional", "timing", "hazard")


def _space(space):
    if isinstance(space, str):
        return space
    raise TypeError(f"memory space must be 'ddr', 'l2' or 'l1', got {space!r}")



def _int_arg(what, v):
    """An integer argument; a float (1.9) is refused rather than truncated."""
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"Simulator: {what} must be an int, got {type(v).__name__} {v!r}") from None

class Simulator:
    """A TC1 cluster: 1..16 cores with their memories, engines and clocks.

    :param target: a target string, e.g. ``"npu -cores=4 -ddr=512MiB"``.
    :param mode: ``"functional+timing"`` (default), ``"functional"``, ``"timing"``
        or ``"hazard"``; overrides a ``-mode=`` in ``target``.
    :param trace: record tile-command events for :meth:`trace`.
    """

    def __init__(self, target: Any = "npu", mode: str | None = None, trace: bool = False) -> None:
        if mode is not None and mode not in _MODES:
            raise ValueError(f"unknown simulation mode {mode!r} (one of {', '.join(_MODES)})")
        self._h = _ffi.Create(str(target), mode or "", bool(trace))
        self._program = None

    @classmethod
    def _from_handle(cls, handle):
        self = cls.__new__(cls)
        self._h = handle
        self._program = None
        return self

    @property
    def handle(self) -> Object:
        """The underlying ``sim.Simulator`` FFI object."""
        return self._h

    @property
    def config(self) -> dict[str, Any]:
        """A dict: cores, mode, ddr_bytes, l2_bytes, l1_bytes, queue_depth, trace."""
        return dict(_ffi.Config(self._h).items())

    @property
    def cores(self) -> int:
        return self.config["cores"]

    @property
    def program(self) -> Program | None:
        """The program last loaded, or None."""
        return self._program

    def load(self, program: Program | str | bytes | bytearray | memoryview) -> None:
        """Loads a :class:`tilecore.arch.Program` (or assembly text, or an image as bytes).

        Resets every core, queue, counter, clock and the statistics, and writes the
        program's data segments; other memory is kept.
        """
        if isinstance(program, str):
            from ..arch import assemble

            program = assemble(program)
        elif isinstance(program, (bytes, bytearray, memoryview)):
            program = Program.from_bytes(program)
        if not isinstance(program, Program):
            raise TypeError(f"Simulator.load: expected a Program, got {type(program).__name__}")
        _ffi.Load(self._h, program)
        self._program = program

    def write(self, space: str, address: int, data: npt.ArrayLike, core: int = 0) -> None:
        """Copies ``data`` (a numpy array or anything array-like; its bytes as laid
        out in C order) into memory ``space`` at byte ``address``."""
        import numpy as np

        arr = np.ascontiguousarray(data)
        if arr.dtype == object:
            raise TypeError("Simulator.write: data of dtype object has no byte layout")
        _ffi.Write(self._h, _space(space), _int_arg("address", address), arr.reshape(-1).view(np.uint8),
                   _int_arg("core", core))

    def read(self, space: str, address: int, shape: int | tuple[int, ...], dtype: npt.DTypeLike = "uint8",
             core: int = 0) -> np.ndarray:
        """A new numpy array of ``shape`` and ``dtype`` read from ``space`` at ``address``."""
        import numpy as np

        out = np.empty(shape, dtype=dtype)
        _ffi.ReadInto(self._h, _space(space), _int_arg("address", address), out.reshape(-1).view(np.uint8),
                      _int_arg("core", core))
        return out

    def run(self, max_instructions: int | None = None) -> Simulator:
        """Runs until every core has halted and every queue has drained.

        :param max_instructions: budget of front-end instructions (all cores), a positive int;
            default (None) 10^9.
        :raises SimError: on a fault, deadlock or an exhausted budget.
        """
        if max_instructions is not None:
            if isinstance(max_instructions, bool) or not isinstance(max_instructions, numbers.Integral):
                raise TypeError(f"Simulator.run: max_instructions must be an int, got {type(max_instructions).__name__}")
            if max_instructions <= 0:
                raise ValueError(f"Simulator.run: max_instructions must be positive, got {max_instructions}")
        _ffi.Run(self._h, 0 if max_instructions is None else int(max_instructions))
        return self

    def step(self, n: int = 1) -> int:
        """Executes up to ``n`` front-end instructions; returns how many ran."""
        return _ffi.Step(self._h, int(n))

    @property
    def finished(self) -> bool:
        """True when every core has halted and every queue is empty."""
        return _ffi.Finished(self._h)

    def stats(self) -> dict[str, Any]:
        """Statistics as a dict: cycles, instructions, commands, mac_utilisation,
        mac_efficiency, bytes per level, and per core the MACs, the DDR cycles its DMA
        commands took (``ddr_cycles``) and per agent
        (sc, din, dout, mm, vec) commands / busy / stalled_dep / stalled_bw / idle."""
        return json.loads(_ffi.StatsJSON(self._h))

    def stats_text(self) -> str:
        """The statistics as a readable table."""
        return _ffi.StatsText(self._h)

    def hazards(self) -> list[dict[str, Any]]:
        """Hazards found so far (mode ``"hazard"``): a list of dicts with a ``message``."""
        return [dict(h.items()) for h in _ffi.Hazards(self._h)]

    def trace(self, path: str | os.PathLike[str] | None = None) -> str | os.PathLike[str]:
        """Writes the Chrome/Perfetto trace to ``path`` (or returns it as a str).

        The simulator must have been created with ``trace=True`` (or ``-trace``).
        """
        if not self.config["trace"]:
            raise ValueError("Simulator.trace: create the Simulator with trace=True to record a trace")
        if path is None:
            return _ffi.TraceJSON(self._h)
        _ffi.WriteTrace(self._h, str(path))
        return path

    # ---- state, for debuggers ---------------------------------------------------------
    def xreg(self, core: int, r: int) -> int:
        return _ffi.XReg(self._h, core, r)

    def set_xreg(self, core: int, r: int, value: int) -> None:
        _ffi.SetXReg(self._h, core, r, int(value))

    def vreg(self, core: int, r: int, dtype: npt.DTypeLike = "uint8") -> np.ndarray:
        import numpy as np

        return np.frombuffer(_ffi.VReg(self._h, core, r), dtype=dtype).copy()

    def preg(self, core: int, r: int) -> int:
        return _ffi.PReg(self._h, core, r)

    def pc(self, core: int) -> int:
        return _ffi.PC(self._h, core)

    def halted(self, core: int) -> bool:
        return _ffi.Halted(self._h, core)

    def cycle(self) -> int:
        return _ffi.Cycle(self._h)

    def instruction_at(self, core: int, pc: int) -> str:
        return _ffi.InstructionAt(self._h, core, pc)

    def source_line(self, core: int, pc: int) -> int:
        return _ffi.SourceLine(self._h, core, pc)

    def __repr__(self) -> str:
        c = self.config
        return f"<tilecore.sim.Simulator cores={c['cores']} mode={c['mode']}>"


def format_stats(stats: dict[str, Any]) -> str:
    """A short human summary of :meth:`Simulator.stats`: cycles, MAC utilisation and
    per-engine busy/stalled/idle cycles summed over cores."""
    lines = [
        f"cycles           {stats['cycles']}",
        f"instructions     {stats['instructions']}",
        f"tile commands    {stats['commands']}",
        f"MAC utilisation  {100.0 * stats['mac_utilisation']:.1f}% of the int8 peak",
    ]
    agents = ("sc", "din", "dout", "mm", "vec")
    lines.append(f"{'engine':8s} {'commands':>10s} {'busy':>12s} {'stall dep':>12s} {'stall bw':>12s} {'idle':>12s}")
    for a in agents:
        tot = {k: sum(core[a][k] for core in stats["cores"]) for k in ("commands", "busy", "stalled_dep", "stalled_bw", "idle")}
        lines.append(
            f"{a:8s} {tot['commands']:10d} {tot['busy']:12d} {tot['stalled_dep']:12d} {tot['stalled_bw']:12d} {tot['idle']:12d}"
        )
    b = stats["bytes"]
    lines.append(
        "bytes            ddr r/w {}/{}  l2 r/w {}/{}  l1 r/w {}/{}".format(
            b["ddr_read"], b["ddr_written"], b["l2_read"], b["l2_written"], b["l1_read"], b["l1_written"]
        )
    )
    return "\n".join(lines)


__all__ = ["SimError", "Simulator", "format_stats"]
