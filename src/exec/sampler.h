// Picks the next token of one request from its logits row. Greedy is argmax (lowest id on ties, as
// torch.argmax); otherwise temperature, then top-k, then top-p, then a draw from the request's own RNG, so a
// seeded request gives the same tokens whatever else is in the batch.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "exec/sampling_params.h"

namespace taco {

class Sampler {
public:
    // `fallback_seed` seeds requests that carry no seed of their own.
    Sampler(const SamplingParams& params, uint64_t fallback_seed);

    // logits: [vocab]; tokens in `suppressed` get -inf first (EOS before min_tokens).
    int32_t sample(const float* logits, int64_t vocab, const std::vector<int32_t>& suppressed);

private:
    SamplingParams params_;
    std::mt19937_64 rng_;
    std::vector<std::pair<float, int32_t>> candidates_;  // scratch
};

}  // namespace taco
