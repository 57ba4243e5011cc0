// The bulk-copy build of the skinny GEMM (skinny_gemm.h) for Hopper and later: y [M, N] = x [M, K] . w [N, K]^T.
//
// Why: the register build runs one block per tile of 8 rows, and each block loads its tile, waits for it, multiplies
// and ends, so the memory system idles at every block's start and end (2.3 TB/s of the H200's 4.2 on 4096x4096 at
// M = 1). Here a persistent grid (one or two blocks per multiprocessor) keeps every multiprocessor's share of w
// streaming without a gap: one producer thread per block asks the bulk copy engine for stage after stage of its tiles,
// a ring of shared-memory stages deep, and 8 consumer warps multiply each stage as it lands.
//
// Layout of the work:
//   - tiles: 8 consecutive rows of one output's w, the whole of K; block b takes tiles b, b + G, b + 2G, ... (G the
//     grid) in order, across the outputs of a group;
//   - stages: 8 rows x kStageCols columns of a tile (the last of a row shorter when K is not a multiple), one bulk
//     copy per row, completing on the stage's `full` barrier; its `empty` barrier counts the 8 consumer warps done
//     with it, and then the producer refills it with the block's next stage;
//   - a stage's 32 chunks of 32 columns: consumer warp c takes chunks c, c + 8, c + 16, c + 24; in a chunk, lane
//     (g, t) = (lane / 4, lane % 4) reads 16 bytes of row g at columns 8 t .. 8 t + 7 from shared memory and the same
//     columns of x's rows g and g + 8 (x is small and read from L1), and two mma.sync m16n8k16 take them as they are
//     (the fragment mapping of skinny_gemm.cu);
//   - at a tile's end the 8 warps' accumulators go through shared memory (two buffers, alternating by tile, so one
//     barrier per tile suffices) and warp 0 sums them in warp order and writes the outputs with the bias.
// Rows are padded to kRowPitch bytes so that a quarter warp's 16-byte reads (rows g, g + 1) fall in different banks.
//
// The fp32 sum of an output element: warp c's chunks (c mod 8 of the row's chunks of 32 columns) in increasing order
// on the tensor cores, then warps 0..7 in order. It depends on K alone (not on M, N, the other rows, the group or
// the tuning): a row has the same bits alone or in any batch of up to kSkinnyMaxRows rows.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/skinny_gemm_detail.h"

