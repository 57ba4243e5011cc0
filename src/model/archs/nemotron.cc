// NemotronForCausalLM: LayerNorm1p (LayerNorm with weight + 1 and a bias; norm_eps), a non-gated squared-ReLU MLP
// up_proj -> relu2 -> down_proj, partial rotary (partial_rotary_factor), optional attention/MLP biases.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> nemotron(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "NemotronForCausalLM";
    spec.norm = NormKind::kLayerNorm;
    spec.norm_bias = true;
    spec.norm_weight_offset = 1.0f;
    TACO_ASSIGN_OR_RETURN(spec.norm_eps, required_number(config, "norm_eps"));
    spec.qkv_bias = config.attention_bias;
    spec.o_bias = config.attention_bias;
    spec.mlp_bias = config.mlp_bias;
    spec.gated_mlp = false;
    TACO_ASSIGN_OR_RETURN(spec.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.tied_embeddings = config.tie_word_embeddings;
    return spec;
}

}  // namespace taco::archs
