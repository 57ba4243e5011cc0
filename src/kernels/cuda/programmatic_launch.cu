#include "kernels/cuda/programmatic_launch.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <string_view>

#include "core/check.h"
#include "kernels/cuda/device_once.h"

namespace taco::cuda {

bool programmatic_launch_choice(const char* env_value) {
    const std::string_view value = env_value == nullptr ? std::string_view() : std::string_view(env_value);
    if (value.empty() || value == "1") return true;
    if (value == "0") return false;
    TACO_CHECK_MSG(false,
                   "TACO_CUDA_PDL is '{}': 1 (the default) allows programmatic dependent launches, 0 turns them off",
                   value);
    return false;
}

namespace {

// Compiled like every kernel of kernels/cuda: its binary version is theirs. A "90a;80" binary runs its sm_80 code
// (without griddepcontrol) on a device that cannot run sm_90a's, and those kernels must not be launched early.
__global__ void probe_kernel() {}

}  // namespace

bool programmatic_launch_enabled() {
    static const bool allowed = programmatic_launch_choice(std::getenv("TACO_CUDA_PDL"));
    if (!allowed) return false;
    return once_per_device([](int device) {
        int major = 0;
        TACO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        cudaFuncAttributes attributes{};
        TACO_CUDA_CHECK(cudaFuncGetAttributes(&attributes, probe_kernel));
        return major >= 9 && attributes.binaryVersion >= 90;
    });
}

}  // namespace taco::cuda
