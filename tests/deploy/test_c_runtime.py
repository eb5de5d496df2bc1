"""The runtime library as an application links it (docs/deploy.md): the example applications
built against the installed tree with pkg-config and with CMake, and under ThreadSanitizer,
their outputs compared bit for bit with Python's Executable.run; the library's symbols and
dependencies; bad files through the C API."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT, run

EXAMPLES = os.path.join(ROOT, "examples", "runtime")


def _pkg_config(prefix, package):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
    p = run(["pkg-config", "--cflags", "--libs", package], env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def _lib_env(prefix):
    return dict(os.environ, LD_LIBRARY_PATH=os.path.join(prefix, "lib"))


def _tilecore_run_top(model, k=5):
    """What `tilecore run --top k` prints for the model's first output."""
    p = run([sys.executable, "-m", "tilecore", "run", model.tcx, "--inputs", model.npz, "--top", str(k),
             "--quiet"], cwd=ROOT)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("top-"))
    return "\n".join(lines[start:start + k + 1]) + "\n"


@pytest.fixture(scope="module")
def classify(prefix, tmp_path_factory):
    """classify.c compiled as the docs say: `cc classify.c $(pkg-config --cflags --libs tilecore-runtime)`."""
    out = str(tmp_path_factory.mktemp("classify") / "classify")
    p = run(["cc", os.path.join(EXAMPLES, "classify.c"), *_pkg_config(prefix, "tilecore-runtime"), "-o",
             out])
    assert p.returncode == 0, p.stderr
    return out


@pytest.mark.parametrize("name", ["classifier", "pipeline"])
def test_classify_prints_what_tilecore_run_prints(classify, prefix, models, name):
    model = models[name]
    p = run([classify, model.tcx, model.npy], env=_lib_env(prefix))
    assert p.returncode == 0, p.stderr
    assert p.stdout == _tilecore_run_top(model)
    # The ranking itself, against numpy's.
    scores = next(iter(model.outputs.values())).reshape(-1).astype(np.float64)
    best = [int(m.group(1)) for m in re.finditer(r"class (\d+)", p.stdout)]
    assert best == list(np.argsort(-scores, kind="stable")[:5])


def test_classify_static_library(prefix, models, tmp_path):
    """The static archive through its pkg-config file: the same output, no shared library."""
    exe = str(tmp_path / "classify_static")
    p = run(["cc", os.path.join(EXAMPLES, "classify.c"), *_pkg_config(prefix, "tilecore-runtime-static"),
             "-o", exe])
    assert p.returncode == 0, p.stderr
    assert "libtilecore_runtime" not in run(["ldd", exe]).stdout
    model = models["classifier"]
    p = run([exe, model.tcx, model.npy])
    assert p.returncode == 0, p.stderr
    assert p.stdout == _tilecore_run_top(model)


def test_classify_names_bad_files_and_refusals(classify, prefix, models, tmp_path):
    env = _lib_env(prefix)
    model = models["classifier"]
    data = bytearray(open(model.tcx, "rb").read())
    data[len(data) // 2] ^= 0x10
    bad = tmp_path / "flipped.tcx"
    bad.write_bytes(bytes(data))
    p = run([classify, str(bad), model.npy], env=env)
    assert p.returncode == 1 and "checksum mismatch" in p.stderr and str(bad) in p.stderr, p.stderr
    bad.write_bytes(bytes(data[:100]))
    p = run([classify, str(bad), model.npy], env=env)
    assert p.returncode == 1 and "truncated" in p.stderr, p.stderr
    p = run([classify, model.tcx, models["mlp"].npy], env=env)
    assert p.returncode == 1 and "float32[4, 64]; the input `x`" in p.stderr, p.stderr
    # Host code refused: the pipeline has a `c` module; the classifier runs on the npu only.
    pipeline = models["pipeline"]
    p = run([classify, pipeline.tcx, pipeline.npy, "--refuse-host-code"], env=env)
    assert p.returncode == 1 and "of kind `c`, which holds host code" in p.stderr, p.stderr
    p = run([classify, model.tcx, model.npy, "--refuse-host-code"], env=env)
    assert p.returncode == 0, p.stderr
    import hashlib

    sha = hashlib.sha256(open(model.tcx, "rb").read()).hexdigest()
    assert run([classify, model.tcx, model.npy, "--sha256", sha], env=env).returncode == 0
    p = run([classify, model.tcx, model.npy, "--sha256", "0" * 64], env=env)
    assert p.returncode == 1 and f"SHA-256 is {sha}" in p.stderr, p.stderr


def _check_outputs(folder, tag, model):
    for name, want in model.outputs.items():
        got = np.load(os.path.join(folder, f"{tag}_{name}.npy"))
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), f"{tag}_{name}"


