// The decode kernel's staging of a tile's K or V rows (paged_attention_decode.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/paged_attention_common.cuh"
#include "kernels/cuda/paged_attention_tile.cuh"

namespace taco::cuda {
namespace {

// Hopper: a warp's share of a tile's K or V rows by the bulk copy engine. Warp w of kWarps stages the tile's keys
// w kRows.. (kRows = kKeysPerTile / kWarps, one a lane; the lanes past them idle), each row one copy from its element
// offset of the cache (lane l of every warp holds keys l and l + 32's: off0, off1), or none (the row is zeroed, since
// a weight of 0 times it must stay 0), completing on `bar`, which counts one arrival per warp. A bulk copy's addresses
// must be uniform, so the compiler issues a warp's copies one lane after another: when one warp staged all 64 rows,
// the other warps waited for it at the tile's next barrier (42% of the warps' stall samples at bs=64,
// bench/results/h100-2026-12-07e), so every warp stages a quarter. Each warp announces its bytes first (expect_tx),
// then zeroes its rows without a key and issues its copies, and only then does its lane 0 arrive: the phase the warps
// wait for completes after the last warp's zeroed rows are written and every copy has landed.
template <class T, int D, int kWarps>
__device__ __forceinline__ void bulk_stage_rows_of_warp(T* dst, const T* cache, int64_t off0, int64_t off1,
                                                        uint64_t* bar, int warp, int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int kRows = kKeysPerTile<D> / kWarps, S = kRowStride<D>;
    static_assert(kKeysPerTile<D> % kWarps == 0 && kRows <= 32, "a warp stages at most a row a lane");
    constexpr uint32_t kRowBytes = D * sizeof(T);
    // Key `key` of the tile is lane key % kRows's of warp key / kRows here; lane key % 32 computed its offset (off0
    // for the tile's first 32 keys, off1 for the rest).
    const int key = warp * kRows + lane % kRows;
    const int64_t first = __shfl_sync(kFullWarp, off0, key % 32), second = __shfl_sync(kFullWarp, off1, key % 32);
    const int64_t offset = key < 32 ? first : second;
    const bool mine = lane < kRows;
    const uint32_t rows = __popc(__ballot_sync(kFullWarp, mine && offset >= 0));
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    if (lane == 0) mbarrier_expect_tx(bar, rows * kRowBytes);
    __syncwarp();
    if (mine) {
        T* d = dst + key * S;
        if (offset >= 0) {
            bulk_copy_to_shared(d, cache + offset, kRowBytes, bar, l2_evict_first_policy());  // read once a step
        } else {
#pragma unroll
            for (int c = 0; c < D; c += 8) *reinterpret_cast<uint4*>(d + c) = make_uint4(0, 0, 0, 0);
        }
    }
    __syncwarp();
    if (lane == 0) mbarrier_arrive(bar);
#endif
}

}  // namespace
}  // namespace taco::cuda
