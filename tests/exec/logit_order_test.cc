#include "exec/logit_order.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace taco {
namespace {

// The definitions, one element at a time.
int32_t reference_argmax(const std::vector<float>& logits) {
    int32_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (order_key(logits[i]) > order_key(logits[size_t(best)])) best = int32_t(i);
    return best;
}

TEST(LogitOrder, VectorArgmaxAndMaxMatchTheScalarDefinitionWithNaNInfAndTies) {
    std::mt19937 rng(17);
    std::uniform_int_distribution<int> pick(0, 9);
    for (size_t n = 1; n <= 70; ++n)
        for (int trial = 0; trial < 50; ++trial) {
            std::vector<float> logits(n);
            for (float& v : logits) {
                const int kind = pick(rng);  // few distinct values, so ties across lanes are common
                v = kind == 0 ? NAN : kind == 1 ? -INFINITY : kind == 2 && trial % 7 == 0 ? INFINITY : float(kind % 4);
            }
            const int32_t expected = reference_argmax(logits);
            ASSERT_EQ(argmax_token(logits), expected) << "n " << n << " trial " << trial;
            const double expected_max = order_key(logits[size_t(expected)]);
            EXPECT_EQ(double(max_logit(logits)), expected_max);
        }
    EXPECT_EQ(argmax_token(std::vector<float>(9, NAN)), 0);
    EXPECT_EQ(max_logit(std::vector<float>(9, NAN)), -INFINITY);
    std::vector<float> last(33, -1.0f);
    last[32] = 0.0f;  // past the vector part
    EXPECT_EQ(argmax_token(last), 32);
}

TEST(LogitOrder, KthLargestCountsTies) {
    std::vector<double> heap;
    const std::vector<float> logits = {1.0f, 3.0f, NAN, 3.0f, 2.0f};
    EXPECT_EQ(kth_largest(logits, 1, heap), 3.0);
    EXPECT_EQ(kth_largest(logits, 2, heap), 3.0);
    EXPECT_EQ(kth_largest(logits, 3, heap), 2.0);
    EXPECT_EQ(kth_largest(logits, 5, heap), -INFINITY);  // NaN orders lowest
}

}  // namespace
}  // namespace taco
