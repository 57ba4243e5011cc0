// MistralForCausalLM: Llama's block with a sliding attention window (config.sliding_window) and no biases.
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> mistral(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "MistralForCausalLM";
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.uses_sliding_window = true;
    return spec;
}

}  // namespace taco::archs
