// The SIMD canonical dot products equal the scalar definition bit for bit (kernels/ops.h).
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "kernels/cpu/canonical_dot.h"
#include "kernels/cpu/dot_internal.h"
#include "kernels/cpu/matmul_internal.h"

namespace taco::cpu {
namespace {

TEST(CanonicalDot, SimdFormsAreBitIdenticalToScalar) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    for (int64_t k : {0, 1, 3, 15, 16, 17, 31, 64, 100, 128, 257, 4096}) {
        std::vector<float> a(static_cast<size_t>(k)), b(static_cast<size_t>(k));
        for (int64_t i = 0; i < k; ++i) {
            // Mixed magnitudes, and products that underflow to -0 in the tail.
            a[size_t(i)] = normal(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);
            b[size_t(i)] = i >= k - 3 ? -1e-30f * std::abs(a[size_t(i)]) : normal(rng);
        }
        const float expected = canonical_dot_f32(a.data(), b.data(), k);
        auto same_bits = [](float x, float y) { return std::memcmp(&x, &y, sizeof(float)) == 0; };
        if (cpu_supports(CpuIsa::kAvx2)) {
            EXPECT_TRUE(same_bits(dot_f32_avx2(a.data(), b.data(), k), expected)) << k;
        }
        if (cpu_supports(CpuIsa::kAvx512)) {
            EXPECT_TRUE(same_bits(dot_f32_avx512(a.data(), b.data(), k), expected)) << k;
        }
        EXPECT_TRUE(same_bits(dot_f32(a.data(), b.data(), k), expected)) << k;
    }
}

}  // namespace
}  // namespace taco::cpu
