// Rotary embedding on CUDA, in place, as the CPU backend (kernels/cpu/attention.cc): token t reads table row
// positions[t] + table_offsets[t]; each pair (x1, x2) of the first rotary_dim of a head becomes
// (x1 cos - x2 sin, x2 cos + x1 sin) in fp32 (each product rounded, no fused multiply-add), rounded once to the
// activation dtype. One thread per pair, blocks of kThreads over a token's pairs (grid: tokens x blocks), so a
// decode token's pairs are rotated in one memory round trip, not in a loop of dependent ones.
//
// rotary_write_kv: the rotation of q and k and the paged KV write (kv_cache.cu's conversion) in one launch, with the
// bits of the three: each thread owns one item of a token (a q pair, a k pair, a k element past rotary_dim or a v
// element) and writes what the separate kernels would.
#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

constexpr int kThreads = 256;

// Token t's rows of the cos and sin tables ([table_rows, half] f32).
__device__ __forceinline__ int64_t rotary_table_row(const int32_t* positions, const int32_t* table_offsets,
                                                    int64_t table_rows, int64_t t) {
    const int32_t position = positions[t];
    const int64_t row = int64_t(position) + (table_offsets != nullptr ? table_offsets[t] : 0);
    TACO_DEVICE_CHECK(position >= 0 && row >= 0 && row < table_rows,
                      "rotary_embedding: position %d (table row %lld) outside the rotary table of %lld rows\n",
                      position, static_cast<long long>(row), static_cast<long long>(table_rows));
    return row;
}

// Rotates pair i of one head in place; neox: pairs (i, i + half), GPT-J style: pairs (2i, 2i + 1). Returns the
// stored (rounded) values and their indices in the head.
template <class T>
__device__ __forceinline__ void rotate_pair(T* head, int i, int half, bool neox_style, float c, float s, int& ia,
                                            int& ib, T& ya, T& yb) {
    ia = neox_style ? i : 2 * i;
    ib = neox_style ? i + half : 2 * i + 1;
    const float x1 = to_f32(head[ia]), x2 = to_f32(head[ib]);
    ya = from_f32<T>(__fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s)));
    yb = from_f32<T>(__fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s)));
    head[ia] = ya;
    head[ib] = yb;
}

// x: [tokens, heads, head_dim]; positions, table_offsets (or null): [tokens]; cos, sin: [table_rows, half].
// Block (t, b): pairs b * kThreads.. of token t.
template <class T>
__global__ void rotary_kernel(T* x, const int32_t* positions, const int32_t* table_offsets, const float* cos_table,
                              const float* sin_table, int64_t table_rows, int64_t heads, int64_t head_dim, int half,
                              bool neox_style) {
    grid_dependency_wait();
    const int64_t t = blockIdx.x;
    const int64_t pair = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
    if (pair >= heads * half) return;
    const int64_t row = rotary_table_row(positions, table_offsets, table_rows, t);
    const int64_t h = pair / half;
    const int i = int(pair % half);
    int ia, ib;
    T ya, yb;
    rotate_pair(x + (t * heads + h) * head_dim, i, half, neox_style, cos_table[row * half + i],
                sin_table[row * half + i], ia, ib, ya, yb);
}

