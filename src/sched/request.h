// Request: what the scheduler tracks of one sequence. Token ids grow as tokens are sampled; the scheduler only
// ever asks "how far is num_computed_tokens behind num_tokens" (ARCHITECTURE.md, "Scheduler").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/block.h"

namespace taco {

enum class RequestStatus { kWaiting, kRunning, kPreempted, kFinishedStopped, kFinishedLength, kFinishedAborted };

inline bool is_finished(RequestStatus status) {
    return status == RequestStatus::kFinishedStopped || status == RequestStatus::kFinishedLength ||
           status == RequestStatus::kFinishedAborted;
}

struct Request {
    RequestId id = 0;
    uint64_t arrival_order = 0;      // FCFS order; forked samples share their parent's
    int64_t priority = 0;            // --scheduling-policy priority: lower first, then arrival_order
    std::vector<int32_t> token_ids;  // prompt, then generated tokens
    int64_t num_prompt_tokens = 0;
    int64_t num_computed_tokens = 0;  // tokens whose KV is in the cache
    int64_t num_cached_tokens = 0;    // of the prompt, found in the prefix cache at (first) admission
    int64_t max_total_tokens = 0;     // prompt + max_tokens
    uint64_t cache_salt = 0;
    bool skip_prefix_cache = false;  // compute every token (prompt logprobs need the logits of each position)
    RequestStatus status = RequestStatus::kWaiting;
    int64_t num_preemptions = 0;
    // num_tokens when last admitted: its prefill ends when num_computed_tokens reaches this (tokens only grow by
    // sampling, which waits for that); until then a running request is "partially prefilled".
    int64_t num_prefill_tokens = 0;

    int64_t num_tokens() const { return int64_t(token_ids.size()); }
    int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
};

}  // namespace taco
