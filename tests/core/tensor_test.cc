// Tensors with a place: allocation through the allocator interface (counted), views that keep dtype, device and
// strides, and host access checked against the device and the element type.
#include <gtest/gtest.h>

#include "core/tensor.h"
#include "core/workspace.h"

namespace taco {
namespace {

TEST(Tensor, EmptyAllocatesThroughTheHostAllocatorAndFreesOnDestruction) {
    const AllocationStats before = allocator_for(MemoryKind::kHost).stats();
    {
        Tensor t = Tensor::empty({3, 5}, DType::kF32);
        EXPECT_EQ(t.view().device, Device::kCpu);
        EXPECT_EQ(t.memory(), MemoryKind::kHost);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t.view().data) % 256, 0u);
        const AllocationStats during = allocator_for(MemoryKind::kHost).stats();
        EXPECT_EQ(during.num_allocations, before.num_allocations + 1);
        EXPECT_EQ(during.bytes_in_use, before.bytes_in_use + 60);
        Tensor moved = std::move(t);
        EXPECT_FALSE(t.defined());
        EXPECT_TRUE(moved.defined());
    }
    EXPECT_EQ(allocator_for(MemoryKind::kHost).stats().bytes_in_use, before.bytes_in_use);
}

TEST(Tensor, DeviceMemoryIsAnErrorWithoutABackend) {
    if (has_allocator(MemoryKind::kDevice)) GTEST_SKIP() << "a CUDA backend is registered";
    EXPECT_DEATH(Tensor::empty({4}, DType::kF32, Device::kCuda), "no device memory");
    EXPECT_DEATH(Tensor::empty_pinned({4}, DType::kF32), "no pinned host memory");
}

TEST(TensorView, ReshapeRowsAndSliceKeepDtypeDeviceAndStrides) {
    Tensor t = Tensor::empty({4, 6}, DType::kF32);
    for (int i = 0; i < 24; ++i) t.as<float>()[i] = float(i);
    TensorView r = t.view().reshape({2, -1, 3});
    EXPECT_EQ(r.shape_string(), "[2, 4, 3]");
    EXPECT_EQ(r.strides[0], 12);
    TensorView rows = t.view().rows(1, 3);
    EXPECT_EQ(rows.shape_string(), "[2, 6]");
    EXPECT_EQ(rows.as<float>()[0], 6.0f);
    EXPECT_TRUE(rows.is_contiguous());
    TensorView cols = t.view().slice(1, 2, 4);
    EXPECT_EQ(cols.shape_string(), "[4, 2]");
    EXPECT_EQ(cols.strides[0], 6);
    EXPECT_FALSE(cols.is_contiguous());
    EXPECT_EQ(cols.row<float>(2)[1], 15.0f);
    EXPECT_DEATH(cols.reshape({8}), "non-contiguous");
    EXPECT_DEATH(t.view().reshape({5, 5}), "reshape");
    EXPECT_DEATH(t.view().rows(3, 5), "slice");
}

TEST(TensorView, HostAccessIsCheckedAgainstDeviceAndElementType) {
    float data[4] = {};
    TensorView on_device(data, DType::kF32, {4}, Device::kCuda);
    EXPECT_DEATH(on_device.as<float>(), "host access to a \\[4\\] tensor on the cuda");
    TensorView ints(data, DType::kI32, {4});
    EXPECT_DEATH(ints.as<float>(), "wrong element type");
    EXPECT_NE(ints.as<int32_t>(), nullptr);
    EXPECT_NE(ints.as<uint8_t>(), nullptr);  // bytes of anything
}

TEST(Workspace, UnsizedRecordsTheHighWaterMarkAndSizedGivesTheSameAddressesPerShape) {
    Workspace ws;
    TensorView a = ws.alloc({10, 10}, DType::kF32);
    EXPECT_EQ(a.data, nullptr);
    const size_t mark = ws.mark();
    ws.alloc({1000}, DType::kF32);
    ws.release_to(mark);
    ws.alloc({10}, DType::kI64);
    EXPECT_EQ(ws.high_water_bytes(), 512u + 4096u);
    ws.reserve(ws.high_water_bytes());
    const int64_t allocations = total_num_allocations();
    for (int pass = 0; pass < 3; ++pass) {
        ws.reset();
        TensorView x = ws.alloc({10, 10}, DType::kF32);
        TensorView y = ws.alloc({1000}, DType::kF32);
        ASSERT_NE(x.data, nullptr);
        EXPECT_EQ(static_cast<uint8_t*>(y.data) - static_cast<uint8_t*>(x.data), 512);
    }
    EXPECT_EQ(total_num_allocations(), allocations);
    ws.reset();
    ws.alloc({10, 10}, DType::kF32);
    ws.alloc({1000}, DType::kF32);  // exactly the capacity
    EXPECT_DEATH(ws.alloc({1}, DType::kF32), "workspace overflow");
}

}  // namespace
}  // namespace taco
