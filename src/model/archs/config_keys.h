// Typed reads of family-specific config.json keys (ModelConfig::raw) for the ArchSpec builders: a missing
// required key or a key of the wrong type is an error naming the key and the architecture.
#pragma once

#include <optional>
#include <string>

#include "model/model_config.h"

namespace taco::archs {

Result<double> required_number(const ModelConfig& config, const char* key);
// nullopt when absent or null.
Result<std::optional<double>> optional_number(const ModelConfig& config, const char* key);
Result<int64_t> required_int(const ModelConfig& config, const char* key);
Result<bool> required_bool(const ModelConfig& config, const char* key);
// `fallback` when absent or null (family defaults transformers omits from older config.json files).
Result<bool> bool_or(const ModelConfig& config, const char* key, bool fallback);
Result<int64_t> int_or(const ModelConfig& config, const char* key, int64_t fallback);
Result<std::string> string_or(const ModelConfig& config, const char* key, const std::string& fallback);

}  // namespace taco::archs
