// list_devices() against the CUDA runtime it wraps. On a machine without a usable driver or GPU (CI) the listing
// test skips with the runtime's reason, and the no-driver path is checked instead: an empty list, no abort.
#include "kernels/cuda/device_info.h"

#include <cuda_runtime.h>

#include <string>

#include <gtest/gtest.h>

namespace taco::cuda {
namespace {

// cudaSuccess with the number of devices, or the runtime's error (no driver, no device, driver too old, ...).
cudaError_t runtime_device_count(int* count) {
    *count = 0;
    const cudaError_t error = cudaGetDeviceCount(count);
    cudaGetLastError();
    return error;
}

std::string unusable_reason(cudaError_t error, int count) {
    if (error != cudaSuccess)
        return std::string("no usable CUDA driver: ") + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) +
               ")";
    if (count == 0) return "the CUDA driver sees no GPU";
    return "";
}

TEST(CudaDeviceInfo, ListsEveryDeviceTheRuntimeReports) {
    int count = 0;
    const cudaError_t error = runtime_device_count(&count);
    const std::string reason = unusable_reason(error, count);
    if (!reason.empty()) GTEST_SKIP() << reason;

    const std::vector<DeviceInfo> devices = list_devices();
    ASSERT_EQ(devices.size(), size_t(count));
    for (int i = 0; i < count; ++i) {
        SCOPED_TRACE("device " + std::to_string(i));
        cudaDeviceProp prop{};
        ASSERT_EQ(cudaGetDeviceProperties(&prop, i), cudaSuccess);
        const DeviceInfo& d = devices[size_t(i)];
        EXPECT_EQ(d.index, i);
        EXPECT_FALSE(d.name.empty());
        EXPECT_EQ(d.name, std::string(prop.name));
        EXPECT_EQ(d.compute_capability_major, prop.major);
        EXPECT_EQ(d.compute_capability_minor, prop.minor);
        EXPECT_GE(d.compute_capability_major, 7);  // CUDA 13 runs nothing older than Turing (7.5)
        // The memory a context on the device reports is the same total, found another way.
        ASSERT_EQ(cudaSetDevice(i), cudaSuccess);
        size_t free_bytes = 0, total_bytes = 0;
        ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
        EXPECT_EQ(d.total_memory_bytes, total_bytes);
        EXPECT_GT(d.total_memory_bytes, size_t(1) << 30);
    }
}

TEST(CudaDeviceInfo, WithoutAUsableDriverTheListIsEmpty) {
    int count = 0;
    const cudaError_t error = runtime_device_count(&count);
    if (error == cudaSuccess) GTEST_SKIP() << "a CUDA driver is usable here (" << count << " device(s))";

    // The runtime's failed initialization is sticky (every later call returns it again); list_devices() must answer
    // an empty list each time and never abort.
    EXPECT_TRUE(list_devices().empty());
    EXPECT_TRUE(list_devices().empty());
    EXPECT_EQ(runtime_device_count(&count), error);
    EXPECT_EQ(count, 0);
}

}  // namespace
}  // namespace taco::cuda
