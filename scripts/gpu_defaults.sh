#!/usr/bin/env bash
# A device round trip for flipping a TACO_CUDA_* default (about 6 minutes on the 8B shape): every CUDA test and bf16
# op parity and batch invariance with the new defaults, then `bench batch` and `bench latency` at 32k with each switch
# named in TACO_DEFAULTS_OFF turned off again (the flip's before/after in one call), 256 running requests with each
# opt-in named in TACO_DEFAULTS_OPT_INS on and off, and, with TACO_DEFAULTS_THROUGHPUT=1, BENCHMARKS.md's throughput
# workload (1000 x 1000/1000). Run on the GPU machine after scripts/device_bundle.sh here, carrying
# .device/bundle.tar.xz; logs and JSON in $OUT, a line per step in summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh
nvidia-smi -L >"$out/machine.txt" 2>&1
step cuda_tests 300 "$build/taco_cuda_tests" --gtest_brief=1
step kernels_tests 60 "$build/taco_kernels_tests" --gtest_brief=1 \
  --gtest_filter='CudaBF16/OpParity*:Cuda/OpsBatchInvariance*'
m=bench/models/llama-3.1-8b
common=(--load-format dummy --device cuda --dtype bfloat16)
long=(--input-len 32768 --output-len 64 --num-iters 1 --max-num-batched-tokens 32768 --max-model-len 33024)
both() {  # both SUFFIX [VAR=VALUE...]: bench batch and the 32k latency with the environment given
  local suffix=$1
  shift
  step "bench_batch$suffix" 90 env "$@" "$build/taco_llm" bench batch "$m" "${common[@]}" \
    --output-json "$out/bench_batch$suffix.json"
  step "bench_latency_32k$suffix" 90 env "$@" "$build/taco_llm" bench latency "$m" "${common[@]}" "${long[@]}" \
    --output-json "$out/bench_latency_32k$suffix.json"
}
both ""
for switch in ${TACO_DEFAULTS_OFF:-}; do both "_${switch}_off" "$switch=0"; done
for switch in ${TACO_DEFAULTS_OPT_INS:-}; do
  for v in 0 1; do
    step "bench_batch_256_${switch}_$v" 90 env "$switch=$v" "$build/taco_llm" bench batch "$m" "${common[@]}" \
      --batch-sizes 256 --output-len 128 --output-json "$out/bench_batch_256_${switch}_$v.json"
  done
done
[ "${TACO_DEFAULTS_THROUGHPUT:-0}" = 1 ] && step bench_throughput 240 "$build/taco_llm" bench throughput "$m" \
  "${common[@]}" --output-json "$out/bench_throughput.json"
exit $status
