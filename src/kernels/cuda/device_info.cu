#include "kernels/cuda/device_info.h"

#include <cuda_runtime.h>

namespace taco::cuda {

std::vector<DeviceInfo> list_devices() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no driver" error
        return {};
    }
    std::vector<DeviceInfo> devices;
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
        devices.push_back({i, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
    }
    return devices;
}

}  // namespace taco::cuda
