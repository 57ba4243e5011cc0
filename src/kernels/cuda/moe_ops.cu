// Mixture-of-experts data movement on CUDA, as the CPU backend (kernels/cpu/moe_ops.cc): the stable counting sort
// of (token, rank) slots by expert, the gather into expert order, the weighted combine in ascending expert id and
// the shared expert's sigmoid gate. Nothing is read on the host: the expert offsets stay on the device.
#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

constexpr int kRowThreads = 256;
constexpr size_t kMaxSharedBytes = 48 * 1024;  // what a block gets without opting in to more

// Shared memory of moe_align_kernel: the running row of each bucket and each warp's count of each bucket.
size_t align_shared_bytes(int buckets, int threads) {
    return size_t(buckets) * size_t(1 + threads / kWarpSize) * sizeof(int32_t);
}

// The stable counting sort in one block (ops::moe_align). Buckets 0 .. E - 1 are the experts, bucket E the padding
// slots (id == E). Pass 1 counts each bucket (shared atomics: counts do not depend on their order); thread 0 turns
// the counts into offsets; pass 2 walks the slots in chunks of blockDim.x in order and places each slot after every
// earlier slot of its bucket: earlier chunks (next[b]), earlier warps of its chunk (their counts), earlier lanes of
// its warp (the lanes of the same id below it, by __match_any_sync). So slot order within a bucket is kept, as the
// CPU's sequential sort keeps it.
//   ids: [num_slots]; sorted_slots, slot_rows: [num_slots]; expert_offsets: [E + 1].
__global__ void moe_align_kernel(const int32_t* ids, int64_t num_slots, int num_experts, int32_t* sorted_slots,
                                 int32_t* slot_rows, int32_t* expert_offsets) {
    grid_dependency_wait();
    extern __shared__ int32_t align_shared[];
    const int buckets = num_experts + 1, num_warps = blockDim.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    int32_t* next = align_shared;                   // [buckets]: count, then the next free row
    int32_t* warp_counts = align_shared + buckets;  // [num_warps, buckets]: the current chunk's counts
    for (int i = threadIdx.x; i < buckets * (1 + num_warps); i += blockDim.x) align_shared[i] = 0;
    __syncthreads();
    for (int64_t s = threadIdx.x; s < num_slots; s += blockDim.x) {
        const int32_t id = ids[s];
        TACO_DEVICE_CHECK(id >= 0 && id <= num_experts, "moe_align: expert id %d of %d\n", id, num_experts);
        atomicAdd(&next[id], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t row = 0;
        for (int b = 0; b < buckets; ++b) {
            const int32_t count = next[b];
            next[b] = row;
            expert_offsets[b] = row;  // offsets[E]: the padding's first row = the rows that run
            row += count;
        }
    }
    __syncthreads();
    const unsigned lanes_below = (1u << lane) - 1u;
    for (int64_t chunk = 0; chunk < num_slots; chunk += blockDim.x) {
        const int64_t s = chunk + threadIdx.x;
        const bool valid = s < num_slots;
        const int32_t id = valid ? ids[s] : -1;  // lanes past the end group among themselves
        const unsigned same = __match_any_sync(0xffffffffu, id);
        if (valid && lane == __ffs(same) - 1) warp_counts[warp * buckets + id] = __popc(same);
        __syncthreads();
        if (valid) {
            int32_t row = next[id] + __popc(same & lanes_below);
            for (int w = 0; w < warp; ++w) row += warp_counts[w * buckets + id];
            sorted_slots[row] = int32_t(s);
            slot_rows[s] = row;
        }
        __syncthreads();
        for (int b = threadIdx.x; b < buckets; b += blockDim.x) {
            int32_t chunk_count = 0;
            for (int w = 0; w < num_warps; ++w) {
                chunk_count += warp_counts[w * buckets + b];
                warp_counts[w * buckets + b] = 0;
            }
            next[b] += chunk_count;
        }
        __syncthreads();
    }
}

// out[i, :] = x[sorted_slots[i] / top_k, :] for i < expert_offsets[E], else 0.  x: [T, H]; out: [T * k, H]. Block i.
template <class T>
__global__ void moe_gather_kernel(const T* x, const int32_t* sorted_slots, const int32_t* expert_offsets,
                                  int num_experts, int top_k, int64_t num_rows, int64_t hidden, T* out) {
    grid_dependency_wait();
    const int64_t i = blockIdx.x;
    const int32_t ran = expert_offsets[num_experts];
    TACO_DEVICE_CHECK(ran >= 0 && ran <= num_rows, "moe_gather: %d rows run of %lld\n", ran,
                      static_cast<long long>(num_rows));
    T* dst = out + i * hidden;
    if (i >= ran) {
        for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) dst[h] = from_f32<T>(0.0f);
        return;
    }
    const int32_t slot = sorted_slots[i];
    TACO_DEVICE_CHECK(slot >= 0 && slot < num_rows, "moe_gather: slot %d of %lld\n", slot,
                      static_cast<long long>(num_rows));
    const T* src = x + int64_t(slot / top_k) * hidden;
    for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) dst[h] = src[h];
}

