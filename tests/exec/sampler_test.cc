#include "exec/sampler.h"

#include <map>

#include <gtest/gtest.h>

namespace taco {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 3.0f, 2.0f, -1.0f};

TEST(Sampler, GreedyPicksArgmaxWithLowestIdOnTies) {
    SamplingParams params;
    params.temperature = 0;
    Sampler sampler(params, 0);
    EXPECT_EQ(sampler.sample(kLogits.data(), 5, {}), 1);
    EXPECT_EQ(sampler.sample(kLogits.data(), 5, {1}), 2);     // suppressed (EOS before min_tokens)
    EXPECT_EQ(sampler.sample(kLogits.data(), 5, {1, 2}), 3);
}

TEST(Sampler, SeededSamplingRepeatsExactly) {
    SamplingParams params;
    params.temperature = 1.0;
    params.seed = 1234;
    Sampler a(params, 0), b(params, 99);
    for (int i = 0; i < 50; ++i) EXPECT_EQ(a.sample(kLogits.data(), 5, {}), b.sample(kLogits.data(), 5, {}));
}

TEST(Sampler, TopKOneIsGreedyAndTopPKeepsTheSmallestNucleus) {
    SamplingParams params;
    params.temperature = 1.0;
    params.top_k = 1;
    Sampler top1(params, 5);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(top1.sample(kLogits.data(), 5, {}), 1);
    // probabilities ~ [0.05, 0.38, 0.38, 0.14, 0.02]: top_p 0.5 keeps ids 1 and 2 only.
    params.top_k = 0;
    params.top_p = 0.5;
    Sampler nucleus(params, 5);
    std::map<int32_t, int> seen;
    for (int i = 0; i < 400; ++i) seen[nucleus.sample(kLogits.data(), 5, {})]++;
    EXPECT_EQ(seen.size(), 2u);
    EXPECT_GT(seen[1], 100);
    EXPECT_GT(seen[2], 100);
}

TEST(Sampler, FrequenciesFollowTheSoftmaxAtTemperature) {
    SamplingParams params;
    params.temperature = 0.5;  // logits / 0.5 = [2, 6, 6, 4, -2]: p(1) = p(2) ~ 0.4642, p(3) ~ 0.0628
    Sampler sampler(params, 17);
    std::map<int32_t, int> seen;
    const int n = 20000;
    for (int i = 0; i < n; ++i) seen[sampler.sample(kLogits.data(), 5, {})]++;
    EXPECT_NEAR(seen[1] / double(n), 0.4642, 0.02);
    EXPECT_NEAR(seen[3] / double(n), 0.0628, 0.01);
}

TEST(SamplingParams, ValidateNamesTheParameter) {
    SamplingParams p;
    p.top_p = 1.5;
    EXPECT_NE(p.validate().message().find("top_p"), std::string::npos);
    p = SamplingParams();
    p.temperature = -1;
    EXPECT_NE(p.validate().message().find("temperature"), std::string::npos);
    p = SamplingParams();
    p.min_tokens = 20;
    p.max_tokens = 10;
    EXPECT_NE(p.validate().message().find("min_tokens"), std::string::npos);
    EXPECT_TRUE(SamplingParams().validate().is_ok());
}

}  // namespace
}  // namespace taco
