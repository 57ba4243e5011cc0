// One warp's step of the tensor-core attention over a tile of keys, shared by the general kernel
// (paged_attention_mma.cu) and the decode kernel (paged_attention_decode.cu) so that a row has the same bits in
// either: the same instructions on the same inputs, in the same order.
//
// A warp holds 16 rows (the mma's M); lane l (g = l / 4, t = l % 4) holds rows g and g + 8 (rr = 0, 1). A tile is
// kKeysPerTile<D> keys of absolute positions tile.., staged in shared memory as rows of kRowStride<D> elements.
// The step is two halves, so that a kernel can wait for V only after the scores:
//   tile_scores:     S = Q K^T, the scores of the keys each row sees (-inf elsewhere), the tile's max and the
//                    weights P = exp(S - m_new); the running max m and sum l; O scaled by exp(m - m_new).
//   tile_accumulate: O += P V with P rounded to T (mma.sync, fp32 accumulation).
// A tile with no key visible to a row leaves that row's state bitwise as it was.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/paged_attention_common.cuh"

namespace taco::cuda {
namespace {

// Keys per tile: head dim 256 takes 32, so that S and O stay in registers.
template <int D>
constexpr int kKeysPerTile = D <= 128 ? 64 : 32;
// Shared-memory rows of K, V and Q in elements: 16 bytes of padding put ldmatrix's 8 row reads on 8 bank groups.
template <int D>
constexpr int kRowStride = D + 8;
// Head dims up to 128 keep Q's A fragments in registers; 256 reads them from shared memory at each use.
template <int D>
constexpr bool kQInRegisters = D <= 128;
template <int D>
constexpr int kQFrags = kQInRegisters<D> ? D / 16 : 1;

// Four 8x8 matrices of 2-byte elements: lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t& r0, uint32_t& r1, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t& r0, uint32_t& r1, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}

__device__ __forceinline__ float quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(kFullWarp, v, 1));
    return fmaxf(v, __shfl_xor_sync(kFullWarp, v, 2));
}
// A butterfly: the four lanes of a quad end with the same bits.
__device__ __forceinline__ float quad_sum(float v) {
    v = __fadd_rn(v, __shfl_xor_sync(kFullWarp, v, 1));
    return __fadd_rn(v, __shfl_xor_sync(kFullWarp, v, 2));
}
__device__ __forceinline__ bool quad_any(bool v) {
    int x = v ? 1 : 0;
    x |= __shfl_xor_sync(kFullWarp, x, 1);
    x |= __shfl_xor_sync(kFullWarp, x, 2);
    return x != 0;
}

// Lane l's address for an x4 A fragment of the 16 rows at q_rows (a [16][kRowStride<D>] block of Q in shared memory)
// and a k16 step: matrices (rows 0-7 | 8-15) x (cols 0-7 | 8-15) in the order a0..a3.
template <class T, int D>
__device__ __forceinline__ const T* q_lane_of(const T* q_rows, int lane) {
    return q_rows + (lane % 8 + (lane / 8) % 2 * 8) * kRowStride<D> + lane / 16 * 8;
}

// Q's A fragments in registers (head dims up to 128; none otherwise).
template <class T, int D>
__device__ __forceinline__ void load_q_fragments(uint32_t (&q_frag)[kQFrags<D>][4], const T* q_lane) {
    if constexpr (kQInRegisters<D>) {
#pragma unroll
        for (int kc = 0; kc < D / 16; ++kc) ldmatrix_x4(q_frag[kc], smem_addr(q_lane + kc * 16));
    }
}

