// The CUDA backend's allocators on a real GPU: device and pinned-host tensors through Tensor::empty, counted by the
// allocator interface, and a host -> device -> pinned round trip that restores the bytes. Skipped (with the reason)
// where no GPU or driver is usable, as on CI.
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "kernels/cuda/cuda_backend.h"

namespace taco {
namespace {

class CudaAllocator : public ::testing::Test {
protected:
    void SetUp() override {
        const Status status = cuda::init_backend(0);
        if (!status.is_ok()) GTEST_SKIP() << status.message();
    }
};

TEST_F(CudaAllocator, DeviceAndPinnedTensorsRoundTripTheirBytes) {
    ASSERT_TRUE(has_allocator(MemoryKind::kDevice));
    ASSERT_TRUE(has_allocator(MemoryKind::kPinnedHost));
    const AllocationStats before = allocator_for(MemoryKind::kDevice).stats();
    Tensor host = Tensor::empty({1000, 3}, DType::kF32);
    for (int64_t i = 0; i < host.numel(); ++i) host.as<float>()[i] = float(i) * 0.5f;
    {
        Tensor device = Tensor::empty({1000, 3}, DType::kF32, Device::kCuda);
        Tensor pinned = Tensor::empty_pinned({1000, 3}, DType::kF32);
        EXPECT_EQ(device.view().device, Device::kCuda);
        EXPECT_EQ(pinned.view().device, Device::kCpu);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(device.view().data) % 256, 0u);
        const AllocationStats during = allocator_for(MemoryKind::kDevice).stats();
        EXPECT_EQ(during.num_allocations, before.num_allocations + 1);
        EXPECT_EQ(during.bytes_in_use, before.bytes_in_use + 12000);
        ASSERT_EQ(cudaMemcpy(device.view().data, host.view().data, 12000, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(pinned.view().data, device.view().data, 12000, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(std::memcmp(pinned.as<float>(), host.as<float>(), 12000), 0);
        EXPECT_DEATH(device.as<float>(), "host access to a \\[1000, 3\\] tensor on the cuda");
        // Views of device memory keep the device.
        EXPECT_EQ(device.view().rows(10, 20).device, Device::kCuda);
    }
    EXPECT_EQ(allocator_for(MemoryKind::kDevice).stats().bytes_in_use, before.bytes_in_use);
}

TEST_F(CudaAllocator, InitialisingAgainIsANoOpAndAnotherDeviceIsAnError) {
    EXPECT_TRUE(cuda::init_backend(0).is_ok());
    const Status other = cuda::init_backend(1);
    EXPECT_FALSE(other.is_ok());
}

}  // namespace
}  // namespace taco
