// Per-request sampling parameters with vLLM's meanings. Issue C grows this (penalties, logprobs, n, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/status.h"

namespace taco {

struct SamplingParams {
    double temperature = 1.0;  // 0: greedy
    double top_p = 1.0;        // (0, 1]
    int64_t top_k = 0;         // 0 or -1: off
    std::optional<uint64_t> seed;
    int64_t max_tokens = 16;
    int64_t min_tokens = 0;    // EOS and stop tokens are suppressed until this many tokens exist
    bool ignore_eos = false;
    std::vector<int32_t> stop_token_ids;

    bool greedy() const { return temperature == 0.0; }
    // Error naming the parameter, e.g. "top_p must be in (0, 1], got 1.5".
    Status validate() const;
};

}  // namespace taco
