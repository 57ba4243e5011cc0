// GPTNeoXForCausalLM (Pythia, GPT-NeoX-20B): fused query_key_value laid out per head [q_h | k_h | v_h], partial
// neox rotary (rotary_pct), LayerNorm with biases, gelu MLP without a gate, parallel residual unless
// use_parallel_residual is false, untied embed_out.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> gpt_neox(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "GPTNeoXForCausalLM";
    TACO_ASSIGN_OR_RETURN(bool parallel, bool_or(config, "use_parallel_residual", true));
    TACO_ASSIGN_OR_RETURN(bool attention_bias, bool_or(config, "attention_bias", true));
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.attention.qkv_bias = spec.attention.o_bias = attention_bias;
    spec.mlp.bias = true;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.fused_qkv = true;
    spec.attention.qkv_layout = QkvLayout::kPerHead;
    spec.mlp.gated = false;
    spec.residual = parallel ? ResidualLayout::kParallelOwnNorms : ResidualLayout::kSequential;
    spec.base_model_prefix = "gpt_neox";
    WeightNames& n = spec.names;
    n.embed = "gpt_neox.embed_in.weight";
    n.lm_head = "embed_out.weight";
    n.final_norm = "gpt_neox.final_layer_norm.weight";
    n.input_norm = "gpt_neox.layers.{}.input_layernorm.weight";
    n.post_attention_norm = "gpt_neox.layers.{}.post_attention_layernorm.weight";
    n.qkv_proj = "gpt_neox.layers.{}.attention.query_key_value";
    n.o_proj = "gpt_neox.layers.{}.attention.dense";
    n.up_proj = "gpt_neox.layers.{}.mlp.dense_h_to_4h";
    n.down_proj = "gpt_neox.layers.{}.mlp.dense_4h_to_h";
    spec.ignored_tensor_suffixes = {"rotary_emb.inv_freq", ".attention.bias", ".attention.masked_bias"};
    return spec;
}

}  // namespace taco::archs