// out[t, :] = sum over token t's ranks in ascending expert id of weights[t, r] * expert_out[slot_rows[t * k + r], :],
// each product and sum rounded in fp32 as the CPU does (so f32 results have the CPU's bits), then once to the output
// dtype. Block t; shared memory [3, top_k]: the token's expert ids, rows and weights in ascending expert id.
template <class T>
__global__ void moe_combine_kernel(const T* expert_out, const int32_t* slot_rows, const int32_t* ids,
                                   const float* weights, int top_k, int64_t num_rows, int64_t hidden, T* out) {
    grid_dependency_wait();
    extern __shared__ int32_t combine_shared[];
    int32_t* sorted_ids = combine_shared;
    int32_t* rows = combine_shared + top_k;
    float* rank_weights = reinterpret_cast<float*>(combine_shared + 2 * top_k);
    const int64_t t = blockIdx.x;
    if (threadIdx.x == 0) {
        // Insertion sort of the ranks by expert id (stable: equal ids, the padding's, keep rank order).
        for (int r = 0; r < top_k; ++r) {
            const int32_t expert = ids[t * top_k + r], row = slot_rows[t * top_k + r];
            TACO_DEVICE_CHECK(row >= 0 && row < num_rows, "moe_combine: row %d of %lld\n", row,
                              static_cast<long long>(num_rows));
            int at = r;
            for (; at > 0 && sorted_ids[at - 1] > expert; --at) {
                sorted_ids[at] = sorted_ids[at - 1];
                rows[at] = rows[at - 1];
                rank_weights[at] = rank_weights[at - 1];
            }
            sorted_ids[at] = expert;
            rows[at] = row;
            rank_weights[at] = weights[t * top_k + r];
        }
    }
    __syncthreads();
    for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
        float sum = 0.0f;
        for (int i = 0; i < top_k; ++i)
            sum = __fadd_rn(sum, __fmul_rn(rank_weights[i], to_f32(expert_out[int64_t(rows[i]) * hidden + h])));
        out[t * hidden + h] = from_f32<T>(sum);
    }
}

// out[t, :] += sigmoid(gate[t, 0]) * shared[t, :], rounded as the CPU rounds it. Block t.
template <class T>
__global__ void add_sigmoid_gated_kernel(const T* shared, const T* gate, int64_t hidden, T* out) {
    grid_dependency_wait();
    const int64_t t = blockIdx.x;
    const float scale = 1.0f / (1.0f + expf(-to_f32(gate[t])));
    for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
        const int64_t i = t * hidden + h;
        out[i] = from_f32<T>(__fadd_rn(to_f32(out[i]), __fmul_rn(scale, to_f32(shared[i]))));
    }
}

}  // namespace

namespace launch {

void moe_align(void* stream, const int32_t* ids, int64_t num_slots, int num_experts, int32_t* sorted_slots,
               int32_t* slot_rows, int32_t* expert_offsets) {
    const int buckets = num_experts + 1;
    // The widest block whose shared memory fits; the result does not depend on the width (the sort is stable).
    int threads = 1024;
    while (threads > kWarpSize && align_shared_bytes(buckets, threads) > kMaxSharedBytes) threads /= 2;
    TACO_CHECK_MSG(align_shared_bytes(buckets, threads) <= kMaxSharedBytes,
                   "moe_align: {} experts are more than the CUDA kernel's shared memory holds", num_experts);
    launch_kernel("moe_align_kernel", moe_align_kernel, 1, threads, align_shared_bytes(buckets, threads),
                  as_stream(stream), ids, num_slots, num_experts, sorted_slots, slot_rows, expert_offsets);
}

void moe_gather(void* stream, const void* x, DType dtype, int64_t hidden, const int32_t* sorted_slots,
                const int32_t* expert_offsets, int num_experts, int top_k, int64_t rows, void* out) {
    if (rows == 0) return;
    dispatch_float(dtype, "moe_gather", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("moe_gather_kernel", moe_gather_kernel<T>, unsigned(rows), kRowThreads, 0, as_stream(stream),
                      static_cast<const T*>(x), sorted_slots, expert_offsets, num_experts, top_k, rows, hidden,
                      static_cast<T*>(out));
    });
}

void moe_combine(void* stream, const void* expert_out, DType dtype, int64_t rows, int64_t hidden,
                 const int32_t* slot_rows, const int32_t* ids, const float* weights, int64_t tokens, int top_k,
                 void* out) {
    if (tokens == 0) return;
    const size_t shared_bytes = size_t(3 * top_k) * sizeof(int32_t);
    TACO_CHECK_MSG(shared_bytes <= kMaxSharedBytes, "moe_combine: top {} is more than the CUDA kernel holds", top_k);
    dispatch_float(dtype, "moe_combine", "out", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("moe_combine_kernel", moe_combine_kernel<T>, unsigned(tokens), kRowThreads, shared_bytes,
                      as_stream(stream), static_cast<const T*>(expert_out), slot_rows, ids, weights, top_k, rows,
                      hidden, static_cast<T*>(out));
    });
}

void add_sigmoid_gated(void* stream, const void* shared, const void* gate, void* out, DType dtype, int64_t tokens,
                       int64_t hidden) {
    if (tokens == 0) return;
    dispatch_float(dtype, "add_sigmoid_gated", "out", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("add_sigmoid_gated_kernel", add_sigmoid_gated_kernel<T>, unsigned(tokens), kRowThreads, 0,
                      as_stream(stream), static_cast<const T*>(shared), static_cast<const T*>(gate), hidden,
                      static_cast<T*>(out));
    });
}

}  // namespace launch
}  // namespace taco::cuda
