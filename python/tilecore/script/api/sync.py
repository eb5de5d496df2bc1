"""tilecore/script/api/sync.py — cores: their ids, their count, the cluster barrier.

Every core runs the whole kernel (SPMD); ``S.get_local_id()`` tells them apart.
``S.barrier()`` waits until every core has reached it. It orders the cores' front
ends only: wait for your DMA events first, or other cores may not see the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import frontend as fe
from .. import irvalues as irv
from .. import registry
from ..pysim import semantics as sem
from ..registry import api

if TYPE_CHECKING:
    from ..frontend import Plan


@api("get_local_id")
def get_local_id() -> Plan:
    """The index of the executing core, ``0 .. get_local_size() - 1`` (an int32 scalar)."""
    return fe.Plan()


get_local_id.ir(lambda p: irv.wrap(registry.context().core_var))
get_local_id.py(lambda p: sem.value([registry.context().core], "int32"))


@api("get_local_size")
def get_local_size() -> Plan:
    """The number of cores running the kernel: a compile-time Python int (the kernel's
    ``num_cores``, 4 by default), so it may size loops and buffers."""
    return fe.Plan()


get_local_size.ir(lambda p: registry.context().num_cores)
get_local_size.py(lambda p: registry.context().num_cores)


@api("barrier")
def barrier() -> Plan:
    """Waits until every core of the kernel reaches a barrier (TC1 barrier).

    In PySim's single-thread mode (``TILECORE_PYSIM_SINGLE_THREAD=1``) the cores run one
    after another, so a barrier cannot be honoured: it raises RuntimeError."""
    return fe.Plan()


barrier.ir(lambda p: irv.emit(irv.call("tir.barrier")))
barrier.py(lambda p: registry.context().barrier())
