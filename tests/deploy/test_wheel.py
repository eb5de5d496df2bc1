"""The Python package installs like one: a wheel built from the tree (`pip wheel .`), installed
into a fresh venv that sees neither the source tree nor this environment's packages, compiles,
runs and debugs a model there, with the outputs of the tree's own build."""
import os
import shutil
import sys
import zipfile

import numpy as np
from conftest import ROOT, run


def _ccache_defines():
    """The main build's compiler cache, so the wheel's build takes its objects from it."""
    if shutil.which("ccache") is None:
        return [], {}
    return (["-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache", "-Ccmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache"],
            {"CCACHE_DIR": os.environ.get("CCACHE_DIR", os.path.join(ROOT, "build-ccache"))})


def test_wheel_installs_into_a_fresh_venv_and_runs_a_model(models, tmp_path):
    dist = tmp_path / "dist"
    defines, env = _ccache_defines()
    p = run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation", "-q",
             "--disable-pip-version-check", "-w", str(dist), f"-Cbuild-dir={os.path.join(ROOT, 'build-wheel')}",
             "-Ccmake.define.TILECORE_WERROR=ON", "-Cbuild.tool-args=-j2", *defines],
            env=dict(os.environ, **env), timeout=1800)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    wheel, = dist.glob("tilecore-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "tilecore/lib/libtilecore.so" in names and any(n.startswith("tilecore/_ffi_core") for n in names)
    assert not any(n.startswith(("lib/", "include/", "tilecore/lib/cmake")) for n in names), \
        [n for n in names if n.startswith(("lib/", "include/"))]

    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    py, cli = str(venv / "bin" / "python"), str(venv / "bin" / "tilecore")
    # Its dependencies come from the package's metadata alone.
    p = run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], timeout=1200)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]

    work = tmp_path / "work"  # outside the source tree: nothing can import it from the cwd
    work.mkdir()
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TILECORE_CACHE")}
    where = run([py, "-c", "import tilecore; print(tilecore.__file__)"], cwd=work, env=clean)
    assert where.returncode == 0 and where.stdout.startswith(str(venv)), where.stdout + where.stderr

    mlp = models["mlp"]
    p = run([cli, "compile", mlp.onnx, "-o", "mlp.tcx"], cwd=work, env=clean)
    assert p.returncode == 0, p.stdout + p.stderr
    p = run([cli, "run", "mlp.tcx", "--inputs", mlp.npz, "-o", "out.npz", "--quiet"], cwd=work, env=clean)
    assert p.returncode == 0, p.stdout + p.stderr
    got = np.load(work / "out.npz")
    for name, want in mlp.outputs.items():
        assert got[name].tobytes() == want.tobytes(), name
    # An independent check of the numbers: numpy's evaluation of the same weights.
    import onnx
    from onnx import numpy_helper

    w = {i.name: numpy_helper.to_array(i) for i in onnx.load(mlp.onnx).graph.initializer}
    ref = np.maximum(mlp.x @ w["w1"] + w["b1"], 0) @ w["w2"] + w["b2"]
    np.testing.assert_allclose(got["y"], ref, rtol=1e-4, atol=1e-4)
    p = run([cli, "tdb", "mlp.tcx", "--inputs", mlp.npz, "--do", "run; info nodes"], cwd=work, env=clean)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    # compare needs ONNX Runtime, which only the `ort` extra installs: the error names it.
    p = run([cli, "compare", mlp.onnx, "--inputs", mlp.npz], cwd=work, env=clean)
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert "onnxruntime" in p.stderr and "tilecore[ort]" in p.stderr, p.stderr

