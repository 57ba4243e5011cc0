#!/usr/bin/env bash
# A short device round trip for an attention or decode change when device time is scarce (about 7 minutes, where
# scripts/gpu_suite.sh all takes 6-10): the CUDA attention suite, every golden family and the graph suites in one
# process each, bf16 op parity and batch invariance, the attention benchmark without the CUDA cores' kernel and each
# decode attention kernel's time (Nsight Compute), the cuDNN graph probe, `bench batch` and `bench latency` at 1k and
# 32k on the 8B shape, also with each TACO_CUDA_* switch named in TACO_QUICK_SWITCHES off (for example
# "TACO_CUDA_DECODE_ATTENTION": its before/after in the same call) and each opt-in switch named in TACO_QUICK_OPT_INS
# on (for example "TACO_CUDA_CUDNN_WARMUP": the suites and the benches with it, and for a TACO_CUDA_DECODE_* kernel
# switch the decode attention cases and their kernels' times), 256 running requests with and without async
# scheduling, and serve's start-up with a checkpoint (and dummy weights where asked). Where .device/before.tar.xz is
# carried too (an earlier build's taco_llm and cuda_attention_bench, compressed), the decode attention cases, bench
# batch and the 32k latency run with those too.
# TACO_QUICK_ATTENTION_FILTER narrows the attention benchmark. TACO_DEVICE_BUDGET_S=N (device_env.sh) skips the steps
# past N seconds, so the script packs what it has inside the run tool's limit (give N about 30 s under it). Run on
# the GPU machine after scripts/device_bundle.sh here, carrying .device/bundle.tar.xz; logs and JSON in $OUT, a line
# per step in summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh
nvidia-smi -L >"$out/machine.txt" 2>&1
# TACO_QUICK_SUITES=0 skips the default path's suites (an earlier call of the same build ran them).
if [ "${TACO_QUICK_SUITES:-1}" = 1 ]; then
  step cuda_tests 200 "$build/taco_cuda_tests" --gtest_brief=1 \
    --gtest_filter='CudaPagedAttention*:DeviceBatchSamplerTest*:Dtypes/CudaEngineStructured*:AllGoldenModels/CudaGolden.*:Families/CudaGraphs*:Families/CudaExecutor*:CudaRunner*:CudnnWarmup*'
  # Structured outputs again with the masked rows sampled from host logits (the device masks' switch off).
  step cuda_structured_host_masks 60 env TACO_CUDA_DEVICE_GRAMMAR_MASKS=0 "$build/taco_cuda_tests" --gtest_brief=1 \
    --gtest_filter='Dtypes/CudaEngineStructured*'
  step kernels_tests 60 "$build/taco_kernels_tests" --gtest_brief=1 \
    --gtest_filter='CudaBF16/OpParity*:Cuda/OpsBatchInvariance*'
fi
step attention_bench 200 "$build/cuda_attention_bench" --benchmark_min_time=0.02 \
  --benchmark_filter="${TACO_QUICK_ATTENTION_FILTER:-BM_Prefill/kernel:[024]|BM_Decode/kernel:[023]}" \
  --benchmark_out="$out/cuda_attention_bench.json" --benchmark_out_format=json
# Each kernel's share of a decode attention call (the attention kernel and split-KV's merge): Nsight Compute's
# gpu__time_duration of 40 launches at 32k keys (bs=1) and at bs=64 over 1k keys in a graph bucket's capacity.
decode_cases="bs1_32k:batch:1/context:32768/capacity:0 bs1_1k:batch:1/context:1024/capacity:131072
  bs64_1k:batch:64/context:1024/capacity:131072"
