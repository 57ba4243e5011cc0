// GemmaForCausalLM: Llama's block with RMSNorm weights stored as (weight - 1), embeddings scaled by sqrt(hidden),
// a gelu_pytorch_tanh gated MLP, head_dim from the config and (by default) tied embeddings.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ops::Activation> gemma_activation(const ModelConfig& config) {
    // Gemma configs name the MLP activation `hidden_activation` (Gemma2/3 only have that key); Gemma 1 configs
    // may carry an older `hidden_act` beside it.
    TACO_ASSIGN_OR_RETURN(std::string name, string_or(config, "hidden_activation", ""));
    if (name.empty()) name = config.hidden_act;
    return activation_from_name(name, "config.json");
}

Result<ArchSpec> gemma(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "GemmaForCausalLM";
    spec.norm_weight_offset = 1.0f;
    spec.scale_embeddings = true;
    spec.qkv_bias = config.attention_bias;
    spec.o_bias = config.attention_bias;
    TACO_ASSIGN_OR_RETURN(spec.activation, gemma_activation(config));
    TACO_ASSIGN_OR_RETURN(spec.tied_embeddings, bool_or(config, "tie_word_embeddings", true));
    return spec;
}

}  // namespace taco::archs