namespace taco::cuda {
namespace {

constexpr int kStageCols = 1024;  // columns of K per stage: 2 KB of each of the 8 rows
constexpr int kChunk = 32;        // columns per mma pair: 4 lanes x 8 elements
constexpr int kConsumerWarps = 8;
[[maybe_unused]] constexpr int kChunksPerWarp = kStageCols / kChunk / kConsumerWarps;  // 4
constexpr int kThreads = (kConsumerWarps + 1) * kWarpSize;                             // + the producer's warp
constexpr int kElementBytes = 2;                                                       // f16 / bf16
constexpr int kRowPitch = kStageCols * kElementBytes + 64;  // 2112: rows g and g + 1 64 bytes apart mod 128
constexpr int kStageBytes = kSkinnyRowsOfW * kRowPitch;
constexpr int kPartialFloats = kConsumerWarps * 4 * kWarpSize;  // one buffer: [warp][accumulator][lane]
constexpr int kMinStages = 2, kMaxStages = 13;
// The default tuning, 4 stages and 2 blocks per multiprocessor (every tuning has the same bits: tests/cuda pins it).
// 8 stages and 1 block (bench/results/h200-2026-12-03b, chosen at M = 1) left the 8 consumer warps of an SM short of
// issue slots as M grows: on an H100 (bench/results/h100-2026-12-07g) at M = 16 fused q / k / v took 26.4 us against
// 22.2 and o_proj 19.2 against 16.4, at M = 4 19.3 / 14.2 against 18.9 / 14.1, at M = 1 18.9 / 14.2 against
// 18.8 / 14.0; on the H200 at M = 1 q / k / v 15.1 against 14.6 and o_proj 10.9 against 11.4 (03c).
constexpr int kDefaultStages = 4, kDefaultBlocksPerSm = 2;

static_assert(kStageCols % (kChunk * kConsumerWarps) == 0, "a stage splits evenly among the consumer warps");
static_assert(kRowPitch % 16 == 0, "bulk copies land on 16-byte boundaries");

// Dynamic shared memory of a block: the stages, the two partial-sum buffers, the full and empty barriers.
size_t shared_bytes(int stages) {
    return size_t(stages) * kStageBytes + 2 * kPartialFloats * sizeof(float) + 2 * size_t(stages) * sizeof(uint64_t);
}

struct Tile {
    const SkinnyOutput* out;
    int64_t n0;  // its first row of w
};

[[maybe_unused]] __device__ __forceinline__ Tile locate(const SkinnyOutputs& outs, int64_t tile) {
    int which = 0;
    while (which + 1 < outs.count && tile >= outs.tile_end[which]) ++which;
    return {&outs.out[which], (tile - (which > 0 ? outs.tile_end[which - 1] : 0)) * kSkinnyRowsOfW};
}

// kUpperRows: M > 8, so x's rows 8..15 (the A fragment's a1, a3) are loaded too; otherwise they are zeros.
template <class T, class OutT, bool kUpperRows>
__global__ void __launch_bounds__(kThreads, 1)
    skinny_bulk_kernel(const T* __restrict__ x, const SkinnyOutputs outs, int m, int64_t k, int stages) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    static_assert(sizeof(T) == kElementBytes, "16-bit operands");
    extern __shared__ __align__(128) uint8_t smem[];
    float* partial = reinterpret_cast<float*>(smem + size_t(stages) * kStageBytes);
    uint64_t* full = reinterpret_cast<uint64_t*>(partial + 2 * kPartialFloats);
    uint64_t* empty = full + stages;
    const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
    const int64_t tiles = outs.tile_end[outs.count - 1];
    const int64_t k_stages = (k + kStageCols - 1) / kStageCols;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbarrier_init(&full[s], 1);                // the producer's arrive_expect_tx (plus the copies' bytes)
            mbarrier_init(&empty[s], kConsumerWarps);  // one arrival per consumer warp
        }
        mbarrier_init_fence();
    }
    __syncthreads();
    // Launched early (programmatic_launch.h): the barriers are set up while the kernel before finishes; nothing in
    // global memory is touched before it has.
    grid_dependency_wait();

    if (warp == kConsumerWarps) {  // the producer: one thread
        if (lane != 0) return;
        const uint64_t policy = l2_evict_first_policy();  // w is read once: keep the L2 for what is reread
        int s = 0;
        uint32_t phase = 0;
        for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const Tile at = locate(outs, tile);
            const int rows = int(min(int64_t(kSkinnyRowsOfW), at.out->n - at.n0));
            const uint8_t* w = static_cast<const uint8_t*>(at.out->w) + at.n0 * k * kElementBytes;
            for (int64_t ks = 0; ks < k_stages; ++ks) {
                const int64_t col0 = ks * kStageCols;
                const uint32_t bytes = uint32_t(min(int64_t(kStageCols), k - col0) * kElementBytes);
                mbarrier_wait(&empty[s], phase ^ 1);  // the consumers are done with its previous fill
                mbarrier_arrive_expect_tx(&full[s], bytes * uint32_t(rows));
                uint8_t* dst = smem + size_t(s) * kStageBytes;
                for (int r = 0; r < rows; ++r)
                    bulk_copy_to_shared(dst + r * kRowPitch, w + (int64_t(r) * k + col0) * kElementBytes, bytes,
                                        &full[s], policy);
                if (++s == stages) s = 0, phase ^= 1;
            }
        }
        return;
    }

    // The consumers. Rows of w past N (a last partial tile) hold stale stage bytes: they only reach output columns
    // that are not written. Columns past K are masked to zeros in both operands.
    const int g = lane / 4, t = lane % 4;
    const bool x_ok = g < m, x_upper_ok = kUpperRows && g + 8 < m;
    const T* x_row = x + int64_t(x_ok ? g : 0) * k + t * 8;
    const T* x_upper = x + int64_t(x_upper_ok ? g + 8 : 0) * k + t * 8;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    int s = 0;
    uint32_t phase = 0;
    float* buffer = partial;
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        float acc[4] = {0, 0, 0, 0};
        for (int64_t ks = 0; ks < k_stages; ++ks) {
            const int64_t col0 = ks * kStageCols;
            uint4 xv[kChunksPerWarp], xu[kChunksPerWarp], wv[kChunksPerWarp];
            bool in_k[kChunksPerWarp];
            // x first: its loads overlap the wait for the stage.
#pragma unroll
            for (int u = 0; u < kChunksPerWarp; ++u) {
                const int64_t col = col0 + (warp + u * kConsumerWarps) * kChunk;  // + 8 t, already in x_row
                in_k[u] = col + t * 8 < k;
                xv[u] = in_k[u] && x_ok ? __ldg(reinterpret_cast<const uint4*>(x_row + col)) : zero;
                xu[u] = zero;
                if constexpr (kUpperRows) {
                    if (in_k[u] && x_upper_ok) xu[u] = __ldg(reinterpret_cast<const uint4*>(x_upper + col));
                }
            }
            mbarrier_wait(&full[s], phase);
            const uint8_t* row = smem + size_t(s) * kStageBytes + g * kRowPitch + t * 16;
#pragma unroll
            for (int u = 0; u < kChunksPerWarp; ++u)
                wv[u] =
                    in_k[u]
                        ? *reinterpret_cast<const uint4*>(row + (warp + u * kConsumerWarps) * kChunk * kElementBytes)
                        : zero;
#pragma unroll
            for (int u = 0; u < kChunksPerWarp; ++u) {
                mma_m16n8k16<T>(acc, xv[u].x, xu[u].x, xv[u].y, xu[u].y, wv[u].x, wv[u].y);
                mma_m16n8k16<T>(acc, xv[u].z, xu[u].z, xv[u].w, xu[u].w, wv[u].z, wv[u].w);
            }
            // After the mma's, which consumed every lane's reads of the stage: it may be refilled.
            __syncwarp();
            if (lane == 0) mbarrier_arrive(&empty[s]);
            if (++s == stages) s = 0, phase ^= 1;
        }
        // acc: rows g (0, 1) and g + 8 (2, 3) of x, outputs n0 + 2 t (0, 2) and n0 + 2 t + 1 (1, 3).
