#!/usr/bin/env bash
# scripts/test_sanitizers.sh — builds the C++ library and tests with
# -fsanitize=address,undefined (CMake preset "asan") and runs them.
# The preset compiles at -O1 -g1 (ASan's advice; function names and lines in reports):
# instrumented -O2 -g compiled about twice as slowly, and the sanitizers find the same
# faults at -O1.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cmake --preset asan >/dev/null
cmake --build --preset asan -j2
# AddressSanitizer's red zones make every frame several times larger; the tests that
# walk graphs up to the documented depth limits need more than the default 8 MiB stack.
ulimit -s 65536 2>/dev/null || ulimit -s unlimited 2>/dev/null || true
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan
