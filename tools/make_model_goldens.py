#!/usr/bin/env python3
"""Builds the tiny random Hugging Face models under tests/data/models and their fp32 reference goldens.

Runs on the device machine (torch + transformers, CPU only). For every model spec below it builds the config with
transformers' own config classes, creates the model with a fixed seed, saves it in its storage dtype (bf16 unless
the spec says otherwise), then RELOADS the saved folder in float32 so the reference sees exactly the stored weights
widened to fp32. For each case it records the last-position logits of the prompt, the 24-token greedy continuation
and the top-1/top-2 margin of the processed scores at every step; a case whose margin dips below 1e-2 anywhere is
redrawn with a new prompt seed (parity rule in ARCHITECTURE.md).

golden.json layout (one per model folder):
  {"name", "architecture", "rope_type", "transformers_version", "torch_version", "saved_dtype", "model_seed",
   "eos_token_id", "max_new_tokens", "min_new_tokens", "inv_freq": [head_dim/2 floats], "attention_scaling",
   "cases": [{"prompt_ids", "last_logits": [vocab floats], "greedy_ids": [24 ints], "margins": [24 floats],
              "seed", "tries"}]}
"""

import argparse
import inspect
import json
import os
import random
import shutil
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, GenerationConfig, LlamaConfig, MistralConfig, Qwen2Config

kMaxNewTokens = 24
kMinMargin = 1e-2
kMaxTries = 50
kMaxWeightBytes = 300 * 1024
kMaxGoldenBytes = 80 * 1024
kFirstPromptId = 4  # ids 0-3 are reserved for pad/bos/eos/eos2 so prompts never contain them

# Sizes shared by every golden model: 2 layers, hidden 64, 4 query heads over 2 kv heads of dim 16.
kBase = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    vocab_size=512,
    initializer_range=0.1,
    max_position_embeddings=128,
    bos_token_id=1,
    eos_token_id=2,
    tie_word_embeddings=False,
)

# name -> spec. "rope" is the full rope_parameters dict (5.x form, rope_theta inside it).
MODEL_SPECS = {
    "llama": dict(
        config_class=LlamaConfig, seed=1001, rms_norm_eps=1e-5,
        rope={"rope_type": "default", "rope_theta": 10000.0},
        prompt_lengths=[7, 40, 90], v4_config=True),
    "llama_linear": dict(
        config_class=LlamaConfig, seed=1002, rms_norm_eps=1e-5, max_position_embeddings=32,
        rope={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0},
        prompt_lengths=[7, 40, 90], v4_config=True),
    "llama_dynamic": dict(
        # Dynamic NTK is recomputed by transformers once the sequence passes max_position_embeddings; every
        # case stays within 128 tokens in total (prompt + 24) so the reference uses the unscaled table.
        config_class=LlamaConfig, seed=1003, rms_norm_eps=1e-5,
        rope={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0},
        prompt_lengths=[7, 40, 100]),
    "llama_llama3": dict(
        # original_max_position_embeddings 64 (not 32) so that with head_dim 16 and theta 5e5 one frequency falls
        # in the smooth band between high_freq_wavelen (16) and low_freq_wavelen (64): wavelengths are
        # 6.3 (kept), 32.3 (smoothed), >= 166 (divided by factor).
        config_class=LlamaConfig, seed=1004, rms_norm_eps=1e-5,
        rope={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 64, "rope_theta": 500000.0},
        prompt_lengths=[7, 40, 90], v4_config=True),
    "llama_yarn": dict(
        config_class=LlamaConfig, seed=1005, rms_norm_eps=1e-5,
        rope={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32, "rope_theta": 10000.0},
        prompt_lengths=[7, 40, 90]),
    "llama_bias_tied": dict(
        config_class=LlamaConfig, seed=1006, rms_norm_eps=1e-6, attention_bias=True, mlp_bias=True,
        tie_word_embeddings=True, saved_dtype=torch.float16,
        rope={"rope_type": "default", "rope_theta": 10000.0},
        prompt_lengths=[7, 40, 90]),
    "llama_sharded": dict(
        # 3 layers only fit 300 KB with tied embeddings; 60 KB shards give an index and >= 3 shards.
        config_class=LlamaConfig, seed=1007, rms_norm_eps=1e-5, num_hidden_layers=3, tie_word_embeddings=True,
        max_shard_size="60KB", eos_token_id=[2, 3],
        rope={"rope_type": "default", "rope_theta": 10000.0},
        prompt_lengths=[7, 40, 90]),
    "llama_f32": dict(
        # float32 storage only fits 300 KB with a smaller vocab, one layer and tied embeddings.
        config_class=LlamaConfig, seed=1008, rms_norm_eps=1e-5, num_hidden_layers=1, vocab_size=256,
        tie_word_embeddings=True, saved_dtype=torch.float32,
        rope={"rope_type": "default", "rope_theta": 10000.0},
        prompt_lengths=[7, 40, 90]),
    "mistral": dict(
        config_class=MistralConfig, seed=2001, rms_norm_eps=1e-6, sliding_window=16,
        rope={"rope_type": "default", "rope_theta": 10000.0},
        prompt_lengths=[20, 45, 80]),
    "qwen2": dict(
        config_class=Qwen2Config, seed=3001, rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope={"rope_type": "default", "rope_theta": 10000.0},
        prompt_lengths=[7, 40, 90]),
    "qwen2_untied": dict(
        config_class=Qwen2Config, seed=3002, rms_norm_eps=1e-6,
        rope={"rope_type": "default", "rope_theta": 1000000.0},
        prompt_lengths=[7, 40, 90]),
}

