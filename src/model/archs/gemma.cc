// GemmaForCausalLM: Llama's block with RMSNorm weights stored as (weight - 1), embeddings scaled by sqrt(hidden),
// a gelu_pytorch_tanh gated MLP, head_dim from the config and (by default) tied embeddings.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> gemma(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "GemmaForCausalLM";
    spec.norm.weight_offset = 1.0f;
    spec.embedding.scale = true;
    spec.attention.qkv_bias = config.attention_bias;
    spec.attention.o_bias = config.attention_bias;
    // As transformers' GemmaMLP: `hidden_act` (GemmaConfig's default gelu_pytorch_tanh when absent); a
    // `hidden_activation` beside it is not read there.
    TACO_ASSIGN_OR_RETURN(std::string act, string_or(config, "hidden_act", "gelu_pytorch_tanh"));
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(act, "config.json"));
    TACO_ASSIGN_OR_RETURN(spec.head.tied_embeddings, bool_or(config, "tie_word_embeddings", true));
    return spec;
}

}  // namespace taco::archs
