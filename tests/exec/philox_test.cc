#include "exec/philox.h"

#include <cmath>
#include <cstring>
#include <set>

#include <gtest/gtest.h>

namespace taco {
namespace {

using philox::Block;

void expect_block(const Block& got, const Block& expected) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.w[i], expected.w[i]) << "word " << i;
}

// Random123's tests/kat_vectors, "philox4x32 10" lines: counter words, key words, output words.
TEST(Philox, MatchesRandom123KnownAnswerVectors) {
    expect_block(philox::philox4x32_10({{0, 0, 0, 0}}, 0, 0), {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}});
    expect_block(philox::philox4x32_10({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff),
                 {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}});
    expect_block(philox::philox4x32_10({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0),
                 {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}});
}

TEST(Philox, TokenBitsAreOneWordOfTheirGroupsBlockKeyedBySeedAndDraw) {
    const uint64_t seed = 0x299f31d0a4093822ull;
    const int64_t draw = 0x85a308d3243f6a88ll;
    // Counter (draw low, draw high, token / 4, 0), key (seed low, seed high).
    const Block block = philox::philox4x32_10({{0x243f6a88, 0x85a308d3, 7, 0}}, 0xa4093822, 0x299f31d0);
    for (int32_t lane = 0; lane < 4; ++lane) EXPECT_EQ(philox::token_bits(seed, draw, 28 + lane), block.w[lane]);
    expect_block(philox::token_group_bits(seed, draw, 7), block);
    // Every input matters.
    const uint32_t bits = philox::token_bits(seed, draw, 30);
    EXPECT_NE(philox::token_bits(seed + 1, draw, 30), bits);
    EXPECT_NE(philox::token_bits(seed ^ (1ull << 40), draw, 30), bits);
    EXPECT_NE(philox::token_bits(seed, draw + 1, 30), bits);
    EXPECT_NE(philox::token_bits(seed, draw ^ (1ll << 40), 30), bits);
    EXPECT_NE(philox::token_bits(seed, draw, 34), bits);
}

int ulp_distance(float a, float b) {
    int32_t x, y;
    std::memcpy(&x, &a, sizeof x);
    std::memcpy(&y, &b, sizeof y);
    return std::abs(x - y);  // both positive or both negative here, or a zero beside them
}

TEST(Philox, LogIsWithinAnUlpOfTheCorrectlyRoundedLogOverAllPositiveNormalFloats) {
    int worst = 0;
    float worst_x = 0;
    // Every 61st bit pattern from the smallest normal float to the largest finite one, then the few near 1
    // (where the result is small and relative accuracy hardest) one by one.
    auto check = [&](uint32_t bits) {
        const float x = philox::bits_to_float(bits);
        const int distance = ulp_distance(philox::log_positive(x), float(std::log(double(x))));
        if (distance > worst) worst = distance, worst_x = x;
    };
    for (uint64_t bits = 0x00800000; bits < 0x7f800000; bits += 61) check(uint32_t(bits));
    for (uint32_t bits = 0x3f7f0000; bits < 0x3f810000; ++bits) check(bits);
    EXPECT_LE(worst, 1) << "at " << worst_x;
    EXPECT_EQ(philox::log_positive(1.0f), 0.0f);
    EXPECT_EQ(philox::log_positive(2.0f), float(std::log(2.0)));
}

TEST(Philox, UniformIsStrictlyInsideZeroAndOne) {
    EXPECT_EQ(philox::uniform_open(0), 0x1p-24f);
    EXPECT_EQ(philox::uniform_open(0x1ff), 0x1p-24f);
    EXPECT_EQ(philox::uniform_open(0xffffffff), 1.0f - 0x1p-24f);
    EXPECT_LT(philox::uniform_open(0xffffffff), 1.0f);
    EXPECT_EQ(philox::uniform_open(0x80000000), 0.5f + 0x1p-24f);
}

