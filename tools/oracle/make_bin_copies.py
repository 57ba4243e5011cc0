#!/usr/bin/env python3
"""Makes copies of golden model folders in other checkpoint layouts: pytorch_model.bin written by real torch.save (via
transformers' save_pretrained with safe_serialization=False), for testing the .bin loader against what torch itself
writes, and prefix-less keys (saved from the base model) as some published checkpoints have.

The copy has the source's config.json, generation_config.json and golden.json verbatim and the same tensors as
its model*.safetensors (checked bit for bit), so the source's goldens hold for it unchanged.

--legacy writes the single pytorch_model.bin with torch.save(..., _use_new_zipfile_serialization=False), the pre-1.6
stream format (pickled header, pickled state dict, storage keys, then the raw storages) that old checkpoints have.

--base-model saves the base model's state dict instead (no "model." prefix, no separate lm_head when tied), as
facebook/opt-125m's pytorch_model.bin was saved (keys "decoder.embed_tokens.weight", ...); transformers maps it.

--safetensors writes model.safetensors instead of .bin (with --base-model: prefix-less safetensors, as the
converted openai-community/gpt2 checkpoint has: "h.0.attn.c_attn.weight", "wte.weight", ...).

Usage: PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/oracle/make_bin_copies.py SRC_DIR DST_DIR
           [--shard-size 60KB | --legacy | --base-model] [--safetensors]
"""

import argparse
import glob
import os
import shutil
import sys
import tempfile

import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from make_model_goldens import AutoModelForCausalLM, load_fp32  # noqa: E402


def stored_tensors(model_dir):
    tensors = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "*.safetensors"))):
        tensors.update(load_file(path))
    return tensors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--shard-size", help="max_shard_size for save_pretrained (gives an index + shards)")
    parser.add_argument("--legacy", action="store_true", help="pre-1.6 torch.save stream format, one file")
    parser.add_argument("--base-model", action="store_true", help="keys of the base model (no 'model.' prefix)")
    parser.add_argument("--safetensors", action="store_true", help="write model.safetensors instead of .bin")
    args = parser.parse_args()
    torch.set_grad_enabled(False)

    stored = stored_tensors(args.src)
    dtypes = {t.dtype for t in stored.values()}
    if len(dtypes) != 1:
        raise SystemExit(f"{args.src}: mixed stored dtypes {dtypes}")
    model = load_fp32(args.src).to(dtypes.pop())
    state = model.state_dict()
    for name, tensor in stored.items():
        if name in state and not torch.equal(state[name], tensor):
            raise SystemExit(f"{args.src}: {name} differs after the round trip through transformers")

    if os.path.exists(args.dst):
        shutil.rmtree(args.dst)
    os.makedirs(args.dst)
    with tempfile.TemporaryDirectory() as tmp:
        kwargs = {"safe_serialization": args.safetensors}
        if args.shard_size:
            kwargs["max_shard_size"] = args.shard_size
        (model.base_model if args.base_model else model).save_pretrained(tmp, **kwargs)
        weights = [f for f in os.listdir(tmp) if f.startswith("pytorch_model") or f.startswith("model.safetensors")
                   or (f.startswith("model-") and f.endswith(".safetensors"))]
        if args.legacy:
            if weights != ["pytorch_model.bin"]:
                raise SystemExit(f"--legacy wants one file, save_pretrained wrote {weights}")
            # The same state dict transformers saved (tied duplicates already dropped), in the old format.
            saved = torch.load(os.path.join(tmp, "pytorch_model.bin"), weights_only=True)
            torch.save(saved, os.path.join(args.dst, "pytorch_model.bin"), _use_new_zipfile_serialization=False)
        else:
            for fname in weights:
                shutil.copy(os.path.join(tmp, fname), args.dst)
    for fname in ("config.json", "generation_config.json", "golden.json"):
        shutil.copy(os.path.join(args.src, fname), args.dst)

    # The copy must load back through transformers' own .bin path to the same tensors.
    reloaded = AutoModelForCausalLM.from_pretrained(args.dst, torch_dtype=model.dtype, config=model.config)
    for name, tensor in reloaded.state_dict().items():
        if name in stored and not torch.equal(tensor, stored[name]):
            raise SystemExit(f"{args.dst}: {name} differs after reloading the .bin")
    sizes = {f: os.path.getsize(os.path.join(args.dst, f)) for f in sorted(os.listdir(args.dst))}
    print(f"{args.dst}: {sizes}")


if __name__ == "__main__":
    main()
