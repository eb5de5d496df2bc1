"""tilecore/script/pysim/runner.py — runs a kernel in Python: one thread per core.

Calling a ``@S.prim_func`` kernel with numpy arrays runs it here:

1. The kernel is parsed first (once, cached), so PySim rejects every kernel the
   compiler rejects, with the same error.
2. Arguments are checked against the parameters: a pointer takes a C-contiguous
   numpy array of its dtype (bfloat16: uint16 bit patterns), shared by all cores
   as global memory is; a scalar takes a Python number.
3. Each core runs the kernel's own Python function in a thread of its own (so
   ``pdb`` and prints work in the kernel) with every DSL call in PySim mode, and
   ``range`` bound to control.sim_range. (A kernel with loops that batch.py can run
   whole is recompiled once from its source with those loops rewritten; its file and
   line numbers are the kernel's.) ``S.barrier`` is a threading.Barrier;
   DMA events are per-core queues of pending writes.
4. With ``TILECORE_PYSIM_SINGLE_THREAD=1`` the cores run one after another in the
   calling thread; ``S.barrier`` then raises.
5. The first failing core's exception reaches the caller as a KernelError of the
   same kind, naming the core and the kernel's file and line; the other cores are
   released from barriers (their BrokenBarrierError is not reported).
6. As on the simulator, a core that finishes while others wait at a barrier is a
   deadlock (RuntimeError "deadlock ..."), and each core has a budget of DSL
   operations (``TILECORE_PYSIM_MAX_OPS``, default 10^7; RuntimeError "budget ...
   exhausted"), so a kernel that never ends fails instead of hanging. A loop that
   spins without effect (``while a[0] == 0: ...`` with nothing to change a[0]) is
   stopped sooner by the stall budget: when for ``TILECORE_PYSIM_STALL_SECONDS``
   (default 5) no core has stored to memory, run a DMA or tile command, or passed a
   barrier while one still runs DSL operations, RuntimeError "stall budget exhausted"
   (10^7 operations take minutes in PySim; real kernels store long before 5 s).
7. Loops free of cross-iteration dependences run as whole numpy operations
   (batch.py; ``TILECORE_PYSIM_BATCH=0`` turns that off), with the same results.
8. ``seed=N`` (or ``TILECORE_PYSIM_SEED=N``): the cores' threads take turns, one at a
   time, switching at every memory access or synchronisation to a core picked by an
   RNG seeded with N (_Scheduler); the interleaving is kept in ``kernel.pysim_trace`` and the same seed
   replays it exactly. ``seed=`` wins over ``TILECORE_PYSIM_SINGLE_THREAD``, which wins
   over ``TILECORE_PYSIM_SEED``.
9. ``racecheck=True`` (or ``TILECORE_PYSIM_RACECHECK=1``): racecheck.py reports races
   between cores and with in-flight DMA as a DataRaceError at the end of the run.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
import types as pytypes
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .. import registry
from .. import types as T
from ..control import sim_range
from ..errors import KernelError, located
from . import batch
from .racecheck import RaceChecker
from .semantics import value as make_value
from .values import Memory, SimPointer

if TYPE_CHECKING:
    from ..kernel import Kernel

_ENV_SINGLE = "TILECORE_PYSIM_SINGLE_THREAD"
_ENV_MAX_OPS = "TILECORE_PYSIM_MAX_OPS"
_ENV_BATCH = "TILECORE_PYSIM_BATCH"
_ENV_SEED = "TILECORE_PYSIM_SEED"
_ENV_RACECHECK = "TILECORE_PYSIM_RACECHECK"
_ENV_STALL = "TILECORE_PYSIM_STALL_SECONDS"
_DEFAULT_MAX_OPS = 10_000_000
_DEFAULT_STALL_SECONDS = 5.0
# DSL operations with an effect other cores or the caller can see: progress for the stall budget.
_PROGRESS = frozenset("store vstore dma_copy async_dma_copy dma_fill mm barrier printf call_packed".split())
_STALL_CHECK_EVERY = 1024  # operations between two looks at the clock


def _max_ops():
    text = os.environ.get(_ENV_MAX_OPS, "").strip()
    if not text:
        return _DEFAULT_MAX_OPS
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{_ENV_MAX_OPS}={text!r}: expected a positive integer") from None
    if n <= 0:
        raise ValueError(f"{_ENV_MAX_OPS}={text!r}: expected a positive integer")
    return n


def _stall_seconds():
    text = os.environ.get(_ENV_STALL, "").strip()
    if not text:
        return _DEFAULT_STALL_SECONDS
    try:
        t = float(text)
    except ValueError:
        raise ValueError(f"{_ENV_STALL}={text!r}: expected a positive number of seconds") from None
    if not t > 0:
        raise ValueError(f"{_ENV_STALL}={text!r}: expected a positive number of seconds")
    return t


def _seed(value):
    """The scheduling seed: the call's ``seed=`` or else TILECORE_PYSIM_SEED, or None."""
    if value is None:
        text = os.environ.get(_ENV_SEED, "").strip()
        if not text:
            return None
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{_ENV_SEED}={text!r}: expected an integer") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"seed=: expected an int, got {type(value).__name__} {value!r}")
    return value


