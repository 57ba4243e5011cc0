#!/usr/bin/env bash
# The GPU suite, run on the H200 in one call (after scripts/device_bundle.sh here; the run carries
# .device/bundle.tar.xz alone, ~22 MB beside the ~36 MB tree, not the unpacked .device/bundle):
# op parity of every op and dtype on CUDA, tests/cuda (GPU golden parity, sampler, runner, stress), an end-to-end
# generate, and the BENCHMARKS.md workloads on the Llama-3.1-8B shape with dummy weights. Each step has its own
# time limit so one hang cannot eat the call; logs and JSON go to $OUT.
# Usage (on the device): scripts/gpu_suite.sh [tests|bench|all] (default all). tests and bench each fit one call;
# TACO_SUITE_SKIP="name ..." leaves steps out (their names as in summary.txt, e.g. attention_bench).
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
source scripts/device_env.sh
status=0
step() {  # step NAME SECONDS COMMAND...: runs it with a limit; output appended to $out/steps.log (the tool brings
  # back at most 8 files), a line in summary.txt
  local name=$1 limit=$2
  shift 2
  # TACO_SUITE_SKIP: names of steps to leave out (space-separated), when a call is spent on the others.
  if [[ " ${TACO_SUITE_SKIP:-} " == *" $name "* ]]; then
    echo "$name skipped (TACO_SUITE_SKIP)" | tee -a "$out/summary.txt"
    return
  fi
  # The device tool stops a command at 10 minutes: past the suite's budget the rest is skipped, so the summary
  # and logs still come back.
  if ((SECONDS + 20 > ${TACO_SUITE_BUDGET_S:-560})); then
    echo "$name skipped (suite budget)" | tee -a "$out/summary.txt"
    status=1
    return
  fi
  ((SECONDS + limit > ${TACO_SUITE_BUDGET_S:-560})) && limit=$((${TACO_SUITE_BUDGET_S:-560} - SECONDS))
  local start=$SECONDS
  echo "===== $name: $*" >>"$out/steps.log"
  timeout -k 5 "$limit" "$@" >>"$out/steps.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $((SECONDS - start))s" | tee -a "$out/summary.txt"
  [ $rc = 0 ] || status=1
}
{
  nvidia-smi -L; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  nproc; lscpu | grep 'Model name'
} >"$out/machine.txt" 2>&1
if [ "$what" = tests ] || [ "$what" = all ]; then
  # One binary per step and one suite per step: a CUDA abort (a failed launch is fatal) ends only its own step.
  for suite in CudaF32/OpParity CudaBF16/OpParity CudaF16/OpParity Cuda/OpsBatchInvariance OpsContractDeathTest.Cuda; do
    step "kernels_${suite//\//_}" 240 "$build/taco_kernels_tests" --gtest_brief=1 --gtest_filter="$suite*"
  done
  for suite in CudaAllocator CudaDeviceInfo CudaMatmul SkinnyGemm ProgrammaticLaunch ProgrammaticChain \
    CudaPagedAttention DeviceBatchSamplerTest \
    AllGoldenModels/CudaDryRun Families/CudaExecutor Families/CudaGraphs Families/CudaGraphEngine CudaRunner \
    Dtypes/CudaEngineStress; do
    step "cuda_${suite//\//_}" 300 "$build/taco_cuda_tests" --gtest_brief=1 --gtest_filter="$suite*"
  done
  for dir in tests/data/models/*/; do  # the golden families one by one
    m=$(basename "$dir")
    [ -f "$dir/golden.json" ] && step "golden_$m" 120 "$build/taco_cuda_tests" --gtest_brief=1 \
      --gtest_filter="AllGoldenModels/CudaGolden.*/$m"
  done
  # Where transformers' own bf16 leaves the fp32 greedy path of the MoE goldens, with the routing decisions' distances
  # to their boundaries (a bf16 routing flip of the reference is not a kernel bug).
  # transformers on that machine ignores LongRoPE's mscales, so the longrope golden has its own plain-torch forward.
  step bf16_divergence 120 python3 tools/bf16_divergence_check.py tests/data/models/phimoe tests/data/models/mixtral
  step phimoe_bf16_reference 60 python3 tools/phimoe_bf16_reference.py tests/data/models/phimoe_longrope \
    tests/data/models/phimoe
  # The server on the GPU against the same server on the CPU (protocol shapes, greedy and seeded outputs).
  step server 180 python3 tools/gpu_server_check.py "$build/taco_llm"
  step generate 120 "$build/taco_llm" generate tests/data/models/llama --prompt-ids 1,2,3 --max-tokens 8 \
    --temperature 0 --device cuda --dtype float32
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  # The decode GEMMs (skinny kernel and cuBLASLt) against the copy bandwidth.
  step gemm_bench 120 "$build/cuda_gemm_bench" --benchmark_min_time=0.01 --benchmark_filter=-Candidate \
    --benchmark_out="$out/cuda_gemm_bench.json" --benchmark_out_format=json
  # Attention per layer: the tensor cores against the CUDA cores, prefill and decode.
  step attention_bench 150 "$build/cuda_attention_bench" --benchmark_min_time=0.02 \
    --benchmark_out="$out/cuda_attention_bench.json" --benchmark_out_format=json
  m=bench/models/llama-3.1-8b
  common=(--load-format dummy --device cuda --dtype bfloat16)
  step bench_latency 300 "$build/taco_llm" bench latency "$m" "${common[@]}" --num-iters 3 \
    --output-json "$out/bench_latency.json"
  # The same with every kernel queued after the whole of the one before (programmatic_launch.h): PDL's before/after.
  step bench_latency_no_pdl 200 env TACO_CUDA_PDL=0 "$build/taco_llm" bench latency "$m" "${common[@]}" --num-iters 3 \
    --output-json "$out/bench_latency_no_pdl.json"
  # The same without CUDA graphs: the graphs' before/after.
  step bench_latency_eager 200 "$build/taco_llm" bench latency "$m" "${common[@]}" --num-iters 2 --enforce-eager \
    --output-json "$out/bench_latency_eager.json"
  step bench_batch 400 "$build/taco_llm" bench batch "$m" "${common[@]}" --output-json "$out/bench_batch.json"
  # Decode steps on the general tensor-core attention kernel instead of the decode kernel: its before/after.
  step bench_latency_tiled_decode 200 env TACO_CUDA_DECODE_ATTENTION=0 "$build/taco_llm" bench latency "$m" \
    "${common[@]}" --num-iters 3 --output-json "$out/bench_latency_tiled_decode.json"
  step bench_batch_tiled_decode 400 env TACO_CUDA_DECODE_ATTENTION=0 "$build/taco_llm" bench batch "$m" \
    "${common[@]}" --output-json "$out/bench_batch_tiled_decode.json"
fi
cat "$out/summary.txt"
exit $status
