"""tilecore/script/pysim/racecheck.py — PySim's data-race detector (``racecheck=True`` /
``TILECORE_PYSIM_RACECHECK=1``).

Two kinds of race are reported, each with both cores, the array, the element and both
kernel source lines:

- **between cores**: two accesses to one element of global or shared memory by two
  cores, at least one a write, with no barrier between them. Happens-before is tracked
  with vector clocks: each core's clock ticks at every barrier, which joins all
  clocks; every element keeps its last writer and each core's last read (with the
  clock and line). The verdict does not depend on the order the threads happened to
  run in, so a missing barrier is reported in every run, whatever the seed.
- **with an in-flight DMA**: between ``S.async_dma_copy(..., event=e)`` and
  ``S.wait_events(e)`` the issuing core reads or writes the copy's destination, or
  writes its source. The copy's write counts as the core's access at the wait.

The races found are raised at the end of the run as :class:`DataRaceError` (after any
other error of the kernel). Every DSL operation is checked one at a time, so batched
loops are off in this mode.
"""

from __future__ import annotations

import linecache
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .batch import operand_indices

if TYPE_CHECKING:
    from types import CodeType

    from ..frontend import Plan

_MAX_REPORTS = 20


class DataRaceError(RuntimeError):
    """Unsynchronised conflicting accesses found by PySim's race detector."""


class _Shadow:
    __slots__ = ("w_core", "w_clk", "w_line", "r_clk", "r_line")

    def __init__(self, extent, cores) -> None:
        self.w_core = np.full(extent, -1, np.int16)
        self.w_clk = np.zeros(extent, np.int64)
        self.w_line = np.zeros(extent, np.int32)
        self.r_clk = np.zeros((cores, extent), np.int64)
        self.r_line = np.zeros((cores, extent), np.int32)


def _flat_access(p, write):
    from ..api.memory import _py_flat

    try:
        off = _py_flat("racecheck", p.x, p.items)
    except Exception:  # noqa: BLE001  (the operation itself reports it)
        return []
    return [(p.x.mem, np.array([off]), write)]


def _vector_access(p, write):
    from ..api.vector import _indices_py

    try:
        idx, active = _indices_py("racecheck", p)
    except Exception:  # noqa: BLE001
        return []
    return [(p.ptr.mem, idx[active], write)]


def _operand(x, write):
    r = operand_indices(x)
    return [] if r is None else [(r[0], r[1], write)]


def accesses(name: str, p: Plan) -> list[tuple[Any, np.ndarray, bool]]:
    """The memory accesses of DSL operation ``name`` with plan ``p``: [(memory, indices, write)]."""
    if name == "load":
        return [] if p.region else _flat_access(p, False)
    if name == "store":
        return _flat_access(p, True)
    if name in ("vload", "vstore"):
        return _vector_access(p, name == "vstore")
    if name in ("dma_copy", "async_dma_copy"):
        return _operand(p.src, False) + ([] if name == "async_dma_copy" else _operand(p.dst, True))
    if name == "dma_fill":
        return _operand(p.dst, True)
    if name.startswith("tile_") or name == "mm":
        out = []
        for f in ("a", "b", "bias", "residual"):
            x = getattr(p, f, None)
            if x is not None:
                out += _operand(x, False)
        for f in ("d", "c"):
            x = getattr(p, f, None)
            if x is not None:
                out += _operand(x, True)
        return out
    return []


