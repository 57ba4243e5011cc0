// Qwen3MoeForCausalLM (Qwen3-30B-A3B, Qwen3-235B-A22B): Qwen3's attention (RMSNorm over each q/k head before rotary,
// attention_bias on q/k/v/o) with Qwen2-MoE's layer pattern and names but no shared expert; top-k renormalised when
// norm_topk_prob (true in the published checkpoints, false by transformers' default).
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> qwen3_moe(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "Qwen3MoeForCausalLM";
    spec.qkv_bias = config.attention_bias;
    spec.o_bias = config.attention_bias;
    spec.qk_norm = true;
    TACO_ASSIGN_OR_RETURN(spec.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.tied_embeddings = config.tie_word_embeddings;
    spec.uses_sliding_window = true;
    TACO_ASSIGN_OR_RETURN(spec.moe, qwen_moe_spec(config));
    return spec;
}

}  // namespace taco::archs
