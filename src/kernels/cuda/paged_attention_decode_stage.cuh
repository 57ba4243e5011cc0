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

// Hopper: a tile's K or V rows by the bulk copy engine, one warp staging them for all four, one copy per row of a key
// (lane l: keys l and l + 32, at element offsets off0 and off1 of the cache, or none), completing on `bar`; rows
// without a key are zeroed (a weight of 0 times them must stay 0). The bytes are announced first (expect_tx), then
// rows without a key are zeroed and the copies issued, and only then does lane 0 arrive, so that the phase the other
// warps wait for completes after the zeroed rows are written (the arrival releases them).
template <class T, int D>
__device__ __forceinline__ void bulk_stage_rows_for_ctas(T* dst, const T* cache, int64_t off0, int64_t off1,
                                                         uint64_t* bar, int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int kKeys = kKeysPerTile<D>, S = kRowStride<D>;
    constexpr uint32_t kRowBytes = D * sizeof(T);
    const uint32_t rows =
        __popc(__ballot_sync(kFullWarp, off0 >= 0)) + __popc(__ballot_sync(kFullWarp, kKeys > 32 && off1 >= 0));
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    if (lane == 0) mbarrier_expect_tx(bar, rows * kRowBytes);
    __syncwarp();
    const uint64_t policy = l2_evict_first_policy();  // a decode step reads each key once
    const auto row = [&](int i, int64_t offset) {
        T* d = dst + i * S;
        if (offset >= 0) {
            bulk_copy_to_shared(d, cache + offset, kRowBytes, bar, policy);
        } else {
#pragma unroll
            for (int c = 0; c < D; c += 8) *reinterpret_cast<uint4*>(d + c) = make_uint4(0, 0, 0, 0);
        }
    };
    row(lane, off0);
    if (kKeys > 32) row(lane + 32, off1);
    __syncwarp();
    if (lane == 0) mbarrier_arrive(bar);
#endif
}

}  // namespace
}  // namespace taco::cuda
