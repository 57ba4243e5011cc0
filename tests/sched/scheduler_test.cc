#include "sched/scheduler.h"

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

}  // namespace
}  // namespace taco
