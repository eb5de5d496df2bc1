#!/usr/bin/env bash
# scripts/test.sh — the whole test suite: builds tilecore, checks the style (clang-format,
# ruff), runs the C++ tests (also under AddressSanitizer + UndefinedBehaviorSanitizer),
# the C++ and Python tests of a build without the npu (scripts/test_without_npu.sh), a
# bounded fuzz run, the runtime library as an application links it (scripts/test_deploy.sh:
# installed, pkg-config, CMake, ThreadSanitizer, a wheel in a fresh venv), then the Python
# tests (on every core, scripts/common.sh), whose summary line ends the output.
#
#   scripts/test.sh            everything
#   scripts/test.sh --quick    skip the sanitizer builds, the build without the npu, the fuzz run
#                              and the deployment tests
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1

bash "$ROOT/scripts/bootstrap.sh" || { echo "tilecore: build failed"; exit 1; }
source "$ROOT/scripts/common.sh"
pytest_parallel_args
status=0
# Each stage's heading says how long the suite has run, so a slow stage shows in the log.
stage() { echo "== $1 ($((SECONDS / 60)) min $((SECONDS % 60)) s in)"; }

stage "style: clang-format and ruff (docs/contributing.md)"
bash "$ROOT/scripts/check_style.sh" || status=1

stage "C++ tests"
ctest --test-dir "$ROOT/build" --output-on-failure -j2 || status=1

if [ "$QUICK" = 0 ]; then
  stage "C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer"
  bash "$ROOT/scripts/test_sanitizers.sh" || status=1
  stage "C++ and Python tests of a build without the npu (TILECORE_ENABLE_NPU=OFF)"
  bash "$ROOT/scripts/test_without_npu.sh" || status=1
  if [ -x "$ROOT/scripts/fuzz.sh" ]; then
    stage "bounded fuzz run"
    bash "$ROOT/scripts/fuzz.sh" --seconds 30 || status=1
  fi
  stage "the runtime library: installed, linked by the examples, under ThreadSanitizer; the wheel"
  bash "$ROOT/scripts/test_deploy.sh" || status=1
fi

stage "Python tests"
"$PYTHON" -m pytest -q "${PYTEST_PARALLEL[@]}" "$ROOT/tests/python" -p no:cacheprovider || status=1
exit $status
