#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, the fuzz preset: clang with ASan+UBSan) and runs each for a bounded time from
# its seed corpus (fuzz/corpus/<target>/). Usage: scripts/fuzz.sh [SECONDS per target, default 30] [target ...]
# CI runs it briefly (scripts/test.sh); run it longer by hand. New inputs go to build/fuzz/corpus/<target>/ (the
# tree's seeds are never modified); a crash leaves its input in build/fuzz/crashes/<target>/ and fails the run: make
# it a regression test, and add it to the seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_json fuzz_chat_template fuzz_tokenizer_json fuzz_config_json fuzz_tensor_files fuzz_http
  fuzz_openai_request fuzz_prompts_file)
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target "${targets[@]}"
failed=()
for target in "${targets[@]}"; do
  work=build/fuzz/corpus/$target crashes=build/fuzz/crashes/$target
  mkdir -p "$work" "$crashes"
  echo "== $target: ${seconds}s"
  # -rss_limit_mb / -malloc_limit_mb: an input that makes the code under test allocate past them is a finding
  # (core/limits.h says what any input may cost). -timeout: one input running past it is a hang.
  if ! "build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" "$work" "fuzz/corpus/$target" \
      >"build/fuzz/$target.log" 2>&1; then
    failed+=("$target")
    tail -n 40 "build/fuzz/$target.log"
  else
    grep -E "^stat::number_of_executed_units|^Done" "build/fuzz/$target.log" | tr '\n' ' '
    echo
  fi
done
if ((${#failed[@]})); then
  echo "fuzzing found crashes in: ${failed[*]} (inputs under build/fuzz/crashes/)" >&2
  exit 1
fi
