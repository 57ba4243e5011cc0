#include "sched/scheduler.h"

#include <map>
#include <random>

#include <gtest/gtest.h>

namespace taco {
namespace {

std::unique_ptr<Request> make_request(RequestId id, int64_t prompt_len, int64_t max_tokens, int32_t first_token = 1) {
    auto r = std::make_unique<Request>();
    r->id = id;
    r->arrival_order = id;
    for (int64_t i = 0; i < prompt_len; ++i) r->token_ids.push_back(first_token + int32_t(i));
    r->num_prompt_tokens = prompt_len;
    r->max_total_tokens = prompt_len + max_tokens;
    return r;
}

// Plays the engine: after each step, requests that sampled get a token; those at their length finish.
struct Harness {
    Harness(int64_t num_blocks, SchedulerConfig config, bool prefix_caching = true)
        : kv(KvCacheConfig{num_blocks, 0, 16, prefix_caching}), scheduler(config, kv) {}

    SchedulerOutput step() {
        SchedulerOutput out = scheduler.schedule();
        last_tokens.clear();
        for (const auto& s : out.scheduled) last_tokens[s.request->id] = s.num_new_tokens;
        std::vector<Request*> sampling;
        for (const auto& s : out.scheduled)
            if (s.samples()) sampling.push_back(s.request);
        scheduler.update_after_step(out);
        for (Request* r : sampling) {
            r->token_ids.push_back(int32_t(1000 + r->num_output_tokens()));
            if (r->num_tokens() >= r->max_total_tokens) {
                finished.push_back(r->id);
                scheduler.finish_request(r->id, RequestStatus::kFinishedLength);
            }
        }
        ++num_steps;
        return out;
    }

    KvCacheManager kv;
    Scheduler scheduler;
    std::vector<RequestId> finished;
    std::map<RequestId, int64_t> last_tokens;  // the last step's scheduled tokens by request (its requests may be gone)
    int num_steps = 0;
};

SchedulerConfig config(int64_t budget, int64_t max_seqs = 256, bool chunked = true) {
    SchedulerConfig c;
    c.max_num_batched_tokens = budget;
    c.max_num_seqs = max_seqs;
    c.max_model_len = chunked ? 1024 : budget;
    c.enable_chunked_prefill = chunked;
    return c;
}

TEST(Scheduler, ChunkedPrefillSplitsPromptsWithinTheTokenBudget) {
    Harness h(256, config(128));
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 100, 4)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 100, 4, 500)).is_ok());
    SchedulerOutput s1 = h.step();
    ASSERT_EQ(s1.scheduled.size(), 2u);
    EXPECT_EQ(s1.scheduled[0].num_new_tokens, 100);
    EXPECT_EQ(s1.scheduled[1].num_new_tokens, 28);
    EXPECT_EQ(s1.num_batched_tokens, 128);
    SchedulerOutput s2 = h.step();  // running first: request 1 decodes one token, request 2 continues its prefill
    ASSERT_EQ(s2.scheduled.size(), 2u);
    EXPECT_EQ(s2.scheduled[0].num_new_tokens, 1);
    EXPECT_EQ(s2.scheduled[1].num_new_tokens, 72);
}

// vLLM's --long-prefill-token-threshold: no request computes more than the threshold in one step, so a long prompt
// leaves room in the budget for the others.
TEST(Scheduler, LongPrefillTokenThresholdCapsEachRequestsShareOfAStep) {
    SchedulerConfig c = config(128);
    c.long_prefill_token_threshold = 40;
    Harness h(256, c);
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 100, 4)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 30, 4, 500)).is_ok());
    SchedulerOutput s1 = h.step();
    ASSERT_EQ(s1.scheduled.size(), 2u);
    EXPECT_EQ(s1.scheduled[0].num_new_tokens, 40);  // capped; without the threshold it would take 100
    EXPECT_EQ(s1.scheduled[1].num_new_tokens, 30);
    SchedulerOutput s2 = h.step();
    EXPECT_EQ(s2.scheduled[0].num_new_tokens, 40);  // running first: the long prompt's next chunk
    EXPECT_EQ(s2.scheduled[1].num_new_tokens, 1);   // the short one decodes
    EXPECT_EQ(h.step().scheduled[0].num_new_tokens, 20);
    while (h.finished.size() < 2 && h.num_steps < 100) h.step();
    EXPECT_EQ(h.finished.size(), 2u);
}

