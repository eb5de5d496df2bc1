"""benchmarks/ffi_call.py — the cost of one FFI call: tilecore vs apache-tvm-ffi vs nanobind.

All three run in one process, side by side, on the same cases:

  f()                 a C++ function that does nothing
  f(1, 2.0, "s")      the same with an int, a float and a str
  echo(obj)           an object in, the same object out
  f(a, b, c)          three arrays of each library's own kind (tilecore.NDArray,
                      tvm_ffi.Tensor, numpy arrays for nanobind's nb::ndarray)
  f(a, b, c) numpy    three numpy arrays, converted by each library on every call
  apply(cb)           Python -> C++ -> Python callback -> back, per call
  callback x100000    C++ calls a Python callback 100,000 times in a loop

tilecore and tvm-ffi call their type-erased (packed) functions; nanobind calls
typed functions of the same arity (nanobind's fastest form), compiled by this
script into a temporary directory with nanobind's CMake package. For the callback
loop, tvm-ffi gets a small C++ library of its own (built here too) registering
`bench.call_n`, the counterpart of tilecore's `testing.call_n`.

Each figure is the median of several repeats of a timeit loop, in ns per call.

    python benchmarks/ffi_call.py [--repeat 7] [--build-dir DIR] [--quick]
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import timeit

import numpy as np

import tilecore

N_CALLBACKS = 100_000

NANOBIND_SOURCE = r"""
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string_view.h>
#include <cstdint>
#include <string_view>

namespace nb = nanobind;

