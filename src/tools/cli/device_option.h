// `--device cpu|cuda`: whether this build and machine can run on the device asked for.
#pragma once

#include <string>

#include "core/status.h"
#ifdef TACO_WITH_CUDA
#include "kernels/cuda/device_info.h"
#endif

namespace taco::cli {

inline Status check_device_available(const std::string& device) {
    if (device == "cpu") return Status::ok();
#ifdef TACO_WITH_CUDA
    auto devices = cuda::list_devices();
    if (devices.empty()) return error("--device cuda: no CUDA device is visible; use --device cpu");
    return error("--device cuda: found {} ({} GPU(s)), but this version has no CUDA engine yet; use --device cpu",
                 devices[0].name, devices.size());
#else
    return error("--device cuda: this taco_llm was built without CUDA (build the 'cuda' preset); use --device cpu");
#endif
}

}  // namespace taco::cli
