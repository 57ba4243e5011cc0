// Helpers of the BatchSampler tests: rows with owned context, and repeated draws of one row.
#pragma once

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "exec/batch_sampler.h"

namespace taco::testing {

struct Context {
    std::vector<int32_t> prompt, output, suppressed;
};

inline SamplingRow make_row(const SamplingParams& params, uint64_t seed, int64_t draw_index,
                            const Context& context = {}) {
    SamplingRow row;
    row.params = &params;
    row.seed = seed;
    row.draw_index = draw_index;
    row.prompt_ids = context.prompt;
    row.output_ids = context.output;
    row.suppressed_ids = context.suppressed;
    return row;
}

inline SamplingParams random_params(double temperature = 1.0) {
    SamplingParams params;
    params.temperature = temperature;
    return params;
}

// How often each token comes up in `num` draws (draw indices 0..num-1) of one seeded row.
inline std::map<int32_t, int> draw(const SamplingParams& params, const std::vector<float>& logits, int num,
                                   uint64_t seed = 7, const Context& context = {}) {
    BatchSampler sampler;
    std::map<int32_t, int> seen;
    for (int i = 0; i < num; ++i) seen[sampler.sample_one(logits, make_row(params, seed, i, context)).token]++;
    return seen;
}

inline std::set<int32_t> support(const std::map<int32_t, int>& seen) {
    std::set<int32_t> tokens;
    for (const auto& [token, count] : seen) tokens.insert(token);
    return tokens;
}

// Logits whose softmax is exactly `probs`.
inline std::vector<float> logits_of(const std::vector<double>& probs) {
    std::vector<float> logits;
    for (double p : probs) logits.push_back(float(std::log(p)));
    return logits;
}

}  // namespace taco::testing
