// Starcoder2ForCausalLM: LayerNorm with bias (norm_epsilon), biases on every linear layer (use_bias), a non-gated
// MLP c_fc -> gelu -> c_proj, a sliding window, and (by default) tied embeddings.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> starcoder2(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "Starcoder2ForCausalLM";
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    TACO_ASSIGN_OR_RETURN(spec.norm.eps, required_number(config, "norm_epsilon"));
    TACO_ASSIGN_OR_RETURN(bool use_bias, bool_or(config, "use_bias", true));
    spec.attention.qkv_bias = spec.attention.o_bias = spec.mlp.bias = use_bias;
    spec.mlp.gated = false;
    spec.names.up_proj = "model.layers.{}.mlp.c_fc";
    spec.names.down_proj = "model.layers.{}.mlp.c_proj";
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    TACO_ASSIGN_OR_RETURN(spec.head.tied_embeddings, bool_or(config, "tie_word_embeddings", true));
    spec.attention.uses_sliding_window = true;
    return spec;
}

}  // namespace taco::archs
