// MixtralForCausalLM: Mistral's attention (optional sliding window) with a sparse MoE block on every layer:
// router block_sparse_moe.gate, experts block_sparse_moe.experts.{e}.w1 (gate) / w3 (up) / w2 (down) of
// intermediate_size, softmax over all num_local_experts logits, top num_experts_per_tok, renormalised.
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> mixtral(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "MixtralForCausalLM";
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.uses_sliding_window = true;
    TACO_ASSIGN_OR_RETURN(spec.moe,
                          basic_moe_spec(config, "num_local_experts", config.intermediate_size, "intermediate_size"));
    spec.moe.routing = MoeRouting::kSoftmaxTopK;
    spec.moe.renormalize = true;
    return spec;
}

}  // namespace taco::archs
