#!/usr/bin/env python3
"""Greedy parity of taco_llm against transformers on freshly drawn random models it has never seen.

Builds --count random models of the Llama (random rope kind), Mistral (sliding window) and Qwen2 (tied or not)
families with randomized sizes (or, with --families, of the issue-G families of make_model_goldens.FAMILY_SPECS:
the spec's shape with a fresh seed, 1-3 layers and a random vocabulary), saves each in bf16 to a temp dir,
computes the transformers fp32 greedy 24-token continuation of a random prompt (redrawn until every step's top-1/top-2 margin is >= 1e-2), then runs

  TACO generate DIR --prompt-ids 1,2,3 --max-tokens 24 --min-tokens 24 --temperature 0 --json --device cpu

and compares the token ids. Prints a table; exits 1 on any mismatch or taco failure.
--dry-run builds the models and references only (no taco binary needed).

Needs torch + transformers: the device machine, or this machine's oracle (tools/setup_reference_env.sh):
  PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/check_unseen_models.py --taco build/cpu/taco_llm \
      --families gemma2 gpt2 mixtral --count 6
Uses tools/make_model_goldens.py for saving and references.
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


def draw_family_spec(rng, name):
    """A fresh model of FAMILY_SPECS[name]: same shape and options, 1-3 layers, a random vocabulary."""
    spec = mg.FAMILY_SPECS[name]
    fields = dict(spec["fields"])
    layers = rng.randint(1, 3)
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if key in fields:
            fields[key] = layers
    vocab_key = "padded_vocab_size" if "padded_vocab_size" in fields else "vocab_size"
    fields[vocab_key] = rng.randint(200, 512)
    if "eos_token_id" in fields and rng.random() < 0.3:
        fields["eos_token_id"] = [2, 3]
    scaling = fields.get("rope_scaling") or {}
    if scaling.get("type", scaling.get("rope_type")) == "longrope":
        # transformers picks the LongRoPE table per forward from the current length: stay on one side of the
        # original length for the whole continuation, as the goldens do.
        original = fields.get("original_max_position_embeddings") or scaling["original_max_position_embeddings"]
        prompt_len = rng.choice([rng.randint(5, max(5, original - mg.kMaxNewTokens)), rng.randint(original + 1, 90)])
    else:
        prompt_len = rng.randint(5, 90)
    config_class = getattr(mg.transformers, spec["config_class"])
    desc = f"{name:16s} L={layers} V={fields[vocab_key]:<3d} eos={fields.get('eos_token_id')}"
    return name, config_class, fields, None, prompt_len, desc


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
    parser.add_argument("--families", nargs="*",
                        help="draw from these make_model_goldens.FAMILY_SPECS names instead ('all': every one)")
    args = parser.parse_args()
    if not args.dry_run and not args.taco:
        parser.error("--taco is required unless --dry-run")
    if args.taco and not os.access(args.taco, os.X_OK):
        parser.error(f"--taco {args.taco} is not an executable file")
    families = list(mg.FAMILY_SPECS) if args.families == ["all"] else (args.families or [])
    for name in families:
        if name not in mg.FAMILY_SPECS:
            parser.error(f"--families: unknown {name}; known: {' '.join(mg.FAMILY_SPECS)}")

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
        if families:
            name = families[index % len(families)]
            family, config_class, fields, rope, prompt_len, desc = draw_family_spec(rng, name)
        else:
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
            vocab = fields.get("vocab_size", fields.get("padded_vocab_size"))
            uncached = family in mg.FAMILY_SPECS and mg.FAMILY_SPECS[family].get("greedy") == "uncached"
            case = mg.find_case(model, model_seed * 10, prompt_len, vocab, uncached=uncached)
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