// One n8 block of S = Q K^T (16 rows x keys 8 nb..): B fragments of 8 keys x 16 dims straight from K's rows in
// shared memory (lanes 0-7: dims 0-7, 8-15: 8-15), A from q_frag (head dims <= 128) or from Q's rows at q_lane. Every
// walk calls this, so a score is the same instructions whichever warp or kernel computes it.
template <class T, int D, int kFrags>
__device__ __forceinline__ void score_block(float (&s4)[4], int nb, const T* k_s, const T* q_lane,
                                            const uint32_t (&q_frag)[kFrags][4], int lane) {
    constexpr int S = kRowStride<D>;
    s4[0] = s4[1] = s4[2] = s4[3] = 0;
    const T* k_lane = k_s + (nb * 8 + lane % 8) * S + (lane / 8) % 2 * 8;
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
        uint32_t b0, b1;
        ldmatrix_x2(b0, b1, smem_addr(k_lane + kc * 16));
        if constexpr (kQInRegisters<D>) {
            mma_m16n8k16<T>(s4, q_frag[kc], b0, b1);
        } else {
            uint32_t a[4];
            ldmatrix_x4(a, smem_addr(q_lane + kc * 16));
            mma_m16n8k16<T>(s4, a, b0, b1);
        }
    }
}

// The first half of a tile step: s becomes the weights P of the tile's keys for the lane's rows (element e of block
// nb: row g (e < 2) or g + 8, key tile + 8 nb + 2 t + e % 2), m and l are updated and o is scaled. A key a row sees
// whose block id is outside the cache (bit jt of bad_keys, jt the key's index in the tile) sets that row's `bad`.
// A tile whose keys every row of the warp sees (the bulk of a long prefill or decode) skips the per-key checks.
// Compile-time facts that leave the rows' bits as they are and only drop work:
//   kUpperRows false: rows 8-15 are none of the warp's (a decode CTA of at most 8 heads); their weights are 0 and
//                     their state is left alone.
//   kPlainScores:     no ALiBi and no soft-capping (the score is the scaled dot product, as score_of computes it).
// tile_weights is that step without O's scaling: alpha[rr] is the scale of row half rr's O (the decode kernel's warps
// each scale their own share of O's dims).
template <class T, int D, bool kUpperRows, bool kPlainScores>
__device__ __forceinline__ void tile_weights(const AttentionLaunch& p, int tile, const T* k_s, const T* q_lane,
                                             const uint32_t (&q_frag)[kQFrags<D>][4], int lane, const bool (&mine)[2],
                                             const RowInfo (&row)[2], uint64_t bad_keys,
                                             float (&s)[kKeysPerTile<D> / 8][4], float (&m)[2], float (&l)[2],
                                             bool (&bad)[2], float (&alpha)[2]) {
    constexpr int kKeyBlocks = kKeysPerTile<D> / 8;
    constexpr int kRowHalves = kUpperRows ? 2 : 1;
    const int t = lane % 4;
    // S = Q K^T.
#pragma unroll
    for (int nb = 0; nb < kKeyBlocks; ++nb) score_block<T, D>(s[nb], nb, k_s, q_lane, q_frag, lane);
    // Scores of the keys each row sees; -inf elsewhere.
    const auto score = [&](float dot, int rr, int j) {
        return kPlainScores ? __fmul_rn(dot, p.scale) : score_of(p, dot, row[rr].head, j, row[rr].pos);
    };
    // Every row of the warp's (padding rows of a small GQA group are none) sees every key of the tile: warp-uniform
    // below. The others' scores are -inf either way.
    bool sees_all = true;
#pragma unroll
    for (int rr = 0; rr < kRowHalves; ++rr)
        sees_all = sees_all && (!mine[rr] || (row[rr].first <= tile && row[rr].pos >= tile + kKeysPerTile<D> - 1));
    float tile_max[2] = {-INFINITY, -INFINITY};
    if (__all_sync(kFullWarp, sees_all)) {
#pragma unroll
        for (int rr = 0; rr < kRowHalves; ++rr) bad[rr] = bad[rr] || (mine[rr] && bad_keys != 0);
#pragma unroll
        for (int nb = 0; nb < kKeyBlocks; ++nb) {
#pragma unroll
            for (int e = 0; e < 2 * kRowHalves; ++e) {
                const int rr = e / 2;
                s[nb][e] = mine[rr] ? score(s[nb][e], rr, tile + nb * 8 + 2 * t + e % 2) : -INFINITY;
                tile_max[rr] = fmaxf(tile_max[rr], s[nb][e]);
            }
        }
    } else {
#pragma unroll
        for (int nb = 0; nb < kKeyBlocks; ++nb) {
#pragma unroll
            for (int e = 0; e < 2 * kRowHalves; ++e) {
                const int rr = e / 2, jt = nb * 8 + 2 * t + e % 2, j = tile + jt;
                const bool visible = mine[rr] && j >= row[rr].first && j <= row[rr].pos;
                float sc = -INFINITY;
                if (visible) {
                    if ((bad_keys >> jt) & 1) bad[rr] = true;
                    sc = score(s[nb][e], rr, j);
                }
                s[nb][e] = sc;
                tile_max[rr] = fmaxf(tile_max[rr], sc);
            }
        }
    }
    float tile_sum[2] = {0, 0};
    alpha[0] = alpha[1] = 1.0f;
#pragma unroll
    for (int rr = 0; rr < kRowHalves; ++rr) {
        const float m_new = fmaxf(m[rr], quad_max(tile_max[rr]));
        // Nothing seen yet: the state stays exactly as it is (scale 1, weights 0).
        alpha[rr] = m_new == -INFINITY ? 1.0f : expf(m[rr] - m_new);
#pragma unroll
        for (int nb = 0; nb < kKeyBlocks; ++nb) {
#pragma unroll
            for (int e = 2 * rr; e < 2 * rr + 2; ++e) {
                const float w = s[nb][e] == -INFINITY ? 0.0f : expf(s[nb][e] - m_new);
                s[nb][e] = w;
                tile_sum[rr] = __fadd_rn(tile_sum[rr], w);
            }
        }
        l[rr] = __fadd_rn(__fmul_rn(l[rr], alpha[rr]), quad_sum(tile_sum[rr]));
        m[rr] = m_new;
    }
    if constexpr (!kUpperRows) {
#pragma unroll
        for (int nb = 0; nb < kKeyBlocks; ++nb) s[nb][2] = s[nb][3] = 0.0f;
    }
}

