// RMSNorm (alone or after the residual add), LayerNorm and StableLM's per-head LayerNorm on CUDA, with the CPU
// backend's formulas (kernels/cpu/basic_ops.cc, pointwise_ops.cc). A row's statistics are fp32 sums in a fixed
// order: each thread adds its elements in increasing index, then the block (or warp) reduces the threads' sums in one
// fixed tree (kernel_common.cuh), so a row's result depends on its own values and length only, never on the batch.
//
// RMSNorm has two builds, picked from the row length and the operands' alignment alone (so every row of a given
// length takes the same one): rows that split into 16-byte pieces, up to kVecThreads * kMaxVecIters pieces, are held
// in registers, each thread loading its pieces and its weights at once (one memory round trip before the reduction:
// at decode shapes a row of 4096 is one block, and the scalar build's 16 dependent load rounds were most of its
// time); other rows take the scalar build.
#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

constexpr int kRowThreads = 256;      // rms_norm, layer_norm: one block per row
constexpr int kVecThreads = 512;      // rms_norm's vector build: at most this many threads per row
constexpr int kMaxVecIters = 4;       // and at most this many 16-byte pieces per thread
constexpr int kHeadRowsPerBlock = 4;  // per_head_layer_norm: one warp per (token, head) row

// out = (weight + weight_offset) * (x / sqrt(mean(x^2) + eps)).  x, out: [rows, hidden]; weight: [hidden]. Block r.
template <class T>
__global__ void rms_norm_kernel(const T* x, const float* weight, float eps, float weight_offset, int64_t hidden,
                                T* out) {
    grid_dependency_wait();
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

// 16-byte pieces of T.
template <class T>
struct Piece {
    static constexpr int kSize = 16 / int(sizeof(T));
    union {
        uint4 raw;
        T e[kSize];
    };
};

// The vector build of RMSNorm, optionally after the residual add: with kAdd, x[r] = x[r] + delta[r] (one rounding,
// as add_kernel) is stored back and normalised; out = (weight + weight_offset) * (x / sqrt(mean(x^2) + eps)). Thread
// i holds pieces i, i + blockDim.x, ... (kIters of them); a thread's square sum runs over its pieces in that order.
// Rows of `hidden` elements, hidden a multiple of the piece; x, delta, out, weight 16-byte aligned; out != x with
// kAdd (without it out may alias x). Block r.
template <class T, int kIters, bool kAdd>
__global__ void __launch_bounds__(kVecThreads) rms_norm_vec_kernel(T* x, const T* delta, const float* weight, float eps,
                                                                   float weight_offset, int64_t hidden, T* out) {
    grid_dependency_wait();
    constexpr int P = Piece<T>::kSize;
    __shared__ float partials[kWarpSize];
    const int64_t pieces = hidden / P;
    T* src = x + blockIdx.x * hidden;
    float v[kIters][P], w[kIters][P];
    float square_sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
        const int64_t j = threadIdx.x + int64_t(k) * blockDim.x;
        if (j >= pieces) continue;
        Piece<T> in;
        in.raw = *reinterpret_cast<const uint4*>(src + j * P);
        if constexpr (kAdd) {
            Piece<T> d;
            d.raw = *reinterpret_cast<const uint4*>(delta + blockIdx.x * hidden + j * P);
#pragma unroll
            for (int e = 0; e < P; ++e) in.e[e] = from_f32<T>(to_f32(in.e[e]) + to_f32(d.e[e]));
            *reinterpret_cast<uint4*>(src + j * P) = in.raw;
        }
#pragma unroll
        for (int e = 0; e < P; ++e) {
            v[k][e] = to_f32(in.e[e]);
            square_sum = fmaf(v[k][e], v[k][e], square_sum);
        }
#pragma unroll
        for (int e = 0; e < P; e += 4) {
            const float4 w4 = *reinterpret_cast<const float4*>(weight + j * P + e);
            w[k][e] = w4.x, w[k][e + 1] = w4.y, w[k][e + 2] = w4.z, w[k][e + 3] = w4.w;
        }
    }
    const float mean_square = block_sum(square_sum, partials) / float(hidden);
    const float inv = 1.0f / sqrtf(mean_square + eps);
    T* dst = out + blockIdx.x * hidden;
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
        const int64_t j = threadIdx.x + int64_t(k) * blockDim.x;
        if (j >= pieces) continue;
        Piece<T> o;
#pragma unroll
        for (int e = 0; e < P; ++e) o.e[e] = from_f32<T>((w[k][e] + weight_offset) * (v[k][e] * inv));
        *reinterpret_cast<uint4*>(dst + j * P) = o.raw;
    }
}