TEST(Scheduler, LongPrefillTokenThresholdIsCheckedByValidate) {
    SchedulerConfig c = config(128);
    c.long_prefill_token_threshold = -1;
    EXPECT_NE(c.validate().message().find("--long-prefill-token-threshold must be at least 0"), std::string::npos);
    SchedulerConfig eager = config(128, 256, false);
    eager.long_prefill_token_threshold = 16;
    EXPECT_NE(eager.validate().message().find("needs chunked prefill"), std::string::npos);
}

// One step's scheduled tokens by request id.
std::map<RequestId, int64_t> step_tokens(Harness& h) {
    h.step();
    return h.last_tokens;
}

// Partial-prefill workloads: a request decoding throughout (id 1), then long prompts of 100 tokens (ids 2..4).
// config(128): max_model_len 1024, so a limit given without a threshold makes prompts of more than 40 tokens (4%)
// long and caps each request's step at 40.
void start_decoding_request(Harness& h) {
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 8, 200, 900)).is_ok());
    h.step();  // its prompt in one step; it decodes from now on
}

// vLLM's --max-num-partial-prefills 1: the long prompts are prefilled one after another, in chunks, while the
// decoding request gets its token every step.
TEST(Scheduler, MaxNumPartialPrefillsOnePrefillsLongPromptsOneAfterAnother) {
    SchedulerConfig c = config(128);
    c.max_num_partial_prefills = 1;
    Harness h(256, c);
    EXPECT_EQ(h.scheduler.config().long_prefill_token_threshold, 0);  // one at a time: no threshold is derived
    start_decoding_request(h);
    for (RequestId id = 2; id <= 4; ++id)
        ASSERT_TRUE(h.scheduler.add_request(make_request(id, 100, 4, int32_t(id * 200))).is_ok());
    // Budget 128: the decode takes 1, the first prompt 100 (done), the second 27 and stays partial; the third waits.
    auto t = step_tokens(h);
    EXPECT_EQ(t, (std::map<RequestId, int64_t>{{1, 1}, {2, 100}, {3, 27}}));
    t = step_tokens(h);  // 3 finishes (73); 4 starts with the rest and is the one partial prefill
    EXPECT_EQ(t, (std::map<RequestId, int64_t>{{1, 1}, {2, 1}, {3, 73}, {4, 53}}));
    // With a threshold the chunks are small and the budget no longer keeps prompts from starting side by side.
    SchedulerConfig capped = config(128);
    capped.max_num_partial_prefills = 1;
    capped.long_prefill_token_threshold = 30;
    Harness g(256, capped);
    start_decoding_request(g);
    for (RequestId id = 2; id <= 4; ++id)
        ASSERT_TRUE(g.scheduler.add_request(make_request(id, 100, 4, int32_t(id * 200))).is_ok());
    std::vector<std::vector<RequestId>> prefilling;  // per step, the long prompts that computed prompt tokens
    while (g.scheduler.num_waiting() > 0 || prefilling.empty() || !prefilling.back().empty()) {
        const std::map<RequestId, int64_t> tokens = step_tokens(g);
        EXPECT_EQ(tokens.count(1) ? tokens.at(1) : 0, 1) << "step " << g.num_steps;  // the decode goes on
        std::vector<RequestId> ids;
        for (const auto& [id, num_tokens] : tokens)
            if (id != 1 && num_tokens > 1) ids.push_back(id);
        prefilling.push_back(ids);
        ASSERT_LT(g.num_steps, 40);
    }
    // 100 tokens in chunks of 30: 30, 30, 30, 10 -- and the next prompt starts in the step that finishes one.
    const std::vector<std::vector<RequestId>> expected = {{2}, {2}, {2}, {2, 3}, {3}, {3}, {3, 4}, {4}, {4}, {4}, {}};
    EXPECT_EQ(prefilling, expected);
}