// All 2^23 values the noise can take: accurate, monotone, within its published bounds and below the
// integer-only upper bound that BatchSampler uses to rule tokens out.
TEST(Philox, GumbelNoiseIsAccurateMonotoneAndBoundedForEveryInput) {
    double worst_error = 0;
    float previous = -INFINITY, lowest = INFINITY, highest = -INFINITY;
    int64_t not_monotone = 0, above_bound = 0;
    for (uint32_t m = 0; m < (1u << 23); ++m) {
        const uint32_t bits = (m << 9) | (m & 0x1ff);  // the low 9 bits are not used
        const float g = philox::gumbel_from_bits(bits);
        const double u = (2.0 * m + 1) / 16777216.0;
        const double exact = -std::log(-std::log(u));
        worst_error = std::max(worst_error, std::fabs(g - exact) / std::max(1.0, std::fabs(exact)));
        not_monotone += g < previous;
        above_bound += g > philox::gumbel_upper_bound(bits);
        previous = g;
        lowest = std::min(lowest, g);
        highest = std::max(highest, g);
    }
    EXPECT_LT(worst_error, 4e-7);
    EXPECT_EQ(not_monotone, 0);
    EXPECT_EQ(above_bound, 0);
    EXPECT_GE(lowest, philox::kMinGumbel);
    EXPECT_LE(highest, philox::kMaxGumbel);
    EXPECT_NEAR(lowest, -std::log(24 * std::log(2.0)), 1e-5);
    EXPECT_NEAR(highest, 24 * std::log(2.0), 1e-5);
}

TEST(Philox, GumbelUpperBoundIsTightForMostBits) {
    // Loose by at most ln 2 + (1 - u) for u >= 1/2: a bound that ruled nothing out would be useless.
    int64_t loose = 0;
    for (uint32_t m = 1u << 22; m < (1u << 23); m += 7) {
        const uint32_t bits = m << 9;
        const double v = 1 - philox::uniform_open(bits);
        loose += philox::gumbel_upper_bound(bits) - philox::gumbel_from_bits(bits) > std::log(2.0) + v + 1e-3;
    }
    EXPECT_EQ(loose, 0);
}

TEST(Philox, GumbelNoiseHasTheGumbelMeanAndVariance) {
    // Mean: the Euler-Mascheroni constant; variance: pi^2 / 6. Over 2^20 tokens of one draw.
    const int n = 1 << 20;
    double sum = 0, sum_sq = 0;
    std::set<float> distinct;
    for (int32_t token = 0; token < n; ++token) {
        const double g = gumbel_noise(42, 3, token);
        sum += g;
        sum_sq += g * g;
        if (token < 1000) distinct.insert(float(g));
    }
    const double mean = sum / n, variance = sum_sq / n - mean * mean;
    EXPECT_NEAR(mean, 0.5772156649, 5 * std::sqrt(1.6449 / n));
    EXPECT_NEAR(variance, 1.6449340668, 0.01);
    EXPECT_GT(distinct.size(), 990u);
}

// A hash of the noise and keys over every input: any bit that differs changes it.
template <class Noise, class Key>
uint64_t hash_of_all_noise(Noise noise, Key key) {
    uint64_t hash = 1469598103934665603ull;  // FNV-1a
    for (uint32_t m = 0; m < (1u << 23); m += 3) {
        const float g = noise(m << 9);
        const float k = key(float(m % 1000) / 7.0f, g);
        hash = (hash ^ philox::float_to_bits(g)) * 1099511628211ull;
        hash = (hash ^ philox::float_to_bits(k)) * 1099511628211ull;
    }
    return hash;
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
// Compiled for FMA, where GCC fuses a product into the add that uses it unless told not to.
__attribute__((target("fma"))) uint64_t hash_with_fma() {
    return hash_of_all_noise([](uint32_t bits) { return philox::gumbel_from_bits(bits); },
                             [](float logit, float g) { return gumbel_key(logit, 9.0f, 0.7f, g); });
}
#endif

TEST(Philox, NoiseIsTheSameBitsWhenTheCompilerMayFuseMultiplyAdds) {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    if (!__builtin_cpu_supports("fma")) GTEST_SKIP() << "no FMA on this CPU";
    const uint64_t plain = hash_of_all_noise([](uint32_t bits) { return philox::gumbel_from_bits(bits); },
                                             [](float logit, float g) { return gumbel_key(logit, 9.0f, 0.7f, g); });
    EXPECT_EQ(hash_with_fma(), plain);
#else
    GTEST_SKIP() << "x86-64 only";
#endif
}

TEST(Philox, GumbelKeyIsScaledLogitPlusNoise) {
    EXPECT_EQ(gumbel_key(3.0f, 5.0f, 0.5f, 1.25f), -2.75f);
    EXPECT_EQ(gumbel_key(5.0f, 5.0f, 0.01f, -0.5f), -0.5f);
    EXPECT_EQ(gumbel_key(-INFINITY, 5.0f, 1.0f, 16.0f), -INFINITY);
}

}  // namespace
}  // namespace taco
