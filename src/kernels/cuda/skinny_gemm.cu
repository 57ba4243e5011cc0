// skinny_gemm (skinny_gemm.h): y [M, N] = x [M, K] . w [N, K]^T for M <= 16 on the tensor cores, memory-bound.
// This file: the entry points, which run the bulk-copy build (skinny_gemm_bulk.cu) where the device has it, and the
// register build below, for every GPU.
//
// Layout of the work: a block of W warps (16 for matrices of up to 8192 rows, else 4) owns 8 consecutive rows of w
// (8 outputs per row of x), the warps splitting K in chunks of 32 columns (warp i takes chunks i, i + W, ...). In a
// chunk, lane (g, t) = (lane / 4, lane % 4) loads 16 bytes of w's row n0 + g and of x's rows g and g + 8 at columns 8 t
// .. 8 t + 7, and two mma.sync m16n8k16 take them as they are: the mma's logical k slots 2t, 2t+1, 2t+8, 2t+9 of a
// thread are its columns 8t+0..3 in the first and 8t+4..7 in the second, the same mapping for x (A, 16 rows: the M
// rows, zeros beyond) and for w (B), so the product is the right one with no shuffle or shared memory on the way. At
// the end the W warps' accumulators are summed through shared memory in warp order and warp 0 writes the outputs with
// the bias, rounded once.
//
// Weights are read once with 16-byte streaming loads, 8 chunks in flight per lane; x is tiny and comes from L1/L2.
// The fp32 sum of an output element: each warp's chunks in increasing order on the tensor cores (each mma sums a
// row's products independently of the other rows of A), then warps 0..W-1 in order (W from N). Nothing of that depends
// on M or on the other rows: a row has the same bits alone or in any batch of up to kSkinnyMaxRows rows.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/env_switch.h"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/skinny_gemm_chunk.cuh"
#include "kernels/cuda/skinny_gemm_detail.h"

namespace taco::cuda {
namespace {

constexpr int kRowsOfW = kSkinnyRowsOfW;  // the mma's N
constexpr int kChunk = 32;                // columns of K per warp step: 4 lanes x 8 elements
constexpr int kInFlight = 8;              // chunks loaded before the first is used
constexpr int kVector = 8;                // 16-byte loads of 2-byte elements

// Streaming load of weights (read once per call: do not keep them in L1).
__device__ __forceinline__ uint4 load_weights(const void* p) { return __ldcs(static_cast<const uint4*>(p)); }

using Outputs = SkinnyOutputs;  // a block per tile

// kUpperRows: M > 8, so x's rows 8..15 (the A fragment's a1, a3) are loaded too; otherwise they are zeros.
// kLoadsInFlight: compiled for one block per SM (__launch_bounds__'s minimum), which lets ptxas keep a whole round
// of loads in flight (89 registers for 16 warps and M <= 8, instead of 38 and three blocks per SM). The arithmetic is
// the same instruction for instruction, so the two builds give the same bits; launch_typed picks one per launch.
template <class T, class OutT, int kWarps, bool kUpperRows, bool kLoadsInFlight>
__global__ void __launch_bounds__(kWarps* kWarpSize, kLoadsInFlight ? 1 : 0)
    skinny_gemm_kernel(const T* __restrict__ x, const Outputs outs, int m, int64_t k) {
    const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
    const int g = lane / 4, t = lane % 4;
    int which = 0;
    while (which + 1 < outs.count && int64_t(blockIdx.x) >= outs.tile_end[which]) ++which;
    const SkinnyOutput& out = outs.out[which];
    const T* __restrict__ w = static_cast<const T*>(out.w);
    const float* __restrict__ bias = out.bias;
    OutT* __restrict__ y = static_cast<OutT*>(out.y);
    const int64_t n = out.n;
    const int64_t n0 = (int64_t(blockIdx.x) - (which > 0 ? outs.tile_end[which - 1] : 0)) * kRowsOfW;
    grid_dependency_wait();
    const int64_t chunks = (k + kChunk - 1) / kChunk;
    const bool w_ok = n0 + g < n, x_ok = g < m, x_upper_ok = kUpperRows && g + 8 < m;
    const T* w_row = w + (w_ok ? n0 + g : 0) * k + t * kVector;
    const T* x_row = x + int64_t(x_ok ? g : 0) * k + t * kVector;
    const T* x_upper = x + int64_t(x_upper_ok ? g + 8 : 0) * k + t * kVector;
    float acc[4] = {0, 0, 0, 0};
    for (int64_t c0 = warp; c0 < chunks; c0 += int64_t(kWarps) * kInFlight) {
        uint4 wv[kInFlight], xv[kInFlight], xu[kInFlight];
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) {
            const int64_t col = (c0 + int64_t(u) * kWarps) * kChunk;  // + 8 t: within k when col + 8 t < k
            const bool in_k = col + t * kVector < k;
            wv[u] = in_k && w_ok ? load_weights(w_row + col) : make_uint4(0, 0, 0, 0);
            load_x_chunk<T, kUpperRows>(xv[u], xu[u], x_row, x_upper, col, in_k, x_ok, x_upper_ok);
        }
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) mma_chunk<T>(acc, xv[u], xu[u], wv[u]);
    }
    // acc: rows g (0, 1) and g + 8 (2, 3) of x, outputs n0 + 2 t (0, 2) and n0 + 2 t + 1 (1, 3).
    __shared__ float partial[kWarps][4][kWarpSize];
#pragma unroll
    for (int i = 0; i < 4; ++i) partial[warp][i][lane] = acc[i];
    __syncthreads();
    if (warp != 0) return;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int row = i < 2 ? g : g + 8;
        const int64_t col = n0 + 2 * t + i % 2;
        if (row >= m || col >= n) continue;
        float sum = partial[0][i][lane];
#pragma unroll
        for (int wi = 1; wi < kWarps; ++wi) sum += partial[wi][i][lane];
        if (bias != nullptr) sum += bias[col];
        y[int64_t(row) * n + col] = from_f32<OutT>(sum);
    }
}

