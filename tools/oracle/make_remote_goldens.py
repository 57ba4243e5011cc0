#!/usr/bin/env python3
"""Golden tiny models for families whose modeling code lives only in their model repositories ("remote code").

The published modeling code is run unchanged from a public snapshot outside the repository (never committed):
  InternLM (v1): InternLM/InternLM at aaaf4d7, tools/transformers/{modeling,configuration}_internlm.py, copied to
  /work/oracle/remote/internlm/ (see /work/helper_notes/ORACLE.md).
  ChatGLM3 (ChatGLMModel): THUDM/ChatGLM3 at b0b4e8a, model/{modeling,configuration}_chatglm.py, copied to
  /work/oracle/remote/chatglm3/.
  Baichuan-7B (BaiChuanForCausalLM): baichuan-inc/Baichuan-7B at 5a39915, models/{modeling,configuration}_baichuan.py,
  copied to /work/oracle/remote/baichuan7b/ (its xformers import is for training only; the oracle stubs it).
  Qwen (v1, QWenLMHeadModel): the published Qwen/Qwen-7B model repository at d4efd21 (its git history, mirrored
  as github:zhangningboo/Qwen-7B), {modeling,configuration}_qwen.py, qwen_generation_utils.py, cpp_kernels.py,
  copied to /work/oracle/remote/qwen/.
  InternLM2 (InternLM2ForCausalLM): no InternLM-owned repository publishes it on GitHub; this uses the copy that
  InternVL's authors (OpenGVLab/InternVL at f3fc71c, internvl_chat/internvl/model/internlm2/) ship for InternVL's
  language model, eager attention path, copied to /work/oracle/remote/internlm2/.
  Baichuan2-13B (BaichuanForCausalLM): the published baichuan-inc/Baichuan2-13B-Chat model repository at c6f8592
  (its git history, mirrored as github:jrd77/Baichuan2-13B-Chat), {modeling,configuration}_baichuan.py,
  generation_utils.py, quantizer.py, copied to /work/oracle/remote/baichuan2_13b/.
The model is made, saved (bf16) and reloaded in fp32 as in make_model_goldens.py. The remote code predates the
generation API of the oracle's transformers, so greedy decoding is done here without a KV cache: one full forward
per step, argmax with eos masked for all 24 steps (what min_new_tokens does), margins from the same logits.

Usage: PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/oracle/make_remote_goldens.py [--only internlm]
(TACO_REMOTE_CODE=<dir> when the oracle was built elsewhere than /work/oracle: its remote/ folder.)
"""

import argparse
import importlib
import json
import os
import shutil
import sys

import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import make_model_goldens as mmg  # noqa: E402

kRemoteRoot = os.environ.get("TACO_REMOTE_CODE", "/work/oracle/remote")

