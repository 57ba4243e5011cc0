// ChatGLMModel / ChatGLMForConditionalGeneration (ChatGLM2/3; remote code THUDM/ChatGLM3 modeling_chatglm.py):
// RMSNorm (or LayerNorm when `rmsnorm` is false), q/k/v fused in self_attention.query_key_value (rows
// [q | k | v] with multi_query_group_num kv heads; per head [q_h | k_h | v_h] without multi-query attention), a bias on
// it when add_qkv_bias or add_bias_linear, the MLP's gate and up fused in dense_h_to_4h (rows [gate | up], silu-gated),
// and rotary on the first half of each head as interleaved (even, odd) pairs. The config keys (num_layers, kv_channels,
// ffn_hidden_size, ...) are mapped by remote_config_keys.cc.
#include <nlohmann/json.hpp>

#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> chatglm(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = config.architecture;
    TACO_ASSIGN_OR_RETURN(bool rmsnorm, bool_or(config, "rmsnorm", true));
    spec.norm.kind = rmsnorm ? NormKind::kRmsNorm : NormKind::kLayerNorm;
    spec.norm.bias = !rmsnorm;  // torch.nn.LayerNorm
    TACO_ASSIGN_OR_RETURN(bool post_layer_norm, bool_or(config, "post_layer_norm", true));
    TACO_ASSIGN_OR_RETURN(bool residual_after_norm, bool_or(config, "apply_residual_connection_post_layernorm", false));
    if (!post_layer_norm || residual_after_norm)
        return error(
            "config.json of {}: only post_layer_norm true with apply_residual_connection_post_layernorm false is "
            "supported",
            config.architecture);
    if (config.raw.contains("pre_seq_len") && !config.raw.at("pre_seq_len").is_null())
        return error("config.json of {}: prefix tuning ('pre_seq_len') is not supported", config.architecture);
    TACO_ASSIGN_OR_RETURN(bool add_bias_linear, bool_or(config, "add_bias_linear", false));
    TACO_ASSIGN_OR_RETURN(bool add_qkv_bias, bool_or(config, "add_qkv_bias", false));
    spec.attention.qkv_bias = add_bias_linear || add_qkv_bias;
    spec.attention.o_bias = add_bias_linear;
    spec.mlp.bias = add_bias_linear;
    spec.attention.fused_qkv = true;
    // Without multi-query attention, query_key_value is Megatron's per-head [q_h | k_h | v_h] layout.
    TACO_ASSIGN_OR_RETURN(bool multi_query, bool_or(config, "multi_query_attention", false));
    if (!multi_query) spec.attention.qkv_layout = QkvLayout::kPerHead;
    spec.mlp.fused_gate_up = true;
    spec.attention.neox_rotary = false;
    spec.head.tied_embeddings = false;
    spec.ignored_tensor_suffixes = {"rotary_pos_emb.inv_freq"};
    WeightNames& n = spec.names;
    n.embed = "transformer.embedding.word_embeddings.weight";
    n.final_norm = "transformer.encoder.final_layernorm.weight";
    n.lm_head = "transformer.output_layer.weight";
    n.input_norm = "transformer.encoder.layers.{}.input_layernorm.weight";
    n.post_attention_norm = "transformer.encoder.layers.{}.post_attention_layernorm.weight";
    n.qkv_proj = "transformer.encoder.layers.{}.self_attention.query_key_value";
    n.o_proj = "transformer.encoder.layers.{}.self_attention.dense";
    n.gate_up_proj = "transformer.encoder.layers.{}.mlp.dense_h_to_4h";
    n.down_proj = "transformer.encoder.layers.{}.mlp.dense_4h_to_h";
    return spec;
}

}  // namespace taco::archs