// O's dim blocks held by the lane (all D / 8, or a cooperating warp's N) scaled by the tile's alpha.
template <bool kUpperRows, int N>
__device__ __forceinline__ void scale_output(float (&o)[N][4], const float (&alpha)[2]) {
#pragma unroll
    for (int nd = 0; nd < N; ++nd) {
        o[nd][0] = __fmul_rn(o[nd][0], alpha[0]);
        o[nd][1] = __fmul_rn(o[nd][1], alpha[0]);
        if constexpr (kUpperRows) {
            o[nd][2] = __fmul_rn(o[nd][2], alpha[1]);
            o[nd][3] = __fmul_rn(o[nd][3], alpha[1]);
        }
    }
}

template <class T, int D, bool kUpperRows, bool kPlainScores>
__device__ __forceinline__ void tile_scores(const AttentionLaunch& p, int tile, const T* k_s, const T* q_lane,
                                            const uint32_t (&q_frag)[kQFrags<D>][4], int lane, const bool (&mine)[2],
                                            const RowInfo (&row)[2], uint64_t bad_keys,
                                            float (&s)[kKeysPerTile<D> / 8][4], float (&m)[2], float (&l)[2],
                                            float (&o)[D / 8][4], bool (&bad)[2]) {
    float alpha[2];
    tile_weights<T, D, kUpperRows, kPlainScores>(p, tile, k_s, q_lane, q_frag, lane, mine, row, bad_keys, s, m, l, bad,
                                                 alpha);
    scale_output<kUpperRows>(o, alpha);
}