// --max-num-partial-prefills 2 with --max-long-partial-prefills 2: two long prompts at once, the third after.
TEST(Scheduler, MaxNumPartialPrefillsTwoPrefillsTwoLongPromptsAtOnce) {
    SchedulerConfig c = config(128);
    c.max_num_partial_prefills = 2;
    c.max_long_partial_prefills = 2;
    Harness h(256, c);
    EXPECT_EQ(h.scheduler.config().long_prefill_token_threshold, 40);  // 4% of max_model_len 1024, as vLLM
    start_decoding_request(h);
    for (RequestId id = 2; id <= 4; ++id)
        ASSERT_TRUE(h.scheduler.add_request(make_request(id, 100, 4, int32_t(id * 200))).is_ok());
    EXPECT_EQ(step_tokens(h), (std::map<RequestId, int64_t>{{1, 1}, {2, 40}, {3, 40}}));
    EXPECT_EQ(step_tokens(h), (std::map<RequestId, int64_t>{{1, 1}, {2, 40}, {3, 40}}));
    // Both finish (20 each), so the third starts in the same step.
    EXPECT_EQ(step_tokens(h), (std::map<RequestId, int64_t>{{1, 1}, {2, 20}, {3, 20}, {4, 40}}));
    while (h.finished.size() < 3 && h.num_steps < 100) h.step();
    EXPECT_EQ(h.finished, (std::vector<RequestId>{2, 3, 4}));
}

// --max-long-partial-prefills 1 (vLLM's default once --max-num-partial-prefills is given): one long prompt at a
// time, and short prompts that arrive behind a waiting long one are not held up by it.
TEST(Scheduler, MaxLongPartialPrefillsLetsShortPromptsPassAWaitingLongOne) {
    SchedulerConfig c = config(128);
    c.max_num_partial_prefills = 3;
    Harness h(256, c);
    EXPECT_EQ(h.scheduler.config().max_long_partial_prefills, 1);
    start_decoding_request(h);
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 100, 4, 400)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(3, 100, 4, 600)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(4, 30, 4, 800)).is_ok());  // short: 30 <= 40
    ASSERT_TRUE(h.scheduler.add_request(make_request(5, 30, 4, 850)).is_ok());
    // 3 is long and waits for 2; the short prompts behind it go in this step.
    EXPECT_EQ(step_tokens(h), (std::map<RequestId, int64_t>{{1, 1}, {2, 40}, {4, 30}, {5, 30}}));
    EXPECT_EQ(step_tokens(h), (std::map<RequestId, int64_t>{{1, 1}, {2, 40}, {4, 1}, {5, 1}}));
    EXPECT_EQ(step_tokens(h), (std::map<RequestId, int64_t>{{1, 1}, {2, 20}, {3, 40}, {4, 1}, {5, 1}}));
}

TEST(Scheduler, PartialPrefillLimitsAreCheckedByValidate) {
    SchedulerConfig c = config(128);
    c.max_num_partial_prefills = -1;
    EXPECT_NE(c.validate().message().find("--max-num-partial-prefills must be at least 1"), std::string::npos);
    c = config(128);
    c.max_long_partial_prefills = -2;
    EXPECT_NE(c.validate().message().find("--max-long-partial-prefills must be at least 1"), std::string::npos);
    c = config(128);
    c.max_num_partial_prefills = 2;
    c.max_long_partial_prefills = 3;
    EXPECT_NE(
        c.validate().message().find("--max-long-partial-prefills (3) must be at most --max-num-partial-prefills (2)"),
        std::string::npos);
    c.max_long_partial_prefills = 2;
    EXPECT_TRUE(c.validate().is_ok());
    SchedulerConfig eager = config(128, 256, false);
    eager.max_num_partial_prefills = 2;
    EXPECT_NE(eager.validate().message().find("it needs chunked prefill"), std::string::npos);
    eager.max_num_partial_prefills = 1;  // nothing is ever partially prefilled without chunks: 1 holds trivially
    EXPECT_TRUE(eager.validate().is_ok());
    c = config(128);
    c.max_num_partial_prefills = 2;
    c.long_prefill_token_threshold = 2000;
    EXPECT_NE(c.validate().message().find("is above --max-model-len (1024)"), std::string::npos);
}