def _racecheck(value):
    """Whether to check for races: the call's ``racecheck=`` or else TILECORE_PYSIM_RACECHECK."""
    if value is None:
        return os.environ.get(_ENV_RACECHECK, "").strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


#: The DSL operations at which seeded scheduling may switch cores: memory accesses (and
#: tile commands), DMA, synchronisation, shared allocation and output.
_SCHED_POINTS = frozenset("load store vload vstore dma_copy async_dma_copy wait_events dma_fill mm barrier "
                          "alloc_buffer printf call_packed".split())


class _Scheduler:
    """Seeded cooperative scheduling: the cores are threads, but only one runs at a time. At
    each memory access, DMA, barrier ... (_SCHED_POINTS) the running core records
    ``(core, operation)`` in the trace and a seeded RNG picks which ready core runs next, so
    one seed gives one interleaving, replayed exactly by the next run with that seed."""

    def __init__(self, seed, n) -> None:
        self.rng = random.Random(seed)
        self.n = n
        self.cond = threading.Condition()
        self.current = None
        self.ready, self.blocked, self.done = set(), set(), set()
        self.started = 0
        self.trace = []
        self.aborted = False
        self.deadlock = None
        self.on_release = None

    def _pick(self) -> None:
        self.current = self.rng.choice(sorted(self.ready)) if self.ready else None
        self.cond.notify_all()

    def _wait(self, core):
        while self.current != core and not self.aborted and self.deadlock is None:
            self.cond.wait()
        if self.aborted:
            raise _Aborted()
        if self.deadlock is not None and core in self.blocked:
            raise RuntimeError(self.deadlock)
        if self.deadlock is not None:
            raise _Aborted()

    def start(self, core) -> None:
        with self.cond:
            self.ready.add(core)
            self.started += 1
            if self.started == self.n:
                self._pick()
            self._wait(core)

    def point(self, core, what) -> None:
        with self.cond:
            self.trace.append((core, what))
            self._pick()
            self._wait(core)

    def barrier(self, core) -> None:
        with self.cond:
            self.ready.discard(core)
            self.blocked.add(core)
            self._release_or_deadlock()
            self._wait(core)
            self.blocked.discard(core)

    def _release_or_deadlock(self) -> None:
        if self.ready:
            self._pick()
        elif self.blocked and self.done:
            self.deadlock = (f"deadlock: core(s) {', '.join(map(str, sorted(self.blocked)))} wait at the barrier, "
                             f"which core(s) {', '.join(map(str, sorted(self.done)))} finished without reaching")
            self.cond.notify_all()
        elif self.blocked:
            if self.on_release is not None:
                self.on_release()
            self.ready |= self.blocked
            self.blocked.clear()
            self._pick()

    def finish(self, core) -> None:
        with self.cond:
            self.ready.discard(core)
            self.blocked.discard(core)
            self.done.add(core)
            if not self.aborted and (self.current == core or self.current is None):
                self._release_or_deadlock()

    def abort(self) -> None:
        with self.cond:
            self.aborted = True
            self.cond.notify_all()


class _Deadlock(Exception):
    """Raised in cores waiting at a barrier that some finished core will never reach."""