// Warps splitting K, chosen from the shape alone (the order of the sums may depend on N and K, never on M): a matrix
// of few rows (o_proj, down_proj, the separate q / k / v) fills the GPU in one short wave of blocks, whose warps then
// wait on their loads chunk after chunk; 16 warps put a block's whole K in flight in one or a few rounds. Many rows
// (gate / up, the head) keep 4 warps and overlap one block's loads with another's.
int warps_for(int64_t n) { return n <= 8192 ? 16 : 4; }

// The blocks of one build the GPU holds at once (occupancy x SMs), once per build and device.
template <class T, class OutT, int kWarps, bool kUpperRows, bool kLoadsInFlight>
int64_t resident_blocks() {
    return once_per_device([](int device) {
        int per_sm = 0, sms = 0;
        TACO_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, skinny_gemm_kernel<T, OutT, kWarps, kUpperRows, kLoadsInFlight>, kWarps * kWarpSize, 0));
        TACO_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        return int64_t(std::max(per_sm, 1)) * sms;
    });
}

// The share of the block slots of all waves that blocks fill: 512 blocks in slots for 396 make two waves, the second
// 29% full.
double wave_efficiency(int64_t blocks, int64_t slots) {
    const int64_t waves = (blocks + slots - 1) / slots;
    return double(blocks) / double(waves * slots);
}

// Both builds take every product; the one that keeps its loads in flight runs one block per SM where the other
// runs three (16 warps, M <= 8), so it wins where the other's last wave is mostly empty (the 512 blocks of a
// 4096-row matrix: o_proj and down_proj of the 8B shape, 2.3 vs 2.2 and 3.3 vs 2.7 TB/s on the H200) and loses where
// both fill their waves (fused q/k/v's 768 blocks: 2.5 vs 2.8 TB/s). Measured in bench/results/h200-2026-12-02c.
template <class T, class OutT, int kWarps, bool kUpperRows>
void launch_build(const T* x, const Outputs& outs, int64_t m, int64_t k, cudaStream_t stream) {
    const int64_t blocks = outs.tile_end[outs.count - 1];
    const bool in_flight = wave_efficiency(blocks, resident_blocks<T, OutT, kWarps, kUpperRows, true>()) >
                           wave_efficiency(blocks, resident_blocks<T, OutT, kWarps, kUpperRows, false>()) + 0.1;
    const auto kernel = in_flight ? skinny_gemm_kernel<T, OutT, kWarps, kUpperRows, true>
                                  : skinny_gemm_kernel<T, OutT, kWarps, kUpperRows, false>;
    launch_kernel("skinny_gemm_kernel", kernel, unsigned(blocks), kWarps * kWarpSize, 0, stream, x, outs, int(m), k);
}

