"""EmitTileIntrinsics with a constant index after the loop dims of a source
(T[i, j, 0]): a reduction must fold the loop dim, not the trailing extent-1 dim.
Checked on the npu target against numpy and PySim."""
import numpy as np

import tilecore
from tilecore import transform
from tilecore import script as S


@S.prim_func(num_cores=1)
def row_sums(x: S.ptr("float32", "global"), y: S.ptr("float32", "global")):
    T = S.alloc_buffer((4, 8, 1), "float32")
    M = S.alloc_buffer((4, 1), "float32")
    S.dma_copy(T, x, 32)
    for i in range(4):
        M[i, 0] = S.float32(0)
        for j in range(8):
            M[i, 0] = M[i, 0] + T[i, j, 0]
    S.dma_copy(y, M, 4)


def test_reduction_of_a_source_with_a_trailing_constant_index():
    x = np.arange(32, dtype=np.float32)
    want = x.reshape(4, 8).sum(1)
    y = np.zeros(4, np.float32)
    row_sums(x, y)                                  # PySim
    np.testing.assert_array_equal(y, want)
    y[:] = 0
    mod = tilecore.build(row_sums, target="npu -cores=1")
    mod[row_sums.prim_func.attrs["global_symbol"]](x, y)
    np.testing.assert_array_equal(y, want)
    f = transform.EmitTileIntrinsics()(row_sums.prim_func)
    assert dict(f.attrs["tile_emit_counts"]) == {"tile.vec_redsum": 1}
