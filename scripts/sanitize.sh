#!/usr/bin/env bash
# Sanitizer runs of the tests (issue 16), each in a build tree of its own (the asan / tsan presets: gcc, no CUDA):
#   asan  ASan+UBSan (build/asan): the GoogleTest suites named in TACO_ASAN_SUITES, whole.
#   tsan  TSan (build/tsan): the engine and server tests that run threads against each other (the step thread,
#         the HTTP server's threads, clients, aborts, disconnects), filtered by TACO_TSAN_FILTER.
# Usage: scripts/sanitize.sh [asan|tsan|all] (default all). Any report fails the run (halt_on_error). Each build
# compiles the libraries again with its flags: expensive on a small machine, so only the suites' targets are built.
# The suites run their binaries directly (not ctest: the node client tests are not sanitizer targets).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
asan_suites=${TACO_ASAN_SUITES:-core io tokenizer structured cache sched exec engine server}
tsan_filter=${TACO_TSAN_FILTER:-Engine.*:EngineFaults.*:EngineStructured.*:ServerErrors.*:ServerHttp.*:ServerLoad.*:ServerDisconnect.*:EngineRandom.*}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

run_suites() {  # preset, gtest filter, suites...
  local preset=$1 filter=$2
  shift 2
  local targets=()
  for suite in "$@"; do targets+=("taco_${suite}_tests"); done
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" --target "${targets[@]}"
  for target in "${targets[@]}"; do
    echo "== $preset: $target"
    (cd "build/$preset" && "./$target" --gtest_filter="$filter" --gtest_brief=1)
  done
}

case "$mode" in
  asan | all) run_suites asan "*" $asan_suites ;;&
  tsan | all) run_suites tsan "$tsan_filter" engine server ;;
  asan) ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|all]" >&2; exit 2 ;;
esac
