// What the engine streams back for a request: deltas while it runs, then a final output.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/block.h"
#include "exec/sample_logprobs.h"

namespace taco {

enum class FinishReason { kLength, kStop, kAbort };

inline std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::kLength: return "length";
        case FinishReason::kStop: return "stop";
        case FinishReason::kAbort: return "abort";
    }
    return "?";
}

// One of the n samples of a request. In a streamed delta, token_ids/text/logprobs are what is new since the
// previous delta; in a final output they are the whole sample.
struct SampleOutput {
    int64_t index = 0;
    std::vector<int32_t> token_ids;
    std::string text;
    std::vector<SampleLogprobs> logprobs;  // one per token, when logprobs were asked for
    double cumulative_logprob = 0;
    std::optional<FinishReason> finish_reason;
    // What stopped the sample (vLLM's stop_reason): the stop string, or the stop token id; neither for EOS or length.
    std::string stop_reason;
    std::optional<int32_t> stop_token_id;
};

struct RequestOutput {
    RequestId id = 0;
    // Only in the first output of the request, so a streamed delta does not copy the prompt again (wait_final's
    // merged output has it).
    std::vector<int32_t> prompt_ids;
    int64_t num_cached_tokens = 0;      // prompt tokens served from the prefix cache
    std::vector<SampleOutput> samples;  // deltas: only samples with something new
    // When prompt_logprobs was asked for: the raw-logit logprobs of prompt tokens 1.. (the first has none, so
    // num_prompt_tokens - 1 entries), each with the params.prompt_logprobs most likely tokens at its position.
    // Only in the first output of the request (and in a best_of final output).
    std::vector<SampleLogprobs> prompt_logprobs;
    bool finished = false;
    std::string error;  // set when the request failed after submission
    // When the engine took the request and when it first scheduled it (unset until then): vLLM's queue time is the
    // difference, its prefill time runs from the second to the first token.
    std::chrono::steady_clock::time_point queued_at;
    std::optional<std::chrono::steady_clock::time_point> first_scheduled_at;
};

}  // namespace taco
