#!/usr/bin/env bash
# scripts/test_without_npu.sh — builds tilecore with TILECORE_ENABLE_NPU=OFF (no TC1
# device, target or code generator: the c target and the host only) into build-nonpu/
# and runs its C++ and Python tests. Tests that need the npu skip with that reason
# (tests/python/conftest.py); every other failure fails the run.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
BUILD="$ROOT/build-nonpu"
source "$ROOT/scripts/common.sh"
# The same compiler and flags as the main build and the same ccache: only the files that test
# TILECORE_ENABLE_NPU compile differently, the rest come from the cache.
ccache_cmake_args "${TILECORE_BUILD_DIR:-$ROOT/build}"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILECORE_BUILD_TESTS=ON \
  -DTILECORE_WERROR=ON -DTILECORE_ENABLE_NPU=OFF -DPython_EXECUTABLE="$(command -v "$PYTHON")" \
  "${CCACHE_ARGS[@]}" >/dev/null \
  && cmake --build "$BUILD" -j2 >/dev/null || { echo "tilecore: the build without the npu failed"; exit 1; }
status=0
if ctest --test-dir "$BUILD" -j2 >"$BUILD/ctest.log" 2>&1; then
  grep "tests passed" "$BUILD/ctest.log"
else
  cat "$BUILD/ctest.log"; status=1
fi
# The build named on PYTHONPATH wins over the editable install's (python/tilecore/ffi/_base.py);
# make sure it did, or the run would test the npu build twice.
export PYTHONPATH="$ROOT/python:$BUILD/python"
"$PYTHON" -c "
import tilecore, tilecore._ffi_core as core, sys
assert '$BUILD' in core.__file__, core.__file__
assert tilecore.get_global_func('runtime.NpuModuleCreate', allow_missing=True) is None
" || { echo "tilecore: the Python tests without the npu did not load that build"; exit 1; }
pytest_parallel_args
if "$PYTHON" -m pytest -q "${PYTEST_PARALLEL[@]}" -p no:cacheprovider "$ROOT/tests/python" >"$BUILD/pytest.log" 2>&1; then
  tail -n 1 "$BUILD/pytest.log"
else
  grep -E "^(FAILED|ERROR)|passed|failed" "$BUILD/pytest.log"; status=1
fi
exit $status
