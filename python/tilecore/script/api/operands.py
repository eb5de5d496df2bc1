"""tilecore/script/api/operands.py — tile and DMA operands (regions) for both paths.

A tile operand is a region (``buf[0:16, 0:32]``, ``a[0:64]``), a whole buffer
(``buf``), or — for DMA only — a pointer with an element count (``S.dma_copy(dst, a + i, 64)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .. import frontend as fe
from .. import irvalues as irv

if TYPE_CHECKING:
    import numpy as np

    from ...ir.expr import BufferRegion
    from ..values import KernelValue


def tile_operand(op: str, name: str, x: KernelValue, scopes: Sequence[str] = ("local",),
                 n: KernelValue = None) -> KernelValue:
    """Checks operand ``x`` (kind, memory scope); returns it unchanged or, for a
    pointer, a plan item ``(pointer, n)``."""
    k = fe.kind(x)
    if k == "pointer":
        if n is None:
            raise TypeError(f"{op}: `{name}` is a pointer: give the element count (`n`) or a region "
                            f"({name}[i:i + n])")
        x = (x, n)
        scope = x[0].scope
    else:
        if k not in ("region", "buffer"):
            raise TypeError(f"{op}: `{name}` must be a region or a buffer, got {fe.describe(x)}")
        scope = x.scope
    if scope not in scopes:  # (messages are built only when they are raised: this runs per operation)
        raise TypeError(f"{op}: `{name}` must be in {' or '.join(scopes)} memory, got {scope}")
    return x


def elem_of(x: KernelValue) -> str:
    return x[0].elem if isinstance(x, tuple) else x.elem


def shape_of(x: KernelValue) -> tuple[int, ...]:
    return (x[1],) if isinstance(x, tuple) else tuple(int(s) for s in x.shape)


def ir_region(x: KernelValue) -> BufferRegion:
    """The BufferRegion node of an operand."""
    if isinstance(x, tuple):
        p, n = x
        return irv.IRRegion(p.buffer, [irv.index(p.offset)], [irv.index(n)]).node()
    if fe.kind(x) == "buffer":
        return irv.IRRegion(x.buffer, [0] * len(x.shape), list(x.shape)).node()
    return x.node()


def py_view(op: str, x: KernelValue) -> np.ndarray:
    """The numpy view of an operand (bounds-checked)."""
    if isinstance(x, tuple):
        p, n = x
        p.mem.check(op, p.offset, n)
        return p.mem.array[p.offset:p.offset + n]
    if fe.kind(x) == "buffer":
        return x.ndarray()
    return x.view