REMOTE_SPECS = {
    "internlm": dict(
        # InternLM-7B shape: Llama with biases on q/k/v/o ("bias": true), full multi-head attention.
        code_dir="internlm", config_module="configuration_internlm", config_class="InternLMConfig",
        model_module="modeling_internlm", model_class="InternLMForCausalLM", seed=7001,
        source="InternLM/InternLM@aaaf4d7 tools/transformers",
        auto_map={"AutoConfig": "configuration_internlm.InternLMConfig",
                  "AutoModel": "modeling_internlm.InternLMForCausalLM",
                  "AutoModelForCausalLM": "modeling_internlm.InternLMForCausalLM"},
        fields=dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, max_position_embeddings=128, initializer_range=0.1, rms_norm_eps=1e-6,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False, bias=True),
        prompt_lengths=[7, 40, 90]),
    "chatglm3": dict(
        # ChatGLM2/3-6B shape: fused query_key_value with bias over 2 kv groups, rotary on half of each head
        # (interleaved pairs, original_rope), SwiGLU dense_h_to_4h, RMSNorm, untied output_layer. The published
        # config names the architecture ChatGLMModel; transformers builds ChatGLMForConditionalGeneration.
        code_dir="chatglm3", config_module="configuration_chatglm", config_class="ChatGLMConfig",
        model_module="modeling_chatglm", model_class="ChatGLMForConditionalGeneration", seed=7002,
        model_kwargs={"empty_init": False}, init_std=0.1, architectures=["ChatGLMModel"],
        source="THUDM/ChatGLM3@b0b4e8a model",
        auto_map={"AutoConfig": "configuration_chatglm.ChatGLMConfig",
                  "AutoModel": "modeling_chatglm.ChatGLMForConditionalGeneration",
                  "AutoModelForCausalLM": "modeling_chatglm.ChatGLMForConditionalGeneration",
                  "AutoModelForSeq2SeqLM": "modeling_chatglm.ChatGLMForConditionalGeneration"},
        fields=dict(num_layers=2, padded_vocab_size=512, hidden_size=64, ffn_hidden_size=128, kv_channels=16,
                    num_attention_heads=4, seq_length=128, layernorm_epsilon=1e-5, rmsnorm=True,
                    apply_residual_connection_post_layernorm=False, post_layer_norm=True, add_bias_linear=False,
                    add_qkv_bias=True, multi_query_attention=True, multi_query_group_num=2,
                    apply_query_key_layer_scaling=True, attention_softmax_in_fp32=True, original_rope=True,
                    fp32_residual_connection=False, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                    tie_word_embeddings=False),
        rotary_dim=8, prompt_lengths=[7, 40, 90]),
    "baichuan": dict(
        # Baichuan-7B shape: Llama with q/k/v fused into one W_pack projection, rope theta 10000.
        code_dir="baichuan7b", config_module="configuration_baichuan", config_class="BaiChuanConfig",
        model_module="modeling_baichuan", model_class="BaiChuanForCausalLM", seed=7003,
        source="baichuan-inc/Baichuan-7B@5a39915 models",
        auto_map={"AutoConfig": "configuration_baichuan.BaiChuanConfig",
                  "AutoModelForCausalLM": "modeling_baichuan.BaiChuanForCausalLM"},
        fields=dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, max_position_embeddings=128, initializer_range=0.1, rms_norm_eps=1e-6,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False),
        prompt_lengths=[7, 40, 90]),
    "qwen": dict(
        # Qwen-7B shape: fused c_attn with bias, no other biases, MLP w1/w2 (each intermediate_size / 2) into c_proj,
        # RMSNorm. use_dynamic_ntk and use_logn_attn are on as published but only act past seq_length (128 here,
        # longer than every case), so the goldens are plain rope (theta rotary_emb_base).
        code_dir="qwen", config_module="configuration_qwen", config_class="QWenConfig",
        model_module="modeling_qwen", model_class="QWenLMHeadModel", seed=7004,
        source="Qwen/Qwen-7B@d4efd21 (model repository; mirrored as github:zhangningboo/Qwen-7B)",
        auto_map={"AutoConfig": "configuration_qwen.QWenConfig",
                  "AutoModelForCausalLM": "modeling_qwen.QWenLMHeadModel"},
        fields=dict(vocab_size=512, hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                    num_attention_heads=4, kv_channels=16, max_position_embeddings=128, seq_length=128,
                    initializer_range=0.1, layer_norm_epsilon=1e-6, rotary_pct=1.0, rotary_emb_base=10000,
                    use_dynamic_ntk=True, use_logn_attn=True, use_flash_attn=False, no_bias=True,
                    scale_attn_weights=True, bf16=False, fp16=False, fp32=True, tie_word_embeddings=False,
                    bos_token_id=1, eos_token_id=2, pad_token_id=0),
        prompt_lengths=[7, 40, 90]),
    "internlm2": dict(
        # InternLM2 shape: wqkv packs per kv group [its 2 query heads, k, v] (heads 4 over 2 kv groups), wo,
        # feed_forward w1 (gate) / w3 (up) / w2 (down), rope theta 1e6, untied output.
        code_dir="internlm2", config_module="configuration_internlm2", config_class="InternLM2Config",
        model_module="modeling_internlm2", model_class="InternLM2ForCausalLM", seed=7005,
        source="OpenGVLab/InternVL@f3fc71c internvl_chat/internvl/model/internlm2 (InternVL's copy of InternLM2)",
        auto_map={"AutoConfig": "configuration_internlm2.InternLM2Config",
                  "AutoModel": "modeling_internlm2.InternLM2ForCausalLM",
                  "AutoModelForCausalLM": "modeling_internlm2.InternLM2ForCausalLM"},
        fields=dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                    initializer_range=0.1, rms_norm_eps=1e-6, bias=False, rope_theta=1000000.0, rope_scaling=None,
                    attn_implementation="eager", pad_token_id=0, bos_token_id=1, eos_token_id=2,
                    tie_word_embeddings=False),
        rope_theta=1000000.0, prompt_lengths=[7, 40, 90]),
    "baichuan2_13b": dict(
        # Baichuan2-13B shape: W_pack, ALiBi (no rope) over 6 heads -- not a power of two, like the real 40, so the
        # slopes take the interleaved extra terms -- and NormHead: lm_head rows are L2-normalised before use (the
        # checkpoint stores them unnormalised). hidden 48 / head_dim 8 to stay within the size limit.
        code_dir="baichuan2_13b", config_module="configuration_baichuan", config_class="BaichuanConfig",
        model_module="modeling_baichuan", model_class="BaichuanForCausalLM", seed=7006, position="alibi",
        source=("baichuan-inc/Baichuan2-13B-Chat@c6f8592 (model repository; mirrored as "
                "github:jrd77/Baichuan2-13B-Chat)"),
        auto_map={"AutoConfig": "configuration_baichuan.BaichuanConfig",
                  "AutoModelForCausalLM": "modeling_baichuan.BaichuanForCausalLM"},
        fields=dict(vocab_size=512, hidden_size=48, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=6, model_max_length=128, initializer_range=0.1, rms_norm_eps=1e-6,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False),
        prompt_lengths=[7, 40, 90]),
}


