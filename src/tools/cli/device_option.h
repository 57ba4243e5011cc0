// `--device cpu|cuda`: whether this build can run on the device asked for.
#pragma once

#include <string>

#include "core/status.h"

namespace taco::cli {

inline Status check_device_available(const std::string& device) {
    if (device == "cpu") return Status::ok();
#ifdef TACO_WITH_CUDA
    return error("--device cuda: the CUDA engine is not available in this version yet; use --device cpu");
#else
    return error("--device cuda: this taco_llm was built without CUDA (build the 'cuda' preset); use --device cpu");
#endif
}

}  // namespace taco::cli