template <class T, class OutT>
void launch_typed(const void* x, const Outputs& outs, int64_t m, int64_t k, cudaStream_t stream) {
    const int64_t blocks = outs.tile_end[outs.count - 1];
    TACO_CHECK_MSG(blocks <= int64_t(0x7fffffff), "skinny_gemm: {} blocks of 8 rows of w are too many", blocks);
    const T* xt = static_cast<const T*>(x);
    if (warps_for(outs.out[0].n) == 16) {
        if (m > 8) return launch_build<T, OutT, 16, true>(xt, outs, m, k, stream);
        return launch_build<T, OutT, 16, false>(xt, outs, m, k, stream);
    }
    if (m > 8) return launch_build<T, OutT, 4, true>(xt, outs, m, k, stream);
    launch_build<T, OutT, 4, false>(xt, outs, m, k, stream);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

bool skinny_gemm_applies(int64_t m, int64_t n, int64_t k, DType in_dtype, DType out_dtype, const void* x,
                         const void* w) {
    const bool half_type = in_dtype == DType::kBF16 || in_dtype == DType::kF16;
    return half_type && (out_dtype == in_dtype || out_dtype == DType::kF32) && m >= 1 && m <= kSkinnyMaxRows &&
           n >= 1 && k >= kVector && k % kVector == 0 && aligned16(x) && aligned16(w);
}

// The build of a product by default, from N and K alone (never from M: a row's bits must not depend on its batch).
// In bench/results/h200-2026-12-03b the bulk build leads on matrices of up to 8192 rows with K <= 4096 (fused
// q / k / v 3.11 vs 2.84 TB/s, o_proj 2.79 vs 2.29 at M = 1, ahead up to M = 8) and trails on the others from M = 4
// (its 8 consumer warps wait on x's loads), so those keep the register build.
// Longer rows take it too unless TACO_CUDA_SKINNY_BULK_WIDE=0 (skinny_gemm.h): down_proj, on the H200 at M = 1 3.82
// against 3.39 TB/s for the register build (bench/results/h200-2026-12-03c), and on the H100 faster end to end at
// bs = 1 to 64 (bench/results/h100-2026-12-08).
constexpr int64_t kBulkDefaultMaxK = 4096;
static bool bulk_by_default(int64_t n, int64_t k) {
    return n <= 8192 && (k <= kBulkDefaultMaxK || skinny_bulk_wide_enabled()) && skinny_bulk_available();
}

bool skinny_bulk_wide_enabled() {
    static const bool enabled =
        env_switch("TACO_CUDA_SKINNY_BULK_WIDE", std::getenv("TACO_CUDA_SKINNY_BULK_WIDE"),
                   "the skinny GEMM's bulk-copy build for matrices of up to 8192 rows with K > 4096 (down_proj)");
    return enabled;
}

bool skinny_gemm_group_applies(int64_t m, int64_t k, DType in_dtype, DType out_dtype, const void* x,
                               const SkinnyOutput* outs, int count) {
    if (count < 1 || count > kSkinnyMaxOutputs) return false;
    for (int i = 0; i < count; ++i) {
        if (!skinny_gemm_applies(m, outs[i].n, k, in_dtype, out_dtype, x, outs[i].w)) return false;
        // One block size (register build) and one build (bulk_by_default follows the same class) per launch.
        if (warps_for(outs[i].n) != warps_for(outs[0].n)) return false;
    }
    return true;
}

void skinny_gemm_group(const void* x, const SkinnyOutput* outs, int count, int64_t m, int64_t k, DType in_dtype,
                       DType out_dtype, void* stream, const SkinnyTuning& tuning) {
    TACO_CHECK_MSG(skinny_gemm_group_applies(m, k, in_dtype, out_dtype, x, outs, count),
                   "skinny_gemm: {} products of [{}, {}] x in {} -> {} are not one skinny launch (1 to {} outputs of "
                   "the same size class, M <= {}, f16/bf16, K a multiple of 8, 16-byte aligned operands)",
                   count, m, k, dtype_name(in_dtype), dtype_name(out_dtype), kSkinnyMaxOutputs, kSkinnyMaxRows);
    using Kernel = SkinnyTuning::Kernel;
    const bool bulk =
        tuning.kernel == Kernel::kBulkCopy || (tuning.kernel == Kernel::kAuto && bulk_by_default(outs[0].n, k));
    Outputs all{};
    all.count = count;
    int64_t tiles = 0;
    for (int i = 0; i < count; ++i) {
        all.out[i] = outs[i];
        tiles += (outs[i].n + kRowsOfW - 1) / kRowsOfW;
        all.tile_end[i] = tiles;
    }
    if (bulk) return skinny_bulk_launch(x, all, m, k, in_dtype, out_dtype, tuning, stream);
    const cudaStream_t s = as_stream(stream);
    if (in_dtype == DType::kBF16) {
        if (out_dtype == DType::kF32) return launch_typed<__nv_bfloat16, float>(x, all, m, k, s);
        return launch_typed<__nv_bfloat16, __nv_bfloat16>(x, all, m, k, s);
    }
    if (out_dtype == DType::kF32) return launch_typed<__half, float>(x, all, m, k, s);
    launch_typed<__half, __half>(x, all, m, k, s);
}

void skinny_gemm(const void* x, const void* w, const float* bias, void* y, int64_t m, int64_t n, int64_t k,
                 DType in_dtype, DType out_dtype, void* stream, const SkinnyTuning& tuning) {
    TACO_CHECK_MSG(skinny_gemm_applies(m, n, k, in_dtype, out_dtype, x, w),
                   "skinny_gemm: [{}, {}] x [{}, {}]^T in {} -> {} is not a skinny product (M <= {}, f16/bf16, K a "
                   "multiple of 8, 16-byte aligned operands)",
                   m, k, n, k, dtype_name(in_dtype), dtype_name(out_dtype), kSkinnyMaxRows);
    const SkinnyOutput out{w, bias, y, n};
    skinny_gemm_group(x, &out, 1, m, k, in_dtype, out_dtype, stream, tuning);
}

bool skinny_gated_applies(int64_t m, int64_t n, int64_t k, DType dtype, const void* x, const void* w_gate,
                          const void* w_up) {
    return skinny_gemm_applies(m, n, k, dtype, dtype, x, w_gate) &&
           skinny_gemm_applies(m, n, k, dtype, dtype, x, w_up) && !bulk_by_default(n, k);
}

void skinny_gated(const SkinnyGated& p, DType dtype, void* stream) {
    TACO_CHECK_MSG(skinny_gated_applies(p.m, p.n, p.k, dtype, p.x, p.w_gate, p.w_up),
                   "skinny_gated: [{}, {}] x [{}, {}]^T twice in {} is not a fused gate / up (M <= {}, f16/bf16, K a "
                   "multiple of 8, 16-byte aligned operands, a matrix the register build runs)",
                   p.m, p.k, p.n, p.k, dtype_name(dtype), kSkinnyMaxRows);
    skinny_gated_launch(p, warps_for(p.n), dtype, stream);
}

bool fused_gated_up_enabled() {
    static const bool enabled = env_opt_in("TACO_CUDA_FUSED_GATED_UP", std::getenv("TACO_CUDA_FUSED_GATED_UP"),
                                           "the skinny GEMM's gate / up with the gated activation in its epilogue");
    return enabled;
}

}  // namespace taco::cuda
