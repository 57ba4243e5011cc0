#!/usr/bin/python3
"""Writes the small torch.save fixtures of tests/io/torch_bin_test.cc under tests/data/io/torch_bin/.

Needs Debian's python3-torch (run with /usr/bin/python3). Each case folder holds what torch.save wrote and,
for the positive cases, expected.json: name -> {"dtype": taco dtype name, "shape": [...], "values": [...]}.
Rerunning rewrites the folder; the archives embed no timestamps that matter to the tests.
"""
import collections
import json
import os
import shutil
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "io", "torch_bin")

TACO_DTYPE = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "U8",
}


def expected(tensors):
    out = {}
    for name, t in tensors.items():
        t = t.detach()
        out[name] = {
            "dtype": TACO_DTYPE[t.dtype],
            "shape": list(t.shape),
            "values": [float(v) for v in t.reshape(-1).to(torch.float64).tolist()],
        }
    return out


def write_case(case, obj, tensors=None, **save_kwargs):
    folder = os.path.join(ROOT, case)
    os.makedirs(folder, exist_ok=True)
    torch.save(obj, os.path.join(folder, "pytorch_model.bin"), **save_kwargs)
    if tensors is not None:
        with open(os.path.join(folder, "expected.json"), "w") as f:
            json.dump(expected(tensors), f, indent=1, sort_keys=True)


def every_dtype():
    torch.manual_seed(0)
    linear = torch.nn.Linear(3, 2)  # its state_dict() is an OrderedDict with _metadata, pickled with BUILD
    sd = linear.state_dict()
    wide = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 8
    shared = torch.arange(6, dtype=torch.float16).reshape(2, 3) - 2.5
    sd["f16"] = shared
    sd["f16_tied"] = shared  # two names, one storage
    sd["bf16"] = torch.tensor([[1.5, -2.25], [3.0, 1e-3]], dtype=torch.bfloat16)
    sd["i64"] = torch.tensor([-3, 0, 1 << 40], dtype=torch.int64)
    sd["i32"] = torch.tensor([7, -8], dtype=torch.int32)
    sd["i8"] = torch.tensor([-128, 5, 127], dtype=torch.int8)
    sd["u8"] = torch.tensor([0, 200, 255], dtype=torch.uint8)
    sd["mask"] = torch.tensor([True, False, True])
    sd["wide.row1"] = wide[1]  # a contiguous view at storage offset 4 of a 12-element storage
    sd["wide"] = wide
    sd["scalar"] = torch.tensor(2.5)
    sd["empty"] = torch.zeros(0, 3)
    sd["unit_dims"] = torch.arange(3, dtype=torch.float32).reshape(3, 1)[1:].reshape(1, 2, 1)
    write_case("every_dtype", sd, tensors=sd)


def parameters():
    p = torch.nn.Parameter(torch.tensor([1.0, -1.0, 0.5]))
    obj = {"p": p}  # a plain dict holding an nn.Parameter: _rebuild_parameter wraps _rebuild_tensor_v2
    write_case("parameter", obj, tensors=obj)


def protocol4():
    obj = {"a": torch.tensor([1.0, 2.0]), "b": torch.tensor([[3, 4]], dtype=torch.int32)}
    write_case("protocol4", obj, tensors=obj, pickle_protocol=4)


def unsupported_dtype():
    obj = {"f64": torch.tensor([1.0], dtype=torch.float64), "ok": torch.tensor([1.0])}
    write_case("float64", obj)


def non_contiguous():
    write_case("transposed", {"t": torch.arange(6, dtype=torch.float32).reshape(2, 3).t()})


def legacy():
    wide = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 8
    half = torch.tensor([0.5, -1.0, 3.0], dtype=torch.float16)
    sd = collections.OrderedDict()
    sd["wide"] = wide
    sd["wide.row2"] = wide[2]
    sd["half"] = half
    sd["half_tied"] = half
    sd["bf16"] = torch.tensor([[1.5, -2.25]], dtype=torch.bfloat16)
    sd["i64"] = torch.tensor([5, -6], dtype=torch.int64)
    sd["mask"] = torch.tensor([False, True])
    write_case("legacy", sd, tensors=sd, _use_new_zipfile_serialization=False)


def sharded():
    folder = os.path.join(ROOT, "sharded")
    os.makedirs(folder, exist_ok=True)
    shards = [
        collections.OrderedDict(a=torch.tensor([1.0, 2.0]), b=torch.tensor([3], dtype=torch.int64)),
        collections.OrderedDict(c=torch.tensor([[0.5, 0.25]], dtype=torch.bfloat16)),
    ]
    weight_map = {}
    for i, shard in enumerate(shards):
        name = f"pytorch_model-{i + 1:05d}-of-{len(shards):05d}.bin"
        torch.save(shard, os.path.join(folder, name))
        weight_map.update({k: name for k in shard})
    with open(os.path.join(folder, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
    everything = {k: v for shard in shards for k, v in shard.items()}
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump(expected(everything), f, indent=1, sort_keys=True)


def main():
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    for make in (every_dtype, parameters, protocol4, unsupported_dtype, non_contiguous, legacy, sharded):
        make()
    print(f"wrote {ROOT} with torch {torch.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
