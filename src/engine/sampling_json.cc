#include "engine/sampling_json.h"

#include <array>
#include <cmath>
#include <limits>

#include "core/json_util.h"

namespace taco {
namespace {

using json = nlohmann::json;

constexpr std::array<const char*, 24> kKeys = {"max_tokens",
                                               "min_tokens",
                                               "temperature",
                                               "top_p",
                                               "top_k",
                                               "min_p",
                                               "n",
                                               "best_of",
                                               "seed",
                                               "stop",
                                               "stop_token_ids",
                                               "presence_penalty",
                                               "frequency_penalty",
                                               "repetition_penalty",
                                               "logit_bias",
                                               "logprobs",
                                               "ignore_eos",
                                               "include_stop_str_in_output",
                                               "skip_special_tokens",
                                               "max_completion_tokens",
                                               "prompt_logprobs",
                                               "allowed_token_ids",
                                               "bad_words",
                                               "truncate_prompt_tokens"};

Status read_int(const json& v, const char* key, int64_t& out) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))  // echoed as sent, never wrapped negative
        return error("'{}' must be an integer within int64, got {}", key, json_excerpt(v));
    if (v.is_number_integer()) {
        out = v.get<int64_t>();
        return Status::ok();
    }
    if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::abs(v.get<double>()) < 1e15) {
        out = int64_t(v.get<double>());
        return Status::ok();
    }
    return error("'{}' must be an integer, got {}", key, json_excerpt(v));
}

Status read_double(const json& v, const char* key, double& out) {
    if (!v.is_number()) return error("'{}' must be a number, got {}", key, json_excerpt(v));
    out = v.get<double>();
    return Status::ok();
}

Status read_bool(const json& v, const char* key, bool& out) {
    if (!v.is_boolean()) return error("'{}' must be true or false, got {}", key, json_excerpt(v));
    out = v.get<bool>();
    return Status::ok();
}

Status read_token_id(const json& v, const char* key, int32_t& out) {
    int64_t id = 0;
    TACO_RETURN_IF_ERROR(read_int(v, key, id));
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) return error("'{}' holds an invalid token id {}", key, id);
    out = int32_t(id);
    return Status::ok();
}

// A JSON list of token ids (the caller checked it is an array) into `out`, replacing what it held.
Status read_token_ids(const json& v, const char* key, std::vector<int32_t>& out) {
    out.clear();
    for (const json& id : v) {
        int32_t token = 0;
        TACO_RETURN_IF_ERROR(read_token_id(id, key, token));
        out.push_back(token);
    }
    return Status::ok();
}

}  // namespace

bool is_sampling_key(const std::string& key) {
    for (const char* k : kKeys)
        if (key == k) return true;
    return false;
}

