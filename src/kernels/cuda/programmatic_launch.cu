#include "kernels/cuda/programmatic_launch.h"

#include <cuda_runtime.h>

#include <cstdlib>

#include "core/check.h"
#include "kernels/cuda/device_once.h"
#include "kernels/cuda/env_switch.h"

namespace taco::cuda {

bool programmatic_launch_choice(const char* env_value) {
    return env_switch("TACO_CUDA_PDL", env_value, "programmatic dependent launches");
}

namespace {

// Compiled like every kernel of kernels/cuda: its binary version is theirs. A "90a;80" binary runs its sm_80 code
// (without griddepcontrol) on a device that cannot run sm_90a's, and those kernels must not be launched early.
__global__ void probe_kernel() {}

}  // namespace

bool hopper_code_runs() {
    return once_per_device([](int device) {
        int major = 0;
        TACO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        cudaFuncAttributes attributes{};
        TACO_CUDA_CHECK(cudaFuncGetAttributes(&attributes, probe_kernel));
        return major >= 9 && attributes.binaryVersion >= 90;
    });
}

bool programmatic_launch_enabled() {
    static const bool allowed = programmatic_launch_choice(std::getenv("TACO_CUDA_PDL"));
    return allowed && hopper_code_runs();
}

}  // namespace taco::cuda