// The second half: O += P V over the dim blocks nd0 .. nd0 + count - 1 that the lane's o[0 .. count - 1] hold (all
// D / 8 in tile_accumulate, or a decode warp's share of O). P's A fragment of keys 16 kk.. is the weight blocks 2 kk
// and 2 kk + 1; V's B fragments (16 keys x 8 dims) through ldmatrix.trans of its rows (lanes 0-7: keys 0-7, 8-15:
// keys 8-15).
template <class T, int D, int N>
__device__ __forceinline__ void tile_accumulate_dims(const T* v_s, int lane, const float (&s)[kKeysPerTile<D> / 8][4],
                                                     float (&o)[N][4], int nd0, int count) {
    constexpr int S = kRowStride<D>;
#pragma unroll
    for (int kk = 0; kk < kKeysPerTile<D> / 16; ++kk) {
        const uint32_t a[4] = {pack_pair<T>(s[2 * kk][0], s[2 * kk][1]), pack_pair<T>(s[2 * kk][2], s[2 * kk][3]),
                               pack_pair<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                               pack_pair<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
        const T* v_lane = v_s + (kk * 16 + lane % 8 + (lane / 8) % 2 * 8) * S;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            if (i >= count) break;
            uint32_t b0, b1;
            ldmatrix_x2_trans(b0, b1, smem_addr(v_lane + (nd0 + i) * 8));
            mma_m16n8k16<T>(o[i], a, b0, b1);
        }
    }
}

template <class T, int D>
__device__ __forceinline__ void tile_accumulate(const T* v_s, int lane, const float (&s)[kKeysPerTile<D> / 8][4],
                                                float (&o)[D / 8][4]) {
    tile_accumulate_dims<T, D>(v_s, lane, s, o, 0, D / 8);
}

// A partition's state for the lane's row rr (rows g and g + 8: rr = 0, 1) once its tiles are done, over the dim
// blocks nd0 .. nd0 + count - 1 that the lane's o[0 .. count - 1] hold (a warp holds all of them, or a cooperating
// warp its share). Split-KV: to the row's partials `part` (m, l with_ml; o), a bad row's as (0, NaN, NaN) so that the
// merge makes it NaN. Unsplit: merged (scales a, b of merge_scales) into the lane's running totals, element i at
// my_total[32 i].
template <int N>
__device__ __forceinline__ void write_partition_state(float* part, bool with_ml, bool row_bad, float m, float l,
                                                      const float (&o)[N][4], int nd0, int count, int rr, int t) {
    if (with_ml) {
        part[0] = row_bad ? 0.0f : m;
        part[1] = row_bad ? NAN : l;
    }
#pragma unroll
    for (int i = 0; i < N; ++i) {
        if (i >= count) break;
        const int d = (nd0 + i) * 8 + 2 * t;
        part[2 + d] = row_bad ? NAN : o[i][2 * rr];
        part[3 + d] = row_bad ? NAN : o[i][2 * rr + 1];
    }
}

template <int N>
__device__ __forceinline__ void merge_partition_state(float* my_total, float a, float b, const float (&o)[N][4],
                                                      int nd0, int count, int rr) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
        if (i >= count) break;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            float& total = my_total[32 * ((nd0 + i) * 4 + 2 * rr + e)];
            total = merged_value(total, a, o[i][2 * rr + e], b);
        }
    }
}

// The lane's row rr once all its partitions are merged: dim blocks nd0 .. nd0 + count - 1 of the totals over the
// total sum, rounded to T (NaN for a poisoned row).
template <class T>
__device__ __forceinline__ void write_merged_row(T* out_row, const float* my_total, float total_l, bool poisoned,
                                                 int nd0, int count, int rr, int t) {
    for (int nd = nd0; nd < nd0 + count; ++nd) {
        const int d = nd * 8 + 2 * t;
        const float v0 = my_total[32 * (nd * 4 + 2 * rr)], v1 = my_total[32 * (nd * 4 + 2 * rr + 1)];
        out_row[d] = from_f32<T>(poisoned ? NAN : __fdiv_rn(v0, total_l));
        out_row[d + 1] = from_f32<T>(poisoned ? NAN : __fdiv_rn(v1, total_l));
    }
}

}  // namespace
}  // namespace taco::cuda
