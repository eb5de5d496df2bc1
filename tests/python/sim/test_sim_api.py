"""tilecore.sim.Simulator: memory access, runs, steps, statistics, traces, faults."""
import json
import os
import threading

import numpy as np
import pytest

import tilecore
from tilecore import arch, sim

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")
A_DDR, B_DDR, C_DDR = 0x0, 0x100000, 0x200000


def gemm_program(n=256, tile=64, cores=4):
    with open(os.path.join(ROOT, "benchmarks", "sim_gemm_i8.s")) as f:
        body = f.read()
    params = dict(M=n, N=n, K=n, TM=tile, TN=tile, NC=cores, A_DDR=A_DDR, B_DDR=B_DDR, C_DDR=C_DDR)
    return arch.assemble("".join(f".equ {k}, {v}\n" for k, v in params.items()) + body)


STORE_CORE_IDS = """
.core all
        csrr x1, coreid
        li   x2, 0x100
        muli x3, x1, 4
        add  x2, x2, x3
        sw   x1, [ddr: x2 + 0]
        halt
"""


def test_write_read_every_dtype_and_space():
    s = sim.Simulator("npu -cores=2")
    for dtype in ["int8", "uint8", "int16", "uint16", "int32", "uint32", "float16", "float32", "int64", "bool"]:
        x = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
        for space, core in [("ddr", 0), ("l2", 0), ("l1", 1)]:
            s.write(space, 0x40, x, core=core)
            y = s.read(space, 0x40, (2, 3, 4), dtype, core=core)
            assert y.dtype == np.dtype(dtype) and np.array_equal(x, y)
    # Non-contiguous input is laid out in C order.
    m = np.arange(16, dtype=np.int32).reshape(4, 4)
    s.write("ddr", 0, m.T)
    assert np.array_equal(s.read("ddr", 0, (4, 4), "int32"), m.T)


def test_run_gemm_on_four_cores_matches_numpy():
    n = 256
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (n, n), dtype=np.int8)
    b = rng.integers(-128, 128, (n, n), dtype=np.int8)
    s = sim.Simulator(target="npu -cores=4")
    s.load(gemm_program(n))
    s.write("ddr", A_DDR, a)
    s.write("ddr", B_DDR, b)
    assert s.run() is s
    c = s.read("ddr", C_DDR, (n, n), "int32")
    assert np.array_equal(c, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32))
    st = s.stats()
    assert st["cycles"] > 0 and 0 < st["mac_utilisation"] <= 1 and 0 < st["mac_efficiency"] <= 1
    assert sum(core["macs"] for core in st["cores"]) == n ** 3
    assert len(st["cores"]) == 4 and set(st["cores"][0]) >= {"sc", "din", "dout", "mm", "vec", "macs"}
    assert st["bytes"]["ddr_written"] == n * n * 4
    assert "cycles" in sim.format_stats(st) and "mm" in s.stats_text()


@pytest.mark.parametrize("mode", ["functional+timing", "functional", "timing", "hazard"])
def test_modes(mode):
    s = sim.Simulator("npu -cores=4", mode=mode)
    assert s.config["mode"] == mode
    s.load(STORE_CORE_IDS)
    s.run()
    ids = s.read("ddr", 0x100, (4,), "int32")
    assert list(ids) == [0, 1, 2, 3]
    assert (s.stats()["cycles"] == 0) == (mode == "functional")
    assert s.hazards() == []


def test_target_options_and_bad_modes():
    assert sim.Simulator("npu -cores=16 -ddr=64MiB").config["cores"] == 16
    assert sim.Simulator("npu -cores=3").cores == 3
    with pytest.raises(ValueError):
        sim.Simulator(mode="fast")
    with pytest.raises(sim.SimError) as info:
        sim.Simulator("npu -cores=17")
    assert info.value.fault == "Usage" and info.value.core == -1 and "-cores" in str(info.value)
    with pytest.raises(sim.SimError, match="unknown target option"):
        sim.Simulator("npu -bogus=1")


def test_step_and_state():
    s = sim.Simulator("npu -cores=1")
    s.load("li x5, 7\naddi x5, x5, 1\nhalt\n")
    assert not s.finished
    assert s.step(1) == 1
    assert s.xreg(0, 5) == 7 and s.pc(0) == 1
    assert s.instruction_at(0, 1) == "addi x5, x5, 1" and s.source_line(0, 1) == 2
    assert s.step(10) == 2
    assert s.finished and s.halted(0) and s.xreg(0, 5) == 8
    assert s.step(5) == 0
    s.set_xreg(0, 6, 0xFFFFFFFF)
    assert s.xreg(0, 6) == 0xFFFFFFFF
    assert s.vreg(0, 1).shape == (32,) and s.preg(0, 0) == 0xFFFFFFFF
    assert s.cycle() >= 3


