"""tilecore/script/pysim/batch.py — runs a dependence-free ``range`` loop as whole numpy operations.

Interpreting a loop one iteration at a time costs tens of microseconds of Python per
iteration. When a loop's body is straight-line DSL code, PySim instead runs the body
*once* with the loop variable holding every iteration's value (a :class:`BatchValue`
of shape ``(iterations, lanes)``), so ``S.vload(a + i)`` gathers every iteration's
vector in one numpy call. The result must be what the loop gives run one iteration at
a time, so batching is attempted only where that can be checked, and any doubt falls
back to the ordinary loop before anything is written:

1. **Statically** (:func:`transform`, once per kernel): the loop is ``for i in
   range(...)`` (or ``S.unroll``) whose body holds only assignments to names, stores,
   calls of DSL APIs (``S.*``), operators, subscripts and ``S.static_range`` loops; the
   names it assigns are assigned before they are read in the body (no value carried
   from one iteration to the next) and used elsewhere in the kernel only inside loops
   that bind them afresh. The one carried value allowed is a sum, ``acc = acc + e`` /
   ``acc += e`` at the top of the body (``acc`` used nowhere else in the loop): when
   ``e`` is an integer value per iteration, wrapping addition being associative, one
   numpy sum of every iteration's ``e`` gives what the additions give (a float sum
   falls back: its rounding depends on the order).
2. **At run time** (:class:`BatchContext`): only APIs with a batched implementation run
   (element-wise operators and vector ops, lane-preserving casts, vector reductions,
   loads, stores, pointer arithmetic, ``vload``/``vstore``, ``dma_copy``, the
   element-wise and reducing tile ops); any
   other API, a batched value where a compile-time one is needed, an out-of-range
   access or an error of any kind abandons the attempt. Writes to global and shared
   memory are held back; they are committed only if no address is written by two
   iterations and no address written by the loop is also read by it (or lies in an
   array that overlaps another one the loop uses). Local buffers get a private copy per
   iteration; a write must go to the same elements in every iteration, and an element
   read before this iteration wrote it must not be written by the loop at all. The
   last iteration's copy is the buffer afterwards.

An abandoned attempt leaves memory untouched, and the loop then runs one iteration at
a time, exactly as without batching (so errors are reported as before). Batching is
off in the seeded-scheduling and race-checking modes (runner.py), which must see every
access, and with ``TILECORE_PYSIM_BATCH=0``.
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NoReturn, Sequence

import numpy as np

from .. import registry
from .. import types as T
from ..control import sim_range, static_range, unroll
from ..numerics import convert, round_float, saturate, scalar_to_storage, storage, to_f64, wrap
from . import semantics as sem
from .values import SimBuffer, SimPointer, SimRegion, SimValue, memory_field

if TYPE_CHECKING:
    from ..frontend import Plan
    from ..registry import Api
    from ..values import KernelValue
    from .runner import CoreContext
    from .values import Memory

#: Private copies of local buffers larger than this (elements, all iterations) are not made.
PRIVATE_LIMIT = 1 << 24
LOOP_NAME = "__pysim_loop"
#: How many loop runs were batched, and how many fell back (with the last reason); for tests.
stats = {"batched": 0, "fallback": 0, "reason": None}
_stats_lock = threading.Lock()


class _Fallback(Exception):
    """The batched attempt cannot reproduce the serial loop; run it one iteration at a time."""


class BatchValue(SimValue):
    """A value per iteration: ``data`` has shape ``(iterations, lanes)``."""

    __slots__ = ()

    def item(self) -> NoReturn:
        raise _Fallback("the value of a batched kernel value")

    def values(self) -> NoReturn:
        raise _Fallback("the lanes of a batched kernel value")

    def __repr__(self) -> str:
        return f"{self.dtype}(<{self.data.shape[0]} iterations>)"

    __str__ = __repr__


class BatchPointer(SimPointer):
    """A pointer per iteration: ``offset`` is an int64 array of shape ``(iterations,)``."""

    __slots__ = ()

    def __init__(self, mem: Memory, offset: np.ndarray) -> None:  # noqa: D107  (no int() of the offsets)
        self.mem = mem
        self.offset = offset


class BatchRegion:
    """A region per iteration (or the same one in all): flat element indices ``idx`` of shape
    ``(iterations, n)`` when ``batched`` else ``(n,)``; ``shape`` is one iteration's shape."""

    __slots__ = ("mem", "idx", "batched", "shape")
    dsl_kind = "region"

    def __init__(self, mem: Memory, idx: np.ndarray, batched: bool, shape: tuple[int, ...]) -> None:
        self.mem = mem
        self.idx = idx
        self.batched = batched
        self.shape = tuple(shape)

    elem = memory_field("elem")
    scope = memory_field("scope")

    def __repr__(self) -> str:
        return f"{self.mem.name}[<region of {list(self.shape)}>]"


_BATCH_TYPES = (BatchValue, BatchPointer, BatchRegion)


