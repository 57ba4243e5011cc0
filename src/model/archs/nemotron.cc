// NemotronForCausalLM: LayerNorm1p (LayerNorm with weight + 1 and a bias; norm_eps), a non-gated squared-ReLU MLP
// up_proj -> relu2 -> down_proj, partial rotary (partial_rotary_factor), optional attention/MLP biases.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> nemotron(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "NemotronForCausalLM";
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.norm.weight_offset = 1.0f;
    TACO_ASSIGN_OR_RETURN(spec.norm.eps, required_number(config, "norm_eps"));
    spec.attention.qkv_bias = config.attention_bias;
    spec.attention.o_bias = config.attention_bias;
    spec.mlp.bias = config.mlp_bias;
    spec.mlp.gated = false;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    return spec;
}

}  // namespace taco::archs
