"""Fixtures of the compiler tests."""
import gc

import pytest

from tilecore import runtime


@pytest.fixture
def hazard_checked():
    """The npu device simulating in `hazard` mode (docs/tc1.md): yields a function that
    returns the unordered L1 accesses of the runs so far (DDR ranges of strided stores
    from different cores are reported by their bounding ranges, so those are left out)."""
    gc.collect()
    runtime.npu_configure(0, "npu -cores=4 -mode=hazard")
    yield lambda: [h["message"] for h in runtime.npu_simulator(0).hazards() if h["space"] != "ddr"]
    gc.collect()
    runtime.npu_configure(0, "npu -cores=4")
