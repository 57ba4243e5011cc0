// Sampling through the whole engine: a seeded request's draws are keyed by (seed, draw index, token), so its
// tokens are the same alone, batched with requests of other parameters, in any order, and after it has been
// preempted and recomputed.
#include <set>

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace taco {
namespace {

using testing_util::golden_prompts;
using testing_util::greedy_input;
using testing_util::make_engine;

// Temperature 1 with a nucleus cut; ignore_eos keeps every run at max_tokens, so lengths are exact.
GenerationInput seeded_input() {
    GenerationInput input;
    for (int i = 0; i < 20; ++i) input.prompt_ids.push_back(int32_t((i * 53 + 7) % 500));
    input.params.temperature = 1.0;
    input.params.top_p = 0.9;
    input.params.seed = 1234;
    input.params.max_tokens = 40;
    input.params.ignore_eos = true;
    return input;
}

// Requests with other parameters than seeded_input(), seeded or not.
std::vector<GenerationInput> neighbours() {
    const std::vector<int32_t> long_prompt = golden_prompts("llama")[1].prompt_ids;  // 40 tokens
    std::vector<GenerationInput> out;
    out.push_back(greedy_input(long_prompt, 30));
    GenerationInput unseeded = greedy_input({1, 2, 3}, 25);
    unseeded.params.temperature = 0.7;
    unseeded.params.top_k = 20;
    out.push_back(unseeded);
    GenerationInput penalised = greedy_input({7, 8, 9, 10}, 35);
    penalised.params.temperature = 1.3;
    penalised.params.seed = 1234;  // the same seed, other parameters and prompt
    penalised.params.repetition_penalty = 1.3;
    penalised.params.presence_penalty = 0.5;
    penalised.params.min_p = 0.05;
    penalised.params.logprobs = 2;
    out.push_back(penalised);
    GenerationInput several = greedy_input({11, 12}, 20);
    several.params.temperature = 0.9;
    several.params.seed = 5;
    several.params.n = 2;
    several.params.best_of = 3;
    out.push_back(several);
    return out;
}

std::vector<int32_t> tokens_of(const Result<RequestOutput>& out) {
    EXPECT_TRUE(out.is_ok()) << out.status().message();
    if (!out.is_ok() || out->samples.empty()) return {};
    return out->samples[0].token_ids;
}

TEST(EngineSampling, SeededRequestGivesTheSameTokensAloneAndBatchedInAnyOrder) {
    const GenerationInput seeded = seeded_input();
    const std::vector<int32_t> alone = tokens_of(make_engine("llama")->generate({seeded})[0]);
    ASSERT_EQ(alone.size(), 40u);
    EXPECT_GT(std::set<int32_t>(alone.begin(), alone.end()).size(), 1u) << "not a constant draw";

    auto engine = make_engine("llama");
    std::vector<GenerationInput> crowd = neighbours();
    const size_t at = 2;
    crowd.insert(crowd.begin() + at, seeded);
    EXPECT_EQ(tokens_of(engine->generate(crowd)[at]), alone) << "in the middle of a batch";
    std::vector<GenerationInput> reversed(crowd.rbegin(), crowd.rend());
    reversed.push_back(seeded);  // twice in one batch: both draw the same tokens
    auto outputs = engine->generate(reversed);
    EXPECT_EQ(tokens_of(outputs[crowd.size() - 1 - at]), alone) << "in reverse order";
    EXPECT_EQ(tokens_of(outputs.back()), alone) << "a second copy in the same batch";

    GenerationInput reseeded = seeded;
    reseeded.params.seed = 4321;
    EXPECT_NE(tokens_of(engine->generate({reseeded})[0]), alone);
}

TEST(EngineSampling, SeededRequestGivesTheSameTokensAfterAPreemption) {
    const GenerationInput seeded = seeded_input();
    const std::vector<int32_t> alone = tokens_of(make_engine("llama")->generate({seeded})[0]);
    // Six blocks of 16 tokens. The greedy request grows to 80 tokens (5 blocks), the seeded one to 60 (4): both
    // start, then the pool runs out and the scheduler preempts the newest running request, the seeded one
    // (never the older one), which is recomputed once the greedy request has finished.
    auto tiny = make_engine("llama", /*num_device_blocks=*/6, 0, 8192, 256, true, /*max_model_len=*/96);
    ASSERT_NE(tiny, nullptr);
    GenerationInput older = greedy_input(golden_prompts("llama")[1].prompt_ids, 40);
    older.params.ignore_eos = true;
    auto outputs = tiny->generate({older, seeded});
    EXPECT_GE(tiny->stats().num_preemptions, 1);
    EXPECT_EQ(tokens_of(outputs[1]), alone);
    EXPECT_EQ(tokens_of(outputs[0]), tokens_of(make_engine("llama")->generate({older})[0]));
    EXPECT_EQ(tiny->stats().kv_cache_usage, 0.0);
}

TEST(EngineSampling, BestOfRanksByTheSampledLogprobAndShowsLogprobsOnlyWhenAskedFor) {
    auto engine = make_engine("llama");
    GenerationInput input = seeded_input();
    input.params.max_tokens = 8;
    input.params.n = 2;
    input.params.best_of = 4;
    auto quiet = engine->generate({input});
    input.params.logprobs = 0;
    auto shown = engine->generate({input});
    ASSERT_TRUE(quiet[0].is_ok() && shown[0].is_ok());
    ASSERT_EQ(quiet[0]->samples.size(), 2u);
    ASSERT_EQ(shown[0]->samples.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        const SampleOutput& q = quiet[0]->samples[i];
        const SampleOutput& s = shown[0]->samples[i];
        EXPECT_TRUE(q.logprobs.empty()) << "not asked for";
        EXPECT_LT(q.cumulative_logprob, 0.0) << "yet ranked by it";
        // Asking for logprobs changes neither the draws nor the ranking.
        EXPECT_EQ(s.token_ids, q.token_ids);
        EXPECT_EQ(s.cumulative_logprob, q.cumulative_logprob);
        ASSERT_EQ(s.logprobs.size(), s.token_ids.size());
        double sum = 0;
        for (size_t k = 0; k < s.logprobs.size(); ++k) {
            EXPECT_EQ(s.logprobs[k].sampled.token, s.token_ids[k]);
            EXPECT_TRUE(s.logprobs[k].top.empty());
            sum += s.logprobs[k].sampled.logprob;
        }
        EXPECT_DOUBLE_EQ(sum, s.cumulative_logprob);
    }
    EXPECT_GE(quiet[0]->samples[0].cumulative_logprob, quiet[0]->samples[1].cumulative_logprob);
}

}  // namespace
}  // namespace taco
