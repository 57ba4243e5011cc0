#!/usr/bin/env python3
"""Builds the tiny random Hugging Face models under tests/data/models and their fp32 reference goldens.

Runs with torch + transformers on the CPU: on the device machine (transformers 5.x) or, on a machine without pip, with
the local oracle of tools/setup_reference_env.sh (transformers 4.51 line, torch 1.13):
  PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/make_model_goldens.py --only gemma gpt2
For every model spec below it builds the config with
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
rope_type is "none" (and inv_freq empty) for models without rotary embeddings (learned positions, ALiBi). Gemma3
adds "inv_freq_local" (its sliding layers' table); LongRoPE adds "inv_freq_long" and "attention_scaling_long", the
table and cos/sin scale transformers switches to once a sequence is longer than original_max_position_embeddings.

Families that the C++ side does not support yet go to tests/data/models/pending/<name> (spec key "pending"), so
that the parity test, which runs every tests/data/models/<name>/golden.json, stays green; whoever implements a
family moves its folders up one level (git mv) together with the code.
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
from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig, LlamaConfig, MistralConfig, Qwen2Config

kTransformersMajor = int(transformers.__version__.split(".")[0])

kMaxNewTokens = 24
kMinMargin = 1e-2
kMaxTries = 50
kMaxWeightBytes = 300 * 1024
kMaxGoldenBytes = 80 * 1024
kMaxCacheDiff = 1e-4  # cached vs uncached logits of the reference, per step
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


def dense(**overrides):
    """kBase in the Llama-like field names, with a family's own fields on top (4.x rope fields: rope_theta and
    rope_scaling, as most published checkpoints carry them)."""
    fields = {k: v for k, v in kBase.items()}
    fields.update(overrides)
    return fields


def gpt_style(**overrides):
    """kBase in GPT-2 field names: n_embd 64, 4 heads of 16, 2 layers, 128 positions."""
    fields = dict(n_embd=64, n_layer=2, n_head=4, n_positions=128, vocab_size=512, initializer_range=0.1,
                  bos_token_id=1, eos_token_id=2)
    fields.update(overrides)
    return fields


kWindow = 32  # sliding windows shorter than the 40- and 90-token prompts, so that they matter
kLongRopeShort = [1.0, 1.05, 1.1, 1.2, 1.35, 1.5, 1.8, 2.0]
kLongRopeLong = [1.0, 1.3, 1.9, 2.8, 4.0, 6.0, 9.0, 12.0]

# Families beyond Llama/Mistral/Qwen2 (issue G). "fields" is the complete set of config arguments; they are built
# with transformers 4.51's config classes (tools/setup_reference_env.sh) and land under pending/ until supported.
FAMILY_SPECS = {
    # --- dense, Llama-like ---
    "gemma": dict(
        config_class="GemmaConfig", seed=4001, prompt_lengths=[7, 40, 90],
        fields=dense(rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh", rope_theta=10000.0,
                     tie_word_embeddings=True, pad_token_id=0)),
    "gemma2": dict(
        # Small caps (real models: 50 / 30) so that the tanh soft-capping changes these small logits visibly;
        # query_pre_attn_scalar 24 != head_dim so that the attention scale must come from it.
        # greedy="uncached": 4.51's hybrid-cache decoding disagrees with one uncached forward once past the window
        # (logits off by up to 0.8), so the continuation is made without a cache (window mask q - k < 32).
        config_class="Gemma2Config", seed=4002, prompt_lengths=[7, 40, 90], greedy="uncached",
        fields=dense(rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh", rope_theta=10000.0,
                     tie_word_embeddings=True, pad_token_id=0, sliding_window=kWindow, query_pre_attn_scalar=24,
                     attn_logit_softcapping=2.0, final_logit_softcapping=3.0)),
    "gemma3": dict(
        # Text-only Gemma3ForCausalLM. sliding_window_pattern 2: layer 0 local (theta 1e4), layer 1 global
        # (theta 1e6, linear scaling 2 as the larger Gemma3 checkpoints carry with factor 8).
        config_class="Gemma3TextConfig", seed=4003, prompt_lengths=[7, 40, 90], greedy="uncached",
        fields=dense(rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh", rope_theta=1000000.0,
                     rope_local_base_freq=10000.0, rope_scaling={"rope_type": "linear", "factor": 2.0},
                     tie_word_embeddings=True, pad_token_id=0, sliding_window=kWindow, sliding_window_pattern=2,
                     query_pre_attn_scalar=24, final_logit_softcapping=None, attn_logit_softcapping=None)),
    "qwen3": dict(
        config_class="Qwen3Config", seed=4004, prompt_lengths=[7, 40, 90],
        fields=dense(rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True)),
    "phi3": dict(
        config_class="Phi3Config", seed=4005, prompt_lengths=[7, 40, 90],
        fields=dense(rms_norm_eps=1e-5, rope_theta=10000.0, pad_token_id=0, head_dim=None)),
    "phi3_longrope": dict(
        # LongRoPE: the 7-token case stays within original_max_position_embeddings (32) for all 31 positions, the
        # 40- and 90-token prompts are past it from the first forward on, so transformers uses the long factors for
        # the whole sequence (it picks the table from the current length; no case crosses 32 while decoding).
        config_class="Phi3Config", seed=4006, prompt_lengths=[7, 40, 90],
        fields=dense(rms_norm_eps=1e-5, rope_theta=10000.0, pad_token_id=0, head_dim=None,
                     original_max_position_embeddings=32,
                     rope_scaling={"type": "longrope", "short_factor": kLongRopeShort,
                                   "long_factor": kLongRopeLong})),
    "phi3_partial": dict(
        # Phi-4-mini shape: rotary on 75% of each head (12 of 16 dims, so 6 LongRoPE factors), tied embeddings,
        # grouped kv heads; LongRoPE as in phi3_longrope.
        config_class="Phi3Config", seed=4011, prompt_lengths=[7, 40, 90],
        fields=dense(rms_norm_eps=1e-5, rope_theta=10000.0, pad_token_id=0, head_dim=None, tie_word_embeddings=True,
                     partial_rotary_factor=0.75, original_max_position_embeddings=32,
                     rope_scaling={"type": "longrope", "short_factor": kLongRopeShort[:6],
                                   "long_factor": kLongRopeLong[:6]})),
    "mistral_head_dim": dict(
        # Mistral-Nemo shape: head_dim (32) set independently of hidden_size / heads (16), so q_proj is 64 -> 128.
        config_class="MistralConfig", seed=4012, prompt_lengths=[7, 40, 90],
        fields=dense(head_dim=32, intermediate_size=96, rms_norm_eps=1e-5, rope_theta=1000000.0,
                     sliding_window=None)),
    "stablelm": dict(
        # StableLM-2-1.6B shape: LayerNorm, qkv bias, rotary on the first 25% of each head.
        config_class="StableLmConfig", seed=4007, prompt_lengths=[7, 40, 90],
        fields=dense(layer_norm_eps=1e-5, rope_theta=10000.0, partial_rotary_factor=0.25, use_qkv_bias=True,
                     head_dim=None)),
    "stablelm_qknorm_parallel": dict(
        # StableLM-2-12B shape: per-head q/k LayerNorm and parallel attention + MLP residual.
        config_class="StableLmConfig", seed=4008, prompt_lengths=[7, 40, 90],
        fields=dense(layer_norm_eps=1e-5, rope_theta=10000.0, partial_rotary_factor=0.25, use_qkv_bias=False,
                     qk_layernorm=True, use_parallel_residual=True, head_dim=None)),
    "starcoder2": dict(
        config_class="Starcoder2Config", seed=4009, prompt_lengths=[7, 40, 90],
        fields=dense(norm_epsilon=1e-5, rope_theta=10000.0, hidden_act="gelu_pytorch_tanh", use_bias=True,
                     sliding_window=kWindow, tie_word_embeddings=True, head_dim=None)),
    "nemotron": dict(
        config_class="NemotronConfig", seed=4010, prompt_lengths=[7, 40, 90],
        fields=dense(norm_eps=1e-5, rope_theta=10000.0, hidden_act="relu2", partial_rotary_factor=0.5)),
    # --- GPT-style ---
    "gpt2": dict(
        config_class="GPT2Config", seed=5001, prompt_lengths=[7, 40, 90],
        fields=gpt_style(activation_function="gelu_new", layer_norm_epsilon=1e-5)),
    "gpt_bigcode": dict(
        config_class="GPTBigCodeConfig", seed=5002, prompt_lengths=[7, 40, 90],
        fields=gpt_style(activation_function="gelu_pytorch_tanh", layer_norm_epsilon=1e-5, multi_query=True)),
    "gptj": dict(
        config_class="GPTJConfig", seed=5003, prompt_lengths=[7, 40, 90],
        fields=gpt_style(rotary_dim=8, n_inner=128, activation_function="gelu_new", layer_norm_epsilon=1e-5,
                         tie_word_embeddings=False)),
    "gpt_neox": dict(
        config_class="GPTNeoXConfig", seed=5004, prompt_lengths=[7, 40, 90],
        fields=dense(num_key_value_heads=None, head_dim=None, hidden_act="gelu", rotary_pct=0.25,
                     rotary_emb_base=10000, layer_norm_eps=1e-5, use_parallel_residual=True)),
    "gpt_neox_sequential": dict(
        config_class="GPTNeoXConfig", seed=5005, prompt_lengths=[7, 40, 90],
        fields=dense(num_key_value_heads=None, head_dim=None, hidden_act="gelu", rotary_pct=0.5,
                     rotary_emb_base=10000, layer_norm_eps=1e-5, use_parallel_residual=False)),
    "opt": dict(
        # opt-125m shape: pre-LayerNorm, embeddings tied, learned positions offset by 2.
        config_class="OPTConfig", seed=5006, prompt_lengths=[7, 40, 90],
        fields=dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                    max_position_embeddings=128, word_embed_proj_dim=64, do_layer_norm_before=True,
                    activation_function="relu", init_std=0.1, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "opt_proj": dict(
        # opt-350m shape: post-LayerNorm (do_layer_norm_before false, no final norm) and word embeddings of width
        # 32 projected in and out of the 64-wide decoder.
        config_class="OPTConfig", seed=5007, prompt_lengths=[7, 40, 90],
        fields=dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                    max_position_embeddings=128, word_embed_proj_dim=32, do_layer_norm_before=False,
                    activation_function="relu", init_std=0.1, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "phi": dict(
        config_class="PhiConfig", seed=5008, prompt_lengths=[7, 40, 90],
        fields=dense(num_key_value_heads=None, head_dim=None, hidden_act="gelu_new", layer_norm_eps=1e-5,
                     rope_theta=10000.0, partial_rotary_factor=0.5)),
    "falcon_new": dict(
        # falcon-40b shape: new decoder architecture, grouped kv heads, two input LayerNorms (attention, MLP).
        config_class="FalconConfig", seed=5009, prompt_lengths=[7, 40, 90],
        fields=dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=2,
                    new_decoder_architecture=True, num_ln_in_parallel_attn=2, parallel_attn=True, bias=False,
                    alibi=False, ffn_hidden_size=128, layer_norm_epsilon=1e-5, initializer_range=0.1,
                    max_position_embeddings=128, rope_theta=10000.0, bos_token_id=1, eos_token_id=2)),
    "falcon_new_1ln": dict(
        # Falcon2-11B shape: new decoder architecture with ONE input LayerNorm shared by attention and MLP
        # (num_ln_in_parallel_attn 1), grouped kv heads.
        config_class="FalconConfig", seed=5014, prompt_lengths=[7, 40, 90],
        fields=dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=2,
                    new_decoder_architecture=True, num_ln_in_parallel_attn=1, parallel_attn=True, bias=False,
                    alibi=False, ffn_hidden_size=128, layer_norm_epsilon=1e-5, initializer_range=0.1,
                    max_position_embeddings=128, rope_theta=10000.0, bos_token_id=1, eos_token_id=2)),
    "falcon_old": dict(
        # falcon-7b shape: old decoder architecture, multi-query attention, parallel attention + MLP, one LayerNorm.
        config_class="FalconConfig", seed=5010, prompt_lengths=[7, 40, 90],
        fields=dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, multi_query=True,
                    new_decoder_architecture=False, parallel_attn=True, bias=False, alibi=False, ffn_hidden_size=128,
                    layer_norm_epsilon=1e-5, initializer_range=0.1, max_position_embeddings=128,
                    rope_theta=10000.0, bos_token_id=1, eos_token_id=2)),
    "falcon_alibi": dict(
        # falcon-rw-1b shape: ALiBi, full multi-head attention, sequential attention then MLP, biases.
        config_class="FalconConfig", seed=5011, prompt_lengths=[7, 40, 90],
        fields=dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, multi_query=False,
                    new_decoder_architecture=False, parallel_attn=False, bias=True, alibi=True, ffn_hidden_size=128,
                    layer_norm_epsilon=1e-5, initializer_range=0.1, max_position_embeddings=128,
                    bos_token_id=1, eos_token_id=2)),
    "bloom": dict(
        config_class="BloomConfig", seed=5012, prompt_lengths=[7, 40, 90],
        fields=dict(vocab_size=512, hidden_size=64, n_layer=2, n_head=4, layer_norm_epsilon=1e-5,
                    initializer_range=0.1, bos_token_id=1, eos_token_id=2, pad_token_id=0)),
    "bloom_6heads": dict(
        # 6 heads, not a power of two (like the 176B bloom's 112): the ALiBi slopes take the interleaved extra terms.
        config_class="BloomConfig", seed=5013, prompt_lengths=[7, 40, 90],
        fields=dict(vocab_size=512, hidden_size=48, n_layer=2, n_head=6, layer_norm_epsilon=1e-5,
                    initializer_range=0.1, bos_token_id=1, eos_token_id=2, pad_token_id=0)),
    # --- MoE ---
    "mixtral": dict(
        config_class="MixtralConfig", seed=6001, prompt_lengths=[7, 40, 90],
        fields=dense(intermediate_size=32, num_local_experts=4, num_experts_per_tok=2, rms_norm_eps=1e-5,
                     rope_theta=10000.0, sliding_window=None)),
    "qwen2_moe": dict(
        # Shared expert behind a sigmoid gate; top-2 of 4 experts without renormalising the top-k weights.
        config_class="Qwen2MoeConfig", seed=6002, prompt_lengths=[7, 40, 90],
        fields=dense(head_dim=None, intermediate_size=64, moe_intermediate_size=32,
                     shared_expert_intermediate_size=64, num_experts=4, num_experts_per_tok=2, norm_topk_prob=False,
                     decoder_sparse_step=1, rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True)),
    "qwen3_moe": dict(
        config_class="Qwen3MoeConfig", seed=6003, prompt_lengths=[7, 40, 90],
        fields=dense(intermediate_size=64, moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2,
                     norm_topk_prob=True, decoder_sparse_step=1, rms_norm_eps=1e-6, rope_theta=1000000.0)),
    "phimoe": dict(
        # Phi-3.5-MoE shape: LayerNorm, attention and lm_head biases, sparsemixer top-2 routing.
        config_class="PhimoeConfig", seed=6004, prompt_lengths=[7, 40, 90],
        fields=dense(head_dim=None, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2,
                     rms_norm_eps=1e-5, rope_theta=10000.0, attention_bias=True, lm_head_bias=True,
                     sliding_window=None, pad_token_id=0)),
    "phimoe_longrope": dict(
        # Phi-3.5-MoE's rope: LongRoPE with its own cos/sin scales (short_mscale / long_mscale, distinct here so that
        # the choice is visible); as in phi3_longrope only the 7-token case stays within the original 32 positions.
        config_class="PhimoeConfig", seed=6005, prompt_lengths=[7, 40, 90],
        fields=dense(head_dim=None, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2,
                     rms_norm_eps=1e-5, rope_theta=10000.0, attention_bias=True, lm_head_bias=True,
                     sliding_window=None, pad_token_id=0,
                     rope_scaling={"type": "longrope", "short_factor": kLongRopeShort, "long_factor": kLongRopeLong,
                                   "short_mscale": 1.1, "long_mscale": 1.25,
                                   "original_max_position_embeddings": 32})),
}
for _spec in FAMILY_SPECS.values():
    _spec["pending"] = True
    _spec["fields"] = {k: v for k, v in _spec["fields"].items() if v is not None or k in (
        "final_logit_softcapping", "attn_logit_softcapping", "sliding_window")}
MODEL_SPECS.update(FAMILY_SPECS)

kSpecOnlyKeys = {"config_class", "seed", "rope", "prompt_lengths", "v4_config", "saved_dtype", "max_shard_size",
                 "fields", "pending", "greedy"}


def config_accepts(config_class, key):
    if key in inspect.signature(config_class.__init__).parameters:
        return True
    return any(key in getattr(cls, "__annotations__", {}) for cls in config_class.__mro__)


def build_config(config_class, fields, rope):
    """Builds the config: with rope_parameters (rope_theta inside) on transformers 5.x, with top-level rope_theta and
    rope_scaling on 4.x. rope None: the fields already hold the family's own rope fields (or it has none)."""
    fields = dict(fields)
    # head_dim is always hidden / heads here; classes that derive it themselves do not declare it.
    if not config_accepts(config_class, "head_dim"):
        fields.pop("head_dim", None)
    if rope is None:
        return config_class(**fields)
    if kTransformersMajor >= 5:
        return config_class(rope_parameters=dict(rope), **fields)
    legacy = {k: v for k, v in rope.items() if k != "rope_theta"}
    scaling = None if legacy.get("rope_type") == "default" else legacy
    return config_class(rope_scaling=scaling, rope_theta=rope["rope_theta"], **fields)


