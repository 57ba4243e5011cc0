// FalconForCausalLM. New decoder architecture (40b, 180b): num_kv_heads groups, fused query_key_value laid out
// per group [q of its heads | k | v], ln_attn and ln_mlp feeding attention and MLP in parallel (one shared
// input_layernorm when num_ln_in_parallel_attn is 1). Old architecture (7b, rw): [q | k | v] with one kv head
// (multi_query) else per head [q_h | k_h | v_h]; parallel_attn shares input_layernorm, otherwise sequential with
// post_attention_layernorm. Rotary (neox), or ALiBi added before the 1/sqrt(head_dim) scaling (alibi).
// Biases on every linear with `bias`; LayerNorms always have them; head tied by default.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> falcon(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "FalconForCausalLM";
    TACO_ASSIGN_OR_RETURN(bool new_architecture, bool_or(config, "new_decoder_architecture", false));
    TACO_ASSIGN_OR_RETURN(bool multi_query, bool_or(config, "multi_query", true));
    TACO_ASSIGN_OR_RETURN(bool parallel_attn, bool_or(config, "parallel_attn", true));
    TACO_ASSIGN_OR_RETURN(bool alibi, bool_or(config, "alibi", false));
    TACO_ASSIGN_OR_RETURN(bool bias, bool_or(config, "bias", false));
    TACO_ASSIGN_OR_RETURN(int64_t num_ln, int_or(config, "num_ln_in_parallel_attn", new_architecture ? 2 : 1));
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.attention.qkv_bias = spec.attention.o_bias = spec.mlp.bias = bias;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.mlp.gated = false;
    if (alibi) {
        spec.attention.positions = PositionEncoding::kAlibi;
        spec.attention.alibi_scaled = true;
    }
    spec.base_model_prefix = "transformer";
    WeightNames& n = spec.names;
    n.embed = "transformer.word_embeddings.weight";
    n.final_norm = "transformer.ln_f.weight";
    n.qkv_proj = "transformer.h.{}.self_attention.query_key_value";
    n.o_proj = "transformer.h.{}.self_attention.dense";
    n.up_proj = "transformer.h.{}.mlp.dense_h_to_4h";
    n.down_proj = "transformer.h.{}.mlp.dense_4h_to_h";
    if (new_architecture) {
        spec.attention.fused_qkv = true;
        spec.attention.qkv_layout = QkvLayout::kPerKvGroup;
        if (num_ln == 2) {
            spec.residual = ResidualLayout::kParallelOwnNorms;
            n.input_norm = "transformer.h.{}.ln_attn.weight";
            n.post_attention_norm = "transformer.h.{}.ln_mlp.weight";
        } else if (num_ln == 1 && parallel_attn) {
            spec.residual = ResidualLayout::kParallelSharedNorm;
            n.input_norm = "transformer.h.{}.input_layernorm.weight";
            n.post_attention_norm.clear();
        } else {
            return error(
                "config.json: new_decoder_architecture with num_ln_in_parallel_attn = {} and parallel_attn = "
                "{} is not supported",
                num_ln, parallel_attn);
        }
    } else {
        spec.attention.fused_qkv = true;
        spec.attention.qkv_layout = multi_query ? QkvLayout::kConcatenated : QkvLayout::kPerHead;
        n.input_norm = "transformer.h.{}.input_layernorm.weight";
        if (parallel_attn) {
            spec.residual = ResidualLayout::kParallelSharedNorm;
            n.post_attention_norm.clear();
        } else {
            n.post_attention_norm = "transformer.h.{}.post_attention_layernorm.weight";
        }
    }
    return spec;
}

}  // namespace taco::archs
