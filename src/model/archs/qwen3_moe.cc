// Qwen3MoeForCausalLM (Qwen3-30B-A3B, Qwen3-235B-A22B): Qwen3's attention (RMSNorm over each q/k head before rotary,
// attention_bias on q/k/v/o) with Qwen2-MoE's layer pattern and names but no shared expert; top-k renormalised when
// norm_topk_prob (true in the published checkpoints, false by transformers' default).
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> qwen3_moe(const ModelConfig& config) {
    TACO_ASSIGN_OR_RETURN(ArchSpec spec, qwen3(config));
    spec.name = "Qwen3MoeForCausalLM";
    TACO_ASSIGN_OR_RETURN(spec.moe, qwen_moe_spec(config));
    return spec;
}

}  // namespace taco::archs
