// One builder per family; each lives in its own file of this folder and is listed in arch_registry.cc.
#pragma once

#include "model/arch_spec.h"

namespace taco::archs {

Result<ArchSpec> llama(const ModelConfig& config);
Result<ArchSpec> mistral(const ModelConfig& config);
Result<ArchSpec> qwen2(const ModelConfig& config);

}  // namespace taco::archs
