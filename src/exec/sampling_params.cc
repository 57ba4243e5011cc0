#include "exec/sampling_params.h"

#include "structured/compiled_grammar.h"

#include <cmath>

#include "core/limits.h"

namespace taco {

namespace {

Status check_logprobs(const char* name, const std::optional<int64_t>& value) {
    if (value && (*value < 0 || *value > SamplingParams::kMaxLogprobs))
        return error("{} must be in [0, {}], got {}", name, SamplingParams::kMaxLogprobs, *value);
    return Status::ok();
}

// Every id of the list `name` within [0, vocab_size) (vocab_size 0: unknown, only the sign is checked).
Status check_token_ids(const char* name, const std::vector<int32_t>& ids, int64_t vocab_size) {
    for (int32_t token : ids) {
        if (token < 0) return error("{}: token id {} is negative", name, token);
        if (vocab_size > 0 && token >= vocab_size)
            return error("{}: token id {} is outside the vocabulary [0, {})", name, token, vocab_size);
    }
    return Status::ok();
}

}  // namespace

Status SamplingParams::validate(int64_t vocab_size) const {
    if (grammar && vocab_size > 0 && grammar->vocab().vocab_size() != vocab_size)
        return error("the structured-output grammar was compiled for a vocabulary of {} tokens, the model has {}",
                     grammar->vocab().vocab_size(), vocab_size);
    if (n < 1) return error("n must be at least 1, got {}", n);
    if (n > limits::kMaxSamplesPerPrompt)
        return error("n must be at most {} (limits::kMaxSamplesPerPrompt), got {}", limits::kMaxSamplesPerPrompt, n);
    if (best_of && *best_of > limits::kMaxSamplesPerPrompt)
        return error("best_of must be at most {} (limits::kMaxSamplesPerPrompt), got {}", limits::kMaxSamplesPerPrompt,
                     *best_of);
    if (best_of && *best_of < n)
        return error("best_of must be greater than or equal to n, got n={} and best_of={}", n, *best_of);
    if (!std::isfinite(temperature) || temperature < 0)
        return error("temperature must be a non-negative number, got {}", temperature);
    if (greedy()) {
        // vLLM: greedy samples would all be the same sequence.
        if (n > 1) return error("n must be 1 when using greedy sampling (temperature 0), got {}", n);
        if (best_of.value_or(n) > 1)
            return error("best_of must be 1 when using greedy sampling (temperature 0), got {}", *best_of);
    }
    if (!(top_p > 0 && top_p <= 1)) return error("top_p must be in (0, 1], got {}", top_p);
    if (top_k < -1) return error("top_k must be -1 (off), 0 (off) or positive, got {}", top_k);
    if (!(min_p >= 0 && min_p <= 1)) return error("min_p must be in [0, 1], got {}", min_p);
    if (!(presence_penalty >= -2 && presence_penalty <= 2))
        return error("presence_penalty must be in [-2, 2], got {}", presence_penalty);
    if (!(frequency_penalty >= -2 && frequency_penalty <= 2))
        return error("frequency_penalty must be in [-2, 2], got {}", frequency_penalty);
    if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0)
        return error("repetition_penalty must be a finite number greater than zero, got {}", repetition_penalty);
    for (const auto& [token, bias] : logit_bias) {
        if (!std::isfinite(bias)) return error("logit_bias for token {} must be a finite number, got {}", token, bias);
        if (token < 0) return error("logit_bias token id {} is negative", token);
        if (vocab_size > 0 && token >= vocab_size)
            return error("logit_bias token id {} is outside the vocabulary [0, {})", token, vocab_size);
    }
    if (max_tokens < 0) return error("max_tokens must be non-negative (0: the prompt only), got {}", max_tokens);
    if (min_tokens < 0) return error("min_tokens must be non-negative, got {}", min_tokens);
    if (min_tokens > max_tokens)
        return error("min_tokens ({}) must not exceed max_tokens ({})", min_tokens, max_tokens);
    TACO_RETURN_IF_ERROR(check_token_ids("stop_token_ids", stop_token_ids, vocab_size));
    if (stop.size() > limits::kMaxStopStrings)
        return error("stop: at most {} strings (limits::kMaxStopStrings), got {}", limits::kMaxStopStrings,
                     stop.size());
    for (const std::string& s : stop) {
        if (s.empty()) return error("stop cannot contain an empty string");
        if (s.size() > limits::kMaxStopStringBytes)
            return error("stop: a string of {} bytes is longer than {} (limits::kMaxStopStringBytes)", s.size(),
                         limits::kMaxStopStringBytes);
    }
    if (stop_token_ids.size() > limits::kMaxStopTokenIds)
        return error("stop_token_ids: at most {} ids (limits::kMaxStopTokenIds), got {}", limits::kMaxStopTokenIds,
                     stop_token_ids.size());
    TACO_RETURN_IF_ERROR(check_token_ids("allowed_token_ids", allowed_token_ids, vocab_size));
    if (bad_words.size() > limits::kMaxStopStrings)
        return error("bad_words: at most {} words (limits::kMaxStopStrings), got {}", limits::kMaxStopStrings,
                     bad_words.size());
    for (const std::string& word : bad_words)
        if (word.size() > limits::kMaxStopStringBytes)
            return error("bad_words: a word of {} bytes is longer than {} (limits::kMaxStopStringBytes)", word.size(),
                         limits::kMaxStopStringBytes);
    if (truncate_prompt_tokens && *truncate_prompt_tokens < 1 && *truncate_prompt_tokens != -1)
        return error("truncate_prompt_tokens must be -1 (the last max_model_len tokens) or at least 1, got {}",
                     *truncate_prompt_tokens);
    TACO_RETURN_IF_ERROR(check_logprobs("logprobs", logprobs));
    TACO_RETURN_IF_ERROR(check_logprobs("prompt_logprobs", prompt_logprobs));
    return Status::ok();
}

}  // namespace taco
