"""The out-of-tree device example (examples/device_plugin): built here, loaded, used.

The library adds the target kind "toyacc", its device API, `codegen.build_toyacc`
and the "toyacc" module kind; docs/adding-a-device.md walks through it, and the
last tests check that the page quotes the example's code and that its Python runs.
"""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import tilecore
from doc_examples import page_text, run_page
from tilecore import ir

np = pytest.importorskip("numpy")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLE = os.path.join(REPO, "examples", "device_plugin")
DOC = os.path.join(REPO, "docs", "adding-a-device.md")


def _env():
    # The build runs `python -m tilecore.config`: give it the same import path as ours.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    """A folder holding build-toyacc/libtilecore_toyacc.so, as the doc's commands make it."""
    root = tmp_path_factory.mktemp("toyacc")
    build = root / "build-toyacc"
    if shutil.which("cmake"):
        cmd = ["cmake", "-S", EXAMPLE, "-B", str(build), f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        subprocess.run(cmd, check=True, capture_output=True, env=_env())
        subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True, env=_env())
    else:  # the compiler directly, with the flags tilecore.config prints
        flags = subprocess.run([sys.executable, "-m", "tilecore.config", "--cxxflags", "--libs"],
                               check=True, capture_output=True, text=True, env=_env()).stdout.split()
        build.mkdir()
        sources = [os.path.join(EXAMPLE, "src", f) for f in sorted(os.listdir(os.path.join(EXAMPLE, "src")))
                   if f.endswith(".cc")]
        subprocess.run([os.environ.get("CXX", "c++"), "-O2", "-shared", "-o", str(build / "libtilecore_toyacc.so"),
                        *sources, *flags], check=True)
    return root


@pytest.fixture(scope="module")
def toyacc(plugin_dir):
    # Loading the same file again is a no-op, so every test may ask for it.
    tilecore.load_library(plugin_dir / "build-toyacc" / "libtilecore_toyacc.so")
    return lambda dev_id: tilecore.device("toyacc", dev_id)


def elementwise(name="scale_add", n=1000, dtype="float32"):
    """C[i] = A[i] * k + B[i], with the IR builder."""
    ib = ir.IRBuilder(name)
    A = ib.buffer_param("A", (n,), dtype)
    B = ib.buffer_param("B", (n,), dtype)
    C = ib.buffer_param("C", (n,), dtype)
    k = ib.scalar_param("k", dtype)
    with ib.for_range(0, n, name="i") as i:
        C[i] = A[i] * k + B[i]
    return ib.get()


# ---- the four registrations -----------------------------------------------------------------
def test_loading_registers_kind_device_codegen_and_loader(toyacc):
    assert "toyacc" in tilecore.target.list_kinds()
    names = set(tilecore.list_global_func_names())
    assert {"device_api.toyacc", "codegen.build_toyacc", "runtime.module.loadbinary_toyacc"} <= names
    opts = {o["name"]: o for o in tilecore.target.kind_options("toyacc")}
    assert set(opts) == {"stack", "device"} and opts["stack"]["default"] == 16


def test_the_device_type_has_a_name(toyacc):
    """The library names device type 32 (ffi::RegisterDeviceName): Python parses and prints it."""
    dev = tilecore.device("toyacc", 1)
    assert (dev.device_type, dev.device_id) == (32, 1) and repr(dev) == "toyacc(1)"
    assert tilecore.device("toyacc:2") == tilecore.device(32, 2)
    assert tilecore.get_global_func("ffi.DeviceTypeToName")(32) == "toyacc"
    register = tilecore.get_global_func("ffi.RegisterDeviceName")
    register(32, "toyacc")  # the same pair again is harmless
    with pytest.raises(ValueError):
        register(32, "other")  # the type is taken
    with pytest.raises(ValueError):
        register(33, "toyacc")  # so is the name


def test_target_string_fills_defaults(toyacc):
    t = tilecore.Target("toyacc -stack=8")
    assert str(t) == "toyacc -stack=8 -device=0"


def test_unknown_option_names_it(toyacc):
    with pytest.raises(ValueError, match=r"target `toyacc`: unknown option -stak \(valid: -stack, -device\)"):
        tilecore.Target("toyacc -stak=8")
    with pytest.raises(ValueError, match=r"unknown option -stak"):
        tilecore.build(elementwise(), target="toyacc -stak=8")