def v4_rope_fields(config_dict):
    """rope_theta / rope_scaling (4.x names) for a config.json written by transformers 5.x (rope_parameters)."""
    rope = dict(config_dict.get("rope_parameters") or {})
    theta = rope.pop("rope_theta", config_dict.get("rope_theta", 10000.0))
    if rope.get("rope_type", rope.get("type", "default")) == "default":
        return {"rope_theta": theta, "rope_scaling": None}
    return {"rope_theta": theta, "rope_scaling": rope}


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
    """The saved folder reloaded in float32 (eager attention). On transformers 4.x a config.json in the 5.x layout
    (rope_parameters) gets its rope fields translated first; 4.x would silently use the default rope otherwise."""
    kwargs = {"attn_implementation": "eager"}
    with open(os.path.join(model_dir, "config.json")) as f:
        config_dict = json.load(f)
    if kTransformersMajor < 5 and "rope_parameters" in config_dict:
        config = AutoConfig.from_pretrained(model_dir)
        for key, value in v4_rope_fields(config_dict).items():
            setattr(config, key, value)
        kwargs["config"] = config
    dtype_key = "dtype" if kTransformersMajor >= 5 else "torch_dtype"
    kwargs[dtype_key] = torch.float32
    model = AutoModelForCausalLM.from_pretrained(model_dir, **kwargs)
    model = model.to("cpu").eval()
    for name, param in model.named_parameters():
        if param.dtype != torch.float32:
            raise RuntimeError(f"{model_dir}: reloaded {name} has dtype {param.dtype}, expected float32")
    return model


