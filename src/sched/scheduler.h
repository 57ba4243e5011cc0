// Scheduler: one token budget per step, no prefill or decode phases (ARCHITECTURE.md, "Scheduler"). Every step
// each running request gets a number of tokens to compute so that num_computed_tokens catches up with
// num_tokens; prefill, chunked prefill, prefix-cache hits and decode all fall out of that. Running requests are
// served first, then waiting ones are admitted first come first served (or by priority: SchedulingPolicy). When the
// KV cache has no blocks left, the newest (least urgent) running request is preempted (its blocks freed, to be
// recomputed later) -- a request never fails for lack of memory that will free up. Pure CPU logic: no tensors, no
// model.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "core/status.h"
#include "sched/request.h"

namespace taco {

// vLLM's --scheduling-policy. kFcfs: first come, first served; the newest running request is preempted first.
// kPriority: by (Request::priority, arrival_order), lowest first, for admission and for the order running requests
// are served in; the last in that order is preempted first.
enum class SchedulingPolicy { kFcfs, kPriority };

struct SchedulerConfig {
    int64_t max_num_batched_tokens = 8192;  // tokens computed per step, all requests together
    int64_t max_num_seqs = 256;             // requests admitted to run at once; sequences per step (forks too)
    int64_t max_model_len = 0;              // prompt + output tokens per request
    bool enable_chunked_prefill = true;     // off: a prompt is computed in one step or waits
    // vLLM's --long-prefill-token-threshold: > 0 caps the tokens one request computes in a step (a long prompt goes
    // in chunks of at most this many, leaving the rest of the budget to others) and makes a prompt of more tokens
    // "long" for max_long_partial_prefills; 0: no cap. Needs chunked prefill.
    int64_t long_prefill_token_threshold = 0;
    // vLLM's --max-num-partial-prefills: > 0 bounds the requests partially prefilled (prefill started, not finished)
    // after any step; a waiting prompt this step would leave unfinished waits while that many are, and so do those
    // behind it. 0 (not given): no bound but the token budget, which without a threshold leaves at most one anyway.
    int64_t max_num_partial_prefills = 0;
    // vLLM's --max-long-partial-prefills: > 0 bounds how many of those may be long prompts; a long prompt over it
    // waits and shorter prompts behind it go first. 0 (not given): 1 when max_num_partial_prefills is given (vLLM's
    // default), else no bound.
    int64_t max_long_partial_prefills = 0;
    SchedulingPolicy policy = SchedulingPolicy::kFcfs;
    Status validate() const;
    // The values vLLM implies for what was not given (the scheduler runs with these): max_long_partial_prefills 1
    // when only max_num_partial_prefills is given; with chunked prefill, long_prefill_token_threshold 4% of
    // max_model_len (at least 1) when max_num_partial_prefills > 1 or max_long_partial_prefills is given.
    SchedulerConfig resolved() const;
};

struct ScheduledRequest {
    Request* request = nullptr;
    int64_t num_new_tokens = 0;  // tokens [num_computed_tokens, num_computed_tokens + num_new_tokens) this step
    // True when those tokens catch the request up, so its last one yields logits to sample from.
    bool samples() const { return request->num_computed_tokens + num_new_tokens == request->num_tokens(); }
};

struct SchedulerOutput {
    std::vector<ScheduledRequest> scheduled;  // in batch order
    std::vector<BlockCopy> copies;            // to run before the forward pass
    std::vector<RequestId> preempted;         // preempted during this step's scheduling
    int64_t num_batched_tokens = 0;
    bool empty() const { return scheduled.empty(); }
};

class Scheduler {
public:
    Scheduler(const SchedulerConfig& config, KvCacheManager& kv_cache);

    // Queues a request (status kWaiting). Errors: a prompt that is empty or longer than max_model_len allows.
    Status add_request(std::unique_ptr<Request> request);
    // Adds a request that shares `parent`'s blocks (fork, copy-on-write) and runs right after it: the n > 1
    // samples of one prompt. `child` has the parent's tokens and num_computed_tokens.
    void add_forked(RequestId parent, std::unique_ptr<Request> child);

    SchedulerOutput schedule();
    // After the forward pass of `output`: advances num_computed_tokens and publishes full blocks to the prefix
    // cache. Sampled tokens are appended to the requests by the caller, before or after this call.
    void update_after_step(const SchedulerOutput& output);

    // Ends a request (stop, length or abort) and frees its blocks; unknown or already finished ids are ignored.
    // The request object is released (the caller must not keep pointers to it).
    void finish_request(RequestId id, RequestStatus status);

    Request* find(RequestId id);
    const SchedulerConfig& config() const { return config_; }  // resolved()
    int64_t num_running() const { return int64_t(running_.size()); }
    int64_t num_waiting() const { return int64_t(waiting_.size()); }
    int64_t num_preemptions() const { return num_preemptions_; }
    bool has_work() const { return !running_.empty() || !waiting_.empty(); }

private:
    // Preempts the last running request (the newest, or under kPriority the least urgent) unless it is `keep`.
    bool preempt_newest_running(Request* keep);
    // A preempted request back into waiting_: at the front (kFcfs) or at its place (kPriority).
    void requeue_preempted(Request* r);
    // Requests left partially prefilled by a step, all and those of long prompts (max_*_partial_prefills).
    struct PartialPrefills {
        int64_t num = 0;
        int64_t num_long = 0;
    };
    // Running requests whose prefill the step in `output` leaves unfinished (scheduled or not).
    PartialPrefills count_partial_prefills(const SchedulerOutput& output) const;
    // A prefill of more than long_prefill_token_threshold tokens (the whole sequence, as vLLM counts a prompt).
    bool is_long_prefill(int64_t num_prefill_tokens) const;
    void admit_waiting(SchedulerOutput& output, int64_t& budget, PartialPrefills& partial);

    SchedulerConfig config_;
    KvCacheManager& kv_cache_;
    std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
    // Inserts `r` into `queue` in (priority, arrival_order) order, after its equals (kPriority).
    template <typename Queue>
    static void insert_by_priority(Queue& queue, Request* r);

    std::vector<Request*> running_;  // kFcfs: admission order (oldest first); kPriority: (priority, arrival) order
    std::deque<Request*> waiting_;   // kFcfs: FCFS, preempted requests back at the front; kPriority: as running_
    int64_t num_preemptions_ = 0;
    RequestId last_preempted_ = 0;
};

}  // namespace taco
