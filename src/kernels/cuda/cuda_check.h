// Every CUDA runtime call is checked: a failure aborts with the call, the error name and the place.
#pragma once

#include <cuda_runtime.h>

#include "core/check.h"

#define TACO_CUDA_CHECK(call)                                                                                          \
    do {                                                                                                               \
        cudaError_t taco_cuda_error_ = (call);                                                                         \
        TACO_CHECK_MSG(taco_cuda_error_ == cudaSuccess, "{} failed: {}", #call, cudaGetErrorString(taco_cuda_error_)); \
    } while (0)
