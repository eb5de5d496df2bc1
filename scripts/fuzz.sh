#!/usr/bin/env bash
# scripts/fuzz.sh — builds the libFuzzer targets (clang, ASan + UBSan) and runs each for a
# bounded time over its seed corpus. Any crash, hang or sanitizer report fails the run.
#
#   scripts/fuzz.sh                 30 seconds per target, as the test command runs it
#   scripts/fuzz.sh --seconds 600   the 10-minute run docs/tc1.md reports
# The .tcx loader's target runs for at most 20 seconds (docs/executable.md).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_PER_TARGET=30
[ "${1:-}" = "--seconds" ] && SECONDS_PER_TARGET=$2

source "$ROOT/scripts/common.sh"
need_clang14 fuzzer fuzzing

BUILD="$ROOT/build-fuzz"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DTILECORE_LAYERS="ffi;arch;sim;runtime;ir" -DTILECORE_BUILD_FUZZERS=ON -DTILECORE_BUILD_PYTHON=OFF \
  -DTILECORE_SANITIZE=address,undefined >/dev/null
cmake --build "$BUILD" -j2 --target fuzz_decode_execute fuzz_assemble fuzz_module_npu fuzz_module_c \
  fuzz_load_executable fuzz_c_runtime_load fuzz_load_json
mkdir -p "$BUILD/fuzz-corpus" "$BUILD/asm-corpus" "$BUILD/module-npu-corpus" "$BUILD/module-c-corpus" \
  "$BUILD/tcx-corpus" "$BUILD/capi-corpus" "$BUILD/json-corpus"
run_target() {  # run_target <name> <writable corpus> <seed corpus> [extra flags]
  local name=$1 corpus=$2 seeds=$3 log="$BUILD/$1.log"
  shift 3
  local rc=0
  "$BUILD/tests/fuzz/$name" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -print_final_stats=1 "$@" \
    "$corpus" "$seeds" >"$log" 2>&1 || rc=$?
  grep -E "^(Done|==[0-9]+==ERROR|SUMMARY)" "$log" | sed "s/^/$name: /" || true
  if [ "$rc" != 0 ]; then
    echo "fuzz: $name failed (exit $rc); its log is $log" >&2
    tail -40 "$log" >&2
    exit 1
  fi
}
# Two targets at a time (each libFuzzer run takes one core): the machine's cores fuzz for
# the same time per target in half the wall time.
PENDING=()
launch() {  # launch <run_target args...>: runs it in the background, two at most
  run_target "$@" &
  PENDING+=($!)
  if [ "${#PENDING[@]}" -ge "$FUZZ_JOBS" ]; then settle; fi
}
settle() {  # waits for the targets launched; any failure ends the run
  local failed=0 pid
  for pid in "${PENDING[@]}"; do wait "$pid" || failed=1; done
  PENDING=()
  [ "$failed" = 0 ] || exit 1
}
FUZZ_JOBS=$(nproc 2>/dev/null || echo 1)
[ "$FUZZ_JOBS" -gt 2 ] && FUZZ_JOBS=2
launch fuzz_decode_execute "$BUILD/fuzz-corpus" "$ROOT/tests/fuzz/corpus"
launch fuzz_assemble "$BUILD/asm-corpus" "$ROOT/tests/fuzz/corpus_asm" -max_len=4096
# Module files: -rss_limit_mb catches a count that allocates before it is checked.
launch fuzz_module_npu "$BUILD/module-npu-corpus" "$ROOT/tests/fuzz/corpus_module_npu" -rss_limit_mb=1024
launch fuzz_module_c "$BUILD/module-c-corpus" "$ROOT/tests/fuzz/corpus_module_c" -rss_limit_mb=1024 \
  -max_len=65536
TCX_SECONDS=$(( SECONDS_PER_TARGET < 20 ? SECONDS_PER_TARGET : 20 ))
launch fuzz_load_executable "$BUILD/tcx-corpus" "$ROOT/tests/fuzz/corpus_tcx" -max_total_time="$TCX_SECONDS" \
  -max_len=65536
# The C API's load path, over the same seeds.
launch fuzz_c_runtime_load "$BUILD/capi-corpus" "$ROOT/tests/fuzz/corpus_tcx" -max_total_time="$TCX_SECONDS" \
  -max_len=65536
# JSON IR files: -rss_limit_mb catches a count or size that allocates before it is checked.
launch fuzz_load_json "$BUILD/json-corpus" "$ROOT/tests/fuzz/corpus_json" -rss_limit_mb=1024 -max_len=65536
settle
echo "fuzz: no crash, hang or sanitizer report in ${SECONDS_PER_TARGET}s per target (${TCX_SECONDS}s for the .tcx loader and the C API's)"
