"""Torch-2 names that recent transformers touches, added onto Debian's torch 1.13 for the local oracle (CPU, eager).

setup_reference_env.sh installs this as sitecustomize.py in the oracle's site folder, so it runs before any import.
Only names missing from the installed torch are added, as empty modules or placeholders that transformers imports
but never calls on the CPU eager path; none changes what an existing torch function computes.
"""

import sys
import types

try:
    import torch
except ImportError:  # a python without torch: nothing to patch
    torch = None


def _placeholder_class(name):
    return type(name, (), {})


def _add_module(fullname, **attrs):
    if fullname in sys.modules:
        module = sys.modules[fullname]
    else:
        module = types.ModuleType(fullname)
        sys.modules[fullname] = module
        parent_name, _, leaf = fullname.rpartition(".")
        setattr(sys.modules[parent_name], leaf, module)
    for key, value in attrs.items():
        if not hasattr(module, key):
            setattr(module, key, value)
    return module


def _patch():
    import torch.distributed  # noqa: F401

    _add_module("torch.distributed.tensor", DTensor=_placeholder_class("DTensor"),
                Placement=_placeholder_class("Placement"), Replicate=_placeholder_class("Replicate"),
                Shard=_placeholder_class("Shard"))

    def disable(fn=None, recursive=True):
        return fn if fn is not None else (lambda f: f)

    _add_module("torch.compiler", is_compiling=lambda: False, is_exporting=lambda: False, disable=disable)

    # dtypes torch 1.13 lacks, referenced in transformers' dtype tables: unique sentinels that equal no real dtype.
    for name in ("float8_e4m3fn", "float8_e5m2"):
        if not hasattr(torch, name):
            setattr(torch, name, _placeholder_class(name)())

    _add_load_state_dict_assign()
    _add_layer_norm_bias()

    # torch._dynamo (torch 2.0): the static caches mark their tensors for the compiler; nothing compiles here.
    if not hasattr(torch, "_dynamo"):
        _add_module("torch._dynamo", mark_static_address=lambda *args, **kwargs: None,
                    reset=lambda: None, is_compiling=lambda: False, config=types.SimpleNamespace())

    # torch 1.13's FSDP package does not import under python 3.11 (a dataclass with a mutable default); transformers
    # imports it only to ask whether a module is FSDP-wrapped, which no oracle module is.
    try:
        import torch.distributed.fsdp  # noqa: F401
    except ValueError:
        for name in [m for m in sys.modules if m.startswith("torch.distributed.fsdp")]:
            del sys.modules[name]
        _add_module("torch.distributed.fsdp", FullyShardedDataParallel=_placeholder_class("FullyShardedDataParallel"))


def _add_layer_norm_bias():
    """LayerNorm(normalized_shape, eps, elementwise_affine, bias, device, dtype) (torch 2.1 added bias): bias=False
    leaves the module without a bias parameter, which F.layer_norm takes as no bias."""
    import inspect

    original = torch.nn.LayerNorm.__init__
    if "bias" in inspect.signature(original).parameters:
        return

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        original(self, normalized_shape, eps, elementwise_affine, device=device, dtype=dtype)
        if elementwise_affine and not bias:
            self.bias = None  # assigning None to a registered parameter unregisters its tensor

    torch.nn.LayerNorm.__init__ = __init__


def _add_load_state_dict_assign():
    """Module.load_state_dict(..., assign=True) (torch 2.1): replaces the module's own tensors by the given ones
    (keeping requires_grad) instead of copying into them; transformers loads every checkpoint tensor this way."""
    import inspect

    original = torch.nn.Module.load_state_dict
    if "assign" in inspect.signature(original).parameters:
        return

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not assign:
            return original(self, state_dict, strict)
        for key, tensor in state_dict.items():
            owner = self
            *path, leaf = key.split(".")
            for part in path:
                owner = getattr(owner, part)
            if leaf in owner._parameters:
                old = owner._parameters[leaf]
                grad = old.requires_grad if old is not None else False
                owner._parameters[leaf] = torch.nn.Parameter(tensor.detach(), requires_grad=grad)
            elif leaf in owner._buffers:
                owner._buffers[leaf] = tensor
            elif strict:
                raise RuntimeError(f"load_state_dict(assign=True): unexpected key {key}")
        return torch.nn.modules.module._IncompatibleKeys([], [])

    torch.nn.Module.load_state_dict = load_state_dict


if torch is not None:
    _patch()
