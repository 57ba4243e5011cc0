#include "exec/token_filter.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace taco {
namespace {

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

TEST(TokenFilter, MatchesALiteralVllmReferenceOnLargeVocabularies) {
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
                        SamplingParams p;
                        p.temperature = temperature;
                        p.top_k = top_k;
                        p.top_p = top_p;
                        p.min_p = min_p;
                        const auto expected = reference_allowed(p, logits);
                        ASSERT_EQ(TokenFilter::allowed_tokens(p, logits), expected)
                            << "spread " << spread << " t " << temperature << " k " << top_k << " p " << top_p
                            << " min_p " << min_p;
                        checked += expected.size() > 100;
                    }
    }
    EXPECT_GT(checked, 10);  // some nuclei are large enough to need the quickselect
}

TEST(TokenFilter, RestrictsOnlyWhenAFilterCanLeaveATokenOut) {
    SamplingParams p;
    EXPECT_FALSE(TokenFilter::restricts(p, 10));
    p.top_k = 10;  // the whole vocabulary
    EXPECT_FALSE(TokenFilter::restricts(p, 10));
    p.top_k = -1;
    EXPECT_FALSE(TokenFilter::restricts(p, 10));
    p.top_k = 9;
    EXPECT_TRUE(TokenFilter::restricts(p, 10));
    p.top_k = 0;
    p.top_p = 0.99;
    EXPECT_TRUE(TokenFilter::restricts(p, 10));
    p.top_p = 1.0;
    p.min_p = 1e-9;
    EXPECT_TRUE(TokenFilter::restricts(p, 10));
}

std::vector<int32_t> allowed(const SamplingParams& p, const std::vector<float>& logits) {
    return TokenFilter::allowed_tokens(p, logits);
}

TEST(TokenFilter, UnrestrictedAllowsEveryFiniteLogitAndNothingWithoutOne) {
    const SamplingParams p;
    EXPECT_EQ(allowed(p, {1.0f, -INFINITY, NAN, -1e30f}), (std::vector<int32_t>{0, 3}));
    EXPECT_TRUE(allowed(p, {-INFINITY, NAN}).empty());
    SamplingParams top_p;
    top_p.top_p = 0.5;
    EXPECT_TRUE(allowed(top_p, {-INFINITY, NAN}).empty());
    EXPECT_EQ(allowed(top_p, {0.0f, NAN, 5.0f}), (std::vector<int32_t>{2}));
}

}  // namespace
}  // namespace taco