def _has_batch(items) -> bool:
    for a in items:
        if isinstance(a, _BATCH_TYPES):
            return True
        if isinstance(a, tuple):
            for b in a:
                if isinstance(b, _BATCH_TYPES) or isinstance(b, slice) and (
                        isinstance(b.start, _BATCH_TYPES) or isinstance(b.stop, _BATCH_TYPES)):
                    return True
        elif isinstance(a, slice) and (isinstance(a.start, _BATCH_TYPES) or isinstance(a.stop, _BATCH_TYPES)):
            return True
    return False


# --- which APIs run batched ---------------------------------------------------------------
#: Lane-wise APIs whose Python implementation broadcasts over a leading iteration axis
#: (and ``cast``, when it keeps the lane count).
LANEWISE = frozenset("add sub mul min max lt le gt ge eq ne and_ or_ xor lshift rshift neg invert "
                     "vadd vsub vmul vmax vmin vand vor vxor".split())
#: APIs without memory access or side effects: run as usual when no operand is batched.
PURE = LANEWISE | frozenset("truediv floordiv mod logical_and logical_or logical_not select const cast vbcast "
                            "tail_mask vnot vabs vsel get_local_id get_local_size addr_of view".split())
_VREDUCE = {"vredsum": "sum", "vredmax": "max", "vredmin": "min"}


def _tile_forms():
    """The DSL's tile operations by operand form, from the table of tile operations."""
    from ..api.tile import _tile_op_rows

    forms = {"binary": set(), "scalar": set(), "unary": {"tile_copy"}, "reduce": set()}
    for r in _tile_op_rows():
        if r["form"] in forms:
            forms[r["form"]].add(f"tile_{r['name']}")
    return forms


_FORMS = _tile_forms()
_TILE_UNARY = frozenset(_FORMS["unary"])
_TILE_BINARY = frozenset(_FORMS["binary"])
_TILE_SCALAR = frozenset(_FORMS["scalar"])
_TILE_REDUCE = frozenset(_FORMS["reduce"])


class _Private:
    __slots__ = ("mem", "arr", "written", "early")

    def __init__(self, mem, n) -> None:
        self.mem = mem
        self.arr = np.repeat(mem.array[None, :], n, axis=0)
        self.written = np.zeros(mem.extent, bool)  # written earlier in this iteration
        self.early = np.zeros(mem.extent, bool)  # read before this iteration wrote it