Status apply_sampling_json(const json& object, SamplingParams& p) {
    if (!object.is_object()) return error("sampling parameters must be a JSON object");
    for (const auto& [key, v] : object.items()) {
        if (v.is_null()) continue;  // OpenAI clients send null for "unset"
        const char* k = key.c_str();
        if (key == "max_tokens" || key == "max_completion_tokens") {
            TACO_RETURN_IF_ERROR(read_int(v, k, p.max_tokens));
        } else if (key == "min_tokens") {
            TACO_RETURN_IF_ERROR(read_int(v, k, p.min_tokens));
        } else if (key == "temperature") {
            TACO_RETURN_IF_ERROR(read_double(v, k, p.temperature));
        } else if (key == "top_p") {
            TACO_RETURN_IF_ERROR(read_double(v, k, p.top_p));
        } else if (key == "top_k") {
            TACO_RETURN_IF_ERROR(read_int(v, k, p.top_k));
        } else if (key == "min_p") {
            TACO_RETURN_IF_ERROR(read_double(v, k, p.min_p));
        } else if (key == "n") {
            TACO_RETURN_IF_ERROR(read_int(v, k, p.n));
        } else if (key == "best_of") {
            int64_t best_of = 0;
            TACO_RETURN_IF_ERROR(read_int(v, k, best_of));
            p.best_of = best_of;
        } else if (key == "seed") {
            int64_t seed = 0;
            TACO_RETURN_IF_ERROR(read_int(v, k, seed));
            p.seed = uint64_t(seed);
        } else if (key == "stop") {
            p.stop.clear();
            if (v.is_string()) {
                p.stop.push_back(v.get<std::string>());
            } else if (v.is_array()) {
                for (const json& s : v) {
                    if (!s.is_string())
                        return error("'stop' must be a string or a list of strings, got {}", json_excerpt(v));
                    p.stop.push_back(s.get<std::string>());
                }
            } else {
                return error("'stop' must be a string or a list of strings, got {}", json_excerpt(v));
            }
        } else if (key == "stop_token_ids") {
            if (!v.is_array()) return error("'stop_token_ids' must be a list of token ids, got {}", json_excerpt(v));
            TACO_RETURN_IF_ERROR(read_token_ids(v, k, p.stop_token_ids));
        } else if (key == "presence_penalty") {
            TACO_RETURN_IF_ERROR(read_double(v, k, p.presence_penalty));
        } else if (key == "frequency_penalty") {
            TACO_RETURN_IF_ERROR(read_double(v, k, p.frequency_penalty));
        } else if (key == "repetition_penalty") {
            TACO_RETURN_IF_ERROR(read_double(v, k, p.repetition_penalty));
        } else if (key == "logit_bias") {
            if (!v.is_object())
                return error("'logit_bias' must be an object of token id -> bias, got {}", json_excerpt(v));
            p.logit_bias.clear();
            for (const auto& [id_text, bias] : v.items()) {
                size_t used = 0;
                long long id = -1;
                try {
                    id = std::stoll(id_text, &used);
                } catch (const std::exception&) {
                    used = 0;
                }
                if (used == 0 || used != id_text.size() || id < 0 || id > std::numeric_limits<int32_t>::max())
                    return error("'logit_bias' key '{}' is not a token id", id_text);
                double value = 0;
                TACO_RETURN_IF_ERROR(read_double(bias, "logit_bias", value));
                p.logit_bias[int32_t(id)] = float(value);
            }
        } else if (key == "logprobs") {
            // Completions: an integer (top count); chat: a boolean (with top_logprobs). Both accepted here.
            if (v.is_boolean()) {
                if (v.get<bool>())
                    p.logprobs = p.logprobs.value_or(0);
                else
                    p.logprobs.reset();
            } else {
                int64_t count = 0;
                TACO_RETURN_IF_ERROR(read_int(v, k, count));
                p.logprobs = count;
            }
        } else if (key == "prompt_logprobs") {
            int64_t count = 0;
            TACO_RETURN_IF_ERROR(read_int(v, k, count));
            p.prompt_logprobs = count;
        } else if (key == "allowed_token_ids") {
            // vLLM refuses an empty list (it would allow nothing).
            if (!v.is_array() || v.empty())
                return error("'allowed_token_ids' must be a non-empty list of token ids, got {}", json_excerpt(v));
            TACO_RETURN_IF_ERROR(read_token_ids(v, k, p.allowed_token_ids));
        } else if (key == "bad_words") {
            if (!v.is_array()) return error("'bad_words' must be a list of strings, got {}", json_excerpt(v));
            p.bad_words.clear();
            for (const json& word : v) {
                if (!word.is_string()) return error("'bad_words' must be a list of strings, got {}", json_excerpt(v));
                p.bad_words.push_back(word.get<std::string>());
            }
        } else if (key == "truncate_prompt_tokens") {
            int64_t count = 0;
            TACO_RETURN_IF_ERROR(read_int(v, k, count));
            p.truncate_prompt_tokens = count;
        } else if (key == "ignore_eos") {
            TACO_RETURN_IF_ERROR(read_bool(v, k, p.ignore_eos));
        } else if (key == "include_stop_str_in_output") {
            TACO_RETURN_IF_ERROR(read_bool(v, k, p.include_stop_str_in_output));
        } else if (key == "skip_special_tokens") {
            TACO_RETURN_IF_ERROR(read_bool(v, k, p.skip_special_tokens));
        }
    }
    return Status::ok();
}

}  // namespace taco
