// The paged KV write on CUDA: token t's K and V rows go to slot slot_mapping[t] of the caches (padding, slot -1, is
// skipped), converted from the activation dtype to the cache dtype (exact when they are the same; else widened to
// fp32 and rounded once). Blocks of kThreads elements over a token's row (grid: tokens x blocks), one element per
// thread.
#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

constexpr int kThreads = 256;

// k, v: [tokens, row]; slot_mapping: [tokens]; k_cache, v_cache: [num_slots, row] (row = kv_heads * head_dim).
template <class TIn, class TCache>
__global__ void write_kv_cache_kernel(const TIn* k, const TIn* v, const int64_t* slot_mapping, int64_t row,
                                      int64_t num_slots, TCache* k_cache, TCache* v_cache) {
    grid_dependency_wait();
    const int64_t t = blockIdx.x;
    const int64_t i = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
    if (i >= row) return;
    const int64_t slot = kv_slot(slot_mapping, t, num_slots);
    if (slot < 0) return;  // padding
    k_cache[slot * row + i] = from_f32<TCache>(to_f32(k[t * row + i]));
    v_cache[slot * row + i] = from_f32<TCache>(to_f32(v[t * row + i]));
}

}  // namespace

namespace launch {

void write_kv_cache(void* stream, const void* k, const void* v, DType act_dtype, int64_t tokens, int64_t row,
                    const int64_t* slot_mapping, void* k_cache, void* v_cache, DType cache_dtype, int64_t num_slots) {
    if (tokens == 0 || row == 0) return;
    dispatch_float(act_dtype, "write_kv_cache", "k", [&](auto in_tag) {
        using TIn = typename decltype(in_tag)::type;
        dispatch_float(cache_dtype, "write_kv_cache", "k_cache", [&](auto cache_tag) {
            using TCache = typename decltype(cache_tag)::type;
            launch_kernel("write_kv_cache_kernel", write_kv_cache_kernel<TIn, TCache>,
                          dim3(unsigned(tokens), blocks_for(row, kThreads)), kThreads, 0, as_stream(stream),
                          static_cast<const TIn*>(k), static_cast<const TIn*>(v), slot_mapping, row, num_slots,
                          static_cast<TCache*>(k_cache), static_cast<TCache*>(v_cache));
        });
    });
}

}  // namespace launch
}  // namespace taco::cuda
