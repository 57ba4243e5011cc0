// Expert routing against hand-worked cases and a double-precision scalar reference written from the formulas.
#include "model/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace taco {
namespace {

MoeSpec softmax_spec(int64_t num_experts, int64_t top_k, bool renormalize) {
    MoeSpec spec;
    spec.num_experts = num_experts;
    spec.top_k = top_k;
    spec.routing = MoeRouting::kSoftmaxTopK;
    spec.renormalize = renormalize;
    return spec;
}

MoeSpec sparse_mixer_spec(int64_t num_experts, float eps) {
    MoeSpec spec;
    spec.num_experts = num_experts;
    spec.top_k = 2;
    spec.routing = MoeRouting::kSparseMixer;
    spec.sparsemixer_eps = eps;
    return spec;
}

std::vector<ExpertChoice> route(std::vector<float> logits, const MoeSpec& spec) {
    const int64_t tokens = int64_t(logits.size()) / spec.num_experts;
    TensorView view(logits.data(), DType::kF32, {tokens, spec.num_experts});
    return route_tokens(view, spec);
}

TEST(MoeRouting, SoftmaxTopKKeepsTheLargestProbabilitiesAndRenormalises) {
    // softmax(log p) = p for p summing to 1.
    std::vector<float> logits = {std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f)};
    auto kept = route(logits, softmax_spec(4, 2, false));
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_EQ(kept[0].expert, 3);
    EXPECT_EQ(kept[1].expert, 2);
    EXPECT_NEAR(kept[0].weight, 0.4f, 1e-6);
    EXPECT_NEAR(kept[1].weight, 0.3f, 1e-6);
    auto renormalised = route(logits, softmax_spec(4, 2, true));
    EXPECT_NEAR(renormalised[0].weight, 4.0f / 7.0f, 1e-6);
    EXPECT_NEAR(renormalised[1].weight, 3.0f / 7.0f, 1e-6);
}

TEST(MoeRouting, TiesGoToTheLowerExpertId) {
    auto kept = route({0.5f, 2.0f, 0.5f, 2.0f, 0.5f}, softmax_spec(5, 3, true));
    EXPECT_EQ(kept[0].expert, 1);
    EXPECT_EQ(kept[1].expert, 3);
    EXPECT_EQ(kept[2].expert, 0);
}

TEST(MoeRouting, SoftmaxTopKMatchesAScalarReferenceOnRandomLogits) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (bool renormalize : {false, true}) {
        const int64_t experts = 8, top_k = 3, tokens = 50;
        std::vector<float> logits(size_t(experts * tokens));
        for (float& v : logits) v = normal(rng);
        auto got = route(logits, softmax_spec(experts, top_k, renormalize));
        for (int64_t t = 0; t < tokens; ++t) {
            const float* l = logits.data() + t * experts;
            double max = *std::max_element(l, l + experts), sum = 0;
            std::vector<double> p(static_cast<size_t>(experts));
            for (int64_t e = 0; e < experts; ++e) sum += p[size_t(e)] = std::exp(double(l[e]) - max);
            for (double& v : p) v /= sum;
            std::vector<int> order(static_cast<size_t>(experts));
            for (int e = 0; e < experts; ++e) order[size_t(e)] = e;
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[size_t(a)] > p[size_t(b)]; });
            double kept = 0;
            for (int64_t r = 0; r < top_k; ++r) kept += p[size_t(order[size_t(r)])];
            for (int64_t r = 0; r < top_k; ++r) {
                const ExpertChoice& c = got[size_t(t * top_k + r)];
                EXPECT_EQ(c.expert, order[size_t(r)]) << "token " << t << " rank " << r;
                double expected = p[size_t(order[size_t(r)])] / (renormalize ? kept : 1.0);
                EXPECT_NEAR(c.weight, expected, 1e-6) << "token " << t << " rank " << r;
            }
        }
    }
}

