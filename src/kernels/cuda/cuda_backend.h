// Starting the CUDA backend: selects a device and registers the device and pinned-host allocators
// (core/allocator.h), so Tensor::empty(..., Device::kCuda) and Tensor::empty_pinned work. Plain C++ header so the
// runner and the CLI can include it without nvcc.
#pragma once

#include <cstddef>
#include <memory>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/cuda/stream_event.h"
#include "kernels/exec_context.h"

namespace taco::cuda {

// Idempotent for the same device; an error (naming the device count) when no driver or no such device is usable.
Status init_backend(int device_index = 0);

// What a runner owns to run ops on the device: a non-blocking stream, a cuBLASLt handle and the GEMM workspace
// (preallocated once, so no op allocates). context() gives the ExecContext ops take; every op on it is queued on
// the stream in call order.
class DeviceStream {
public:
    static constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;  // cuBLASLt's recommendation for Hopper

    // init_backend() must have succeeded.
    static Result<std::unique_ptr<DeviceStream>> create();
    ~DeviceStream();
    DeviceStream(const DeviceStream&) = delete;
    DeviceStream& operator=(const DeviceStream&) = delete;

    ExecContext context(Workspace* scratch) const;
    void* stream() const { return stream_->get(); }
    // Waits for everything queued on the stream; aborts naming the error of a failed kernel.
    void synchronize() const;

private:
    DeviceStream() = default;
    std::unique_ptr<Stream> stream_;
    void* blas_handle_ = nullptr;  // cublasLtHandle_t
    Tensor blas_workspace_;
};

// Bytes of device memory free and in all, as cudaMemGetInfo reports them for the current device.
struct DeviceMemory {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
};
DeviceMemory device_memory();

}  // namespace taco::cuda
