// GPTJForCausalLM: one LayerNorm feeding attention and MLP in parallel, interleaved (GPT-J style) rotary on the
// first rotary_dim of each head, no attention biases, gelu_new MLP, untied head with a bias.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> gptj(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "GPTJForCausalLM";
    spec.norm.kind = NormKind::kLayerNorm;
    spec.norm.bias = true;
    spec.mlp.bias = true;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    spec.attention.neox_rotary = false;
    spec.mlp.gated = false;
    spec.residual = ResidualLayout::kParallelSharedNorm;
    spec.head.bias = true;
    spec.base_model_prefix = "transformer";
    WeightNames& n = spec.names;
    n.embed = "transformer.wte.weight";
    n.final_norm = "transformer.ln_f.weight";
    n.input_norm = "transformer.h.{}.ln_1.weight";
    n.post_attention_norm.clear();
    n.q_proj = "transformer.h.{}.attn.q_proj";
    n.k_proj = "transformer.h.{}.attn.k_proj";
    n.v_proj = "transformer.h.{}.attn.v_proj";
    n.o_proj = "transformer.h.{}.attn.out_proj";
    n.up_proj = "transformer.h.{}.mlp.fc_in";
    n.down_proj = "transformer.h.{}.mlp.fc_out";
    spec.ignored_tensor_suffixes = {".attn.bias", ".attn.masked_bias"};
    return spec;
}

}  // namespace taco::archs
