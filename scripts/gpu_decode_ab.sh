#!/usr/bin/env bash
# The shortest device round trip for a decode attention kernel change (about 3 minutes): the CUDA attention and graph
# suites (the decode kernel against the general kernel bit for bit, and under graph capture), then, only if they
# pass, the decode cases of cuda_attention_bench and `bench batch` at 1 / 8 / 64 sequences, each with this bundle and
# with the earlier one carried as .device/before.tar.xz (before/taco_llm and before/cuda_attention_bench). Run on the
# GPU machine after scripts/device_bundle.sh here, carrying both archives; logs and JSON in $OUT, a line per step in
# summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh
nvidia-smi -L >"$out/machine.txt" 2>&1
tar -C .device -xJf .device/before.tar.xz
before=.device/before
step tests 120 "$build/taco_cuda_tests" --gtest_brief=1 --gtest_filter='CudaPagedAttention*:Families/CudaGraphs*'
[ $status = 0 ] || exit 1
m=bench/models/llama-3.1-8b
common=(--load-format dummy --device cuda --dtype bfloat16)
for side in after before; do
  dir=$build suffix=
  [ $side = before ] && dir=$before suffix=_before
  step "attention_bench$suffix" 60 "$dir/cuda_attention_bench" --benchmark_min_time=0.02 \
    --benchmark_filter='BM_Decode/kernel:0' --benchmark_out="$out/cuda_attention_bench$suffix.json" \
    --benchmark_out_format=json
done
for side in after before; do
  dir=$build suffix=
  [ $side = before ] && dir=$before suffix=_before
  step "bench_batch$suffix" 60 "$dir/taco_llm" bench batch "$m" "${common[@]}" --batch-sizes 1,8,64 \
    --output-json "$out/bench_batch$suffix.json"
done
exit $status
