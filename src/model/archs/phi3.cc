// Phi3ForCausalLM: Llama's block with one fused qkv_proj ([q | k | v] rows) and one fused gate_up_proj
// ([gate | up] rows), split into views at load; a sliding window when the config sets one; rotary of any kind
// including LongRoPE (short/long factors chosen per request, see RotaryTables).
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> phi3(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "Phi3ForCausalLM";
    spec.attention.fused_qkv = true;
    spec.mlp.fused_gate_up = true;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.uses_sliding_window = true;
    return spec;
}

}  // namespace taco::archs
