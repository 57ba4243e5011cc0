// InternLM2ForCausalLM (remote code modeling_internlm2.py, as in OpenGVLab/InternVL): Llama's computation with
// q/k/v fused in attention.wqkv, its rows grouped per kv head ([q of the group's heads | k | v], regrouped at
// load), biases on wqkv and wo when config `bias` (default true), a SiLU-gated MLP w2(silu(w1(x)) * w3(x)), and
// its own tensor names (tok_embeddings, attention_norm, ffn_norm, output).
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> internlm2(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "InternLM2ForCausalLM";
    TACO_ASSIGN_OR_RETURN(bool bias, bool_or(config, "bias", true));
    spec.attention.qkv_bias = bias;
    spec.attention.o_bias = bias;
    spec.attention.fused_qkv = true;
    spec.attention.qkv_layout = QkvLayout::kPerKvGroup;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    WeightNames& n = spec.names;
    n.embed = "model.tok_embeddings.weight";
    n.lm_head = "output.weight";
    n.input_norm = "model.layers.{}.attention_norm.weight";
    n.post_attention_norm = "model.layers.{}.ffn_norm.weight";
    n.qkv_proj = "model.layers.{}.attention.wqkv";
    n.o_proj = "model.layers.{}.attention.wo";
    n.gate_proj = "model.layers.{}.feed_forward.w1";
    n.up_proj = "model.layers.{}.feed_forward.w3";
    n.down_proj = "model.layers.{}.feed_forward.w2";
    return spec;
}

}  // namespace taco::archs
