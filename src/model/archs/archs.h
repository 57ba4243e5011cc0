// One builder per family; each lives in its own file of this folder and is listed in arch_registry.cc.
#pragma once

#include "model/arch_spec.h"

namespace taco::archs {

Result<ArchSpec> llama(const ModelConfig& config);
Result<ArchSpec> mistral(const ModelConfig& config);
Result<ArchSpec> qwen2(const ModelConfig& config);

}  // namespace taco::archs

namespace taco::archs {

// GPT-style families
Result<ArchSpec> gpt2(const ModelConfig& config);
Result<ArchSpec> gpt_bigcode(const ModelConfig& config);
Result<ArchSpec> gpt_neox(const ModelConfig& config);
Result<ArchSpec> gptj(const ModelConfig& config);
Result<ArchSpec> opt(const ModelConfig& config);
Result<ArchSpec> phi(const ModelConfig& config);
Result<ArchSpec> falcon(const ModelConfig& config);
Result<ArchSpec> bloom(const ModelConfig& config);

// Typed reads of a family's own config.json keys (ModelConfig::raw): absent or null gives `fallback`; a value
// of another type is an error naming the key.
Result<bool> config_bool(const ModelConfig& config, const char* key, bool fallback);
Result<int64_t> config_int(const ModelConfig& config, const char* key, int64_t fallback);

}  // namespace taco::archs
