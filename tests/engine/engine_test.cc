// The engine end to end on golden models: continuous batching gives each request exactly the tokens it gets
// alone (and transformers' greedy tokens), in about as many steps as the longest request, through preemption,
// prefix hits in both tiers, aborts and n > 1.
#include "engine/engine.h"

#include <chrono>
#include <random>

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace taco {
namespace {

using testing_util::golden_prompts;
using testing_util::greedy_input;
using testing_util::make_engine;

std::vector<int32_t> tokens_of(const Result<RequestOutput>& out) {
    EXPECT_TRUE(out.is_ok()) << out.status().message();
    if (!out.is_ok() || out->samples.empty()) return {};
    return out->samples[0].token_ids;
}

TEST(Engine, BatchedGreedyEqualsTransformersAndEachRequestAlone) {
    for (const char* model : {"llama", "mistral", "qwen2"}) {
        auto engine = make_engine(model);
        auto prompts = golden_prompts(model);
        std::vector<GenerationInput> inputs;
        for (const auto& p : prompts) inputs.push_back(greedy_input(p.prompt_ids, 24, 24));
        auto outputs = engine->generate(inputs);
        for (size_t i = 0; i < prompts.size(); ++i) {
            EXPECT_EQ(tokens_of(outputs[i]), prompts[i].greedy_ids) << model << " case " << i;
            EXPECT_EQ(outputs[i]->samples[0].finish_reason, FinishReason::kLength);
        }
    }
}

TEST(Engine, RequestsSubmittedTogetherFinishInAboutTheStepsOfTheLongest) {
    auto engine = make_engine("llama");
    std::vector<GenerationInput> inputs;
    for (int i = 0; i < 8; ++i) inputs.push_back(greedy_input({1, 2, int32_t(3 + i)}, 10 + i, 10 + i));
    auto outputs = engine->generate(inputs);
    for (auto& out : outputs) ASSERT_TRUE(out.is_ok());
    // The longest needs 1 prefill step + 16 decode steps; allow a step of slack for admission timing.
    EXPECT_LE(engine->stats().num_steps, 17 + 2);
    EXPECT_EQ(engine->stats().generation_tokens_total, 8 * 10 + 28);
}

// The step thread's time by phase (EngineStats::step_*_s) covers every step: each phase ran (the forward pass and
// the outputs take time in every step) and together they stay within the wall time of the steps.
TEST(Engine, StepPhaseTimesAddUpWithinTheWallTime) {
    auto engine = make_engine("llama");
    const EngineStats before = engine->stats();
    EXPECT_EQ(before.step_schedule_s + before.step_forward_s + before.step_sample_s + before.step_output_s, 0.0);
    std::vector<GenerationInput> inputs;
    for (int i = 0; i < 4; ++i) inputs.push_back(greedy_input({1, 2, int32_t(3 + i)}, 8, 8));
    const auto start = std::chrono::steady_clock::now();
    auto outputs = engine->generate(inputs);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (auto& out : outputs) ASSERT_TRUE(out.is_ok());
    const EngineStats s = engine->stats();
    EXPECT_GT(s.step_schedule_s, 0);
    EXPECT_GT(s.step_forward_s, 0);
    EXPECT_GT(s.step_sample_s, 0);
    EXPECT_GT(s.step_output_s, 0);
    EXPECT_GT(s.step_text_s, 0);
    EXPECT_LE(s.step_schedule_s + s.step_forward_s + s.step_sample_s + s.step_output_s + s.step_text_s, wall);
}

TEST(Engine, TinyKvPoolForcesPreemptionAndEveryRequestStillFinishesWithTheSameTokens) {
    auto prompts = golden_prompts("llama");
    auto reference = make_engine("llama");
    // 40-token prompts + 24 outputs need 4 blocks each; 8 blocks hold two at a time.
    auto tiny = make_engine("llama", /*num_device_blocks=*/16, 0, 8192, 256, true);
    std::vector<GenerationInput> inputs;
    std::mt19937 rng(5);
    for (int i = 0; i < 12; ++i) {
        std::vector<int32_t> prompt = prompts[size_t(i % 3)].prompt_ids;
        prompt.push_back(int32_t(rng() % 500));
        inputs.push_back(greedy_input(prompt, 20));
    }
    auto expected = reference->generate(inputs);
    auto got = tiny->generate(inputs);
    for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(tokens_of(got[i]), tokens_of(expected[i])) << i;
    EXPECT_GT(tiny->stats().num_preemptions, 0);
    EXPECT_EQ(tiny->stats().kv_cache_usage, 0.0);
}

TEST(Engine, PrefixCacheHitCutsComputedTokensAndKeepsOutputs) {
    auto engine = make_engine("llama");
    auto prompt = golden_prompts("llama")[2].prompt_ids;  // 90 tokens
    auto first = engine->generate({greedy_input(prompt, 8)});
    auto second = engine->generate({greedy_input(prompt, 8)});
    ASSERT_TRUE(second[0].is_ok());
    EXPECT_EQ(first[0]->num_cached_tokens, 0);
    EXPECT_EQ(second[0]->num_cached_tokens, 80);  // 5 full blocks of 16; the last token is always computed
    EXPECT_EQ(tokens_of(first[0]), tokens_of(second[0]));
    EXPECT_EQ(engine->stats().prefix_hits_device_tokens, 80);
}

TEST(Engine, HostTierRoundTripRestoresTheKvExactly) {
    auto prompts = golden_prompts("llama");
    // 8 device blocks: the second prompt's blocks push the first prompt's cached blocks out to the host tier.
    auto engine = make_engine("llama", 8, 16, 8192, 256, true, /*max_model_len=*/128);
    auto a1 = engine->generate({greedy_input(prompts[1].prompt_ids, 4)});  // 40 tokens
    auto b = engine->generate({greedy_input(prompts[2].prompt_ids, 20)});  // 90 tokens: needs 7 blocks
    auto a2 = engine->generate({greedy_input(prompts[1].prompt_ids, 4)});
    EXPECT_GT(engine->stats().prefix_hits_host_tokens, 0);
    EXPECT_EQ(tokens_of(a1[0]), tokens_of(a2[0]));
    EXPECT_EQ(a2[0]->num_cached_tokens, 32);
}

TEST(Engine, AbortAtAnyMomentFreesEverything) {
    auto engine = make_engine("llama");
    auto input = greedy_input({1, 2, 3}, 200);
    auto stream = engine->submit(input);
    ASSERT_TRUE(stream.is_ok());
    auto first = (*stream)->next();  // the request is running
    ASSERT_TRUE(first.has_value());
    engine->abort((*stream)->id());
    RequestOutput rest = (*stream)->wait_final();
    EXPECT_TRUE(rest.finished);
    // Let the engine settle, then no block is held.
    auto done = engine->generate({greedy_input({4, 5}, 2)});
    EXPECT_EQ(engine->stats().kv_cache_usage, 0.0);
    EXPECT_EQ(engine->stats().num_running, 0);
}

TEST(Engine, SeededSamplingIsTheSameAloneOrBatched) {
    auto engine = make_engine("llama");
    GenerationInput seeded;
    seeded.prompt_ids = {7, 8, 9};
    seeded.params.temperature = 1.0;
    seeded.params.seed = 42;
    seeded.params.max_tokens = 16;
    auto alone = engine->generate({seeded});
    std::vector<GenerationInput> crowd = {greedy_input({1, 2}, 30), seeded, greedy_input({3, 4, 5, 6}, 12)};
    crowd[0].params.temperature = 0.7;  // unseeded samplers draw from their own streams
    auto batched = engine->generate(crowd);
    EXPECT_EQ(tokens_of(alone[0]), tokens_of(batched[1]));
}

TEST(Engine, NSamplesShareThePromptAndAreReproducible) {
    auto engine = make_engine("llama");
    GenerationInput input;
    input.prompt_ids = golden_prompts("llama")[1].prompt_ids;
    input.params.temperature = 1.0;
    input.params.seed = 3;
    input.params.n = 3;
    input.params.max_tokens = 12;
    auto a = engine->generate({input});
    auto b = engine->generate({input});
    ASSERT_TRUE(a[0].is_ok() && b[0].is_ok());
    ASSERT_EQ(a[0]->samples.size(), 3u);
    ASSERT_EQ(b[0]->samples.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(a[0]->samples[i].index, int64_t(i));
        EXPECT_EQ(a[0]->samples[i].token_ids.size(), 12u);
        EXPECT_EQ(a[0]->samples[i].token_ids, b[0]->samples[i].token_ids);
    }
    EXPECT_NE(a[0]->samples[0].token_ids, a[0]->samples[1].token_ids);
    // As vLLM: several greedy samples would all be the same sequence, so n > 1 needs sampling.
    GenerationInput greedy = greedy_input(golden_prompts("llama")[1].prompt_ids, 24, 24);
    greedy.params.n = 2;
    auto rejected = engine->submit(greedy);
    ASSERT_FALSE(rejected.is_ok());
    EXPECT_NE(rejected.status().message().find("n must be 1 when using greedy sampling"), std::string::npos);
    EXPECT_EQ(engine->stats().kv_cache_usage, 0.0);
}

TEST(Engine, BestOfReturnsTheNMostLikelySamples) {
    auto engine = make_engine("llama");
    GenerationInput input;
    input.prompt_ids = {11, 12, 13};
    input.params.temperature = 1.0;
    input.params.seed = 9;
    input.params.n = 2;
    input.params.best_of = 5;
    input.params.max_tokens = 6;
    auto out = engine->generate({input});
    ASSERT_TRUE(out[0].is_ok()) << out[0].status().message();
    ASSERT_EQ(out[0]->samples.size(), 2u);
    EXPECT_GE(out[0]->samples[0].cumulative_logprob, out[0]->samples[1].cumulative_logprob);
    EXPECT_LT(out[0]->samples[0].cumulative_logprob, 0.0);
}

TEST(Engine, EosStopsOnlyAfterMinTokensAndStopTokenIdsAreReported) {
    auto engine = make_engine("llama");
    auto free_run = engine->generate({greedy_input({5, 6, 7}, 12)});
    const int32_t fourth = tokens_of(free_run[0]).at(3);
    GenerationInput stopping = greedy_input({5, 6, 7}, 12);
    stopping.params.stop_token_ids = {fourth};
    auto stopped = engine->generate({stopping});
    ASSERT_TRUE(stopped[0].is_ok());
    EXPECT_EQ(stopped[0]->samples[0].finish_reason, FinishReason::kStop);
    EXPECT_EQ(stopped[0]->samples[0].token_ids.back(), fourth);
    EXPECT_EQ(stopped[0]->samples[0].stop_token_id, fourth);
    stopping.params.min_tokens = 12;
    auto forced = engine->generate({stopping});
    EXPECT_EQ(forced[0]->samples[0].finish_reason, FinishReason::kLength);
    EXPECT_EQ(forced[0]->samples[0].token_ids.size(), 12u);
}

TEST(Engine, ChunkedPrefillAndBlockSizeDoNotChangeTokens) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < 70; ++i) prompt.push_back((i * 37) % 500);
    auto whole = make_engine("llama");
    EngineConfig config;
    config.device = DeviceChoice::kCpu;  // the CPU backend, also where a GPU is usable
    config.model_dir = testing_util::model_dir("llama");
    config.max_model_len = 128;
    config.max_num_batched_tokens = 7;  // a 70-token prompt takes ten steps
    config.block_size = 4;
    auto chunked = Engine::create(config);
    ASSERT_TRUE(chunked.is_ok()) << chunked.status().message();
    EXPECT_EQ(tokens_of(whole->generate({greedy_input(prompt, 8)})[0]),
              tokens_of((*chunked)->generate({greedy_input(prompt, 8)})[0]));
}

TEST(Engine, InvalidInputsAreClearErrors) {
    auto engine = make_engine("llama");
    EXPECT_NE(engine->submit(greedy_input({}, 4)).status().message().find("empty"), std::string::npos);
    EXPECT_NE(engine->submit(greedy_input({1, 600}, 4)).status().message().find("outside the vocabulary"),
              std::string::npos);
    EXPECT_NE(engine->submit(greedy_input({1, 2}, 300)).status().message().find("maximum context length is 256"),
              std::string::npos);
    GenerationInput text;
    text.prompt = "hello";
    EXPECT_NE(engine->submit(text).status().message().find("no tokenizer"), std::string::npos);
}

}  // namespace
}  // namespace taco
