"""Transposes whose rows are far apart in the source (docs/compiler.md, "Layout ops"): tiles
cut for every core, the next tile loaded while this one is turned and stored, each source
byte read once: numpy's transpose exactly, near the DDR's bound."""
import numpy as np
import pytest

import tilecore
from tilecore.arch import params

from strategy_util import run_lowered


@pytest.mark.parametrize("shape,perm,dtype", [
    ((1, 384, 14, 14), (0, 2, 3, 1), np.float32),   # ConvNeXt's NCHW -> NHWC before its LayerNorm
    ((1, 14, 14, 384), (0, 3, 1, 2), np.float32),   # and back
    ((1, 96, 56, 56), (0, 2, 3, 1), np.int8),       # int8, a larger map
    ((2, 37, 5, 19), (0, 2, 3, 1), np.float32),     # odd sizes: tiles and remainders, two images
    ((3, 50), (1, 0), np.float32),                  # one small tile: fewer items than cores
    ((1, 768, 197), (0, 2, 1), np.int8),            # a transformer's [C, tokens] -> [tokens, C]
])
def test_tiled_transpose_is_numpy(shape, perm, dtype):
    x = np.random.default_rng(3).integers(-100, 100, shape).astype(dtype)
    want = x.transpose(perm)
    got = run_lowered("Transpose", {"perm": list(perm)}, [x], [np.zeros(want.shape, dtype)])[0]
    np.testing.assert_array_equal(got, want)


def test_tiled_transpose_reads_each_byte_once_near_the_ddr_bound():
    """ConvNeXt's [1, 384, 14, 14] -> [1, 14, 14, 384] in f32: each core used to stage most
    of the source in L1 (4 x its bytes read); the tiles read it once, and the run takes
    within 10% of moving its bytes in and out at the DDR's rate."""
    x = np.random.default_rng(0).standard_normal((1, 384, 14, 14)).astype(np.float32)
    got = run_lowered("Transpose", {"perm": [0, 2, 3, 1]}, [x], [np.zeros((1, 14, 14, 384), np.float32)])[0]
    np.testing.assert_array_equal(got, x.transpose(0, 2, 3, 1))
    st = tilecore.runtime.npu_simulator(0).stats()
    assert st["bytes"]["ddr_read"] == x.nbytes
    bound = 2 * x.nbytes / params()["ddr_bytes_per_cycle"]
    assert st["cycles"] <= 1.1 * bound, (st["cycles"], bound)
