// What both paged-attention kernels share (paged_attention.cu on the CUDA cores, paged_attention_mma.cu on the
// tensor cores): a row's metadata (its sequence, position and first key, or why it is bad), the score of one key in
// ops.h's order (scale, soft-capping, ALiBi), and the merge of partition states. The merge is the same operations in
// the same order in both kernels and in the split-KV merge kernel, so a row's result never depends on whether its
// partitions were merged by the CTA that computed them or by the merge kernel.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/paged_attention_kernels.h"

namespace taco::cuda {
namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

// Round to the nearest bfloat16 (ties to even), as f32_to_bf16 and torch do.
__device__ __forceinline__ float round_to_bf16(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(kFullWarp, v, offset));
    return v;
}

// A butterfly: every lane ends with the same bits (each step adds the same two values, in either order).
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = __fadd_rn(v, __shfl_xor_sync(kFullWarp, v, offset));
    return v;
}

enum RowState : int { kRowNone = 0, kRowOk = 1, kRowBad = 2 };

struct RowInfo {
    int state;  // RowState; kRowNone: padding or no such head, left untouched
    int token, head, seq, pos;
    int first;  // the first key the row sees (sliding window)
};

// The row of (token, head): its sequence (the last s with query_start[s] <= token), position and first key.
__device__ RowInfo row_info(const AttentionLaunch& p, int token, int head) {
    RowInfo r{kRowNone, token, head, 0, 0, 0};
    if (token >= p.query_start[p.num_seqs]) return r;  // padding
    int lo = 0, hi = p.num_seqs;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (p.query_start[mid] <= token) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    r.seq = lo;
    r.pos = p.positions[token];
    const bool ok = p.query_start[lo] <= token && r.pos >= 0 && r.pos < p.seq_lens[lo] &&
                    r.pos / p.block_size < p.max_blocks && r.pos < p.max_seq_len;
    r.state = ok ? kRowOk : kRowBad;
    r.first = p.window > 0 ? max(0, r.pos - p.window + 1) : 0;
    return r;
}

// The score of key position j for a row: scale, soft-capping and ALiBi in ops.h's order.
__device__ __forceinline__ float score_of(const AttentionLaunch& p, float dot, int head, int j, int pos) {
    float s;
    if (p.alibi_slopes != nullptr && p.alibi_bf16) {
        // transformers' Falcon: (q.k + bf16(slope * bf16(j))) * scale.
        const float bias = round_to_bf16(__fmul_rn(p.alibi_slopes[head], round_to_bf16(float(j))));
        s = __fmul_rn(__fadd_rn(dot, bias), p.scale);
    } else {
        s = __fmul_rn(dot, p.scale);
    }
    if (p.softcap > 0) s = __fmul_rn(p.softcap, tanhf(__fdiv_rn(s, p.softcap)));
    if (p.alibi_slopes != nullptr && !p.alibi_bf16) s = __fadd_rn(s, __fmul_rn(p.alibi_slopes[head], float(j - pos)));
    return s;
}

// The scales alone, from the running maximum before (M) and after (merged = fmaxf(M, m)) the merge: the split-KV merge
// kernel takes the running maxima from a prefix maximum over its partitions (fmaxf is exact in any order) and the
// scales from here, so that they have the bits of merge_scales'.
__device__ __forceinline__ void merge_scales_between(float M, float merged, float m, float& a, float& b) {
    a = expf(M - merged);  // M = -inf (nothing yet): 0
    b = expf(m - merged);
}

// A running sum (O, or the softmax denominator L) scaled by a, with a partition's value scaled by b.
__device__ __forceinline__ float merged_value(float O, float a, float o, float b) {
    return __fadd_rn(__fmul_rn(O, a), __fmul_rn(o, b));
}

// Merges a partition's state (m, l) into the running one (M, L): the scales a of the old and b of the new state.
// The one merge of both kernels: the same operations in the same order, so split and unsplit agree bit for bit.
__device__ __forceinline__ void merge_scales(float& M, float& L, float m, float l, float& a, float& b) {
    const float merged = fmaxf(M, m);
    merge_scales_between(M, merged, m, a, b);
    L = merged_value(L, a, l, b);
    M = merged;
}

// Offsets in key_offset beyond a real (slot, kv head) row: past the keys the CTA needs, and a block id outside the
// cache. Both stage zeros; the second poisons the rows that see that key (only those: a tile also holds keys before
// the CTA's first window key, whose blocks a sliding-window cache may have unmapped).
constexpr int64_t kNoKey = -1;
constexpr int64_t kBadBlock = -2;

// Key position j's entry in key_offset for a tile of a sequence (block table `table`) whose keys end at keys_end:
// the element offset of its (slot, kv head) row of D elements in the cache, or one of the two above.
__device__ __forceinline__ int64_t key_row_offset(const AttentionLaunch& p, const int32_t* table, int j, int keys_end,
                                                  int kv_head, int D) {
    if (j >= keys_end) return kNoKey;
    const int block = table[j / p.block_size];
    if (block < 0 || block >= p.num_blocks) return kBadBlock;
    return ((int64_t(block) * p.block_size + j % p.block_size) * p.num_kv_heads + kv_head) * D;
}

// Split-KV: the CTAs of one (token tile, head chunk) share its partitions z in a stride of gridDim.z (the grid is
// sized to fill the GPU, not to the partitions of max_seq_len, which under CUDA graphs is the whole capacity): the
// CTA's first partition at or after z_lo, and the stride in `step`.
__device__ __forceinline__ int first_partition_of_cta(int z_lo, int& step) {
    step = int(gridDim.z);
    return z_lo + ((int(blockIdx.z) - z_lo) % step + step) % step;
}

}  // namespace
}  // namespace taco::cuda
