"""compiler.estimate_cost against the simulator: the estimate of a kernel's cycles (from
arch/cost.h's per-command formulas and a schedule of the commands on the engines and the
shared DDR) within 10% of what the simulator counts when the kernel runs."""
import numpy as np
import pytest

import tilecore
from tilecore.compiler import LowerOp, TensorSpec, estimate_cost

pytestmark = pytest.mark.npu


def simulated_cycles(f, *arrays):
    mod = tilecore.build(f, target="npu -cores=4")
    mod[str(f.attrs["global_symbol"])](*arrays)
    return tilecore.runtime.npu_simulator(0).stats()["cycles"]


CASES = [
    ("MatMul", {}, [(96, 300), (300, 200)], [(96, 200)]),  # matrix engine, edge tiles
    ("Add", {}, [(4, 64, 56, 56), (4, 64, 56, 56)], [(4, 64, 56, 56)]),  # DMA bound, DDR shared
    ("Softmax", {"axis": -1}, [(8, 128, 128)], [(8, 128, 128)]),  # vector engine
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
     [(1, 32, 56, 56)], [(1, 32, 28, 28)]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_estimate_within_10_percent_of_the_simulator(case):
    op, attrs, ins, outs = CASES[case]
    f = LowerOp(op, attrs, [TensorSpec(s, "float32") for s in ins], [TensorSpec(s, "float32") for s in outs])
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ins] + [np.zeros(s, np.float32) for s in outs]
    sim = simulated_cycles(f, *arrays)
    est = estimate_cost(f)
    assert abs(est["cycles"] - sim) <= 0.1 * sim, (op, est["cycles"], sim)
    assert len(est["engine_busy"]) == 4
    assert est["cycles"] >= max(max(c.values()) for c in est["engine_busy"])


def test_matmul_macs_and_ddr_bytes_are_the_kernels():
    f = LowerOp("MatMul", {}, [TensorSpec((128, 256), "float32"), TensorSpec((256, 64), "float32")],
                [TensorSpec((128, 64), "float32")])
    est = estimate_cost(f)
    assert est["macs"] == 128 * 256 * 64
    # A and B read (B once per row tile), Y written, all f32
    assert est["ddr_bytes"] == 4 * (128 * 256 + 256 * 64 + 128 * 64)


def test_a_dma_bound_kernel_is_bound_by_the_ddr_or_its_dma_engines():
    f = LowerOp("Add", {}, [TensorSpec((1 << 20,), "float32")] * 2, [TensorSpec((1 << 20,), "float32")])
    assert estimate_cost(f)["bound_by"] in ("ddr", "din", "dout")


def test_bad_argument_names_the_function():
    with pytest.raises(TypeError, match="EstimateKernelCost"):
        estimate_cost("not a function")
