#include "exec/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace taco {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 3.0f, 2.0f, -1.0f};

SamplingParams random_params(double temperature = 1.0) {
    SamplingParams params;
    params.temperature = temperature;
    return params;
}

// Draws `num` tokens from a fresh copy of `logits` each time; returns how often each token came up.
std::map<int32_t, int> draw(const SamplingParams& params, const std::vector<float>& logits, int num, uint64_t seed = 7,
                            const SamplingContext& context = {}) {
    Sampler sampler(params, seed);
    std::map<int32_t, int> seen;
    for (int i = 0; i < num; ++i) {
        std::vector<float> row = logits;
        seen[sampler.sample(row, context, nullptr)]++;
    }
    return seen;
}

std::set<int32_t> support(const std::map<int32_t, int>& seen) {
    std::set<int32_t> tokens;
    for (const auto& [token, count] : seen) tokens.insert(token);
    return tokens;
}

// Logits whose softmax is exactly `probs`.
std::vector<float> logits_of(const std::vector<double>& probs) {
    std::vector<float> logits;
    for (double p : probs) logits.push_back(float(std::log(p)));
    return logits;
}

// Runs one greedy step and returns the processed logits (the sampler edits them in place).
std::vector<float> processed(const SamplingParams& params, std::vector<float> logits, const SamplingContext& context) {
    Sampler sampler(params, 0);
    sampler.sample(logits, context, nullptr);
    return logits;
}

TEST(Sampler, GreedyPicksArgmaxWithLowestIdOnTies) {
    SamplingParams params = random_params(0.0);
    std::vector<float> row = kLogits;
    Sampler sampler(params, 0);
    EXPECT_EQ(sampler.sample(row, {}, nullptr), 1);
    const std::vector<int32_t> eos = {1};
    row = kLogits;
    EXPECT_EQ(sampler.sample(row, {{}, {}, eos}, nullptr), 2);  // EOS before min_tokens
    EXPECT_EQ(row[1], -std::numeric_limits<float>::infinity());
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsOfSeenTokens) {
    SamplingParams params = random_params(0.0);
    params.repetition_penalty = 2.0;
    const std::vector<int32_t> prompt = {0, 0, 4}, output = {1};
    // Token 0 (prompt, positive) and 4 (prompt, negative), 1 (output, negative); 2 and 3 unseen.
    const auto out = processed(params, {2.0f, -1.0f, 0.5f, 3.0f, -0.5f}, {prompt, output, {}});
    EXPECT_EQ(out, (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f, -1.0f}));
}

TEST(Sampler, FrequencyPenaltySubtractsCountTimesPenaltyOverOutputOnly) {
    SamplingParams params = random_params(0.0);
    params.frequency_penalty = 0.5;
    const std::vector<int32_t> prompt = {0}, output = {2, 2, 3, 2};
    const auto out = processed(params, {1.0f, 1.0f, 1.0f, 1.0f}, {prompt, output, {}});
    EXPECT_EQ(out, (std::vector<float>{1.0f, 1.0f, -0.5f, 0.5f}));
}

TEST(Sampler, PresencePenaltySubtractsOnceForTokensInOutput) {
    SamplingParams params = random_params(0.0);
    params.presence_penalty = -0.25;  // negative: encourages repeats
    const std::vector<int32_t> prompt = {0}, output = {2, 2, 3};
    const auto out = processed(params, {1.0f, 1.0f, 1.0f, 1.0f}, {prompt, output, {}});
    EXPECT_EQ(out, (std::vector<float>{1.0f, 1.0f, 1.25f, 1.25f}));
}

