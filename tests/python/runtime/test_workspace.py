"""Workspace memory of the device API (AllocWorkspace / FreeWorkspace) on cpu and npu."""
import numpy as np
import pytest

import tilecore

alloc = tilecore.get_global_func("runtime.AllocWorkspace")
free = tilecore.get_global_func("runtime.FreeWorkspace")
info = tilecore.get_global_func("runtime.WorkspaceInfo")
release = tilecore.get_global_func("runtime.ReleaseWorkspace")


@pytest.mark.parametrize("dev", [tilecore.cpu(0), tilecore.npu(1)], ids=["cpu", "npu"])
def test_pool_reuses_blocks_best_fit(dev):
    release(dev)
    base = info(dev)
    p1 = alloc(dev, 1000)
    p2 = alloc(dev, 5000)
    assert p1 % 64 == 0 and p2 % 64 == 0 and p1 != p2
    assert info(dev)["in_use"] == base["in_use"] + 2
    free(dev, p1)
    free(dev, p2)
    # 900 bytes fits both free blocks: the smaller one (1024 bytes) is chosen
    assert alloc(dev, 900) == p1
    assert alloc(dev, 4000) == p2
    assert info(dev)["blocks"] == base["blocks"] + 2   # no new allocation
    p3 = alloc(dev, 100)                               # both in use: a new block
    assert p3 not in (p1, p2)
    for p in (p1, p2, p3):
        free(dev, p)
    assert info(dev)["in_use"] == base["in_use"]
    release(dev)
    assert info(dev)["blocks"] == info(dev)["in_use"]


def test_cpu_workspace_is_writable_host_memory():
    cpu = tilecore.cpu(0)
    p = alloc(cpu, 256)
    import ctypes

    buf = (ctypes.c_uint8 * 256).from_address(p)
    buf[:] = bytes(range(256))
    assert bytes(buf) == bytes(range(256))
    free(cpu, p)


def test_npu_workspace_is_device_memory():
    dev = tilecore.npu(1)
    used = tilecore.runtime.device_attributes(dev)["bytes_in_use"]
    release(dev)
    p = alloc(dev, 4096)
    assert tilecore.runtime.device_attributes(dev)["bytes_in_use"] >= used + 4096
    free(dev, p)
    release(dev)
    assert tilecore.runtime.device_attributes(dev)["bytes_in_use"] == used


@pytest.mark.parametrize("dev", [tilecore.cpu(0), tilecore.npu(1)], ids=["cpu", "npu"])
def test_bad_free_is_an_error_naming_the_device(dev):
    p = alloc(dev, 64)
    free(dev, p)
    with pytest.raises(ValueError, match=r"FreeWorkspace of .* not a workspace block in use"):
        free(dev, p)
    with pytest.raises(ValueError, match="nbytes must be >= 0"):
        alloc(dev, -1)
    np.testing.assert_equal(info(dev)["in_use"] >= 0, True)
