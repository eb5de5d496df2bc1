#!/usr/bin/env bash
# scripts/test_python_asan.sh — runs the Python test suite against an AddressSanitizer +
# UndefinedBehaviorSanitizer build of libtilecore and its Python extension, with the
# sanitizer runtime preloaded into the (uninstrumented) Python interpreter.
#
#   scripts/test_python_asan.sh                              the whole suite
#   scripts/test_python_asan.sh tests/python/reliability     some folders or files
#
# Any sanitizer report aborts the process that made it, so it fails its test (reproducers
# in child processes fail their test too, since the children inherit the preload).
# Leak checking is off: CPython does not free everything at exit.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build-asan-py"
LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# -O1 -g1 (function names and lines in reports): instrumented -O2 -g compiles about
# three times slower, and the sanitizers find the same faults at -O1.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="${ASAN_CXXFLAGS:--O1 -g1}" \
  -DCMAKE_C_FLAGS="${ASAN_CXXFLAGS:--O1 -g1}" -DTILECORE_BUILD_TESTS=OFF \
  -DTILECORE_BUILD_PYTHON=ON -DTILECORE_SANITIZE=address,undefined "${LAUNCHER[@]}" >/dev/null
nice cmake --build "$BUILD" -j"${JOBS:-2}"
CXX=${CXX:-c++}
ASAN_LIB=$("$CXX" -print-file-name=libasan.so)
UBSAN_LIB=$("$CXX" -print-file-name=libubsan.so)
[ -f "$ASAN_LIB" ] || { echo "test_python_asan: cannot find libasan.so ($ASAN_LIB)" >&2; exit 1; }
# ASan's red zones make frames larger; the depth-limit tests need more than 8 MiB of stack.
ulimit -s 65536 2>/dev/null || true
export LD_PRELOAD="$ASAN_LIB $UBSAN_LIB${LD_PRELOAD:+ $LD_PRELOAD}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export PYTHONPATH="$ROOT/python:$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
if [ $# -eq 0 ]; then set -- tests/python; fi
python -m pytest -q -p no:cacheprovider "$@"
