#!/usr/bin/env bash
# Step 2 of the device round trip (runs on the GPU machine, in the copy of the repo, with .device/bundle carried):
# unit and parity tests, micro-benchmarks and, with the golden-model script, transformers' greedy tokens on
# fresh random models compared with taco_llm's. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh
{
  echo "preset: $preset"
  nproc; lscpu | grep -E 'Model name|Flags' | cut -c1-200; nvidia-smi -L || true
  "$build/taco_llm" generate tests/data/models/llama --prompt-ids 1,2 --device cuda || true
} >"$out/machine.txt" 2>&1
status=0
for t in "$build"/taco_*_tests; do
  case "$t" in *tokenizer_tests) continue ;; esac  # tokenizer data is fetched by npm, not carried
  echo "== $t" >>"$out/tests.log"
  "$t" --gtest_brief=1 >>"$out/tests.log" 2>&1 || status=1
done
tail -n 3 "$out/tests.log"
for b in "$build"/*_bench; do
  case "$b" in *tokenizer_bench) continue ;; esac  # needs the npm tokenizers, not carried
  "$b" --benchmark_min_time=0.2 --benchmark_out="$out/$(basename "$b").json" --benchmark_out_format=json \
    >"$out/$(basename "$b").txt" 2>&1 || status=1
done
if [ "${TACO_DEVICE_UNSEEN:-1}" = 1 ]; then
  python3 tools/check_unseen_models.py --taco "$build/taco_llm" --count "${TACO_UNSEEN_COUNT:-30}" --seed 20261130 \
    2>&1 | tee "$out/unseen_models.txt" | tail -n 40 || status=1
fi
exit $status