class BatchContext:
    """The context of mode ``"batch"`` (registry.py): one batched execution of a loop body."""

    def __init__(self, core_ctx: CoreContext, n: int) -> None:
        self.core_ctx = core_ctx
        self.core = core_ctx.core
        self.num_cores = core_ctx.num_cores
        self.n = n
        self.rows = np.arange(n)[:, None]
        self.private = {}
        self.reads = []  # (mem, idx)
        self.writes = []  # (mem, idx, data), idx and data of one shape

    # -- dispatch ----------------------------------------------------------------------
    def call(self, api: Api, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        name = api.name
        ctx = self.core_ctx
        ctx.ops += self.n
        if ctx.ops > ctx.run.max_ops:
            raise _Fallback("budget")
        impl = _MEMORY_IMPLS.get(name)
        if impl is not None:
            return impl(self, name, api.front(*args, **kwargs))
        if impl is None and (name in _TILE_UNARY or name in _TILE_BINARY or name in _TILE_SCALAR
                             or name in _TILE_REDUCE):
            return self.tile(api, api.front(*args, **kwargs))
        batched = _has_batch(args) or _has_batch(kwargs.values())
        if batched and name in _VREDUCE:
            return self.vreduce(name, api.front(*args, **kwargs))
        if batched and (name in LANEWISE or name == "cast"):
            plan = api.front(*args, **kwargs)
            if name == "cast" and (plan.src is None or plan.lanes not in (1, plan.__dict__.get("slanes", 1))):
                raise _Fallback("a cast that moves lanes")
            r = api.py_impl(plan)
            lanes = T.split(r.dtype)[1]
            if r.data.size != self.n * lanes:
                raise _Fallback(name)
            return BatchValue(r.data.reshape(self.n, lanes), r.dtype)
        if not batched and name in PURE:
            return api.py_impl(api.front(*args, **kwargs))
        raise _Fallback(name)

    def vreduce(self, name: str, p: Plan) -> KernelValue:
        """vredsum / vredmax / vredmin of every iteration's vector (as semantics.reduce, per row)."""
        from ..api.vector import _identity

        op = _VREDUCE[name]
        a = p.a.data
        if a.ndim != 2:
            raise _Fallback(name)
        if p.mask is not None:
            a = np.where(p.mask.data, a, sem.lanes_of(_identity(op, p.elem), p.dtype))
        if T.is_float(p.elem):
            f = to_f64(a, p.elem).astype(np.float32)
            with np.errstate(all="ignore"):
                if op == "sum":
                    acc = np.zeros(f.shape[0], np.float32)
                    for k in range(f.shape[1]):
                        acc = acc + f[:, k]
                else:
                    acc = f.max(axis=1) if op == "max" else f.min(axis=1)
            r = round_float(acc.astype(np.float64), p.elem)
        elif op == "sum":
            r = wrap(a.astype(np.int64).sum(axis=1), p.elem)
        else:
            r = (a.max(axis=1) if op == "max" else a.min(axis=1)).astype(a.dtype)
        return BatchValue(np.asarray(r).reshape(self.n, 1), p.result)

    # -- memory ----------------------------------------------------------------------
    def _priv(self, mem):
        p = self.private.get(mem)
        if p is None:
            if self.n * mem.extent > PRIVATE_LIMIT:
                raise _Fallback("private copy too large")
            p = self.private[mem] = _Private(mem, self.n)
        return p

    def _bounds(self, mem, idx):
        if idx.size and (idx.min() < 0 or idx.max() >= mem.extent):
            raise _Fallback("out of bounds")

    def read(self, mem: Memory, idx: np.ndarray, batched: bool) -> np.ndarray:
        """Elements ``idx`` of ``mem``: shape ``(n,) + idx.shape[1:]`` if batched or private,
        else ``idx.shape`` (the same for every iteration)."""
        self._bounds(mem, idx)
        if mem.scope == "local":
            p = self._priv(mem)
            p.early[idx] |= ~p.written[idx]
            if batched:
                return p.arr[self.rows.reshape((-1,) + (1,) * (idx.ndim - 1)), idx]
            return p.arr[:, idx]
        self.reads.append((mem, idx))
        return mem.array[idx]

    def write(self, mem: Memory, idx: np.ndarray, batched: bool, data: np.ndarray, raw: bool = False) -> None:
        self._bounds(mem, idx)
        data = np.asarray(data).astype(storage(mem.elem), copy=False)
        if mem.scope == "local":
            if batched:
                raise _Fallback("a local write that depends on the iteration")
            p = self._priv(mem)
            p.arr[:, idx] = data
            if not raw:
                p.written[idx] = True
            return
        if not batched:
            idx = np.broadcast_to(idx, (self.n,) + idx.shape)
        self.writes.append((mem, idx, np.broadcast_to(data, idx.shape)))

    def commit(self) -> None:
        for p in self.private.values():
            if (p.early & p.written).any():
                raise _Fallback("a local buffer carries values between iterations")
        written = {}
        for mem, idx, _ in self.writes:
            written.setdefault(mem, []).append(idx.reshape(-1))
        used = {m for m, _ in self.reads} | set(written)
        for mw in written:
            for m in used:
                if m is not mw and np.may_share_memory(m.array, mw.array):
                    raise _Fallback("overlapping arrays")
            parts = written[mw]
            if len(parts) == 1 and (parts[0].size < 2 or (np.diff(parts[0]) > 0).all()):
                allw = parts[0]
            else:
                allw = np.concatenate(parts)
                if np.unique(allw).size != allw.size:
                    raise _Fallback("an address written twice")
            lo, hi = allw.min(), allw.max()
            for m, idx in self.reads:
                if m is mw and idx.size and not (idx.max() < lo or idx.min() > hi) and \
                        np.isin(idx.reshape(-1), allw).any():
                    raise _Fallback("an address both read and written")
        for mem, idx, data in self.writes:
            mem.array[idx] = data
        for p in self.private.values():
            p.mem.array[:] = p.arr[-1]

    # -- operands ----------------------------------------------------------------------
    def index(self, v: KernelValue) -> tuple[int | np.ndarray, bool]:
        """An index operand: (int or int64 array of shape (n,), batched)."""
        if isinstance(v, int):
            return v, False
        if isinstance(v, BatchValue):
            return v.data[:, 0].astype(np.int64), True
        return int(v.data[0]), False

    def operand(self, x: KernelValue) -> BatchRegion:
        """A region, buffer or (pointer, n) operand as a BatchRegion."""
        if isinstance(x, BatchRegion):
            return x
        if isinstance(x, tuple) and isinstance(x[0], BatchPointer):
            p, n = x
            return BatchRegion(p.mem, p.offset[:, None] + np.arange(n), True, (n,))
        r = operand_indices(x)
        if r is None:
            raise _Fallback("operand")
        return BatchRegion(r[0], r[1], False, r[2])

    def gather(self, r: BatchRegion, mark: bool = True) -> np.ndarray:
        """One array of shape (n,) + r.shape with the region's elements in every iteration."""
        if mark:
            data = self.read(r.mem, r.idx, r.batched)
        else:
            self._bounds(r.mem, r.idx)
            data = self._priv(r.mem).arr[:, r.idx] if r.mem.scope == "local" else r.mem.array[r.idx]
        if data.ndim == 1:  # global elements that are the same in every iteration
            data = np.broadcast_to(data, (self.n,) + data.shape)
        return np.array(data).reshape((self.n,) + r.shape)

    def tile(self, api: Api, p: Plan) -> None:
        name = api.name
        fake = copy.copy(p)
        d = self.operand(p.d)
        for f in ("a", "b"):
            if hasattr(p, f):
                r = self.operand(getattr(p, f))
                setattr(fake, f, SimRegion(r.mem, self.gather(r), ""))
        out = self.gather(d, mark=False) if d.mem.scope == "local" else np.zeros((self.n,) + d.shape,
                                                                                  storage(d.mem.elem))
        fake.d = SimRegion(d.mem, out, "")
        if name in _TILE_SCALAR and isinstance(p.s, BatchValue):
            _scalar_tile(name, fake, p.s)
        else:
            api.py_impl(fake)
        self.write(d.mem, d.idx, d.batched, out.reshape(self.n, -1) if not d.batched else out.reshape(
            d.idx.shape), raw=name in _TILE_REDUCE)
        if name in _TILE_REDUCE and d.mem.scope == "local":  # (a local d is the same in every iteration)
            self._priv(d.mem).written[d.idx.reshape(d.shape)[..., 0].reshape(-1)] = True


def operand_indices(x: KernelValue) -> tuple[Memory, np.ndarray, tuple[int, ...]]:
    """(memory, flat element indices, shape) of a tile / DMA operand (a region, a buffer or a
    (pointer, n) pair), or None for anything else."""
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], SimPointer):
        p, n = x
        return p.mem, p.offset + np.arange(n), (n,)
    if isinstance(x, SimBuffer):
        return x.mem, x.offset + np.arange(math.prod(x.shape)), x.shape
    if isinstance(x, SimRegion):
        v, base = x.view, x.mem.array
        item = base.itemsize
        idx = np.array((v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item)
        for s, st in zip(v.shape, v.strides):
            idx = idx[..., None] + np.arange(s) * (st // item)
        return x.mem, idx.reshape(-1), v.shape
    return None


def _scalar_tile(name, p, s) -> None:
    """tile_adds / muls / maxs / mins with a scalar that differs per iteration (as tile.py's
    implementation, one scalar per iteration)."""
    from ..api.tile import _BINARY, _f64_op

    fn = _BINARY[name[len("tile_"):]]
    a, d = p.a.view, p.d.view
    se = T.split(s.dtype)[0]
    col = s.data[:, 0]
    s32 = (to_f64(col, se) if T.is_float(se) else col.astype(np.float64)).astype(np.float32)
    sv = convert(s32, "float32", p.elem).reshape((-1,) + (1,) * (a.ndim - 1))
    if T.is_float(p.elem):
        d[...] = _f64_op(fn, p.elem, a, np.broadcast_to(sv, a.shape))
    else:
        d[...] = saturate(fn(a.astype(np.int64), sv.astype(np.int64)), p.elem)


# --- batched implementations of the memory APIs --------------------------------------------
def _as_batch_value(ctx, data, elem, batched):
    if batched:
        return BatchValue(np.asarray(data, dtype=storage(elem)).reshape(ctx.n, -1), elem)
    return SimValue(np.asarray(data, dtype=storage(elem)).reshape(-1), elem)


def _flat(ctx, x, items):
    """The flat element offset of a scalar access: (int or (n,) array, batched); bounds are
    checked per dimension for buffers."""
    if isinstance(x, (SimPointer, BatchPointer)) and not isinstance(x, SimBuffer):
        k, kb = ctx.index(items[0])
        return x.offset + k, kb or isinstance(x, BatchPointer)
    strides = [math.prod(x.shape[d + 1:]) for d in range(len(x.shape))]
    flat, batched = x.offset, False
    for i, n, st in zip(items, x.shape, strides):
        v, b = ctx.index(i)
        if np.any(np.asarray(v) < 0) or np.any(np.asarray(v) >= n):
            raise _Fallback("index out of range")
        flat = flat + v * st
        batched |= b
    return flat, batched


def _load(ctx, name, p):
    x = p.x
    if p.region:
        return _region(ctx, x, p.items)
    off, batched = _flat(ctx, x, p.items)
    mem = x.mem
    idx = np.asarray(off, dtype=np.int64).reshape(-1)
    data = ctx.read(mem, idx, batched)
    return _as_batch_value(ctx, data, mem.elem, batched or mem.scope == "local")


def _region(ctx, x, items):
    starts, shape, batched = [], [], False
    for it in items:
        if isinstance(it, tuple):
            (a, ab), (b, bb) = ctx.index(it[0]), ctx.index(it[1])
            ext = np.asarray(b) - np.asarray(a)
            if ext.size == 0 or (ext != ext.reshape(-1)[0]).any() or int(ext.reshape(-1)[0]) <= 0:
                raise _Fallback("region extent")
            starts.append(a)
            shape.append(int(ext.reshape(-1)[0]))
            batched |= ab or bb
        else:
            v, b = ctx.index(it)
            starts.append(v)
            shape.append(1)
            batched |= b
    if isinstance(x, SimBuffer):
        dims = x.shape
        for s, n, e in zip(starts, dims, shape):
            if np.any(np.asarray(s) < 0) or np.any(np.asarray(s) + e > n):
                raise _Fallback("region out of range")
        strides = [math.prod(dims[d + 1:]) for d in range(len(dims))]
        base = x.offset
    else:
        if isinstance(x, BatchPointer):
            batched = True
        strides = [1]
        base = x.offset
    if batched:
        # build (n, *shape) indices
        grid = np.zeros((ctx.n,) + tuple(shape), np.int64) + np.broadcast_to(
            np.asarray(base, dtype=np.int64), (ctx.n,)).reshape((ctx.n,) + (1,) * len(shape))
        for d, (s, e, st) in enumerate(zip(starts, shape, strides)):
            s = np.broadcast_to(np.asarray(s, dtype=np.int64), (ctx.n,)).reshape((ctx.n,) + (1,) * len(shape))
            ar = (np.arange(e) * st).reshape((1,) * (d + 1) + (e,) + (1,) * (len(shape) - d - 1))
            grid = grid + s * st + ar
        return BatchRegion(x.mem, grid.reshape(ctx.n, -1), True, shape)
    grid = np.zeros(tuple(shape), np.int64) + int(base)
    for d, (s, e, st) in enumerate(zip(starts, shape, strides)):
        ar = (np.arange(e) * st).reshape((1,) * d + (e,) + (1,) * (len(shape) - d - 1))
        grid = grid + int(s) * st + ar
    return BatchRegion(x.mem, grid.reshape(-1), False, shape)


def _store(ctx, name, p) -> None:
    x = p.x
    off, batched = _flat(ctx, x, p.items)
    v = p.value
    if isinstance(v, BatchValue):
        data = v.data[:, 0]
        batched_v = True
    elif isinstance(v, SimValue):
        data = v.data[:1]
        batched_v = False
    else:
        data = np.array([scalar_to_storage(v, x.elem)])
        batched_v = False
    idx = np.asarray(off, dtype=np.int64).reshape(-1)
    if batched:
        ctx.write(x.mem, idx, True, np.broadcast_to(data, idx.shape))
    elif batched_v:
        if x.mem.scope == "local":  # one address of the private copies, a value per iteration
            ctx.write(x.mem, idx, False, data.reshape(ctx.n, 1))
        else:
            ctx.write(x.mem, np.broadcast_to(idx, (ctx.n,)), True, data)
    else:
        ctx.write(x.mem, idx, False, data)


def _ptr_add(ctx, name, p):
    x = p.x
    k, kb = ctx.index(p.k)
    if not kb and not isinstance(x, BatchPointer):
        return SimPointer(x.mem, x.offset + k)
    return BatchPointer(x.mem, np.broadcast_to(np.asarray(x.offset + k, dtype=np.int64), (ctx.n,)))


def _vector_indices(ctx, p):
    if p.mask is not None and isinstance(p.mask, BatchValue) or isinstance(p.stride, BatchValue):
        raise _Fallback("batched mask or stride")
    from ..api.vector import _active_py, _check_aligned

    try:
        _check_aligned("", p, p.ptr.offset)
    except ValueError:
        raise _Fallback("misaligned vector access") from None  # reported per core, with its line
    stride = p.stride if isinstance(p.stride, int) else int(p.stride.data[0])
    active = _active_py(p)
    lanes = np.arange(p.lanes)[active] * stride
    if isinstance(p.ptr, BatchPointer):
        return p.ptr.offset[:, None] + lanes, True, active
    return p.ptr.offset + lanes, False, active


def _vload(ctx, name, p):
    idx, batched, active = _vector_indices(ctx, p)
    data = ctx.read(p.ptr.mem, idx, batched)
    b = batched or p.ptr.mem.scope == "local"
    out = np.zeros((ctx.n, p.lanes) if b else (p.lanes,), dtype=storage(p.elem))
    out[..., active] = data
    return BatchValue(out, p.dtype) if b else SimValue(out, p.dtype)


def _vstore(ctx, name, p) -> None:
    idx, batched, active = _vector_indices(ctx, p)
    v = p.value
    data = v.data[..., active]
    if isinstance(v, BatchValue) and not batched:
        if p.ptr.mem.scope == "local":  # the same lanes of the private copies, values per iteration
            ctx.write(p.ptr.mem, idx, False, data)
            return
        idx, batched = np.broadcast_to(idx, (ctx.n,) + idx.shape), True
    ctx.write(p.ptr.mem, idx, batched, np.broadcast_to(data, idx.shape) if batched else data)


def _dma_copy(ctx, name, p) -> None:
    src, dst = ctx.operand(p.src), ctx.operand(p.dst)
    data = ctx.gather(src)
    data = convert(data, src.mem.elem, dst.mem.elem).reshape(ctx.n, -1)
    ctx.write(dst.mem, dst.idx, dst.batched, data)


_MEMORY_IMPLS = {"load": _load, "store": _store, "ptr_add": _ptr_add, "vload": _vload, "vstore": _vstore,
                 "dma_copy": _dma_copy}


# --- the loop -----------------------------------------------------------------------------
def _bound(x):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer, SimValue)):
        raise _Fallback("bound")
    if isinstance(x, BatchValue):
        raise _Fallback("bound")
    if isinstance(x, SimValue):
        if x.dtype != "int32":
            raise _Fallback("bound")
        return int(x.data[0])
    return int(x)


