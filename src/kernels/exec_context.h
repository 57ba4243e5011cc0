// ExecContext: what an op needs to run besides its operands, passed explicitly to every op (no global). A runner
// owns one per device: the device, its stream and library handles, the scratch workspace, and the dry-run flag of
// workspace sizing (ops check their operands and return without touching memory). The CPU backend runs on the
// process-wide ThreadPool (core/thread_pool.h), sized once like an OpenMP runtime.
#pragma once

#include "core/tensor.h"
#include "core/workspace.h"

namespace taco {

struct ExecContext {
    Device device = Device::kCpu;
    void* stream = nullptr;        // cudaStream_t on CUDA; nullptr: the default stream
    void* blas_handle = nullptr;   // cublasLtHandle_t on CUDA
    TensorView blas_workspace;     // preallocated GEMM workspace on CUDA
    Workspace* scratch = nullptr;  // op temporaries (same addresses for the same shapes)
    bool dry_run = false;          // check shapes only: sizing the workspace

    // The CPU backend with the process-wide thread pool.
    static ExecContext cpu() { return ExecContext{}; }
};

}  // namespace taco
