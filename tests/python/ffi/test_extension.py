"""A separately built extension library: built here, loaded with load_library."""
import os
import shutil
import subprocess
import sys

import pytest

import tilecore

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLE = os.path.join(REPO, "examples", "extension")


def _env():
    # The build runs `python -m tilecore.config`: give it the same import path as ours.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def test_config_prints_flags():
    out = subprocess.run([sys.executable, "-m", "tilecore.config", "--includes", "--libs"],
                         check=True, capture_output=True, text=True, env=_env()).stdout
    assert "-I" in out and "-ltilecore" in out
    include = subprocess.run([sys.executable, "-m", "tilecore.config", "--includedir"],
                             check=True, capture_output=True, text=True, env=_env()).stdout.strip()
    assert os.path.isfile(os.path.join(include, "tilecore", "ffi", "c_api.h"))


@pytest.fixture(scope="module")
def extension_library(tmp_path_factory):
    out = tmp_path_factory.mktemp("ext")
    if shutil.which("cmake"):
        build = out / "build"
        cmd = ["cmake", "-S", EXAMPLE, "-B", str(build), f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        subprocess.run(cmd, check=True, capture_output=True, env=_env())
        subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True, env=_env())
        return build / "libtilecore_ext.so"
    # Without CMake: the compiler directly, with the flags tilecore.config prints.
    flags = subprocess.run([sys.executable, "-m", "tilecore.config", "--cxxflags", "--libs"],
                           check=True, capture_output=True, text=True, env=_env()).stdout.split()
    lib = out / "libtilecore_ext.so"
    subprocess.run([os.environ.get("CXX", "c++"), "-O2", "-shared", "-o", str(lib),
                    os.path.join(EXAMPLE, "src", "tilecore_ext.cc"), *flags], check=True)
    return lib


# Registered before the library is loaded: the key is unknown until then, so the class
# waits and is used from the first object of that kind on.
@tilecore.register_object("ext.Shape")
class ExtShape(tilecore.Object):
    __slots__ = ()

    def describe(self):
        return f"shape {self.name}"


def test_load_library_registers_functions(extension_library):
    tilecore.load_library(extension_library)
    names = tilecore.list_global_func_names()
    assert {"ext.myadd", "ext.mul", "ext.callhello"} <= set(names)
    myadd = tilecore.get_global_func("ext.myadd")
    assert myadd(4, 5) == 9
    assert tilecore.get_global_func("ext.mul")(1.5, 2.0) == 3.0
    seen = []
    tilecore.get_global_func("ext.callhello")(seen.append)
    assert seen == ["hello world"]
    with pytest.raises(TypeError, match="ext.mul"):
        tilecore.get_global_func("ext.mul")("a", 1)


def test_load_library_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "no_such_lib.so"
    with pytest.raises(tilecore.TilecoreError) as info:
        tilecore.load_library(missing)
    assert "no_such_lib.so" in str(info.value)


def test_extension_object_kinds_use_the_nearest_registered_class(extension_library):
    tilecore.load_library(extension_library)
    rect = tilecore.get_global_func("ext.Rect")("door", 0.9, 2.0)
    assert rect.type_key == "ext.Rect"
    assert isinstance(rect, ExtShape)  # ext.Rect has no class; its parent ext.Shape has
    assert rect.describe() == "shape door"
    assert (rect.width, rect.height) == (0.9, 2.0)
    assert {"name", "width", "height"} <= set(dir(rect))
    again = tilecore.load_json(tilecore.save_json(rect))
    assert isinstance(again, ExtShape) and tilecore.structural_equal(again, rect)


def test_cpp_calls_a_python_hook_by_name(extension_library, unique_name):
    # The seed's extern op: C++ finds the Python function by its registry name.
    np = pytest.importorskip("numpy")
    tilecore.load_library(extension_library)

    @tilecore.register_func(unique_name)
    def addone(x, y):
        tilecore.nd.array(x.numpy() + 1).copyto(y)

    a = tilecore.nd.array(np.random.uniform(size=10).astype("float32"))
    b = tilecore.nd.empty((10,), "float32")
    tilecore.get_global_func("ext.call_global")(unique_name, a, b)
    np.testing.assert_allclose(b.numpy(), a.numpy() + 1, rtol=1e-5)
    with pytest.raises(ValueError, match="not registered"):
        tilecore.get_global_func("ext.call_global")("pytest.no_such_hook")
