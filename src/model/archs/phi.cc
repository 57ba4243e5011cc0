// PhiForCausalLM (phi-1, phi-1.5, phi-2): one LayerNorm feeding attention and MLP in parallel, partial neox
// rotary (partial_rotary_factor), biases everywhere, dense output projection, optional per-head q/k LayerNorms
// (qk_layernorm), gelu_new fc1/fc2, final_layernorm, head with a bias.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> phi(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "PhiForCausalLM";
    TACO_ASSIGN_OR_RETURN(bool qk_layernorm, bool_or(config, "qk_layernorm", false));
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.attention.qkv_bias = spec.attention.o_bias = spec.mlp.bias = true;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.mlp.gated = false;
    spec.residual = ResidualLayout::kParallelSharedNorm;
    spec.head.bias = true;
    spec.base_model_prefix = "model";
    WeightNames& n = spec.names;
    n.final_norm = "model.final_layernorm.weight";
    n.post_attention_norm.clear();
    n.o_proj = "model.layers.{}.self_attn.dense";
    n.up_proj = "model.layers.{}.mlp.fc1";
    n.down_proj = "model.layers.{}.mlp.fc2";
    spec.attention.qk_norm = qk_layernorm;
    if (qk_layernorm) {
        n.q_norm = "model.layers.{}.self_attn.q_layernorm.weight";
        n.k_norm = "model.layers.{}.self_attn.k_layernorm.weight";
    }
    return spec;
}

}  // namespace taco::archs
