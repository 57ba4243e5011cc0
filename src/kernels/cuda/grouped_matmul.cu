// The MoE grouped GEMM on CUDA (ops::grouped_matmul): y[i, :] = x[i, :] . w[e, :, :]^T for the rows
// expert_offsets[e] .. [e + 1] of expert e; rows past offsets[E] are zeroed. The offsets are read on the device, so
// nothing waits for the host: the grid has an upper bound of tiles (ceil(R / kTileM) + E + 1 row tiles, the groups
// being E experts and the padding) and each block finds its (group, row tile) by walking the offsets; blocks past
// the last tile return.
//
// A tile is kTileM rows x kTileN columns, staged through shared memory in fp32 kTileK columns of K at a time; each
// thread accumulates its outputs with one fused multiply-add chain in increasing k. So an output's value depends on
// its row of x, its weight row and K only, never on which other rows share its tile or its expert (batch invariant).
#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

constexpr int kTileM = 64, kTileN = 64, kTileK = 16;
constexpr int kThreadsX = 16, kThreadsY = 16;  // 256 threads; thread (tx, ty) computes rows ty + 16 i, cols tx + 16 j
constexpr int kRowsPerThread = kTileM / kThreadsY, kColsPerThread = kTileN / kThreadsX;

// Row tile `tile` over the groups in order (expert g: rows offsets[g] .. offsets[g + 1]; group E, the padding: rows
// offsets[E] .. num_rows), each cut into tiles of kTileM rows. False when the grid's bound is past the last tile.
__device__ bool find_row_tile(const int32_t* offsets, int num_experts, int64_t num_rows, int64_t tile, int& group,
                              int64_t& row_begin, int64_t& row_end) {
    for (int g = 0; g <= num_experts; ++g) {
        const int64_t begin = offsets[g], end = g < num_experts ? int64_t(offsets[g + 1]) : num_rows;
        TACO_DEVICE_CHECK(0 <= begin && begin <= end && end <= num_rows,
                          "grouped_matmul: group %d rows [%lld, %lld) of %lld\n", g, static_cast<long long>(begin),
                          static_cast<long long>(end), static_cast<long long>(num_rows));
        const int64_t tiles = (end - begin + kTileM - 1) / kTileM;
        if (tile < tiles) {
            group = g;
            row_begin = begin + tile * kTileM;
            row_end = row_begin + kTileM < end ? row_begin + kTileM : end;
            return true;
        }
        tile -= tiles;
    }
    return false;
}

//   x: [R, K]; w: [E, N, K] with expert stride expert_stride (>= N * K) elements; offsets: [E + 1]; y: [R, N].
//   grid: (row tiles bound, ceil(N / kTileN)).
template <class T, class TW>
__global__ void __launch_bounds__(kThreadsX* kThreadsY)
    grouped_matmul_kernel(const T* x, const TW* w, int64_t expert_stride, const int32_t* offsets, int num_experts,
                          int64_t num_rows, int64_t n, int64_t k, T* y) {
    // [k][row] and [k][col], padded by one so the transposing stores do not collide on banks.
    __shared__ float x_tile[kTileK][kTileM + 1];
    __shared__ float w_tile[kTileK][kTileN + 1];
    int group = 0;
    int64_t row_begin = 0, row_end = 0;
    if (!find_row_tile(offsets, num_experts, num_rows, blockIdx.x, group, row_begin, row_end)) return;
    const int tx = threadIdx.x % kThreadsX, ty = threadIdx.x / kThreadsX;
    const int64_t col_begin = blockIdx.y * int64_t(kTileN);

    if (group == num_experts) {  // padding rows: zeros
        for (int i = 0; i < kRowsPerThread; ++i) {
            const int64_t row = row_begin + ty + i * kThreadsY;
            for (int j = 0; j < kColsPerThread; ++j) {
                const int64_t col = col_begin + tx + j * kThreadsX;
                if (row < row_end && col < n) y[row * n + col] = from_f32<T>(0.0f);
            }
        }
        return;
    }

    const TW* we = w + int64_t(group) * expert_stride;
    float acc[kRowsPerThread][kColsPerThread] = {};
    for (int64_t k_begin = 0; k_begin < k; k_begin += kTileK) {
        // Consecutive threads read consecutive k of one row (coalesced); out-of-range elements are 0.
        for (int idx = threadIdx.x; idx < kTileM * kTileK; idx += blockDim.x) {
            const int r = idx / kTileK, kk = idx % kTileK;
            const int64_t row = row_begin + r, kg = k_begin + kk;
            x_tile[kk][r] = row < row_end && kg < k ? to_f32(x[row * k + kg]) : 0.0f;
        }
        for (int idx = threadIdx.x; idx < kTileN * kTileK; idx += blockDim.x) {
            const int c = idx / kTileK, kk = idx % kTileK;
            const int64_t col = col_begin + c, kg = k_begin + kk;
            w_tile[kk][c] = col < n && kg < k ? to_f32(we[col * k + kg]) : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < kTileK; ++kk) {
            float a[kRowsPerThread], b[kColsPerThread];
            for (int i = 0; i < kRowsPerThread; ++i) a[i] = x_tile[kk][ty + i * kThreadsY];
            for (int j = 0; j < kColsPerThread; ++j) b[j] = w_tile[kk][tx + j * kThreadsX];
            for (int i = 0; i < kRowsPerThread; ++i)
                for (int j = 0; j < kColsPerThread; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < kRowsPerThread; ++i) {
        const int64_t row = row_begin + ty + i * kThreadsY;
        for (int j = 0; j < kColsPerThread; ++j) {
            const int64_t col = col_begin + tx + j * kThreadsX;
            if (row < row_end && col < n) y[row * n + col] = from_f32<T>(acc[i][j]);
        }
    }
}

}  // namespace

namespace launch {

void grouped_matmul(void* stream, const void* x, void* y, DType act_dtype, int64_t rows, const void* w, DType w_dtype,
                    int64_t num_experts, int64_t n, int64_t k, int64_t expert_stride, const int32_t* expert_offsets) {
    if (rows == 0 || n == 0) return;
    const int64_t col_tiles = (n + kTileN - 1) / kTileN;
    TACO_CHECK_MSG(col_tiles <= 65535, "grouped_matmul: {} output columns are more than the CUDA grid holds", n);
    // sum over the E + 1 groups of ceil(group rows / kTileM) <= ceil(rows / kTileM) + E + 1.
    const int64_t row_tiles = (rows + kTileM - 1) / kTileM + num_experts + 1;
    const dim3 grid{unsigned(row_tiles), unsigned(col_tiles), 1};
    dispatch_float(act_dtype, "grouped_matmul", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        dispatch_float(w_dtype, "grouped_matmul", "w", [&](auto w_tag) {
            using TW = typename decltype(w_tag)::type;
            grouped_matmul_kernel<T, TW><<<grid, kThreadsX * kThreadsY, 0, as_stream(stream)>>>(
                static_cast<const T*>(x), static_cast<const TW*>(w), expert_stride, expert_offsets, int(num_experts),
                rows, n, k, static_cast<T*>(y));
            TACO_CUDA_CHECK_LAUNCH("grouped_matmul_kernel");
        });
    });
}

}  // namespace launch
}  // namespace taco::cuda
