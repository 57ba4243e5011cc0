// Randomized workloads through the whole engine: random arrival order, lengths, shared
// prefixes, n > 1, aborts and tiny KV pools that force preemption. Every request must end with the right finish
// reason, greedy and seeded outputs must equal the same request run alone, and no KV block may leak.
#include <numeric>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace taco {
namespace {

using testing_util::make_engine;

struct Planned {
    GenerationInput input;
    bool abort = false;
};

std::vector<Planned> random_workload(std::mt19937& rng) {
    // Three shared prefixes (system prompts) of 20-40 tokens; each prompt adds 1-30 tokens of its own.
    std::vector<std::vector<int32_t>> prefixes(3);
    for (auto& p : prefixes)
        for (int i = 0, n = 20 + int(rng() % 21); i < n; ++i) p.push_back(int32_t(3 + rng() % 500));
    std::vector<Planned> plan;
    for (int i = 0, n = 10 + int(rng() % 8); i < n; ++i) {
        Planned p;
        p.input.prompt_ids = prefixes[rng() % 3];
        for (int j = 0, m = 1 + int(rng() % 30); j < m; ++j) p.input.prompt_ids.push_back(int32_t(3 + rng() % 500));
        SamplingParams& s = p.input.params;
        s.max_tokens = 1 + int64_t(rng() % 24);
        s.ignore_eos = true;  // lengths are then exact
        if (rng() % 3 == 0) {
            s.temperature = 0.8;
            s.seed = rng();
            s.n = 1 + int64_t(rng() % 3);
        } else {
            s.temperature = 0;
        }
        p.abort = rng() % 7 == 0;
        plan.push_back(std::move(p));
    }
    return plan;
}

// Submits `plan` to `engine` in a shuffled order, a few at a time, aborting some mid-flight; every request that was
// not aborted must produce what it produces alone on `reference`, and the engine must settle with no block held.
void expect_workload_matches_running_alone(Engine& engine, Engine& reference, std::vector<Planned>& plan,
                                           std::mt19937& rng, int trial) {
    std::vector<size_t> order(plan.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::shared_ptr<OutputStream>> streams(plan.size());
    for (size_t k = 0; k < order.size(); ++k) {
        auto stream = engine.submit(plan[order[k]].input);
        ASSERT_TRUE(stream.is_ok()) << stream.status().message();
        streams[order[k]] = *stream;
        if (plan[order[k]].abort) engine.abort((*stream)->id());
        if (rng() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (size_t i = 0; i < plan.size(); ++i) {
        RequestOutput got = streams[i]->wait_final();
        ASSERT_TRUE(got.finished);
        const SamplingParams& s = plan[i].input.params;
        if (plan[i].abort) continue;  // may have finished before the abort landed, or not
        ASSERT_EQ(int64_t(got.samples.size()), s.n) << "trial " << trial << " request " << i;
        auto alone = reference.generate({plan[i].input});
        ASSERT_TRUE(alone[0].is_ok());
        for (size_t j = 0; j < got.samples.size(); ++j) {
            EXPECT_EQ(got.samples[j].finish_reason, FinishReason::kLength);
            EXPECT_EQ(int64_t(got.samples[j].token_ids.size()), s.max_tokens);
            EXPECT_EQ(got.samples[j].token_ids, alone[0]->samples[j].token_ids)
                << "trial " << trial << " request " << i << " sample " << j;
        }
    }
    // The engine settles: nothing running, no block held.
    engine.generate({testing_util::greedy_input({1, 2}, 1)});
    EngineStats stats = engine.stats();
    EXPECT_EQ(stats.kv_cache_usage, 0.0) << "trial " << trial;
    EXPECT_EQ(stats.num_running, 0);
    EXPECT_EQ(stats.num_waiting, 0);
}

TEST(EngineRandom, WorkloadsMatchRunningAloneAndLeakNothing) {
    std::mt19937 rng(2026);
    auto reference = make_engine("llama");
    int64_t total_preemptions = 0, total_prefix_hits = 0;
    for (int trial = 0; trial < 6; ++trial) {
        auto plan = random_workload(rng);
        const int64_t blocks = 8 + int64_t(rng() % 10);  // a handful of requests at a time
        auto engine = make_engine("llama", blocks, /*num_host_blocks=*/int64_t(rng() % 2) * 16,
                                  /*max_num_batched_tokens=*/16 + int64_t(rng() % 64), 1 + int64_t(rng() % 6),
                                  /*prefix_caching=*/rng() % 4 != 0, /*max_model_len=*/128);
        ASSERT_NE(engine, nullptr);
        expect_workload_matches_running_alone(*engine, *reference, plan, rng, trial);
        EngineStats stats = engine->stats();
        total_preemptions += stats.num_preemptions;
        total_prefix_hits += stats.prefix_hits_device_tokens + stats.prefix_hits_host_tokens;
    }
    // The workloads did exercise what they are meant to.
    EXPECT_GT(total_preemptions, 0);
    EXPECT_GT(total_prefix_hits, 0);
}

// --max-num-partial-prefills / --max-long-partial-prefills (with the threshold they imply, or one given) only change
// which prompts wait: every request still produces what it produces alone.
TEST(EngineRandom, PartialPrefillLimitsChangeNoOutput) {
    std::mt19937 rng(15);
    auto reference = make_engine("llama");
    for (int trial = 0; trial < 4; ++trial) {
        auto plan = random_workload(rng);
        EngineConfig config;
        config.device = DeviceChoice::kCpu;
        config.model_dir = testing_util::model_dir("llama");
        config.max_model_len = 128;
        config.num_device_blocks = 12 + int64_t(rng() % 10);
        config.num_host_blocks = 0;
        config.max_num_batched_tokens = 16 + int64_t(rng() % 64);
        config.max_num_seqs = 1 + int64_t(rng() % 6);
        config.max_num_partial_prefills = 1 + int64_t(rng() % 3);
        config.max_long_partial_prefills = 1 + int64_t(rng() % uint64_t(*config.max_num_partial_prefills));
        if (rng() % 2) config.long_prefill_token_threshold = 8 + int64_t(rng() % 24);
        auto engine = Engine::create(config);
        ASSERT_TRUE(engine.is_ok()) << engine.status().message();
        expect_workload_matches_running_alone(**engine, *reference, plan, rng, trial);
    }
}

}  // namespace
}  // namespace taco
