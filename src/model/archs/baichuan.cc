// BaiChuanForCausalLM (Baichuan-7B; remote code baichuan-inc/Baichuan-7B modeling_baichuan.py): Llama's block with
// q/k/v fused into self_attn.W_pack (rows [q | k | v], no bias), split into views at load.
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> baichuan(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "BaiChuanForCausalLM";
    spec.fused_qkv = true;
    spec.names.qkv_proj = "model.layers.{}.self_attn.W_pack";
    TACO_ASSIGN_OR_RETURN(spec.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.tied_embeddings = config.tie_word_embeddings;
    return spec;
}

}  // namespace taco::archs
