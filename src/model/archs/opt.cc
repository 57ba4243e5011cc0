// OPTForCausalLM: learned positions read at position + 2, biases everywhere (enable_bias), ReLU fc1/fc2, pre-norm
// or, with do_layer_norm_before = false (opt-350m), post-norm layers and no final norm; project_in/project_out
// when word_embed_proj_dim differs from hidden_size. Head tied to the embedding.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> opt(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "OPTForCausalLM";
    TACO_ASSIGN_OR_RETURN(bool norm_before, bool_or(config, "do_layer_norm_before", true));
    TACO_ASSIGN_OR_RETURN(bool remove_final_norm, bool_or(config, "_remove_final_layer_norm", false));
    TACO_ASSIGN_OR_RETURN(bool bias, bool_or(config, "enable_bias", true));
    TACO_ASSIGN_OR_RETURN(bool affine, bool_or(config, "layer_norm_elementwise_affine", true));
    TACO_ASSIGN_OR_RETURN(int64_t embed_dim, int_or(config, "word_embed_proj_dim", config.hidden_size));
    if (!affine) return error("config.json: 'layer_norm_elementwise_affine' = false is not supported");
    if (embed_dim <= 0) return error("config.json: 'word_embed_proj_dim' must be positive, got {}", embed_dim);
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.attention.qkv_bias = spec.attention.o_bias = spec.mlp.bias = bias;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.positions = PositionEncoding::kLearned;
    spec.embedding.position_offset = 2;
    spec.mlp.gated = false;
    spec.residual = norm_before ? ResidualLayout::kSequential : ResidualLayout::kPostNorm;
    spec.embedding.dim = embed_dim;
    spec.base_model_prefix = "model";
    WeightNames& n = spec.names;
    n.embed = "model.decoder.embed_tokens.weight";
    n.pos_embed = "model.decoder.embed_positions.weight";
    if (norm_before && !remove_final_norm) {
        n.final_norm = "model.decoder.final_layer_norm.weight";
    } else {
        n.final_norm.clear();
    }
    if (embed_dim != config.hidden_size) {
        n.project_in = "model.decoder.project_in";
        n.project_out = "model.decoder.project_out";
    }
    n.input_norm = "model.decoder.layers.{}.self_attn_layer_norm.weight";
    n.post_attention_norm = "model.decoder.layers.{}.final_layer_norm.weight";
    n.q_proj = "model.decoder.layers.{}.self_attn.q_proj";
    n.k_proj = "model.decoder.layers.{}.self_attn.k_proj";
    n.v_proj = "model.decoder.layers.{}.self_attn.v_proj";
    n.o_proj = "model.decoder.layers.{}.self_attn.out_proj";
    n.up_proj = "model.decoder.layers.{}.fc1";
    n.down_proj = "model.decoder.layers.{}.fc2";
    return spec;
}

}  // namespace taco::archs