def test_examples_build_with_cmake_against_the_install(prefix, models, tmp_path):
    """An outside CMake project: find_package(tilecore), tilecore::runtime and ::runtime_static."""
    build = str(tmp_path / "build")
    p = run(["cmake", "-S", EXAMPLES, "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}",
             "-DCMAKE_BUILD_TYPE=Release"])
    assert p.returncode == 0, p.stdout + p.stderr
    p = run(["cmake", "--build", build, "-j2"])
    assert p.returncode == 0, p.stdout + p.stderr
    a, b = models["classifier"], models["mlp"]
    for extra in ([], ["--same-device"]):
        out = tmp_path / ("same" if extra else "apart")
        out.mkdir()
        p = run([os.path.join(build, "two_models"), a.tcx, a.npy, b.tcx, b.npy, "--iterations", "10",
                 "--out-dir", str(out), *extra])
        assert p.returncode == 0, p.stdout + p.stderr
        assert "10 concurrent runs" in p.stdout and " 0 differ" in p.stdout, p.stdout
        _check_outputs(out, "a", a)
        _check_outputs(out, "b", b)
    p = run([os.path.join(build, "classify_static"), a.tcx, a.npy])
    assert p.returncode == 0 and p.stdout == _tilecore_run_top(a), p.stderr


def test_two_models_from_two_threads_under_thread_sanitizer(tsan_build, models, tmp_path):
    """Two threads, 100 runs each: two models on two devices, on one shared device, and one
    executable (one handle) run by both threads. No report from ThreadSanitizer, every run
    equal to the run alone, and that to Python's."""
    a, b = models["classifier"], models["pipeline"]
    exe = os.path.join(tsan_build, "examples", "runtime", "two_models")
    env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1")
    for label, second, extra in (("apart", b, []), ("same_device", b, ["--same-device"]), ("one_handle", a, [])):
        out = tmp_path / label
        out.mkdir()
        p = run([exe, a.tcx, a.npy, second.tcx, second.npy, "--iterations", "100", "--out-dir", str(out), *extra],
                env=env, timeout=900)
        assert "ThreadSanitizer" not in p.stderr, p.stderr[-6000:]
        assert p.returncode == 0, p.stdout + p.stderr[-3000:]
        assert p.stdout.count("100 concurrent runs") == 2 and p.stdout.count(" 0 differ") == 2, p.stdout
        _check_outputs(out, "a", a)
        _check_outputs(out, "b", second)


COMPILER_LAYERS = ("ir", "transform", "target", "codegen", "compiler", "debug")


def _symbols(path, *flags):
    p = run(["nm", "-C", *flags, path])
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_runtime_library_has_no_compiler_and_no_python(prefix):
    layer = re.compile(r"tilecore::(%s)::" % "|".join(COMPILER_LAYERS))
    lib = os.path.join(prefix, "lib", "libtilecore_runtime.so")
    defined = _symbols(lib, "-D", "--defined-only")
    assert "TCRExecutableRun" in defined and "tilecore::runtime::Executable::Run" in defined
    assert not layer.findall(defined), sorted(set(layer.findall(defined)))
    undefined = _symbols(lib, "-D", "--undefined-only")
    assert not re.findall(r"\b(Py\w+|_Py\w+|tilecore::\S+)", undefined), undefined
    needed = run(["readelf", "-d", lib]).stdout
    assert not re.search(r"NEEDED.*(python|libtilecore\.so)", needed), needed
    archive = _symbols(os.path.join(prefix, "lib", "libtilecore_runtime.a"), "--defined-only")
    assert "TCRExecutableRun" in archive and not layer.findall(archive)
    # The check can fail: the whole library, next to the Python package, has those layers.
    import tilecore.config

    assert layer.findall(_symbols(tilecore.config.get_library_path(), "-D", "--defined-only"))


def test_installed_tree_holds_the_headers_and_package_files(prefix):
    for rel in ("include/tilecore/runtime/c_runtime_api.h", "include/tilecore/runtime/c_runtime_api.hpp",
                "include/tilecore/ffi/dlpack.h", "lib/cmake/tilecore/tilecoreConfig.cmake",
                "lib/cmake/tilecore/tilecoreConfigVersion.cmake", "lib/pkgconfig/tilecore-runtime.pc",
                "lib/pkgconfig/tilecore-runtime-static.pc"):
        assert os.path.isfile(os.path.join(prefix, rel)), rel
    for layer in COMPILER_LAYERS:
        assert not os.path.exists(os.path.join(prefix, "include", "tilecore", layer)), layer
    # The C header is C: it compiles with a C compiler in strict C99 mode.
    p = subprocess.run(["cc", "-std=c99", "-pedantic", "-Werror", "-fsyntax-only", "-x", "c", "-",
                        f"-I{prefix}/include"], input="#include <tilecore/runtime/c_runtime_api.h>\n",
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