def test_bad_value_names_option_and_range(toyacc):
    with pytest.raises(ValueError, match=r"-device=7: expected an integer in 0\.\.3"):
        tilecore.Target("toyacc -device=7")


# ---- kernels ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "uint16"])
def test_elementwise_kernel_matches_numpy(toyacc, dtype):
    mod = tilecore.build(elementwise(dtype=dtype), target="toyacc")
    assert mod.kind == "toyacc" and mod.functions == ["scale_add"]
    rng = np.random.default_rng(0)
    if dtype.startswith("float"):
        a, b = rng.random(1000).astype(dtype), rng.random(1000).astype(dtype)
        k = 0.75
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, 1000, endpoint=True).astype(dtype)
        b = rng.integers(info.min, info.max, 1000, endpoint=True).astype(dtype)
        k = 3
    c = np.zeros(1000, dtype=dtype)
    mod["scale_add"](a, b, c, k)
    with np.errstate(over="ignore"):
        expect = a * np.array(k, dtype=dtype) + b  # integers wrap, as on toyacc
    np.testing.assert_array_equal(c, expect)


def test_shared_subexpression_pushes_its_value_at_each_use(toyacc):
    # e = e + e five times is one node per level; the stack code needs each use: 3 * 2^5.
    ib = ir.IRBuilder("shared")
    A = ib.buffer_param("A", (2,), "int32")
    e = A[0]
    for _ in range(5):
        e = e + e
    A[1] = e
    a = np.array([3, 0], "int32")
    tilecore.build(ib.get(), target="toyacc")["shared"](a)
    assert a.tolist() == [3, 3 * 2**5]


