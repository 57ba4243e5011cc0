#!/usr/bin/env python3
"""Makes pytorch_model.bin copies of golden model folders with real torch.save (via transformers' save_pretrained
with safe_serialization=False), for testing the pytorch_model.bin loader against what torch itself writes.

The copy has the source's config.json, generation_config.json and golden.json verbatim and the same tensors as
its model*.safetensors (checked bit for bit), so the source's goldens hold for it unchanged.

Usage: PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/oracle/make_bin_copies.py SRC_DIR DST_DIR [--shard-size 60KB]
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
        kwargs = {"safe_serialization": False}
        if args.shard_size:
            kwargs["max_shard_size"] = args.shard_size
        model.save_pretrained(tmp, **kwargs)
        weights = [f for f in os.listdir(tmp) if f.startswith("pytorch_model")]
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