kSpecOnlyKeys = {"config_class", "seed", "rope", "prompt_lengths", "v4_config", "saved_dtype", "max_shard_size"}


def config_accepts(config_class, key):
    if key in inspect.signature(config_class.__init__).parameters:
        return True
    return any(key in getattr(cls, "__annotations__", {}) for cls in config_class.__mro__)


def build_config(config_class, fields, rope):
    """Builds a config the 5.x way (rope_parameters with rope_theta inside); falls back to 4.x rope_scaling."""
    fields = dict(fields)
    # head_dim is always hidden / heads here; classes that derive it themselves do not declare it.
    if not config_accepts(config_class, "head_dim"):
        fields.pop("head_dim", None)
    try:
        return config_class(rope_parameters=dict(rope), **fields)
    except TypeError:
        legacy = {k: v for k, v in rope.items() if k != "rope_theta"}
        scaling = None if legacy.get("rope_type") == "default" else legacy
        return config_class(rope_scaling=scaling, rope_theta=rope["rope_theta"], **fields)


def randomize_non_matrix_params(model, seed):
    """HF init leaves norms at 1 and biases at 0; random values make the loader's handling of them observable."""
    gen = torch.Generator().manual_seed(seed + 77)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith(".bias"):
                param.copy_(torch.randn(param.shape, generator=gen) * 0.1)
            elif "norm" in name:
                param.copy_(1.0 + torch.randn(param.shape, generator=gen) * 0.1)


def create_model(config, seed, saved_dtype):
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    randomize_non_matrix_params(model, seed)
    return model.to(saved_dtype).eval()


def save_model(model, out_dir, eos_token_id, max_shard_size=None):
    model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=eos_token_id, pad_token_id=0,
                                               do_sample=False)
    kwargs = {}
    params = inspect.signature(model.save_pretrained).parameters
    if "safe_serialization" in params:
        kwargs["safe_serialization"] = True
    if max_shard_size is not None:
        kwargs["max_shard_size"] = max_shard_size
    model.save_pretrained(out_dir, **kwargs)
    gen_path = os.path.join(out_dir, "generation_config.json")
    if not os.path.exists(gen_path):
        model.generation_config.to_json_file(gen_path)
    # Keep only what the C++ side reads; save_pretrained may add extra files in some versions.
    for fname in os.listdir(out_dir):
        keep = fname in ("config.json", "generation_config.json") or fname.endswith(".safetensors") \
            or fname.endswith(".safetensors.index.json")
        if not keep:
            path = os.path.join(out_dir, fname)
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def load_fp32(model_dir):
    try:
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32,
                                                     attn_implementation="eager")
    model = model.to("cpu").eval()
    for name, param in model.named_parameters():
        if param.dtype != torch.float32:
            raise RuntimeError(f"{model_dir}: reloaded {name} has dtype {param.dtype}, expected float32")
    return model