class LoopResult:
    """What :func:`pysim_loop` gives the transformed kernel: ``serial``, the iterable of the
    loop run one iteration at a time (empty when the batched run succeeded), and ``finals``,
    the values of the loop's integer sums afterwards (or None)."""

    __slots__ = ("serial", "finals")

    def __init__(self, serial: Iterable[KernelValue], finals: Any = None) -> None:
        self.serial = serial
        self.finals = finals


def _sum_up(init, val, n):
    """``init + v_0 + v_1 + ... + v_{n-1}`` for the per-iteration values ``val`` of an integer
    sum: wrapping addition is associative, so one numpy sum gives what n additions give."""
    if not isinstance(val, BatchValue):
        raise _Fallback("a sum of a value that does not depend on the iteration")
    elem = T.split(val.dtype)[0]
    if not T.is_int(elem):
        raise _Fallback("a float or bool sum (its rounding depends on the order)")
    total = SimValue(np.asarray(val.data.astype(np.int64).sum(axis=0)).astype(storage(elem)).reshape(-1),
                     val.dtype)
    return init + total


def pysim_loop(body: Callable[..., Any], inits: Any, *args: KernelValue) -> LoopResult:
    """Runs a transformed ``range`` loop (see the module docstring): tries ``body`` batched and
    returns a LoopResult; ``inits`` gives the values of the loop's sums before it (or is None)."""
    ctx = registry.context()
    if registry.current_mode() != "py" or not getattr(ctx, "batching", False):
        return LoopResult(sim_range(*args))
    try:
        if not 1 <= len(args) <= 3 or len(args) == 3 and (type(args[2]) is not int or args[2] < 1):
            raise _Fallback("range arguments")
        r = builtins.range(*[_bound(a) for a in args])
        n = len(r)
        if n < 2:
            raise _Fallback("short loop")
        if r.stop > 2 ** 31 or r.start < -2 ** 31:
            raise _Fallback("int32")
    except _Fallback:
        return LoopResult(sim_range(*args))
    ops = ctx.ops
    bctx = BatchContext(ctx, n)
    try:
        i = BatchValue(np.arange(r.start, r.stop, r.step, dtype=np.int64).astype(np.int32).reshape(n, 1), "int32")
        with registry.mode("batch", bctx):
            vals = body(i)
        finals = None
        if inits is not None:
            finals = tuple(_sum_up(a, v, n) for a, v in zip(inits(), vals))
            ctx.ops += n * len(finals)
        bctx.commit()
    except Exception as e:  # noqa: BLE001  (any failure: run the loop one iteration at a time)
        ctx.ops = ops
        with _stats_lock:
            stats["fallback"] += 1
            stats["reason"] = f"{type(e).__name__}: {e}"
        return LoopResult(sim_range(*args))
    with _stats_lock:
        stats["batched"] += 1
    return LoopResult((), finals)


