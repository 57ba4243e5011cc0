// The ops families add to the decoder (embedding scale, soft-capping, per-head LayerNorm, relu^2) against
// straightforward double-precision references.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/ops.h"

namespace taco::ops {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> out(n);
    for (float& v : out) v = normal(rng) * scale;
    return out;
}

TEST(PointwiseOps, ScaleInplaceMultipliesEveryElement) {
    auto x = random_values(37, 1, 2.0f);
    const auto before = x;
    scale_inplace(ExecContext::cpu(), TensorView(x.data(), DType::kF32, {37}), 8.0f);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], before[i] * 8.0f);
}

TEST(PointwiseOps, SoftcapBoundsValuesAndKeepsSmallOnesNearlyUnchanged) {
    std::vector<float> x = {-1000.0f, -30.0f, -0.01f, 0.0f, 0.01f, 5.0f, 29.0f, 1e6f};
    const auto before = x;
    softcap_inplace(ExecContext::cpu(), TensorView(x.data(), DType::kF32, {2, 4}), 30.0f);
    for (size_t i = 0; i < x.size(); ++i) {
        const double expected = 30.0 * std::tanh(double(before[i]) / 30.0);
        EXPECT_NEAR(x[i], expected, 1e-5 * std::max(1.0, std::abs(expected))) << before[i];
        EXPECT_LE(std::abs(x[i]), 30.0f);
    }
    EXPECT_NEAR(x[2], -0.01f, 1e-7);
}

TEST(PointwiseOps, PerHeadLayerNormUsesEachHeadsOwnWeightAndBias) {
    const int64_t tokens = 3, heads = 4, dim = 24;
    auto x = random_values(size_t(tokens * heads * dim), 2, 3.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] += float(i % 5);  // a mean to remove
    const auto weight = random_values(size_t(heads * dim), 3, 1.0f);
    const auto bias = random_values(size_t(heads * dim), 4, 0.5f);
    const auto before = x;
    Tensor w = Tensor::empty({heads, dim}, DType::kF32), b = Tensor::empty({heads, dim}, DType::kF32);
    std::copy(weight.begin(), weight.end(), w.as<float>());
    std::copy(bias.begin(), bias.end(), b.as<float>());
    per_head_layer_norm(ExecContext::cpu(), TensorView(x.data(), DType::kF32, {tokens, heads, dim}), w, &b.view(),
                        1e-5f);
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t h = 0; h < heads; ++h) {
            const float* v = before.data() + (t * heads + h) * dim;
            double mean = 0, var = 0;
            for (int64_t i = 0; i < dim; ++i) mean += v[i];
            mean /= double(dim);
            for (int64_t i = 0; i < dim; ++i) var += (v[i] - mean) * (v[i] - mean);
            var /= double(dim);
            for (int64_t i = 0; i < dim; ++i) {
                const double expected =
                    (v[i] - mean) / std::sqrt(var + 1e-5) * weight[size_t(h * dim + i)] + bias[size_t(h * dim + i)];
                EXPECT_NEAR(x[size_t((t * heads + h) * dim + i)], expected, 1e-4) << t << " " << h << " " << i;
            }
        }
    }
}

TEST(PointwiseOps, Relu2SquaresPositivePartOnly) {
    std::vector<float> x = {-2.0f, -0.0f, 0.5f, 3.0f};
    activation_inplace(ExecContext::cpu(), TensorView(x.data(), DType::kF32, {4}), Activation::kRelu2);
    EXPECT_EQ(x, (std::vector<float>{0.0f, 0.0f, 0.25f, 9.0f}));
}

}  // namespace
}  // namespace taco::ops
