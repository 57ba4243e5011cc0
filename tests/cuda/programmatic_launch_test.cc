// Programmatic dependent launch (kernels/cuda/programmatic_launch.h): TACO_CUDA_PDL's values, where it is on, and a
// chain of dependent kernels queued back to back (each launched while the one before may still run) giving the bits
// of the same chain run one kernel at a time. The GPU cases skip (with the reason) where no GPU is usable.
#include "kernels/cuda/programmatic_launch.h"

#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "cuda_test_util.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/skinny_gemm.h"

namespace taco {
namespace {

using testing_util::to_device;

TEST(ProgrammaticLaunch, TacoCudaPdlIsOneOrZero) {
    EXPECT_TRUE(cuda::programmatic_launch_choice(nullptr));
    EXPECT_TRUE(cuda::programmatic_launch_choice(""));
    EXPECT_TRUE(cuda::programmatic_launch_choice("1"));
    EXPECT_FALSE(cuda::programmatic_launch_choice("0"));
    EXPECT_DEATH(cuda::programmatic_launch_choice("yes"), "TACO_CUDA_PDL is 'yes'");
    EXPECT_DEATH(cuda::programmatic_launch_choice("00"), "TACO_CUDA_PDL is '00'");
}

TEST(ProgrammaticLaunch, IsOnFromHopperUnlessTurnedOff) {
    TACO_SKIP_WITHOUT_GPU();
    int device = 0, major = 0;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
    const bool wanted = cuda::programmatic_launch_choice(std::getenv("TACO_CUDA_PDL"));
    // This binary carries sm_90a code, so a Hopper device runs the kernels' griddepcontrol.
    EXPECT_EQ(cuda::programmatic_launch_enabled(), wanted && major == 9) << "compute capability " << major;
}

using ProgrammaticChain = testing_util::CudaStreamTest;

// A decode layer's dependencies, 24 times over: h -> skinny GEMM (o_proj's 4096 x 4096, a long kernel) -> y -> add into
// r -> rms_norm(r) -> h, each kernel reading what the one before wrote at once. Queued back to back they must give the
// bits of the chain with the stream synchronised after every kernel (where nothing can start early), for both builds of
// the skinny GEMM.
TEST_F(ProgrammaticChain, EachKernelSeesTheWholeOfTheOneBefore) {
    constexpr int64_t kHidden = 4096, kLayers = 24;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    Tensor w_host = Tensor::empty({kHidden, kHidden}, DType::kBF16);
    for (int64_t i = 0; i < kHidden * kHidden; ++i) store_from_f32(w_host.view().data, DType::kBF16, size_t(i), u(rng));
    Tensor x_host = Tensor::empty({1, kHidden}, DType::kBF16);
    for (int64_t i = 0; i < kHidden; ++i) store_from_f32(x_host.view().data, DType::kBF16, size_t(i), u(rng));
    Tensor norm_host = Tensor::empty({kHidden}, DType::kF32);
    for (int64_t i = 0; i < kHidden; ++i) static_cast<float*>(norm_host.view().data)[i] = 0.5f + 0.001f * float(i % 7);
    const Tensor w = to_device(w_host.view()), norm = to_device(norm_host.view());

    for (const cuda::SkinnyTuning& tuning : testing_util::skinny_gemm_builds()) {
        const auto chain = [&](bool one_at_a_time) {
            Tensor h = to_device(x_host.view()), r = to_device(x_host.view());
            Tensor y = Tensor::empty({1, kHidden}, DType::kBF16, Device::kCuda);
            const auto done = [&] {
                if (one_at_a_time) stream_->synchronize();
            };
            for (int64_t layer = 0; layer < kLayers; ++layer) {
                cuda::skinny_gemm(h.view().data, w.view().data, nullptr, y.view().data, 1, kHidden, kHidden,
                                  DType::kBF16, DType::kBF16, ctx_.stream, tuning);
                done();
                cuda::launch::add_rms_norm(ctx_.stream, r.view().data, y.view().data, h.view().data, DType::kBF16, 1,
                                           kHidden, static_cast<const float*>(norm.view().data), 1e-5f, 0.0f);
                done();
            }
            stream_->synchronize();
            std::vector<uint8_t> bits(size_t(h.view().nbytes()));
            EXPECT_EQ(cudaMemcpy(bits.data(), h.view().data, bits.size(), cudaMemcpyDeviceToHost), cudaSuccess);
            return bits;
        };
        const std::vector<uint8_t> expected = chain(true);
        for (int run = 0; run < 3; ++run)
            EXPECT_EQ(chain(false), expected) << "build " << int(tuning.kernel) << ", run " << run;
    }
}

}  // namespace
}  // namespace taco
