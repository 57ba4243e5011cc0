// skinny_gemm (skinny_gemm.h): y [M, N] = x [M, K] . w [N, K]^T for M <= 16, memory-bound.
//
// Layout of the work: a block of kThreads threads owns R consecutive rows of w (R outputs per row of x). Thread t
// reads the 16-byte vectors t, t + kThreads, t + 2 kThreads, ... of each of its block's R rows of w (so a warp's
// loads are 512 contiguous bytes of one row), and the vectors of x at the same columns for each of the MT rows of x
// (from L1/L2: x is small and every block reads it), and keeps MT x R fp32 partial sums. Then the block reduces:
// each warp by a transposing butterfly (warp_transpose_sum: V values in V - V/32 shuffles instead of 5 V), the warps'
// sums through shared memory in warp order, and thread j < MT R writes output j with the bias, rounded once.
//
// The sum of an output element: its thread partials, each over the columns t + i kThreads in increasing i (and the 8
// columns of a vector in order), combined pairwise across lane masks 16, 8, 4, 2, 1 (as warp_sum), then over the
// warps 0..7 in order. Nothing of that depends on M, MT, R or on the values of other rows (fp32 addition is
// commutative bitwise, so "mine + theirs" equals "theirs + mine"): batch invariance up to kSkinnyMaxRows rows.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/skinny_gemm.h"

namespace taco::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kVector = 8;  // 16-byte loads of 2-byte elements

// Two 2-byte values as floats.
__device__ __forceinline__ float2 pair_to_f32(uint32_t bits, __nv_bfloat16) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
}
__device__ __forceinline__ float2 pair_to_f32(uint32_t bits, __half) {
    return __half22float2(*reinterpret_cast<const __half2*>(&bits));
}

// acc += sum of the 8 products of one vector of x and one of w, in column order.
template <class T>
__device__ __forceinline__ float dot8(const uint4& x, const uint4& w, float acc) {
    const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 a = pair_to_f32(xs[i], T{}), b = pair_to_f32(ws[i], T{});
        acc = fmaf(a.x, b.x, acc);
        acc = fmaf(a.y, b.y, acc);
    }
    return acc;
}

// The transposing butterfly over the lanes of a warp: at mask M with S > 1 values left, a lane keeps one half of its
// values (the upper half when its bit M is set) and adds the partner's copy of that half, sending the other; once one
// value is left, the remaining masks add it plainly (as warp_sum). Every value is summed across masks 16..1 in that
// order; afterwards lane l holds values base(l) .. base(l) + max(V / 32, 1) - 1 in v[0..].
template <int S, int MASK, int V>
__device__ __forceinline__ void warp_transpose_sum(float (&v)[V], int lane) {
    if constexpr (MASK > 0) {
        if constexpr (S == 1) {
            v[0] += __shfl_xor_sync(0xffffffffu, v[0], MASK);
        } else {
            constexpr int kHalf = S / 2;
            const bool upper = (lane & MASK) != 0;
#pragma unroll
            for (int i = 0; i < kHalf; ++i) {
                const float send = upper ? v[i] : v[i + kHalf];
                const float keep = upper ? v[i + kHalf] : v[i];
                v[i] = keep + __shfl_xor_sync(0xffffffffu, send, MASK);
            }
        }
        warp_transpose_sum<(S > 1 ? S / 2 : 1), MASK / 2, V>(v, lane);
    }
}

// The first value index lane `lane` holds after warp_transpose_sum over V values.
template <int V>
__device__ __forceinline__ int transpose_base(int lane) {
    int base = 0, size = V;
#pragma unroll
    for (int mask = kWarpSize / 2; mask > 0 && size > 1; mask /= 2, size /= 2)
        if (lane & mask) base += size / 2;
    return base;
}

// Streaming load of weights (read once per call: do not keep them in L1).
__device__ __forceinline__ uint4 load_weights(const void* p) { return __ldcs(static_cast<const uint4*>(p)); }