def check_reload_matches(saved, reloaded, model_dir):
    """The reference must run on exactly the stored weights: compare every tensor after widening."""
    saved_sd = saved.state_dict()
    for name, tensor in reloaded.state_dict().items():
        if name not in saved_sd:
            continue
        if not torch.equal(saved_sd[name].to(torch.float32), tensor):
            raise RuntimeError(f"{model_dir}: reloaded tensor {name} differs from the saved one")


def round7(x):
    return float(f"{x:.7g}")


def random_prompt(seed, length, vocab_size):
    rng = random.Random(seed)
    return [rng.randrange(kFirstPromptId, vocab_size) for _ in range(length)]


def run_reference(model, prompt_ids, max_new_tokens=kMaxNewTokens):
    """Returns (last_logits list, greedy ids, per-step margins) of the fp32 model for one prompt."""
    input_ids = torch.tensor([prompt_ids], dtype=torch.long)
    attention_mask = torch.ones_like(input_ids)
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[0, -1].float()
        out = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                             min_new_tokens=max_new_tokens, do_sample=False, output_scores=True,
                             return_dict_in_generate=True)
    greedy = out.sequences[0, len(prompt_ids):].tolist()
    margins = []
    for step_scores in out.scores:
        top = torch.topk(step_scores[0].float(), 2).values
        margins.append(float(top[0] - top[1]))
    if len(greedy) != max_new_tokens or len(margins) != max_new_tokens:
        raise RuntimeError(f"generate returned {len(greedy)} tokens / {len(margins)} scores, "
                           f"expected {max_new_tokens}")
    return [round7(v) for v in logits.tolist()], greedy, margins


def find_case(model, base_seed, length, vocab_size):
    """Draws prompts until every greedy step has a margin >= kMinMargin; returns the case dict."""
    for attempt in range(kMaxTries):
        seed = base_seed + attempt
        prompt = random_prompt(seed, length, vocab_size)
        last_logits, greedy, margins = run_reference(model, prompt)
        if min(margins) >= kMinMargin:
            return {"prompt_ids": prompt, "last_logits": last_logits, "greedy_ids": greedy,
                    "margins": [round7(m) for m in margins], "seed": seed, "tries": attempt + 1}
    raise RuntimeError(f"no prompt of length {length} with all margins >= {kMinMargin} in {kMaxTries} tries")


def window_effect(model_dir, case):
    """Max |logit difference| between the model and the same weights without a sliding window."""
    try:
        full = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager",
                                                    sliding_window=None).eval()
    except TypeError:
        full = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32,
                                                    attn_implementation="eager", sliding_window=None).eval()
    ids = torch.tensor([case["prompt_ids"]], dtype=torch.long)
    logits = full(input_ids=ids).logits[0, -1].float()
    return float((logits - torch.tensor(case["last_logits"])).abs().max())


def folder_bytes(path, pred=lambda f: True):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if pred(f))


