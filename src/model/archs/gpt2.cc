// GPT2LMHeadModel: learned absolute positions (wpe), LayerNorm with biases, fused c_attn ([q | k | v]) stored as
// Conv1D ([in, out], transposed at load), gelu_new MLP without a gate, tied head.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

void set_gpt2_names(ArchSpec& spec) {
    spec.base_model_prefix = "transformer";
    WeightNames& n = spec.names;
    n.embed = "transformer.wte.weight";
    n.pos_embed = "transformer.wpe.weight";
    n.final_norm = "transformer.ln_f.weight";
    n.input_norm = "transformer.h.{}.ln_1.weight";
    n.post_attention_norm = "transformer.h.{}.ln_2.weight";
    n.qkv_proj = "transformer.h.{}.attn.c_attn";
    n.o_proj = "transformer.h.{}.attn.c_proj";
    n.up_proj = "transformer.h.{}.mlp.c_fc";
    n.down_proj = "transformer.h.{}.mlp.c_proj";
    // Causal-mask buffers of older checkpoints.
    spec.ignored_tensor_suffixes = {".attn.bias", ".attn.masked_bias"};
}

Result<ArchSpec> gpt2(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "GPT2LMHeadModel";
    TACO_ASSIGN_OR_RETURN(bool cross_attention, bool_or(config, "add_cross_attention", false));
    if (cross_attention) return error("config.json: 'add_cross_attention' (encoder-decoder GPT-2) is not supported");
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.attention.qkv_bias = spec.attention.o_bias = spec.mlp.bias = true;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.positions = PositionEncoding::kLearned;
    spec.attention.fused_qkv = true;
    spec.attention.qkv_layout = QkvLayout::kConcatenated;
    spec.transposed_linears = true;
    spec.mlp.gated = false;
    TACO_ASSIGN_OR_RETURN(bool scale_attn_weights, bool_or(config, "scale_attn_weights", true));
    if (!scale_attn_weights) spec.attention.scale = 1.0f;
    TACO_ASSIGN_OR_RETURN(spec.attention.scale_by_inverse_layer_idx,
                          bool_or(config, "scale_attn_by_inverse_layer_idx", false));
    set_gpt2_names(spec);
    return spec;
}

}  // namespace taco::archs