template <class T, class OutT, int MT, int R>
__global__ void __launch_bounds__(kThreads)
    skinny_gemm_kernel(const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ bias,
                       OutT* __restrict__ y, int m, int64_t n, int64_t k) {
    constexpr int V = MT * R;
    static_assert((V & (V - 1)) == 0, "MT x R is a power of two");
    const int64_t n0 = int64_t(blockIdx.x) * R;
    const int64_t vectors = k / kVector;
    float acc[V];
#pragma unroll
    for (int i = 0; i < V; ++i) acc[i] = 0.0f;

#pragma unroll 2
    for (int64_t vec = threadIdx.x; vec < vectors; vec += kThreads) {
        uint4 wv[R];
#pragma unroll
        for (int r = 0; r < R; ++r)
            wv[r] = n0 + r < n ? load_weights(w + (n0 + r) * k + vec * kVector) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            if (mt < m) {
                const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + mt * k + vec * kVector));
#pragma unroll
                for (int r = 0; r < R; ++r) acc[mt * R + r] = dot8<T>(xv, wv[r], acc[mt * R + r]);
            }
        }
    }

    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    warp_transpose_sum<V, kWarpSize / 2, V>(acc, lane);
    constexpr int kHeld = V >= kWarpSize ? V / kWarpSize : 1;  // values per lane after the butterfly
    constexpr int kSteps = V >= kWarpSize ? 5 : (V >= 16 ? 4 : V >= 8 ? 3 : V >= 4 ? 2 : V >= 2 ? 1 : 0);
    constexpr int kPlainBits = (1 << (5 - kSteps)) - 1;  // lanes differing in these bits hold the same values
    __shared__ float warp_sums[kWarps][V];
    if ((lane & kPlainBits) == 0) {
        const int base = transpose_base<V>(lane);
#pragma unroll
        for (int i = 0; i < kHeld; ++i) warp_sums[warp][base + i] = acc[i];
    }
    __syncthreads();
    for (int j = threadIdx.x; j < V; j += kThreads) {
        const int mt = j / R, r = j % R;
        if (mt >= m || n0 + r >= n) continue;
        float sum = warp_sums[0][j];
#pragma unroll
        for (int wi = 1; wi < kWarps; ++wi) sum += warp_sums[wi][j];
        if (bias != nullptr) sum += bias[n0 + r];
        y[int64_t(mt) * n + n0 + r] = from_f32<OutT>(sum);
    }
}

template <class T, class OutT, int MT>
void launch_rows(const void* x, const void* w, const float* bias, void* y, int64_t m, int64_t n, int64_t k,
                 cudaStream_t stream) {
    // Rows of w per block: more for one or two rows of x (more loads in flight per thread), fewer when the MT x R
    // partial sums would crowd the registers.
    constexpr int R = MT <= 2 ? 8 : 4;
    const int64_t blocks = (n + R - 1) / R;
    TACO_CHECK_MSG(blocks <= int64_t(0x7fffffff), "skinny_gemm: {} rows of w are too many", n);
    skinny_gemm_kernel<T, OutT, MT, R><<<unsigned(blocks), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), bias, static_cast<OutT*>(y), int(m), n, k);
    TACO_CUDA_CHECK_LAUNCH("skinny_gemm_kernel");
}

template <class T, class OutT>
void launch_typed(const void* x, const void* w, const float* bias, void* y, int64_t m, int64_t n, int64_t k,
                  cudaStream_t stream) {
    if (m <= 1) return launch_rows<T, OutT, 1>(x, w, bias, y, m, n, k, stream);
    if (m <= 2) return launch_rows<T, OutT, 2>(x, w, bias, y, m, n, k, stream);
    if (m <= 4) return launch_rows<T, OutT, 4>(x, w, bias, y, m, n, k, stream);
    if (m <= 8) return launch_rows<T, OutT, 8>(x, w, bias, y, m, n, k, stream);
    launch_rows<T, OutT, 16>(x, w, bias, y, m, n, k, stream);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

bool skinny_gemm_applies(int64_t m, int64_t n, int64_t k, DType in_dtype, DType out_dtype, const void* x,
                         const void* w) {
    const bool half_type = in_dtype == DType::kBF16 || in_dtype == DType::kF16;
    return half_type && (out_dtype == in_dtype || out_dtype == DType::kF32) && m >= 1 && m <= kSkinnyMaxRows &&
           n >= 1 && k >= kVector && k % kVector == 0 && aligned16(x) && aligned16(w);
}

void skinny_gemm(const void* x, const void* w, const float* bias, void* y, int64_t m, int64_t n, int64_t k,
                 DType in_dtype, DType out_dtype, void* stream) {
    TACO_CHECK_MSG(skinny_gemm_applies(m, n, k, in_dtype, out_dtype, x, w),
                   "skinny_gemm: [{}, {}] x [{}, {}]^T in {} -> {} is not a skinny product (M <= {}, f16/bf16, K a "
                   "multiple of 8, 16-byte aligned operands)",
                   m, k, n, k, dtype_name(in_dtype), dtype_name(out_dtype), kSkinnyMaxRows);
    const cudaStream_t s = as_stream(stream);
    if (in_dtype == DType::kBF16) {
        if (out_dtype == DType::kF32) return launch_typed<__nv_bfloat16, float>(x, w, bias, y, m, n, k, s);
        return launch_typed<__nv_bfloat16, __nv_bfloat16>(x, w, bias, y, m, n, k, s);
    }
    if (out_dtype == DType::kF32) return launch_typed<__half, float>(x, w, bias, y, m, n, k, s);
    launch_typed<__half, __half>(x, w, bias, y, m, n, k, s);
}

}  // namespace taco::cuda
