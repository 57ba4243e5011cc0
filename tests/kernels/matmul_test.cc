// The SIMD matmul paths against the scalar canonical dot product (kernels/ops.h), bit for bit.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/tensor.h"
#include "kernels/cpu/canonical_dot.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/ops.h"

namespace taco::cpu {
namespace {

constexpr CpuIsa kAllIsas[] = {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512};
constexpr DType kWeightDtypes[] = {DType::kF32, DType::kF16, DType::kBF16};

uint32_t bits_of(float v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof(b));
    return b;
}

// Random x [m, k] f32 and w [n, k] in `dtype`, values of both signs and mixed magnitudes so that any change
// in summation order shows up in the low bits.
struct Problem {
    int64_t m, n, k;
    DType w_dtype;
    std::vector<float> x;
    std::vector<uint8_t> w;  // raw bytes, n * k * dtype_size_bytes(w_dtype)

    Problem(int64_t m_in, int64_t n_in, int64_t k_in, DType dtype, uint32_t seed)
        : m(m_in),
          n(n_in),
          k(k_in),
          w_dtype(dtype),
          x(size_t(m_in * k_in)),
          w(size_t(n_in * k_in) * dtype_size_bytes(dtype)) {
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> value(-1.0f, 1.0f);
        std::uniform_int_distribution<int> scale_exp(-6, 6);
        auto draw = [&] { return std::ldexp(value(rng), scale_exp(rng)); };
        for (float& v : x) v = draw();
        for (int64_t i = 0; i < n * k; ++i) {
            const float v = draw();
            if (dtype == DType::kF32) {
                std::memcpy(w.data() + i * 4, &v, 4);
            } else {
                const uint16_t h = dtype == DType::kF16 ? f32_to_f16(v) : f32_to_bf16(v);
                std::memcpy(w.data() + i * 2, &h, 2);
            }
        }
    }

    MatmulArgs args(std::vector<float>& y) const {
        y.assign(size_t(m * n), -12345.0f);
        return {x.data(), w.data(), w_dtype, y.data(), m, n, k};
    }

    float reference(int64_t i, int64_t j) const {
        const void* w_row = w.data() + size_t(j * k) * dtype_size_bytes(w_dtype);
        return canonical_dot_any(x.data() + i * k, w_row, w_dtype, k);
    }
};

std::string describe(CpuIsa isa, const Problem& p) {
    return std::string(cpu_isa_name(isa)) + " w=" + std::string(dtype_name(p.w_dtype)) + " m=" + std::to_string(p.m) +
           " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k);
}

// Runs every supported ISA on `p` and expects each output to have the reference's bits.
void expect_all_isas_match_reference(const Problem& p) {
    std::vector<float> want(size_t(p.m * p.n));
    for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < p.n; ++j) want[size_t(i * p.n + j)] = p.reference(i, j);
    for (CpuIsa isa : kAllIsas) {
        if (!cpu_supports(isa)) continue;
        std::vector<float> y;
        matmul_with_isa(isa, p.args(y));
        int mismatches = 0;
        for (size_t e = 0; e < want.size(); ++e) {
            if (bits_of(y[e]) == bits_of(want[e])) continue;
            if (++mismatches <= 3)
                ADD_FAILURE() << describe(isa, p) << " at (" << e / size_t(p.n) << ", " << e % size_t(p.n) << "): got "
                              << y[e] << " want " << want[e];
        }
        EXPECT_EQ(mismatches, 0) << describe(isa, p);
    }
}

TEST(Matmul, SimdPathsSupportedOnThisMachineAreReported) {
    for (CpuIsa isa : kAllIsas) std::printf("%s: %s\n", cpu_isa_name(isa), cpu_supports(isa) ? "yes" : "no");
    std::printf("dispatch uses %s\n", matmul_isa_name());
    EXPECT_TRUE(cpu_supports(CpuIsa::kScalar));
    EXPECT_TRUE(cpu_supports(matmul_isa()));
}

