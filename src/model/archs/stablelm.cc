// StableLmForCausalLM: LayerNorm with bias (layer_norm_eps), partial rotary (partial_rotary_factor), optional q/k/v
// biases (use_qkv_bias), optional LayerNorm per q/k head with its own weight (qk_layernorm) and optional parallel
// residual (use_parallel_residual: attention and MLP both read the input norm; no post-attention norm).
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> stablelm(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "StableLmForCausalLM";
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    TACO_ASSIGN_OR_RETURN(spec.norm.eps, required_number(config, "layer_norm_eps"));
    TACO_ASSIGN_OR_RETURN(spec.attention.qkv_bias, bool_or(config, "use_qkv_bias", false));
    TACO_ASSIGN_OR_RETURN(spec.attention.qk_norm, bool_or(config, "qk_layernorm", false));
    spec.attention.qk_norm_per_head = true;
    spec.names.q_norm = "model.layers.{}.self_attn.q_layernorm.norms.{h}.weight";
    spec.names.k_norm = "model.layers.{}.self_attn.k_layernorm.norms.{h}.weight";
    TACO_ASSIGN_OR_RETURN(bool parallel, bool_or(config, "use_parallel_residual", false));
    spec.residual = parallel ? ResidualLayout::kParallelSharedNorm : ResidualLayout::kSequential;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    return spec;
}

}  // namespace taco::archs
