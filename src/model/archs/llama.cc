// LlamaForCausalLM (Llama 2/3/3.1, Yi): RMSNorm, optional attention/MLP biases (attention_bias, mlp_bias),
// SiLU-gated MLP, rotary of every scaling kind, optional tied embeddings.
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> llama(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "LlamaForCausalLM";
    spec.attention.qkv_bias = config.attention_bias;
    spec.attention.o_bias = config.attention_bias;
    spec.mlp.bias = config.mlp_bias;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.uses_sliding_window = false;
    return spec;
}

}  // namespace taco::archs