def rotary_tables(model):
    """(name, module) of every rotary embedding module that holds an inv_freq table, global one first."""
    found = [(n, m) for n, m in model.named_modules() if isinstance(getattr(m, "inv_freq", None), torch.Tensor)]
    return sorted(found, key=lambda item: ("local" in item[0], item[0]))


def rope_record(model, config):
    """The golden's rope fields: type, inv_freq of the (global) table, attention_scaling, and the extra tables."""
    scaling = getattr(config, "rope_scaling", None) or {}
    rope_type = scaling.get("rope_type", scaling.get("type", "default"))
    tables = rotary_tables(model)
    # Learned positions or ALiBi (Falcon builds a rotary module even when alibi is on; it is unused then).
    if getattr(config, "alibi", False) or config.model_type in ("gpt2", "gpt_bigcode", "opt", "bloom"):
        return {"rope_type": "none", "inv_freq": [], "attention_scaling": 1.0}
    if tables:
        _, rotary = tables[0]
        inv_freq, attention_scaling = rotary.inv_freq, getattr(rotary, "attention_scaling", 1.0)
    elif config.model_type == "gptj":  # a precomputed sin/cos table of rotary_dim, theta 10000
        dim = config.rotary_dim
        inv_freq, attention_scaling = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)), 1.0
    else:  # computed on the fly in forward (PhiMoE)
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
        inv_freq, attention_scaling = ROPE_INIT_FUNCTIONS[rope_type](config, "cpu")
    record = {"rope_type": rope_type, "inv_freq": [float(v) for v in inv_freq.float().tolist()],
              "attention_scaling": float(attention_scaling)}
    for other_name, other in tables[1:]:
        if "local" in other_name:
            record["inv_freq_local"] = [float(v) for v in other.inv_freq.float().tolist()]
    if rope_type == "longrope":
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
        original = getattr(config, "original_max_position_embeddings", None) or scaling.get(
            "original_max_position_embeddings")
        long_freq, long_scaling = ROPE_INIT_FUNCTIONS["longrope"](config, "cpu", seq_len=original + 1)
        record["inv_freq_long"] = [float(v) for v in long_freq.float().tolist()]
        record["attention_scaling_long"] = float(long_scaling)
        if "short_mscale" in scaling:  # PhiMoE scales cos/sin by its own short/long mscale instead
            record["attention_scaling"] = float(scaling["short_mscale"])
            record["attention_scaling_long"] = float(scaling["long_mscale"])
    return record


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