// Not given, the limits change nothing: resolved() keeps the config, and the budget alone decides.
TEST(Scheduler, PartialPrefillLimitsNotGivenKeepTheConfig) {
    SchedulerConfig c = config(128);
    c.long_prefill_token_threshold = 40;
    const SchedulerConfig r = c.resolved();
    EXPECT_EQ(r.max_num_partial_prefills, 0);
    EXPECT_EQ(r.max_long_partial_prefills, 0);
    EXPECT_EQ(r.long_prefill_token_threshold, 40);
    // Only the long limit given: prompts of more than 4% of max_model_len are long, the others unbounded.
    SchedulerConfig long_only = config(128);
    long_only.max_long_partial_prefills = 1;
    EXPECT_EQ(long_only.resolved().long_prefill_token_threshold, 40);
    EXPECT_EQ(long_only.resolved().max_num_partial_prefills, 0);
}

TEST(Scheduler, WithoutChunkedPrefillALongPromptWaitsForAWholeBudget) {
    Harness h(256, config(128, 256, false));
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 100, 4)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 100, 4, 500)).is_ok());
    SchedulerOutput s1 = h.step();
    ASSERT_EQ(s1.scheduled.size(), 1u);
    EXPECT_EQ(s1.scheduled[0].num_new_tokens, 100);
}

TEST(Scheduler, MaxNumSeqsBoundsTheRunningSet) {
    Harness h(256, config(4096, 2));
    for (RequestId id = 1; id <= 5; ++id)
        ASSERT_TRUE(h.scheduler.add_request(make_request(id, 10, 3, int32_t(id * 50))).is_ok());
    SchedulerOutput s1 = h.step();
    EXPECT_EQ(s1.scheduled.size(), 2u);
    EXPECT_EQ(h.scheduler.num_waiting(), 3);
}

// Forks (n > 1) join the running set without admission; a step still schedules at most max_num_seqs sequences
// (the runner is sized for that many), the newest waiting a step, and every sequence finishes.
TEST(Scheduler, MaxNumSeqsBoundsEachStepEvenWithForks) {
    Harness h(256, config(4096, 2));
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 10, 3, 50)).is_ok());
    h.step();
    for (RequestId child = 2; child <= 4; ++child) {
        auto r = make_request(child, 10, 3, 50);
        r->token_ids.push_back(int32_t(2000 + child));  // its own first sample, after the shared prompt
        r->num_computed_tokens = 10;
        h.scheduler.add_forked(1, std::move(r));
    }
    while (h.finished.size() < 4) {
        SchedulerOutput out = h.step();
        EXPECT_LE(out.scheduled.size(), 2u);
        ASSERT_LT(h.num_steps, 50);
    }
}

TEST(Scheduler, OutOfBlocksPreemptsTheNewestAndEveryRequestFinishes) {
    // 6 blocks of 16 tokens; each request grows to 60 tokens (4 blocks): two cannot run to the end together.
    Harness h(6, config(4096), /*prefix_caching=*/false);
    for (RequestId id = 1; id <= 4; ++id)
        ASSERT_TRUE(h.scheduler.add_request(make_request(id, 20, 40, int32_t(id * 100))).is_ok());
    while (h.scheduler.has_work() && h.num_steps < 1000) h.step();
    EXPECT_FALSE(h.scheduler.has_work());
    EXPECT_EQ(h.finished.size(), 4u);
    EXPECT_GT(h.scheduler.num_preemptions(), 0);
    EXPECT_EQ(h.kv.stats().num_used_device_blocks, 0);
    EXPECT_EQ(h.kv.num_available_blocks(), 6);
}