class _Barrier:
    """threading.Barrier plus deadlock detection: a core that finishes while others wait
    (or waits while others have finished) releases the waiters with a deadlock error."""

    def __init__(self, n) -> None:
        self.n = n
        self.cond = threading.Condition()
        self.waiting = set()
        self.finished = set()
        self.generation = 0
        self.broken = None  # None, "abort" or the deadlock message
        self.on_release = None

    def _check_deadlock(self) -> None:
        if self.waiting and len(self.waiting) + len(self.finished) == self.n and self.finished:
            self.broken = (f"deadlock: core(s) {', '.join(map(str, sorted(self.waiting)))} wait at the barrier, "
                           f"which core(s) {', '.join(map(str, sorted(self.finished)))} finished without reaching")
            self.cond.notify_all()

    def wait(self, core):
        with self.cond:
            if self.broken is not None:
                raise self._error()
            gen = self.generation
            self.waiting.add(core)
            if len(self.waiting) == self.n:
                if self.on_release is not None:
                    self.on_release()
                self.waiting.clear()
                self.generation += 1
                self.cond.notify_all()
                return
            self._check_deadlock()
            while self.generation == gen and self.broken is None:
                self.cond.wait()
            if self.generation == gen:
                self.waiting.discard(core)
                raise self._error()

    def _error(self):
        return threading.BrokenBarrierError() if self.broken == "abort" else _Deadlock(self.broken)

    def finish(self, core) -> None:
        with self.cond:
            self.finished.add(core)
            if self.broken is None:
                self._check_deadlock()

    def abort(self) -> None:
        with self.cond:
            if self.broken is None:
                self.broken = "abort"
            self.cond.notify_all()


def single_thread_mode() -> bool:
    return os.environ.get(_ENV_SINGLE, "").strip().lower() in ("1", "true", "yes", "on")


class _Run:
    """What the cores of one kernel run share."""

    def __init__(self, num_cores, single, out, seed=None, race=None) -> None:
        self.num_cores = num_cores
        self.race = race
        self.sched = None if seed is None else _Scheduler(seed, num_cores)
        self.single = single and self.sched is None
        self.barrier = None if self.single or self.sched is not None else _Barrier(num_cores)
        self.max_ops = _max_ops()
        self.stall_seconds = _stall_seconds()
        self.progress = 0  # effects so far, all cores (a plain int: a lost update only delays the check)
        self.lock = threading.Lock()
        self.shared = []  # shared allocations, in order of first arrival
        for b in (self.barrier, self.sched):
            if b is not None and race is not None:
                b.on_release = race.barrier_release
        self.out = out
        self.batching = self.sched is None and race is None and \
            os.environ.get(_ENV_BATCH, "").strip().lower() not in ("0", "false", "no", "off")


