// XverseForCausalLM (XVERSE-7B/13B/65B): Llama's block and tensor names (model.embed_tokens, model.layers.N.
// self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj, model.norm, lm_head), as vLLM and the GPTQ tool chains map
// it. Unverified: its modeling code is not published in any repository we can read, so no golden exists.
#include "model/archs/archs.h"

namespace taco::archs {

Result<ArchSpec> xverse(const ModelConfig& config) {
    TACO_ASSIGN_OR_RETURN(ArchSpec spec, llama(config));
    spec.name = "XverseForCausalLM";
    return spec;
}

}  // namespace taco::archs
