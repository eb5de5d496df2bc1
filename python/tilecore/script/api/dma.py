"""tilecore/script/api/dma.py — DMA between any memories, synchronous or with events.

``S.dma_copy`` returns when the copy is done. ``S.async_dma_copy(..., event=e)``
only starts it; the data is guaranteed in place after ``S.wait_events(e)``, which
waits for every copy on ``e`` issued before it. Reading the destination (or
overwriting the source) before the wait is a race on TC1; PySim makes the race
visible by writing the destination only at the wait (the source is read when the
copy is issued). Copies still pending when the kernel ends complete then.

Operands: regions, whole buffers, or a pointer plus ``n`` elements. Both sides hold
the same number of elements; when their dtypes differ the DMA converts with TC1's
rules (round to nearest even, saturate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import frontend as fe
from .. import irvalues as irv
from .. import registry
from ..numerics import convert, scalar_to_storage
from ..registry import api
from .operands import elem_of, ir_region, py_view, shape_of, tile_operand

if TYPE_CHECKING:
    from ..frontend import Plan
    from ..values import KernelValue

#: Event ids 0..14 are the kernel's; 15 is used by synchronous copies.
NUM_EVENTS = 15
SYNC_EVENT = 15
SCOPES = ("global", "shared", "local")


def _copy_plan(op, dst, src, n, event):
    d = tile_operand(op, "dst", dst, SCOPES, n)
    s = tile_operand(op, "src", src, SCOPES, n)
    nd, ns = int(np.prod(shape_of(d))), int(np.prod(shape_of(s)))
    fe.require(nd == ns, f"{op}: dst has {nd} elements ({list(shape_of(d))}) but src has {ns} "
                         f"({list(shape_of(s))})", ValueError)
    fe.require(fe.kind(dst) != "pointer" or fe.kind(src) != "pointer" or True, "")
    return fe.Plan(dst=d, src=s, event=event)


def _n(op, n):
    return None if n is None else fe.const_int(op, "n", n, lo=1)


@api("dma_copy")
def dma_copy(dst: KernelValue, src: KernelValue, n: KernelValue = None) -> Plan:
    """Copies ``src`` to ``dst`` and waits for it (TC1 dma.in / dma.out).

    :param dst, src: regions, buffers, or pointers (then ``n`` is the element count), in
        any memory (global, shared, local). Equal element counts; shapes may differ
        (elements are taken in row-major order). Different dtypes convert.
    :param n: element count for pointer operands (a compile-time int).
    """
    return _copy_plan("dma_copy", dst, src, _n("dma_copy", n), SYNC_EVENT)


@dma_copy.ir
def _dma_copy_ir(p) -> None:
    irv.emit(irv.call("tile.dma_copy", ir_region(p.dst), ir_region(p.src), irv.index(p.event)))
    irv.emit(irv.call("tile.wait", irv.index(p.event)))


def _converted(op, p):
    src = py_view(op, p.src)
    data = convert(np.array(src, copy=True), elem_of(p.src), elem_of(p.dst))
    dst = py_view(op, p.dst)
    return dst, data.reshape(dst.shape)


@dma_copy.py
def _dma_copy_py(p) -> None:
    dst, data = _converted("dma_copy", p)
    dst[...] = data


@api("async_dma_copy")
def async_dma_copy(dst: KernelValue, src: KernelValue, n: KernelValue = None, event: int = 0) -> Plan:
    """Starts copying ``src`` to ``dst``; ``S.wait_events(event)`` waits for it.

    :param dst, src, n: as for :func:`dma_copy`.
    :param event: a compile-time id in 0 .. 14 that the copy signals when done.
    """
    ev = fe.const_int("async_dma_copy", "event", event, lo=0, hi=NUM_EVENTS - 1)
    return _copy_plan("async_dma_copy", dst, src, _n("async_dma_copy", n), ev)


async_dma_copy.ir(lambda p: irv.emit(irv.call("tile.dma_copy", ir_region(p.dst), ir_region(p.src),
                                              irv.index(p.event))))


@async_dma_copy.py
def _async_py(p) -> None:
    dst, data = _converted("async_dma_copy", p)
    registry.context().pending_dma.setdefault(p.event, []).append((dst, data))


@api("wait_events")
def wait_events(*events: KernelValue) -> Plan:
    """Waits until every copy issued so far on each of ``events`` (ids 0..14) is done."""
    fe.require(events, "wait_events: give at least one event id")
    evs = [fe.const_int("wait_events", "event", e, lo=0, hi=NUM_EVENTS - 1) for e in events]
    return fe.Plan(events=evs)


@wait_events.ir
def _wait_ir(p) -> None:
    for e in p.events:
        irv.emit(irv.call("tile.wait", irv.index(e)))


@wait_events.py
def _wait_py(p) -> None:
    core = registry.context()
    for e in p.events:
        for dst, data in core.pending_dma.pop(e, []):
            dst[...] = data


@api("dma_fill")
def dma_fill(dst: KernelValue, value: KernelValue, n: KernelValue = None) -> Plan:
    """Fills ``dst`` (a region, a buffer, or a pointer with ``n``) with ``value`` converted
    to its dtype, and waits for it.

    :param value: a literal or a scalar kernel value.
    """
    d = tile_operand("dma_fill", "dst", dst, SCOPES, _n("dma_fill", n))
    if fe.kind(value) == "literal":
        value = fe.literal_value(value)
    else:
        fe.value_dtype("dma_fill", "value", value, vector=False)
    return fe.Plan(dst=d, value=value)


@dma_fill.ir
def _fill_ir(p) -> None:
    v = p.value.node if hasattr(p.value, "node") else irv.const(
        p.value, "float32" if isinstance(p.value, float) else "int32")
    irv.emit(irv.call("tile.dma_fill", ir_region(p.dst), v, irv.index(SYNC_EVENT)))
    irv.emit(irv.call("tile.wait", irv.index(SYNC_EVENT)))


@dma_fill.py
def _fill_py(p) -> None:
    dst = py_view("dma_fill", p.dst)
    if hasattr(p.value, "data"):
        dst[...] = convert(p.value.data[:1], p.value.dtype, elem_of(p.dst))[0]
    else:
        dst[...] = scalar_to_storage(p.value, elem_of(p.dst))
