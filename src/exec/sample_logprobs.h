// Logprobs as vLLM v1 reports them by default (logprobs_mode "raw_logprobs"): a log-softmax of the raw model
// logits, before min_tokens, logit_bias, penalties, temperature and truncation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace taco {

struct TokenLogprob {
    int32_t token = 0;
    float logprob = 0;
};

struct SampleLogprobs {  // filled when params.logprobs is set
    TokenLogprob sampled;
    int64_t sampled_rank = 0;       // 1-based: how many tokens have a logprob >= the sampled one's (vLLM)
    std::vector<TokenLogprob> top;  // params.logprobs entries, highest first (ties: lower id first)
};

// Log-softmax of raw logits [vocab] (prompt logprobs, or a sampled token's): the logprob and rank of `token`
// and the top_k most likely tokens (top_k clamped to [0, vocab]). token must lie in [0, logits.size()).
// With no finite logit every logprob is -inf. Probabilities are computed in double.
SampleLogprobs logprobs_of(std::span<const float> logits, int32_t token, int64_t top_k);

}  // namespace taco
