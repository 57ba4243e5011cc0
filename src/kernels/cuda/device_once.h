// A value computed once per CUDA device (occupancy, shared-memory limits, whether a build's code runs, whether
// programmatic launches are allowed): what a launch reads off a device costs runtime calls that it should not repeat.
// Plain C++17 header.
#pragma once

#include <mutex>
#include <type_traits>

#include "kernels/cuda/cuda_check.h"

namespace taco::cuda {

// compute(device) for the current device, once per device and per call site (each lambda type has its own cache).
template <class Compute>
const auto& once_per_device(Compute&& compute) {
    using Value = std::decay_t<decltype(compute(0))>;
    constexpr int kMaxDevices = 64;
    static std::once_flag once[kMaxDevices];
    static Value values[kMaxDevices];
    int device = 0;
    TACO_CUDA_CHECK(cudaGetDevice(&device));
    TACO_CHECK_MSG(device >= 0 && device < kMaxDevices, "CUDA device {} (at most {} are supported)", device,
                   kMaxDevices);
    std::call_once(once[device], [&] { values[device] = compute(device); });
    return values[device];
}

}  // namespace taco::cuda
