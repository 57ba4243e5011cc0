#!/usr/bin/env python3
"""Writes the tokenizer goldens the parity tests (tests/tokenizer/) compare against.

For each tokenizer folder and each line of tests/data/tokenizer/{corpus,heldout,edge_cases}.jsonl it records, from
transformers' AutoTokenizer (the authority, including its add_bos_token handling): the ids with
add_special_tokens True and False, decode(ids) and decode(ids, skip_special_tokens=True); and whether the Rust
`tokenizers` library (Tokenizer.from_file) gives the same ids and text. The pipeline transformers actually runs
(normalizer, pre-tokenizer, post-processor, decoder) is saved too, so differences can be explained.
Besides the folders given, it makes the variants of tests/data/tokenizer/variants.json (a real tokenizer with some
tokenizer.json / tokenizer_config.json keys replaced), as the parity test does.

Runs where transformers is installed (the device machine):
  python3 tools/make_tokenizer_goldens.py --tokenizers DIR_WITH_ONE_FOLDER_PER_TOKENIZER --out OUT_DIR
Output: OUT_DIR/<name>.json per tokenizer (compact JSON).
"""
import argparse
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPORA = {
    "corpus": os.path.join(ROOT, "tests/data/tokenizer/corpus.jsonl"),
    "heldout": os.path.join(ROOT, "tests/data/tokenizer/heldout.jsonl"),
    # Leading spaces, text right after special tokens, the replacement character: Metaspace's corner cases.
    "edge_cases": os.path.join(ROOT, "tests/data/tokenizer/edge_cases.jsonl"),
}
VARIANTS = os.path.join(ROOT, "tests/data/tokenizer/variants.json")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def pipeline_summary(backend_json):
    j = json.loads(backend_json)
    model = {k: v for k, v in j.get("model", {}).items() if k not in ("vocab", "merges")}
    return {
        "model": model,
        "normalizer": j.get("normalizer"),
        "pre_tokenizer": j.get("pre_tokenizer"),
        "post_processor": j.get("post_processor"),
        "decoder": j.get("decoder"),
        "num_added_tokens": len(j.get("added_tokens", [])),
        "added_tokens_sample": j.get("added_tokens", [])[:8],
    }


def golden_for(name, folder, is_spm):
    import tokenizers
    import transformers
    from transformers import AutoTokenizer

    out = {"name": name, "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}
    try:
        tok = AutoTokenizer.from_pretrained(folder)
    except Exception:  # noqa: BLE001 -- a SentencePiece folder still gets its sentencepiece-library goldens
        if not is_spm:
            raise
        out["transformers_error"] = traceback.format_exc()
        tok = None
    out["class"] = type(tok).__name__
    for attr in () if tok is None else ("add_bos_token", "add_eos_token", "clean_up_tokenization_spaces", "bos_token", "eos_token",
                 "legacy", "add_prefix_space"):
        value = getattr(tok, attr, None)
        out[attr] = value if isinstance(value, (bool, int, str, type(None))) else str(value)
    out["vocab_size_with_added"] = len(tok) if tok is not None else None
    backend = getattr(tok, "backend_tokenizer", None) or getattr(tok, "_tokenizer", None)
    if backend is not None:
        try:
            out["pipeline"] = pipeline_summary(backend.to_str())
        except Exception as e:  # noqa: BLE001
            out["pipeline_error"] = repr(e)
    rust = None
    json_path = os.path.join(folder, "tokenizer.json")
    if os.path.exists(json_path):
        rust = tokenizers.Tokenizer.from_file(json_path)
    spm = None
    if is_spm:
        import sentencepiece
        spm = sentencepiece.SentencePieceProcessor(model_file=os.path.join(folder, "tokenizer.model"))

    for corpus, path in CORPORA.items():
        rows = []
        for text in read_lines(path):
            row = {}
            if tok is not None:
                ids = tok.encode(text, add_special_tokens=True)
                ids_plain = tok.encode(text, add_special_tokens=False)
                row = {
                    "ids": ids,
                    "ids_plain": ids_plain,
                    "decode": tok.decode(ids),
                    "decode_skip": tok.decode(ids, skip_special_tokens=True),
                }
            if rust is not None and tok is not None:
                r_ids = rust.encode(text, add_special_tokens=True).ids
                r_plain = rust.encode(text, add_special_tokens=False).ids
                r_dec = rust.decode(ids, skip_special_tokens=False)
                r_dec_skip = rust.decode(ids, skip_special_tokens=True)
                row["rust_agrees"] = [r_ids == ids, r_plain == ids_plain, r_dec == row["decode"],
                                      r_dec_skip == row["decode_skip"]]
                if r_plain != ids_plain:
                    row["rust_ids_plain"] = r_plain
                if r_ids != ids:
                    row["rust_ids"] = r_ids
                if r_dec != row["decode"]:
                    row["rust_decode"] = r_dec
                if r_dec_skip != row["decode_skip"]:
                    row["rust_decode_skip"] = r_dec_skip
            if spm is not None:
                row["spm_ids"] = spm.encode(text)
                row["spm_decode"] = spm.decode(row["spm_ids"])
            rows.append(row)
        out[corpus] = rows
    return out


def write_vocab_merges(tokenizer_json, folder):
    os.makedirs(folder, exist_ok=True)
    with open(tokenizer_json, encoding="utf-8") as f:
        model = json.load(f)["model"]
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(model["vocab"], f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for m in model["merges"]:
            f.write((m if isinstance(m, str) else " ".join(m)) + "\n")
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                   "unk_token": "<|endoftext|>", "add_prefix_space": False}, f)