def eos_ids(model):
    eos = model.generation_config.eos_token_id
    return eos if isinstance(eos, list) else [eos]


def run_reference(model, prompt_ids, max_new_tokens=kMaxNewTokens, uncached=False):
    """Returns (last_logits list, greedy ids, per-step margins) of the fp32 model for one prompt.

    uncached: greedy by one full forward per step (eos masked for all steps, as min_new_tokens does) instead of
    generate with the KV cache, for models whose cached decoding in the oracle's transformers is wrong."""
    input_ids = torch.tensor([prompt_ids], dtype=torch.long)
    attention_mask = torch.ones_like(input_ids)
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[0, -1].float()
        if uncached:
            ids, greedy, margins = list(prompt_ids), [], []
            for _ in range(max_new_tokens):
                scores = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()
                scores[eos_ids(model)] = float("-inf")
                top = torch.topk(scores, 2)
                greedy.append(int(top.indices[0]))
                margins.append(float(top.values[0] - top.values[1]))
                ids.append(greedy[-1])
            return [round7(v) for v in logits.tolist()], greedy, margins
        # The model's own cache kind (Gemma2/3: "hybrid", windowed caches for the sliding layers); the generation
        # config saved with the model does not carry it.
        cache = {}
        if getattr(model.config, "cache_implementation", None):
            cache["cache_implementation"] = model.config.cache_implementation
        out = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                             min_new_tokens=max_new_tokens, do_sample=False, output_scores=True,
                             return_dict_in_generate=True, **cache)
    greedy = out.sequences[0, len(prompt_ids):].tolist()
    margins = []
    for step_scores in out.scores:
        top = torch.topk(step_scores[0].float(), 2).values
        margins.append(float(top[0] - top[1]))
    if len(greedy) != max_new_tokens or len(margins) != max_new_tokens:
        raise RuntimeError(f"generate returned {len(greedy)} tokens / {len(margins)} scores, "
                           f"expected {max_new_tokens}")
    # The cached decode must agree with one uncached forward over prompt + greedy (guards against cache bugs of
    # the reference itself, e.g. 4.51's Gemma2/3 hybrid cache past the window).
    full = torch.tensor([list(prompt_ids) + greedy[:-1]])
    with torch.no_grad():
        uncached_logits = model(input_ids=full, use_cache=False).logits[0, len(prompt_ids) - 1:].float()
    for step, step_scores in enumerate(out.scores):
        cached = step_scores[0].float()
        finite = torch.isfinite(cached)
        diff = float((cached[finite] - uncached_logits[step][finite]).abs().max())
        if diff > kMaxCacheDiff:
            raise RuntimeError(f"cached decoding differs from the uncached forward by {diff:.3g} at step {step} "
                               f"(prompt of {len(prompt_ids)} tokens); use greedy='uncached' for this spec")
    return [round7(v) for v in logits.tolist()], greedy, margins


