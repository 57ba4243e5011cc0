// The MoE grouped GEMM on CUDA (ops::grouped_matmul): y[i, :] = x[i, :] . w[e, :, :]^T for the rows
// expert_offsets[e] .. [e + 1] of expert e; rows past offsets[E] are zeroed. The offsets are read on the device, so
// nothing waits for the host: the grid has an upper bound of row tiles (ceil(R / kTileM) + E + 1: the groups are the
// E experts and the padding) and each block finds its (group, row tile) by walking the offsets; blocks past the last
// tile return.
//
// Two kernels over the same tiling (kTileM rows x kTileN columns, K staged through shared memory, out-of-range
// elements zero):
//   - tensor cores (WMMA 16x16x16, fp32 accumulators) when x and w are both f16 or both bf16, the decoder's case;
//   - fp32 FMA otherwise (f32 activations, or weights of another dtype than x): each thread accumulates its outputs
//     in increasing k, a fused multiply-add chain per k tile added to the running sum.
// Either way an output's value depends on its row of x, its weight row and K only (the k order is fixed and no
// instruction mixes rows), never on which other rows share its tile or its expert: batch invariant.
#include <mma.h>

#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTileM = 64, kTileN = 64;

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

// The padding rows of a tile: zeros.
template <class T>
__device__ void zero_tile(T* y, int64_t n, int64_t row_begin, int64_t row_end, int64_t col_begin) {
    for (int idx = threadIdx.x; idx < kTileM * kTileN; idx += blockDim.x) {
        const int64_t row = row_begin + idx / kTileN, col = col_begin + idx % kTileN;
        if (row < row_end && col < n) y[row * n + col] = from_f32<T>(0.0f);
    }
}

// ---- fp32 FMA ----

constexpr int kFmaTileK = 16;
constexpr int kThreadsX = 16, kThreadsY = 16;  // 256 threads; thread (tx, ty) computes rows ty + 16 i, cols tx + 16 j
constexpr int kRowsPerThread = kTileM / kThreadsY, kColsPerThread = kTileN / kThreadsX;

