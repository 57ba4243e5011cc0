#!/usr/bin/env bash
# A short device round trip for an attention or decode change when device time is scarce (about 4 minutes, where
# scripts/gpu_suite.sh all takes 6-10): the CUDA attention suite, every golden family and the graph suites in one
# process each, bf16 op parity and batch invariance, the attention benchmark without the CUDA cores' kernel, and
# `bench batch` on the 8B shape, also with each TACO_CUDA_* switch named in TACO_QUICK_SWITCHES off (for example
# "TACO_CUDA_DECODE_COOP": its before/after in the same call). Run on the GPU machine after scripts/device_bundle.sh
# here, carrying .device/bundle.tar.xz; logs and JSON in $OUT, a line per step in summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh
status=0
step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2 start=$SECONDS
  shift 2
  timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $((SECONDS - start))s" | tee -a "$out/summary.txt"
  [ $rc = 0 ] || status=1
}
nvidia-smi -L >"$out/machine.txt" 2>&1
step cuda_tests 150 "$build/taco_cuda_tests" --gtest_brief=1 \
  --gtest_filter='CudaPagedAttention*:AllGoldenModels/CudaGolden.*:Families/CudaGraphs*:Families/CudaExecutor*'
step kernels_tests 60 "$build/taco_kernels_tests" --gtest_brief=1 \
  --gtest_filter='CudaBF16/OpParity*:Cuda/OpsBatchInvariance*'
step attention_bench 120 "$build/cuda_attention_bench" --benchmark_min_time=0.02 \
  --benchmark_filter='BM_Prefill/kernel:0|BM_Decode/kernel:[0234]' \
  --benchmark_out="$out/cuda_attention_bench.json" --benchmark_out_format=json
m=bench/models/llama-3.1-8b
common=(--load-format dummy --device cuda --dtype bfloat16)
step bench_batch 90 "$build/taco_llm" bench batch "$m" "${common[@]}" --output-json "$out/bench_batch.json"
for switch in ${TACO_QUICK_SWITCHES:-}; do
  step "bench_batch_${switch}_off" 90 env "$switch=0" "$build/taco_llm" bench batch "$m" "${common[@]}" \
    --output-json "$out/bench_batch_${switch}_off.json"
done
exit $status
