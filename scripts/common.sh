# scripts/common.sh — the helpers the scripts share; sourced, never run.

# need_deb <file or command to look for> <debian package> [what needs it]
# Returns at once when the file or command exists; otherwise installs the package with
# apt-get when running as root, or names it and stops.
need_deb() {
  local probe=$1 package=$2 purpose=${3:-tilecore}
  if [ -e "$probe" ] || command -v "$probe" >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "tilecore: installing Debian package $package"
    if ! (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null 2>&1); then
      apt-get update -qq >/dev/null 2>&1 || true
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
    fi
  else
    echo "tilecore: $purpose needs the Debian package '$package' (install it with: sudo apt-get install $package)" >&2
    exit 1
  fi
}

# need_clang14 <compiler-rt library, e.g. asan> <what needs it>: clang-14 and that runtime
# library of its (libclang-rt-14-dev), installed or named as need_deb does.
need_clang14() {
  local lib=$1 purpose=$2 runtime
  need_deb clang++-14 clang-14 "$purpose"
  runtime=$(ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt."$lib"-x86_64.a 2>/dev/null | head -n1 || true)
  need_deb "${runtime:-/usr/lib/llvm-14/lib/clang/libclang_rt.$lib-x86_64.a}" libclang-rt-14-dev "$purpose"
}

# ccache_env: succeeds when ccache is installed, and points it at the cache that the builds
# of one checkout share (build-ccache/ unless CCACHE_DIR names another), so that the test
# command's builds take each other's objects, never those of another checkout or run.
ccache_env() {
  command -v ccache >/dev/null 2>&1 || return 1
  export CCACHE_DIR=${CCACHE_DIR:-$ROOT/build-ccache}
}

# ccache_cmake_args <main build dir>: sets CCACHE_ARGS to the cmake arguments that make another
# build of this checkout go through the same cache with the same compiler as the main build
# (scripts/bootstrap.sh), so that the files it compiles alike come from the cache. (pip's build
# names the compiler Python was built with, g++ rather than c++, and ccache keys on the name.)
ccache_cmake_args() {
  CCACHE_ARGS=()
  ccache_env || return 0
  CCACHE_ARGS=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  local main_cache="$1/CMakeCache.txt" lang compiler
  for lang in CXX C; do
    compiler=$(sed -n "s/^CMAKE_${lang}_COMPILER:FILEPATH=//p" "$main_cache" 2>/dev/null || true)
    [ -n "$compiler" ] && CCACHE_ARGS+=("-DCMAKE_${lang}_COMPILER=$compiler")
  done
  return 0
}

# pytest_parallel_args: sets PYTEST_PARALLEL to the pytest arguments that spread the tests over
# the machine's cores with pytest-xdist (at most 8 workers: each holds its own models and
# caches), or to nothing when pytest-xdist is missing or TILECORE_TEST_WORKERS=1. Each test
# file runs whole, in its order, on one worker (--dist loadfile): a file's tests that draw from
# one module-level generator get the same values as in one process, whatever the scheduling.
pytest_parallel_args() {
  PYTEST_PARALLEL=()
  local workers=${TILECORE_TEST_WORKERS:-$(nproc 2>/dev/null || echo 1)}
  [ "$workers" -gt 8 ] && workers=8
  [ "$workers" -le 1 ] && return 0
  "${PYTHON:-python3}" -c "import xdist" 2>/dev/null || return 0
  PYTEST_PARALLEL=(-n "$workers" --dist loadfile)
}
