// ops::paged_attention on the tensor cores: FlashAttention-2's method over the paged KV cache for f16/bf16 queries
// and cache of head dims 16, 32, 64, 80, 96, 128 and 256 (mma.sync m16n8k16 with fp32 accumulation, ldmatrix,
// cp.async). paged_attention.h says what a row's result may depend on; this kernel keeps that contract:
//
// - A CTA of 4 warps takes up to 64 (token, head) rows of one kv head, 16 per warp (the mma's M): the heads of a
//   GQA group chunk for tokens_per_cta consecutive tokens (one token in decode steps, so a decode row is packed with
//   its group's heads, not padded alone). Rows of several sequences in one CTA are walked one sequence after another.
// - Keys are taken in tiles of kKeys absolute positions (64, or 32 for head dim 256) inside the partitions of
//   kAttentionPartitionKeys; all 4 warps stage a tile's K and V in shared memory, then each warp with rows of the
//   sequence scores it (S = Q K^T, 16 x kKeys), updates its rows' online softmax and accumulates O += P V with P
//   rounded to the activation dtype.
// - Every reduction has a fixed order given by the tile's key positions: a row's max and sum over a tile run over
//   its lane's columns then a quad butterfly, and the mma sums a row's products with no dependence on other rows.
//   A key a row does not see scores -inf and weighs exactly 0 (its V staged finite or zero), and a tile with no
//   key visible to a row leaves the row's state bitwise as it was, so the other rows of a CTA (prefill, decode,
//   chunks, other sequences) never change a row's bits.
// - Partitions are merged in increasing order with paged_attention_common.cuh's merge: by the CTA (unsplit) or,
//   split-KV, by paged_attention_merge.cu's merge kernel from the partials this kernel writes; the same bits either
//   way.
//
// Invalid metadata makes NaN rows as in paged_attention.cu.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "core/check.h"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/device_once.h"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/paged_attention_common.cuh"
#include "kernels/cuda/paged_attention_kernels.h"
#include "kernels/cuda/paged_attention_tile.cuh"