// bench throughput's shape in small: many more requests than the KV cache holds, all waiting from the start. A
// step's admission looks up (match_prefix) only the requests it admits and the one it stops at, so its work does
// not grow with the waiting queue, and requests start in arrival order.
TEST(Scheduler, FullCacheLooksUpOnlyTheHeadOfTheWaitingQueue) {
    const int64_t max_len = 150;  // a lookup is of at most this many tokens (a preempted request's output too)
    Harness h(40, config(512));   // about four requests of 100 + 50 tokens (10 blocks)
    const RequestId num_requests = 200;
    for (RequestId id = 1; id <= num_requests; ++id)
        ASSERT_TRUE(h.scheduler.add_request(make_request(id, 100, 50, int32_t(id * 1000))).is_ok());
    std::vector<int> started_at(num_requests + 1, -1);  // by id: the step that first admitted it
    while (h.scheduler.has_work() && h.num_steps < 100000) {
        const int64_t queried_before = h.kv.stats().prefix_queries_tokens;
        const int64_t waiting_before = h.scheduler.num_waiting();
        const SchedulerOutput out = h.step();
        const int64_t queried = h.kv.stats().prefix_queries_tokens - queried_before;
        const int64_t admitted = waiting_before + int64_t(out.preempted.size()) - h.scheduler.num_waiting();
        ASSERT_LE(queried, (admitted + 1) * max_len) << "step " << h.num_steps;
        for (RequestId id = 1; id <= num_requests; ++id) {
            const Request* r = h.scheduler.find(id);
            if (started_at[id] < 0 && (r == nullptr || r->status != RequestStatus::kWaiting))
                started_at[id] = h.num_steps;
        }
    }
    EXPECT_FALSE(h.scheduler.has_work());
    EXPECT_EQ(h.finished.size(), size_t(num_requests));
    for (RequestId id = 2; id <= num_requests; ++id) EXPECT_LE(started_at[id - 1], started_at[id]) << "request " << id;
}

TEST(Scheduler, PriorityPolicyAdmitsTheLowestPriorityValueFirstThenByArrival) {
    SchedulerConfig c = config(4096, /*max_seqs=*/1);
    c.policy = SchedulingPolicy::kPriority;
    Harness h(64, c);
    const std::pair<RequestId, int64_t> arrivals[] = {{1, 5}, {2, 0}, {3, -2}, {4, 0}};
    for (const auto& [id, priority] : arrivals) {
        auto r = make_request(id, 4, 1, int32_t(id * 100));
        r->priority = priority;
        ASSERT_TRUE(h.scheduler.add_request(std::move(r)).is_ok());
    }
    while (h.scheduler.has_work() && h.num_steps < 100) h.step();
    EXPECT_EQ(h.finished, (std::vector<RequestId>{3, 2, 4, 1}));
}

TEST(Scheduler, FcfsPolicyAdmitsInArrivalOrder) {
    Harness h(64, config(4096, /*max_seqs=*/1));
    for (RequestId id = 1; id <= 3; ++id) ASSERT_TRUE(h.scheduler.add_request(make_request(id, 4, 1)).is_ok());
    while (h.scheduler.has_work() && h.num_steps < 100) h.step();
    EXPECT_EQ(h.finished, (std::vector<RequestId>{1, 2, 3}));
}

TEST(Scheduler, PriorityPolicyPreemptsTheLeastUrgentRunningRequest) {
    // 6 blocks of 16 tokens; each request grows to 60 tokens (4 blocks): they cannot all run to the end together.
    // The urgent request arrives last, yet the others give way to it and it finishes first.
    SchedulerConfig c = config(4096);
    c.policy = SchedulingPolicy::kPriority;
    Harness h(6, c, /*prefix_caching=*/false);
    for (RequestId id = 1; id <= 3; ++id) {
        auto r = make_request(id, 20, 40, int32_t(id * 100));
        r->priority = id == 3 ? -1 : 1;
        ASSERT_TRUE(h.scheduler.add_request(std::move(r)).is_ok());
    }
    while (h.scheduler.has_work() && h.num_steps < 1000) h.step();
    ASSERT_EQ(h.finished.size(), 3u);
    EXPECT_EQ(h.finished[0], 3);
    EXPECT_GT(h.scheduler.num_preemptions(), 0);
    EXPECT_EQ(h.kv.num_available_blocks(), 6);
}

