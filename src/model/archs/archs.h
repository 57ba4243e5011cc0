// One builder per family; each lives in its own file of this folder and is listed in arch_registry.cc.
#pragma once

#include "model/arch_spec.h"

namespace taco::archs {

Result<ArchSpec> llama(const ModelConfig& config);
Result<ArchSpec> mistral(const ModelConfig& config);
Result<ArchSpec> qwen2(const ModelConfig& config);
// MoE
Result<ArchSpec> mixtral(const ModelConfig& config);
Result<ArchSpec> qwen2_moe(const ModelConfig& config);
Result<MoeSpec> qwen_moe_spec(const ModelConfig& config);  // Qwen2/Qwen3 MoE layer pattern and names

}  // namespace taco::archs
