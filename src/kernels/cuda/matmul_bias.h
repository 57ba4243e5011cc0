// The bias of ops::matmul on CUDA where cuBLASLt's epilogue cannot take an f32 bias for y's dtype
// (GemmPlan::bias_in_epilogue): y[m, n] += bias[n] after the product. Plain C++17 header (matmul_bias.cu).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace taco::cuda {

// y: [rows, cols] of y_dtype (f32, f16, bf16) on the device; bias: [cols] f32 on the device; on `stream` (a
// cudaStream_t).
void add_bias_rows(void* y, DType y_dtype, const float* bias, int64_t rows, int64_t cols, void* stream);

}  // namespace taco::cuda
