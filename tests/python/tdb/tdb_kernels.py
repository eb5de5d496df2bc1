"""Kernels the tdb tests debug (their line numbers are looked up by the marker comments)."""
import numpy as np

from tilecore import script as S

N = 128  # elements per core


@S.prim_func(num_cores=2)
def axpy_tiles(x: S.ptr("int32", "global"), y: S.ptr("int32", "global"), out: S.ptr("int32", "global")):
    cid = S.get_local_id()
    X = S.alloc_buffer((128,), "int32")
    Y = S.alloc_buffer((128,), "int32")
    S.dma_copy(X, x + cid * 128, 128)  # @dma_x
    S.dma_copy(Y, y + cid * 128, 128)
    S.tile_add(Y, X, Y)  # @tadd
    S.tile_muls(Y, Y, 3)  # @tmuls
    S.dma_copy(out + cid * 128, Y, 128)  # @dma_out
    for i in range(0, 128, 8):  # @loop
        S.vstore(S.vload(out + cid * 128 + i) + 1, out + cid * 128 + i)  # @body


def inputs():
    rng = np.random.default_rng(7)
    x = rng.integers(-1000, 1000, 2 * N).astype(np.int32)
    y = rng.integers(-1000, 1000, 2 * N).astype(np.int32)
    return {"x": x, "y": y, "out": np.zeros(2 * N, np.int32)}


def expected(x, y):
    return 3 * (x + y) + 1


def line_of(marker):
    """The line number of the kernel source line carrying ``# @marker``."""
    with open(__file__, encoding="utf-8") as f:
        for k, line in enumerate(f, 1):
            if line.rstrip().endswith("# @" + marker):
                return k
    raise KeyError(marker)


def build_module(path):
    import tilecore

    mod = tilecore.build(axpy_tiles, target="npu")
    mod.save(str(path))
    return path
