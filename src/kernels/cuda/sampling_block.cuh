// Block-wide building blocks of the sampling kernels (sampling.cu): one block of kSamplingThreads threads works on
// one row. Every reduction runs in a fixed order (per-thread strides, then a shuffle-down tree, then the warps in
// order), so a row's result depends on nothing but the row: the same on every run and whatever else is in the batch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "exec/philox.h"

namespace taco::cuda::sampling {

constexpr int kSamplingThreads = 512;
constexpr int kSamplingWarps = kSamplingThreads / 32;

// ---- Logit order (exec/logit_order.h): NaN below everything, -0 equal to +0 ----------------------------------

// order_key of logit_order.h in float: NaN is -inf. (Its double is the CPU's order_key.)
__device__ __forceinline__ float order_key(float logit) { return isnan(logit) ? -INFINITY : logit; }

// A uint32 that orders as order_key does: larger logit, larger bits; -0 and +0 the same bits.
__device__ __forceinline__ uint32_t ordered_bits(float logit) {
    float key = order_key(logit);
    if (key == 0.0f) key = 0.0f;  // -0 -> +0
    const uint32_t bits = __float_as_uint(key);
    return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// The order_key whose ordered_bits are `bits` (-0 comes back as +0, NaN as -inf).
__device__ __forceinline__ float key_of_ordered_bits(uint32_t bits) {
    return __uint_as_float((bits & 0x80000000u) ? (bits & 0x7FFFFFFFu) : ~bits);
}

// ---- Reductions ---------------------------------------------------------------------------------------------------

// The best of a set of (value, index) pairs: the largest value, the lowest index on ties. An argmax over order
// keys (torch.argmax: the first maximum) and the Gumbel-max choice both are this.
struct Best {
    float value;
    int32_t index;
};

__device__ __forceinline__ Best no_best() { return {-INFINITY, INT32_MAX}; }

__device__ __forceinline__ Best better(Best a, Best b) {
    return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
}

__device__ __forceinline__ double shfl_down(double v, int offset) { return __shfl_down_sync(0xffffffffu, v, offset); }
__device__ __forceinline__ float shfl_down(float v, int offset) { return __shfl_down_sync(0xffffffffu, v, offset); }
__device__ __forceinline__ int32_t shfl_down(int32_t v, int offset) { return __shfl_down_sync(0xffffffffu, v, offset); }
__device__ __forceinline__ long long shfl_down(long long v, int offset) {
    return __shfl_down_sync(0xffffffffu, v, offset);
}
__device__ __forceinline__ Best shfl_down(Best v, int offset) {
    return {__shfl_down_sync(0xffffffffu, v.value, offset), __shfl_down_sync(0xffffffffu, v.index, offset)};
}

struct SumOp {
    template <class T>
    __device__ T operator()(T a, T b) const {
        return a + b;
    }
};
struct DoubleSumOp {  // spelled out: a sum of doubles that no compiler contracts
    __device__ double operator()(double a, double b) const { return __dadd_rn(a, b); }
};
struct MinOp {
    template <class T>
    __device__ T operator()(T a, T b) const {
        return b < a ? b : a;
    }
};
struct MaxOp {
    template <class T>
    __device__ T operator()(T a, T b) const {
        return b > a ? b : a;
    }
};
struct BestOp {
    __device__ Best operator()(Best a, Best b) const { return better(a, b); }
};

// Lane 0 gets the warp's reduction, always in the same tree.
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
    for (int offset = 16; offset > 0; offset >>= 1) v = op(v, shfl_down(v, offset));
    return v;
}

// Scratch of block_reduce: room for one T per warp and the result (T of at most 8 bytes).
struct ReduceShared {
    alignas(8) unsigned char bytes[(kSamplingWarps + 1) * 8];
};

// Every thread of the block calls it with its partial value; every thread gets the block's reduction. `identity`
// pads the unused lanes of the last step.
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T identity, ReduceShared& shared) {
    static_assert(sizeof(T) <= 8, "block_reduce holds values of up to 8 bytes");
    T* slots = reinterpret_cast<T*>(shared.bytes);
    const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
    v = warp_reduce(v, op);
    __syncthreads();  // an earlier call's readers are done with the slots
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    if (warp == 0) {
        T x = lane < kSamplingWarps ? slots[lane] : identity;
        x = warp_reduce(x, op);
        if (lane == 0) slots[kSamplingWarps] = x;
    }
    __syncthreads();
    return slots[kSamplingWarps];
}

