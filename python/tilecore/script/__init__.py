"""tilecore.script — the kernel DSL and PySim (see docs/dsl.md).

    from tilecore import script as S

    @S.prim_func
    def add_one(a: S.ptr("int32", "global"), b: S.ptr("int32", "global")):
        va = S.vload(a)
        vb = S.vadd(va, 1)
        S.vstore(vb, b)

    add_one.prim_func                       # Kernel IR (parsed from the source)
    tilecore.build(add_one, target="npu")   # compiled for TC1
    add_one(a, b)                           # run in Python (PySim)

Every API has an IR and a Python implementation sharing one front end
(registry.py, frontend.py); the parser is parser.py, PySim is pysim/.
"""

# No `from __future__ import annotations` here: it would add a name `annotations` to the
# DSL's namespace (S.annotations), where every public name is a DSL function.
from . import registry as _registry
from .types import DSLType, PointerType, ptr, SCALAR_TYPES as _SCALARS, VECTOR_TYPES as _VECTORS
from .kernel import Kernel, prim_func
from .control import static_range, unroll
from .errors import KernelError
from .pysim.racecheck import DataRaceError
from . import api as _api  # registers every DSL function
from .api.memory import alloc_buffer, view
from .api.vector import (
    cast, tail_mask, vabs, vadd, vand, vbcast, vceq, vcge, vcgt, vcle, vclt, vcne, vload, vmax, vmin, vmul,
    vnot, vor, vredmax, vredmin, vredsum, vsel, vshl, vshr, vstore, vsub, vxor,
)
from .api.math import exp, log, recip, rsqrt, sigmoid, sqrt, tanh
from .api.tile import TILE_OPS as _TILE_OPS, mm, tile_copy, tile_lut, tile_quant, tile_requant
from .api.dma import async_dma_copy, dma_copy, dma_fill, wait_events
from .api.sync import barrier, get_local_id, get_local_size
from .api.misc import call_packed, const, printf

globals().update(_TILE_OPS)  # tile_add, tile_exp, ...: one per row of arch/tile_ops.def
globals().update(_SCALARS)
globals().update(_VECTORS)

_registry.check_complete()


def list_apis() -> list[str]:
    """The names of every registered DSL function (each has an IR and a PySim implementation)."""
    return sorted(_registry.all_apis())
