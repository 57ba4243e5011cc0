// SamplingDefaults: the default sampling parameters a model's generation_config.json asks for, with vLLM's
// `--generation-config` meaning: "auto" reads MODEL/generation_config.json, "vllm" uses none (vLLM's neutral
// defaults), a folder reads FOLDER/generation_config.json. As vLLM, only temperature, top_p, top_k, min_p,
// repetition_penalty and max_new_tokens (the default max_tokens) are taken; a request's own values win.
// `--override-generation-config` (a JSON object of those keys) is laid over them, or used alone with "vllm".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "exec/sampling_params.h"

namespace taco {

struct SamplingDefaults {
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k;
    std::optional<int64_t> max_tokens;  // max_new_tokens

    // `mode`: "auto", "vllm" or a folder. A missing generation_config.json means no defaults; a malformed one is
    // an error naming the file and key.
    static Result<SamplingDefaults> load(const std::string& mode, const std::string& model_dir);
    // The same with vLLM's --override-generation-config laid over the result: an object whose keys (those six)
    // replace the file's. An unknown key, a value of the wrong type or out of range is an error naming the flag and
    // the key. null or {} overrides nothing.
    static Result<SamplingDefaults> load(const std::string& mode, const std::string& model_dir,
                                         const nlohmann::json& overrides);
    // `source` names the JSON in errors.
    static Result<SamplingDefaults> from_json(const nlohmann::json& generation_config, const std::string& source);

    // Writes every default into `params` (which then takes a request's own values on top).
    void apply(SamplingParams& params) const;
    bool empty() const;
    // e.g. "temperature=0.7, top_p=0.9" for the startup log.
    std::string describe() const;
};

}  // namespace taco
