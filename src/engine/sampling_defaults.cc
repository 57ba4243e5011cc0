#include "engine/sampling_defaults.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/file_util.h"
#include "core/json_util.h"

namespace taco {
namespace {

using json = nlohmann::json;

Status read_number(const json& config, const char* key, const std::string& source, std::optional<double>& out) {
    if (!config.contains(key) || config.at(key).is_null()) return Status::ok();
    const json& v = config.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()))
        return error("{}: '{}' must be a number, got {}", source, key, json_excerpt(v));
    out = v.get<double>();
    return Status::ok();
}

Status read_integer(const json& config, const char* key, const std::string& source, std::optional<int64_t>& out) {
    if (!config.contains(key) || config.at(key).is_null()) return Status::ok();
    const json& v = config.at(key);
    if (!v.is_number_integer()) return error("{}: '{}' must be an integer, got {}", source, key, json_excerpt(v));
    out = v.get<int64_t>();
    return Status::ok();
}

// The six keys of a generation config (the file's or --override-generation-config's) into `d`.
Status read_keys(const json& config, const std::string& source, SamplingDefaults& d) {
    TACO_RETURN_IF_ERROR(read_number(config, "temperature", source, d.temperature));
    TACO_RETURN_IF_ERROR(read_number(config, "top_p", source, d.top_p));
    TACO_RETURN_IF_ERROR(read_number(config, "min_p", source, d.min_p));
    TACO_RETURN_IF_ERROR(read_number(config, "repetition_penalty", source, d.repetition_penalty));
    TACO_RETURN_IF_ERROR(read_integer(config, "top_k", source, d.top_k));
    return read_integer(config, "max_new_tokens", source, d.max_tokens);
}

// Writes `d`'s values into fresh SamplingParams and checks them: `source` names where they came from.
Status check_defaults(const SamplingDefaults& d, const std::string& source) {
    SamplingParams check;
    d.apply(check);
    if (d.max_tokens && *d.max_tokens < 1)
        return error("{}: 'max_new_tokens' must be at least 1, got {}", source, *d.max_tokens);
    Status valid = check.validate();
    if (!valid) return error("{}: {}", source, valid.message());
    return Status::ok();
}

}  // namespace

Result<SamplingDefaults> SamplingDefaults::load(const std::string& mode, const std::string& model_dir,
                                                const json& overrides) {
    const std::string flag = "--override-generation-config";
    if (!overrides.is_null() && !overrides.is_object())
        return error("{} must be a JSON object, e.g. '{{\"temperature\": 0.5}}', got {}", flag,
                     json_excerpt(overrides));
    SamplingDefaults o;
    if (overrides.is_object()) {
        static const char* const kKeys[] = {"temperature",        "top_p",         "top_k", "min_p",
                                            "repetition_penalty", "max_new_tokens"};
        for (const auto& item : overrides.items()) {
            const std::string& key = item.key();
            const json& value = item.value();
            if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return key == k; }) ==
                std::end(kKeys))
                return error(
                    "{}: '{}' is not a key it can override (temperature, top_p, top_k, min_p, repetition_penalty or "
                    "max_new_tokens)",
                    flag, key);
            if (value.is_null()) return error("{}: '{}' must be a number, got null", flag, key);
        }
        TACO_RETURN_IF_ERROR(read_keys(overrides, flag, o));
        TACO_RETURN_IF_ERROR(check_defaults(o, flag));
    }
    TACO_ASSIGN_OR_RETURN(SamplingDefaults d, load(mode, model_dir));
    // As vLLM's get_diff_sampling_param: the overrides replace the file's values key by key.
    if (o.temperature) d.temperature = o.temperature;
    if (o.top_p) d.top_p = o.top_p;
    if (o.min_p) d.min_p = o.min_p;
    if (o.repetition_penalty) d.repetition_penalty = o.repetition_penalty;
    if (o.top_k) d.top_k = o.top_k;
    if (o.max_tokens) d.max_tokens = o.max_tokens;
    return d;
}

Result<SamplingDefaults> SamplingDefaults::load(const std::string& mode, const std::string& model_dir) {
    if (mode == "vllm") return SamplingDefaults{};
    std::string dir = model_dir;
    if (mode != "auto") {
        if (!std::filesystem::is_directory(mode))
            return error("--generation-config {}: expected 'auto', 'vllm' or a folder", mode);
        dir = mode;
    }
    const std::string path = join_path(dir, "generation_config.json");
    if (!file_exists(path)) {
        if (mode != "auto") return error("--generation-config {}: the folder has no generation_config.json", mode);
        return SamplingDefaults{};
    }
    TACO_ASSIGN_OR_RETURN(json config, read_json_file(path));
    return from_json(config, path);
}

Result<SamplingDefaults> SamplingDefaults::from_json(const json& config, const std::string& source) {
    if (!config.is_object()) return error("{}: must be a JSON object", source);
    SamplingDefaults d;
    TACO_RETURN_IF_ERROR(read_keys(config, source, d));
    // vLLM reads the file through transformers' GenerationConfig diff against its defaults, so a value equal to
    // transformers' default is no default at all; only top_k's (50) differs from vLLM's own (off).
    if (d.top_k == 50) d.top_k.reset();
    TACO_RETURN_IF_ERROR(check_defaults(d, source));
    return d;
}

void SamplingDefaults::apply(SamplingParams& params) const {
    if (temperature) params.temperature = *temperature;
    if (top_p) params.top_p = *top_p;
    if (min_p) params.min_p = *min_p;
    if (repetition_penalty) params.repetition_penalty = *repetition_penalty;
    if (top_k) params.top_k = *top_k;
    if (max_tokens) params.max_tokens = *max_tokens;
}

bool SamplingDefaults::empty() const {
    return !temperature && !top_p && !min_p && !repetition_penalty && !top_k && !max_tokens;
}

std::string SamplingDefaults::describe() const {
    std::vector<std::string> parts;
    if (temperature) parts.push_back(fmt::format("temperature={}", *temperature));
    if (top_p) parts.push_back(fmt::format("top_p={}", *top_p));
    if (top_k) parts.push_back(fmt::format("top_k={}", *top_k));
    if (min_p) parts.push_back(fmt::format("min_p={}", *min_p));
    if (repetition_penalty) parts.push_back(fmt::format("repetition_penalty={}", *repetition_penalty));
    if (max_tokens) parts.push_back(fmt::format("max_tokens={}", *max_tokens));
    return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace taco