class CoreContext:
    """The context of one core (mode "py" in registry.py)."""

    def __init__(self, run: Any, core: int) -> None:
        self.run = run
        self.core = core
        self.num_cores = run.num_cores
        self.pending_dma = {}
        self.shared_count = 0
        self.ops = 0
        self.seen_progress = -1  # run.progress at the last look at the clock
        self.stall_since = 0.0
        self.batching = run.batching
        self.race = run.race

    def tick(self, what: str | None = None) -> None:
        """Counts one DSL operation against the core's budget; a scheduling point when seeded."""
        if self.run.sched is not None and (what in _SCHED_POINTS or what.startswith("tile_")):
            self.run.sched.point(self.core, what)
        self.ops += 1
        if what in _PROGRESS or (what is not None and what.startswith("tile_")):
            self.run.progress += 1
        if self.ops > self.run.max_ops:
            raise RuntimeError(f"instruction budget exhausted: core {self.core} ran more than {self.run.max_ops} "
                               f"DSL operations (PySim's budget; set {_ENV_MAX_OPS} for a longer kernel)")
        if self.ops % _STALL_CHECK_EVERY == 0:
            self._check_stall()

    def _check_stall(self):
        now = time.monotonic()
        if self.run.progress != self.seen_progress:
            self.seen_progress, self.stall_since = self.run.progress, now
        elif now - self.stall_since > self.run.stall_seconds:
            raise RuntimeError(
                f"stall budget exhausted: core {self.core} ran {self.ops} DSL operations, and for "
                f"{self.run.stall_seconds:g} s no core stored to memory, ran a DMA or tile command or passed "
                f"a barrier (an endless loop?); set {_ENV_STALL} for a kernel that computes longer "
                "between stores")

    def barrier(self) -> None:
        if self.run.single:
            raise RuntimeError(f"S.barrier: PySim runs the cores one after another ({_ENV_SINGLE}=1), so a barrier "
                               f"cannot be honoured; unset {_ENV_SINGLE} to run the cores as threads")
        if self.run.sched is not None:
            self.run.sched.barrier(self.core)
            return
        try:
            self.run.barrier.wait(self.core)
        except threading.BrokenBarrierError:
            raise _Aborted() from None
        except _Deadlock as e:
            raise RuntimeError(str(e)) from None

    def shared_allocation(self, name: str | None, n: int, elem: str) -> Memory:
        """The k-th shared allocation of every core is one buffer."""
        k = self.shared_count
        self.shared_count += 1
        with self.run.lock:
            if k == len(self.run.shared):
                self.run.shared.append(Memory(np.zeros(n, dtype=T.NP_STORAGE[elem]), elem, "shared",
                                              name or f"shared{k}"))
            mem = self.run.shared[k]
        if mem.extent != n or mem.elem != elem:
            raise ValueError(f"alloc_buffer: shared allocation #{k} is {n} x {elem} on core {self.core} but "
                             f"{mem.extent} x {mem.elem} on another core; every core must allocate the same "
                             "shared buffers in the same order")
        return mem

    def output(self, text: str) -> None:
        self.run.out.write(text + "\n")

    def finish(self) -> None:
        after = self.race.finish(self.core) if self.race is not None else None
        for ev in sorted(self.pending_dma):
            for dst, data in self.pending_dma[ev]:
                dst[...] = data
        self.pending_dma.clear()
        if after is not None:
            after()


class _Aborted(Exception):
    """A core released from a barrier because another core failed."""


def _bind_args(kernel, args, kwargs):
    params = kernel.params
    if kwargs:
        names = [n for n, _ in params]
        extra = [k for k in kwargs if k not in names]
        if extra:
            raise TypeError(f"{kernel.__name__}: unknown argument(s) {', '.join(extra)}")
        args = list(args) + [None] * (len(params) - len(args))
        for k, v in kwargs.items():
            args[names.index(k)] = v
    if len(args) != len(params):
        raise TypeError(f"{kernel.__name__}() takes {len(params)} arguments "
                        f"({', '.join(n for n, _ in params)}), got {len(args)}")
    bound = []
    for i, ((name, ann), a) in enumerate(zip(params, args)):
        where = f"{kernel.__name__}: argument {i} (`{name}`)"
        if isinstance(ann, T.PointerType):
            if not isinstance(a, np.ndarray):
                raise TypeError(f"{where} is {ann!r}: expected a numpy array, got {type(a).__name__}")
            want = np.dtype(T.NP_STORAGE[ann.dtype])
            if a.dtype != want:
                raise TypeError(f"{where} is {ann!r}: expected an array of {ann.dtype}"
                                f"{' (uint16 bit patterns)' if ann.dtype == 'bfloat16' else ''}, got {a.dtype}")
            if not a.flags.c_contiguous or not a.flags.writeable:
                raise ValueError(f"{where}: the array must be C-contiguous and writeable")
            bound.append(SimPointer(Memory(a.reshape(-1), ann.dtype, ann.scope, name), 0))
        else:
            elem = ann.name
            if isinstance(a, np.ndarray) or not isinstance(a, (bool, int, float, np.generic)):
                raise TypeError(f"{where} is {elem}: expected a number, got {type(a).__name__}")
            bound.append(("scalar", _scalar_as_tc1_passes_it(where, a, elem), elem))
    return bound


