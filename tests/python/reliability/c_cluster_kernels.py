"""A 4-core DSL kernel with a barrier and a host callback, for test_c_cluster.py's child processes."""
import tilecore
from tilecore import script as S

REFUSED = {"core": 1}


@tilecore.register_func("test_c_cluster.refuse_core", override=True)
def _refuse(buf, cid):
    if cid == REFUSED["core"]:
        raise KeyError(f"core {cid} refused its buffer")


@S.prim_func(num_cores=4)
def phases(a: S.ptr("int32", "global"), out: S.ptr("int32", "global")):
    cid = S.get_local_id()
    slots = S.alloc_buffer((4,), "int32", scope="shared")
    T = S.alloc_buffer((8,), "int32")
    S.dma_copy(T, a + cid * 8, 8)
    S.call_packed("test_c_cluster.refuse_core", T, cid)
    slots[cid] = T[0]
    S.barrier()
    if cid == 0:
        out[0] = slots[0] + slots[1] + slots[2] + slots[3]