def test_load_accepts_text_image_and_program():
    p = arch.assemble(STORE_CORE_IDS)
    for what in (p, STORE_CORE_IDS, p.to_bytes()):
        s = sim.Simulator("npu -cores=4")
        s.load(what)
        s.run()
        assert s.program == p
    with pytest.raises(TypeError):
        sim.Simulator().load(42)


def test_trace(tmp_path):
    s = sim.Simulator("npu -cores=4", trace=True)
    s.load(gemm_program(256))
    s.run()
    path = tmp_path / "t.json"
    s.trace(str(path))
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    assert len(events) > 0
    assert json.loads(s.trace()) == data
    with pytest.raises(ValueError, match="trace=True"):
        sim.Simulator().trace(str(tmp_path / "x.json"))


def test_hazard_mode_reports_unsynchronised_accesses():
    s = sim.Simulator("npu -cores=1", mode="hazard")
    s.load("""
.data l1, 0xF0000
d: .dmadesc dtype=i8 shape=[64]
.text
        li x1, 0x1000
        dma.in l1:x1, ddr:x0, [x0 + d]
        lw x2, [l1: x1 + 0]
        wait sc, din, 1
        halt
""")
    s.run()
    hz = s.hazards()
    assert hz and hz[0]["kind"] == "RAW" and "dma.in" in hz[0]["first_inst"] and "message" in hz[0]


# ---- every fault class raises SimError naming core and pc ---------------------------------
FAULTS = [
    ("IllegalInstruction", "nop\n.inst 0xFF\nhalt\n", 1, 0, 1),
    ("MemoryFault", "li x1, 0x7fffffff\nlw x2, [ddr: x1 + 0]\nhalt\n", 1, 0, 1),
    ("MemoryFault", "li x1, 2\nlw x2, [l1: x1 + 0]\nhalt\n", 1, 0, 1),
    ("BadDescriptor", ".data l1, 0xF0000\nd: .word 0, 0, 0\n   .zero 64\n.text\n    mm.i8 x1, x2, x3, [x0 + d]\n    halt\n",
     1, 0, 0),
    ("PcOutOfRange", "nop\n", 1, 0, 1),
    ("Deadlock", "li x1, 3\nwait sc, din, x1\nhalt\n", 1, -1, None),
    ("Deadlock", ".core 0\nbarrier\nhalt\n.core 1\nhalt\n", 2, -1, None),
]


@pytest.mark.parametrize("fault, source, cores, core, pc", FAULTS)
def test_fault_classes(fault, source, cores, core, pc):
    s = sim.Simulator(f"npu -cores={cores}")
    s.load(source)
    with pytest.raises(sim.SimError) as info:
        s.run()
    e = info.value
    assert isinstance(e, tilecore.TilecoreError) and isinstance(e, RuntimeError)
    assert e.fault == fault
    assert e.core == core
    if pc is not None:
        assert e.pc == pc
        if fault != "PcOutOfRange":  # past the end there is no instruction
            assert e.instruction and e.line > 0
        assert str(e).startswith(f"core {core}, pc {pc}")
        assert e.reason and e.reason in str(e)
    else:
        assert "waits" in str(e)


def test_budget_fault():
    s = sim.Simulator("npu -cores=1")
    s.load("loop: jal x0, loop\n")
    with pytest.raises(sim.SimError) as info:
        s.run(max_instructions=10000)
    assert info.value.fault == "Budget" and info.value.core == 0 and info.value.pc == 0
    assert "budget of 10000" in str(info.value)


def test_usage_faults_on_host_access():
    s = sim.Simulator("npu -cores=1 -ddr=1MiB")
    with pytest.raises(sim.SimError) as info:
        s.write("ddr", (1 << 20) - 2, np.zeros(4, np.uint8))
    assert info.value.fault == "Usage" and "outside" in str(info.value)
    with pytest.raises(sim.SimError):
        s.read("l1", 0, (4,), "uint8", core=3)
    with pytest.raises(ValueError, match="memory space"):
        s.write("l3", 0, np.zeros(1))
    with pytest.raises(ValueError):
        s.write("ddr", -4, np.zeros(1))
    with pytest.raises(TypeError):
        s.write(0, 0, np.zeros(1))


def test_fault_leaves_the_simulator_usable():
    s = sim.Simulator("npu -cores=1")
    s.load(".inst 0xFF\n")
    with pytest.raises(sim.SimError):
        s.run()
    s.load("li x3, 9\nhalt\n")
    s.run()
    assert s.xreg(0, 3) == 9


def test_run_releases_the_gil():
    s = sim.Simulator("npu -cores=4", mode="functional")
    s.load(gemm_program(512, 128))
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        s.run()
    finally:
        done.set()
        t.join()
    assert len(ticks) >= 1