TEST(Sampler, PenaltiesApplyAfterLogitBiasInVllmOrder) {
    SamplingParams params = random_params(0.0);
    params.logit_bias = {{0, 1.0f}};
    params.repetition_penalty = 1.5;
    params.frequency_penalty = 0.5;
    params.presence_penalty = 0.25;
    const std::vector<int32_t> prompt = {1}, output = {0, 0};
    // token 0: (2 + 1) / 1.5 - 2 * 0.5 - 0.25 = 0.75; token 1: -1 * 1.5 (prompt only: no frequency/presence).
    const auto out = processed(params, {2.0f, -1.0f, 0.3f}, {prompt, output, {}});
    EXPECT_FLOAT_EQ(out[0], 0.75f);
    EXPECT_FLOAT_EQ(out[1], -1.5f);
    EXPECT_FLOAT_EQ(out[2], 0.3f);
}

TEST(Sampler, PenaltiesIgnoreIdsOutsideTheVocabulary) {
    SamplingParams params = random_params(0.0);
    params.repetition_penalty = 2.0;
    params.frequency_penalty = 1.0;
    params.logit_bias = {{99, 5.0f}};
    const std::vector<int32_t> prompt = {-3, 7}, output = {5, 1}, suppressed = {-1, 64};
    const auto out = processed(params, {1.0f, 2.0f, 3.0f}, {prompt, output, suppressed});
    EXPECT_EQ(out, (std::vector<float>{1.0f, 0.0f, 3.0f}));
}

TEST(Sampler, LogitBiasMakesATokenCertainOrImpossible) {
    SamplingParams params = random_params(1.0);
    params.logit_bias = {{4, 100.0f}};
    EXPECT_EQ(support(draw(params, kLogits, 500)), (std::set<int32_t>{4}));

    params.logit_bias = {{1, -100.0f}, {2, -100.0f}};
    const auto seen = draw(params, kLogits, 4000);
    EXPECT_EQ(seen.count(1), 0u);
    EXPECT_EQ(seen.count(2), 0u);
    EXPECT_EQ(support(seen), (std::set<int32_t>{0, 3, 4}));

    params = random_params(0.0);
    params.logit_bias = {{0, 2.5f}};  // greedy follows the biased logits: 1 + 2.5 > 3
    std::vector<float> row = kLogits;
    EXPECT_EQ(Sampler(params, 0).sample(row, {}, nullptr), 0);
}

TEST(Sampler, LogitBiasIsClampedToPlusMinus100AsVllm) {
    SamplingParams params = random_params(0.0);
    params.logit_bias = {{0, 1000.0f}, {1, -1000.0f}};
    const auto out = processed(params, {1.0f, 3.0f, 2.0f}, {});
    EXPECT_EQ(out[0], 101.0f);
    EXPECT_EQ(out[1], -97.0f);
}

TEST(Sampler, TopKKeepsTokensTiedWithTheKthLogit) {
    SamplingParams params = random_params(1.0);
    params.top_k = 1;  // ids 1 and 2 share the largest logit: vLLM keeps both
    EXPECT_EQ(support(draw(params, kLogits, 400)), (std::set<int32_t>{1, 2}));
    params.top_k = 3;
    EXPECT_EQ(support(draw(params, kLogits, 2000)), (std::set<int32_t>{1, 2, 3}));
    params.top_k = -1;  // off
    EXPECT_EQ(support(draw(params, kLogits, 4000)), (std::set<int32_t>{0, 1, 2, 3, 4}));
}

TEST(Sampler, TopPKeepsTheSmallestNucleusReachingP) {
    const auto logits = logits_of({0.1, 0.4, 0.3, 0.2});
    SamplingParams params = random_params(1.0);
    params.top_p = 0.5;  // 0.4 < 0.5 <= 0.4 + 0.3
    EXPECT_EQ(support(draw(params, logits, 2000)), (std::set<int32_t>{1, 2}));
    params.top_p = 0.35;  // the top token alone
    EXPECT_EQ(support(draw(params, logits, 500)), (std::set<int32_t>{1}));
    params.top_p = 0.01;  // never fewer than one token
    EXPECT_EQ(support(draw(params, logits, 200)), (std::set<int32_t>{1}));
    params.top_p = 0.95;
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(Sampler, MinPIsRelativeToTheMostLikelyTokenAfterTemperature) {
    const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
    SamplingParams params = random_params(1.0);
    params.min_p = 0.3;  // relative probabilities 1, 0.75, 0.5, 0.25
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1, 2}));
    params.temperature = 0.5;  // relative probabilities 1, 0.5625, 0.25, 0.0625
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1}));
    params.min_p = 1.0;
    EXPECT_EQ(support(draw(params, logits, 300)), (std::set<int32_t>{0}));
}