class RaceChecker:
    """Shared by the cores of one run (see the module docstring)."""

    def __init__(self, cores: int, code: CodeType) -> None:
        self.cores = cores
        self.code = code
        self.lock = threading.Lock()
        self.vc = np.zeros((cores, cores), np.int64)
        self.vc[np.arange(cores), np.arange(cores)] = 1
        self.shadow = {}
        self.inflight = {c: [] for c in range(cores)}
        self.reports = []
        self.seen = set()

    # -- hooks -------------------------------------------------------------------------
    def barrier_release(self) -> None:
        """Every core passed a barrier: all clocks join, then each core's own ticks."""
        with self.lock:
            m = self.vc.max(axis=0)
            self.vc[:] = m
            self.vc[np.arange(self.cores), np.arange(self.cores)] += 1

    def line(self) -> int:
        f = sys._getframe(2)
        while f is not None:
            if f.f_code is self.code:
                return f.f_lineno
            f = f.f_back
        return 0

    def operation(self, core: int, name: str, p: Plan) -> Callable[[], None] | None:
        """Called before DSL operation ``name`` runs on ``core``; returns None or a function to
        call after it ran (writes are checked then, see :meth:`_after`)."""
        if name == "wait_events":
            with self.lock:
                done = [e for e in self.inflight[core] if e[0] in p.events]
                self.inflight[core] = [e for e in self.inflight[core] if e[0] not in p.events]
            return self._after(core, [(e[1], e[2]) for e in done], [e[5] for e in done], True)
        acc = accesses(name, p)
        if not acc and name != "async_dma_copy":
            return None
        line = self.line()
        writes = []
        with self.lock:
            for mem, idx, write in acc:
                self._inflight(core, mem, idx, write, line)
                if write:
                    writes.append((mem, idx))
                else:
                    self._access(core, mem, idx, False, line)
            if name == "async_dma_copy":
                d, s = operand_indices(p.dst), operand_indices(p.src)
                if d is not None and s is not None:
                    self.inflight[core].append((p.event, d[0], d[1], s[0], s[1], line))
        return self._after(core, writes, [line] * len(writes), False) if writes else None

    def _after(self, core, writes, lines, dma):
        """Snapshots the elements about to be written; the returned function checks the writes
        that changed an element (a store of the value already there cannot change any result,
        e.g. every core storing the same vector)."""
        writes = [(m, i[(i >= 0) & (i < m.extent)]) for m, i in writes if m.scope in ("global", "shared")]
        if not writes:
            return None
        old = [m.array[i].copy() for m, i in writes]

        def check() -> None:
            with self.lock:
                for (m, i), o, line in zip(writes, old, lines):
                    new = m.array[i]
                    changed = new.view(np.uint8).reshape(new.shape + (-1,)) != o.view(np.uint8).reshape(
                        o.shape + (-1,))
                    i = i[changed.any(axis=-1)]
                    self._access(core, m, i, True, line, dma_line=line if dma else None)

        return check

    def finish(self, core: int) -> Callable[[], None] | None:
        """The core ends: copies still in flight complete now (call the result afterwards)."""
        with self.lock:
            done, self.inflight[core] = self.inflight[core], []
        return self._after(core, [(e[1], e[2]) for e in done], [e[5] for e in done], True)

    # -- checks ------------------------------------------------------------------------
    def _src(self, line):
        text = linecache.getline(self.code.co_filename, line).strip() if line else ""
        return f"{self.code.co_filename}:{line}" + (f" `{text}`" if text else "")

    def _report(self, key, text) -> None:
        if key in self.seen or len(self.reports) >= _MAX_REPORTS:
            return
        self.seen.add(key)
        self.reports.append(text)

    def _inflight(self, core, mem, idx, write, line) -> None:
        for ev, dmem, didx, smem, sidx, iline in self.inflight[core]:
            for what, m, i in (("destination", dmem, didx), ("source", smem, sidx)):
                if m is not mem or what == "source" and not write:
                    continue
                hit = np.intersect1d(idx, i)
                if hit.size:
                    self._report(("dma", mem.name, line, iline, what),
                                 f"core {core} {'writes' if write else 'reads'} `{mem.name}`[{int(hit[0])}] "
                                 f"({mem.scope}) at {self._src(line)} while its DMA on event {ev} issued at "
                                 f"{self._src(iline)} is still in flight with it as {what} (S.wait_events({ev}) "
                                 "first)")

    def _access(self, core, mem, idx, write, line, dma_line=None) -> None:
        if mem.scope not in ("global", "shared") or idx.size == 0:
            return
        sh = self.shadow.get(mem)
        if sh is None:
            sh = self.shadow[mem] = _Shadow(mem.extent, self.cores)
        idx = idx[(idx >= 0) & (idx < mem.extent)]
        vc = self.vc[core]
        verb = "writes" if write else "reads"
        if dma_line is not None:
            verb = "writes (its DMA completing at S.wait_events)"
        wc = sh.w_core[idx].astype(np.int64)
        racy = (wc >= 0) & (wc != core)
        racy &= sh.w_clk[idx] > vc[np.maximum(wc, 0)]
        if racy.any():
            k = int(np.argmax(racy))
            other, oline = int(wc[k]), int(sh.w_line[idx[k]])
            self._race(mem, int(idx[k]), core, verb, line, other, "wrote", oline)
        if write:
            racy = sh.r_clk[:, idx] > vc[:, None]  # reads by every core not ordered before this write
            racy[core] = False
            if racy.any():
                o, k = np.unravel_index(int(np.argmax(racy)), racy.shape)
                self._race(mem, int(idx[k]), core, verb, line, int(o), "read", int(sh.r_line[o, idx[k]]))
            sh.w_core[idx] = core
            sh.w_clk[idx] = vc[core]
            sh.w_line[idx] = line
        else:
            sh.r_clk[core, idx] = vc[core]
            sh.r_line[core, idx] = line

    def _race(self, mem, addr, core, verb, line, other, overb, oline) -> None:
        key = ("race", mem.name, frozenset((line, oline)))
        self._report(key, f"data race on `{mem.name}`[{addr}] ({mem.scope}): core {core} {verb} it at "
                          f"{self._src(line)}; core {other} {overb} it at {self._src(oline)}, with no barrier "
                          "between them")

    def error(self, kernel_name: str) -> DataRaceError | None:
        if not self.reports:
            return None
        more = "" if len(self.reports) < _MAX_REPORTS else f"\n  (stopped after {_MAX_REPORTS} reports)"
        return DataRaceError(f"PySim race check of `{kernel_name}`: {len(self.reports)} data race(s):\n  "
                             + "\n  ".join(self.reports) + more)

