#!/usr/bin/env bash
# scripts/test_sanitizers.sh — builds the C++ library and tests with
# -fsanitize=address,undefined (CMake preset "asan") and runs them.
# The preset compiles with clang at -O0 -g1 (function names and lines in reports): an
# instrumented source compiles about three times faster than with GCC at -O1, the tests
# run about twice as long, and the build is most of this script's time. Clang's UBSan
# also checks what GCC's does not (a load of an enum outside its values).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
source "$ROOT/scripts/common.sh"
need_clang14 asan "the sanitizer build"
cmake --preset asan >/dev/null
cmake --build --preset asan -j2
# AddressSanitizer's red zones make every frame several times larger; the tests that
# walk graphs up to the documented depth limits need more than the default 8 MiB stack.
ulimit -s 65536 2>/dev/null || ulimit -s unlimited 2>/dev/null || true
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan
