// Logprobs follow vLLM v1's default logprobs_mode "raw_logprobs": a log-softmax of the raw model logits,
// before min_tokens, logit_bias, penalties, temperature and truncation.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "batch_sampler_test_util.h"
#include "exec/batch_sampler.h"

namespace taco {
namespace {

using testing::Context;
using testing::make_row;

std::vector<double> reference_log_softmax(const std::vector<float>& logits) {
    double max_logit = -INFINITY;
    for (float v : logits) max_logit = std::max(max_logit, double(v));
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v) - max_logit);
    std::vector<double> out;
    for (float v : logits) out.push_back(double(v) - max_logit - std::log(sum));
    return out;
}

// 64 logits with a few exact ties, so ordering rules matter.
std::vector<float> test_logits() {
    std::mt19937 rng(2024);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(64);
    for (float& v : logits) v = normal(rng);
    logits[10] = logits[40] = logits[3] = 9.5f;  // the three largest, tied
    logits[20] = logits[7] = 8.0f;
    return logits;
}

void expect_matches_reference(const SampleLogprobs& got, const std::vector<float>& raw, int32_t token, size_t top) {
    const auto reference = reference_log_softmax(raw);
    EXPECT_EQ(got.sampled.token, token);
    EXPECT_NEAR(got.sampled.logprob, reference[size_t(token)], 1e-5);
    int64_t rank = 0;
    for (double lp : reference) rank += lp >= reference[size_t(token)];
    EXPECT_EQ(got.sampled_rank, rank);

    std::vector<int32_t> order(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) order[i] = int32_t(i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return raw[size_t(a)] > raw[size_t(b)]; });
    ASSERT_EQ(got.top.size(), top);
    for (size_t i = 0; i < top; ++i) {
        EXPECT_EQ(got.top[i].token, order[i]) << "entry " << i;
        EXPECT_NEAR(got.top[i].logprob, reference[size_t(order[i])], 1e-5) << "entry " << i;
    }
}

TEST(BatchSamplerLogprobs, AreTheRawLogSoftmaxWhateverTheProcessing) {
    const std::vector<float> raw = test_logits();
    SamplingParams params;
    params.temperature = 0.7;
    params.top_k = 5;
    params.top_p = 0.9;
    params.min_p = 0.01;
    params.repetition_penalty = 1.3;
    params.frequency_penalty = 0.4;
    params.presence_penalty = 0.2;
    params.logit_bias = {{3, -5.0f}, {50, 4.0f}};
    params.logprobs = 6;
    const Context context{{1, 2, 3}, {10, 10, 20}, {40}};
    BatchSampler sampler;
    for (int step = 0; step < 20; ++step) {
        const SampledToken got = sampler.sample_one(raw, make_row(params, 5, step, context));
        ASSERT_TRUE(got.logprobs.has_value());
        expect_matches_reference(*got.logprobs, raw, got.token, 6);
    }
}

TEST(BatchSamplerLogprobs, TopListOrdersTiesByLowerIdFirstAndRanksCountTies) {
    const std::vector<float> raw = test_logits();
    const SampleLogprobs got = logprobs_of(raw, 40, 5);
    ASSERT_EQ(got.top.size(), 5u);
    EXPECT_EQ(got.top[0].token, 3);
    EXPECT_EQ(got.top[1].token, 10);
    EXPECT_EQ(got.top[2].token, 40);
    EXPECT_EQ(got.top[3].token, 7);
    EXPECT_EQ(got.top[4].token, 20);
    EXPECT_EQ(got.top[0].logprob, got.top[2].logprob);
    // vLLM counts the tokens with a logprob >= the sampled one's: all three tied tokens rank 3.
    EXPECT_EQ(got.sampled_rank, 3);
    EXPECT_EQ(logprobs_of(raw, 7, 0).sampled_rank, 5);
    expect_matches_reference(logprobs_of(raw, 33, 64), raw, 33, 64);
    EXPECT_EQ(logprobs_of(raw, 33, 1000).top.size(), 64u);  // clamped to the vocabulary
}

TEST(BatchSamplerLogprobs, ZeroMeansTheSampledTokenOnlyAndUnsetMeansNone) {
    const std::vector<float> raw = test_logits();
    SamplingParams params;
    params.temperature = 0;
    params.logprobs = 0;
    BatchSampler sampler;
    const SampledToken got = sampler.sample_one(raw, make_row(params, 0, 0));
    EXPECT_EQ(got.token, 3);  // greedy: the lowest of the tied ids
    ASSERT_TRUE(got.logprobs.has_value());
    expect_matches_reference(*got.logprobs, raw, got.token, 0);

    params.logprobs.reset();
    EXPECT_FALSE(sampler.sample_one(raw, make_row(params, 0, 0)).logprobs.has_value());
}

TEST(BatchSamplerLogprobs, SampledLogprobIsReportedOnRequestWithoutTopEntries) {
    const std::vector<float> raw = test_logits();
    SamplingParams params;  // temperature 1, no logprobs asked: best_of ranking still needs the sampled one's
    SamplingRow row = make_row(params, 9, 4);
    row.sampled_logprob = true;
    BatchSampler sampler;
    const SampledToken got = sampler.sample_one(raw, row);
    ASSERT_TRUE(got.logprobs.has_value());
    expect_matches_reference(*got.logprobs, raw, got.token, 0);
    params.logprobs = 2;  // asked for too: the top entries come as well
    const SampledToken both = sampler.sample_one(raw, row);
    EXPECT_EQ(both.token, got.token);
    ASSERT_TRUE(both.logprobs.has_value());
    expect_matches_reference(*both.logprobs, raw, got.token, 2);
}

TEST(BatchSamplerLogprobs, GreedyWithPenaltiesReportsTheRawLogprobOfTheProcessedArgmax) {
    const std::vector<float> raw = {2.0f, 1.9f, -1.0f};
    SamplingParams params;
    params.temperature = 0;
    params.repetition_penalty = 2.0;
    params.logprobs = 2;
    BatchSampler sampler;
    const SampledToken got = sampler.sample_one(raw, make_row(params, 0, 0, {{0}, {}, {}}));
    EXPECT_EQ(got.token, 1);  // 2 / 2 < 1.9
    ASSERT_TRUE(got.logprobs.has_value());
    expect_matches_reference(*got.logprobs, raw, 1, 2);
    EXPECT_EQ(got.logprobs->sampled_rank, 2);
}

TEST(BatchSamplerLogprobs, NoFiniteLogitGivesMinusInfinityWithoutCrashing) {
    const std::vector<float> raw(4, -INFINITY);
    const SampleLogprobs got = logprobs_of(raw, 2, 2);
    EXPECT_EQ(got.sampled.logprob, -INFINITY);
    EXPECT_EQ(got.sampled_rank, 4);
    ASSERT_EQ(got.top.size(), 2u);
    EXPECT_EQ(got.top[0].token, 0);
}

}  // namespace
}  // namespace taco