#pragma unroll
        for (int i = 0; i < 4; ++i) buffer[(warp * 4 + i) * kWarpSize + lane] = acc[i];
        named_barrier(1, kConsumerWarps * kWarpSize);
        if (warp == 0) {
            const Tile at = locate(outs, tile);
            const float* __restrict__ bias = at.out->bias;
            OutT* __restrict__ y = static_cast<OutT*>(at.out->y);
            const int64_t n = at.out->n;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int r = i < 2 ? g : g + 8;
                const int64_t col = at.n0 + 2 * t + i % 2;
                if (r >= m || col >= n) continue;
                float sum = buffer[i * kWarpSize + lane];
#pragma unroll
                for (int wi = 1; wi < kConsumerWarps; ++wi) sum += buffer[(wi * 4 + i) * kWarpSize + lane];
                if (bias != nullptr) sum += bias[col];
                y[int64_t(r) * n + col] = from_f32<OutT>(sum);
            }
        }
        // The other buffer next: warp 0 reads this one until it reaches the next tile's barrier, which the other
        // warps must pass before they write this one again.
        buffer = buffer == partial ? partial + kPartialFloats : partial;
    }
#else
    grid_dependency_wait();
#endif
}

// Per device and build: the multiprocessors, the shared memory a block may have and what the system reserves per
// resident block, the kernel's dynamic shared-memory limit raised to the most any tuning uses, and whether the device
// runs this build's code (the sm_80 code of a "90a;80" binary, or PTX compiled for an older target, has an empty
// kernel).
struct DeviceFacts {
    int sms = 0;
    size_t smem_per_sm = 0, smem_per_block = 0, smem_reserved_per_block = 0;
    bool runs = false;
};

