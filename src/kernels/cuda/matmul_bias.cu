// add_bias_rows (matmul_bias.h): y[m, n] = round(float(y[m, n]) + bias[n]), one thread per element.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/check.h"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/matmul_bias.h"

namespace taco::cuda {
namespace {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

template <class T>
__global__ void add_bias_rows_kernel(T* y, const float* bias, int64_t rows, int64_t cols) {
    grid_dependency_wait();
    const int64_t count = rows * cols;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
        store(y + i, to_float(y[i]) + bias[i % cols]);
}

template <class T>
void launch(void* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
    const int64_t count = rows * cols;
    if (count == 0) return;
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 65535);
    launch_kernel("add_bias_rows_kernel", add_bias_rows_kernel<T>, unsigned(blocks), kThreads, 0, stream,
                  static_cast<T*>(y), bias, rows, cols);
}

}  // namespace

void add_bias_rows(void* y, DType y_dtype, const float* bias, int64_t rows, int64_t cols, void* stream) {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (y_dtype) {
        case DType::kF32: launch<float>(y, bias, rows, cols, s); return;
        case DType::kF16: launch<__half>(y, bias, rows, cols, s); return;
        case DType::kBF16: launch<__nv_bfloat16>(y, bias, rows, cols, s); return;
        default: TACO_CHECK_MSG(false, "matmul: a bias on a {} y", dtype_name(y_dtype));
    }
}

}  // namespace taco::cuda
