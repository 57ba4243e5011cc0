#include "model/moe_spec.h"

namespace taco {

Result<MoeSpec> basic_moe_spec(const ModelConfig& config, const char* experts_key, int64_t intermediate_size,
                               const char* intermediate_key) {
    MoeSpec moe;
    if (config.num_experts <= 0)
        return error("config.json: '{}' must be a positive number of experts, got {}", experts_key, config.num_experts);
    if (config.num_experts_per_tok <= 0 || config.num_experts_per_tok > config.num_experts)
        return error("config.json: 'num_experts_per_tok' must be in [1, {}], got {}", config.num_experts,
                     config.num_experts_per_tok);
    if (intermediate_size <= 0)
        return error("config.json: '{}' must be positive, got {}", intermediate_key, intermediate_size);
    moe.num_experts = config.num_experts;
    moe.top_k = config.num_experts_per_tok;
    moe.intermediate_size = intermediate_size;
    moe.sparse_layers.assign(size_t(config.num_hidden_layers), true);
    return moe;
}

}  // namespace taco
