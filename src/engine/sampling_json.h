// Sampling parameters from JSON with the names of the OpenAI API and vLLM's extras (max_tokens, temperature,
// top_p, top_k, min_p, n, best_of, seed, stop, stop_token_ids, presence/frequency/repetition_penalty,
// logit_bias, logprobs, prompt_logprobs, min_tokens, ignore_eos, include_stop_str_in_output, skip_special_tokens,
// allowed_token_ids, bad_words, truncate_prompt_tokens). Shared by `generate --prompts-file` and the HTTP server.
// Unknown keys are left to the caller.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "exec/sampling_params.h"

namespace taco {

// Reads every known key present in `object` into `params`; a key of the wrong type or range is an error
// naming it ("'top_p' must be a number"). Values are range-checked later by SamplingParams::validate.
Status apply_sampling_json(const nlohmann::json& object, SamplingParams& params);

// The keys apply_sampling_json understands.
bool is_sampling_key(const std::string& key);

}  // namespace taco
