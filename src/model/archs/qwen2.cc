// Qwen2ForCausalLM: Llama's block with biases on q/k/v (not o), often tied embeddings, and an optional
// sliding window on layers >= max_window_layers (use_sliding_window).
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> qwen2(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "Qwen2ForCausalLM";
    spec.attention.qkv_bias = true;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.uses_sliding_window = true;
    return spec;
}

}  // namespace taco::archs
