"""Minimal pure-Python stand-in for the `safetensors` package (torch side only), for the local transformers oracle.

Implements the calls transformers makes: safetensors.safe_open (keys, metadata, get_tensor, get_slice with
get_dtype/get_shape/[...] indexing), safetensors.torch.{load_file, save_file, storage_ptr, storage_size, load,
save, load_model, save_model}. Format: u64 little-endian header length, JSON header
{name: {dtype, shape, data_offsets}, "__metadata__"}, then the raw little-endian tensor bytes.
setup_reference_env.sh installs this file as safetensors/torch.py.
"""

import json
import struct

import torch

kDtypes = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}
kNames = {v: k for k, v in kDtypes.items()}


def _parse(data):
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    return header, 8 + n


def _tensor_from(data, base, info):
    begin, end = info["data_offsets"]
    dtype = kDtypes[info["dtype"]]
    buf = bytearray(data[base + begin:base + end])
    if len(buf) == 0:
        return torch.empty(info["shape"], dtype=dtype)
    return torch.frombuffer(buf, dtype=dtype).reshape(info["shape"]).clone()


class _Slice:
    def __init__(self, owner, name):
        self._owner = owner
        self._name = name

    def get_dtype(self):
        return self._owner._header[self._name]["dtype"]

    def get_shape(self):
        return list(self._owner._header[self._name]["shape"])

    def __getitem__(self, index):
        return self._owner.get_tensor(self._name)[index]


class safe_open:
    def __init__(self, filename, framework="pt", device="cpu"):
        with open(filename, "rb") as f:
            self._data = f.read()
        header, self._base = _parse(self._data)
        self._meta = header.pop("__metadata__", None)
        self._header = header
        self._device = device

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False

    def keys(self):
        return list(self._header.keys())

    def offset_keys(self):
        return sorted(self._header.keys(), key=lambda k: self._header[k]["data_offsets"][0])

    def metadata(self):
        return self._meta

    def get_tensor(self, name):
        t = _tensor_from(self._data, self._base, self._header[name])
        return t if self._device in (None, "cpu") else t.to(self._device)

    def get_slice(self, name):
        return _Slice(self, name)


def load(data):
    header, base = _parse(data)
    header.pop("__metadata__", None)
    return {k: _tensor_from(data, base, v) for k, v in header.items()}


def load_file(filename, device="cpu"):
    with open(filename, "rb") as f:
        out = load(f.read())
    return out if device in (None, "cpu") else {k: v.to(device) for k, v in out.items()}


def save(tensors, metadata=None):
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu").contiguous()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": kNames[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def save_file(tensors, filename, metadata=None):
    with open(filename, "wb") as f:
        f.write(save(tensors, metadata))


def storage_ptr(tensor):
    try:
        return tensor.untyped_storage().data_ptr()
    except Exception:
        try:
            return tensor.storage().data_ptr()
        except NotImplementedError:
            return 0


def storage_size(tensor):
    try:
        return tensor.untyped_storage().nbytes()
    except AttributeError:
        return tensor.storage().size() * tensor.element_size()


def save_model(model, filename, metadata=None, force_contiguous=False):
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, filename, metadata)


def load_model(model, filename, strict=True, device="cpu"):
    return model.load_state_dict(load_file(filename, device), strict=strict)
