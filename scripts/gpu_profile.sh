#!/usr/bin/env bash
# Device time per kernel on the 8B shape (on the GPU machine, after scripts/device_bundle.sh here, carrying
# .device/bundle.tar.xz): Nsight Compute times every kernel of a short eager `bench latency` (one 1024-token prefill
# and a few decode steps, after the start-up's profiling forward) and of a batch of 8, with one metric
# (gpu__time_duration, no replay); tools/ncu_summary.py sums them per kernel and shape. CSVs and summaries in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh
m=bench/models/llama-3.1-8b
base=(--load-format dummy --device cuda --dtype bfloat16 --enforce-eager)
common=("${base[@]}" --input-len 1024 --output-len 8)
ncu_run() {  # ncu_run NAME SECONDS BENCH-ARGS...
  local name=$1 limit=$2
  shift 2
  # --cache-control none: no L2 flush before each kernel, which made one-block kernels (a norm of one row) look
  # several times slower than in a real step (bench/results/h200-2026-12-02c).
  timeout -k 5 "$limit" ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    --log-file "$out/ncu_$name.csv" "$build/taco_llm" bench "$@" >"$out/ncu_$name.log" 2>&1
  echo "ncu $name rc=$?"
  python3 tools/ncu_summary.py "$out/ncu_$name.csv" "${TACO_PROFILE_TOP:-40}" | tee "$out/ncu_$name.txt"
}
# `scripts/gpu_profile.sh attention`: where the attention kernels' time goes instead, one launch of each of
# cuda_attention_bench's prefill and decode cases with ncu's speed-of-light, memory, scheduler, warp-state and occupancy
# sections (stall reasons, bytes, issue rate).
ncu_attention() {  # ncu_attention NAME BENCHMARK-FILTER
  timeout -k 5 120 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
    -k regex:'paged_(attention_mma|decode_attention)(_coop)?_kernel' --launch-skip 2 --launch-count 1 \
    "$build/cuda_attention_bench" --benchmark_filter="$2" --benchmark_min_time=0.001 >"$out/ncu_attention_$1.txt" 2>&1
  echo "ncu attention $1 rc=$?"
}
if [ "${1:-steps}" = attention ]; then
  ncu_attention prefill_8k 'BM_Prefill/kernel:0/len:8192'
  ncu_attention decode_bs64 'BM_Decode/kernel:0/batch:64/context:1024/capacity:0'
  ncu_attention decode_32k 'BM_Decode/kernel:0/batch:1/context:32768/capacity:0'
  exit 0
fi
# TACO_PROFILE_LONG=1: the 32k prompt's prefill and three decode steps over its keys (the decode attention kernel and
# its merge as the engine launches them, against cuda_attention_bench's 32k case).
[ "${TACO_PROFILE_LONG:-0}" = 1 ] && ncu_run latency_32k ${TACO_PROFILE_LIMIT_S:-240} latency "$m" "${base[@]}" \
  --input-len 32768 --output-len 4 --num-iters 1 --max-num-batched-tokens 32768 --max-model-len 33024
[ "${TACO_PROFILE_LATENCY:-1}" = 1 ] && ncu_run latency ${TACO_PROFILE_LIMIT_S:-240} latency "$m" "${common[@]}" --num-iters 1
# TACO_PROFILE_BATCHES: the batch sizes profiled (default 8), each its own CSV and summary.
for bs in ${TACO_PROFILE_BATCHES:-8}; do
  ncu_run batch$bs ${TACO_PROFILE_LIMIT_S:-240} batch "$m" "${common[@]}" --batch-sizes "$bs"
done
# TACO_PROFILE_DECODE_BATCHES: batch sizes whose decode steps are profiled alone, near enough: 16-token prompts (one
# small prefill) and 8 output tokens, so that the decode kernels are most of the launches and their times (the GEMMs,
# norms, activation and sampling at M = bs) stand out; the attention kernel's time over long contexts is
# cuda_attention_bench's. (Nsight Compute takes ~16 ms a launch: 24 output tokens, ~8,000 launches, ran past 140 s.)
for bs in ${TACO_PROFILE_DECODE_BATCHES:-}; do
  ncu_run decode$bs ${TACO_PROFILE_LIMIT_S:-240} batch "$m" "${base[@]}" --input-len 16 --output-len 8 \
    --batch-sizes "$bs"
done