//   x: [R, K]; w: [E, N, K] with expert stride expert_stride (>= N * K) elements; offsets: [E + 1]; y: [R, N].
//   grid: (row tiles bound, ceil(N / kTileN)).
template <class T, class TW>
__global__ void __launch_bounds__(kThreadsX* kThreadsY)
    grouped_matmul_fma_kernel(const T* x, const TW* w, int64_t expert_stride, const int32_t* offsets, int num_experts,
                              int64_t num_rows, int64_t n, int64_t k, T* y) {
    grid_dependency_wait();
    // [k][row] and [k][col], padded by one so the transposing stores do not collide on banks.
    __shared__ float x_tile[kFmaTileK][kTileM + 1];
    __shared__ float w_tile[kFmaTileK][kTileN + 1];
    int group = 0;
    int64_t row_begin = 0, row_end = 0;
    if (!find_row_tile(offsets, num_experts, num_rows, blockIdx.x, group, row_begin, row_end)) return;
    const int64_t col_begin = blockIdx.y * int64_t(kTileN);
    if (group == num_experts) return zero_tile(y, n, row_begin, row_end, col_begin);

    const int tx = threadIdx.x % kThreadsX, ty = threadIdx.x / kThreadsX;
    const TW* we = w + int64_t(group) * expert_stride;
    float acc[kRowsPerThread][kColsPerThread] = {};
    for (int64_t k_begin = 0; k_begin < k; k_begin += kFmaTileK) {
        // Consecutive threads read consecutive k of one row (coalesced).
        for (int idx = threadIdx.x; idx < kTileM * kFmaTileK; idx += blockDim.x) {
            const int r = idx / kFmaTileK, kk = idx % kFmaTileK;
            const int64_t row = row_begin + r, kg = k_begin + kk;
            x_tile[kk][r] = row < row_end && kg < k ? to_f32(x[row * k + kg]) : 0.0f;
        }
        for (int idx = threadIdx.x; idx < kTileN * kFmaTileK; idx += blockDim.x) {
            const int c = idx / kFmaTileK, kk = idx % kFmaTileK;
            const int64_t col = col_begin + c, kg = k_begin + kk;
            w_tile[kk][c] = col < n && kg < k ? to_f32(we[col * k + kg]) : 0.0f;
        }
        __syncthreads();
        // Two levels (a chain over the tile's k, added to the running sum): the rounding error grows with
        // kFmaTileK + K / kFmaTileK rather than with K.
        float part[kRowsPerThread][kColsPerThread] = {};
        for (int kk = 0; kk < kFmaTileK; ++kk) {
            float a[kRowsPerThread], b[kColsPerThread];
            for (int i = 0; i < kRowsPerThread; ++i) a[i] = x_tile[kk][ty + i * kThreadsY];
            for (int j = 0; j < kColsPerThread; ++j) b[j] = w_tile[kk][tx + j * kThreadsX];
            for (int i = 0; i < kRowsPerThread; ++i)
                for (int j = 0; j < kColsPerThread; ++j) part[i][j] = fmaf(a[i], b[j], part[i][j]);
        }
        for (int i = 0; i < kRowsPerThread; ++i)
            for (int j = 0; j < kColsPerThread; ++j) acc[i][j] += part[i][j];
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

// ---- tensor cores ----

constexpr int kMmaTileK = 32;
constexpr int kMmaWarps = 4;  // 2 x 2 warps, each 32 x 32 outputs: 2 x 2 fragments of 16 x 16
constexpr int kMmaThreads = kMmaWarps * kWarpSize;
constexpr int kMmaRowPad = 8;  // elements: rows stay 32-byte multiples apart at fragment starts, banks spread
constexpr int kMmaLd = kMmaTileK + kMmaRowPad;
constexpr int kOutLd = kTileN + 4;
constexpr int kVector = 8;  // elements per 16-byte load
static_assert(kTileM == kTileN, "load_mma_tile stages x rows and w rows (output columns) in tiles of one shape");

// rows [row_begin, row_end) x k [k_begin, k_begin + kMmaTileK) of src [., k] into tile [kTileM][kMmaLd], zeros
// outside. `vectorized`: k % 8 == 0 and src 16-byte aligned, so 8-element loads never straddle a row's end.
template <class T>
__device__ void load_mma_tile(T (*tile)[kMmaLd], const T* src, int64_t row_begin, int64_t row_end, int64_t k,
                              int64_t k_begin, bool vectorized) {
    if (vectorized) {
        for (int idx = threadIdx.x; idx < kTileM * kMmaTileK / kVector; idx += blockDim.x) {
            const int r = idx / (kMmaTileK / kVector), c = idx % (kMmaTileK / kVector) * kVector;
            const int64_t row = row_begin + r, kg = k_begin + c;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (row < row_end && kg < k) v = *reinterpret_cast<const uint4*>(src + row * k + kg);
            *reinterpret_cast<uint4*>(&tile[r][c]) = v;
        }
        return;
    }
    for (int idx = threadIdx.x; idx < kTileM * kMmaTileK; idx += blockDim.x) {
        const int r = idx / kMmaTileK, c = idx % kMmaTileK;
        const int64_t row = row_begin + r, kg = k_begin + c;
        tile[r][c] = row < row_end && kg < k ? src[row * k + kg] : from_f32<T>(0.0f);
    }
}

// As grouped_matmul_fma_kernel, with T = __half or __nv_bfloat16 for x, w and y. grid: as there; kMmaThreads.
template <class T>
__global__ void __launch_bounds__(kMmaThreads)
    grouped_matmul_mma_kernel(const T* x, const T* w, int64_t expert_stride, const int32_t* offsets, int num_experts,
                              int64_t num_rows, int64_t n, int64_t k, bool vectorized, T* y) {
    grid_dependency_wait();
    __shared__ __align__(32) T x_tile[kTileM][kMmaLd];  // [row][k]: matrix_a, row-major
    __shared__ __align__(32) T w_tile[kTileN][kMmaLd];  // [col][k]: matrix_b (k x col), column-major
    __shared__ __align__(32) float out_tile[kTileM][kOutLd];
    int group = 0;
    int64_t row_begin = 0, row_end = 0;
    if (!find_row_tile(offsets, num_experts, num_rows, blockIdx.x, group, row_begin, row_end)) return;
    const int64_t col_begin = blockIdx.y * int64_t(kTileN);
    if (group == num_experts) return zero_tile(y, n, row_begin, row_end, col_begin);

    const int warp = threadIdx.x / kWarpSize, warp_row = warp / 2 * 32, warp_col = warp % 2 * 32;
    const T* we = w + int64_t(group) * expert_stride;
    const int64_t col_end = col_begin + kTileN < n ? col_begin + kTileN : n;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int64_t k_begin = 0; k_begin < k; k_begin += kMmaTileK) {
        load_mma_tile(x_tile, x, row_begin, row_end, k, k_begin, vectorized);
        load_mma_tile(w_tile, we, col_begin, col_end, k, k_begin, vectorized);
        __syncthreads();
        for (int kk = 0; kk < kMmaTileK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b[2];
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &x_tile[warp_row + 16 * i][kk], kMmaLd);
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &w_tile[warp_col + 16 * j][kk], kMmaLd);
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&out_tile[warp_row + 16 * i][warp_col + 16 * j], acc[i][j], kOutLd,
                                    wmma::mem_row_major);
    __syncthreads();
    for (int idx = threadIdx.x; idx < kTileM * kTileN; idx += blockDim.x) {
        const int r = idx / kTileN, c = idx % kTileN;
        const int64_t row = row_begin + r, col = col_begin + c;
        if (row < row_end && col < n) y[row * n + col] = from_f32<T>(out_tile[r][c]);
    }
}

bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

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
    const int32_t* offsets = expert_offsets;
    const int experts = int(num_experts);

    if (act_dtype == w_dtype && (act_dtype == DType::kBF16 || act_dtype == DType::kF16)) {
        const bool vectorized = k % kVector == 0 && expert_stride % kVector == 0 && aligned_16(x) && aligned_16(w);
        if (act_dtype == DType::kBF16) {
            using T = __nv_bfloat16;
            launch_kernel("grouped_matmul_mma_kernel", grouped_matmul_mma_kernel<T>, grid, kMmaThreads, 0,
                          as_stream(stream), static_cast<const T*>(x), static_cast<const T*>(w), expert_stride, offsets,
                          experts, rows, n, k, vectorized, static_cast<T*>(y));
        } else {
            using T = __half;
            launch_kernel("grouped_matmul_mma_kernel", grouped_matmul_mma_kernel<T>, grid, kMmaThreads, 0,
                          as_stream(stream), static_cast<const T*>(x), static_cast<const T*>(w), expert_stride, offsets,
                          experts, rows, n, k, vectorized, static_cast<T*>(y));
        }
        return;
    }
    dispatch_float(act_dtype, "grouped_matmul", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        dispatch_float(w_dtype, "grouped_matmul", "w", [&](auto w_tag) {
            using TW = typename decltype(w_tag)::type;
            launch_kernel("grouped_matmul_fma_kernel", grouped_matmul_fma_kernel<T, TW>, grid, kThreadsX * kThreadsY, 0,
                          as_stream(stream), static_cast<const T*>(x), static_cast<const TW*>(w), expert_stride,
                          offsets, experts, rows, n, k, static_cast<T*>(y));
        });
    });
}

}  // namespace launch
}  // namespace taco::cuda
