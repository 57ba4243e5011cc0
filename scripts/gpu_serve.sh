#!/usr/bin/env bash
# HTTP + scheduling overhead at 256 streams (issue 13's done-when: <= 5% of step time), on the GPU machine: the same
# 256 requests of about 1024 prompt / 256 output tokens, all submitted at once, first through `bench batch` (the
# engine in process, no HTTP), then through `serve` with `bench serve` (256 SSE streams over HTTP, a chunk per token,
# the prompt tokenized and every token detokenized by the server). Prefix caching is off on both sides, so every
# prompt is prefilled (bench serve sends one prompt text 256 times). Writes serve_256_batch.json, serve_256.json
# and serve_256.txt (both elapsed times and the overhead) in $OUT. The 8B shape's folder has no tokenizer: the server
# gets Llama 3's from .device/llama_cpp_convert.tar.xz (scripts/llama_cpp_snapshot.sh). Run after
# scripts/device_bundle.sh here, carrying .device/bundle.tar.xz and .device/llama_cpp_convert.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh
port=18124 m=bench/models/llama-3.1-8b
common=(--load-format dummy --device cuda --dtype bfloat16 --no-enable-prefix-caching --max-num-seqs 256)
tar -C .device -xJf .device/llama_cpp_convert.tar.xz tokenizer || exit 1
step serve_256_batch 120 "$build/taco_llm" bench batch "$m" "${common[@]}" --batch-sizes 256 --input-len 1024 \
  --output-len 256 --output-json "$out/serve_256_batch.json"
"$build/taco_llm" serve "$m" "${common[@]}" --tokenizer .device/tokenizer --port $port \
  >"$out/serve_256_server.log" 2>&1 &
pid=$!
# Ready when /health answers (Python's urllib: the device machine may lack curl).
python3 - "$port" "$pid" <<'PY'
import os, sys, time, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
deadline = time.time() + 90
while time.time() < deadline:
    os.kill(pid, 0)
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
        sys.exit(0)
    except Exception:
        time.sleep(0.2)
sys.exit(1)
PY
if [ $? != 0 ]; then  # the server died or never answered: its log says why, and nothing is measured against it
  echo "serve_256 rc=1 (the server was not ready in 90 s: serve_256_server.log)" | tee -a "$out/summary.txt"
  kill $pid 2>/dev/null
  exit 1
fi
# " hello" is one Llama 3 token: the prompt is 1024 tokens with the begin-of-text token.
prompt="hello$(printf ' hello%.0s' $(seq 1022))"
step serve_256 180 "$build/taco_llm" bench serve --port $port --prompt "$prompt" --concurrency 256 --num-prompts 256 \
  --max-tokens 256 --client-threads 4 --output-json "$out/serve_256.json"
kill $pid 2>/dev/null
wait $pid 2>/dev/null
python3 - "$out" <<'PY' | tee "$out/serve_256.txt"
import json, sys
out = sys.argv[1]
batch = json.load(open(f"{out}/serve_256_batch.json"))["runs"][0]
serve = json.load(open(f"{out}/serve_256.json"))
print(f"bench batch (in process): {batch['elapsed_s']:.2f} s, TTFT p50 {batch['ttft_p50_ms']:.0f} ms, "
      f"decode {batch['decode_tokens_per_s']:.0f} tok/s ({256e3 / batch['decode_tokens_per_s']:.2f} ms a step)")
print(f"serve + bench serve (HTTP): {serve['duration_s']:.2f} s, TTFT p50 {serve['ttft_p50_ms']:.0f} ms, "
      f"TPOT p50 {serve['tpot_p50_ms']:.2f} ms, {serve['output_tokens_per_s']:.0f} output tok/s")
print(f"overhead of HTTP and serving: {100 * (serve['duration_s'] / batch['elapsed_s'] - 1):.1f}% of the run's time")
PY
exit $status
