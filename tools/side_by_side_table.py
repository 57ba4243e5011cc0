#!/usr/bin/env python3
"""The llama.cpp side by side's table (scripts/gpu_llama_cpp.sh bench): reads llama-bench's and llama-batched-bench's
output and taco_llm's bench JSON from one folder and prints taco-llm against llama.cpp per test, with the ratio.

Usage: side_by_side_table.py OUT_DIR
  OUT_DIR/llama_bench.log          llama-bench -o json (its log: library lines, then the JSON array)
  OUT_DIR/llama_batched_bench.log  llama-batched-bench --output-format jsonl (one JSON object a line among log lines)
  OUT_DIR/taco_latency.json, OUT_DIR/taco_batch.json   taco_llm bench latency / batch --output-json
Writes llama_bench.json (the JSON array alone) beside them. A missing or malformed input is named on stderr and its
rows are left out (exit status 1), so that a partial run still prints what it has.
"""
import json
import sys


def llama_bench(path):
    """llama-bench's tests: {(n_prompt, n_gen, n_depth): tokens/s}."""
    text = open(path).read()
    tests = json.loads(text[text.index("["):text.rindex("]") + 1])
    return tests, {(t["n_prompt"], t["n_gen"], t["n_depth"]): t["avg_ts"] for t in tests}


def batched_bench(path):
    """llama-batched-bench's runs: {sequences: (decode tok/s, total tok/s)}."""
    runs = {}
    for line in open(path):
        line = line.strip()
        if line.startswith("{") and '"pl"' in line:
            r = json.loads(line)
            runs[r["pl"]] = (r["speed_tg"], r["speed"])
    return runs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    status = 0
    rows = []  # (test, llama.cpp, taco-llm)

    def attempt(what, fn):
        nonlocal status
        try:
            return fn()
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            print(f"side_by_side_table: {what}: {e}", file=sys.stderr)
            status = 1
            return None

    bench = attempt("llama_bench.log", lambda: llama_bench(f"{out}/llama_bench.log"))
    batched = attempt("llama_batched_bench.log", lambda: batched_bench(f"{out}/llama_batched_bench.log"))
    latency = attempt("taco_latency.json", lambda: json.load(open(f"{out}/taco_latency.json")))
    batch = attempt("taco_batch.json", lambda: json.load(open(f"{out}/taco_batch.json"))["runs"])
    if bench:
        tests, ts = bench
        json.dump(tests, open(f"{out}/llama_bench.json", "w"), indent=1)
    if bench and latency:
        n = latency["input_len"]  # llama-bench's prompt and depth are the same length (gpu_llama_cpp.sh)
        decode = max(r["decode_tokens_per_s"] for r in latency["runs"])
        prefill = max(n / (r["ttft_p50_ms"] / 1e3) for r in latency["runs"])
        if (0, 128, n) in ts:
            rows.append((f"bs=1 decode at depth {n} (taco: bench latency)", ts[(0, 128, n)], decode))
        if (n, 0, 0) in ts:
            rows.append((f"prefill {n} tokens (taco: {n} / TTFT)", ts[(n, 0, 0)], prefill))
    if batched and batch:
        for r in batch:
            pl = r["batch_size"]
            if pl in batched:
                rows.append((f"batch 1024/400 decode, {pl} sequences", batched[pl][0], r["decode_tokens_per_s"]))
        for r in batch:
            pl = r["batch_size"]
            if pl in batched:
                rows.append((f"batch 1024/400 total, {pl} sequences", batched[pl][1], r["total_tokens_per_s"]))
    print(f"{'test':52} {'llama.cpp':>11} {'taco-llm':>11} {'ratio':>7}")
    for test, theirs, ours in rows:
        print(f"{test:52} {theirs:11.1f} {ours:11.1f} {ours / theirs:6.2f}x")
    return status


if __name__ == "__main__":
    sys.exit(main())
