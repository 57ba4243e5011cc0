// RMSNorm, LayerNorm and StableLM's per-head LayerNorm on CUDA, with the CPU backend's formulas
// (kernels/cpu/basic_ops.cc, pointwise_ops.cc). A row's statistics are fp32 sums in a fixed order: each thread adds
// its strided elements in increasing index, then the block (or warp) reduces the threads' sums in one fixed tree
// (kernel_common.cuh), so a row's result depends on its own values and length only, never on the batch.
#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

constexpr int kRowThreads = 256;      // rms_norm, layer_norm: one block per row
constexpr int kHeadRowsPerBlock = 4;  // per_head_layer_norm: one warp per (token, head) row

// out = (weight + weight_offset) * (x / sqrt(mean(x^2) + eps)).  x, out: [rows, hidden]; weight: [hidden]. Block r.
template <class T>
__global__ void rms_norm_kernel(const T* x, const float* weight, float eps, float weight_offset, int64_t hidden,
                                T* out) {
    __shared__ float partials[kWarpSize];
    const T* src = x + blockIdx.x * hidden;
    T* dst = out + blockIdx.x * hidden;
    float square_sum = 0.0f;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
        const float v = to_f32(src[i]);
        square_sum = fmaf(v, v, square_sum);
    }
    const float mean_square = block_sum(square_sum, partials) / float(hidden);
    const float inv = 1.0f / sqrtf(mean_square + eps);
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
        dst[i] = from_f32<T>((weight[i] + weight_offset) * (to_f32(src[i]) * inv));
}

// out = (x - mean) / sqrt(var + eps) * weight (+ bias), the variance of the centred values.  bias may be null.
template <class T>
__global__ void layer_norm_kernel(const T* x, const float* weight, const float* bias, float eps, int64_t hidden,
                                  T* out) {
    __shared__ float partials[kWarpSize];
    const T* src = x + blockIdx.x * hidden;
    T* dst = out + blockIdx.x * hidden;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) sum += to_f32(src[i]);
    const float mean = block_sum(sum, partials) / float(hidden);
    float square_sum = 0.0f;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
        const float centered = to_f32(src[i]) - mean;
        square_sum = fmaf(centered, centered, square_sum);
    }
    const float var = block_sum(square_sum, partials) / float(hidden);
    const float inv = 1.0f / sqrtf(var + eps);
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
        const float centered = to_f32(src[i]) - mean;
        dst[i] = from_f32<T>(centered * inv * weight[i] + (bias != nullptr ? bias[i] : 0.0f));
    }
}

// LayerNorm of each (token, head) row of x [tokens * heads, dim] in place, with head h's weight and bias [heads,
// dim] (bias may be null). One warp per row.
template <class T>
__global__ void per_head_layer_norm_kernel(T* x, const float* weight, const float* bias, float eps, int64_t num_rows,
                                           int64_t heads, int64_t dim) {
    const int64_t row = blockIdx.x * int64_t(kHeadRowsPerBlock) + threadIdx.x / kWarpSize;
    if (row >= num_rows) return;  // the whole warp leaves together
    const int lane = threadIdx.x % kWarpSize;
    T* v = x + row * dim;
    const int64_t h = row % heads;
    const float* w = weight + h * dim;
    const float* b = bias != nullptr ? bias + h * dim : nullptr;
    float sum = 0.0f;
    for (int64_t i = lane; i < dim; i += kWarpSize) sum += to_f32(v[i]);
    const float mean = warp_sum(sum) / float(dim);
    float square_sum = 0.0f;
    for (int64_t i = lane; i < dim; i += kWarpSize) {
        const float centered = to_f32(v[i]) - mean;
        square_sum = fmaf(centered, centered, square_sum);
    }
    const float var = warp_sum(square_sum) / float(dim);
    const float inv = 1.0f / sqrtf(var + eps);
    for (int64_t i = lane; i < dim; i += kWarpSize) {
        const float centered = to_f32(v[i]) - mean;
        v[i] = from_f32<T>(centered * inv * w[i] + (b != nullptr ? b[i] : 0.0f));
    }
}

}  // namespace

namespace launch {

void rms_norm(void* stream, const void* x, void* out, DType dtype, int64_t rows, int64_t hidden, const float* weight,
              float eps, float weight_offset) {
    if (rows == 0 || hidden == 0) return;
    dispatch_float(dtype, "rms_norm", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        rms_norm_kernel<T><<<unsigned(rows), kRowThreads, 0, as_stream(stream)>>>(
            static_cast<const T*>(x), weight, eps, weight_offset, hidden, static_cast<T*>(out));
        TACO_CUDA_CHECK_LAUNCH("rms_norm_kernel");
    });
}

void layer_norm(void* stream, const void* x, void* out, DType dtype, int64_t rows, int64_t hidden, const float* weight,
                const float* bias, float eps) {
    if (rows == 0 || hidden == 0) return;
    dispatch_float(dtype, "layer_norm", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        layer_norm_kernel<T><<<unsigned(rows), kRowThreads, 0, as_stream(stream)>>>(
            static_cast<const T*>(x), weight, bias, eps, hidden, static_cast<T*>(out));
        TACO_CUDA_CHECK_LAUNCH("layer_norm_kernel");
    });
}

void per_head_layer_norm(void* stream, void* x, DType dtype, int64_t tokens, int64_t heads, int64_t dim,
                         const float* weight, const float* bias, float eps) {
    const int64_t rows = tokens * heads;
    if (rows == 0 || dim == 0) return;
    dispatch_float(dtype, "per_head_layer_norm", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        per_head_layer_norm_kernel<T>
            <<<blocks_for(rows, kHeadRowsPerBlock), kHeadRowsPerBlock * kWarpSize, 0, as_stream(stream)>>>(
                static_cast<T*>(x), weight, bias, eps, rows, heads, dim);
        TACO_CUDA_CHECK_LAUNCH("per_head_layer_norm_kernel");
    });
}

}  // namespace launch
}  // namespace taco::cuda
