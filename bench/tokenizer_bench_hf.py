#!/usr/bin/env python3
"""Hugging Face's numbers for bench/tokenizer_bench.cc where Python has `tokenizers` / `transformers` (the device
machine): the same prose encoded with the Llama-3 tokenizer by the Rust tokenizers library, one thread, plus load
times. Usage: tokenizer_bench_hf.py TOKENIZER_DIR [PROSE_DIR]"""
import os
import sys
import time

NAMES = ["GPL-3", "GPL-2", "LGPL-2.1", "GFDL-1.3", "Apache-2.0", "MPL-2.0", "Artistic", "CC0-1.0"]


def main():
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    import tokenizers

    tok_dir = sys.argv[1]
    prose_dir = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/common-licenses"
    texts = [open(os.path.join(prose_dir, n), encoding="utf-8").read() for n in NAMES]
    nbytes = sum(len(t.encode()) for t in texts)
    loads = []
    for _ in range(3):
        t0 = time.perf_counter()
        tok = tokenizers.Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
        loads.append(time.perf_counter() - t0)
    print(f"tokenizers {tokenizers.__version__} (Rust, Python binding): load {min(loads) * 1e3:.1f} ms (best of 3)")
    for t in texts:
        tok.encode(t, add_special_tokens=False)
    rounds, start = 0, time.perf_counter()
    while time.perf_counter() - start < 3:
        for t in texts:
            tok.encode(t, add_special_tokens=False)
        rounds += 1
    elapsed = time.perf_counter() - start
    print(f"tokenizers (Rust, Python binding): encode {nbytes * rounds / elapsed / 1e6:.2f} MB/s, one thread")
    try:
        from transformers import AutoTokenizer

        t0 = time.perf_counter()
        AutoTokenizer.from_pretrained(tok_dir)
        print(f"transformers AutoTokenizer: load {(time.perf_counter() - t0) * 1e3:.1f} ms")
    except Exception as e:  # noqa: BLE001
        print(f"transformers: not measured ({e})")


if __name__ == "__main__":
    main()