TEST(Scheduler, PrefixHitStartsComputationAfterTheCachedBlocks) {
    Harness h(64, config(4096));
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 50, 1)).is_ok());
    h.step();  // computes and finishes request 1; its 3 full blocks stay cached
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 50, 1)).is_ok());
    SchedulerOutput s = h.step();
    ASSERT_EQ(s.scheduled.size(), 1u);
    EXPECT_EQ(s.scheduled[0].num_new_tokens, 2);  // 48 cached, 2 computed
    EXPECT_EQ(h.finished.size(), 2u);
}

TEST(Scheduler, RequestThatSkipsThePrefixCacheComputesEveryPromptToken) {
    Harness h(64, config(4096));
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 50, 1)).is_ok());
    h.step();
    auto scoring = make_request(2, 50, 1);
    scoring->skip_prefix_cache = true;  // prompt logprobs need every position's logits
    ASSERT_TRUE(h.scheduler.add_request(std::move(scoring)).is_ok());
    SchedulerOutput s = h.step();
    ASSERT_EQ(s.scheduled.size(), 1u);
    EXPECT_EQ(s.scheduled[0].num_new_tokens, 50);  // (request 2 has finished: its object is gone)
    // The cache itself is untouched: the next request still hits it.
    ASSERT_TRUE(h.scheduler.add_request(make_request(3, 50, 1)).is_ok());
    s = h.step();
    ASSERT_EQ(s.scheduled.size(), 1u);
    EXPECT_EQ(s.scheduled[0].num_new_tokens, 2);
    EXPECT_EQ(h.finished.size(), 3u);
}

TEST(Scheduler, AbortFreesEverythingAtAnyMoment) {
    Harness h(64, config(32));
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 100, 10)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 10, 10, 300)).is_ok());
    h.step();  // request 1 is mid-prefill, request 2 waiting
    h.scheduler.finish_request(1, RequestStatus::kFinishedAborted);
    h.scheduler.finish_request(2, RequestStatus::kFinishedAborted);
    EXPECT_FALSE(h.scheduler.has_work());
    EXPECT_EQ(h.kv.stats().num_used_device_blocks, 0);
}

TEST(Scheduler, PromptLongerThanMaxModelLenIsRejected) {
    Harness h(64, config(32));
    auto status = h.scheduler.add_request(make_request(1, 2000, 1));
    EXPECT_FALSE(status.is_ok());
    EXPECT_NE(status.message().find("maximum model length 1024"), std::string::npos);
}

TEST(Scheduler, RandomWorkloadsNeverLeakBlocksAndFinishEveryRequest) {
    std::mt19937 rng(11);
    for (int trial = 0; trial < 20; ++trial) {
        const int64_t num_blocks = 8 + int64_t(rng() % 24);
        Harness h(num_blocks, config(16 + int64_t(rng() % 200), 1 + int64_t(rng() % 8)), rng() % 2 == 0);
        int64_t submitted = 0, aborted = 0;
        for (int step = 0; step < 400; ++step) {
            if (submitted < 30 && rng() % 3 == 0) {
                // Shared prefixes: prompts start from one of three seeds.
                int64_t len = 1 + int64_t(rng() % 60);
                int64_t max_tokens = 1 + int64_t(rng() % 40);
                if ((len + max_tokens + 15) / 16 > num_blocks) max_tokens = 1, len = std::min<int64_t>(len, 16);
                ASSERT_TRUE(
                    h.scheduler
                        .add_request(make_request(RequestId(++submitted), len, max_tokens, int32_t(1 + rng() % 3)))
                        .is_ok());
            }
            if (submitted > 0 && rng() % 17 == 0) {
                RequestId victim = RequestId(1 + rng() % uint64_t(submitted));
                if (h.scheduler.find(victim)) {
                    h.scheduler.finish_request(victim, RequestStatus::kFinishedAborted);
                    ++aborted;
                }
            }
            if (h.scheduler.has_work()) h.step();
        }
        while (h.scheduler.has_work() && h.num_steps < 10000) h.step();
        EXPECT_FALSE(h.scheduler.has_work()) << "trial " << trial;
        EXPECT_EQ(int64_t(h.finished.size()) + aborted, submitted) << "trial " << trial;
        EXPECT_EQ(h.kv.stats().num_used_device_blocks, 0) << "trial " << trial;
        EXPECT_EQ(h.kv.num_available_blocks(), num_blocks) << "trial " << trial;
    }
}