TEST(Matmul, DispatchPicksTheWidestSupportedIsaUnlessForced) {
    const CpuIsa widest = cpu_supports(CpuIsa::kAvx512) ? CpuIsa::kAvx512
                          : cpu_supports(CpuIsa::kAvx2) ? CpuIsa::kAvx2
                                                        : CpuIsa::kScalar;
    EXPECT_EQ(choose_matmul_isa(nullptr), widest);
    EXPECT_EQ(choose_matmul_isa(""), widest);
    EXPECT_EQ(choose_matmul_isa("scalar"), CpuIsa::kScalar);
    for (CpuIsa isa : kAllIsas) {
        if (!cpu_supports(isa)) continue;
        EXPECT_EQ(choose_matmul_isa(cpu_isa_name(isa)), isa);
    }
}

TEST(MatmulDeathTest, ForcingAnUnknownIsaFailsWithItsName) {
    EXPECT_DEATH(choose_matmul_isa("avx1024"), "TACO_CPU_ISA=avx1024 is not one of scalar, avx2, avx512");
}

TEST(Matmul, EveryIsaIsBitwiseEqualToCanonicalDotOverShapes) {
    uint32_t seed = 1;
    for (DType dtype : kWeightDtypes)
        for (int64_t k : {0, 1, 3, 15, 16, 17, 31, 64, 100, 257})
            for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 33})
                for (int64_t n : {1, 2, 5, 8, 13, 34}) expect_all_isas_match_reference(Problem(m, n, k, dtype, seed++));
}

TEST(Matmul, EveryIsaIsBitwiseEqualToCanonicalDotWhenMIsBlocked) {
    // k = 4100: 256 full chunks and a tail of 4; m = 67 spans more than one block of x rows (1 MiB / 16 KiB).
    for (DType dtype : kWeightDtypes) expect_all_isas_match_reference(Problem(67, 11, 4100, dtype, 7));
}

TEST(Matmul, EveryIsaIsBitwiseEqualToCanonicalDotWithManyThreadChunks) {
    for (DType dtype : kWeightDtypes) expect_all_isas_match_reference(Problem(1, 301, 1000, dtype, 11));
}

TEST(Matmul, EveryIsaIsBitwiseEqualToCanonicalDotWithFewWeightRowsAndManyXBlocks) {
    // k = 4100 makes an M block about 60 rows, so 300 rows are 5 or more blocks that threads share over 3
    // weight rows.
    for (DType dtype : kWeightDtypes) expect_all_isas_match_reference(Problem(300, 3, 4100, dtype, 13));
}

TEST(Matmul, KTailKeepsLanesThatUnderflowedToNegativeZero) {
    // Every product (-1e-39 * ~1e-7) underflows to -0, so with k >= 16 all 16 canonical lanes and the dot end as -0.
    // A tail that ran fma(0, 0, lane) on lanes past K would turn those lanes into +0 and the result with them.
    for (DType dtype : kWeightDtypes) {
        for (int64_t k : {17, 18, 31, 33}) {
            Problem p(2, 3, k, dtype, 0);
            for (float& v : p.x) v = -1e-39f;
            for (int64_t i = 0; i < p.n * k; ++i) {
                if (dtype == DType::kF32) {
                    const float v = 1e-7f;
                    std::memcpy(p.w.data() + i * 4, &v, 4);
                } else {
                    const uint16_t h = dtype == DType::kF16 ? f32_to_f16(1e-7f) : f32_to_bf16(1e-7f);
                    std::memcpy(p.w.data() + i * 2, &h, 2);
                }
            }
            ASSERT_EQ(bits_of(p.reference(0, 0)), bits_of(-0.0f)) << dtype_name(dtype) << " k=" << k;
            expect_all_isas_match_reference(p);
        }
    }
}