def write_variant(variant, tokenizers_dir, folder):
    """A copy of tokenizers_dir/<base> with the variant's tokenizer.json / tokenizer_config.json keys replaced or
    removed."""
    base = os.path.join(tokenizers_dir, variant["base"])
    os.makedirs(folder, exist_ok=True)
    for file, key in (("tokenizer.json", "tokenizer"), ("tokenizer_config.json", "config")):
        with open(os.path.join(base, file), encoding="utf-8") as f:
            j = json.load(f)
        j.update(variant.get(key, {}))
        for k in variant.get(key + "_remove", []):
            j.pop(k, None)
        with open(os.path.join(folder, file), "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizers", required=True, help="folder with one sub-folder per tokenizer")
    ap.add_argument("--spm", default=os.path.join(ROOT, "tests/data/tokenizer/spm_bpe"),
                    help="folder with the small SentencePiece model")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    jobs = [(n, os.path.join(args.tokenizers, n), False) for n in sorted(os.listdir(args.tokenizers))]
    if os.path.isdir(args.spm):
        jobs.append(("spm_bpe", args.spm, True))
    gpt2 = os.path.join(args.tokenizers, "gpt2", "tokenizer.json")
    if os.path.exists(gpt2):
        # The same GPT-2 tokenizer as a vocab.json + merges.txt folder (tests build it the same way).
        files_dir = os.path.join(args.out, "_gpt2_files")
        write_vocab_merges(gpt2, files_dir)
        jobs.append(("gpt2_files", files_dir, False))
    with open(VARIANTS, encoding="utf-8") as f:
        variants = json.load(f)["variants"]
    made = []
    for v in variants:
        if os.path.isdir(os.path.join(args.tokenizers, v["base"])):
            folder = os.path.join(args.out, "_variants", v["name"])
            write_variant(v, args.tokenizers, folder)
            jobs.append((v["name"], folder, False))
            made.append(folder)
    for name, folder, is_spm in jobs:
        try:
            result = golden_for(name, folder, is_spm)
        except Exception:  # noqa: BLE001 -- record and go on with the others
            result = {"name": name, "error": traceback.format_exc()}
            print(f"{name}: FAILED\n{result['error']}", file=sys.stderr)
        if name == "gpt2_files" or folder in made:
            import shutil
            shutil.rmtree(folder, ignore_errors=True)
        with open(os.path.join(args.out, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, ensure_ascii=False, separators=(",", ":"))
        agree = [all(r.get("rust_agrees", [True])) for c in CORPORA for r in result.get(c, [])]
        print(f"{name}: class={result.get('class')} lines={len(agree)} rust_agrees={sum(agree)}", flush=True)
    if made:
        os.rmdir(os.path.join(args.out, "_variants"))


if __name__ == "__main__":
    main()
