#!/usr/bin/env bash
# Start-up time on the GPU machine (issue 13 item 6: serve's first request <= 15 s after start, CUDA graphs
# included): starts `taco_llm serve` on the 8B shape, then asks for one completion until it is answered, and prints
# the seconds from start to /health, to the first answer, and the server's own log lines. With --load-format dummy
# (the device machine has no checkpoint), which leaves out reading the weights; TACO_STARTUP_CHECKPOINT=1 first writes
# an 8B checkpoint of random bf16 weights as Hugging Face lays one out (tools/make_random_checkpoint.py: four
# safetensors shards, 16 GB, left in the page cache as a checkpoint read a second time is) and serves that instead
# (startup_checkpoint.txt). Run after scripts/device_bundle.sh here, carrying .device/bundle.tar.xz; usage:
# scripts/gpu_startup.sh [extra serve flags...].
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh
port=18123
name=startup model=bench/models/llama-3.1-8b load=(--load-format dummy)
if [ "${TACO_STARTUP_CHECKPOINT:-0}" = 1 ]; then
  name=startup_checkpoint model=/tmp/llama-3.1-8b-random load=()
  made=$SECONDS
  [ -f "$model/model.safetensors.index.json" ] ||
    python3 tools/make_random_checkpoint.py bench/models/llama-3.1-8b "$model" >"$out/$name.txt" 2>&1 || exit 1
  echo "checkpoint written in $((SECONDS - made)) s" >>"$out/$name.txt"
fi
log="$out/${name}_serve.log"
start=$EPOCHREALTIME
"$build/taco_llm" serve "$model" "${load[@]}" --dtype bfloat16 --device cuda --port $port "$@" >"$log" 2>&1 &
pid=$!
# Polls with Python's urllib (the device machine may lack curl): prints the seconds to /health and to the first
# answered completion, or "never".
read -r health answered < <(python3 - "$port" "$pid" "$start" <<'PY'
import json, os, sys, time, urllib.request
port, pid, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
health = answered = "never"
deadline = time.time() + 110
while time.time() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        break
    try:
        if health == "never":
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
            health = f"{time.time() - start:.2f}"
            models = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2))
            body = json.dumps({"model": models["data"][0]["id"], "prompt": [1, 2, 3], "max_tokens": 4}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=30).read()
        answered = f"{time.time() - start:.2f}"
        break
    except Exception:
        time.sleep(0.1)
print(health, answered)
PY
)
kill $pid 2>/dev/null
wait $pid 2>/dev/null
echo "$name: /health after $health s, first completion after $answered s" | tee -a "$out/$name.txt"
grep -i -E "load|graph|kv cache|captur|ready|listen" "$log" | head -20 | tee -a "$out/$name.txt"
[ "$answered" != never ]
