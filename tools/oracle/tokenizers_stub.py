"""Import-only stand-in for the Rust `tokenizers` package (the oracle never tokenizes: goldens use token ids), also
installed as `xformers` (remote modeling code that imports it for training-only paths).

Some transformers modules import tokenizers names at module level even when tokenizers is absent (ggml
integration, fast-tokenizer converters). Every name here is a class that fails when used. No dist-info is
written for it, so transformers still reports tokenizers as unavailable and skips its version check.
setup_reference_env.sh installs this file as tokenizers/__init__.py and as each submodule below.
"""


class _Unavailable:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("tokenizers is not installed in the transformers oracle (token ids only)")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (_Unavailable,), {})