namespace taco::cuda {
namespace {

constexpr int kWarps = kMmaAttentionRowsPerCta / 16;  // 16 rows per warp
constexpr int kRows = kMmaAttentionRowsPerCta;
constexpr int kPartitionKeys = kAttentionPartitionKeys;

// Q [kRows][S], K and V [kKeys][S] (2-byte elements), and each lane's merged output of its two rows
// [kWarps][D / 8 * 4][32] floats (unsplit steps merge partitions there).
// The cooperative build (below) splits a tile's key blocks and O's dim blocks over the 4 warps: head dims whose
// blocks divide by 4.
template <int D>
constexpr bool kCooperates = (D / 8) % kWarps == 0 && (kKeysPerTile<D> / 8) % kWarps == 0;
// ... plus, for it, the tile's weights P [16][kKeys] and the warps' row maxima [kWarps][16], floats.
template <int D>
constexpr size_t kSmemBytes = size_t(kRows + 2 * kKeysPerTile<D>) * kRowStride<D> * 2 +
                              size_t(kWarps) * (D / 8 * 4) * 32 * 4 + size_t(16 * kKeysPerTile<D> + kWarps * 16) * 4;

// kPlainScores: no ALiBi and no soft-capping (paged_attention_tile.cuh), so the one-warp walk's scores skip their
// checks.
template <class T, int D, bool kPlainScores>
__global__ void __launch_bounds__(kWarps * 32) paged_attention_mma_kernel(const AttentionLaunch p) {
    grid_dependency_wait();
    constexpr int kKeys = kKeysPerTile<D>;
    constexpr int S = kRowStride<D>;
    constexpr int kKeyBlocks = kKeys / 8;  // n8 blocks of a score tile
    constexpr int kDimBlocks = D / 8;      // n8 blocks of the output
    constexpr int kVecs = D / 8;           // 16-byte pieces of a row
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* q_s = reinterpret_cast<T*>(smem_raw);
    T* k_s = q_s + kRows * S;
    T* v_s = k_s + kKeys * S;
    float* total_s = reinterpret_cast<float*>(v_s + kKeys * S);
    float* p_s = total_s + kWarps * (kDimBlocks * 4) * 32;  // cooperative: P [16][kKeys]
    float* max_s = p_s + 16 * kKeys;                        // cooperative: [kWarps][16] row maxima
    __shared__ RowInfo rows[kRows];
    __shared__ int64_t key_offset[kKeys];
    // The sequences of the CTA's rows in increasing order, each with the keys its rows see [begin, end).
    __shared__ int seq_ids[kRows], seq_key_begin[kRows], seq_key_end[kRows];
    __shared__ int num_seqs_here;

    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    const int g = lane / 4, t = lane % 4;  // the mma fragments' row group and column pair
    const int kv_head = int(blockIdx.y) / p.head_chunks, chunk = int(blockIdx.y) % p.head_chunks;
    const bool split = p.partials != nullptr;
    const int num_rows = p.tokens_per_cta * p.heads_per_cta;
    for (int r = int(threadIdx.x); r < kRows; r += int(blockDim.x)) {
        RowInfo info{kRowNone, 0, 0, 0, 0, 0};
        const int token = int(blockIdx.x) * p.tokens_per_cta + r / max(p.heads_per_cta, 1);
        const int in_group = chunk * p.heads_per_cta + r % max(p.heads_per_cta, 1);
        if (r < num_rows && in_group < p.group && token < p.num_tokens)
            info = row_info(p, token, kv_head * p.group + in_group);
        rows[r] = info;
    }
    __syncthreads();
    // One pass over the CTA's tokens (the heads of a token share its sequence, position and first key), by one
    // thread: the sorted list of sequences the loop below walks (a decode step has one token per CTA, so one entry).
    if (threadIdx.x == 0) {
        int n = 0;
        const int heads_here = max(p.heads_per_cta, 1);
        for (int r = 0; r < num_rows && r < kRows; r += heads_here) {
            const RowInfo& info = rows[r];
            if (info.state != kRowOk) continue;
            int at = n;
            while (at > 0 && seq_ids[at - 1] > info.seq) --at;
            if (at > 0 && seq_ids[at - 1] == info.seq) {
                seq_key_begin[at - 1] = min(seq_key_begin[at - 1], info.first);
                seq_key_end[at - 1] = max(seq_key_end[at - 1], info.pos + 1);
                continue;
            }
            for (int i = n; i > at; --i) {
                seq_ids[i] = seq_ids[i - 1];
                seq_key_begin[i] = seq_key_begin[i - 1];
                seq_key_end[i] = seq_key_end[i - 1];
            }
            seq_ids[at] = info.seq;
            seq_key_begin[at] = info.first;
            seq_key_end[at] = info.pos + 1;
            ++n;
        }
        num_seqs_here = n;
    }
    __syncthreads();
    const T* q = static_cast<const T*>(p.q);
    for (int e = int(threadIdx.x); e < kRows * kVecs; e += int(blockDim.x)) {
        const int r = e / kVecs, c = e % kVecs * 8;
        const RowInfo& info = rows[r];
        uint4 v = make_uint4(0, 0, 0, 0);
        if (info.state == kRowOk)
            v = *reinterpret_cast<const uint4*>(q + (int64_t(info.token) * p.num_heads + info.head) * D + c);
        *reinterpret_cast<uint4*>(q_s + r * S + c) = v;
    }
    __syncthreads();
    // Cooperative: a CTA of at most 16 rows (a decode token's GQA group) has them all in warp 0's mma rows; then
    // every warp takes warp 0's rows, and a tile's work is split: warp w computes the scores of key blocks
    // w kNbPerWarp.. and O's dim blocks w kNdPerWarp.., through shared memory for the row maxima and the weights P.
    // Each value is computed by the same instructions on the same inputs as the one-warp walk (the max is exact in
    // any order; the sum of P and every mma run in the one-warp order), so a row's bits do not change.
    const bool coop = kCooperates<D> && num_rows <= 16;
    constexpr int kNbPerWarp = kCooperates<D> ? kKeyBlocks / kWarps : 1;
    constexpr int kNdPerWarp = kCooperates<D> ? kDimBlocks / kWarps : 1;
    const int row_warp = coop ? 0 : warp;
    // Lane l's address for an x4 A fragment of rows 16 row_warp.. and a k16 step: matrices (rows 0-7 | 8-15) x
    // (cols 0-7 | 8-15) in the order a0..a3.
    const T* q_lane = q_s + (row_warp * 16 + lane % 8 + (lane / 8) % 2 * 8) * S + lane / 16 * 8;
    uint32_t q_frag[kQFrags<D>][4];
    load_q_fragments<T, D>(q_frag, q_lane);
    const RowInfo row[2] = {rows[row_warp * 16 + g], rows[row_warp * 16 + g + 8]};
    const T* k_cache = static_cast<const T*>(p.k_cache);
    const T* v_cache = static_cast<const T*>(p.v_cache);
    T* out = static_cast<T*>(p.out);
    float* my_total = total_s + warp * (kDimBlocks * 4) * 32 + lane;  // element i at my_total[32 i]

    for (int seq_index = 0; seq_index < num_seqs_here; ++seq_index) {
        const int seq = seq_ids[seq_index], key_begin = seq_key_begin[seq_index], key_end = seq_key_end[seq_index];
        const bool mine[2] = {row[0].state == kRowOk && row[0].seq == seq, row[1].state == kRowOk && row[1].seq == seq};
        const bool warp_active = __any_sync(kFullWarp, mine[0] || mine[1]);
        int z_lo = key_begin / kPartitionKeys, z_step = 1;
        const int z_hi = (key_end - 1) / kPartitionKeys;
        if (split) z_lo = first_partition_of_cta(z_lo, z_step);
        const int32_t* table = p.block_tables + int64_t(seq) * p.max_blocks;

        float total_m[2] = {-INFINITY, -INFINITY}, total_l[2] = {0, 0};
        bool poisoned[2] = {false, false};
        if (!split && warp_active) {
#pragma unroll
            for (int i = 0; i < kDimBlocks * 4; ++i) my_total[32 * i] = 0;
        }
        for (int z = z_lo; z <= z_hi; z += z_step) {
            float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
            float o[kDimBlocks][4];
#pragma unroll
            for (int nd = 0; nd < kDimBlocks; ++nd) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0;
            bool bad[2] = {false, false};
            const int keys_begin = max(key_begin, z * kPartitionKeys);
            const int keys_end = min(key_end, (z + 1) * kPartitionKeys);
            for (int tile = keys_begin / kKeys * kKeys; tile < keys_end; tile += kKeys) {
                __syncthreads();  // every warp is done with the previous tile
                if (int(threadIdx.x) < kKeys)
                    key_offset[threadIdx.x] = key_row_offset(p, table, tile + int(threadIdx.x), keys_end, kv_head, D);
                __syncthreads();
                for (int e = int(threadIdx.x); e < kKeys * kVecs; e += int(blockDim.x)) {
                    const int i = e / kVecs, c = e % kVecs * 8;
                    const int64_t offset = key_offset[i];
                    const bool valid = offset >= 0;
                    cp_async_16(smem_addr(k_s + i * S + c), k_cache + (valid ? offset + c : 0), valid);
                    cp_async_16(smem_addr(v_s + i * S + c), v_cache + (valid ? offset + c : 0), valid);
                }
                cp_async_wait_all();
                __syncthreads();
                if (!warp_active) continue;  // warp-uniform (CTA-uniform when cooperating)
                if (coop) {
                    // S for this warp's key blocks.
                    float sc[kNbPerWarp][4];
#pragma unroll
                    for (int i = 0; i < kNbPerWarp; ++i)
                        score_block<T, D>(sc[i], warp * kNbPerWarp + i, k_s, q_lane, q_frag, lane);
                    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
                    for (int i = 0; i < kNbPerWarp; ++i) {
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const int rr = e / 2, jt = (warp * kNbPerWarp + i) * 8 + 2 * t + e % 2, j = tile + jt;
                            const bool visible = mine[rr] && j >= row[rr].first && j <= row[rr].pos;
                            sc[i][e] = visible ? score_of(p, sc[i][e], row[rr].head, j, row[rr].pos) : -INFINITY;
                            tile_max[rr] = fmaxf(tile_max[rr], sc[i][e]);
                        }
                    }
#pragma unroll
                    for (int rr = 0; rr < 2; ++rr) {
                        const float q_max = quad_max(tile_max[rr]);
                        if (t == 0) max_s[warp * 16 + rr * 8 + g] = q_max;
                            // Bad blocks among the keys the row sees in the whole tile (the one-warp walk's test).
#pragma unroll
                        for (int nb = 0; nb < kKeyBlocks; ++nb) {
#pragma unroll
                            for (int e = 0; e < 2; ++e) {
                                const int jt = nb * 8 + 2 * t + e, j = tile + jt;
                                if (mine[rr] && j >= row[rr].first && j <= row[rr].pos && key_offset[jt] == kBadBlock)
                                    bad[rr] = true;
                            }
                        }
                    }
                    __syncthreads();  // the maxima of every warp
                    float m_new[2], alpha[2];
#pragma unroll
                    for (int rr = 0; rr < 2; ++rr) {
                        float tile_m = max_s[rr * 8 + g];
#pragma unroll
                        for (int w = 1; w < kWarps; ++w) tile_m = fmaxf(tile_m, max_s[w * 16 + rr * 8 + g]);
                        m_new[rr] = fmaxf(m[rr], tile_m);
                        alpha[rr] = m_new[rr] == -INFINITY ? 1.0f : expf(m[rr] - m_new[rr]);
                    }
#pragma unroll
                    for (int i = 0; i < kNbPerWarp; ++i) {
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const int rr = e / 2, jt = (warp * kNbPerWarp + i) * 8 + 2 * t + e % 2;
                            p_s[(rr * 8 + g) * kKeys + jt] = sc[i][e] == -INFINITY ? 0.0f : expf(sc[i][e] - m_new[rr]);
                        }
                    }
                    __syncthreads();  // P whole
#pragma unroll
                    for (int rr = 0; rr < 2; ++rr) {
                        // The one-warp order: blocks nb in order, a lane's two columns of each.
                        float tile_sum = 0;
#pragma unroll
                        for (int nb = 0; nb < kKeyBlocks; ++nb) {
                            tile_sum = __fadd_rn(tile_sum, p_s[(rr * 8 + g) * kKeys + nb * 8 + 2 * t]);
                            tile_sum = __fadd_rn(tile_sum, p_s[(rr * 8 + g) * kKeys + nb * 8 + 2 * t + 1]);
                        }
                        l[rr] = __fadd_rn(__fmul_rn(l[rr], alpha[rr]), quad_sum(tile_sum));
                        m[rr] = m_new[rr];
                    }
#pragma unroll
                    for (int i = 0; i < kNdPerWarp; ++i) {
                        o[i][0] = __fmul_rn(o[i][0], alpha[0]);
                        o[i][1] = __fmul_rn(o[i][1], alpha[0]);
                        o[i][2] = __fmul_rn(o[i][2], alpha[1]);
                        o[i][3] = __fmul_rn(o[i][3], alpha[1]);
                    }
#pragma unroll
                    for (int kk = 0; kk < kKeys / 16; ++kk) {
                        const float* p0 = p_s + g * kKeys + kk * 16 + 2 * t;  // row g; row g + 8 at + 8 kKeys
                        const uint32_t a[4] = {
                            pack_pair<T>(p0[0], p0[1]), pack_pair<T>(p0[8 * kKeys], p0[8 * kKeys + 1]),
                            pack_pair<T>(p0[8], p0[9]), pack_pair<T>(p0[8 * kKeys + 8], p0[8 * kKeys + 9])};
                        const T* v_lane = v_s + (kk * 16 + lane % 8 + (lane / 8) % 2 * 8) * S;
#pragma unroll
                        for (int i = 0; i < kNdPerWarp; ++i) {
                            uint32_t b0, b1;
                            ldmatrix_x2_trans(b0, b1, smem_addr(v_lane + (warp * kNdPerWarp + i) * 8));
                            mma_m16n8k16<T>(o[i], a, b0, b1);
                        }
                    }
                    continue;
                }

                float s[kKeyBlocks][4];
                // The tile's keys whose block id is outside the cache, a bit each.
                const uint64_t tile_bad =
                    uint64_t(__ballot_sync(kFullWarp, key_offset[lane] == kBadBlock)) |
                    uint64_t(__ballot_sync(kFullWarp, kKeys > 32 && key_offset[(lane + 32) % kKeys] == kBadBlock))
                        << 32;
                tile_scores<T, D, true, kPlainScores>(p, tile, k_s, q_lane, q_frag, lane, mine, row, tile_bad, s, m, l,
                                                      o, bad);
                tile_accumulate<T, D>(v_s, lane, s, o);
            }
            if (!warp_active) continue;
#pragma unroll
            for (int rr = 0; rr < 2; ++rr) {
                const bool row_bad = quad_any(bad[rr]);
                if (!mine[rr]) continue;
                const RowInfo& me = row[rr];
                if (split) {
                    // This partition's state, for the rows with keys in it (those the merge kernel reads).
                    if (z < me.first / kPartitionKeys || z > me.pos / kPartitionKeys) continue;
                    float* part =
                        p.partials + ((int64_t(me.token) * p.num_heads + me.head) * p.num_partitions + z) * (D + 2);
                    // A cooperating warp holds its own dim blocks (o[0 .. kNdPerWarp)); warp 0 writes m and l.
                    write_partition_state(part, t == 0 && (!coop || warp == 0), row_bad, m[rr], l[rr], o,
                                          coop ? warp * kNdPerWarp : 0, coop ? kNdPerWarp : kDimBlocks, rr, t);
                } else {
                    poisoned[rr] = poisoned[rr] || row_bad;
                    if (m[rr] == -INFINITY) continue;
                    float a, b;
                    merge_scales(total_m[rr], total_l[rr], m[rr], l[rr], a, b);
                    // A cooperating warp merges its dim blocks at their own places in its totals.
                    merge_partition_state(my_total, a, b, o, coop ? warp * kNdPerWarp : 0,
                                          coop ? kNdPerWarp : kDimBlocks, rr);
                }
            }
        }
        if (split || !warp_active) continue;
#pragma unroll
        for (int rr = 0; rr < 2; ++rr) {
            // A cooperating warp writes its own dim blocks.
            if (mine[rr])
                write_merged_row(out + (int64_t(row[rr].token) * p.num_heads + row[rr].head) * D, my_total, total_l[rr],
                                 poisoned[rr], coop ? warp * kNdPerWarp : 0, coop ? kNdPerWarp : kDimBlocks, rr, t);
        }
    }
    if (!split) {
        for (int e = int(threadIdx.x); e < kRows * D; e += int(blockDim.x)) {
            const RowInfo& info = rows[e / D];
            if (info.state == kRowBad)
                out[(int64_t(info.token) * p.num_heads + info.head) * D + e % D] = from_f32<T>(NAN);
        }
    }
}