def test_two_dimensional_kernel_with_branches_and_casts(toyacc):
    ib = ir.IRBuilder("mix")
    A = ib.buffer_param("A", (8, 33), "int8")
    B = ib.buffer_param("B", (8, 33), "int8")
    F = ib.buffer_param("F", (8, 33), "float32")
    with ib.for_range(0, 8, name="i", kind="cores") as i:
        with ib.for_range(0, 33, name="j") as j:
            with ib.if_scope(j < 16):
                B[i, j] = A[i, j] * 3 + 100
            with ib.else_scope():
                B[i, j] = ir.Select(A[i, j] > 0, A[i, j] // 7, A[i, j] % 5)
            F[i, j] = ir.Cast("float32", A[i, j]) * 0.5
    mod = tilecore.build(ib.get(), target="toyacc")
    a = np.random.default_rng(1).integers(-128, 128, (8, 33)).astype("int8")
    b, f = np.zeros_like(a), np.zeros((8, 33), "float32")
    mod["mix"](a, b, f)
    cols = np.arange(33)[None, :]
    with np.errstate(over="ignore"):
        first = a * np.int8(3) + np.int8(100)
    expect = np.where(cols < 16, first, np.where(a > 0, a // 7, a % 5).astype("int8"))
    np.testing.assert_array_equal(b, expect)
    np.testing.assert_array_equal(f, a.astype("float32") * np.float32(0.5))


def test_arrays_on_the_device_are_used_in_place(toyacc):
    dev = toyacc(1)
    mod = tilecore.build(elementwise(n=64), target="toyacc -device=1")
    a = np.arange(64, dtype="float32")
    x, y = tilecore.nd.array(a, device=dev), tilecore.nd.array(a, device=dev)
    z = tilecore.nd.empty((64,), "float32", dev)
    assert z.device == dev
    attrs = tilecore.runtime.device_attributes(dev)
    assert attrs["name"] == "toyacc" and attrs["live_arrays"] >= 3 and attrs["bytes_in_use"] >= 3 * 256
    mod["scale_add"](x, y, z, 2.0)
    np.testing.assert_array_equal(z.numpy(), a * 3)


def test_module_saves_and_loads(toyacc, tmp_path):
    mod = tilecore.build(elementwise(n=100), target="toyacc -device=2")
    path = str(tmp_path / "kernel.tcm")
    mod.save(path)
    again = tilecore.runtime.load_module(path)
    assert again.kind == "toyacc" and again.get_source() == mod.get_source()
    assert again.info["device"] == 2
    a = np.linspace(0, 1, 100, dtype="float32")
    c = np.zeros(100, "float32")
    again["scale_add"](a, a, c, 4.0)
    np.testing.assert_array_equal(c, a * np.float32(4.0) + a)


def test_source_is_the_bytecode(toyacc):
    src = tilecore.build(elementwise(n=4), target="toyacc").get_source()
    assert ".kernel scale_add" in src and ".param C buffer float32 rw" in src and "store float32 C" in src
    with pytest.raises(ValueError, match="format `toyacc`"):
        tilecore.build(elementwise(n=4), target="toyacc").get_source("asm")


# ---- errors -------------------------------------------------------------------------------------
def test_stack_option_limits_the_kernel(toyacc):
    with pytest.raises(ValueError, match=r"kernel `scale_add` needs 3 stack slots; the target allows -stack=2"):
        tilecore.build(elementwise(), target="toyacc -stack=2")


def test_codegen_error_names_the_node_and_kernel(toyacc):
    ib = ir.IRBuilder("scratch")
    A = ib.buffer_param("A", (16,), "int32")
    T = ib.allocate("int32", (16,), name="T", scope="local")
    with ib.for_range(0, 16, name="i") as i:
        T[i] = A[i]
    with pytest.raises(ValueError, match=r"kernel `scratch`: cannot emit `ir.Allocate`"):
        tilecore.build(ib.get(), target="toyacc")


def test_out_of_range_access_is_an_error_not_a_crash(toyacc):
    ib = ir.IRBuilder("shift")
    A = ib.buffer_param("A", (16,), "int32")
    with ib.for_range(0, 16, name="i") as i:
        A[i + 1] = A[i]
    mod = tilecore.build(ib.get(), target="toyacc")
    with pytest.raises(RuntimeError, match=r"kernel `shift`, pc \d+ \(`store int32 A`\): index 16 is outside `A`"):
        mod["shift"](np.zeros(16, "int32"))


def test_call_is_checked_against_the_signature(toyacc):
    mod = tilecore.build(elementwise(n=8), target="toyacc")
    a = np.zeros(8, "float32")
    with pytest.raises(TypeError, match="takes 4 arguments but 3 were given"):
        mod["scale_add"](a, a, a)
    with pytest.raises(TypeError, match="must have dtype float32, got int32"):
        mod["scale_add"](a, a, np.zeros(8, "int32"), 1.0)


def test_corrupt_module_file_names_the_line(toyacc, tmp_path):
    mod = tilecore.build(elementwise(n=8), target="toyacc")
    path = tmp_path / "bad.tcm"
    mod.save(str(path))
    data = path.read_bytes().replace(b"store float32 C", b"stash float32 C")
    # The file checksum (bytes 12..20, FNV-1a over the rest) is made right again, so the
    # plugin's own loader sees the bad instruction.
    h = 0xCBF29CE484222325
    for c in data[20:]:
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    path.write_bytes(data[:12] + h.to_bytes(8, "little") + data[20:])
    with pytest.raises(ValueError, match=r"toyacc bytecode, line \d+: unknown instruction `stash`"):
        tilecore.runtime.load_module(str(path))


# ---- the walk-through ---------------------------------------------------------------------------
QUOTE = re.compile(r"^<!-- quote: (?P<path>\S+) (?P<region>\S+) -->\n```\w+\n(?P<code>.*?)^```$", re.M | re.S)


def _region(path, name):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^[ \t]*(?://|#) \[" + re.escape(name) + r"\.begin\][^\n]*\n(.*?)^[ \t]*(?://|#) \["
                  + re.escape(name) + r"\.end\]", text, re.M | re.S)
    assert m, f"{path} has no region {name}"
    return textwrap.dedent(m.group(1))


def test_doc_quotes_the_example_verbatim():
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    quotes = list(QUOTE.finditer(text))
    assert len(quotes) >= 10
    for m in quotes:
        assert m.group("code") == _region(m.group("path"), m.group("region")), (
            f"docs/adding-a-device.md quotes {m.group('path')} [{m.group('region')}] out of date")


def test_doc_walkthrough_runs(plugin_dir, tmp_path):
    """The page's Python, in a fresh interpreter, next to the build-toyacc folder it makes."""
    text = page_text("adding-a-device.md")
    proc = run_page("adding-a-device.md", tmp_path, cwd=plugin_dir, env=_env())
    assert proc.returncode == 0, f"docs/adding-a-device.md example failed:\n{proc.stderr}"
    assert "\ntoyacc(0)\n" in proc.stdout, "the device the page names by `tilecore.device(\"toyacc\", 0)`"
    shown = text.split("prints the bytecode:\n\n```\n", 1)[1].split("```", 1)[0]
    assert shown in proc.stdout, "the bytecode shown in docs/adding-a-device.md is not what the kernel prints"