// GumbelArgmax::consider of batch_sampler.cc into a thread's running best: a token whose largest possible key
// already loses to the thread's best is left out before any logarithm (it loses to the block's best too).
__device__ __forceinline__ void consider(Best& best, int32_t token, float logit, uint32_t bits, float max_logit,
                                         float temperature) {
    const float scaled = philox::div_rn(philox::sub_rn(logit, max_logit), temperature);
    if (philox::add_rn(scaled, philox::gumbel_upper_bound(bits)) < best.value) return;
    best = better(best, {gumbel_key(logit, max_logit, temperature, philox::gumbel_from_bits(bits)), token});
}

// ---- Radix select ---------------------------------------------------------------------------------------------------

// The k largest of n 64-bit keys are those with (key & mask) >= prefix.
struct RadixSelection {
    uint64_t prefix;
    uint64_t mask;
    __device__ bool selects(uint64_t key) const { return (key & mask) >= prefix; }
};

struct RadixShared {
    uint32_t histogram[256];
    uint64_t prefix, mask;
    int64_t needed;
    int done;
};

// Selects the k largest (1 <= k <= n) of the keys key_at(0 .. n-1), resolving the top num_bits bits (a multiple of
// 8; the lower bits are ignored, so keys equal in them are tied and all selected with the k-th). One pass over the
// keys per 8-bit digit from the top, counting the keys that share the digits chosen so far in a 256-bin histogram
// (integer counts: exact in any order), and stopping early once the chosen bin is selected whole. With unique keys
// exactly k are selected; otherwise every key equal to the k-th in the resolved bits is, too.
template <class KeyAt>
__device__ RadixSelection block_select_largest(KeyAt key_at, int64_t n, int64_t k, int num_bits, RadixShared& s) {
    const int tid = int(threadIdx.x), lane = tid & 31;
    if (tid == 0) {
        s.prefix = 0;
        s.mask = 0;
        s.needed = k;
        s.done = 0;
    }
    for (int shift = 64 - 8; shift >= 64 - num_bits; shift -= 8) {
        for (int b = tid; b < 256; b += kSamplingThreads) s.histogram[b] = 0;
        __syncthreads();
        const uint64_t prefix = s.prefix, mask = s.mask;
        for (int64_t base = 0; base < n; base += kSamplingThreads) {
            const int64_t i = base + tid;
            uint32_t digit = 256;  // not counted
            if (i < n) {
                const uint64_t key = key_at(i);
                if ((key & mask) == prefix) digit = uint32_t(key >> shift) & 255u;
            }
            // One atomic per distinct digit of the warp: most keys share their top digits.
            const uint32_t peers = __match_any_sync(0xffffffffu, digit);
            if (digit < 256 && lane == __ffs(int(peers)) - 1) atomicAdd(&s.histogram[digit], uint32_t(__popc(peers)));
        }
        __syncthreads();
        if (tid == 0) {
            int64_t above = 0;  // keys in higher bins: all selected
            int b = 255;
            for (; b > 0; --b) {
                if (above + s.histogram[b] >= s.needed) break;
                above += s.histogram[b];
            }
            s.needed -= above;
            s.prefix |= uint64_t(b) << shift;
            s.mask |= uint64_t(0xFF) << shift;
            if (int64_t(s.histogram[b]) == s.needed) s.done = 1;
        }
        __syncthreads();
        if (s.done) break;
    }
    const RadixSelection selection{s.prefix, s.mask};
    __syncthreads();  // everyone has read s before a later call resets it
    return selection;
}

}  // namespace taco::cuda::sampling