// out = (x - mean) / sqrt(var + eps) * weight (+ bias), the variance of the centred values.  bias may be null.
template <class T>
__global__ void layer_norm_kernel(const T* x, const float* weight, const float* bias, float eps, int64_t hidden,
                                  T* out) {
    grid_dependency_wait();
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
    grid_dependency_wait();
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

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The vector build's pieces per thread for rows of `hidden` (0: the scalar build), from the length and the alignment
// of the row operands alone.
template <class T>
int vec_iters(int64_t hidden, const void* x, const void* out, const float* weight) {
    constexpr int P = Piece<T>::kSize;
    if (hidden % P != 0 || !aligned16(x) || !aligned16(out) || !aligned16(weight)) return 0;
    const int64_t pieces = hidden / P;
    for (int iters = 1; iters <= kMaxVecIters; iters *= 2)
        if (pieces <= int64_t(kVecThreads) * iters) return iters;
    return 0;
}

// Launches the vector build with `iters` pieces per thread (vec_iters's answer, > 0).
template <class T, bool kAdd>
void launch_rms_norm_vec(cudaStream_t stream, int iters, T* x, const T* delta, T* out, int64_t rows, int64_t hidden,
                         const float* weight, float eps, float weight_offset) {
    const int64_t pieces = hidden / Piece<T>::kSize;
    const int threads = int((pieces + iters - 1) / iters + kWarpSize - 1) / kWarpSize * kWarpSize;
    const dim3 grid{unsigned(rows)};
    switch (iters) {
        case 1:
            launch_kernel("rms_norm_vec_kernel", rms_norm_vec_kernel<T, 1, kAdd>, grid, threads, 0, stream, x, delta,
                          weight, eps, weight_offset, hidden, out);
            break;
        case 2:
            launch_kernel("rms_norm_vec_kernel", rms_norm_vec_kernel<T, 2, kAdd>, grid, threads, 0, stream, x, delta,
                          weight, eps, weight_offset, hidden, out);
            break;
        default:
            launch_kernel("rms_norm_vec_kernel", rms_norm_vec_kernel<T, 4, kAdd>, grid, threads, 0, stream, x, delta,
                          weight, eps, weight_offset, hidden, out);
            break;
    }
}

template <class T>
void launch_rms_norm_scalar(cudaStream_t stream, const T* x, T* out, int64_t rows, int64_t hidden, const float* weight,
                            float eps, float weight_offset) {
    launch_kernel("rms_norm_kernel", rms_norm_kernel<T>, unsigned(rows), kRowThreads, 0, stream, x, weight, eps,
                  weight_offset, hidden, out);
}

}  // namespace

namespace launch {

void rms_norm(void* stream, const void* x, void* out, DType dtype, int64_t rows, int64_t hidden, const float* weight,
              float eps, float weight_offset) {
    if (rows == 0 || hidden == 0) return;
    dispatch_float(dtype, "rms_norm", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* xt = const_cast<T*>(static_cast<const T*>(x));  // read only: the vector build without kAdd
        if (const int iters = vec_iters<T>(hidden, x, out, weight); iters > 0)
            return launch_rms_norm_vec<T, false>(as_stream(stream), iters, xt, nullptr, static_cast<T*>(out), rows,
                                                 hidden, weight, eps, weight_offset);
        launch_rms_norm_scalar<T>(as_stream(stream), xt, static_cast<T*>(out), rows, hidden, weight, eps,
                                  weight_offset);
    });
}

void add_rms_norm(void* stream, void* x, const void* delta, void* out, DType dtype, int64_t rows, int64_t hidden,
                  const float* weight, float eps, float weight_offset) {
    if (rows == 0 || hidden == 0) return;
    dispatch_float(dtype, "add_rms_norm", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* xt = static_cast<T*>(x);
        const int iters = vec_iters<T>(hidden, x, out, weight);
        if (iters > 0 && aligned16(delta))
            return launch_rms_norm_vec<T, true>(as_stream(stream), iters, xt, static_cast<const T*>(delta),
                                                static_cast<T*>(out), rows, hidden, weight, eps, weight_offset);
        // The two ops themselves (their bits by construction).
        add_inplace(stream, x, delta, dtype, rows * hidden);
        rms_norm(stream, x, out, dtype, rows, hidden, weight, eps, weight_offset);
    });
}

void layer_norm(void* stream, const void* x, void* out, DType dtype, int64_t rows, int64_t hidden, const float* weight,
                const float* bias, float eps) {
    if (rows == 0 || hidden == 0) return;
    dispatch_float(dtype, "layer_norm", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("layer_norm_kernel", layer_norm_kernel<T>, unsigned(rows), kRowThreads, 0, as_stream(stream),
                      static_cast<const T*>(x), weight, bias, eps, hidden, static_cast<T*>(out));
    });
}

void per_head_layer_norm(void* stream, void* x, DType dtype, int64_t tokens, int64_t heads, int64_t dim,
                         const float* weight, const float* bias, float eps) {
    const int64_t rows = tokens * heads;
    if (rows == 0 || dim == 0) return;
    dispatch_float(dtype, "per_head_layer_norm", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("per_head_layer_norm_kernel", per_head_layer_norm_kernel<T>, blocks_for(rows, kHeadRowsPerBlock),
                      kHeadRowsPerBlock * kWarpSize, 0, as_stream(stream), static_cast<T*>(x), weight, bias, eps, rows,
                      heads, dim);
    });
}

}  // namespace launch
}  // namespace taco::cuda
