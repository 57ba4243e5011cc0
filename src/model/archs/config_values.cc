// Typed reads of family-specific config.json keys for the arch builders.
#include "model/archs/archs.h"

namespace taco::archs {

Result<bool> config_bool(const ModelConfig& config, const char* key, bool fallback) {
    if (!config.raw.contains(key) || config.raw.at(key).is_null()) return fallback;
    const auto& v = config.raw.at(key);
    if (!v.is_boolean()) return error("config.json: '{}' must be true or false, got {}", key, v.dump());
    return v.get<bool>();
}

Result<int64_t> config_int(const ModelConfig& config, const char* key, int64_t fallback) {
    if (!config.raw.contains(key) || config.raw.at(key).is_null()) return fallback;
    const auto& v = config.raw.at(key);
    if (!v.is_number_integer()) return error("config.json: '{}' must be an integer, got {}", key, v.dump());
    return v.get<int64_t>();
}

}  // namespace taco::archs
