// Gemma2ForCausalLM: Gemma plus sandwich norms (a norm after attention and after the MLP, and a separate pre-MLP
// norm), attention scaled by query_pre_attn_scalar^-0.5, tanh soft-capping of attention scores and of the final
// logits, and a sliding window on every other layer (layer_types, or even layers for configs without it).
#include <cmath>

#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> gemma2(const ModelConfig& config) {
    TACO_ASSIGN_OR_RETURN(ArchSpec spec, gemma(config));
    spec.name = "Gemma2ForCausalLM";
    spec.residual = ResidualLayout::kSandwich;
    // Gemma2/3 MLPs read `hidden_activation` (their configs have no hidden_act).
    TACO_ASSIGN_OR_RETURN(std::string act, string_or(config, "hidden_activation", ""));
    if (act.empty()) return error("config.json of {}: 'hidden_activation' is required", config.architecture);
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(act, "config.json"));
    TACO_ASSIGN_OR_RETURN(double query_pre_attn_scalar, required_number(config, "query_pre_attn_scalar"));
    if (!(query_pre_attn_scalar > 0))
        return error("config.json: 'query_pre_attn_scalar' must be positive, got {}", query_pre_attn_scalar);
    spec.attention.scale = float(std::pow(query_pre_attn_scalar, -0.5));
    TACO_ASSIGN_OR_RETURN(auto attn_cap, optional_number(config, "attn_logit_softcapping"));
    TACO_ASSIGN_OR_RETURN(auto final_cap, optional_number(config, "final_logit_softcapping"));
    spec.attention.logit_softcap = float(attn_cap.value_or(0.0));
    spec.head.final_logit_softcap = float(final_cap.value_or(0.0));
    spec.attention.uses_sliding_window = true;
    if (!config.raw.contains("layer_types")) spec.attention.layer_types = sliding_pattern_layers(config, 2);
    return spec;
}

}  // namespace taco::archs
