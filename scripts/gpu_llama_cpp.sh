#!/usr/bin/env bash
# llama.cpp side by side with taco_llm on the GPU machine (issue 13 item 7), on the same random Llama-3.1-8B model, in
# two calls back to back on the same warm machine (a machine is held 30 s after a call; its /tmp survives between the
# two), each carrying .device/bundle.tar.xz, .device/llama_cpp_src.tar.xz and .device/llama_cpp_convert.tar.xz (with
# the tree about 62 MB of the 64 MiB a call carries; llama.cpp's built CUDA library alone compresses to ~40 MB, so
# binaries are never carried, and each session builds it there again):
#   scripts/gpu_llama_cpp.sh build   builds llama.cpp's llama-bench and llama-batched-bench for sm_90 (CUDA, shared
#                                    libraries) from the public snapshot, writes the random checkpoint
#                                    (tools/make_random_checkpoint.py) with Llama 3's tokenizer and converts it to a bf16
#                                    GGUF with the snapshot's convert_hf_to_gguf.py, all under /tmp;
#   scripts/gpu_llama_cpp.sh bench   runs in one call: llama-bench (prompt 1024, and 128 tokens of decode at depth 0 and
#                                    1024, flash attention on), llama-batched-bench (1024 prompt tokens, 400 generated,
#                                    1 / 2 / 4 / 8 / 32 / 64 sequences), and taco_llm's bench latency and bench batch on
#                                    the same checkpoint (its weights, not dummy ones), then tools/side_by_side_table.py
#                                    prints both with the ratios (side_by_side.txt). Whatever the build phase left
#                                    undone (another machine came) it does first, as far as its time allows.
# scripts/llama_cpp_snapshot.sh makes the two source archives here (a public llama.cpp snapshot and Llama 3's
# tokenizer; never committed). Logs and JSON in $OUT, a line per step in summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${1:-bench}
source scripts/device_env.sh
work=/tmp/side_by_side
mkdir -p "$work"
for archive in .device/llama_cpp_src.tar.xz .device/llama_cpp_convert.tar.xz; do
  [ -f "$archive" ] && tar -C "$work" -xJf "$archive"
done
nvidia-smi -L >"$out/machine.txt" 2>&1
bin=$work/build/bin

ckpt=/tmp/llama-3.1-8b-random
gguf=$work/llama-3.1-8b-random-bf16.gguf
# The compile (CPU) runs beside the checkpoint's writing (on the GPU) and the GGUF conversion (one core and the disk).
# Once the checkpoint is written the GPU is free: /tmp/side_by_side/gpu_free tells a suite run beside this phase.
rm -f "$work/gpu_free"
if [ ! -x "$bin/llama-bench" ] || [ ! -x "$bin/llama-batched-bench" ]; then
  # sm_90 SASS only (90-real): no PTX to carry or JIT.
  (
    step llama_configure 120 cmake -S "$work/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90-real -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF &&
      step llama_build 480 cmake --build "$work/build" -j "$(nproc)" --target llama-bench llama-batched-bench
  ) &
  compile=$!
fi
[ -f "$ckpt/model.safetensors.index.json" ] ||
  step checkpoint 150 python3 tools/make_random_checkpoint.py bench/models/llama-3.1-8b "$ckpt"
touch "$work/gpu_free"
cp "$work/tokenizer/"* "$ckpt/"
[ -f "$gguf" ] || step gguf 300 python3 "$work/llama.cpp/convert_hf_to_gguf.py" "$ckpt" --outtype bf16 --outfile "$gguf"
if [ -n "${compile:-}" ]; then
  wait "$compile"
  [ -x "$bin/llama-bench" ] && [ -x "$bin/llama-batched-bench" ] || status=1  # the subshell's steps set no status here
fi
[ "$phase" = build ] && exit $status
export LD_LIBRARY_PATH="$bin:$LD_LIBRARY_PATH"
# llama.cpp: bs=1 prompt and decode (decode at depth 1024 is BENCHMARKS.md's anchor), then 1..64 sequences.
step llama_bench 150 "$bin/llama-bench" -m "$gguf" -ngl 99 -fa 1 -p 1024 -n 128 -d 0,1024 -r 3 -o json
step llama_batched_bench 240 "$bin/llama-batched-bench" -m "$gguf" -ngl 99 -fa on -c 92160 -b 2048 -ub 512 \
  -npp 1024 -ntg 400 -npl 1,2,4,8,32,64 --output-format jsonl
# taco_llm on the same checkpoint, in the same call.
common=(--device cuda --dtype bfloat16)
step taco_latency 90 "$build/taco_llm" bench latency "$ckpt" "${common[@]}" --num-iters 3 \
  --output-json "$out/taco_latency.json"
step taco_batch 120 "$build/taco_llm" bench batch "$ckpt" "${common[@]}" --output-json "$out/taco_batch.json"
# The table of both, with the ratios (and llama-bench's JSON alone, in llama_bench.json).
python3 tools/side_by_side_table.py "$out" | tee "$out/side_by_side.txt" || status=1
exit $status
