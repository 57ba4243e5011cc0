#!/usr/bin/env bash
# A short device round trip for an attention or decode change when device time is scarce (about 4 minutes, where
# scripts/gpu_suite.sh all takes 6-10): the CUDA attention suite, every golden family and the graph suites in one
# process each, bf16 op parity and batch invariance, the attention benchmark without the CUDA cores' kernel, and
# `bench batch` and `bench latency` at 1k and 32k on the 8B shape, also with each TACO_CUDA_* switch named in
# TACO_QUICK_SWITCHES off (for example "TACO_CUDA_DECODE_ATTENTION": its before/after in the same call) and each opt-in
# switch named in TACO_QUICK_OPT_INS on ("TACO_CUDA_CUDNN_ATTENTION");
# TACO_QUICK_ATTENTION_FILTER narrows the attention benchmark. Run on the GPU machine after scripts/device_bundle.sh
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
step cuda_tests 200 "$build/taco_cuda_tests" --gtest_brief=1 \
  --gtest_filter='CudaPagedAttention*:DeviceBatchSamplerTest*:AllGoldenModels/CudaGolden.*:Families/CudaGraphs*:Families/CudaExecutor*'
step kernels_tests 60 "$build/taco_kernels_tests" --gtest_brief=1 \
  --gtest_filter='CudaBF16/OpParity*:Cuda/OpsBatchInvariance*'
step attention_bench 200 "$build/cuda_attention_bench" --benchmark_min_time=0.02 \
  --benchmark_filter="${TACO_QUICK_ATTENTION_FILTER:-BM_Prefill/kernel:[024]|BM_Decode/kernel:[023]}" \
  --benchmark_out="$out/cuda_attention_bench.json" --benchmark_out_format=json
# Which forms of cuDNN's attention graph the machine's cuDNN has an engine for (cudnn_attention.h).
step cudnn_probe 60 "$build/cuda_attention_bench" --benchmark_filter=BM_CudnnGraphProbe
m=bench/models/llama-3.1-8b
common=(--load-format dummy --device cuda --dtype bfloat16)
# bs=1 at 1k (TTFT of a 1024-token prompt) and at 32k (a 32k prompt's prefill in one step, then decode there).
long=(--input-len 32768 --output-len 64 --num-iters 1 --max-num-batched-tokens 32768 --max-model-len 33024)
bench_all() {  # bench_all SUFFIX [VAR=VALUE]: the three workloads, with the switch given
  local suffix=$1
  shift
  step "bench_batch$suffix" 90 env "$@" "$build/taco_llm" bench batch "$m" "${common[@]}" \
    --output-json "$out/bench_batch$suffix.json"
  step "bench_latency$suffix" 60 env "$@" "$build/taco_llm" bench latency "$m" "${common[@]}" --num-iters 3 \
    --output-json "$out/bench_latency$suffix.json"
  step "bench_latency_32k$suffix" 90 env "$@" "$build/taco_llm" bench latency "$m" "${common[@]}" "${long[@]}" \
    --output-json "$out/bench_latency_32k$suffix.json"
}
bench_all ""
# 8 and 256 running requests: the step thread's host phases per step (step_ms in the JSON) against the step's time,
# with async scheduling (the default on CUDA: the outputs' host work overlaps the next step) and without.
step bench_batch_256 90 "$build/taco_llm" bench batch "$m" "${common[@]}" --batch-sizes 8,256 --output-len 128 \
  --output-json "$out/bench_batch_256.json"
step bench_batch_256_sync 90 "$build/taco_llm" bench batch "$m" "${common[@]}" --batch-sizes 8,256 --output-len 128 \
  --no-async-scheduling --output-json "$out/bench_batch_256_sync.json"
# serve's start to its first answered completion (dummy weights).
step startup 60 scripts/gpu_startup.sh
for switch in ${TACO_QUICK_SWITCHES:-}; do bench_all "_${switch}_off" "$switch=0"; done
for switch in ${TACO_QUICK_OPT_INS:-}; do bench_all "_${switch}_on" "$switch=1"; done
exit $status
