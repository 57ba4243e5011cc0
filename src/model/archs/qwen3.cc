// Qwen3ForCausalLM: Llama's block with RMSNorm over each q/k head before rotary, optional attention biases
// (attention_bias) and Qwen2's optional sliding window (layer_types / use_sliding_window + max_window_layers).
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> qwen3(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "Qwen3ForCausalLM";
    spec.attention.qkv_bias = config.attention_bias;
    spec.attention.o_bias = config.attention_bias;
    spec.attention.qk_norm = true;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.uses_sliding_window = true;
    return spec;
}

}  // namespace taco::archs