# --- the static analysis and the transformation ------------------------------------------
class _Resolver:
    def __init__(self, func) -> None:
        self.globals = func.__globals__
        self.closure = {}
        if func.__closure__:
            for n, cell in zip(func.__code__.co_freevars, func.__closure__):
                try:
                    self.closure[n] = cell.cell_contents
                except ValueError:
                    pass

    def resolve(self, node):
        """The object a Name / Attribute chain names (module-level), or a sentinel."""
        if isinstance(node, ast.Name):
            for ns in (self.closure, self.globals):
                if node.id in ns:
                    return ns[node.id]
            return getattr(builtins, node.id, _MISSING)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is _MISSING:
                return _MISSING
            return getattr(base, node.attr, _MISSING)
        return _MISSING


_MISSING = object()
_OK_UNARY = (ast.USub, ast.UAdd, ast.Invert)


class _Eligibility:
    """Checks one ``for`` loop (see the module docstring, rule 1)."""

    def __init__(self, resolver, loop, local_names) -> None:
        self.r = resolver
        self.loop = loop
        self.local = local_names  # names stored inside the loop
        self.assigned = set()

    def fail(self):
        raise _Fallback("not eligible")

    def expr(self, node) -> None:
        if isinstance(node, ast.Constant):
            return
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load) and node.id in self.local and node.id not in self.assigned:
                self.fail()
            return
        if isinstance(node, ast.BinOp):
            self.expr(node.left)
            self.expr(node.right)
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, _OK_UNARY):
            self.expr(node.operand)
            return
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            self.expr(node.left)
            self.expr(node.comparators[0])
            return
        if isinstance(node, ast.Subscript):
            self.expr(node.value)
            self.expr(node.slice)
            return
        if isinstance(node, ast.Slice):
            for s in (node.lower, node.upper, node.step):
                if s is not None:
                    self.expr(s)
            return
        if isinstance(node, ast.Tuple):
            for e in node.elts:
                self.expr(e)
            return
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            v = self.r.resolve(node)  # a module constant such as S.float32
            if v is _MISSING or hasattr(v, "dsl_kind"):
                self.fail()
            return
        if isinstance(node, ast.Call):
            f = self.r.resolve(node.func)
            if not isinstance(f, registry.Api):
                self.fail()
            for a in node.args:
                if isinstance(a, ast.Starred):
                    self.fail()
                self.expr(a)
            for k in node.keywords:
                if k.arg is None:
                    self.fail()
                self.expr(k.value)
            return
        self.fail()

    def store(self, t) -> None:
        if isinstance(t, ast.Name):
            self.assigned.add(t.id)
        elif isinstance(t, ast.Subscript):
            self.expr(t.value)
            self.expr(t.slice)
        else:
            self.fail()

    def stmts(self, body) -> None:
        for s in body:
            if isinstance(s, ast.Pass):
                continue
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
                self.expr(s.value)
            elif isinstance(s, ast.Assign):
                self.expr(s.value)
                for t in s.targets:
                    self.store(t)
            elif isinstance(s, ast.AugAssign):
                if isinstance(s.target, ast.Name):
                    self.expr(ast.Name(id=s.target.id, ctx=ast.Load()))
                self.expr(s.value)
                self.store(s.target)
            elif isinstance(s, ast.For) and not s.orelse and isinstance(s.iter, ast.Call) and \
                    self.r.resolve(s.iter.func) is static_range and isinstance(s.target, ast.Name):
                self.expr(ast.Tuple(elts=list(s.iter.args), ctx=ast.Load()))
                if s.iter.keywords:
                    self.fail()
                self.assigned.add(s.target.id)
                self.stmts(s.body)
            else:
                self.fail()