def load_classes(spec):
    """Imports the remote code as the package <code_dir> (relative imports, as transformers' dynamic modules do)
    with its folder also on sys.path (absolute imports of sibling files, as older remote code has)."""
    code_dir = os.path.join(kRemoteRoot, spec["code_dir"])
    if not os.path.isdir(code_dir):
        raise RuntimeError(f"remote code folder {code_dir} is missing (see ORACLE.md)")
    for path in (kRemoteRoot, code_dir):
        if path not in sys.path:
            sys.path.insert(0, path)
    package = spec["code_dir"]
    config_class = getattr(importlib.import_module(f"{package}.{spec['config_module']}"), spec["config_class"])
    model_class = getattr(importlib.import_module(f"{package}.{spec['model_module']}"), spec["model_class"])
    return config_class, model_class


def init_normal(model, std):
    """Matrices ~ N(0, std) (remote code that leaves its weights uninitialised or at unit-scale embeddings)."""
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for _, param in model.named_parameters():
            if param.dim() >= 2:
                param.copy_(torch.randn(param.shape, generator=gen) * std)


def uncached_greedy(model, prompt_ids, eos_ids, steps=mmg.kMaxNewTokens):
    """(last prompt logits, greedy ids, margins): full forward per step, eos masked as min_new_tokens does."""
    ids = list(prompt_ids)
    last_logits, greedy, margins = None, [], []
    for _ in range(steps):
        logits = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False).logits[0, -1].float()
        if last_logits is None:
            last_logits = [mmg.round7(v) for v in logits.tolist()]
        scores = logits.clone()
        scores[eos_ids] = float("-inf")
        top = torch.topk(scores, 2)
        greedy.append(int(top.indices[0]))
        margins.append(float(top.values[0] - top.values[1]))
        ids.append(greedy[-1])
    return last_logits, greedy, margins


