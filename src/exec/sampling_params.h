// Per-request sampling parameters with vLLM's meanings (vllm/sampling_params.py): defaults, ranges and the
// error texts of validate() follow it, so a request vLLM accepts is accepted here and means the same.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace taco {

namespace structured {
class CompiledGrammar;
}

struct SamplingParams {
    int64_t n = 1;                   // samples returned
    std::optional<int64_t> best_of;  // samples generated (>= n); the n best by cumulative logprob are returned
    double temperature = 1.0;        // 0: greedy; (0, 0.01) is raised to 0.01 as vLLM does
    double top_p = 1.0;              // (0, 1]
    int64_t top_k = 0;               // 0 or -1: off
    double min_p = 0.0;              // [0, 1], relative to the most likely token after temperature
    double presence_penalty = 0.0, frequency_penalty = 0.0;  // [-2, 2], over the generated tokens
    double repetition_penalty = 1.0;                         // > 0, over prompt and generated tokens
    std::map<int32_t, float> logit_bias;  // added to the logits; values clamped to [-100, 100] as vLLM does
    std::optional<uint64_t> seed;
    int64_t max_tokens = 16;  // 0: the prompt only (with prompt_logprobs: scoring), no token sampled
    int64_t min_tokens = 0;   // EOS and stop tokens are suppressed until this many tokens exist
    bool ignore_eos = false;
    std::vector<int32_t> stop_token_ids;
    std::vector<std::string> stop;  // stop strings
    bool include_stop_str_in_output = false;
    std::optional<int64_t> logprobs;         // top logprobs per generated token (0: the sampled token's only)
    std::optional<int64_t> prompt_logprobs;  // top logprobs per prompt position, from the raw logits
    bool skip_special_tokens = true;
    // vLLM's allowed_token_ids: when not empty, every other token is suppressed (-inf after the raw logprobs, as
    // min_tokens' suppression). Ids in [0, vocab).
    std::vector<int32_t> allowed_token_ids;
    // vLLM's bad_words: the engine tokenizes each (with and without a leading space) and bans the last token of a
    // sequence whenever the output ends with the rest of it (RequestGroup::bad_word_bans).
    std::vector<std::string> bad_words;
    // vLLM's truncate_prompt_tokens: keep only the last N prompt tokens (-1: the last max_model_len).
    std::optional<int64_t> truncate_prompt_tokens;
    // Structured output: every sample's tokens follow this grammar (null: unconstrained), and a sample ends with
    // finish reason "stop" once the grammar is complete. Compiled against the model's vocabulary
    // (Engine::compile_structured); shared by every request that asks for the same thing.
    std::shared_ptr<const structured::CompiledGrammar> grammar;
    // With a grammar: it applies only after the output has spelled this text (a reasoning model's "</think>": the
    // structured answer follows the thinking); unset or empty: from the first token.
    std::string grammar_after;

    static constexpr int64_t kMaxLogprobs = 20;  // vLLM's default --max-logprobs

    bool greedy() const { return temperature == 0.0; }
    // Error naming the parameter, e.g. "top_p must be in (0, 1], got 1.5". With vocab_size > 0, token ids
    // (logit_bias, stop_token_ids) must lie in [0, vocab_size).
    Status validate(int64_t vocab_size = 0) const;
};

}  // namespace taco
