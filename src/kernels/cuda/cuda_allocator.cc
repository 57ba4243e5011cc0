// The CUDA backend's allocators: device memory (cudaMalloc) and page-locked host memory (cudaHostAlloc), both counted
// by the Allocator base. Long-lived memory only (weights, KV, workspace, staging buffers): nothing allocates per step.
#include <cuda_runtime.h>

#include <mutex>

#include "core/allocator.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"

namespace taco::cuda {
namespace {

class DeviceAllocator final : public Allocator {
public:
    MemoryKind kind() const override { return MemoryKind::kDevice; }

protected:
    void* do_allocate(size_t bytes) override {
        void* p = nullptr;
        // cudaMalloc aligns to at least 256 bytes.
        if (cudaMalloc(&p, bytes == 0 ? 256 : bytes) != cudaSuccess) {
            cudaGetLastError();
            return nullptr;
        }
        return p;
    }
    void do_deallocate(void* p) override { TACO_CUDA_CHECK(cudaFree(p)); }
};

class PinnedHostAllocator final : public Allocator {
public:
    MemoryKind kind() const override { return MemoryKind::kPinnedHost; }

protected:
    void* do_allocate(size_t bytes) override {
        void* p = nullptr;
        if (cudaHostAlloc(&p, bytes == 0 ? 256 : bytes, cudaHostAllocDefault) != cudaSuccess) {
            cudaGetLastError();
            return nullptr;
        }
        return p;
    }
    void do_deallocate(void* p) override { TACO_CUDA_CHECK(cudaFreeHost(p)); }
};

std::mutex init_mutex;
int initialised_device = -1;

}  // namespace

Status init_backend(int device_index) {
    std::lock_guard<std::mutex> lock(init_mutex);
    if (initialised_device == device_index) return Status::ok();
    if (initialised_device >= 0)
        return error("the CUDA backend already runs on device {}; one device per process", initialised_device);
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        cudaGetLastError();
        return error("no usable CUDA device: {} ({})", cudaGetErrorString(status), cudaGetErrorName(status));
    }
    if (device_index < 0 || device_index >= count)
        return error("CUDA device {} does not exist ({} visible)", device_index, count);
    const cudaError_t set = cudaSetDevice(device_index);
    if (set != cudaSuccess) {
        cudaGetLastError();
        return error("cannot use CUDA device {}: {}", device_index, cudaGetErrorString(set));
    }
    // Process lifetime: tensors may be freed during static destruction.
    static DeviceAllocator* device = new DeviceAllocator();
    static PinnedHostAllocator* pinned = new PinnedHostAllocator();
    register_allocator(MemoryKind::kDevice, device);
    register_allocator(MemoryKind::kPinnedHost, pinned);
    initialised_device = device_index;
    return Status::ok();
}

}  // namespace taco::cuda
