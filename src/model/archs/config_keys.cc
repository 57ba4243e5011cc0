#include "model/archs/config_keys.h"

#include "core/json_util.h"

#include <nlohmann/json.hpp>

namespace taco::archs {
namespace {

const nlohmann::json* find(const ModelConfig& config, const char* key) {
    if (!config.raw.is_object() || !config.raw.contains(key) || config.raw.at(key).is_null()) return nullptr;
    return &config.raw.at(key);
}

Status wrong_type(const ModelConfig& config, const char* key, const char* expected, const nlohmann::json& got) {
    return error("config.json of {}: '{}' must be {}, got {}", config.architecture, key, expected, json_excerpt(got));
}

Status missing(const ModelConfig& config, const char* key) {
    return error("config.json of {}: '{}' is required", config.architecture, key);
}

}  // namespace

Result<std::optional<double>> optional_number(const ModelConfig& config, const char* key) {
    const nlohmann::json* v = find(config, key);
    if (v == nullptr) return std::optional<double>();
    if (!v->is_number()) return wrong_type(config, key, "a number", *v);
    return std::optional<double>(v->get<double>());
}

Result<double> required_number(const ModelConfig& config, const char* key) {
    TACO_ASSIGN_OR_RETURN(std::optional<double> v, optional_number(config, key));
    if (!v) return missing(config, key);
    return *v;
}

Result<int64_t> required_int(const ModelConfig& config, const char* key) {
    const nlohmann::json* v = find(config, key);
    if (v == nullptr) return missing(config, key);
    if (!v->is_number_integer()) return wrong_type(config, key, "an integer", *v);
    return v->get<int64_t>();
}

Result<bool> required_bool(const ModelConfig& config, const char* key) {
    const nlohmann::json* v = find(config, key);
    if (v == nullptr) return missing(config, key);
    if (!v->is_boolean()) return wrong_type(config, key, "true or false", *v);
    return v->get<bool>();
}

Result<bool> bool_or(const ModelConfig& config, const char* key, bool fallback) {
    if (find(config, key) == nullptr) return fallback;
    return required_bool(config, key);
}

Result<int64_t> int_or(const ModelConfig& config, const char* key, int64_t fallback) {
    if (find(config, key) == nullptr) return fallback;
    return required_int(config, key);
}

Result<std::string> string_or(const ModelConfig& config, const char* key, const std::string& fallback) {
    const nlohmann::json* v = find(config, key);
    if (v == nullptr) return fallback;
    if (!v->is_string()) return wrong_type(config, key, "a string", *v);
    return v->get<std::string>();
}

}  // namespace taco::archs
