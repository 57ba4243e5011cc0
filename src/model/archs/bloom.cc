// BloomForCausalLM: ALiBi (no position embeddings), a LayerNorm right after the word embeddings, fused
// query_key_value laid out per head [q_h | k_h | v_h], biases everywhere, tanh-gelu MLP, tied head.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> bloom(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "BloomForCausalLM";
    TACO_ASSIGN_OR_RETURN(bool residual_post_norm, bool_or(config, "apply_residual_connection_post_layernorm", false));
    if (residual_post_norm)
        return error("config.json: 'apply_residual_connection_post_layernorm' = true is not supported");
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.attention.qkv_bias = spec.attention.o_bias = spec.mlp.bias = true;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.positions = PositionEncoding::kAlibi;
    spec.attention.fused_qkv = true;
    spec.attention.qkv_layout = QkvLayout::kPerHead;
    spec.mlp.gated = false;
    spec.base_model_prefix = "transformer";
    WeightNames& n = spec.names;
    n.embed = "transformer.word_embeddings.weight";
    n.embed_norm = "transformer.word_embeddings_layernorm.weight";
    n.final_norm = "transformer.ln_f.weight";
    n.input_norm = "transformer.h.{}.input_layernorm.weight";
    n.post_attention_norm = "transformer.h.{}.post_attention_layernorm.weight";
    n.qkv_proj = "transformer.h.{}.self_attention.query_key_value";
    n.o_proj = "transformer.h.{}.self_attention.dense";
    n.up_proj = "transformer.h.{}.mlp.dense_h_to_4h";
    n.down_proj = "transformer.h.{}.mlp.dense_4h_to_h";
    return spec;
}

}  // namespace taco::archs