// Whatever the workload (preemptions, prefix hits, aborts), no step leaves more requests partially prefilled than
// --max-num-partial-prefills, nor more long ones than --max-long-partial-prefills, and every request finishes.
TEST(Scheduler, RandomWorkloadsKeepThePartialPrefillLimits) {
    std::mt19937 rng(23);
    for (int trial = 0; trial < 30; ++trial) {
        const int64_t num_blocks = 16 + int64_t(rng() % 48);
        SchedulerConfig c = config(16 + int64_t(rng() % 200), 1 + int64_t(rng() % 8));
        c.max_model_len = 256;
        c.max_num_partial_prefills = 1 + int64_t(rng() % 3);
        c.max_long_partial_prefills = 1 + int64_t(rng() % uint64_t(c.max_num_partial_prefills));
        if (rng() % 2) c.long_prefill_token_threshold = 4 + int64_t(rng() % 40);
        Harness h(num_blocks, c, rng() % 2 == 0);
        const int64_t threshold = h.scheduler.config().long_prefill_token_threshold;
        ASSERT_GT(threshold, 0);
        int64_t submitted = 0, aborted = 0;
        auto check_limits = [&] {
            int64_t partial = 0, partial_long = 0;
            for (RequestId id = 1; id <= RequestId(submitted); ++id) {
                const Request* r = h.scheduler.find(id);
                if (!r || r->status != RequestStatus::kRunning || r->num_computed_tokens >= r->num_prefill_tokens)
                    continue;
                ++partial;
                if (r->num_prefill_tokens > threshold) ++partial_long;
            }
            EXPECT_LE(partial, c.max_num_partial_prefills) << "trial " << trial << " step " << h.num_steps;
            EXPECT_LE(partial_long, c.max_long_partial_prefills) << "trial " << trial << " step " << h.num_steps;
        };
        for (int step = 0; step < 400; ++step) {
            if (submitted < 30 && rng() % 3 == 0) {
                int64_t len = 1 + int64_t(rng() % 120);
                int64_t max_tokens = 1 + int64_t(rng() % 30);
                if ((len + max_tokens + 15) / 16 > num_blocks) max_tokens = 1, len = std::min<int64_t>(len, 16);
                ASSERT_TRUE(
                    h.scheduler
                        .add_request(make_request(RequestId(++submitted), len, max_tokens, int32_t(1 + rng() % 3)))
                        .is_ok());
            }
            if (submitted > 0 && rng() % 23 == 0) {
                RequestId victim = RequestId(1 + rng() % uint64_t(submitted));
                if (h.scheduler.find(victim)) {
                    h.scheduler.finish_request(victim, RequestStatus::kFinishedAborted);
                    ++aborted;
                }
            }
            if (h.scheduler.has_work()) h.step();
            check_limits();
        }
        while (h.scheduler.has_work() && h.num_steps < 10000) {
            h.step();
            check_limits();
        }
        EXPECT_FALSE(h.scheduler.has_work()) << "trial " << trial;
        EXPECT_EQ(int64_t(h.finished.size()) + aborted, submitted) << "trial " << trial;
        EXPECT_EQ(h.kv.num_available_blocks(), num_blocks) << "trial " << trial;
    }
}

}  // namespace
}  // namespace taco
