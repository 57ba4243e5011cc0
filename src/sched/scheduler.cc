#include "sched/scheduler.h"

#include <algorithm>
#include <cstddef>
#include <tuple>

#include "core/check.h"

namespace taco {

Status SchedulerConfig::validate() const {
    if (max_num_batched_tokens < 1)
        return error("--max-num-batched-tokens must be positive, got {}", max_num_batched_tokens);
    if (max_num_seqs < 1) return error("--max-num-seqs must be positive, got {}", max_num_seqs);
    if (max_model_len < 1) return error("--max-model-len must be positive, got {}", max_model_len);
    if (!enable_chunked_prefill && max_num_batched_tokens < max_model_len)
        return error("without chunked prefill, --max-num-batched-tokens ({}) must be at least --max-model-len ({})",
                     max_num_batched_tokens, max_model_len);
    if (long_prefill_token_threshold < 0)
        return error("--long-prefill-token-threshold must be at least 0, got {}", long_prefill_token_threshold);
    if (long_prefill_token_threshold > 0 && !enable_chunked_prefill)
        return error("--long-prefill-token-threshold {} splits prompts into chunks: it needs chunked prefill",
                     long_prefill_token_threshold);
    if (max_num_partial_prefills < 0)
        return error("--max-num-partial-prefills must be at least 1, got {}", max_num_partial_prefills);
    if (max_long_partial_prefills < 0)
        return error("--max-long-partial-prefills must be at least 1, got {}", max_long_partial_prefills);
    if (max_num_partial_prefills > 0 && max_long_partial_prefills > max_num_partial_prefills)
        return error("--max-long-partial-prefills ({}) must be at most --max-num-partial-prefills ({})",
                     max_long_partial_prefills, max_num_partial_prefills);
    if (max_num_partial_prefills > 1 && !enable_chunked_prefill)
        return error("--max-num-partial-prefills {} prefills prompts in chunks side by side: it needs chunked prefill",
                     max_num_partial_prefills);
    if (max_num_partial_prefills > 1 && long_prefill_token_threshold > max_model_len)
        return error(
            "--long-prefill-token-threshold ({}) is above --max-model-len ({}): no prompt would be long for "
            "--max-num-partial-prefills",
            long_prefill_token_threshold, max_model_len);
    return Status::ok();
}

SchedulerConfig SchedulerConfig::resolved() const {
    SchedulerConfig c = *this;
    if (c.max_num_partial_prefills > 0 && c.max_long_partial_prefills == 0) c.max_long_partial_prefills = 1;
    const bool long_limit_binds = max_num_partial_prefills > 1 || max_long_partial_prefills > 0;  // as given
    if (c.enable_chunked_prefill && c.long_prefill_token_threshold == 0 && long_limit_binds)
        c.long_prefill_token_threshold = std::max<int64_t>(1, c.max_model_len * 4 / 100);
    return c;
}

template <typename Queue>
void Scheduler::insert_by_priority(Queue& queue, Request* r) {
    auto after = std::upper_bound(queue.begin(), queue.end(), r, [](const Request* a, const Request* b) {
        return std::tie(a->priority, a->arrival_order) < std::tie(b->priority, b->arrival_order);
    });
    queue.insert(after, r);
}

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv_cache)
    : config_(config.resolved()), kv_cache_(kv_cache) {
    TACO_CHECK_MSG(config.validate().is_ok(), "{}", config.validate().message());
    TACO_CHECK_MSG(config_.validate().is_ok(), "{}", config_.validate().message());
}

Status Scheduler::add_request(std::unique_ptr<Request> request) {
    if (request->token_ids.empty()) return error("request {}: the prompt is empty", request->id);
    if (request->num_tokens() > config_.max_model_len)
        return error("request {}: the prompt has {} tokens, more than the maximum model length {}", request->id,
                     request->num_tokens(), config_.max_model_len);
    TACO_CHECK_MSG(requests_.count(request->id) == 0, "request id {} is already in use", request->id);
    request->status = RequestStatus::kWaiting;
    request->num_computed_tokens = 0;
    Request* raw = request.get();
    requests_.emplace(raw->id, std::move(request));
    if (config_.policy == SchedulingPolicy::kPriority)
        insert_by_priority(waiting_, raw);
    else
        waiting_.push_back(raw);
    return Status::ok();
}

