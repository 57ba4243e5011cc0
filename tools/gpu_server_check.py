#!/usr/bin/env python3
"""The OpenAI-compatible server on the GPU against the same server on the CPU (run on the device machine by
scripts/gpu_suite.sh; standard library only, since that machine has no `openai` package and no node).

Starts `taco_llm serve` twice on the built-in demo model (--device cpu and --device cuda, --dtype float32, free
ports), then sends the same requests to both: chat and completions, streaming and not, greedy, n > 1 with a seed,
logprobs; checks the protocol shapes (ids, finish_reason, usage, SSE framing ending in [DONE]) and that the GPU gives
the CPU's greedy text and tokens. Exits 1 on any difference."""
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

TACO = sys.argv[1] if len(sys.argv) > 1 else "build/cuda/taco_llm"
failures = []


def start(device):
    proc = subprocess.Popen([TACO, "serve", "--device", device, "--dtype", "float32", "--port", "0",
                             "--api-key", "k"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        print(f"[{device}] {line.rstrip()}")
        # The server logs the address it listens on once it is ready.
        for word in line.split():
            if word.startswith("http://") and ":" in word[7:]:
                # Keep reading its output so a full pipe never blocks the server.
                threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
                return proc, word.rstrip("/.,").replace("0.0.0.0", "127.0.0.1")
    raise SystemExit(f"the {device} server did not start")


def post(base, path, body, stream=False):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer k"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        raw = resp.read().decode()
    if not stream:
        return json.loads(raw)
    events = [e for e in raw.split("\n\n") if e.strip()]
    if events[-1].strip() != "data: [DONE]":
        failures.append(f"{path}: stream does not end with [DONE]")
    return [json.loads(e[len("data: "):]) for e in events[:-1]]


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    cpu, cpu_base = start("cpu")
    gpu, gpu_base = start(os.environ.get("TACO_CHECK_DEVICE", "cuda"))  # cpu: a dry run of this script
    try:
        chat = {"model": "demo", "messages": [{"role": "user", "content": "Tell me about love."}],
                "max_tokens": 48, "temperature": 0, "logprobs": True, "top_logprobs": 3}
        a, b = post(cpu_base, "/v1/chat/completions", chat), post(gpu_base, "/v1/chat/completions", chat)
        check(a["choices"][0]["message"]["content"] == b["choices"][0]["message"]["content"],
              f"chat greedy text differs: {a['choices'][0]['message']['content']!r} vs "
              f"{b['choices'][0]['message']['content']!r}")
        check(b["usage"]["completion_tokens"] == a["usage"]["completion_tokens"], "chat usage differs")
        check(b["choices"][0]["finish_reason"] in ("stop", "length"), "chat finish_reason")
        ta = [t["token"] for t in a["choices"][0]["logprobs"]["content"]]
        tb = [t["token"] for t in b["choices"][0]["logprobs"]["content"]]
        check(ta == tb, "chat logprob tokens differ")
        comp = {"model": "demo", "prompt": "LOVE, n.", "max_tokens": 40, "temperature": 0, "stream": True,
                "stream_options": {"include_usage": True}}
        sa, sb = post(cpu_base, "/v1/completions", comp, True), post(gpu_base, "/v1/completions", comp, True)
        text_a = "".join(c["choices"][0]["text"] for c in sa if c.get("choices"))
        text_b = "".join(c["choices"][0]["text"] for c in sb if c.get("choices"))
        check(text_a == text_b, f"streamed completion differs: {text_a!r} vs {text_b!r}")
        check(sb[-1].get("usage", {}).get("completion_tokens") == sa[-1].get("usage", {}).get("completion_tokens"),
              "streamed usage differs")
        seeded = {"model": "demo", "prompt": "The", "max_tokens": 24, "temperature": 0.8, "top_p": 0.9, "n": 3,
                  "seed": 1234}
        ra, rb = post(cpu_base, "/v1/completions", seeded), post(gpu_base, "/v1/completions", seeded)
        check([c["text"] for c in ra["choices"]] == [c["text"] for c in rb["choices"]],
              "seeded n=3 samples differ between CPU and GPU")
        # Structured outputs: the grammar's token mask on the GPU sampler's path (the logits row comes to the host,
        # is masked there, and the sampled token matches the CPU's). Greedy and seeded, a schema, a regex, choices.
        schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                                   "age": {"type": "integer", "minimum": 0, "maximum": 120}},
                  "required": ["name", "age"], "additionalProperties": False}
        structured = [
            ("/v1/chat/completions", {"model": "demo", "messages": [{"role": "user", "content": "A person?"}],
                                      "max_tokens": 60, "temperature": 0,
                                      "response_format": {"type": "json_schema",
                                                          "json_schema": {"name": "p", "schema": schema}}}),
            ("/v1/completions", {"model": "demo", "prompt": "Date:", "max_tokens": 20, "temperature": 0.9,
                                 "seed": 7, "guided_regex": "[0-9]{4}-[0-9]{2}-[0-9]{2}"}),
            ("/v1/completions", {"model": "demo", "prompt": "Pick:", "max_tokens": 8, "temperature": 0,
                                 "guided_choice": ["alpha", "beta", "gamma"]}),
        ]
        for path, body in structured:
            ra, rb = post(cpu_base, path, body), post(gpu_base, path, body)
            pick = (lambda r: r["choices"][0]["message"]["content"]) if "messages" in body else \
                (lambda r: r["choices"][0]["text"])
            check(pick(ra) == pick(rb), f"structured output differs ({list(body)[-1]}): {pick(ra)!r} vs {pick(rb)!r}")
            if "response_format" in body:
                try:
                    obj = json.loads(pick(rb))
                    check(set(obj) == {"name", "age"} and isinstance(obj["age"], int), f"schema output {obj!r}")
                except ValueError:
                    check(False, f"GPU json_schema output is not JSON: {pick(rb)!r}")
            elif "guided_regex" in body:
                check(re.fullmatch(body["guided_regex"], pick(rb)) is not None, f"regex output {pick(rb)!r}")
            else:
                check(pick(rb) in body["guided_choice"], f"choice output {pick(rb)!r}")
            print("structured:", json.dumps(pick(rb))[:120])
        print("chat:", json.dumps(b["choices"][0]["message"]["content"])[:200])
        print("completion:", json.dumps(text_b)[:200])
    finally:
        for p in (cpu, gpu):
            p.terminate()
            p.wait(timeout=30)
    for f in failures:
        print("FAIL:", f)
    print("gpu server check:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
