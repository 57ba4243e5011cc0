#!/usr/bin/env bash
# Start-up time on the GPU machine (issue 13 item 6: serve's first request <= 15 s after start, CUDA graphs
# included): starts `taco_llm serve` on the 8B shape, then asks for one completion until it is answered, and prints
# the seconds from start to /health, to the first answer, and the server's own log lines. With --load-format dummy
# (the device machine has no checkpoint), so the figure leaves out reading the weights: an 8B checkpoint from the page
# cache adds its 16 GB at the host's copy rate. Run after scripts/device_bundle.sh here, carrying
# .device/bundle.tar.xz; usage: scripts/gpu_startup.sh [extra serve flags...].
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh
port=18123
log="$out/startup_serve.log"
start=$EPOCHREALTIME
"$build/taco_llm" serve bench/models/llama-3.1-8b --load-format dummy --dtype bfloat16 --device cuda --port $port \
  "$@" >"$log" 2>&1 &
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
echo "startup: /health after $health s, first completion after $answered s" | tee "$out/startup.txt"
grep -i -E "load|graph|kv cache|captur|ready|listen" "$log" | head -20 | tee -a "$out/startup.txt"
[ "$answered" != never ]
