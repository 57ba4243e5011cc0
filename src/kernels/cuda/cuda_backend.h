// Starting the CUDA backend: selects a device and registers the device and pinned-host allocators
// (core/allocator.h), so Tensor::empty(..., Device::kCuda) and Tensor::empty_pinned work. Plain C++ header so the
// runner and the CLI can include it without nvcc.
#pragma once

#include "core/status.h"

namespace taco::cuda {

// Idempotent for the same device; an error (naming the device count) when no driver or no such device is usable.
Status init_backend(int device_index = 0);

}  // namespace taco::cuda
