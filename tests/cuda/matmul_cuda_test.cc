// ops::matmul on a real GPU: f32 is plain fp32 (not TF32), bf16 / f16 accumulate in fp32 (also into f32 logits), the
// bias lands before the rounding, a shape reuses its plan and gives the same bits every call, and a weight dtype
// other than the activations' is refused by name. Skipped (with the reason) where no GPU or driver is usable.
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "cuda_test_util.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/gemm_plan_cache.h"
#include "kernels/cuda/skinny_gemm.h"
#include "kernels/ops.h"

namespace taco {
namespace {

// Values rounded to dtype in a host tensor of that dtype, and the rounded values as doubles.
struct HostMatrix {
    Tensor tensor;
    std::vector<double> values;
};

HostMatrix random_matrix(int64_t rows, int64_t cols, DType dtype, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1, 1);
    HostMatrix m{Tensor::empty({rows, cols}, dtype), {}};
    for (int64_t i = 0; i < rows * cols; ++i) {
        const float v = u(rng);
        store_from_f32(m.tensor.view().data, dtype, size_t(i), v);
        m.values.push_back(load_as_f32(m.tensor.view().data, dtype, size_t(i)));
    }
    return m;
}

using testing_util::to_device;

std::vector<double> read(const TensorView& device) {
    const Tensor h = testing_util::to_host(device);
    std::vector<double> v;
    for (int64_t i = 0; i < h.numel(); ++i) v.push_back(load_as_f32(h.view().data, h.view().dtype, size_t(i)));
    return v;
}

std::vector<uint8_t> bytes_of(const TensorView& device) {
    std::vector<uint8_t> b(device.nbytes());
    EXPECT_EQ(cudaMemcpy(b.data(), device.data, b.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return b;
}

// The largest error of a row relative to the row's largest reference value.
double worst_row_error(const std::vector<double>& got, const std::vector<double>& want, int64_t cols) {
    double worst = 0;
    for (size_t begin = 0; begin < want.size(); begin += size_t(cols)) {
        double magnitude = 0, diff = 0;
        for (size_t i = begin; i < begin + size_t(cols); ++i) {
            magnitude = std::max(magnitude, std::abs(want[i]));
            diff = std::isnan(got[i]) ? INFINITY : std::max(diff, std::abs(got[i] - want[i]));
        }
        worst = std::max(worst, diff / std::max(magnitude, 1e-300));
    }
    return worst;
}

class CudaMatmul : public ::testing::Test {
protected:
    void SetUp() override {
        const Status status = cuda::init_backend(0);
        if (!status.is_ok()) GTEST_SKIP() << status.message();
        auto made = cuda::DeviceStream::create();
        ASSERT_TRUE(made.is_ok());
        stream_ = std::move(made).value();
        ctx_ = stream_->context(nullptr);
    }

    // y = x . w^T (+ bias) on the GPU and in double on the host; returns (got, want).
    std::pair<std::vector<double>, std::vector<double>> product(int64_t m, int64_t n, int64_t k, DType in, DType out,
                                                                bool with_bias, uint32_t seed) {
        std::mt19937 rng(seed);
        HostMatrix x = random_matrix(m, k, in, rng), w = random_matrix(n, k, in, rng);
        HostMatrix bias = random_matrix(1, n, DType::kF32, rng);
        std::vector<double> want(size_t(m * n));
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
                double sum = with_bias ? bias.values[size_t(j)] : 0.0;
                for (int64_t l = 0; l < k; ++l) sum += x.values[size_t(i * k + l)] * w.values[size_t(j * k + l)];
                want[size_t(i * n + j)] = sum;
            }
        Tensor dx = to_device(x.tensor), dw = to_device(w.tensor);
        Tensor dbias = to_device(bias.tensor.view().reshape({n}));
        Tensor dy = Tensor::empty({m, n}, out, Device::kCuda);
        ops::matmul(ctx_, dx, dw, with_bias ? &dbias.view() : nullptr, dy);
        stream_->synchronize();
        return {read(dy), want};
    }

    std::unique_ptr<cuda::DeviceStream> stream_;
    ExecContext ctx_;
};

TEST_F(CudaMatmul, F32IsPlainFp32NotTf32) {
    // TF32 keeps 10 mantissa bits: over K = 4096 its error is near 1e-3 of the row; fp32's is near 1e-6.
    auto [got, want] = product(9, 96, 4096, DType::kF32, DType::kF32, true, 1);
    const double error = worst_row_error(got, want, 96);
    std::printf("f32 matmul, k 4096: worst row error %.3g\n", error);
    EXPECT_LT(error, 2e-5);
}

TEST_F(CudaMatmul, HalfInputsAccumulateInFp32IntoEitherOutput) {
    for (DType in : {DType::kBF16, DType::kF16}) {
        for (bool bias : {false, true}) {
            SCOPED_TRACE(std::string(dtype_name(in)) + (bias ? " bias" : ""));
            // f32 logits (the lm_head) keep the fp32 sum: errors of fp32 rounding only.
            auto [logits, want_logits] = product(5, 509, 2048, in, DType::kF32, bias, 2);
            const double logit_error = worst_row_error(logits, want_logits, 509);
            EXPECT_LT(logit_error, 2e-5);
            // A 16-bit y: one rounding of the fp32 result (half an epsilon of the dtype, plus the sum's error).
            auto [y, want] = product(33, 64, 1000, in, in, bias, 3);
            const double eps = in == DType::kBF16 ? 0x1p-8 : 0x1p-11;
            const double error = worst_row_error(y, want, 64);
            std::printf("%s: f32 logits error %.3g, %s y error %.3g (half an epsilon: %.3g)\n", dtype_name(in).data(),
                        logit_error, dtype_name(in).data(), error, eps);
            EXPECT_LT(error, 2.1 * eps);  // a bias added after the product rounds twice
        }
    }
}

TEST_F(CudaMatmul, AShapeReusesItsPlanAndGivesTheSameBitsEveryCall) {
    std::mt19937 rng(4);
    HostMatrix x = random_matrix(37, 512, DType::kBF16, rng), w = random_matrix(300, 512, DType::kBF16, rng);
    HostMatrix bias = random_matrix(1, 300, DType::kF32, rng);
    Tensor dx = to_device(x.tensor), dw = to_device(w.tensor), dbias = to_device(bias.tensor.view().reshape({300}));
    Tensor first = Tensor::empty({37, 300}, DType::kBF16, Device::kCuda);
    Tensor second = Tensor::empty({37, 300}, DType::kBF16, Device::kCuda);
    ops::matmul(ctx_, dx, dw, &dbias.view(), first);
    const size_t plans = cuda::GemmPlanCache::global().size();
    for (int i = 0; i < 5; ++i) ops::matmul(ctx_, dx, dw, &dbias.view(), second);
    stream_->synchronize();
    EXPECT_EQ(cuda::GemmPlanCache::global().size(), plans);
    EXPECT_EQ(bytes_of(first), bytes_of(second));

    // Where the bias goes for each output dtype, and whether a row's bits change with the number of rows (not
    // guaranteed: gemm_plan_cache.h), for the record.
    for (DType out : {DType::kBF16, DType::kF32}) {
        cuda::GemmKey key;
        key.m = 37, key.n = 300, key.k = 512, key.in_dtype = DType::kBF16, key.out_dtype = out, key.bias = true;
        key.workspace_bytes = ctx_.blas_workspace.nbytes();
        ASSERT_EQ(cudaGetDevice(&key.device), cudaSuccess);
        const cuda::GemmPlan& plan = cuda::GemmPlanCache::global().get(
            static_cast<cublasLtHandle_t>(ctx_.blas_handle), key, static_cast<const float*>(dbias.view().data));
        std::printf("bf16 -> %s with bias: bias %s, algorithm workspace %zu bytes\n", dtype_name(out).data(),
                    plan.bias_in_epilogue() ? "in the epilogue" : "by add_bias_rows", plan.algo_workspace_bytes());
    }
    const std::vector<uint8_t> all = bytes_of(first);
    for (int64_t rows : {1, 8, 256}) {
        HostMatrix xs = random_matrix(rows, 512, DType::kBF16, rng);
        std::memcpy(xs.tensor.view().data, x.tensor.view().data, 512 * 2);  // row 0 as before
        Tensor dxs = to_device(xs.tensor), dys = Tensor::empty({rows, 300}, DType::kBF16, Device::kCuda);
        ops::matmul(ctx_, dxs, dw, &dbias.view(), dys);
        stream_->synchronize();
        const std::vector<uint8_t> got = bytes_of(dys);
        std::printf("row 0 of %lld rows %s row 0 of 37 rows\n", static_cast<long long>(rows),
                    std::memcmp(got.data(), all.data(), 300 * 2) == 0 ? "has the bits of" : "differs from");
    }
}

// Decode batches past the skinny kernel's rows (32 rows through k_proj's 1,024 and o_proj's 4,096 outputs of the 8B
// shape): the plan's grid is not the heuristic's first choice of 4 CTAs on the H200's 132 SMs (0.03 waves, 92 us)
// but a split over K (0.24 waves there, the fullest candidate; o_proj's first choice fills 0.97), the sums stay fp32
// and the same call gives the same bits every time (the split's partials are reduced out of place in a fixed order).
TEST_F(CudaMatmul, FewRowsAndOutputsFillTheGpuWithTheSameBitsEveryCall) {
    for (int64_t n : {1024, 4096}) {
        SCOPED_TRACE(n);
        const int64_t m = 32, k = 4096;
        auto [y, want] = product(m, n, k, DType::kBF16, DType::kBF16, false, 5);
        EXPECT_LT(worst_row_error(y, want, n), 2.1 * 0x1p-8);
        std::mt19937 rng(6);
        HostMatrix x = random_matrix(m, k, DType::kBF16, rng), w = random_matrix(n, k, DType::kBF16, rng);
        Tensor dx = to_device(x.tensor), dw = to_device(w.tensor);
        Tensor first = Tensor::empty({m, n}, DType::kBF16, Device::kCuda);
        Tensor again = Tensor::empty({m, n}, DType::kBF16, Device::kCuda);
        ops::matmul(ctx_, dx, dw, nullptr, first);
        for (int i = 0; i < 3; ++i) {
            ops::matmul(ctx_, dx, dw, nullptr, again);
            stream_->synchronize();
            EXPECT_EQ(bytes_of(first), bytes_of(again));
        }
        cuda::GemmKey key;
        key.m = m, key.n = n, key.k = k, key.in_dtype = DType::kBF16, key.out_dtype = DType::kBF16;
        key.align_x = cuda::address_alignment(dx.view().data), key.align_w = cuda::address_alignment(dw.view().data);
        key.align_y = cuda::address_alignment(first.view().data);
        key.workspace_bytes = ctx_.blas_workspace.nbytes();
        ASSERT_EQ(cudaGetDevice(&key.device), cudaSuccess);
        const cuda::GemmPlan& plan =
            cuda::GemmPlanCache::global().get(static_cast<cublasLtHandle_t>(ctx_.blas_handle), key, nullptr);
        std::printf("[%lld, %lld] x [%lld, %lld]^T: %.2f waves, workspace %zu bytes\n", static_cast<long long>(m),
                    static_cast<long long>(k), static_cast<long long>(n), static_cast<long long>(k), plan.waves(),
                    plan.algo_workspace_bytes());
        EXPECT_GE(plan.waves(), 0.2f);
    }
}

// GemmKey::candidate (how cuda_gemm_bench times the heuristic's other choices): every allowed candidate computes the
// same product to bf16 rounding, with the same bits on every call, and an index past the last one is refused.
TEST_F(CudaMatmul, EveryAllowedCandidateComputesTheProduct) {
    const int64_t m = 64, n = 1024, k = 2048;
    std::mt19937 rng(7);
    HostMatrix x = random_matrix(m, k, DType::kBF16, rng), w = random_matrix(n, k, DType::kBF16, rng);
    std::vector<double> want(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t l = 0; l < k; ++l) sum += x.values[size_t(i * k + l)] * w.values[size_t(j * k + l)];
            want[size_t(i * n + j)] = sum;
        }
    Tensor dx = to_device(x.tensor), dw = to_device(w.tensor);
    Tensor y = Tensor::empty({m, n}, DType::kBF16, Device::kCuda),
           again = Tensor::empty({m, n}, DType::kBF16, Device::kCuda);
    cuda::GemmKey key;
    key.m = m, key.n = n, key.k = k, key.in_dtype = DType::kBF16, key.out_dtype = DType::kBF16;
    key.align_x = cuda::address_alignment(dx.view().data), key.align_w = cuda::address_alignment(dw.view().data);
    key.align_y = std::min(cuda::address_alignment(y.view().data), cuda::address_alignment(again.view().data));
    key.workspace_bytes = ctx_.blas_workspace.nbytes();
    ASSERT_EQ(cudaGetDevice(&key.device), cudaSuccess);
    auto handle = static_cast<cublasLtHandle_t>(ctx_.blas_handle);
    auto stream = static_cast<cudaStream_t>(stream_->stream());
    const int candidates = cuda::GemmPlan::allowed_candidates(handle, key);
    ASSERT_GE(candidates, 1);
    for (int c = 0; c < candidates; ++c) {
        key.candidate = c;
        const cuda::GemmPlan& plan = cuda::GemmPlanCache::global().get(handle, key, nullptr);
        SCOPED_TRACE(plan.describe());
        plan.run(handle, dx.view().data, dw.view().data, nullptr, y.view().data, ctx_.blas_workspace.data, stream);
        plan.run(handle, dx.view().data, dw.view().data, nullptr, again.view().data, ctx_.blas_workspace.data, stream);
        stream_->synchronize();
        EXPECT_LT(worst_row_error(read(y), want, n), 2.1 * 0x1p-8);
        EXPECT_EQ(bytes_of(y), bytes_of(again));
    }
    std::printf("%d allowed candidates for [%lld, %lld] x [%lld, %lld]^T\n", candidates, static_cast<long long>(m),
                static_cast<long long>(k), static_cast<long long>(n), static_cast<long long>(k));
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    key.candidate = candidates;
    EXPECT_DEATH(cuda::GemmPlanCache::global().get(handle, key, nullptr), "candidate");
}

// ops::gated_projection fused (the skinny GEMM's gate / up with the activation in its epilogue) has the bits of the
// separate gate / up launch and activation kernel: rows of 1 to 16 (x's upper rows from 9), biases or none, each
// activation, f16 and bf16. 8,200 outputs take the register build with 4 warps (8,192 and fewer run the bulk build
// on Hopper, which the fused kernel does not take: that shape must then give the same bits by falling back).
TEST_F(CudaMatmul, FusedGatedProjectionHasTheSeparateBits) {
    const int64_t k = 1032;  // not a multiple of the 32-column chunk: the last chunk is partial
    for (DType dtype : {DType::kBF16, DType::kF16}) {
        for (int64_t n : {8200, 1000}) {
            for (int64_t m : {1, 7, 9, 16}) {
                for (ops::Activation act :
                     {ops::Activation::kSilu, ops::Activation::kGeluTanh, ops::Activation::kGeluErf,
                      ops::Activation::kRelu, ops::Activation::kRelu2}) {
                    const bool with_bias = act == ops::Activation::kGeluTanh || act == ops::Activation::kRelu;
                    SCOPED_TRACE(std::string(dtype_name(dtype)) + " n " + std::to_string(n) + " m " +
                                 std::to_string(m) + " activation " + std::to_string(int(act)));
                    std::mt19937 rng(uint32_t(m * 31 + n + int(act)));
                    HostMatrix x = random_matrix(m, k, dtype, rng), wg = random_matrix(n, k, dtype, rng),
                               wu = random_matrix(n, k, dtype, rng), bg = random_matrix(1, n, DType::kF32, rng),
                               bu = random_matrix(1, n, DType::kF32, rng);
                    Tensor dx = to_device(x.tensor), dwg = to_device(wg.tensor), dwu = to_device(wu.tensor);
                    Tensor dbg = to_device(bg.tensor.view().reshape({n})),
                           dbu = to_device(bu.tensor.view().reshape({n}));
                    Tensor gate = Tensor::empty({m, n}, dtype, Device::kCuda),
                           up = Tensor::empty({m, n}, dtype, Device::kCuda);
                    Tensor fused = Tensor::empty({m, n}, dtype, Device::kCuda);
                    Tensor separate = Tensor::empty({m, n}, dtype, Device::kCuda);
                    const ops::Projection g{&dwg.view(), with_bias ? &dbg.view() : nullptr, gate};
                    const ops::Projection u{&dwu.view(), with_bias ? &dbu.view() : nullptr, up};
                    // up's scratch holds a pattern the separate path would overwrite: left as it is, the fused
                    // kernel ran.
                    // On the context's stream (non-blocking: a legacy-stream memset is not ordered with its work).
                    ASSERT_EQ(cudaMemsetAsync(up.view().data, 0x5a, up.view().nbytes(),
                                              static_cast<cudaStream_t>(stream_->stream())),
                              cudaSuccess);
                    cuda::gated_projection_with(ctx_, dx, g, u, act, fused, cuda::GatedProjection::kFused);
                    stream_->synchronize();
                    const std::vector<uint8_t> pattern(up.view().nbytes(), 0x5a);
                    const bool took_fused = bytes_of(up) == pattern;
                    cuda::gated_projection_with(ctx_, dx, g, u, act, separate, cuda::GatedProjection::kSeparate);
                    stream_->synchronize();
                    EXPECT_EQ(bytes_of(fused), bytes_of(separate));
                    EXPECT_EQ(took_fused, n == 8200 || !cuda::skinny_bulk_available());
                }
            }
        }
    }
}

TEST_F(CudaMatmul, WeightsOfAnotherDtypeThanTheActivationsAreRefused) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    Tensor x = Tensor::empty({2, 8}, DType::kBF16, Device::kCuda),
           w = Tensor::empty({4, 8}, DType::kF32, Device::kCuda);
    Tensor y = Tensor::empty({2, 4}, DType::kBF16, Device::kCuda),
           y16 = Tensor::empty({2, 4}, DType::kF16, Device::kCuda);
    Tensor wb = Tensor::empty({4, 8}, DType::kBF16, Device::kCuda);
    EXPECT_DEATH(ops::matmul(ctx_, x, w, nullptr, y), "x is BF16 and w is F32; the CUDA backend takes weights in the");
    EXPECT_DEATH(ops::matmul(ctx_, x, wb, nullptr, y16), "y is F16 for BF16 x and w");
}

}  // namespace
}  // namespace taco