NB_MODULE(nb_bench, m) {
  m.def("nop", []() {});
  m.def("nop3", [](int64_t, double, std::string_view) {});
  m.def("echo", [](nb::object x) { return x; });
  m.def("nop_arrays", [](nb::ndarray<>, nb::ndarray<>, nb::ndarray<>) {});
  m.def("apply", [](nb::callable f) { return f(); });
  m.def("call_n", [](nb::callable f, int64_t n) {
    for (int64_t i = 0; i < n; ++i) f(i);
  });
}
"""

TVM_SOURCE = r"""
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef().def("bench.call_n", [](tvm::ffi::Function f, int64_t n) {
    for (int64_t i = 0; i < n; ++i) f(i);
  });
}
"""

CMAKE_SOURCE = r"""
cmake_minimum_required(VERSION 3.18)
project(ffi_bench LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_BUILD_TYPE Release)
find_package(Python 3.8 COMPONENTS Interpreter Development.Module REQUIRED)
find_package(nanobind CONFIG REQUIRED)
nanobind_add_module(nb_bench NB_STATIC nb_bench.cc)
add_library(tvm_bench SHARED tvm_bench.cc)
target_include_directories(tvm_bench PRIVATE ${TVM_FFI_INCLUDE} ${TVM_DLPACK_INCLUDE})
target_link_libraries(tvm_bench PRIVATE ${TVM_FFI_LIB})
"""


def build_baselines(build_dir):
    """Compiles the nanobind module and the tvm-ffi helper; returns their paths."""
    import nanobind
    import tvm_ffi.libinfo

    src = os.path.join(build_dir, "src")
    os.makedirs(src, exist_ok=True)
    for name, text in [("nb_bench.cc", NANOBIND_SOURCE), ("tvm_bench.cc", TVM_SOURCE),
                       ("CMakeLists.txt", CMAKE_SOURCE)]:
        with open(os.path.join(src, name), "w", encoding="utf-8") as f:
            f.write(text)
    out = os.path.join(build_dir, "out")
    cmd = ["cmake", "-S", src, "-B", out, f"-Dnanobind_DIR={nanobind.cmake_dir()}",
           f"-DPython_EXECUTABLE={sys.executable}",
           f"-DTVM_FFI_INCLUDE={tvm_ffi.libinfo.find_include_path()}",
           f"-DTVM_DLPACK_INCLUDE={tvm_ffi.libinfo.find_dlpack_include_path()}",
           f"-DTVM_FFI_LIB={tvm_ffi.libinfo.find_libtvm_ffi()}"]
    if shutil.which("ninja"):
        cmd += ["-G", "Ninja"]
    subprocess.run(cmd, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", out, "-j2"], check=True, capture_output=True)
    nb_path = next(os.path.join(out, f) for f in os.listdir(out) if f.startswith("nb_bench"))
    return nb_path, os.path.join(out, "libtvm_bench.so")


def measure(stmts, env, repeat, target_seconds):
    """Median ns per execution of each library's statement over `repeat` timeit loops.

    The libraries take turns within each repeat (round robin), so a burst of load on
    this shared machine hits all of them alike instead of one library's block.
    """
    timers, numbers = {}, {}
    for lib, stmt in stmts.items():
        timer = timeit.Timer(stmt, globals=env)
        number, elapsed = 1, 0.0
        while elapsed < target_seconds / 4:  # calibrate the loop length
            number *= 4
            elapsed = timer.timeit(number)
        timers[lib] = timer
        numbers[lib] = max(1, int(number * target_seconds / max(elapsed, 1e-9)))
    samples = {lib: [] for lib in stmts}
    for _ in range(repeat):
        for lib, timer in timers.items():
            samples[lib].append(timer.timeit(numbers[lib]) / numbers[lib] * 1e9)
    return {lib: statistics.median(v) for lib, v in samples.items()}


def measure_callbacks(calls, repeat):
    """Median ns per callback of each library's `call()` (which runs N_CALLBACKS
    callbacks), the libraries taking turns within each repeat."""
    times = {lib: [] for lib in calls}
    for _ in range(repeat):
        for lib, call in calls.items():
            start = timeit.default_timer()
            call()
            times[lib].append(timeit.default_timer() - start)
    return {lib: statistics.median(v) / N_CALLBACKS * 1e9 for lib, v in times.items()}


def cases():
    """(name, {library: (statement, globals)}); globals are built lazily per library."""
    import importlib
    import tvm_ffi

    nb = importlib.import_module("nb_bench")
    tc_nop = tilecore.get_global_func("testing.nop")
    tc_echo = tilecore.get_global_func("testing.echo")
    tc_apply = tilecore.get_global_func("testing.apply")
    tvm_nop = tvm_ffi.get_global_func("testing.nop")
    tvm_echo = tvm_ffi.get_global_func("testing.echo")
    tvm_apply = tvm_ffi.get_global_func("testing.apply")

    arrays = [np.zeros(16, dtype="float32") for _ in range(3)]
    tc_arrays = [tilecore.nd.from_dlpack(a) for a in arrays]
    tvm_arrays = [tvm_ffi.from_dlpack(a) for a in arrays]
    tc_obj = tilecore.convert([1])
    tvm_obj = tvm_ffi.convert([1])
    nb_obj = object()

    def cb(*args):
        return None

    tc_cb = tilecore.convert(cb)
    tvm_cb = tvm_ffi.convert(cb)
    env = dict(tc_nop=tc_nop, tc_echo=tc_echo, tc_apply=tc_apply, tvm_nop=tvm_nop,
               tvm_echo=tvm_echo, tvm_apply=tvm_apply, nb=nb, arrays=arrays,
               tc_arrays=tc_arrays, tvm_arrays=tvm_arrays, tc_obj=tc_obj, tvm_obj=tvm_obj,
               nb_obj=nb_obj, cb=cb, tc_cb=tc_cb, tvm_cb=tvm_cb)
    return env, [
        ("f()", {"tilecore": "tc_nop()", "tvm-ffi": "tvm_nop()", "nanobind": "nb.nop()"}),
        ('f(1, 2.0, "s")', {"tilecore": 'tc_nop(1, 2.0, "s")', "tvm-ffi": 'tvm_nop(1, 2.0, "s")',
                            "nanobind": 'nb.nop3(1, 2.0, "s")'}),
        ("echo(obj)", {"tilecore": "tc_echo(tc_obj)", "tvm-ffi": "tvm_echo(tvm_obj)",
                       "nanobind": "nb.echo(nb_obj)"}),
        ("f(a, b, c)", {"tilecore": "tc_nop(*tc_arrays)", "tvm-ffi": "tvm_nop(*tvm_arrays)",
                        "nanobind": "nb.nop_arrays(*arrays)"}),
        ("f(a, b, c) numpy", {"tilecore": "tc_nop(*arrays)", "tvm-ffi": "tvm_nop(*arrays)",
                              "nanobind": "nb.nop_arrays(*arrays)"}),
        ("apply(cb)", {"tilecore": "tc_apply(tc_cb)", "tvm-ffi": "tvm_apply(tvm_cb)",
                       "nanobind": "nb.apply(cb)"}),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="timeit repeats (median taken)")
    parser.add_argument("--seconds", type=float, default=0.2, help="target seconds per repeat")
    parser.add_argument("--build-dir", help="where to build the baselines (default: a temp dir)")
    parser.add_argument("--quick", action="store_true", help="few short repeats (smoke test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat, args.seconds = 3, 0.02

    build_dir = args.build_dir or tempfile.mkdtemp(prefix="tilecore_ffi_bench_")
    print(f"building the nanobind and tvm-ffi baselines in {build_dir} ...", file=sys.stderr)
    nb_path, tvm_lib = build_baselines(build_dir)
    sys.path.insert(0, os.path.dirname(nb_path))
    import ctypes

    import tvm_ffi  # noqa: F401  (loads libtvm_ffi before the helper that links it)

    ctypes.CDLL(tvm_lib, ctypes.RTLD_GLOBAL)

    env, table = cases()
    libs = ["tilecore", "tvm-ffi", "nanobind"]
    rows = []
    for name, stmts in table:
        rows.append((name, measure({lib: stmts[lib] for lib in libs}, env, args.repeat, args.seconds)))

    tvm_call_n = tvm_ffi.get_global_func("bench.call_n")
    tc_call_n = tilecore.get_global_func("testing.call_n")
    nb = env["nb"]
    rows.append((f"callback x{N_CALLBACKS}", measure_callbacks({
        "tilecore": lambda: tc_call_n(env["tc_cb"], N_CALLBACKS),
        "tvm-ffi": lambda: tvm_call_n(env["tvm_cb"], N_CALLBACKS),
        "nanobind": lambda: nb.call_n(env["cb"], N_CALLBACKS),
    }, args.repeat)))

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import nanobind

    print(textwrap.dedent(f"""\
        ns per call, median of {args.repeat} repeats; lower is better
        machine: {cpu}, Python {platform.python_version()}
        tilecore {tilecore.__version__}, apache-tvm-ffi {tvm_ffi.__version__}, nanobind {nanobind.__version__}
        """))
    header = f"{'case':<20} {'tilecore':>9} {'tvm-ffi':>9} {'nanobind':>9} {'tc/tvm':>7} {'tc/nb':>7}"
    print(header)
    print("-" * len(header))
    for name, t in rows:
        print(f"{name:<20} {t['tilecore']:>9.1f} {t['tvm-ffi']:>9.1f} {t['nanobind']:>9.1f} "
              f"{t['tilecore'] / t['tvm-ffi']:>7.2f} {t['tilecore'] / t['nanobind']:>7.2f}")
    # The goal for scalar calls: at most half of tvm-ffi's time, at most 1.2x nanobind's.
    print()
    for name, t in rows[:2]:
        ok = t["tilecore"] <= 0.5 * t["tvm-ffi"] and t["tilecore"] <= 1.2 * t["nanobind"]
        print(f"target {name:<16} tc/tvm <= 0.5 and tc/nb <= 1.2: {'met' if ok else 'NOT met'}")
    if not args.build_dir:
        shutil.rmtree(build_dir, ignore_errors=True)
    return rows


if __name__ == "__main__":
    main()
