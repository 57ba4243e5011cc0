// Picks the next token of one request from its logits row, in vLLM v1's order (vllm/v1/sample/sampler.py):
//   1. logprobs, when asked for, from the raw logits (vLLM's default logprobs_mode "raw_logprobs");
//   2. suppressed ids (EOS / stop ids before min_tokens) to -inf, logit_bias added;
//   3. penalties: repetition over prompt + output tokens (positive logits divided, others multiplied),
//      then frequency (minus count in output) and presence (minus once if in output);
//   4. greedy: argmax, lowest id on ties (torch.argmax); otherwise temperature, min_p (relative to the most
//      likely token), top-k (ties with the k-th logit kept), top-p (smallest nucleus whose mass reaches p,
//      at least one token), and a draw from the request's own RNG.
// The RNG is std::mt19937_64 seeded by the request's seed (or the fallback), so a seeded request gives the
// same tokens whatever else is in the batch. Probabilities are computed in double.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "exec/sample_logprobs.h"
#include "exec/sampling_params.h"

namespace taco {

struct SamplingContext {
    std::span<const int32_t> prompt_ids;
    std::span<const int32_t> output_ids;      // tokens generated so far
    std::span<const int32_t> suppressed_ids;  // EOS / stop ids while fewer than min_tokens exist
};

class Sampler {
public:
    // `fallback_seed` seeds requests that carry no seed of their own.
    Sampler(const SamplingParams& params, uint64_t fallback_seed);

    // logits: [vocab], modified in place. Returns the token; fills *logprobs (if non-null and params.logprobs).
    // Ids outside [0, vocab) in the context or in logit_bias are ignored (validate() rejects them up front).
    int32_t sample(std::span<float> logits, const SamplingContext& context, SampleLogprobs* logprobs);

    // Log-softmax of raw logits (prompt logprobs, or a sampled token's raw logprob): the logprob and rank of
    // `token` and the top_k most likely tokens. token must lie in [0, logits.size()).
    static SampleLogprobs logprobs_of(std::span<const float> logits, int32_t token, int64_t top_k);

    // The tokens a non-greedy draw can return from these (already penalised) logits after temperature,
    // min_p, top-k and top-p, ascending. For tests and debugging.
    static std::vector<int32_t> allowed_tokens(const SamplingParams& params, std::span<const float> logits);

private:
    struct Candidate {
        double weight;  // exp((logit - max) / temperature), unnormalised
        int32_t token;
    };

    void apply_penalties(std::span<float> logits, const SamplingContext& context);
    int32_t sample_random(std::span<const float> logits);
    double select_candidates(std::span<const float> logits);  // fills candidates_; returns their mass
    double keep_nucleus(double total);                        // top-p over candidates_; returns the kept mass
    double next_uniform();  // [0, 1) from 53 random bits: the same on every standard library

    SamplingParams params_;
    std::mt19937_64 rng_;
    // Scratch kept between calls to avoid reallocating per token.
    std::vector<float> raw_;
    std::vector<int32_t> counts_;     // [vocab] occurrences in the output; reset after use
    std::vector<uint8_t> in_prompt_;  // [vocab]
    std::vector<int32_t> touched_;
    std::vector<Candidate> candidates_;
};

}  // namespace taco