// q: [tokens, q_heads, head_dim], k, v: [tokens, kv_heads, head_dim]; k_cache, v_cache: [num_slots, kv_heads *
// head_dim]. Items of a token: q pairs, k pairs, k elements past 2 half, v elements. Block (t, b): items b *
// kThreads.. of token t.
template <class T, class TCache>
__global__ void rotary_write_kv_kernel(T* q, T* k, const T* v, const int32_t* positions, const int32_t* table_offsets,
                                       const float* cos_table, const float* sin_table, int64_t table_rows,
                                       int64_t q_heads, int64_t kv_heads, int64_t head_dim, int half, bool neox_style,
                                       const int64_t* slot_mapping, TCache* k_cache, TCache* v_cache,
                                       int64_t num_slots) {
    grid_dependency_wait();
    const int64_t t = blockIdx.x;
    int64_t item = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
    const int64_t q_pairs = q_heads * half, k_pairs = kv_heads * half;
    const int64_t rest = head_dim - 2 * half, k_rest = kv_heads * rest, v_items = kv_heads * head_dim;
    if (item >= q_pairs + k_pairs + k_rest + v_items) return;
    const int64_t row_size = kv_heads * head_dim;
    if (item < q_pairs + k_pairs) {
        const int64_t row = rotary_table_row(positions, table_offsets, table_rows, t);
        const bool is_q = item < q_pairs;
        const int64_t pair = is_q ? item : item - q_pairs;
        const int64_t h = pair / half;
        const int i = int(pair % half);
        T* head = is_q ? q + (t * q_heads + h) * head_dim : k + (t * kv_heads + h) * head_dim;
        int ia, ib;
        T ya, yb;
        rotate_pair(head, i, half, neox_style, cos_table[row * half + i], sin_table[row * half + i], ia, ib, ya, yb);
        if (is_q) return;
        const int64_t slot = kv_slot(slot_mapping, t, num_slots);
        if (slot < 0) return;  // padding
        TCache* dst = k_cache + slot * row_size + h * head_dim;
        dst[ia] = from_f32<TCache>(to_f32(ya));
        dst[ib] = from_f32<TCache>(to_f32(yb));
        return;
    }
    item -= q_pairs + k_pairs;
    const int64_t slot = kv_slot(slot_mapping, t, num_slots);
    if (slot < 0) return;
    if (item < k_rest) {  // k past the rotary dims: copied as write_kv_cache does
        const int64_t e = item / rest * head_dim + 2 * half + item % rest;
        k_cache[slot * row_size + e] = from_f32<TCache>(to_f32(k[t * row_size + e]));
        return;
    }
    item -= k_rest;
    v_cache[slot * row_size + item] = from_f32<TCache>(to_f32(v[t * row_size + item]));
}

}  // namespace

namespace launch {

void rotary_embedding(void* stream, void* x, DType dtype, int64_t tokens, int64_t heads, int64_t head_dim,
                      const int32_t* positions, const int32_t* table_offsets, const float* cos_table,
                      const float* sin_table, int64_t table_rows, int rotary_dim, bool neox_style) {
    if (tokens == 0 || heads == 0) return;
    const int half = rotary_dim / 2;
    dispatch_float(dtype, "rotary_embedding", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const dim3 grid(unsigned(tokens), blocks_for(heads * half, kThreads));
        launch_kernel("rotary_kernel", rotary_kernel<T>, grid, kThreads, 0, as_stream(stream), static_cast<T*>(x),
                      positions, table_offsets, cos_table, sin_table, table_rows, heads, head_dim, half, neox_style);
    });
}

void rotary_write_kv(void* stream, void* q, void* k, const void* v, DType dtype, int64_t tokens, int64_t q_heads,
                     int64_t kv_heads, int64_t head_dim, const int32_t* positions, const int32_t* table_offsets,
                     const float* cos_table, const float* sin_table, int64_t table_rows, int rotary_dim,
                     bool neox_style, const int64_t* slot_mapping, void* k_cache, void* v_cache, DType cache_dtype,
                     int64_t num_slots) {
    if (tokens == 0 || kv_heads == 0) return;
    const int half = rotary_dim / 2;
    const int64_t items = (q_heads + kv_heads) * half + kv_heads * (head_dim - 2 * half) + kv_heads * head_dim;
    dispatch_float(dtype, "rotary_write_kv", "q", [&](auto tag) {
        using T = typename decltype(tag)::type;
        dispatch_float(cache_dtype, "rotary_write_kv", "k_cache", [&](auto cache_tag) {
            using TCache = typename decltype(cache_tag)::type;
            const dim3 grid(unsigned(tokens), blocks_for(items, kThreads));
            launch_kernel("rotary_write_kv_kernel", rotary_write_kv_kernel<T, TCache>, grid, kThreads, 0,
                          as_stream(stream), static_cast<T*>(q), static_cast<T*>(k), static_cast<const T*>(v),
                          positions, table_offsets, cos_table, sin_table, table_rows, q_heads, kv_heads, head_dim, half,
                          neox_style, slot_mapping, static_cast<TCache*>(k_cache), static_cast<TCache*>(v_cache),
                          num_slots);
        });
    });
}

}  // namespace launch
}  // namespace taco::cuda