template <class T, class OutT, bool kUpperRows>
const DeviceFacts& facts() {
    return once_per_device([](int device) {
        DeviceFacts f;
        const auto kernel = skinny_bulk_kernel<T, OutT, kUpperRows>;
        cudaFuncAttributes attributes{};
        TACO_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
        int major = 0, sms = 0, per_sm = 0, per_block = 0, reserved = 0;
        TACO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        TACO_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        TACO_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
        TACO_CUDA_CHECK(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
        TACO_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
        f.sms = sms, f.smem_per_sm = size_t(per_sm), f.smem_per_block = size_t(per_block);
        f.smem_reserved_per_block = size_t(reserved);
        f.runs = major >= 9 && attributes.binaryVersion >= 90 && f.smem_per_block >= shared_bytes(kMinStages);
        if (f.runs) {
            const size_t most = std::min(shared_bytes(kMaxStages), f.smem_per_block);
            TACO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(most)));
        }
        return f;
    });
}

template <class T, class OutT, bool kUpperRows>
void launch_build(const void* x, const SkinnyOutputs& outs, int64_t m, int64_t k, const SkinnyTuning& tuning,
                  cudaStream_t stream) {
    const DeviceFacts& f = facts<T, OutT, kUpperRows>();
    TACO_CHECK_MSG(f.runs,
                   "skinny_gemm: the bulk-copy build does not run on this device (compute capability 9.0 and "
                   "its code in the binary)");
    const int stages = tuning.stages != 0 ? tuning.stages : kDefaultStages;
    const int per_sm = tuning.blocks_per_sm != 0 ? tuning.blocks_per_sm : kDefaultBlocksPerSm;
    const size_t bytes = shared_bytes(std::clamp(stages, kMinStages, kMaxStages));
    TACO_CHECK_MSG(stages >= kMinStages && stages <= kMaxStages && per_sm >= 1 && per_sm <= 2 &&
                       bytes <= f.smem_per_block &&
                       size_t(per_sm) * (bytes + f.smem_reserved_per_block) <= f.smem_per_sm,
                   "skinny_gemm: {} stages ({} bytes of shared memory) and {} blocks per multiprocessor do not fit "
                   "this device (stages {} to {}, 1 or 2 blocks, at most {} bytes per block and {} per "
                   "multiprocessor)",
                   stages, bytes, per_sm, kMinStages, kMaxStages, f.smem_per_block, f.smem_per_sm);
    const int64_t tiles = outs.tile_end[outs.count - 1];
    const int64_t grid = std::min(tiles, int64_t(f.sms) * per_sm);
    launch_kernel("skinny_bulk_kernel", skinny_bulk_kernel<T, OutT, kUpperRows>, unsigned(grid), kThreads, bytes,
                  stream, static_cast<const T*>(x), outs, int(m), k, stages);
}

template <class T, class OutT>
void launch_typed(const void* x, const SkinnyOutputs& outs, int64_t m, int64_t k, const SkinnyTuning& tuning,
                  cudaStream_t stream) {
    if (m > 8) return launch_build<T, OutT, true>(x, outs, m, k, tuning, stream);
    launch_build<T, OutT, false>(x, outs, m, k, tuning, stream);
}

}  // namespace

bool skinny_bulk_available() { return facts<__nv_bfloat16, __nv_bfloat16, false>().runs; }

void skinny_bulk_launch(const void* x, const SkinnyOutputs& outs, int64_t m, int64_t k, DType in_dtype, DType out_dtype,
                        const SkinnyTuning& tuning, void* stream) {
    const cudaStream_t s = as_stream(stream);
    if (in_dtype == DType::kBF16) {
        if (out_dtype == DType::kF32) return launch_typed<__nv_bfloat16, float>(x, outs, m, k, tuning, s);
        return launch_typed<__nv_bfloat16, __nv_bfloat16>(x, outs, m, k, tuning, s);
    }
    if (out_dtype == DType::kF32) return launch_typed<__half, float>(x, outs, m, k, tuning, s);
    launch_typed<__half, __half>(x, outs, m, k, tuning, s);
}

}  // namespace taco::cuda