void Scheduler::add_forked(RequestId parent_id, std::unique_ptr<Request> child) {
    Request* parent = find(parent_id);
    TACO_CHECK_MSG(parent != nullptr && parent->status == RequestStatus::kRunning, "fork of request {} not running",
                   parent_id);
    TACO_CHECK_MSG(requests_.count(child->id) == 0, "request id {} is already in use", child->id);
    kv_cache_.fork(parent_id, child->id);
    child->status = RequestStatus::kRunning;
    Request* raw = child.get();
    requests_.emplace(raw->id, std::move(child));
    auto at = std::find(running_.begin(), running_.end(), parent);
    running_.insert(at + 1, raw);
}

Request* Scheduler::find(RequestId id) {
    auto it = requests_.find(id);
    return it == requests_.end() ? nullptr : it->second.get();
}

void Scheduler::requeue_preempted(Request* r) {
    last_preempted_ = r->id;
    if (config_.policy == SchedulingPolicy::kPriority)
        insert_by_priority(waiting_, r);
    else
        waiting_.push_front(r);
}

bool Scheduler::preempt_newest_running(Request* keep) {
    if (running_.empty() || running_.back() == keep) return false;
    Request* victim = running_.back();
    running_.pop_back();
    kv_cache_.free(victim->id);
    victim->num_computed_tokens = 0;
    victim->status = RequestStatus::kPreempted;
    ++victim->num_preemptions;
    ++num_preemptions_;
    requeue_preempted(victim);
    return true;
}

SchedulerOutput Scheduler::schedule() {
    SchedulerOutput output;
    int64_t budget = config_.max_num_batched_tokens;
    const size_t num_preempted_before = size_t(num_preemptions_);
    // Running requests first, oldest first: they catch up by as many tokens as the budget allows. At most
    // max_num_seqs of them per step: forks of an n > 1 request join running_ without admission, so running_ may hold
    // more, and the newest wait a step (the runner is sized for max_num_seqs sequences).
    for (size_t i = 0; i < running_.size() && budget > 0 && int64_t(output.scheduled.size()) < config_.max_num_seqs;) {
        Request* r = running_[i];
        int64_t num_new = r->num_tokens() - r->num_computed_tokens;
        TACO_CHECK_GT(num_new, 0);
        if (!config_.enable_chunked_prefill && num_new > budget) {
            ++i;
            continue;
        }
        if (config_.long_prefill_token_threshold > 0) num_new = std::min(num_new, config_.long_prefill_token_threshold);
        num_new = std::min(num_new, budget);
        bool allocated = kv_cache_.allocate(r->id, r->num_computed_tokens + num_new);
        while (!allocated && preempt_newest_running(r)) {
            output.preempted.push_back(last_preempted_);
            allocated = kv_cache_.allocate(r->id, r->num_computed_tokens + num_new);
        }
        if (!allocated) {
            // r is the newest running request: it waits for blocks to free up.
            TACO_CHECK(running_.back() == r);
            running_.pop_back();
            kv_cache_.free(r->id);
            r->num_computed_tokens = 0;
            r->status = RequestStatus::kPreempted;
            ++r->num_preemptions;
            ++num_preemptions_;
            requeue_preempted(r);
            output.preempted.push_back(r->id);
            break;
        }
        output.scheduled.push_back({r, num_new});
        budget -= num_new;
        ++i;
    }
    // Waiting requests only when nothing had to be preempted (else they would just take the freed blocks).
    if (size_t(num_preemptions_) == num_preempted_before) {
        PartialPrefills partial = count_partial_prefills(output);
        admit_waiting(output, budget, partial);
    }
    output.num_batched_tokens = config_.max_num_batched_tokens - budget;
    output.copies = kv_cache_.take_pending_copies();
    return output;
}

bool Scheduler::is_long_prefill(int64_t num_prefill_tokens) const {
    return config_.long_prefill_token_threshold > 0 && num_prefill_tokens > config_.long_prefill_token_threshold;
}