TEST(Sampler, TopPWorksOnTheDistributionLeftByTopK) {
    const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
    SamplingParams params = random_params(1.0);
    params.top_p = 0.5;
    EXPECT_EQ(support(draw(params, logits, 2000)), (std::set<int32_t>{0, 1}));
    params.top_k = 2;  // renormalised to 4/7, 3/7: 4/7 alone reaches 0.5
    EXPECT_EQ(support(draw(params, logits, 2000)), (std::set<int32_t>{0}));
}

TEST(Sampler, MinPAppliesBeforeTopP) {
    const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
    SamplingParams params = random_params(1.0);
    params.top_p = 0.75;  // alone: 0.4 + 0.3 < 0.75, so three tokens
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1, 2}));
    params.min_p = 0.5;  // drops token 3 first; renormalised 4/9 + 3/9 >= 0.75
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1}));
}

// vLLM's filters written out literally on a sorted copy: temperature, min_p, top-k, then top-p over the
// ascending cumulative sum (topk_topp_sampler.py), with no shortcuts.
std::vector<int32_t> reference_allowed(const SamplingParams& p, const std::vector<float>& logits) {
    const size_t n = logits.size();
    const double t = std::max(p.temperature, 0.01);
    std::vector<double> x(n);
    double max_x = -INFINITY;
    for (size_t i = 0; i < n; ++i) max_x = std::max(max_x, x[i] = double(logits[i]) / t);
    for (size_t i = 0; i < n; ++i)  // min_p: probability < min_p * max probability
        if (std::exp(x[i] - max_x) < p.min_p) x[i] = -INFINITY;
    if (p.top_k > 0 && size_t(p.top_k) < n) {
        std::vector<double> sorted = x;
        std::sort(sorted.begin(), sorted.end(), std::greater<double>());
        const double kth = sorted[size_t(p.top_k) - 1];
        for (double& v : x)
            if (v < kth) v = -INFINITY;
    }
    if (p.top_p < 1.0) {
        std::vector<size_t> ascending(n);
        for (size_t i = 0; i < n; ++i) ascending[i] = i;
        std::sort(ascending.begin(), ascending.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
        double z = 0;
        for (double v : x) z += std::exp(v - max_x);
        double cumulative = 0;
        for (size_t j = 0; j + 1 < n; ++j) {  // the last (largest) always stays
            const size_t i = ascending[j];
            cumulative += std::exp(x[i] - max_x) / z;
            if (cumulative <= 1 - p.top_p) x[i] = -INFINITY;
        }
    }
    std::vector<int32_t> allowed;
    for (size_t i = 0; i < n; ++i)
        if (x[i] > -INFINITY) allowed.push_back(int32_t(i));
    return allowed;
}

TEST(Sampler, FiltersMatchALiteralVllmReferenceOnLargeVocabularies) {
    std::mt19937 rng(9);
    int checked = 0;
    for (float spread : {0.05f, 1.0f, 4.0f}) {  // flat (huge nucleus) to peaky
        std::normal_distribution<float> normal(0.0f, spread);
        std::vector<float> logits(5000);
        for (float& v : logits) v = normal(rng);
        for (double temperature : {0.3, 1.0, 1.7})
            for (int64_t top_k : {0, 1, 40, 4999})
                for (double top_p : {1.0, 0.9, 0.5, 0.05})
                    for (double min_p : {0.0, 0.2}) {
                        SamplingParams p = random_params(temperature);
                        p.top_k = top_k;
                        p.top_p = top_p;
                        p.min_p = min_p;
                        const auto expected = reference_allowed(p, logits);
                        ASSERT_EQ(Sampler::allowed_tokens(p, logits), expected)
                            << "spread " << spread << " t " << temperature << " k " << top_k << " p " << top_p
                            << " min_p " << min_p;
                        checked += expected.size() > 100;
                    }
    }
    EXPECT_GT(checked, 10);  // some nuclei are large enough to need the quickselect
}

TEST(Sampler, FrequenciesFollowTheSoftmaxAtTemperature) {
    SamplingParams params = random_params(0.5);  // logits / 0.5 = [2, 6, 6, 4, -2]
    const int n = 40000;
    const auto seen = draw(params, kLogits, n, 17);
    double z = 0;
    for (float v : kLogits) z += std::exp(2.0 * v);
    for (int32_t token = 0; token < 5; ++token) {
        const double p = std::exp(2.0 * kLogits[size_t(token)]) / z;
        const double sigma = std::sqrt(p * (1 - p) / n);
        EXPECT_NEAR(seen.count(token) ? seen.at(token) / double(n) : 0.0, p, 5 * sigma + 1e-4) << "token " << token;
    }
}

TEST(Sampler, FrequenciesAfterTopKAndTopPAreRenormalised) {
    const auto logits = logits_of({0.05, 0.5, 0.25, 0.15, 0.05});
    SamplingParams params = random_params(1.0);
    params.top_k = 3;    // 0.5, 0.25, 0.15 -> / 0.9
    params.top_p = 0.8;  // 0.5/0.9 + 0.25/0.9 = 0.83 >= 0.8: keeps two, renormalised to 2/3, 1/3
    const int n = 30000;
    const auto seen = draw(params, logits, n, 3);
    EXPECT_EQ(support(seen), (std::set<int32_t>{1, 2}));
    EXPECT_NEAR(seen.at(1) / double(n), 2.0 / 3.0, 0.015);
}

TEST(Sampler, TinyTemperaturesAreRaisedToVllmsFloor) {
    // At 0.01 the runner-up keeps exp(-5) of the top token's weight; at 1e-4 it would be exp(-500).
    SamplingParams params = random_params(1e-4);
    const auto seen = draw(params, {0.0f, 0.05f}, 30000, 11);
    const double expected = std::exp(-5.0) / (1 + std::exp(-5.0));
    ASSERT_TRUE(seen.count(0));
    EXPECT_NEAR(seen.at(0) / 30000.0, expected, 0.003);
}

TEST(Sampler, SeededSamplingRepeatsExactlyWhateverElseIsSampled) {
    SamplingParams params = random_params(1.0);
    params.seed = 1234;
    Sampler alone(params, 0);
    std::vector<int32_t> expected;
    for (int i = 0; i < 64; ++i) {
        std::vector<float> row = kLogits;
        expected.push_back(alone.sample(row, {}, nullptr));
    }
    // Same seed, a different fallback, interleaved with an unseeded neighbour as in a batch.
    Sampler seeded(params, 99), neighbour(random_params(1.0), 5);
    for (int i = 0; i < 64; ++i) {
        std::vector<float> other = kLogits;
        neighbour.sample(other, {}, nullptr);
        std::vector<float> row = kLogits;
        EXPECT_EQ(seeded.sample(row, {}, nullptr), expected[size_t(i)]) << "step " << i;
    }
    params.seed = 4321;
    Sampler different(params, 0);
    int same = 0;
    for (int i = 0; i < 64; ++i) {
        std::vector<float> row = kLogits;
        same += different.sample(row, {}, nullptr) == expected[size_t(i)];
    }
    EXPECT_LT(same, 64);
}

TEST(Sampler, ImpossibleEverywhereStillReturnsAToken) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> row = {-inf, -inf, -inf};
    Sampler sampler(random_params(1.0), 0);
    const int32_t token = sampler.sample(row, {}, nullptr);
    EXPECT_GE(token, 0);
    EXPECT_LT(token, 3);
}

}  // namespace
}  // namespace taco
