// What CUDA devices this process can see. Plain C++ header so the CLI can include it without nvcc.
#pragma once

#include <string>
#include <vector>

namespace taco::cuda {

struct DeviceInfo {
    int index = 0;
    std::string name;
    int compute_capability_major = 0;
    int compute_capability_minor = 0;
    size_t total_memory_bytes = 0;
};

// Empty when no driver or no device is present (never aborts: a CPU-only machine is a normal case).
std::vector<DeviceInfo> list_devices();

}  // namespace taco::cuda