def find_case(model, base_seed, length, vocab_size, uncached=False):
    """Draws prompts until every greedy step has a margin >= kMinMargin; returns the case dict."""
    for attempt in range(kMaxTries):
        seed = base_seed + attempt
        prompt = random_prompt(seed, length, vocab_size)
        last_logits, greedy, margins = run_reference(model, prompt, uncached=uncached)
        if min(margins) >= kMinMargin:
            return {"prompt_ids": prompt, "last_logits": last_logits, "greedy_ids": greedy,
                    "margins": [round7(m) for m in margins], "seed": seed, "tries": attempt + 1}
    raise RuntimeError(f"no prompt of length {length} with all margins >= {kMinMargin} in {kMaxTries} tries")


def window_effect(model_dir, case):
    """Max |logit difference| between the model and the same weights without a sliding window (Gemma's mask code
    needs a number: a window longer than any prompt)."""
    dtype_key = "dtype" if kTransformersMajor >= 5 else "torch_dtype"
    ids = torch.tensor([case["prompt_ids"]], dtype=torch.long)
    for window in (None, 1 << 20):
        try:
            full = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager", sliding_window=window,
                                                        **{dtype_key: torch.float32}).eval()
            logits = full(input_ids=ids, use_cache=False).logits[0, -1].float()
            return float((logits - torch.tensor(case["last_logits"])).abs().max())
        except Exception:
            if window is not None:
                raise
    raise AssertionError("unreachable")


