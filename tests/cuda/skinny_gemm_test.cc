// The skinny GEMM of the decode shapes (kernels/cuda/skinny_gemm.h) on a real GPU: fp32 accumulation into either
// output dtype with the bias before the one rounding, a row's bits the same alone or among up to 16 rows whatever the
// other rows hold, the same bits every call, ops::matmul taking it for M <= 16 in f16 / bf16 and cuBLASLt for the
// products it does not take (odd K, misaligned views, f32). Skipped (with the reason) where no GPU is usable.
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "cuda_test_util.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/skinny_gemm.h"
#include "kernels/ops.h"

namespace taco {
namespace {

using testing_util::to_device;
using testing_util::to_host;

Tensor random_host(int64_t rows, int64_t cols, DType dtype, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1, 1);
    Tensor t = Tensor::empty({rows, cols}, dtype);
    for (int64_t i = 0; i < rows * cols; ++i) store_from_f32(t.view().data, dtype, size_t(i), u(rng));
    return t;
}

double value(const Tensor& host, int64_t i) { return load_as_f32(host.view().data, host.view().dtype, size_t(i)); }

std::vector<uint8_t> bytes_of(const TensorView& device) {
    std::vector<uint8_t> b(device.nbytes());
    EXPECT_EQ(cudaMemcpy(b.data(), device.data, b.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return b;
}

class SkinnyGemm : public testing_util::CudaStreamTest {
protected:
    // The skinny kernel's y for host x, w (and bias [1, n] f32 or none), with the given build and tuning.
    Tensor skinny(const Tensor& x, const Tensor& w, const Tensor* bias, DType out,
                  const cuda::SkinnyTuning& tuning = {}) {
        const int64_t m = x.view().shape[0], k = x.view().shape[1], n = w.view().shape[0];
        Tensor dx = to_device(x), dw = to_device(w);
        Tensor dbias = bias != nullptr ? to_device(*bias) : Tensor();
        Tensor dy = Tensor::empty({m, n}, out, Device::kCuda);
        EXPECT_TRUE(cuda::skinny_gemm_applies(m, n, k, x.view().dtype, out, dx.view().data, dw.view().data));
        cuda::skinny_gemm(dx.view().data, dw.view().data,
                          bias != nullptr ? static_cast<const float*>(dbias.view().data) : nullptr, dy.view().data, m,
                          n, k, x.view().dtype, out, ctx_.stream, tuning);
        stream_->synchronize();
        return dy;
    }
};

// y within the fp32 accumulation's error of the exact sum (and one rounding to y's dtype), bias included.
void expect_product(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y) {
    const int64_t m = x.view().shape[0], k = x.view().shape[1], n = w.view().shape[0];
    // fp32 sums of K products in [-1, 1]: error well below 1e-5 of the row's scale (sqrt(K)).
    // A 16-bit y adds one rounding: half an epsilon of the value.
    const DType out = y.view().dtype;
    const double eps = out == DType::kF32 ? 0.0 : out == DType::kBF16 ? 0x1p-8 : 0x1p-11;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double want = value(bias, j);
            for (int64_t l = 0; l < k; ++l) want += value(x, i * k + l) * value(w, j * k + l);
            const double got = value(y, i * n + j);
            ASSERT_LE(std::abs(got - want), std::abs(want) * eps * 1.01 + 1e-5 * std::sqrt(double(k)))
                << "row " << i << " col " << j << ": " << got << " vs " << want;
        }
}

TEST_F(SkinnyGemm, AccumulatesInFp32WithTheBiasBeforeTheOneRounding) {
    std::mt19937 rng(11);
    for (const cuda::SkinnyTuning& build : testing_util::skinny_gemm_builds()) {
        for (DType in : {DType::kBF16, DType::kF16}) {
            for (int64_t m : {1, 2, 3, 5, 8, 9, 16}) {
                // K: one chunk, less than a bulk stage, a stage and 8 columns (a last stage of one vector).
                for (int64_t k : {8, 1000, 4104}) {
                    const int64_t n = 37;  // 4 tiles and a partial one
                    Tensor x = random_host(m, k, in, rng), w = random_host(n, k, in, rng);
                    Tensor bias = random_host(1, n, DType::kF32, rng);
                    for (DType out : {in, DType::kF32}) {
                        SCOPED_TRACE(std::string(dtype_name(in)) + " -> " + std::string(dtype_name(out)) + " m " +
                                     std::to_string(m) + " k " + std::to_string(k) + " build " +
                                     std::to_string(int(build.kernel)));
                        expect_product(x, w, bias, to_host(skinny(x, w, &bias, out, build)));
                    }
                }
            }
        }
    }
}

// Many more tiles than blocks: the bulk build's blocks take tile after tile, its ring of stages wrapping across
// tiles (and partial last stages) with any depth and number of blocks per multiprocessor, and every tuning sums in
// the same order (the same bits).
TEST_F(SkinnyGemm, ABlockStreamsManyTilesThroughItsRingWithAnyTuning) {
    std::mt19937 rng(17);
    const int64_t n = 4100, k = 1544;  // 513 tiles, the last of 4 rows; stages of 1024 and 520 columns
    for (DType in : {DType::kBF16, DType::kF16}) {
        for (int64_t m : {1, 11}) {
            SCOPED_TRACE(std::string(dtype_name(in)) + " m " + std::to_string(m));
            Tensor x = random_host(m, k, in, rng), w = random_host(n, k, in, rng);
            Tensor bias = random_host(1, n, DType::kF32, rng);
            for (const cuda::SkinnyTuning& build : testing_util::skinny_gemm_builds()) {
                Tensor y = skinny(x, w, &bias, DType::kF32, build);
                expect_product(x, w, bias, to_host(y));
                if (build.kernel != cuda::SkinnyTuning::Kernel::kBulkCopy) continue;
                const std::vector<uint8_t> want = bytes_of(y);
                for (auto [stages, per_sm] : {std::pair{2, 1}, {3, 2}, {5, 1}, {6, 2}, {13, 1}}) {
                    const cuda::SkinnyTuning tuned{cuda::SkinnyTuning::Kernel::kBulkCopy, stages, per_sm};
                    EXPECT_EQ(bytes_of(skinny(x, w, &bias, DType::kF32, tuned)), want)
                        << stages << " stages, " << per_sm << " blocks per multiprocessor";
                }
            }
        }
    }
}

TEST_F(SkinnyGemm, RefusesATuningTheDeviceCannotRun) {
    if (!cuda::skinny_bulk_available()) GTEST_SKIP() << "no bulk-copy build on this GPU";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    std::mt19937 rng(19);
    Tensor x = random_host(1, 64, DType::kBF16, rng), w = random_host(8, 64, DType::kBF16, rng);
    EXPECT_DEATH(skinny(x, w, nullptr, DType::kBF16, {cuda::SkinnyTuning::Kernel::kBulkCopy, 1, 1}),
                 "1 stages .* do not fit");
    EXPECT_DEATH(skinny(x, w, nullptr, DType::kBF16, {cuda::SkinnyTuning::Kernel::kBulkCopy, 12, 2}),
                 "12 stages .* and 2 blocks per multiprocessor do not fit");
}

TEST_F(SkinnyGemm, ARowHasTheSameBitsAloneOrAmongUpTo16OtherRows) {
    std::mt19937 rng(12);
    const int64_t n = 300, k = 4096;
    for (const cuda::SkinnyTuning& build : testing_util::skinny_gemm_builds()) {
        for (DType in : {DType::kBF16, DType::kF16}) {
            SCOPED_TRACE(std::string(dtype_name(in)) + " build " + std::to_string(int(build.kernel)));
            Tensor w = random_host(n, k, in, rng), bias = random_host(1, n, DType::kF32, rng);
            Tensor row = random_host(1, k, in, rng);
            const std::vector<uint8_t> alone = bytes_of(skinny(row, w, &bias, in, build));
            for (int64_t m : {2, 3, 4, 7, 8, 12, 16}) {
                for (int64_t at : {int64_t(0), m - 1}) {
                    Tensor x = random_host(m, k, in, rng);  // other rows of other values
                    std::memcpy(static_cast<uint8_t*>(x.view().data) + size_t(at * k) * 2, row.view().data,
                                size_t(k) * 2);
                    const std::vector<uint8_t> all = bytes_of(skinny(x, w, &bias, in, build));
                    EXPECT_EQ(std::memcmp(all.data() + size_t(at * n) * 2, alone.data(), size_t(n) * 2), 0)
                        << "row " << at << " of " << m;
                }
            }
            // And the same call gives the same bits every time.
            Tensor x = random_host(5, k, in, rng);
            EXPECT_EQ(bytes_of(skinny(x, w, &bias, in, build)), bytes_of(skinny(x, w, &bias, in, build)));
        }
    }
}

TEST_F(SkinnyGemm, MatmulTakesItForDecodeShapesAndCublasForTheRest) {
    std::mt19937 rng(13);
    const int64_t n = 96, k = 512;
    Tensor w = random_host(n, k, DType::kBF16, rng);
    Tensor x = random_host(4, k, DType::kBF16, rng);
    Tensor dx = to_device(x), dw = to_device(w), dy = Tensor::empty({4, n}, DType::kBF16, Device::kCuda);
    ops::matmul(ctx_, dx, dw, nullptr, dy);
    stream_->synchronize();
    EXPECT_EQ(bytes_of(dy), bytes_of(skinny(x, w, nullptr, DType::kBF16)));

    // Not skinny: 17 rows, K not a multiple of 8, f32, a misaligned x; ops::matmul still computes them (cuBLASLt).
    EXPECT_FALSE(cuda::skinny_gemm_applies(17, n, k, DType::kBF16, DType::kBF16, dx.view().data, dw.view().data));
    EXPECT_FALSE(cuda::skinny_gemm_applies(1, n, 12, DType::kBF16, DType::kBF16, dx.view().data, dw.view().data));
    EXPECT_FALSE(cuda::skinny_gemm_applies(1, n, k, DType::kF32, DType::kF32, dx.view().data, dw.view().data));
    EXPECT_FALSE(cuda::skinny_gemm_applies(1, n, k, DType::kBF16, DType::kBF16,
                                           static_cast<uint8_t*>(dx.view().data) + 2, dw.view().data));
    const int64_t odd_k = 12;
    Tensor xo = random_host(2, odd_k, DType::kBF16, rng), wo = random_host(5, odd_k, DType::kBF16, rng);
    Tensor dxo = to_device(xo), dwo = to_device(wo), dyo = Tensor::empty({2, 5}, DType::kF32, Device::kCuda);
    ops::matmul(ctx_, dxo, dwo, nullptr, dyo);
    stream_->synchronize();
    const Tensor yo = to_host(dyo);
    for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 5; ++j) {
            double want = 0;
            for (int64_t l = 0; l < odd_k; ++l) want += value(xo, i * odd_k + l) * value(wo, j * odd_k + l);
            EXPECT_NEAR(value(yo, i * 5 + j), want, 1e-5);
        }
}

// ops::matmuls (fused q / k / v and gate / up): one launch when the outputs are of one size class, and each output
// with the bits of its own matmul call, in either case.
TEST_F(SkinnyGemm, ProjectionsOfOneXHaveTheBitsOfSeparateMatmuls) {
    std::mt19937 rng(29);
    const std::vector<std::vector<int64_t>> groups = {{40, 24, 24}, {9000, 9000}, {40, 9000}, {8, 16, 24, 32}};
    for (DType in : {DType::kBF16, DType::kF16}) {
        for (int64_t m : {1, 7, 16}) {
            for (const std::vector<int64_t>& sizes : groups) {
                SCOPED_TRACE(std::string(dtype_name(in)) + " m " + std::to_string(m) + " outputs " +
                             std::to_string(sizes.size()) + " first n " + std::to_string(sizes[0]));
                const int64_t k = 264;
                Tensor x = to_device(random_host(m, k, in, rng));
                std::vector<Tensor> ws, biases, separate, grouped;
                for (size_t i = 0; i < sizes.size(); ++i) {
                    ws.push_back(to_device(random_host(sizes[i], k, in, rng)));
                    biases.push_back(i % 2 == 0 ? to_device(random_host(1, sizes[i], DType::kF32, rng)) : Tensor());
                    separate.push_back(Tensor::empty({m, sizes[i]}, in, Device::kCuda));
                    grouped.push_back(Tensor::empty({m, sizes[i]}, in, Device::kCuda));
                }
                std::vector<TensorView> bias_views;  // [n] views of the [1, n] biases (every other output has one)
                for (size_t i = 0; i < sizes.size(); ++i)
                    bias_views.push_back(biases[i].defined() ? biases[i].view().reshape({sizes[i]}) : TensorView());
                std::vector<ops::Projection> projections;
                std::vector<cuda::SkinnyOutput> outs;
                for (size_t i = 0; i < sizes.size(); ++i) {
                    const TensorView* bias = biases[i].defined() ? &bias_views[i] : nullptr;
                    ops::matmul(ctx_, x.view(), ws[i].view(), bias, separate[i].view());
                    projections.push_back({&ws[i].view(), bias, grouped[i].view()});
                    outs.push_back({ws[i].view().data, nullptr, grouped[i].view().data, sizes[i]});
                }
                ops::matmuls(ctx_, x.view(), projections);
                stream_->synchronize();
                const bool one_class = sizes[0] != 40 || sizes.size() != 2;
                EXPECT_EQ(cuda::skinny_gemm_group_applies(m, k, in, in, x.view().data, outs.data(), int(outs.size())),
                          one_class && sizes.size() <= size_t(cuda::kSkinnyMaxOutputs));
                for (size_t i = 0; i < sizes.size(); ++i)
                    EXPECT_EQ(bytes_of(separate[i].view()), bytes_of(grouped[i].view())) << "output " << i;
            }
        }
    }
}

TEST_F(SkinnyGemm, RefusesAProductItDoesNotTake) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    Tensor x = Tensor::empty({20, 16}, DType::kBF16, Device::kCuda),
           w = Tensor::empty({4, 16}, DType::kBF16, Device::kCuda);
    Tensor y = Tensor::empty({20, 4}, DType::kBF16, Device::kCuda);
    EXPECT_DEATH(cuda::skinny_gemm(x.view().data, w.view().data, nullptr, y.view().data, 20, 4, 16, DType::kBF16,
                                   DType::kBF16, ctx_.stream),
                 "is not a skinny product");
}

}  // namespace
}  // namespace taco