TEST(Matmul, RowOfABatchEqualsTheSameRowComputedAlone) {
    for (CpuIsa isa : kAllIsas) {
        if (!cpu_supports(isa)) continue;
        for (DType dtype : kWeightDtypes) {
            const Problem batch(37, 23, 257, dtype, 99);
            std::vector<float> y_batch;
            matmul_with_isa(isa, batch.args(y_batch));
            for (int64_t i = 0; i < batch.m; ++i) {
                const float* x_row = batch.x.data() + i * batch.k;
                std::vector<float> y_row(size_t(batch.n));
                matmul_with_isa(isa, {x_row, batch.w.data(), dtype, y_row.data(), 1, batch.n, batch.k});
                for (int64_t j = 0; j < batch.n; ++j)
                    ASSERT_EQ(bits_of(y_row[size_t(j)]), bits_of(y_batch[size_t(i * batch.n + j)]))
                        << describe(isa, batch) << " row " << i << " col " << j;
            }
        }
    }
}

TEST(Matmul, CanonicalOrderDiffersFromSequentialSumOnTestData) {
    // Guards the tests above: with this data a kernel that summed in plain k order would be caught.
    const Problem p(4, 16, 257, DType::kF32, 5);
    int differing = 0;
    for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
            const float* w_row = reinterpret_cast<const float*>(p.w.data()) + j * p.k;
            float sequential = 0.0f;
            for (int64_t t = 0; t < p.k; ++t) sequential = std::fma(p.x[size_t(i * p.k + t)], w_row[t], sequential);
            differing += bits_of(sequential) != bits_of(p.reference(i, j));
        }
    }
    EXPECT_GT(differing, 0);
}

// Biases are f32 (widened once at load), so a matmul call converts nothing; another dtype is a caller's bug.
TEST(Matmul, OpsMatmulAddsAnF32BiasAndRefusesOtherBiasDtypes) {
    const Problem p(5, 9, 40, DType::kBF16, 3);
    Tensor x = Tensor::empty({p.m, p.k}, DType::kF32);
    std::memcpy(x.as<float>(), p.x.data(), p.x.size() * sizeof(float));
    Tensor w = Tensor::empty({p.n, p.k}, DType::kBF16);
    std::memcpy(w.as<uint16_t>(), p.w.data(), p.w.size());
    Tensor bias_f32 = Tensor::empty({p.n}, DType::kF32);
    Tensor bias_bf16 = Tensor::empty({p.n}, DType::kBF16);
    for (int64_t j = 0; j < p.n; ++j) {
        bias_f32.as<float>()[j] = 0.25f * float(j) - 1.0f;
        bias_bf16.as<uint16_t>()[j] = f32_to_bf16(0.5f * float(j) + 3.0f);
    }
    {
        Tensor y = Tensor::empty({p.m, p.n}, DType::kF32);
        EXPECT_DEATH(ops::matmul(ExecContext::cpu(), x, w, &bias_bf16.view(), y), "bias must be a 1-d F32 tensor");
    }
    for (const Tensor* bias : {&bias_f32}) {
        Tensor y = Tensor::empty({p.m, p.n}, DType::kF32);
        ops::matmul(ExecContext::cpu(), x, w, &bias->view(), y);
        for (int64_t i = 0; i < p.m; ++i)
            for (int64_t j = 0; j < p.n; ++j)
                EXPECT_EQ(bits_of(y.as<float>()[i * p.n + j]),
                          bits_of(p.reference(i, j) + load_as_f32(bias->view().data, bias->view().dtype, size_t(j))))
                    << "bias " << dtype_name(bias->view().dtype) << " at (" << i << ", " << j << ")";
    }
    Tensor y = Tensor::empty({p.m, p.n}, DType::kF32);
    ops::matmul(ExecContext::cpu(), x, w, nullptr, y);
    EXPECT_EQ(bits_of(y.as<float>()[0]), bits_of(p.reference(0, 0)));
}

}  // namespace
}  // namespace taco::cpu
