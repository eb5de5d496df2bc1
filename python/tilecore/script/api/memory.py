"""tilecore/script/api/memory.py — pointers and buffers: indexing, offsets, regions,
``S.alloc_buffer`` and ``S.view``.

A pointer (a parameter ``a: S.ptr("int32", "global")``, ``a + 8``,
``buf.addr_of(i, j)``) indexes like a flat array; a buffer (``S.alloc_buffer``,
``S.view``) like an N-D array in row-major order. A subscript with slices is a
*region*, the operand of DMA and tile commands: ``a[0:64]``, ``buf[0:16, k:k + 32]``
(unit steps; the extent ``stop - start`` must be a compile-time constant).

PySim checks every access against the real extent of the array behind the
pointer (the numpy array passed in, or the allocation) and raises ``IndexError``
naming the access, the array and its extent.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ...ir import _ffi_api
from .. import frontend as fe
from .. import irvalues as irv
from .. import registry
from .. import types as T
from ..numerics import scalar_to_storage, storage
from ..pysim import semantics as sem
from ..pysim.values import Memory, SimBuffer, SimPointer, SimRegion
from ..registry import api

if TYPE_CHECKING:
    from ...ffi.function import Function

if TYPE_CHECKING:
    from ..frontend import Plan
    from ..types import DSLType
    from ..values import KernelValue


def _int_index(op, name, x):
    """A literal int or an integer scalar kernel value."""
    if type(x) is int:
        return x
    k = fe.kind(x)
    if k == "literal":
        return fe.const_int(op, name, x)
    if k != "value" or not T.is_int(x.dtype) or T.split(x.dtype)[1] != 1:
        raise TypeError(f"{op}: `{name}` must be an integer scalar, got {fe.describe(x)}")
    return x


def _normalise_index(op, x, index):
    """(kind, items): items are ints / int values, or (start, stop) pairs for slices."""
    items = index if isinstance(index, tuple) else (index,)
    rank = 1 if fe.kind(x) == "pointer" else len(x.shape)
    fe.require(len(items) == rank, f"{op}: `{x.name}` has rank {rank} but {len(items)} indices were given",
               IndexError)
    out, is_region = [], False
    for d, it in enumerate(items):
        if isinstance(it, slice):
            is_region = True
            fe.require(it.step in (None, 1), f"{op}: regions take unit-step slices only", ValueError)
            start = 0 if it.start is None else _int_index(op, "start", it.start)
            if it.stop is None:
                fe.require(fe.kind(x) != "pointer", f"{op}: a pointer slice needs a stop (a[i:i + n])", ValueError)
                stop = x.shape[d]
            else:
                stop = _int_index(op, "stop", it.stop)
            out.append((start, stop))
        else:
            i = _int_index(op, "index", it)
            if fe.kind(x) == "buffer" and isinstance(i, int):
                fe.require(0 <= i < x.shape[d], f"{op}: index {i} is out of range for dimension {d} of "
                                                f"`{x.name}` (extent {x.shape[d]})", IndexError)
            out.append(i)
    return is_region, out


@api("load")
def load(x: KernelValue, index: KernelValue) -> Plan:
    """``x[i]`` / ``buf[i, j]``: one element (a scalar of the element dtype), or with
    slices a region (see the module docstring)."""
    fe.require(fe.kind(x) in ("pointer", "buffer"), f"subscript: cannot index {fe.describe(x)}")
    is_region, items = _normalise_index("subscript", x, index)
    return fe.Plan(x=x, items=items, region=is_region)


def _is_zero(x):
    if isinstance(x, int):
        return x == 0
    return x.__class__.__name__ == "IntImm" and int(x) == 0


def _add(a, b):
    """``a + b`` as an index expression, skipping zeros (every node keeps the span)."""
    if _is_zero(a):
        return irv.index(b)
    if _is_zero(b):
        return irv.index(a)
    if isinstance(a, int) and isinstance(b, int):
        return irv.index(a + b)
    return irv.node("Add", irv.index(a), irv.index(b))


def _simplify(e):
    f = registry_simplify()
    return f(e) if f is not None else e


def registry_simplify() -> Function:
    from ...ffi._base import _ffi_core

    return _ffi_core._get_global_func("transform.SimplifyExpr")


def _region_ir(x, items):
    begins, extents = [], []
    for it in items:
        if isinstance(it, tuple):
            start, stop = it
            b, e = irv.index(start), _simplify(irv.node("Sub", irv.index(stop), irv.index(start)))
            fe.require(e.__class__.__name__ == "IntImm",
                       f"region: the extent of a slice must be a compile-time constant, got {e!r}", ValueError)
            fe.require(int(e) > 0, f"region: empty slice (extent {int(e)})", ValueError)
            e = irv.index(int(e))
        else:
            b, e = irv.index(it), irv.index(1)
        begins.append(b)
        extents.append(e)
    if fe.kind(x) == "pointer":
        begins = [_add(x.offset, begins[0])]
        return irv.IRRegion(x.buffer, begins, extents)
    return irv.IRRegion(x.buffer, begins, extents)


@load.ir
def _load_ir(p):
    x = p.x
    if p.region:
        return _region_ir(x, p.items)
    if fe.kind(x) == "pointer":
        idx = irv.index(p.items[0])
        if not (isinstance(x.offset, int) and x.offset == 0):
            idx = irv.node("Add", irv.index(x.offset), idx)
        return irv.wrap(irv.node("BufferLoad", x.buffer, [idx]))
    return irv.wrap(irv.node("BufferLoad", x.buffer, [irv.index(i) for i in p.items]))


def _py_int(v):
    return v if isinstance(v, int) else int(v.data[0])


def _py_region(op, x, items):
    if fe.kind(x) == "pointer":
        start, stop = (_py_int(v) for v in items[0])
        fe.require(stop > start, f"{op}: empty slice [{start}:{stop}]", ValueError)
        x.mem.check(op, x.offset + start, stop - start)
        view = x.mem.array[x.offset + start:x.offset + stop]
        return SimRegion(x.mem, view, f"{x.mem.name}[{x.offset + start}:{x.offset + stop}]")
    arr = x.ndarray()
    sl = []
    for d, it in enumerate(items):
        if isinstance(it, tuple):
            start, stop = (_py_int(v) for v in it)
        else:
            start = _py_int(it)
            stop = start + 1
        fe.require(stop > start, f"{op}: empty slice [{start}:{stop}] in dimension {d}", ValueError)
        if start < 0 or stop > x.shape[d]:
            raise IndexError(f"{op}: slice [{start}:{stop}] is out of range for dimension {d} of `{x.name}` "
                             f"(extent {x.shape[d]})")
        sl.append(slice(start, stop))
    return SimRegion(x.mem, arr[tuple(sl)], f"{x.mem.name}[{', '.join(f'{s.start}:{s.stop}' for s in sl)}]")


def _py_flat(op, x, items):
    """The flat element offset of a scalar access (bounds-checked)."""
    if fe.kind(x) == "pointer":
        off = x.offset + _py_int(items[0])
        x.mem.check(op, off, 1, f"`{x.mem.name}[{off}]`")
        return off
    idx = [_py_int(i) for i in items]
    for d, (i, n) in enumerate(zip(idx, x.shape)):
        if not 0 <= i < n:
            raise IndexError(f"{op}: index {i} is out of range for dimension {d} of `{x.name}` (extent {n})")
    return x.offset + int(np.ravel_multi_index(idx, x.shape)) if idx else x.offset


@load.py
def _load_py(p):
    if p.region:
        return _py_region("subscript", p.x, p.items)
    off = _py_flat("load", p.x, p.items)
    return sem.value(p.x.mem.array[off:off + 1], p.x.elem)


@api("store")
def store(x: KernelValue, index: KernelValue, value: KernelValue) -> Plan:
    """``x[i] = v`` / ``buf[i, j] = v``: stores one element. ``v`` must have the
    element dtype (a literal must fit it); use ``S.cast`` otherwise."""
    fe.require(fe.kind(x) in ("pointer", "buffer"), f"store: cannot assign into {fe.describe(x)}")
    is_region, items = _normalise_index("store", x, index)
    fe.require(not is_region, "store: cannot assign to a slice (use S.dma_copy or S.vstore)")
    k = fe.kind(value)
    if k == "literal":
        value = fe.check_literal(f"store into `{x.name}`", value, x.elem)
    else:
        fe.require(k == "value", f"store into `{x.name}`: the value must be a number or a kernel value, "
                                 f"got {fe.describe(value)}")
        fe.require(value.dtype == x.elem, f"store into `{x.name}` ({x.elem}): the value is {value.dtype}"
                                          f"{' (use S.vstore for vectors)' if T.split(value.dtype)[1] > 1 else ' (use S.cast)'}")
    return fe.Plan(x=x, items=items, value=value)


@store.ir
def _store_ir(p) -> None:
    x = p.x
    v = irv.operand(p.value, x.elem)
    if fe.kind(x) == "pointer":
        idx = irv.index(p.items[0])
        if not (isinstance(x.offset, int) and x.offset == 0):
            idx = irv.node("Add", irv.index(x.offset), idx)
        irv.emit(_ffi_api.BufferStore(x.buffer, v, [idx], None, irv.cur_span()))
    else:
        irv.emit(_ffi_api.BufferStore(x.buffer, v, [irv.index(i) for i in p.items], None, irv.cur_span()))


@store.py
def _store_py(p) -> None:
    off = _py_flat("store", p.x, p.items)
    p.x.mem.array[off] = sem.lanes_of(p.value, p.x.elem)[0] if fe.kind(p.value) != "literal" \
        else scalar_to_storage(p.value, p.x.elem)


@api("ptr_add")
def ptr_add(x: KernelValue, offset: KernelValue) -> Plan:
    """``p + k`` / ``p - k``: the pointer ``k`` elements further (a buffer gives a
    pointer into its flat storage)."""
    if fe.kind(x) not in ("pointer", "buffer"):
        raise TypeError(f"pointer `+`: not a pointer: {fe.describe(x)}")
    return fe.Plan(x=x, k=_int_index("pointer `+`", "offset", offset))


@ptr_add.ir
def _ptr_add_ir(p):
    x = p.x
    if fe.kind(x) == "buffer":
        return irv.IRPointer(x.flat, p.k if isinstance(p.k, int) else p.k.node, x)
    if isinstance(x.offset, int) and isinstance(p.k, int):
        return irv.IRPointer(x.buffer, x.offset + p.k, x.base)
    return irv.IRPointer(x.buffer, _add(x.offset, p.k), x.base)


@ptr_add.py
def _ptr_add_py(p):
    return SimPointer(p.x.mem, p.x.offset + _py_int(p.k))


@api("addr_of")
def addr_of(x: KernelValue, *index: KernelValue) -> Plan:
    """``buf.addr_of(i, j)``: a pointer to element ``(i, j)`` of a buffer (row-major)."""
    fe.require(fe.kind(x) in ("pointer", "buffer"), f"addr_of: not a buffer: {fe.describe(x)}")
    is_region, items = _normalise_index("addr_of", x, tuple(index))
    fe.require(not is_region, "addr_of: takes indices, not slices")
    return fe.Plan(x=x, items=items)


@addr_of.ir
def _addr_of_ir(p):
    x = p.x
    if fe.kind(x) == "pointer":
        return _ptr_add_ir(fe.Plan(x=x, k=p.items[0]))
    flat = None
    for it, n in zip(p.items, x.shape):
        flat = irv.index(it) if flat is None else irv.node("Add", irv.node("Mul", flat, irv.index(n)), irv.index(it))
    return irv.IRPointer(x.flat, flat, x)


@addr_of.py
def _addr_of_py(p):
    x = p.x
    if fe.kind(x) == "pointer":
        return SimPointer(x.mem, x.offset + _py_int(p.items[0]))
    idx = [_py_int(i) for i in p.items]
    return SimPointer(x.mem, x.offset + int(np.ravel_multi_index(idx, x.shape)))


# ---------------------------------------------------------------------------
# Allocation and views
# ---------------------------------------------------------------------------
def _shape(op, shape):
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    dims = tuple(fe.const_int(op, "shape", s, lo=1) for s in shape)
    fe.require(1 <= len(dims) <= 4, f"{op}: rank must be 1..4, got {len(dims)}", ValueError)
    return dims


@api("alloc_buffer")
def alloc_buffer(shape: int | Sequence[int], dtype: str | DSLType, scope: str = "local",
                 name: str | None = None) -> Plan:
    """Allocates a buffer of ``shape`` (compile-time ints, rank 1..4) and ``dtype`` in
    ``scope``: ``"local"`` (this core's L1, 1 MiB) or ``"shared"`` (the cluster's L2,
    4 MiB, one buffer seen by every core).

    Returns a buffer: ``buf[i, j]`` loads, ``buf[i, j] = v`` stores, ``buf[0:4, 0:8]``
    is a region, ``buf.addr_of(i, j)`` / ``buf + k`` are pointers. Contents start at 0
    in PySim; on TC1 they are whatever the memory held (write before you read).
    """
    dims = _shape("alloc_buffer", shape)
    elem = T.dtype_name(dtype)
    fe.require(T.split(elem)[1] == 1, f"alloc_buffer: element dtype must be scalar, got {elem}")
    fe.require(scope in ("local", "shared"),
               f"alloc_buffer: scope must be 'local' or 'shared', got {scope!r}", ValueError)
    return fe.Plan(shape=dims, elem=elem, scope=scope, name=name)


@alloc_buffer.ir
def _alloc_ir(p):
    ctx = registry.context()
    name = p.name or ctx.fresh_name("buf")
    buf = _ffi_api.DeclBuffer([irv.index(s) for s in p.shape], p.elem, name, p.scope, irv.cur_span())
    flat = buf if len(p.shape) == 1 else _ffi_api.Buffer(
        buf.data, p.elem, [irv.index(math.prod(p.shape))], [], irv.index(0), p.scope, name, irv.cur_span())
    ctx.allocate(buf)
    return irv.IRBuffer(buf, flat)


@alloc_buffer.py
def _alloc_py(p):
    core = registry.context()
    n = math.prod(p.shape)
    if p.scope == "shared":
        mem = core.shared_allocation(p.name, n, p.elem)
    else:
        mem = Memory(np.zeros(n, dtype=storage(p.elem)), p.elem, "local", p.name or "buf")
    return SimBuffer(mem, 0, p.shape)


@api("view")
def view(x: KernelValue, shape: int | Sequence[int]) -> Plan:
    """``S.view(p, (M, K))``: the memory at pointer ``p`` seen as a row-major buffer of
    ``shape`` (compile-time ints), e.g. to take 2-D regions of a global matrix for DMA.
    PySim checks that the whole view lies inside the pointer's array."""
    fe.require(fe.kind(x) in ("pointer", "buffer"), f"view: not a pointer: {fe.describe(x)}")
    if fe.kind(x) == "buffer":
        x = x + 0
    return fe.Plan(x=x, shape=_shape("view", shape))


@view.ir
def _view_ir(p):
    x = p.x
    buf = _ffi_api.Buffer(x.buffer.data, x.elem, [irv.index(s) for s in p.shape], [],
                          _add(x.buffer.elem_offset, x.offset), x.scope, x.name, irv.cur_span())
    flat = _ffi_api.Buffer(x.buffer.data, x.elem, [irv.index(math.prod(p.shape))], [], buf.elem_offset,
                           x.scope, x.name, irv.cur_span())
    return irv.IRBuffer(buf, flat)


@view.py
def _view_py(p):
    x = p.x
    x.mem.check("view", x.offset, math.prod(p.shape), f"a view of shape {list(p.shape)}")
    return SimBuffer(x.mem, x.offset, p.shape)
