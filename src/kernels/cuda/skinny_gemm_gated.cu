// The skinny GEMM's gate / up with the gated activation in its epilogue (skinny_gemm.h's skinny_gated): out [M, N] =
// act(x . w_gate^T + b_gate) * (x . w_up^T + b_up) for M <= kSkinnyMaxRows, in one launch instead of the gate / up
// launch and the activation's kernel after it (2.9 us a layer at bs=1 on an H100, bench/results/h100-2026-12-07f),
// and without writing gate and up.
//
// The bits are those of the separate calls: a block takes the same 8 rows of both matrices that the register build
// (skinny_gemm.cu) gives one block each, its warps take the same chunks of K in the same order into one accumulator
// per matrix (the mma of a chunk depends on that chunk and the accumulator alone), the warps' sums are added in warp
// order, the bias added, and each result rounded to the activation dtype, as skinny_gemm_kernel writes gate and up;
// then activate (activation.cuh, the elementwise kernel's formula) on the rounded gate times the rounded up, rounded
// once, as gated_activation_kernel does. Only products the register build would run are taken (skinny_gated_applies:
// the bulk build sums in another order).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/skinny_gemm_chunk.cuh"
#include "kernels/cuda/skinny_gemm_detail.h"

namespace taco::cuda {
namespace {

constexpr int kRowsOfW = kSkinnyRowsOfW;  // the mma's N
constexpr int kChunk = 32;                // columns of K per warp step: 4 lanes x 8 elements
constexpr int kInFlight = 4;              // chunks of both matrices loaded before the first is used
constexpr int kVector = 8;                // 16-byte loads of 2-byte elements

// kWarps: warps_for(N) of skinny_gemm.cu (the warps that split K, part of the order of the sums). kUpperRows: M > 8.
template <class T, int kWarps, bool kUpperRows>
__global__ void __launch_bounds__(kWarps* kWarpSize)
    skinny_gated_kernel(const T* __restrict__ x, const T* __restrict__ w_gate, const float* __restrict__ b_gate,
                        const T* __restrict__ w_up, const float* __restrict__ b_up, T* __restrict__ out, int m,
                        int64_t n, int64_t k, launch::ActivationKind act) {
    const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
    const int g = lane / 4, t = lane % 4;
    const int64_t n0 = int64_t(blockIdx.x) * kRowsOfW;
    grid_dependency_wait();
    const int64_t chunks = (k + kChunk - 1) / kChunk;
    const bool w_ok = n0 + g < n, x_ok = g < m, x_upper_ok = kUpperRows && g + 8 < m;
    const int64_t w_at = (w_ok ? n0 + g : 0) * k + t * kVector;
    const T* gate_row = w_gate + w_at;
    const T* up_row = w_up + w_at;
    const T* x_row = x + int64_t(x_ok ? g : 0) * k + t * kVector;
    const T* x_upper = x + int64_t(x_upper_ok ? g + 8 : 0) * k + t * kVector;
    float acc_gate[4] = {0, 0, 0, 0}, acc_up[4] = {0, 0, 0, 0};
    // Warp w's chunks w, w + kWarps, ... in increasing order, as in skinny_gemm_kernel (however many are in flight).
    for (int64_t c0 = warp; c0 < chunks; c0 += int64_t(kWarps) * kInFlight) {
        uint4 gv[kInFlight], uv[kInFlight], xv[kInFlight], xu[kInFlight];
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) {
            const int64_t col = (c0 + int64_t(u) * kWarps) * kChunk;
            const bool in_k = col + t * kVector < k;
            const uint4 zero = make_uint4(0, 0, 0, 0);
            gv[u] = in_k && w_ok ? __ldcs(reinterpret_cast<const uint4*>(gate_row + col)) : zero;
            uv[u] = in_k && w_ok ? __ldcs(reinterpret_cast<const uint4*>(up_row + col)) : zero;
            load_x_chunk<T, kUpperRows>(xv[u], xu[u], x_row, x_upper, col, in_k, x_ok, x_upper_ok);
        }
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) {
            mma_chunk<T>(acc_gate, xv[u], xu[u], gv[u]);
            mma_chunk<T>(acc_up, xv[u], xu[u], uv[u]);
        }
    }
    // acc: rows g (0, 1) and g + 8 (2, 3) of x, outputs n0 + 2 t (0, 2) and n0 + 2 t + 1 (1, 3); gate's in 0..3 of
    // the partials, up's in 4..7.
    __shared__ float partial[kWarps][8][kWarpSize];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        partial[warp][i][lane] = acc_gate[i];
        partial[warp][4 + i][lane] = acc_up[i];
    }
    __syncthreads();
    if (warp != 0) return;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int row = i < 2 ? g : g + 8;
        const int64_t col = n0 + 2 * t + i % 2;
        if (row >= m || col >= n) continue;
        float gate = partial[0][i][lane], up = partial[0][4 + i][lane];
#pragma unroll
        for (int wi = 1; wi < kWarps; ++wi) {
            gate += partial[wi][i][lane];
            up += partial[wi][4 + i][lane];
        }
        if (b_gate != nullptr) gate += b_gate[col];
        if (b_up != nullptr) up += b_up[col];
        const T gate_rounded = from_f32<T>(gate), up_rounded = from_f32<T>(up);
        out[int64_t(row) * n + col] = from_f32<T>(activate(to_f32(gate_rounded), act) * to_f32(up_rounded));
    }
}

template <class T, int kWarps>
void launch_gated(const SkinnyGated& p, cudaStream_t stream) {
    const auto kernel = p.m > 8 ? skinny_gated_kernel<T, kWarps, true> : skinny_gated_kernel<T, kWarps, false>;
    const int64_t blocks = (p.n + kRowsOfW - 1) / kRowsOfW;
    TACO_CHECK_MSG(blocks <= int64_t(0x7fffffff), "skinny_gated: {} blocks of 8 rows of w are too many", blocks);
    launch_kernel("skinny_gated_kernel", kernel, unsigned(blocks), kWarps * kWarpSize, 0, stream,
                  static_cast<const T*>(p.x), static_cast<const T*>(p.w_gate), p.b_gate, static_cast<const T*>(p.w_up),
                  p.b_up, static_cast<T*>(p.out), int(p.m), p.n, p.k, p.act);
}

template <class T>
void launch_gated_typed(const SkinnyGated& p, int warps, cudaStream_t stream) {
    if (warps == 16) return launch_gated<T, 16>(p, stream);
    TACO_CHECK_MSG(warps == 4, "skinny_gated: {} warps", warps);
    launch_gated<T, 4>(p, stream);
}

}  // namespace

void skinny_gated_launch(const SkinnyGated& p, int warps, DType dtype, void* stream) {
    const cudaStream_t s = as_stream(stream);
    if (dtype == DType::kBF16) return launch_gated_typed<__nv_bfloat16>(p, warps, s);
    TACO_CHECK_MSG(dtype == DType::kF16, "skinny_gated: {} operands", dtype_name(dtype));
    launch_gated_typed<__half>(p, warps, s);
}

}  // namespace taco::cuda