def _names(nodes):
    stores, loads = set(), set()
    for n in nodes:
        for x in ast.walk(n):
            if isinstance(x, ast.Name):
                (stores if isinstance(x.ctx, (ast.Store, ast.Del)) else loads).add(x.id)
            elif isinstance(x, (ast.Global, ast.Nonlocal)):
                raise _Fallback("global")
    return stores, loads


def _reduction(stmt):
    """``acc = acc + expr`` / ``acc += expr`` at the top of a loop body: (acc, expr) or None."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and isinstance(stmt.target, ast.Name):
        return stmt.target.id, stmt.value
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and \
            isinstance(stmt.value, ast.BinOp) and isinstance(stmt.value.op, ast.Add) and \
            isinstance(stmt.value.left, ast.Name) and stmt.value.left.id == stmt.targets[0].id:
        return stmt.targets[0].id, stmt.value.right
    return None


def _mentions(node, name):
    return any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(node))


def _binds_first(other, name):
    """Whether every iteration of loop ``other`` binds ``name`` before any use of it: it is the
    loop variable, or the first top-level statement of the body that mentions it assigns it
    (from a value that does not use it)."""
    if isinstance(other.target, ast.Name) and other.target.id == name:
        return True
    for st in other.body:
        if _mentions(st, name):
            return isinstance(st, ast.Assign) and not _mentions(st.value, name) and \
                any(isinstance(t, ast.Name) and t.id == name for t in st.targets)
    return False


def _uncovered_names(fdef, loop, names):
    """The names of ``names`` used outside ``loop`` other than inside another loop that binds
    them afresh in every iteration (the batched loop leaves them unset in the kernel's frame,
    so nothing else may read what it assigned)."""
    ancestors = [n for n in ast.walk(fdef) if isinstance(n, (ast.For, ast.While)) and
                 any(x is loop for x in ast.walk(n)) and n is not loop]
    found = set()

    def visit(node, covered) -> None:
        if node is loop:
            return
        if isinstance(node, ast.For):
            visit(node.iter, covered)  # evaluated before the loop binds anything
            for st in node.orelse:
                visit(st, covered)
            if not any(node is a for a in ancestors):
                covered = covered | {n for n in names if _binds_first(node, n)}
            for child in [node.target] + node.body:
                visit(child, covered)
            return
        if isinstance(node, ast.Name) and node.id in names and node.id not in covered:
            found.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, covered)

    for st in fdef.body:
        visit(st, frozenset())
    return found


def _eligible(resolver, fdef, loop):
    """None if ``loop`` cannot be batched, else its integer sums: [(body index, acc, expr)]."""
    if loop.orelse or not isinstance(loop.target, ast.Name) or not isinstance(loop.iter, ast.Call):
        return None
    f = resolver.resolve(loop.iter.func)
    if isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range" and \
            "range" not in resolver.globals and "range" not in resolver.closure:
        f = builtins.range
    if f is not builtins.range and f is not unroll or loop.iter.keywords:
        return None
    try:
        sums, body = [], list(loop.body)
        for k, st in enumerate(loop.body):
            red = _reduction(st)
            if red is None:
                continue
            acc, expr = red
            uses = [x for x in ast.walk(loop) if isinstance(x, ast.Name) and x.id == acc]
            if len(uses) == (1 if isinstance(st, ast.AugAssign) else 2) and acc != loop.target.id:
                sums.append((k, acc, expr))
                body[k] = ast.Assign(targets=[ast.Name(id="__pysim_sum", ctx=ast.Store())], value=expr)
        inner_stores, _ = _names(body + [loop.target])
        params = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs + fdef.args.posonlyargs}
        if inner_stores & params:
            return None
        if inner_stores & _uncovered_names(fdef, loop, inner_stores):
            return None
        chk = _Eligibility(resolver, loop, inner_stores)
        chk.assigned.add(loop.target.id)
        chk.stmts(body)
    except _Fallback:
        return None
    return sums


def transform(func: Callable[..., Any]) -> Callable[..., Any] | None:
    """``func`` (a kernel's Python function) with every eligible loop made batchable, or None
    when it has none (or its source cannot be transformed)."""
    from ..parser import KernelSource

    try:
        src = KernelSource(func)
    except Exception:  # noqa: BLE001  (then PySim runs the function as it is)
        return None
    fdef = copy.deepcopy(src.fdef)
    resolver = _Resolver(func)
    count = [0]

    class _Tx(ast.NodeTransformer):
        def visit_For(self, node):
            sums = _eligible(resolver, fdef, node)
            if sums is None:
                self.generic_visit(node)
                return node
            k = count[0]
            count[0] += 1
            body_name, res = f"__pysim_body{k}", f"__pysim_loop{k}"
            body = copy.deepcopy(node.body)
            for j, (pos, _, expr) in enumerate(sums):
                body[pos] = ast.Assign(targets=[ast.Name(id=f"__pysim_sum{j}", ctx=ast.Store())],
                                       value=copy.deepcopy(expr))
            if sums:
                body.append(ast.Return(value=ast.Tuple(
                    elts=[ast.Name(id=f"__pysim_sum{j}", ctx=ast.Load()) for j in range(len(sums))],
                    ctx=ast.Load())))
            bdef = ast.FunctionDef(name=body_name, args=ast.arguments(
                posonlyargs=[], args=[ast.arg(arg=node.target.id)], vararg=None, kwonlyargs=[],
                kw_defaults=[], kwarg=None, defaults=[]), body=body, decorator_list=[], returns=None,
                type_params=[])
            no_args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                    kwarg=None, defaults=[])
            inits = ast.Lambda(args=no_args, body=ast.Tuple(
                elts=[ast.Name(id=acc, ctx=ast.Load()) for _, acc, _ in sums], ctx=ast.Load())) \
                if sums else ast.Constant(value=None)
            call = ast.Assign(targets=[ast.Name(id=res, ctx=ast.Store())], value=ast.Call(
                func=ast.Name(id=LOOP_NAME, ctx=ast.Load()),
                args=[ast.Name(id=body_name, ctx=ast.Load()), inits] + list(node.iter.args), keywords=[]))
            node.iter = ast.Attribute(value=ast.Name(id=res, ctx=ast.Load()), attr="serial", ctx=ast.Load())
            out = [bdef, call, node]
            if sums:
                finals = ast.Attribute(value=ast.Name(id=res, ctx=ast.Load()), attr="finals", ctx=ast.Load())
                out.append(ast.If(
                    test=ast.Compare(left=finals, ops=[ast.IsNot()], comparators=[ast.Constant(value=None)]),
                    body=[ast.Assign(targets=[ast.Tuple(elts=[ast.Name(id=acc, ctx=ast.Store())
                                                              for _, acc, _ in sums], ctx=ast.Store())],
                                     value=copy.deepcopy(finals))], orelse=[]))
            for n in out:
                for x in ast.walk(n):
                    if "lineno" in x._attributes and not hasattr(x, "lineno"):
                        ast.copy_location(x, node)
            return out

    try:
        fdef = _Tx().visit(fdef)
        if not count[0]:
            return None
        fdef.decorator_list = []
        fdef.returns = None
        for a in fdef.args.args + fdef.args.kwonlyargs + fdef.args.posonlyargs:
            a.annotation = None
        if fdef.args.vararg is not None:
            fdef.args.vararg.annotation = None
        if fdef.args.kwarg is not None:
            fdef.args.kwarg.annotation = None
        free = list(func.__code__.co_freevars)
        maker = ast.FunctionDef(name="__pysim_make", args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg=n) for n in free], vararg=None, kwonlyargs=[], kw_defaults=[],
            kwarg=None, defaults=[]), body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
            decorator_list=[], returns=None, type_params=[])
        mod = ast.Module(body=[maker], type_ignores=[])
        ast.fix_missing_locations(mod)
        ast.increment_lineno(mod, src.first - 1)
        code = compile(mod, src.file, "exec")
    except Exception:  # noqa: BLE001
        return None
    return code, free
