// Qwen2MoeForCausalLM (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2's attention (q/k/v biases unless qkv_bias is false,
// optional sliding window) with MoE layers: router mlp.gate, experts mlp.experts.{e}.{gate,up,down}_proj of
// moe_intermediate_size, softmax top-k renormalised only when norm_topk_prob, plus a shared expert
// (shared_expert_intermediate_size) scaled by sigmoid(mlp.shared_expert_gate). Layer l is sparse when
// (l + 1) % decoder_sparse_step == 0 and l is not in mlp_only_layers; other layers keep a dense MLP.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

// The Qwen MoE layer pattern and names (shared with qwen3_moe.cc).
Result<MoeSpec> qwen_moe_spec(const ModelConfig& config) {
    TACO_ASSIGN_OR_RETURN(MoeSpec moe,
                          basic_moe_spec(config, "num_experts", config.moe_intermediate_size, "moe_intermediate_size"));
    if (config.decoder_sparse_step <= 0)
        return error("config.json: 'decoder_sparse_step' must be positive, got {}", config.decoder_sparse_step);
    for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
        bool listed = false;
        for (int32_t only : config.mlp_only_layers) listed |= only == l;
        moe.sparse_layers[size_t(l)] = !listed && (l + 1) % config.decoder_sparse_step == 0;
    }
    moe.routing = MoeRouting::kSoftmaxTopK;
    moe.renormalize = config.norm_topk_prob.value_or(false);
    moe.names.block_prefixes = {"model.layers.{}.mlp"};
    moe.names.expert_gate = "experts.{e}.gate_proj";
    moe.names.expert_up = "experts.{e}.up_proj";
    moe.names.expert_down = "experts.{e}.down_proj";
    return moe;
}

Result<ArchSpec> qwen2_moe(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "Qwen2MoeForCausalLM";
    TACO_ASSIGN_OR_RETURN(spec.attention.qkv_bias,
                          bool_or(config, "qkv_bias", true));  // a config key from transformers 5 on
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.uses_sliding_window = true;
    TACO_ASSIGN_OR_RETURN(spec.moe, qwen_moe_spec(config));
    if (config.shared_expert_intermediate_size <= 0)
        return error("config.json: 'shared_expert_intermediate_size' must be positive, got {}",
                     config.shared_expert_intermediate_size);
    spec.moe.shared_intermediate_size = config.shared_expert_intermediate_size;
    return spec;
}

}  // namespace taco::archs
