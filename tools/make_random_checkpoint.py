#!/usr/bin/env python3
"""Writes a Llama-family checkpoint of random weights for a config.json, as Hugging Face lays one out: safetensors
shards of at most 5 GB with model.safetensors.index.json, and the config beside them. For start-up timing on the GPU
machine (scripts/gpu_startup.sh with TACO_STARTUP_CHECKPOINT=1: an 8B checkpoint read from the page cache), where
no real checkpoint can be fetched. Weights are N(0, 0.02) in the config's torch_dtype (bf16 by default), made on the
GPU when there is one (8B parameters in seconds rather than minutes), norms are ones.

Usage: make_random_checkpoint.py CONFIG_DIR OUT_DIR
"""
import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file

SHARD_BYTES = 5 * 1024**3


def tensor_shapes(c):
    """The (name, shape) of every tensor of a LlamaForCausalLM checkpoint of config c, in file order."""
    hidden, inter, vocab = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads, kv_heads = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    head_dim = c.get("head_dim", hidden // heads)
    yield "model.embed_tokens.weight", (vocab, hidden)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield p + "self_attn.q_proj.weight", (heads * head_dim, hidden)
        yield p + "self_attn.k_proj.weight", (kv_heads * head_dim, hidden)
        yield p + "self_attn.v_proj.weight", (kv_heads * head_dim, hidden)
        yield p + "self_attn.o_proj.weight", (hidden, heads * head_dim)
        yield p + "mlp.gate_proj.weight", (inter, hidden)
        yield p + "mlp.up_proj.weight", (inter, hidden)
        yield p + "mlp.down_proj.weight", (hidden, inter)
        yield p + "input_layernorm.weight", (hidden,)
        yield p + "post_attention_layernorm.weight", (hidden,)
    yield "model.norm.weight", (hidden,)
    if not c.get("tie_word_embeddings", False):
        yield "lm_head.weight", (vocab, hidden)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    config_dir, out_dir = sys.argv[1], sys.argv[2]
    with open(os.path.join(config_dir, "config.json")) as f:
        c = json.load(f)
    if c.get("model_type") not in ("llama", "mistral", "qwen2"):
        sys.exit(f"make_random_checkpoint: model_type {c.get('model_type')!r} is not a Llama-family layout")
    dtype = getattr(torch, c.get("torch_dtype", "bfloat16"))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device).manual_seed(0)
    os.makedirs(out_dir, exist_ok=True)
    shutil.copy(os.path.join(config_dir, "config.json"), os.path.join(out_dir, "config.json"))
    # Shards planned from the shapes first (a file's name holds their count), then made and written one at a time.
    size = torch.tensor([], dtype=dtype).element_size()
    shards, current, current_bytes = [], [], 0
    for name, shape in tensor_shapes(c):
        nbytes = size * (shape[0] * (shape[1] if len(shape) > 1 else 1))
        if current and current_bytes + nbytes > SHARD_BYTES:
            shards.append(current)
            current, current_bytes = [], 0
        current.append((name, shape))
        current_bytes += nbytes
    shards.append(current)
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        tensors = {}
        for name, shape in shard:
            if len(shape) == 1:
                t = torch.ones(shape, dtype=dtype)
            else:
                t = (torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * 0.02).to(dtype).cpu()
            tensors[name] = t
            weight_map[name] = file
            total += t.numel() * t.element_size()
        save_file(tensors, os.path.join(out_dir, file), metadata={"format": "pt"})
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    print(f"{out_dir}: {len(weight_map)} tensors, {total / 1e9:.2f} GB in {len(shards)} shards")


if __name__ == "__main__":
    main()