def _scalar_as_tc1_passes_it(where, a, elem):
    """A scalar argument as the compiled kernel receives it: an integer parameter takes an
    int (not a float) that fits in 64 bits, and keeps its low bits (two's complement)."""
    if not T.is_int(elem) or isinstance(a, (bool, np.bool_)):
        return a
    if isinstance(a, (float, np.floating, complex, np.complexfloating)):
        raise TypeError(f"{where} is {elem}: expected an int, got {type(a).__name__} {a!r}")
    v = int(a)
    if not -2**63 <= v < 2**63:
        raise OverflowError(f"{where} is {elem}: {v} does not fit in 64 bits")
    bits = T.ELEMENT_BITS[elem]
    v &= (1 << bits) - 1
    if T.is_signed(elem) and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _kernel_function(kernel):
    """The kernel's function with ``range`` bound to PySim's range (a copy of its globals)
    and its dependence-free loops made batchable (batch.py; transformed once per kernel)."""
    f = kernel.py_func
    g = dict(f.__globals__)
    g["range"] = sim_range
    tx = kernel.__dict__.get("_pysim_transformed", False)
    if tx is False:
        tx = kernel.__dict__["_pysim_transformed"] = batch.transform(f)
    if tx is not None:
        code, free = tx
        g[batch.LOOP_NAME] = batch.pysim_loop
        ns = dict(g)
        try:
            exec(code, ns)  # noqa: S102  (the kernel's own source, transformed)
            fn = ns["__pysim_make"](*[c.cell_contents for c in (f.__closure__ or ())])
        except Exception:  # noqa: BLE001  (e.g. an empty closure cell: run the function as it is)
            fn = None
        if fn is not None:
            fn.__defaults__, fn.__kwdefaults__ = f.__defaults__, f.__kwdefaults__
            return fn
    return pytypes.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)


def _kernel_line(tb, code):
    """The innermost traceback entry in the kernel's code: (file, line)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code is code:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _source_line(file, line):
    import linecache

    return linecache.getline(file, line).rstrip("\n") if line else ""


def run(kernel: Kernel, args: Sequence[Any], kwargs: Mapping[str, Any], seed: int | None = None,
        racecheck: bool | None = None) -> None:
    kernel.prim_func  # parse first: PySim rejects what the compiler rejects  # noqa: B018
    bound = _bind_args(kernel, args, kwargs)
    single = single_thread_mode()
    fn = _kernel_function(kernel)
    code = fn.__code__
    race = RaceChecker(kernel.num_cores, code) if _racecheck(racecheck) else None
    # seed= wins over TILECORE_PYSIM_SINGLE_THREAD, which wins over TILECORE_PYSIM_SEED.
    seed = _seed(seed) if seed is not None or not single else None
    run_state = _Run(kernel.num_cores, single, sys.stdout, seed, race)
    single = run_state.single
    sched = run_state.sched
    errors = {}

    def core_args():
        out = []
        for b in bound:
            if isinstance(b, tuple):
                from ..numerics import scalar_to_storage

                out.append(make_value(np.array([scalar_to_storage(b[1], b[2])]), b[2]))
            else:
                out.append(b)
        return out

    def run_core(core) -> None:
        ctx = CoreContext(run_state, core)
        try:
            if sched is not None:
                sched.start(core)
            with registry.mode("py", ctx):
                fn(*core_args())
            ctx.finish()
        except _Aborted:
            pass
        except BaseException as e:  # noqa: BLE001  (reported to the caller)
            errors[core] = (e, sys.exc_info()[2])
            if run_state.barrier is not None:
                run_state.barrier.abort()
            if sched is not None:
                sched.abort()
        finally:
            if run_state.barrier is not None:
                run_state.barrier.finish(core)
            if sched is not None:
                sched.finish(core)

    if single:
        for core in range(kernel.num_cores):
            run_core(core)
            if errors:
                break
    else:
        threads = [threading.Thread(target=run_core, args=(c,), name=f"tc1-core{c}", daemon=True)
                   for c in range(kernel.num_cores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if sched is not None:
        kernel.pysim_trace = [f"core{c} {what}" for c, what in sched.trace]
    if not errors and race is not None and race.error(kernel.name) is not None:
        raise race.error(kernel.name)
    if errors:
        core = min(errors)
        exc, tb = errors[core]
        if isinstance(exc, KernelError) and exc.core is not None:
            raise exc
        line = _kernel_line(tb, code)
        file = code.co_filename
        if line is None:
            raise exc
        if isinstance(exc, KernelError):
            # A compile-time error found again at run time keeps its text; add the core.
            exc.core = core
            raise exc
        raise located(exc, file, line, _source_line(file, line), core=core).with_traceback(tb) from exc