template <class T, int D, bool kPlainScores>
void launch_kernel_for(const AttentionLaunch& p, cudaStream_t stream) {
    auto kernel = paged_attention_mma_kernel<T, D, kPlainScores>;
    constexpr size_t smem = kSmemBytes<D>;
    // The opt-in above 48 KiB, once per instantiation and device (the attribute is the device's).
    once_per_device([&](int) {
        TACO_CHECK_MSG(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) == cudaSuccess,
            "paged_attention (tensor cores): {} bytes of shared memory for head dim {}", smem, D);
        return true;
    });
    launch_kernel("paged_attention_mma_kernel", kernel, dim3(p.grid_x, p.grid_y, p.grid_z), kWarps * 32, smem, stream,
                  p);
}

template <class T, int D>
void launch_for(const AttentionLaunch& p, cudaStream_t stream) {
    if (p.alibi_slopes == nullptr && !(p.softcap > 0)) {
        launch_kernel_for<T, D, true>(p, stream);
    } else {
        launch_kernel_for<T, D, false>(p, stream);
    }
}

template <class T>
void launch_for_dims(const AttentionLaunch& p, cudaStream_t stream) {
    switch (p.head_dim) {
        case 16: launch_for<T, 16>(p, stream); return;
        case 32: launch_for<T, 32>(p, stream); return;
        case 64: launch_for<T, 64>(p, stream); return;
        case 80: launch_for<T, 80>(p, stream); return;
        case 96: launch_for<T, 96>(p, stream); return;
        case 128: launch_for<T, 128>(p, stream); return;
        case 256: launch_for<T, 256>(p, stream); return;
        default: TACO_CHECK_MSG(false, "paged_attention (tensor cores): head dim {}", p.head_dim);
    }
}

}  // namespace

bool mma_attention_supports(DType act, DType cache, int head_dim) {
    const bool dims = head_dim == 16 || head_dim == 32 || head_dim == 64 || head_dim == 80 || head_dim == 96 ||
                      head_dim == 128 || head_dim == 256;
    return (act == DType::kBF16 || act == DType::kF16) && cache == act && dims;
}

void launch_paged_attention_mma(const AttentionLaunch& p, void* stream) {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (p.act == DType::kBF16) {
        launch_for_dims<__nv_bfloat16>(p, s);
    } else {
        TACO_CHECK_MSG(p.act == DType::kF16, "paged_attention (tensor cores): {} activations", dtype_name(p.act));
        launch_for_dims<__half>(p, s);
    }
}

}  // namespace taco::cuda
