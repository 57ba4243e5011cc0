// The tokens a non-greedy draw may return from (already penalised) logits, with vLLM's meanings
// (vllm/v1/sample/ops/topk_topp_sampler.py): temperature (raised to 0.01 at least), min_p relative to the most
// likely token, top-k keeping every token tied with the k-th logit, then top-p as the smallest most-likely
// prefix whose mass reaches p (at least one token). Weights are computed in double.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "exec/sampling_params.h"

namespace taco {

class TokenFilter {
public:
    struct Candidate {
        double weight;  // exp((logit - max) / temperature), unnormalised
        int32_t token;
    };

    // Whether min_p, top_k or top_p can leave out a token with a finite logit. When none does, the allowed
    // tokens are those with a finite logit, and the sampler need not select them one by one.
    static bool restricts(const SamplingParams& params, size_t vocab);

    // Selects the allowed tokens of `logits` [vocab]; candidates() holds them, in no particular order. None
    // when no logit is finite (or one is +inf).
    void select(const SamplingParams& params, std::span<const float> logits);
    std::span<const Candidate> candidates() const { return candidates_; }

    // The allowed tokens, ascending, whether or not params restrict them. For tests and debugging.
    static std::vector<int32_t> allowed_tokens(const SamplingParams& params, std::span<const float> logits);

private:
    void keep_nucleus(double top_p, double total);  // top-p over candidates_ of mass `total`

    std::vector<Candidate> candidates_;
    std::vector<double> heap_;  // scratch of kth_largest
};

// vLLM raises temperatures in (0, 0.01) to 0.01 (sampling_params.py, _MAX_TEMP) against overflow.
constexpr double kMinTemperature = 1e-2;

}  // namespace taco
