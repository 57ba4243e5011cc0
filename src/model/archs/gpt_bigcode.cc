// GPTBigCodeForCausalLM (SantaCoder, StarCoder): GPT-2's block with nn.Linear weights and multi-query
// attention: c_attn is [q | k | v] with one kv head (multi_query), else per head [q_h | k_h | v_h].
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> gpt_bigcode(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "GPTBigCodeForCausalLM";
    TACO_ASSIGN_OR_RETURN(bool cross_attention, bool_or(config, "add_cross_attention", false));
    if (cross_attention) return error("config.json: 'add_cross_attention' is not supported");
    TACO_ASSIGN_OR_RETURN(bool multi_query, bool_or(config, "multi_query", true));
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.attention.qkv_bias = spec.attention.o_bias = spec.mlp.bias = true;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.positions = PositionEncoding::kLearned;
    spec.attention.fused_qkv = true;
    spec.attention.qkv_layout = multi_query ? QkvLayout::kConcatenated : QkvLayout::kPerHead;
    spec.mlp.gated = false;
    TACO_ASSIGN_OR_RETURN(bool scale_attn_weights, bool_or(config, "scale_attn_weights", true));
    if (!scale_attn_weights) spec.attention.scale = 1.0f;
    set_gpt2_names(spec);
    return spec;
}

}  // namespace taco::archs
