// One builder per family; each lives in its own file of this folder and is listed in arch_registry.cc.
#pragma once

#include "model/arch_spec.h"

namespace taco::archs {

// Llama-style families
Result<ArchSpec> llama(const ModelConfig& config);
Result<ArchSpec> mistral(const ModelConfig& config);
Result<ArchSpec> qwen2(const ModelConfig& config);
Result<ArchSpec> gemma(const ModelConfig& config);
Result<ArchSpec> gemma2(const ModelConfig& config);
Result<ArchSpec> gemma3(const ModelConfig& config);
Result<ArchSpec> qwen3(const ModelConfig& config);
Result<ArchSpec> phi3(const ModelConfig& config);
Result<ArchSpec> stablelm(const ModelConfig& config);
Result<ArchSpec> starcoder2(const ModelConfig& config);
Result<ArchSpec> nemotron(const ModelConfig& config);

// GPT-style families
Result<ArchSpec> gpt2(const ModelConfig& config);
Result<ArchSpec> gpt_bigcode(const ModelConfig& config);
Result<ArchSpec> gpt_neox(const ModelConfig& config);
Result<ArchSpec> gptj(const ModelConfig& config);
Result<ArchSpec> opt(const ModelConfig& config);
Result<ArchSpec> phi(const ModelConfig& config);
Result<ArchSpec> falcon(const ModelConfig& config);
Result<ArchSpec> bloom(const ModelConfig& config);

// MoE
Result<ArchSpec> mixtral(const ModelConfig& config);
Result<ArchSpec> qwen2_moe(const ModelConfig& config);
Result<ArchSpec> qwen3_moe(const ModelConfig& config);
Result<ArchSpec> phimoe(const ModelConfig& config);

// Remote-code families
Result<ArchSpec> internlm(const ModelConfig& config);
Result<ArchSpec> baichuan(const ModelConfig& config);
Result<ArchSpec> qwen(const ModelConfig& config);
Result<ArchSpec> xverse(const ModelConfig& config);  // unverified: no published modeling code
Result<ArchSpec> chatglm(const ModelConfig& config);
Result<ArchSpec> internlm2(const ModelConfig& config);
Result<ArchSpec> baichuan2(const ModelConfig& config);

// Shared by several builders.
// Layer i slides unless (i + 1) % pattern == 0 (Gemma2: 2, Gemma3: sliding_window_pattern).
std::vector<LayerAttention> sliding_pattern_layers(const ModelConfig& config, int64_t pattern);
Result<MoeSpec> qwen_moe_spec(const ModelConfig& config);  // Qwen2/Qwen3 MoE layer pattern and names
// GPT-2's tensor names (transformer.wte/wpe/h.{}.ln_1/attn.c_attn/...), also GPTBigCode's.
void set_gpt2_names(ArchSpec& spec);

}  // namespace taco::archs
