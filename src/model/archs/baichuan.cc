// Baichuan families (remote code; q/k/v fused in self_attn.W_pack, rows [q | k | v], no bias, split at load):
// - BaiChuanForCausalLM (Baichuan-7B, baichuan-inc/Baichuan-7B): Llama's block with rope.
// - BaichuanForCausalLM (Baichuan-13B, Baichuan2-7B/13B): rope at hidden_size 4096 (the 7B shapes), else ALiBi
//   (scores q.k / sqrt(head_dim) + slope * distance, as the 13B modeling files and vLLM). Baichuan2 (vocab 125696,
//   or a config with Baichuan2's `z_loss_weight`) normalises each lm_head row to unit L2 norm before use
//   (NormHead); Baichuan-13B v1 uses its head as stored.
#include "model/archs/archs.h"

namespace taco::archs {
namespace {

constexpr int64_t kBaichuan2VocabSize = 125696;

Result<ArchSpec> w_pack_llama(const ModelConfig& config, const char* name) {
    ArchSpec spec;
    spec.name = name;
    spec.attention.fused_qkv = true;
    spec.names.qkv_proj = "model.layers.{}.self_attn.W_pack";
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    return spec;
}

}  // namespace

Result<ArchSpec> baichuan(const ModelConfig& config) { return w_pack_llama(config, "BaiChuanForCausalLM"); }

Result<ArchSpec> baichuan2(const ModelConfig& config) {
    TACO_ASSIGN_OR_RETURN(ArchSpec spec, w_pack_llama(config, "BaichuanForCausalLM"));
    if (config.hidden_size != 4096) spec.attention.positions = PositionEncoding::kAlibi;
    spec.head.norm_head = config.vocab_size == kBaichuan2VocabSize || config.raw.contains("z_loss_weight");
    return spec;
}

}  // namespace taco::archs
