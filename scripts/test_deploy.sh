#!/usr/bin/env bash
# scripts/test_deploy.sh — tilecore as a deployer installs and links it (docs/deploy.md):
#   build-runtime/  the runtime library alone (TILECORE_BUILD_RUNTIME_ONLY=ON), installed into
#                   build-runtime/install (headers, libraries, CMake package, pkg-config files);
#   build-tsan/     the same under ThreadSanitizer, with the example applications;
# then tests/deploy: models compiled by tilecore run through the C API and the examples built
# against the installed tree (pkg-config and CMake) and under ThreadSanitizer, their outputs
# compared with Python's Executable.run; the runtime library's symbols and dependencies; and a
# wheel of the tree installed into a fresh venv.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
source "$ROOT/scripts/common.sh"
need_deb pkg-config pkg-config "the deployment tests"
# The same compiler and cache as the main build: the runtime library's files come from it.
ccache_cmake_args "${TILECORE_BUILD_DIR:-$ROOT/build}"

RUNTIME="$ROOT/build-runtime"
cmake -S "$ROOT" -B "$RUNTIME" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILECORE_BUILD_RUNTIME_ONLY=ON \
  -DTILECORE_WERROR=ON -DCMAKE_INSTALL_PREFIX="$RUNTIME/install" "${CCACHE_ARGS[@]}" >/dev/null \
  && cmake --build "$RUNTIME" -j2 >/dev/null \
  && rm -rf "$RUNTIME/install" && cmake --install "$RUNTIME" >/dev/null \
  || { echo "tilecore: the runtime library's build or install failed"; exit 1; }

# ThreadSanitizer at -O1 -g1, like the ASan build (scripts/test_sanitizers.sh).
TSAN="$ROOT/build-tsan"
cmake -S "$ROOT" -B "$TSAN" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DTILECORE_BUILD_RUNTIME_ONLY=ON -DTILECORE_BUILD_EXAMPLES=ON -DTILECORE_SANITIZE=thread \
  "${CCACHE_ARGS[@]}" >/dev/null \
  && cmake --build "$TSAN" -j2 --target two_models >/dev/null \
  || { echo "tilecore: the ThreadSanitizer build failed"; exit 1; }

TILECORE_RUNTIME_PREFIX="$RUNTIME/install" TILECORE_TSAN_BUILD="$TSAN" \
  "$PYTHON" -m pytest -q -p no:cacheprovider "$ROOT/tests/deploy"