TEST(MoeRouting, SparseMixerMasksLogitsFarBelowTheMaximum) {
    // eps 0.1: a logit joins the softmax when (max - s) / max(|s|, max) <= 0.2.
    // Round 1: max 3.0 (expert 1); 2.9 is within 0.033, 1.0 and -1.0 are masked -> w = 1 / (1 + e^-0.1).
    // Round 2: expert 1 removed; max 2.9 (expert 2); 1.0 and -1.0 are masked -> w = 1.
    auto kept = route({1.0f, 3.0f, 2.9f, -1.0f}, sparse_mixer_spec(4, 0.1f));
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_EQ(kept[0].expert, 1);
    EXPECT_NEAR(kept[0].weight, 1.0 / (1.0 + std::exp(-0.1)), 1e-6);
    EXPECT_EQ(kept[1].expert, 2);
    EXPECT_NEAR(kept[1].weight, 1.0f, 1e-6);
    // A tight eps masks 2.9 in round 1 too: the first weight becomes 1.
    auto tight = route({1.0f, 3.0f, 2.9f, -1.0f}, sparse_mixer_spec(4, 0.01f));
    EXPECT_EQ(tight[0].expert, 1);
    EXPECT_NEAR(tight[0].weight, 1.0f, 1e-6);
}

// PhiMoE's sparsemixer (training off) transcribed in double precision.
std::vector<std::pair<int, double>> sparse_mixer_reference(const float* s, int n, double eps) {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> scores(s, s + n), remaining = scores;
    std::vector<std::pair<int, double>> out;
    for (int round = 0; round < 2; ++round) {
        int top = int(std::max_element(remaining.begin(), remaining.end()) - remaining.begin());
        double max = remaining[size_t(top)], sum = 0;
        std::vector<double> gates(static_cast<size_t>(n));
        for (int j = 0; j < n; ++j) {
            bool masked = (max - scores[size_t(j)]) / std::max(std::abs(scores[size_t(j)]), max) > 2 * eps;
            gates[size_t(j)] = masked ? -inf : remaining[size_t(j)];
            sum += std::exp(gates[size_t(j)] - max);
        }
        out.emplace_back(top, std::exp(gates[size_t(top)] - max) / sum);
        remaining[size_t(top)] = -inf;
    }
    return out;
}

TEST(MoeRouting, SparseMixerMatchesAScalarReferenceOnRandomLogits) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int experts = 16, tokens = 64;
    std::vector<float> logits(size_t(experts * tokens));
    for (float& v : logits) v = normal(rng);
    for (float eps : {0.01f, 0.3f}) {
        auto got = route(logits, sparse_mixer_spec(experts, eps));
        for (int t = 0; t < tokens; ++t) {
            auto expected = sparse_mixer_reference(logits.data() + t * experts, experts, eps);
            for (int r = 0; r < 2; ++r) {
                EXPECT_EQ(got[size_t(2 * t + r)].expert, expected[size_t(r)].first) << "token " << t;
                EXPECT_NEAR(got[size_t(2 * t + r)].weight, expected[size_t(r)].second, 1e-6) << "token " << t;
            }
        }
    }
}

TEST(MoeRouting, EachTokenIsRoutedFromItsOwnLogitsAlone) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int experts = 6, tokens = 9;
    std::vector<float> logits(size_t(experts * tokens));
    for (float& v : logits) v = normal(rng);
    for (const MoeSpec& spec : {softmax_spec(experts, 2, true), sparse_mixer_spec(experts, 0.01f)}) {
        auto together = route(logits, spec);
        for (int t = 0; t < tokens; ++t) {
            auto alone =
                route(std::vector<float>(logits.begin() + t * experts, logits.begin() + (t + 1) * experts), spec);
            for (int r = 0; r < 2; ++r) {
                EXPECT_EQ(alone[size_t(r)].expert, together[size_t(2 * t + r)].expert);
                EXPECT_EQ(alone[size_t(r)].weight, together[size_t(2 * t + r)].weight);
            }
        }
    }
}

}  // namespace
}  // namespace taco