def make(name, spec, out_root):
    config_class, model_class = load_classes(spec)
    fields = dict(spec["fields"])
    config = config_class(**fields)
    config.auto_map = spec["auto_map"]
    model_dir = os.path.join(out_root, "pending", name)
    shutil.rmtree(model_dir, ignore_errors=True)
    os.makedirs(model_dir)

    torch.manual_seed(spec["seed"])
    saved = model_class(config, **spec.get("model_kwargs", {}))
    if spec.get("init_std"):
        init_normal(saved, spec["init_std"])
    mmg.randomize_non_matrix_params(saved, spec["seed"])
    saved = saved.to(torch.bfloat16).eval()
    mmg.save_model(saved, model_dir, fields["eos_token_id"])
    if spec.get("architectures"):
        config_path = os.path.join(model_dir, "config.json")
        with open(config_path) as f:
            saved_config = json.load(f)
        saved_config["architectures"] = spec["architectures"]
        with open(config_path, "w") as f:
            json.dump(saved_config, f, indent=2, sort_keys=True)
            f.write("\n")
    weight_bytes = mmg.folder_bytes(model_dir, lambda f: f.endswith(".safetensors"))
    if weight_bytes > mmg.kMaxWeightBytes:
        raise RuntimeError(f"{name}: weights take {weight_bytes} bytes, limit {mmg.kMaxWeightBytes}")

    model = model_class.from_pretrained(model_dir, torch_dtype=torch.float32, **spec.get("model_kwargs", {})).eval()
    mmg.check_reload_matches(saved, model, model_dir)
    head_dim = spec.get("rotary_dim", fields["hidden_size"] // fields["num_attention_heads"])
    # The sin/cos tables are built from this fp32 formula (over rotary_dim); the checkpoint's
    # inv_freq buffers (bf16 copies) are not what the forward uses.
    theta = spec.get("rope_theta", 10000.0)
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))

    eos = fields["eos_token_id"] if isinstance(fields["eos_token_id"], list) else [fields["eos_token_id"]]
    cases = []
    for index, length in enumerate(spec["prompt_lengths"]):
        for attempt in range(mmg.kMaxTries):
            seed = spec["seed"] * 1000 + index * 100 + attempt
            prompt = mmg.random_prompt(seed, length, config.vocab_size)
            last_logits, greedy, margins = uncached_greedy(model, prompt, eos)
            if min(margins) >= mmg.kMinMargin:
                cases.append({"prompt_ids": prompt, "last_logits": last_logits, "greedy_ids": greedy,
                              "margins": [mmg.round7(m) for m in margins], "seed": seed, "tries": attempt + 1})
                break
        else:
            raise RuntimeError(f"{name}: no prompt of length {length} with all margins >= {mmg.kMinMargin}")

    if spec.get("position") == "alibi":
        inv_freq = torch.zeros(0)
    golden = {
        "name": name, "architecture": spec["model_class"],
        "rope_type": "none" if spec.get("position") == "alibi" else "default",
        "transformers_version": transformers.__version__, "torch_version": torch.__version__,
        **mmg.transformers_source(), "remote_code_source": spec["source"], "greedy_mode": "uncached",
        "saved_dtype": "bfloat16", "model_seed": spec["seed"], "eos_token_id": fields["eos_token_id"],
        "max_new_tokens": mmg.kMaxNewTokens, "min_new_tokens": mmg.kMaxNewTokens,
        "inv_freq": [float(v) for v in inv_freq.tolist()], "attention_scaling": 1.0, "cases": cases,
    }
    path = os.path.join(model_dir, "golden.json")
    with open(path, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"{name:12s} {spec['model_class']} weights={weight_bytes}B golden={os.path.getsize(path)}B "
          f"min_margins={[round(min(c['margins']), 4) for c in cases]} tries={[c['tries'] for c in cases]} "
          f"files={sorted(os.listdir(model_dir))}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="tests/data/models")
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    mmg.configure_torch()
    for name, spec in REMOTE_SPECS.items():
        if not args.only or name in args.only:
            make(name, spec, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
