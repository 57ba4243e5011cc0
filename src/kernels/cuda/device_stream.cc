// DeviceStream: the stream, cuBLASLt handle and GEMM workspace behind a CUDA ExecContext.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"

namespace taco::cuda {

Result<std::unique_ptr<DeviceStream>> DeviceStream::create() {
    std::unique_ptr<DeviceStream> s(new DeviceStream());
    TACO_ASSIGN_OR_RETURN(s->stream_, Stream::create());
    cublasLtHandle_t handle = nullptr;
    const cublasStatus_t blas = cublasLtCreate(&handle);
    if (blas != CUBLAS_STATUS_SUCCESS) return error("cublasLtCreate failed: {}", cublasLtGetStatusString(blas));
    s->blas_handle_ = handle;
    s->blas_workspace_ = Tensor::empty({int64_t(kBlasWorkspaceBytes)}, DType::kU8, Device::kCuda);
    return s;
}

DeviceStream::~DeviceStream() {
    // Nothing queued may still use the handle or the workspace (unchecked: a destructor does not abort).
    if (stream_ != nullptr) cudaStreamSynchronize(static_cast<cudaStream_t>(stream_->get()));
    if (blas_handle_ != nullptr) cublasLtDestroy(static_cast<cublasLtHandle_t>(blas_handle_));
}

ExecContext DeviceStream::context(Workspace* scratch) const {
    ExecContext ctx;
    ctx.device = Device::kCuda;
    ctx.stream = stream_->get();
    ctx.blas_handle = blas_handle_;
    ctx.blas_workspace = blas_workspace_.view();
    ctx.scratch = scratch;
    return ctx;
}

void DeviceStream::synchronize() const { stream_->synchronize(); }

DeviceMemory device_memory() {
    DeviceMemory m;
    TACO_CUDA_CHECK(cudaMemGetInfo(&m.free_bytes, &m.total_bytes));
    return m;
}

}  // namespace taco::cuda
