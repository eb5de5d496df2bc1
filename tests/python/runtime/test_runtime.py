"""The runtime layer: device APIs (cpu, npu), npu and c modules, module files."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tilecore
from tilecore import arch, runtime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
import tcx_edit  # noqa: E402 (a module file's checksum is FNV-1a over the bytes, as a flags-0 .tcx's)

# A hand-written npu kernel: out[i] = a[i] + b[i] for n int32 elements, using the
# runtime's calling convention (arguments in the L1 argument block, one word each).
ADD_ASM = """
.equ ARGS, 0xFFC00
.core 0
        lw   x1, [l1: x0 + ARGS]       # a
        lw   x2, [l1: x0 + ARGS + 4]   # b
        lw   x3, [l1: x0 + ARGS + 8]   # out
        lw   x4, [l1: x0 + ARGS + 12]  # n
        li   x5, 0
loop:   bge  x5, x4, done
        lw   x6, [ddr: x1 + 0]
        lw   x7, [ddr: x2 + 0]
        add  x6, x6, x7
        sw   x6, [ddr: x3 + 0]
        addi x1, x1, 4
        addi x2, x2, 4
        addi x3, x3, 4
        addi x5, x5, 1
        jal  x0, loop
done:   halt
"""

PARAMS = [
    {"name": "a", "kind": "buffer", "dtype": "int32", "written": False},
    {"name": "b", "kind": "buffer", "dtype": "int32", "written": False},
    {"name": "out", "kind": "buffer", "dtype": "int32", "written": True},
    {"name": "n", "kind": "int", "dtype": "int32"},
]

C_SOURCE = """
#include <stdint.h>
int32_t tc_vadd(void** args) {
  const int32_t* a = (const int32_t*)args[0];
  const int32_t* b = (const int32_t*)args[1];
  int32_t* out = (int32_t*)args[2];
  int64_t n = *(const int64_t*)args[3];
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  return 0;
}
"""


def npu_module():
    prog = arch.assemble(ADD_ASM)
    return tilecore.get_global_func("runtime.NpuModuleCreate")(
        [{"name": "vadd", "program": prog, "assembly": ADD_ASM, "params": PARAMS, "cores": 1,
          "line_table": [[0, i, f"add.s:{i + 6}"] for i in range(16)]}]
    )


def c_module(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "k.c"
    src.write_text(C_SOURCE)
    so = tmp_path / "k.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    return tilecore.get_global_func("runtime.CModuleCreate")(C_SOURCE, so.read_bytes(), [{"name": "vadd", "params": PARAMS}])


@pytest.mark.npu
def test_device_apis_are_registered():
    assert {"cpu", "npu"} <= set(runtime.list_device_apis())
    assert tilecore.get_global_func("device_api.npu") is not None
    assert runtime.device_attributes(tilecore.npu(0))["cores"] >= 1


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "float16", "float32", "bool"])
def test_npu_arrays_round_trip(dtype):
    x = (np.arange(60) % 5).astype(dtype).reshape(3, 4, 5)
    d = tilecore.nd.array(x, device=tilecore.npu(0))
    assert d.device == tilecore.npu(0) and d.shape == (3, 4, 5)
    assert np.array_equal(d.numpy(), x)
    e = d.copyto(tilecore.npu(0))
    assert np.array_equal(e.numpy(), x)
    h = tilecore.nd.empty((3, 4, 5), dtype)
    e.copyto(h)
    assert np.array_equal(h.numpy(), x)
    d.copyfrom(x[::-1].copy())
    assert np.array_equal(d.numpy(), x[::-1])


def test_npu_memory_is_reused_and_bounded():
    before = runtime.device_attributes(tilecore.npu(0))["bytes_in_use"]
    for _ in range(50):
        tilecore.nd.empty((1 << 20,), "uint8", tilecore.npu(0))
    assert runtime.device_attributes(tilecore.npu(0))["bytes_in_use"] == before
    with pytest.raises(MemoryError, match="out of device memory"):
        tilecore.nd.empty((1 << 30,), "uint8", tilecore.npu(0))


def test_npu_configure_and_simulator():
    runtime.npu_configure(3, "npu -cores=2 -ddr=16MiB")
    assert runtime.device_attributes(tilecore.npu(3))["cores"] == 2
    keep = tilecore.nd.array(np.ones(4, np.int32), device=tilecore.npu(3))
    with pytest.raises(ValueError, match="still allocated"):
        runtime.npu_configure(3, "npu -cores=4")
    del keep
    with pytest.raises(tilecore.sim.SimError):
        runtime.npu_configure(3, "npu -cores=99")
    runtime.npu_configure(3, "npu -cores=4")
    assert runtime.npu_simulator(3).cores == 4


@pytest.mark.parametrize("kind", ["npu", "c"])
def test_module_runs_with_numpy_and_ndarrays(kind, tmp_path):
    mod = npu_module() if kind == "npu" else c_module(tmp_path)
    assert isinstance(mod, runtime.Module) and mod.kind == kind and mod.functions == ["vadd"]
    a = np.arange(100, dtype=np.int32)
    b = np.full(100, 7, dtype=np.int32)
    out = np.zeros(100, dtype=np.int32)
    mod["vadd"](a, b, out, 100)
    assert np.array_equal(out, a + b)
    # Device arrays are used in place (npu) or staged (c); host arrays in place (c) or staged (npu).
    da, db = tilecore.nd.array(a, device=tilecore.npu(0)), tilecore.nd.array(b * 2, device=tilecore.npu(0))
    dout = tilecore.nd.empty((100,), "int32", tilecore.npu(0))
    mod(da, db, dout, 100)
    assert np.array_equal(dout.numpy(), a + 2 * b)
    with pytest.raises(TypeError, match=r"vadd\(a: buffer\[int32\].*takes 4 arguments"):
        mod["vadd"](a, b, out)
    with pytest.raises(TypeError, match="must have dtype int32"):
        mod["vadd"](a.astype(np.int8), b, out, 100)
    with pytest.raises(TypeError, match="must be an int"):
        mod["vadd"](a, b, out, "x")
    with pytest.raises(AttributeError, match="no function 'nope'"):
        mod["nope"]


@pytest.mark.parametrize("kind", ["npu", "c"])
def test_module_save_load(kind, tmp_path):
    mod = npu_module() if kind == "npu" else c_module(tmp_path)
    path = tmp_path / f"m.{kind}.tcm"
    mod.save(path)
    again = runtime.load_module(path)
    assert again.kind == kind and again.functions == ["vadd"]
    assert again.get_source() == mod.get_source()
    a = np.arange(10, dtype=np.int32)
    out = np.zeros(10, dtype=np.int32)
    again["vadd"](a, a, out, 10)
    assert np.array_equal(out, 2 * a)


def test_module_sources_and_info(tmp_path):
    m = npu_module()
    assert "lw   x6, [ddr: x1 + 0]" in m.get_source() and m.get_source("asm") == m.get_source()
    info = m.info["functions"][0]
    assert info["cores"] == 1 and info["params"][3]["kind"] == "int" and info["line_table"][0] == [0, 0, "add.s:6"]
    with pytest.raises(ValueError, match="format `asm`"):
        m.get_source("c")
    c = c_module(tmp_path)
    assert "tc_vadd" in c.get_source("c")


def test_imports_and_files_with_imports(tmp_path):
    root, lib = npu_module(), c_module(tmp_path)
    # Rename nothing: the root finds its own vadd first; an import supplies functions it lacks.
    root.import_module(lib)
    assert root.imported_modules[0].kind == "c"
    path = tmp_path / "both.tcm"
    root.save(path)
    again = runtime.load_module(path)
    assert again.kind == "npu" and again.imported_modules[0].kind == "c"
    with pytest.raises(ValueError, match="cannot import itself"):
        root.import_module(root)


def _reseal(b):
    """The file with its checksum (bytes 12..20, over everything after) made right again,
    so a test reaches the checks behind it."""
    return b[:12] + tcx_edit.fnv1a64(b[20:]).to_bytes(8, "little") + b[20:]


@pytest.mark.parametrize(
    "mutate, words, reseal",
    [
        (lambda b: b[:5], "magic", False),
        (lambda b: b[:8] + b"\x09\x00\x00\x00" + b[12:], "unsupported version 9", False),
        (lambda b: b[:-3], "checksum mismatch", False),
        (lambda b: b + b"xx", "checksum mismatch", False),
        (lambda b: b[:-3], "truncated", True),
        (lambda b: b + b"xx", "trailing bytes", True),
        (lambda b: b[:20] + b"\xff\xff\xff\x7f" + b[24:], "exceeds the limit", True),
    ],
)
def test_bad_module_files(tmp_path, mutate, words, reseal):
    good = tmp_path / "good.tcm"
    npu_module().save(good)
    bad = tmp_path / "bad.tcm"
    data = mutate(good.read_bytes())
    bad.write_bytes(_reseal(data) if reseal else data)
    with pytest.raises(ValueError, match=words) as info:
        runtime.load_module(bad)
    assert isinstance(info.value, tilecore.TilecoreError)
    with pytest.raises(OSError):
        runtime.load_module(tmp_path / "missing.tcm")


def test_kernel_fault_raises_simerror():
    bad = tilecore.get_global_func("runtime.NpuModuleCreate")(
        [{"name": "bad", "program": arch.assemble("li x1, 3\nlw x2, [l1: x1 + 0]\nhalt\n"), "params": [], "cores": 1}]
    )
    with pytest.raises(tilecore.sim.SimError) as info:
        bad()
    assert info.value.core == 0 and info.value.pc == 1


def test_kernel_needing_more_cores_than_the_device():
    runtime.npu_configure(5, "npu -cores=1")
    prog = arch.assemble(".core 0-1\nhalt\n")
    mod = tilecore.get_global_func("runtime.NpuModuleCreate")([{"name": "k", "program": prog, "params": [], "cores": 2}])
    x = tilecore.nd.empty((1,), "int32", tilecore.npu(5))
    mod2 = tilecore.get_global_func("runtime.NpuModuleCreate")(
        [{"name": "k", "program": prog, "params": [{"name": "x", "kind": "buffer", "dtype": "int32"}], "cores": 2}]
    )
    with pytest.raises(ValueError, match="needs 2 cores"):
        mod2(x)
    del x
    assert mod.functions == ["k"]
