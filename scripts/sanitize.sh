#!/usr/bin/env bash
# Sanitizer runs of the tests (issue 16), each in a build tree of its own (the asan / tsan presets: gcc, no CUDA):
#   asan  ASan+UBSan (build/asan): the GoogleTest suites named in TACO_ASAN_SUITES, filtered by TACO_ASAN_FILTER.
#   tsan  TSan (build/tsan): the suites named in TACO_TSAN_SUITES (engine and server: the step thread, the HTTP
#         server's threads, clients, aborts, disconnects), filtered by TACO_TSAN_FILTER.
#   ci    ASan+UBSan in the fuzz tree (build/fuzz: clang, the libraries already built with ASan+UBSan for the fuzzers,
#         so only the suites' own files compile): the suites named in TACO_CI_SANITIZE_SUITES (default: every suite
#         but the CLI, model and kernel ones, whose work is the CPU kernels' arithmetic). scripts/test.sh runs it, so
#         CI runs the sanitizers (issue 16); TACO_CI_SANITIZE=0 skips it there.
# Usage: scripts/sanitize.sh [asan|tsan|ci|all] (default all: asan and tsan), e.g.
#   TACO_ASAN_SUITES="server exec" scripts/sanitize.sh asan
#   TACO_TSAN_FILTER='ServerHttp.*:Engine.*' scripts/sanitize.sh tsan
#   TSAN_OPTIONS=halt_on_error=0 scripts/sanitize.sh tsan    # every TSan report of a suite, not only the first
# Any report fails its suite (halt_on_error; options the caller sets in ASAN_OPTIONS, UBSAN_OPTIONS or TSAN_OPTIONS
# are added after ours and win); every suite runs, and the run fails if one did. Each build compiles the libraries
# again with its flags: expensive on a small machine (about 25 minutes a tree on two cores), so only the suites'
# targets are built; CMAKE_BUILD_PARALLEL_LEVEL bounds the jobs. The suites run their binaries directly (not ctest:
# the node client tests are not sanitizer targets). The server and tokenizer suites read .cache/tokenizers: run
# scripts/setup_test_data.sh first.
# A header edited while a tree builds (a checkout others work in) leaves objects of two layouts of one struct: ASan
# then reports new-delete-type-mismatch, or a SEGV inside a struct's move, and a field reads another's value. Build the
# tree again (ninja rebuilds what is older than its headers) and rerun before reading such a report as a bug.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
asan_suites=${TACO_ASAN_SUITES:-core io tokenizer structured cache sched exec engine server}
asan_filter=${TACO_ASAN_FILTER:-*}
tsan_suites=${TACO_TSAN_SUITES:-engine server}
tsan_filter=${TACO_TSAN_FILTER:-*}
ci_suites=${TACO_CI_SANITIZE_SUITES:-core io tokenizer structured cache sched exec engine server}
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS="halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
failed=()

run_suites() {  # preset, gtest filter, suites...
  local preset=$1 filter=$2
  shift 2
  local targets=()
  for suite in "$@"; do targets+=("taco_${suite}_tests"); done
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" --target "${targets[@]}"
  for target in "${targets[@]}"; do
    echo "== $preset: $target --gtest_filter=$filter"
    local start=$SECONDS
    if (cd "build/$preset" && "./$target" --gtest_filter="$filter" --gtest_brief=1); then
      echo "== $preset: $target passed in $((SECONDS - start)) s"
    else
      echo "== $preset: $target FAILED after $((SECONDS - start)) s"
      failed+=("$preset:$target")
    fi
  done
}

case "$mode" in
  asan | all) run_suites asan "$asan_filter" $asan_suites ;;&
  tsan | all) run_suites tsan "$tsan_filter" $tsan_suites ;;
  asan) ;;
  ci) run_suites fuzz "$asan_filter" $ci_suites ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|ci|all]" >&2; exit 2 ;;
esac
if ((${#failed[@]})); then
  echo "sanitize: failed: ${failed[*]}" >&2
  exit 1
fi