def transformers_source():
    """{"transformers_source": "<repo>@<commit>"} when the oracle of setup_reference_env.sh recorded it."""
    path = os.path.join(os.path.dirname(transformers.__file__), "ORACLE_SOURCE")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {"transformers_source": f.read().strip()}


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
    if "fields" in spec:
        fields = dict(spec["fields"])
    else:
        fields = dict(kBase)
        fields.update({k: v for k, v in spec.items() if k not in kSpecOnlyKeys})
    saved_dtype = spec.get("saved_dtype", torch.bfloat16)
    config_class = spec["config_class"]
    if isinstance(config_class, str):
        config_class = getattr(transformers, config_class)
    config = build_config(config_class, fields, spec.get("rope"))
    if spec.get("pending"):
        out_root = os.path.join(out_root, "pending")
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
    rope = rope_record(model, model.config)
    tables = rotary_tables(model)
    inv_freq_before = [t.inv_freq.clone() for _, t in tables]

    vocab = fields["vocab_size"]
    cases = []
    for index, length in enumerate(spec["prompt_lengths"]):
        cases.append(find_case(model, spec["seed"] * 1000 + index * 100, length, vocab,
                               uncached=spec.get("greedy") == "uncached"))
    if fields.get("sliding_window"):
        try:
            effect = f"{window_effect(model_dir, cases[-1]):.4g}"
        except Exception as exc:  # some families cannot be built without a window; the figure is informative only
            effect = f"not measured ({exc})"
        print(f"{name}: sliding-window effect on the longest case's last logits: {effect} "
              f"(0 would mean the window is not applied)", flush=True)
    # Dynamic rope may rewrite inv_freq in place past its original length; the goldens must not have done so.
    # (LongRoPE switches tables by design; its golden records both.)
    if rope["rope_type"] != "longrope":
        for (table_name, table), before in zip(tables, inv_freq_before):
            if not torch.equal(table.inv_freq, before):
                raise RuntimeError(f"{name}: {table_name}.inv_freq changed while generating the cases")

    dtype_name = str(saved_dtype).replace("torch.", "")
    golden = {
        "name": name,
        "architecture": type(model).__name__,
        "rope_type": rope["rope_type"],
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        **transformers_source(),
        "saved_dtype": dtype_name,
        "model_seed": spec["seed"],
        "eos_token_id": fields["eos_token_id"],
        "max_new_tokens": kMaxNewTokens,
        "min_new_tokens": kMaxNewTokens,
        **({"greedy_mode": "uncached"} if spec.get("greedy") == "uncached" else {}),
        "inv_freq": rope["inv_freq"],
        "attention_scaling": rope["attention_scaling"],
        "cases": cases,
    }
    golden.update({k: v for k, v in rope.items() if k not in golden})
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
    print(f"{name:16s} {type(model).__name__:18s} rope={rope['rope_type']:8s} dtype={dtype_name:8s} "
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
