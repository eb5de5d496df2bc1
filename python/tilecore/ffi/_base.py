"""Loads the compiled bridge, tilecore._ffi_core, and says what to do when it is missing.

A development build named on PYTHONPATH (``PYTHONPATH=python:<build>/python``) wins
over an installed copy: an editable install's import hook would otherwise keep
serving the extension it built, not the one just rebuilt.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _extension_on_pythonpath():
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        folder = os.path.join(entry, "tilecore") if entry else ""
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = os.path.join(folder, "_ffi_core" + suffix)
            if folder and os.path.isfile(candidate):
                return candidate
    return None


def _load_from(path):
    spec = importlib.util.spec_from_file_location("tilecore._ffi_core", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["tilecore._ffi_core"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["tilecore._ffi_core"]
        raise
    return module


try:
    _path = _extension_on_pythonpath()
    if _path is not None and "tilecore._ffi_core" not in sys.modules:
        _ffi_core = _load_from(_path)
    else:
        from .. import _ffi_core  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on how tilecore was built
    raise ImportError(
        "tilecore's compiled extension (tilecore._ffi_core) could not be imported: "
        f"{err}\n"
        "Build it with `pip install -e .`, or with CMake "
        "(-DTILECORE_BUILD_PYTHON=ON) and put <build>/python on PYTHONPATH next to python/."
    ) from err
