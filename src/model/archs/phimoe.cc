// PhiMoEForCausalLM / PhimoeForCausalLM (Phi-3.5-MoE): LayerNorm with biases (eps rms_norm_eps), attention biases on
// q/k/v/o (attention_bias), an optional lm_head bias (lm_head_bias), and a sparse MoE block on every layer named as
// Mixtral's (block_sparse_moe.gate, experts.{e}.w1/w3/w2) but routed by sparsemixer: top-2 only, each weight a softmax
// over the logits within 2 * router_jitter_noise (relative) of that round's maximum, not renormalised.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> phimoe(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = config.architecture;  // PhiMoEForCausalLM (published) or PhimoeForCausalLM (transformers)
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.attention.qkv_bias = config.attention_bias;
    spec.attention.o_bias = config.attention_bias;
    TACO_ASSIGN_OR_RETURN(spec.head.bias, bool_or(config, "lm_head_bias", false));
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.uses_sliding_window = true;
    // Phi-3.5-MoE's LongRoPE scales cos/sin by short_mscale / long_mscale (RopeConfig) instead of Phi3's factor.
    if (config.rope.type == RopeType::kLongRope && (!config.rope.short_mscale || !config.rope.long_mscale))
        return error("config.json: PhiMoE's 'rope_scaling' of type longrope needs 'short_mscale' and 'long_mscale'");
    TACO_ASSIGN_OR_RETURN(spec.moe,
                          basic_moe_spec(config, "num_local_experts", config.intermediate_size, "intermediate_size"));
    if (spec.moe.top_k != 2)
        return error("config.json: PhiMoE's sparsemixer routes exactly 2 experts, 'num_experts_per_tok' is {}",
                     spec.moe.top_k);
    spec.moe.routing = MoeRouting::kSparseMixer;
    spec.moe.sparsemixer_eps = float(config.router_jitter_noise.value_or(0.01));
    spec.moe.names.routers = {"gate", "router"};
    return spec;
}

}  // namespace taco::archs
