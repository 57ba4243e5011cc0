// QWenLMHeadModel (Qwen v1; remote code Qwen/Qwen-7B modeling_qwen.py): RMSNorm (ln_1, ln_2, ln_f), q/k/v fused
// in attn.c_attn (rows [q | k | v], always with a bias), attn.c_proj, and an MLP c_proj(w1(x) * silu(w2(x))):
// w2 is the gate, w1 the up projection. Biases of c_proj / w1 / w2 unless `no_bias` (default true). The config
// keys (kv_channels, rotary_emb_base, seq_length, ...) are mapped by remote_config_keys.cc.
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> qwen(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "QWenLMHeadModel";
    TACO_ASSIGN_OR_RETURN(bool no_bias, bool_or(config, "no_bias", true));
    spec.attention.qkv_bias = true;
    spec.attention.o_bias = !no_bias;
    spec.mlp.bias = !no_bias;
    TACO_ASSIGN_OR_RETURN(bool cache_quantization, bool_or(config, "use_cache_quantization", false));
    if (cache_quantization)
        return error("config.json of QWenLMHeadModel: 'use_cache_quantization' (int8 KV cache) is not supported");
    spec.attention.fused_qkv = true;
    spec.head.tied_embeddings = config.tie_word_embeddings;
    WeightNames& n = spec.names;
    n.embed = "transformer.wte.weight";
    n.final_norm = "transformer.ln_f.weight";
    n.input_norm = "transformer.h.{}.ln_1.weight";
    n.post_attention_norm = "transformer.h.{}.ln_2.weight";
    n.qkv_proj = "transformer.h.{}.attn.c_attn";
    n.o_proj = "transformer.h.{}.attn.c_proj";
    n.gate_proj = "transformer.h.{}.mlp.w2";
    n.up_proj = "transformer.h.{}.mlp.w1";
    n.down_proj = "transformer.h.{}.mlp.c_proj";
    return spec;
}

}  // namespace taco::archs