# ncu_decode SUFFIX BENCH_BINARY [VAR=VALUE...]: the three decode cases' kernel times, in ncu_decode_<case>SUFFIX.
ncu_decode() {
  local suffix=$1 binary=$2 decode name
  shift 2
  for decode in $decode_cases; do
    name=ncu_decode_${decode%%:*}$suffix decode=${decode#*:}
    step "$name" 60 env "$@" ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
      --launch-skip 20 --launch-count 40 --log-file "$out/$name.csv" "$binary" \
      --benchmark_filter="BM_Decode/kernel:0/$decode" --benchmark_min_time=0.001
    python3 tools/ncu_summary.py "$out/$name.csv" 10 >"$out/$name.txt" 2>&1
  done
}
ncu_decode "" "$build/cuda_attention_bench"
# TACO_QUICK_PROFILE=1: where the attention kernels' time goes (scripts/gpu_profile.sh attention: stall reasons, bytes,
# occupancy of one prefill and two decode launches).
[ "${TACO_QUICK_PROFILE:-0}" = 1 ] && step profile_attention 120 env OUT="$out" scripts/gpu_profile.sh attention
# A before/after in the same call: .device/before.tar.xz (made here from an earlier bundle: before/taco_llm and
# before/cuda_attention_bench) runs the decode attention cases (TACO_QUICK_BEFORE_FILTER), their kernels, bench batch
# and the 32k latency again.
before=
if [ -f .device/before.tar.xz ]; then
  tar -C .device -xJf .device/before.tar.xz && before=.device/before
fi
if [ -n "$before" ]; then
  step attention_bench_before 120 "$before/cuda_attention_bench" --benchmark_min_time=0.02 \
    --benchmark_filter="${TACO_QUICK_BEFORE_FILTER:-BM_Decode/kernel:[023]}" \
    --benchmark_out="$out/cuda_attention_bench_before.json" --benchmark_out_format=json
  ncu_decode _before "$before/cuda_attention_bench"
fi
# Which forms of cuDNN's attention graph the machine's cuDNN has an engine for (cudnn_attention.h).
step cudnn_probe 60 "$build/cuda_attention_bench" --benchmark_filter=BM_CudnnGraphProbe
m=bench/models/llama-3.1-8b
common=(--load-format dummy --device cuda --dtype bfloat16)
# bs=1 at 1k (TTFT of a 1024-token prompt) and at 32k (a 32k prompt's prefill in one step, then decode there).
# Three iterations: a 3% difference of one iteration each could not be told from noise (bench/results/h100-2026-12-07g).
long=(--input-len 32768 --output-len 64 --num-iters 3 --max-num-batched-tokens 32768 --max-model-len 33024)
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
if [ -n "$before" ]; then
  step bench_batch_before 90 "$before/taco_llm" bench batch "$m" "${common[@]}" --output-json "$out/bench_batch_before.json"
  step bench_latency_32k_before 90 "$before/taco_llm" bench latency "$m" "${common[@]}" "${long[@]}" \
    --output-json "$out/bench_latency_32k_before.json"
fi
# 8 and 256 running requests: the step thread's host phases per step (step_ms in the JSON) against the step's time,
# with async scheduling (the default on CUDA: the outputs' host work overlaps the next step) and without.
# TACO_QUICK_256=0 skips them.
if [ "${TACO_QUICK_256:-1}" = 1 ]; then
  step bench_batch_256 90 "$build/taco_llm" bench batch "$m" "${common[@]}" --batch-sizes 8,256 --output-len 128 \
    --output-json "$out/bench_batch_256.json"
  step bench_batch_256_sync 90 "$build/taco_llm" bench batch "$m" "${common[@]}" --batch-sizes 8,256 --output-len 128 \
    --no-async-scheduling --output-json "$out/bench_batch_256_sync.json"
fi
# TACO_QUICK_THROUGHPUT=1: BENCHMARKS.md's throughput workload (1000 requests of 1000 / 1000 tokens, about 150 s on the
# 8B shape; the target is >= 9,000 output tok/s).
[ "${TACO_QUICK_THROUGHPUT:-0}" = 1 ] && step bench_throughput 240 "$build/taco_llm" bench throughput "$m" \
  "${common[@]}" --output-json "$out/bench_throughput.json"
# serve's start to its first answered completion (dummy weights).
# serve's start-up from an 8B checkpoint of random weights in the page cache (writing it takes about a minute);
# TACO_QUICK_DUMMY_STARTUP=1 also with dummy weights.
[ "${TACO_QUICK_DUMMY_STARTUP:-0}" = 1 ] && step startup 60 scripts/gpu_startup.sh
# TACO_QUICK_STARTUP=0 skips it.
[ "${TACO_QUICK_STARTUP:-1}" = 1 ] && step startup_checkpoint 180 env TACO_STARTUP_CHECKPOINT=1 scripts/gpu_startup.sh
for switch in ${TACO_QUICK_SWITCHES:-}; do bench_all "_${switch}_off" "$switch=0"; done
# TACO_QUICK_FLAG_VARIANTS: engine flags to measure against the defaults, variants separated by ';' (for example
# "--max-num-seqs 1024"): the three workloads again with each variant's flags added, and the throughput workload too
# with TACO_QUICK_VARIANT_THROUGHPUT=1 (about 190 s each). Files are suffixed with the flags (non-alphanumerics as
# '_').
IFS=';' read -ra flag_variants <<<"${TACO_QUICK_FLAG_VARIANTS:-}"
for variant in "${flag_variants[@]}"; do
  read -ra flags <<<"$variant"
  [ ${#flags[@]} = 0 ] && continue
  suffix=$(printf '%s' "${flags[*]}" | tr -c 'a-zA-Z0-9' '_')
  defaults=("${common[@]}")
  common+=("${flags[@]}")
  bench_all "$suffix"
  [ "${TACO_QUICK_VARIANT_THROUGHPUT:-0}" = 1 ] && step "bench_throughput$suffix" 240 "$build/taco_llm" bench \
    throughput "$m" "${common[@]}" --output-json "$out/bench_throughput$suffix.json"
  common=("${defaults[@]}")
done
# Each opt-in switch on: the goldens, graphs and attention suite first (a path is made the default only after they
# pass with it), then the benches.
for switch in ${TACO_QUICK_OPT_INS:-}; do
  step "cuda_tests_${switch}_on" 200 env "$switch=1" "$build/taco_cuda_tests" --gtest_brief=1 \
    --gtest_filter='CudaPagedAttention*:AllGoldenModels/CudaGolden.*:Families/CudaGraphs*:Families/CudaExecutor*:CudaRunner*:CudnnWarmup*'
  # A decode attention kernel's switch (TACO_CUDA_DECODE_*, TACO_CUDA_MERGE_*, TACO_CUDA_ATTENTION_*): the decode
  # attention cases and their kernels' times with it on (against the default's above). Other switches
  # (TACO_CUDA_CUDNN_WARMUP) leave the kernels as they are.
  if [[ "$switch" == TACO_CUDA_DECODE_* || "$switch" == TACO_CUDA_MERGE_* ||
    "$switch" == TACO_CUDA_ATTENTION_* ]]; then
    step "attention_bench_${switch}_on" 120 env "$switch=1" "$build/cuda_attention_bench" --benchmark_min_time=0.02 \
      --benchmark_filter='BM_Decode/kernel:0' --benchmark_out="$out/cuda_attention_bench_${switch}_on.json" \
      --benchmark_out_format=json
    ncu_decode "_${switch}_on" "$build/cuda_attention_bench" "$switch=1"
  fi
  bench_all "_${switch}_on" "$switch=1"
done
# TACO_QUICK_GEMM=1: the decode GEMMs against the copy bandwidth (cuda_gemm_bench: the skinny kernel's builds and
# tunings at M <= 16, cuBLASLt up to M = 256).
[ "${TACO_QUICK_GEMM:-0}" = 1 ] && step gemm_bench 200 "$build/cuda_gemm_bench" --benchmark_min_time=0.01 \
  --benchmark_filter='DeviceCopy|Skinny|Cublas/|GatedUp' --benchmark_out="$out/cuda_gemm_bench.json" --benchmark_out_format=json
# TACO_QUICK_PROFILE_DECODE="64 ...": each kernel's time in the decode steps of those batch sizes and in the 32k
# latency run (scripts/gpu_profile.sh's TACO_PROFILE_DECODE_BATCHES and TACO_PROFILE_LONG).
[ -n "${TACO_QUICK_PROFILE_DECODE:-}" ] && step profile_decode 300 env OUT="$out" TACO_PROFILE_LATENCY=0 \
  TACO_PROFILE_BATCHES=" " TACO_PROFILE_DECODE_BATCHES="$TACO_QUICK_PROFILE_DECODE" TACO_PROFILE_LONG=1 \
  TACO_PROFILE_LIMIT_S=200 scripts/gpu_profile.sh
# TACO_QUICK_PACK=1: everything but summary.txt packed into results.tgz (the run tool brings back a limited number of
# files; Nsight Compute's CSVs, which the summaries replace, are left out).
if [ "${TACO_QUICK_PACK:-0}" = 1 ]; then
  (cd "$out" && rm -f ./*.csv && tar czf /tmp/taco-quick-results.tgz --exclude=summary.txt . &&
    find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/taco-quick-results.tgz results.tgz)
fi
exit $status
