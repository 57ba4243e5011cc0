// InternLMForCausalLM (InternLM v1; remote code InternLM/InternLM tools/transformers/modeling_internlm.py): Llama's
// block and tensor names with biases on q/k/v/o when config `bias` (default true), no kv grouping, and
// rotary_emb.inv_freq buffers in the checkpoint (ignored: the frequencies come from the config).
#include "model/archs/archs.h"
#include "model/archs/config_keys.h"

namespace taco::archs {

Result<ArchSpec> internlm(const ModelConfig& config) {
    ArchSpec spec;
    spec.name = "InternLMForCausalLM";
    TACO_ASSIGN_OR_RETURN(bool bias, bool_or(config, "bias", true));
    spec.attention.qkv_bias = bias;
    spec.attention.o_bias = bias;
    TACO_ASSIGN_OR_RETURN(spec.mlp.activation, activation_from_name(config.hidden_act, "config.json"));
    spec.head.tied_embeddings = config.tie_word_embeddings;
    return spec;
}

}  // namespace taco::archs