Scheduler::PartialPrefills Scheduler::count_partial_prefills(const SchedulerOutput& output) const {
    PartialPrefills partial;
    for (const Request* r : running_)
        if (r->num_computed_tokens < r->num_prefill_tokens) {
            ++partial.num;
            if (is_long_prefill(r->num_prefill_tokens)) ++partial.num_long;
        }
    // Those this step finishes are partial no more.
    for (const ScheduledRequest& s : output.scheduled) {
        const Request* r = s.request;
        if (r->num_computed_tokens < r->num_prefill_tokens &&
            r->num_computed_tokens + s.num_new_tokens >= r->num_prefill_tokens) {
            --partial.num;
            if (is_long_prefill(r->num_prefill_tokens)) --partial.num_long;
        }
    }
    return partial;
}

void Scheduler::admit_waiting(SchedulerOutput& output, int64_t& budget, PartialPrefills& partial) {
    const int64_t max_partial = config_.max_num_partial_prefills;  // 0: no bound
    const int64_t max_long = config_.max_long_partial_prefills;
    size_t i = 0;  // waiting_[0, i): long prompts set aside for this step
    while (i < waiting_.size() && int64_t(running_.size()) < config_.max_num_seqs && budget > 0) {
        Request* r = waiting_[i];
        // A long prompt over --max-long-partial-prefills waits, whatever the prefix cache holds of it; the prompts
        // behind it may go first (vLLM's reason for the limit: short prompts jump the queue).
        const bool is_long = is_long_prefill(r->num_tokens());
        if (is_long && max_long > 0 && partial.num_long >= max_long) {
            ++i;
            continue;
        }
        const int64_t num_cached =
            r->skip_prefix_cache ? 0 : kv_cache_.match_prefix(r->id, r->token_ids, r->cache_salt);
        int64_t num_new = r->num_tokens() - num_cached;
        if (!config_.enable_chunked_prefill && num_new > budget) {
            kv_cache_.free(r->id);
            break;
        }
        if (config_.long_prefill_token_threshold > 0) num_new = std::min(num_new, config_.long_prefill_token_threshold);
        num_new = std::min(num_new, budget);
        // A prompt this step would leave unfinished waits while --max-num-partial-prefills are; first come, first
        // served, so do the prompts behind it.
        const bool left_partial = num_cached + num_new < r->num_tokens();
        if (left_partial && max_partial > 0 && partial.num >= max_partial) {
            kv_cache_.free(r->id);
            break;
        }
        if (!kv_cache_.allocate(r->id, num_cached + num_new)) {
            kv_cache_.free(r->id);
            break;
        }
        waiting_.erase(waiting_.begin() + std::ptrdiff_t(i));
        if (r->num_preemptions == 0) r->num_cached_tokens = std::min(num_cached, r->num_prompt_tokens);
        r->num_computed_tokens = num_cached;
        r->num_prefill_tokens = r->num_tokens();
        r->status = RequestStatus::kRunning;
        if (left_partial) {
            ++partial.num;
            if (is_long) ++partial.num_long;
        }
        if (config_.policy == SchedulingPolicy::kPriority)
            insert_by_priority(running_, r);
        else
            running_.push_back(r);
        output.scheduled.push_back({r, num_new});
        budget -= num_new;
    }
}

void Scheduler::update_after_step(const SchedulerOutput& output) {
    for (const ScheduledRequest& s : output.scheduled) {
        Request* r = s.request;
        r->num_computed_tokens += s.num_new_tokens;
        TACO_CHECK_LE(r->num_computed_tokens, r->num_tokens());
        kv_cache_.cache_blocks(r->id, r->token_ids, r->num_computed_tokens, r->cache_salt);
    }
}

void Scheduler::finish_request(RequestId id, RequestStatus status) {
    TACO_CHECK(is_finished(status));
    auto it = requests_.find(id);
    if (it == requests_.end()) return;
    Request* r = it->second.get();
    running_.erase(std::remove(running_.begin(), running_.end(), r), running_.end());
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), r), waiting_.end());
    kv_cache_.free(id);
    r->status = status;
    requests_.erase(it);
}

}  // namespace taco
