#!/usr/bin/env python3
"""Greedy parity of taco_llm against transformers on freshly drawn random models it has never seen.

Builds --count random models of the Llama (random rope kind), Mistral (sliding window) and Qwen2 (tied or not)
families with randomized sizes, saves each in bf16 to a temp dir, computes the transformers fp32 greedy
24-token continuation of a random prompt (redrawn until every step's top-1/top-2 margin is >= 1e-2), then runs

  TACO generate DIR --prompt-ids 1,2,3 --max-tokens 24 --min-tokens 24 --temperature 0 --json --device cpu

and compares the token ids. Prints a table; exits 1 on any mismatch or taco failure.
--dry-run builds the models and references only (no taco binary needed).

Needs torch + transformers (the device machine); uses tools/make_model_goldens.py for saving and references.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from transformers import LlamaConfig, MistralConfig, Qwen2Config  # noqa: E402

import make_model_goldens as mg  # noqa: E402

kFamilies = ["llama", "mistral", "qwen2"]
kRopeKinds = ["default", "linear", "llama3", "yarn", "dynamic"]
# hidden -> usable query head counts (head_dim = hidden / heads stays even and >= 8)
kHeadChoices = {32: [2, 4], 64: [2, 4, 8], 96: [2, 3, 6]}


def draw_spec(rng, index):
    """One random model spec: (family, config class, config fields, rope dict, prompt length, description)."""
    family = kFamilies[index % len(kFamilies)] if index < len(kFamilies) else rng.choice(kFamilies)
    hidden = rng.choice([32, 64, 96])
    heads = rng.choice(kHeadChoices[hidden])
    kv_heads = rng.choice([d for d in range(1, heads + 1) if heads % d == 0])
    layers = rng.randint(1, 3)
    vocab = rng.randint(100, 512)
    max_pos = 128
    fields = dict(
        hidden_size=hidden,
        intermediate_size=hidden * rng.choice([2, 3, 4]),
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden // heads,
        vocab_size=vocab,
        initializer_range=0.1,
        max_position_embeddings=max_pos,
        bos_token_id=1,
        eos_token_id=rng.choice([2, [2, 3]]),
        rms_norm_eps=rng.choice([1e-5, 1e-6]),
        tie_word_embeddings=False,
    )
    theta = rng.choice([10000.0, 500000.0, 1000000.0])
    rope = {"rope_type": "default", "rope_theta": theta}
    max_prompt = 90
    extra = ""
    if family == "llama":
        config_class = LlamaConfig
        kind = rng.choice(kRopeKinds)
        rope["rope_type"] = kind
        fields["tie_word_embeddings"] = rng.random() < 0.5
        if rng.random() < 0.3:
            fields["attention_bias"] = True
            fields["mlp_bias"] = rng.random() < 0.5
        if kind == "linear":
            rope["factor"] = rng.choice([2.0, 4.0])
        elif kind == "dynamic":
            rope["factor"] = rng.choice([2.0, 4.0])
            # transformers rescales dynamic NTK with the running length past max_position_embeddings
            max_prompt = max_pos - mg.kMaxNewTokens
        elif kind == "llama3":
            rope.update(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                        original_max_position_embeddings=rng.choice([16, 32, 64]))
        elif kind == "yarn":
            factor = rng.choice([2.0, 4.0])
            rope.update(factor=factor, original_max_position_embeddings=int(max_pos / factor))
        extra = f"rope={kind}" + (f"x{rope['factor']:g}" if "factor" in rope else "")
    elif family == "mistral":
        config_class = MistralConfig
        fields["sliding_window"] = rng.choice([8, 16, 32])
        extra = f"window={fields['sliding_window']}"
    else:
        config_class = Qwen2Config
        fields["tie_word_embeddings"] = rng.random() < 0.5
        extra = f"tied={fields['tie_word_embeddings']}"
    prompt_len = rng.randint(5, max_prompt)
    desc = (f"{family:7s} h={hidden:<3d} heads={heads}/{kv_heads} L={layers} V={vocab:<3d} "
            f"theta={theta:g} {extra}")
    return family, config_class, fields, rope, prompt_len, desc


def run_taco(taco, model_dir, prompt_ids, device, timeout_s):
    """Returns (token ids, error string or None) from one taco_llm generate call."""
    cmd = [taco, "generate", model_dir, "--prompt-ids", ",".join(str(t) for t in prompt_ids),
           "--max-tokens", str(mg.kMaxNewTokens), "--min-tokens", str(mg.kMaxNewTokens), "--temperature", "0",
           "--json", "--device", device]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s}s"
    if proc.returncode != 0:
        return None, f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
    chunks = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            return None, f"non-JSON output line: {line[:200]}"
        if isinstance(obj, dict) and isinstance(obj.get("token_ids"), list):
            chunks.append(obj["token_ids"])
    if not chunks:
        return None, "no JSON line with token_ids in output"
    # Either one final object carrying all ids, or streamed deltas to concatenate.
    full = [c for c in chunks if len(c) == mg.kMaxNewTokens]
    ids = full[-1] if full else [t for c in chunks for t in c]
    return ids, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--taco", help="path to the taco_llm binary (required unless --dry-run)")
    parser.add_argument("--count", type=int, default=6, help="number of random models")
    parser.add_argument("--seed", type=int, default=0, help="seed of the model/prompt draws")
    parser.add_argument("--device", default="cpu", help="taco_llm --device value")
    parser.add_argument("--dry-run", action="store_true", help="build models and references only")
    parser.add_argument("--keep", help="save the models under this folder instead of a temp dir")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per taco_llm call")
    args = parser.parse_args()
    if not args.dry_run and not args.taco:
        parser.error("--taco is required unless --dry-run")
    if args.taco and not os.access(args.taco, os.X_OK):
        parser.error(f"--taco {args.taco} is not an executable file")

    mg.configure_torch()
    tmp = None
    root = args.keep
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="taco_unseen_")
        root = tmp.name
    os.makedirs(root, exist_ok=True)

    rng = random.Random(args.seed)
    rows = []
    failed = 0
    for index in range(args.count):
        family, config_class, fields, rope, prompt_len, desc = draw_spec(rng, index)
        model_seed = args.seed * 100003 + index * 101 + 7
        model_dir = os.path.join(root, f"unseen_{args.seed}_{index}")
        status, detail, prompt_ids = "?", "", []
        try:
            config = mg.build_config(config_class, fields, rope)
            saved = mg.create_model(config, model_seed, torch.bfloat16)
            os.makedirs(model_dir, exist_ok=True)
            mg.save_model(saved, model_dir, fields["eos_token_id"])
            model = mg.load_fp32(model_dir)
            mg.check_reload_matches(saved, model, model_dir)
            case = mg.find_case(model, model_seed * 10, prompt_len, fields["vocab_size"])
            prompt_ids, expected = case["prompt_ids"], case["greedy_ids"]
            detail = f"min_margin={min(case['margins']):.4f} tries={case['tries']}"
            if args.dry_run:
                status = "built"
            else:
                got, err = run_taco(args.taco, model_dir, prompt_ids, args.device, args.timeout)
                if err is not None:
                    status, detail = "ERROR", err
                elif got == expected:
                    status = "ok"
                else:
                    first = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b),
                                 min(len(got), len(expected)))
                    status = "MISMATCH"
                    detail += (f" first_diff@{first} got={got[first:first + 4]} "
                               f"want={expected[first:first + 4]} (len {len(got)}/{len(expected)})")
        except Exception as exc:  # a broken draw is reported in the table, never silently skipped
            status, detail = "ERROR", f"{type(exc).__name__}: {exc}"
        if status not in ("ok", "built"):
            failed += 1
        rows.append((index, desc, len(prompt_ids), status, detail))
        print(f"{index:3d} {desc:62s} prompt={len(prompt_ids):<3d} {status:8s} {detail}", flush=True)

    print(f"\n{len(rows) - failed}/{len(rows)} passed" + (" (dry run: references only)" if args.dry_run else ""))
    if tmp is not None:
        tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
