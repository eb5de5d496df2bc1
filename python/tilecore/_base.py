"""Loads the compiled bridge, tilecore._ffi_core, and says what to do when it is missing."""
try:
    from . import _ffi_core  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on how tilecore was built
    raise ImportError(
        "tilecore's compiled extension (tilecore._ffi_core) could not be imported: "
        f"{err}\n"
        "Build it with `pip install -e .`, or with CMake "
        "(-DTILECORE_BUILD_PYTHON=ON) and put <build>/python on PYTHONPATH next to python/."
    ) from err