def write_v4_config(model_dir, torch_dtype_name):
    """Rewrites config.json in the 4.x layout: top-level rope_theta, rope_scaling, torch_dtype."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    rope = dict(cfg.pop("rope_parameters", None) or {})
    cfg.pop("rope_scaling", None)
    cfg["rope_theta"] = rope.pop("rope_theta", cfg.get("rope_theta", 10000.0))
    rope.pop("partial_rotary_factor", None)
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type == "default":
        cfg["rope_scaling"] = None
    elif rope_type == "linear":
        # The oldest 4.x form: "type" instead of "rope_type".
        rope.pop("rope_type", None)
        rope["type"] = "linear"
        cfg["rope_scaling"] = rope
    else:
        cfg["rope_scaling"] = rope
    cfg.pop("dtype", None)
    cfg["torch_dtype"] = torch_dtype_name
    cfg["transformers_version"] = "4.51.3"
    with open(os.path.join(model_dir, "config_v4.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def make_model(name, spec, out_root):
    fields = dict(kBase)
    fields.update({k: v for k, v in spec.items() if k not in kSpecOnlyKeys})
    saved_dtype = spec.get("saved_dtype", torch.bfloat16)
    config = build_config(spec["config_class"], fields, spec["rope"])
    model_dir = os.path.join(out_root, name)
    if os.path.exists(model_dir):
        shutil.rmtree(model_dir)
    os.makedirs(model_dir)

    saved = create_model(config, spec["seed"], saved_dtype)
    save_model(saved, model_dir, fields["eos_token_id"], spec.get("max_shard_size"))
    weight_bytes = folder_bytes(model_dir, lambda f: f.endswith(".safetensors"))
    if weight_bytes > kMaxWeightBytes:
        raise RuntimeError(f"{name}: weights take {weight_bytes} bytes, limit {kMaxWeightBytes}")

    model = load_fp32(model_dir)
    check_reload_matches(saved, model, model_dir)
    rotary = model.model.rotary_emb
    inv_freq = [float(v) for v in rotary.inv_freq.float().tolist()]
    attention_scaling = float(rotary.attention_scaling)

    vocab = fields["vocab_size"]
    cases = []
    for index, length in enumerate(spec["prompt_lengths"]):
        cases.append(find_case(model, spec["seed"] * 1000 + index * 100, length, vocab))
    if fields.get("sliding_window"):
        print(f"{name}: sliding-window effect on the longest case's last logits: "
              f"{window_effect(model_dir, cases[-1]):.4g} (0 would mean the window is not applied)", flush=True)
    # Dynamic rope may rewrite inv_freq in place past its original length; the goldens must not have done so.
    if [float(v) for v in rotary.inv_freq.float().tolist()] != inv_freq:
        raise RuntimeError(f"{name}: inv_freq changed while generating the cases")

    dtype_name = str(saved_dtype).replace("torch.", "")
    golden = {
        "name": name,
        "architecture": type(model).__name__,
        "rope_type": spec["rope"]["rope_type"],
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "saved_dtype": dtype_name,
        "model_seed": spec["seed"],
        "eos_token_id": fields["eos_token_id"],
        "max_new_tokens": kMaxNewTokens,
        "min_new_tokens": kMaxNewTokens,
        "inv_freq": inv_freq,
        "attention_scaling": attention_scaling,
        "cases": cases,
    }
    golden_path = os.path.join(model_dir, "golden.json")
    with open(golden_path, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    golden_bytes = os.path.getsize(golden_path)
    if golden_bytes > kMaxGoldenBytes:
        raise RuntimeError(f"{name}: golden.json takes {golden_bytes} bytes, limit {kMaxGoldenBytes}")
    if spec.get("v4_config"):
        write_v4_config(model_dir, dtype_name)

    files = sorted(os.listdir(model_dir))
    min_margins = [round(min(c["margins"]), 4) for c in cases]
    tries = [c["tries"] for c in cases]
    print(f"{name:16s} {type(model).__name__:18s} rope={spec['rope']['rope_type']:8s} dtype={dtype_name:8s} "
          f"weights={weight_bytes}B golden={golden_bytes}B total={folder_bytes(model_dir)}B "
          f"min_margins={min_margins} tries={tries} files={files}", flush=True)


def configure_torch():
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_grad_enabled(False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="tests/data/models", help="output folder (one subfolder per model)")
    parser.add_argument("--only", nargs="*", help="model names to build (default: all)")
    args = parser.parse_args()
    configure_torch()
    print(f"transformers {transformers.__version__} torch {torch.__version__}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    failures = []
    for name, spec in MODEL_SPECS.items():
        if args.only and name not in args.only:
            continue
        try:
            make_model(name, spec, args.out)
        except Exception as exc:  # keep building the others; report all failures at the end
            import traceback
            traceback.print_exc()
            failures.append(f"{name}: {exc}")
            shutil.rmtree(os.path.join(args.out, name), ignore_errors=True)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
