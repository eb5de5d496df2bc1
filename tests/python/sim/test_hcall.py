"""The `hcall` instruction: a TC1 program calls a registered Python function on
simulator memory (docs/tc1.md, "Host calls"), serviced by the runtime."""
import struct

import numpy as np
import pytest

import tilecore
from tilecore.sim import SimError, Simulator

SEEN = []


@tilecore.register_func("test_hcall.negate_add", override=True)
def _negate_add(t, k):
    a = t.numpy()
    SEEN.append((a.shape, str(a.dtype), k))
    t.copyfrom((-a + k).astype(a.dtype))


@tilecore.register_func("test_hcall.fail", override=True)
def _fail(t):
    raise KeyError("host refused")


def block(name_addr, args):
    b = struct.pack("<II", name_addr, len(args))
    for kind, dtype, ndim, space, ival, fval, addr, shape, strides in args:
        b += struct.pack("<BBBBifI4I4i", kind, dtype, ndim, space, ival, fval, addr, *shape, *strides)
    return np.frombuffer(b, np.uint8)


def program(name):
    return f"""
.data l1, 0x8000
nm: .byte {', '.join(str(c) for c in name.encode())}, 0
.text
        li x2, 0x9000
        fence
        hcall x1, x2, 0
        halt
"""


def run(name, args):
    sim = Simulator(target="npu -cores=1")
    tilecore.get_global_func("runtime.InstallHostCalls")(sim.handle)
    sim.load(program(name))
    sim.write("l1", 0x9000, block(0x8000, args))
    return sim


def test_host_function_reads_and_writes_a_strided_ddr_tensor():
    sim = Simulator(target="npu -cores=1")
    data = np.arange(24, dtype=np.int16).reshape(4, 6)
    # a 4 x 3 view (every other column) of the 4 x 6 int16 matrix at ddr 0x1000, and k = 5
    args = [(2, 2, 2, 0, 0, 0.0, 0x1000, (4, 3, 0, 0), (6, 2, 0, 0)), (0, 0, 0, 0, 5, 0.0, 0, (0,) * 4, (0,) * 4)]
    sim = run("test_hcall.negate_add", args)
    sim.write("ddr", 0x1000, data)
    SEEN.clear()
    sim.run()
    want = data.copy()
    want[:, ::2] = -data[:, ::2] + 5
    np.testing.assert_array_equal(sim.read("ddr", 0x1000, (4, 6), "int16"), want)
    assert SEEN == [((4, 3), "int16", 5)]
    assert sim.xreg(0, 1) == 0


def test_errors_of_the_host_function_reach_the_caller():
    sim = run("test_hcall.fail", [(2, 4, 1, 2, 0, 0.0, 0x100, (4, 0, 0, 0), (1, 0, 0, 0))])
    with pytest.raises(KeyError, match="host refused"):
        sim.run()
    sim = run("test_hcall.nobody", [])
    with pytest.raises(ValueError, match="no global function `test_hcall.nobody`"):
        sim.run()


def test_hcall_without_a_host_faults():
    sim = Simulator(target="npu -cores=1")
    sim.load(program("x"))
    with pytest.raises(SimError, match="hcall: no host services calls"):
        sim.run()
