// Gemma3ForCausalLM (text only): Gemma2's block (sandwich norms, query_pre_attn_scalar, optional soft-capping) plus
// RMSNorm over each q/k head before rotary, five sliding layers per full one (layer_types, or
// sliding_window_pattern), and a separate rope for the sliding layers (rope_local_base_freq, or
// rope_parameters.sliding_attention).
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> gemma3(const ModelConfig& config) {
    TACO_ASSIGN_OR_RETURN(ArchSpec spec, gemma2(config));
    spec.name = "Gemma3ForCausalLM";
    spec.attention.qk_norm = true;
    spec.attention.layer_types.clear();
    if (!config.raw.contains("layer_types")) {
        TACO_ASSIGN_OR_RETURN(int64_t pattern, required_int(config, "sliding_window_pattern"));
        if (pattern <= 0) return error("config.json: 'sliding_window_pattern' must be positive, got {}", pattern);
        spec.attention.layer_types = sliding_pattern_layers(config, pattern);
    }
    if (!config.rope_local)
        return error(
            "config.json: Gemma3 needs the sliding layers' rope ('rope_local_base_freq' or "
            "'rope_parameters.sliding_attention')");
    return spec;
}

std::vector<LayerAttention> sliding_pattern_layers(const ModelConfig& config, int64_t pattern) {
    std::vector<LayerAttention> types(size_t(config.num_hidden_layers), LayerAttention::kFull);
    for (int64_t i = 0; i < config.num_hidden_layers; ++i)
        if ((i + 1) % pattern != 0) types[size_t(i)] = LayerAttention::kSliding;
    return types;
}

}  // namespace taco::archs
