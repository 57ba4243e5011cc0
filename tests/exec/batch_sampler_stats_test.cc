// Goodness of fit: for each sampling mode, 20000 draws of one seeded row (draw indices 0..19999) against the
// exact probabilities, computed here in double from the definitions. Pearson's chi-square must stay below its
// 0.999 quantile, and tokens the mode leaves out must never appear. Seeds are fixed: deterministic.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "batch_sampler_test_util.h"
#include "exec/batch_sampler.h"

namespace taco {
namespace {

using testing::Context;
using testing::draw;
using testing::random_params;

constexpr int kDraws = 20000;
constexpr double kInf = INFINITY;

// The 0.999 quantile of chi-square with df degrees of freedom: a table to 30, Wilson-Hilferty beyond (within
// 0.1% there).
double chi_square_quantile_999(int df) {
    static const double table[] = {10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877, 29.588,
                                   31.264, 32.909, 34.528, 36.123, 37.697, 39.252, 40.790, 42.312, 43.820, 45.315,
                                   46.797, 48.268, 49.728, 51.179, 52.620, 54.052, 55.476, 56.892, 58.301, 59.703};
    if (df <= 30) return table[df - 1];
    const double z = 3.090232;  // the normal's 0.999 quantile
    const double a = 2.0 / (9.0 * df);
    return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

// Softmax of logits / temperature over the tokens with keep[i], 0 elsewhere.
std::vector<double> softmax(const std::vector<double>& logits, double temperature, const std::vector<bool>& keep) {
    double max_logit = -kInf;
    for (size_t i = 0; i < logits.size(); ++i)
        if (keep[i]) max_logit = std::max(max_logit, logits[i]);
    std::vector<double> p(logits.size(), 0.0);
    for (size_t i = 0; i < logits.size(); ++i)
        if (keep[i]) p[i] = std::exp((logits[i] - max_logit) / temperature);
    const double z = std::accumulate(p.begin(), p.end(), 0.0);
    for (double& v : p) v /= z;
    return p;
}

std::vector<bool> finite(const std::vector<double>& logits) {
    std::vector<bool> keep;
    for (double v : logits) keep.push_back(std::isfinite(v));
    return keep;
}

// The expected distribution of vLLM's pipeline over (already penalised) logits, from the definitions.
std::vector<double> expected_probs(const SamplingParams& p, const std::vector<double>& logits) {
    const double t = std::max(p.temperature, 0.01);
    std::vector<bool> keep = finite(logits);
    std::vector<double> probs = softmax(logits, t, keep);
    const double max_prob = *std::max_element(probs.begin(), probs.end());
    for (size_t i = 0; i < probs.size(); ++i) keep[i] = keep[i] && probs[i] >= p.min_p * max_prob;
    if (p.top_k > 0) {
        std::vector<double> sorted;
        for (size_t i = 0; i < logits.size(); ++i)
            if (keep[i]) sorted.push_back(logits[i]);
        std::sort(sorted.rbegin(), sorted.rend());
        if (size_t(p.top_k) < sorted.size())
            for (size_t i = 0; i < logits.size(); ++i) keep[i] = keep[i] && logits[i] >= sorted[size_t(p.top_k) - 1];
    }
    probs = softmax(logits, t, keep);
    if (p.top_p < 1.0) {  // the most likely tokens until their mass reaches p
        std::vector<size_t> order(logits.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return probs[a] > probs[b]; });
        double mass = 0;
        std::vector<bool> nucleus(logits.size(), false);
        for (size_t i : order) {
            if (mass >= p.top_p || probs[i] == 0) break;
            nucleus[i] = true;
            mass += probs[i];
        }
        probs = softmax(logits, t, nucleus);
    }
    return probs;
}

std::vector<float> to_float(const std::vector<double>& logits) { return {logits.begin(), logits.end()}; }

// Bins of expected count >= 20 (tokens in decreasing probability, the tail pooled); the statistic over them.
void expect_fits(const SamplingParams& params, const std::vector<float>& logits, const std::vector<double>& probs,
                 uint64_t seed, const Context& context = {}) {
    const auto seen = draw(params, logits, kDraws, seed, context);
    for (const auto& [token, count] : seen)
        ASSERT_GT(probs[size_t(token)], 0.0) << "token " << token << " is not allowed but came up " << count;
    std::vector<size_t> order(probs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return probs[a] > probs[b]; });
    std::vector<double> expected_bins, observed_bins;
    double expected = 0, observed = 0;
    for (size_t i : order) {
        if (probs[i] == 0) break;
        expected += probs[i] * kDraws;
        observed += seen.count(int32_t(i)) ? seen.at(int32_t(i)) : 0;
        if (expected >= 20) {
            expected_bins.push_back(expected);
            observed_bins.push_back(observed);
            expected = observed = 0;
        }
    }
    if (expected > 0) {  // a light tail joins the last bin
        ASSERT_FALSE(expected_bins.empty());
        expected_bins.back() += expected;
        observed_bins.back() += observed;
    }
    ASSERT_GE(expected_bins.size(), 2u) << "nothing to test: one bin";
    double statistic = 0;
    for (size_t b = 0; b < expected_bins.size(); ++b)
        statistic += (observed_bins[b] - expected_bins[b]) * (observed_bins[b] - expected_bins[b]) / expected_bins[b];
    const int df = int(expected_bins.size()) - 1;
    EXPECT_LT(statistic, chi_square_quantile_999(df)) << df << " degrees of freedom";
}

const std::vector<double> kEight = {1.0, 2.0, 0.5, -0.3, 1.7, 0.0, 2.2, -1.0};

TEST(BatchSamplerStats, PlainSamplingFollowsTheSoftmax) {
    const std::vector<double> logits = {std::log(0.05), std::log(0.1),  std::log(0.15), -kInf,
                                        std::log(0.2),  std::log(0.22), std::log(0.28)};
    const SamplingParams params = random_params(1.0);
    expect_fits(params, to_float(logits), expected_probs(params, logits), 1);
}

TEST(BatchSamplerStats, TemperatureSharpensOrFlattensTheSoftmax) {
    for (double temperature : {0.6, 1.8}) {
        const SamplingParams params = random_params(temperature);
        expect_fits(params, to_float(kEight), expected_probs(params, kEight), 2);
    }
}

TEST(BatchSamplerStats, TinyTemperaturesSampleAtVllmsFloor) {
    // At 0.01 the runner-up keeps exp(-5) of the top token's weight; at 1e-4 it would be exp(-500).
    const std::vector<double> logits = {0.0, 0.05};
    const SamplingParams params = random_params(1e-4);
    const std::vector<double> probs = expected_probs(params, logits);
    EXPECT_NEAR(probs[0], std::exp(-5.0) / (1 + std::exp(-5.0)), 1e-6);
    expect_fits(params, to_float(logits), probs, 3);
}

TEST(BatchSamplerStats, TopKRenormalisesTheKMostLikely) {
    SamplingParams params = random_params(0.9);
    params.top_k = 4;
    expect_fits(params, to_float(kEight), expected_probs(params, kEight), 4);
}

TEST(BatchSamplerStats, TopPRenormalisesTheNucleus) {
    SamplingParams params = random_params(1.1);
    params.top_p = 0.7;
    const std::vector<double> probs = expected_probs(params, kEight);
    EXPECT_EQ(std::count(probs.begin(), probs.end(), 0.0), 5);  // a real cut: three tokens left
    expect_fits(params, to_float(kEight), probs, 5);
}

TEST(BatchSamplerStats, MinPRenormalisesTheTokensNearTheTop) {
    SamplingParams params = random_params(0.7);
    params.min_p = 0.25;
    const std::vector<double> probs = expected_probs(params, kEight);
    EXPECT_EQ(std::count(probs.begin(), probs.end(), 0.0), 5);
    expect_fits(params, to_float(kEight), probs, 6);
}

TEST(BatchSamplerStats, AllFiltersTogether) {
    SamplingParams params = random_params(0.8);
    params.top_k = 6;
    params.top_p = 0.9;
    params.min_p = 0.05;
    expect_fits(params, to_float(kEight), expected_probs(params, kEight), 7);
}

TEST(BatchSamplerStats, PenaltiesLogitBiasAndSuppressedIdsShiftTheSoftmax) {
    SamplingParams params = random_params(1.0);
    params.repetition_penalty = 1.4;
    params.frequency_penalty = 0.3;
    params.presence_penalty = 0.2;
    params.logit_bias = {{2, 1.5f}, {6, -0.8f}};
    const Context context{{0, 3, 3}, {1, 1, 6, 4}, {7}};
    // By hand: bias, then repetition over prompt + output, frequency and presence over the output.
    std::vector<double> logits = kEight;
    logits[2] += 1.5;
    logits[6] -= 0.8;
    for (size_t i : {0, 1, 3, 4, 6}) logits[i] = logits[i] > 0 ? logits[i] / 1.4 : logits[i] * 1.4;
    logits[1] -= 2 * 0.3 + 0.2;
    logits[4] -= 0.3 + 0.2;
    logits[6] -= 0.3 + 0.2;
    logits[7] = -kInf;
    expect_fits(params, to_float(kEight), expected_probs(params, logits), 8, context);
}

TEST(BatchSamplerStats, LargeVocabularyWithTheCutOffAtWork) {
    // 3000 tokens, spread 3: most are ruled out by their logit or their random bits before any logarithm.
    std::mt19937 rng(21);
    std::normal_distribution<double> normal(0.0, 3.0);
    std::vector<double> logits(3000);
    for (double& v : logits) v = double(float(normal(rng)));
    for (double temperature : {1.0, 0.5}) {
        const SamplingParams params = random_params(temperature);
        expect_fits(params, to_float(logits), expected_probs(params, logits), 9);
    }
    SamplingParams min_p = random_params(1.0);
    min_p.min_p = 0.01;
    expect_fits(min_p, to_float(logits), expected_probs(min_p, logits), 10);
}

}  // namespace
}  // namespace taco
