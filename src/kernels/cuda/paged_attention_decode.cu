// ops::paged_attention for decode steps on the tensor cores (flash-decoding): a CTA takes one query token's rows of
// one kv head (the heads of a GQA group chunk, up to 16: the mma's M) over a stride of its partitions. Decode is
// bound by the bytes of K and V, so the kernel is built to keep them streaming.
//
// - Four warps share a CTA's tiles, each scoring a quarter of a tile's keys and accumulating a quarter of O's dims
//   (47 KB of shared memory at head dim 128: four CTAs, 16 warps, per SM). An earlier build gave each CTA one warp
//   (43 KB, five warps per SM); on an H100 it issued an instruction every 5 cycles from one warp per scheduler, bound
//   by its one warp's latency (bench/results/h100-2026-12-06), and the four-warp build replaced it after the side by
//   side of bench/results/h100-2026-12-07 (per layer bs=1 16.6 against 20.1 us, bs=64 118 against 124, 32k keys 119
//   against 132; end to end no slower at any batch size).
// - K and V of a tile land in their own buffers, V behind K: the scores of a tile start when its K has landed, the
//   next tile's K is asked for as soon as the scores are done, its V as soon as P V is done, so a tile's copies run
//   under the arithmetic of the one before. The next tile's block-table reads are issued before the wait. The bulk
//   copy engine moves each key's row in one copy completing on the buffer's mbarrier, each warp asking for a quarter
//   of the rows (paged_attention_decode_stage.cuh says why), so the kernel is Hopper's (its sm_80 build is empty;
//   decode_attention_supports sends other GPUs to the general kernel).
// - One stage of each is kept on purpose. Two stages of K and V (the tile after the next one staged into the buffers
//   just freed; 80 KB, two CTAs to an SM) and two of K only (64 KB, three) gave the same bits but on an H100 ran
//   bs=64 over 1k keys in 204 and 226 us against 118, and 32k keys in 115 and 99 us against 76
//   (a call, bench/results/h100-2026-12-07e). bs=64's 512 CTAs took two waves at two or three CTAs to an SM, about
//   100 and 113 us each against the one wave of four's 118: a CTA went at most ~15% faster with its copies further
//   ahead, so the SM's rate follows the CTAs it holds. The kernel is bound by its warps' issue (Nsight Compute: an
//   instruction every ~14 cycles per warp, 6 of them waiting at the tile's barriers), not by the copies in flight.
// - The rows' work is cut at compile time where the launch allows: rows 8-15 of the mma carry nothing for a group of
//   at most 8 heads, and without ALiBi or soft-capping the score is the scaled dot product.
// - The prologue runs under the tail of the kernel before (programmatic launch; TACO_CUDA_ATTENTION_EARLY_PROLOGUE,
//   paged_attention.h): the row's metadata, the first tile's block-table reads and, where all of its keys come before
//   the row's position (written by earlier steps), the first tile's copies are issued before grid_dependency_wait;
//   Q and the tile with this step's key wait. At bs=1 over 1k keys the call went 11.5 -> 10.2 us on an H100, bs=8
//   20.8 -> 17.1 (bench/results/h100-2026-12-07g).
// - Split-KV (partials given): CTA z of a row takes partitions z_lo + z, z_lo + z + gridDim.z, ... and writes each
//   partition's state for paged_attention_merge.cu's merge kernel; unsplit, one CTA walks all of the row's partitions
//   and merges them itself.
//
// The warps split paged_attention_tile.cuh's tile_scores and tile_accumulate with the same instructions in the same
// order (as the general kernel's cooperative walk), and partitions are merged with paged_attention_common.cuh's merge
// in increasing order, as in the general kernel (paged_attention_mma.cu): a row has the same bits in every kernel,
// split or not (paged_attention.h's contract; tests/cuda pins it).
//
// Invalid metadata makes NaN rows as in the general kernel: a row whose position is past its sequence, block table
// or max_seq_len (written by this kernel unsplit, by the merge kernel split), and a row that sees a key whose block
// id is outside the cache.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/check.h"
#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_once.h"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/paged_attention_common.cuh"
#include "kernels/cuda/paged_attention_decode_stage.cuh"
#include "kernels/cuda/paged_attention_kernels.h"
#include "kernels/cuda/paged_attention_tile.cuh"
#include "kernels/cuda/programmatic_launch.h"

namespace taco::cuda {
namespace {

[[maybe_unused]] constexpr int kPartitionKeys = kAttentionPartitionKeys;  // unused by the sm_80 pass
constexpr int kRows = kDecodeAttentionRowsPerCta;                         // 16: one mma's rows
static_assert(kRows == 16, "a decode CTA is one warp of mma rows");

// Shared memory sizes: K and V [kKeys][S] (2-byte elements), Q [16][S], the unsplit walk's merged output of a lane's
// two rows [D / 8 * 4][32] floats.
template <int D>
constexpr size_t kDecodeKvBytes = size_t(2 * kKeysPerTile<D>) * kRowStride<D> * 2;
template <int D>
constexpr size_t kDecodeQBytes = size_t(kRows) * kRowStride<D> * 2;
template <int D>
constexpr size_t kDecodeTotalBytes = size_t(D / 8 * 4) * 32 * sizeof(float);

// The decode kernel: kCoopWarps warps share one (token, head chunk)'s tiles, as the general kernel's cooperative walk
// does, so that an SM holds several warps per tile in flight (K and V buffers are most of the shared memory). Warp w
// scores the tile's key blocks w kCoopKeyBlocks.. and accumulates O's dim blocks w kCoopDimBlocks..; the tile's row
// maxima and its weights P pass through shared memory. Each value is the same instructions on the same inputs, in the
// same order, as in tile_scores and tile_accumulate (the max is exact in any order; the sum of P runs over the whole
// tile in tile_accumulate's order), so a row has the same bits as in the general kernel. Per tile: wait for K, scores,
// barrier (maxima; K is free: the warps ask for the next tile's K), weights, barrier (P), the sum, wait for V, P V,
// barrier (V is free: the warps ask for the next tile's V).
constexpr int kCoopWarps = 4;
template <int D>
constexpr int kCoopKeyBlocks = kKeysPerTile<D> / 8 / kCoopWarps;
template <int D>
constexpr int kCoopDimBlocks = (D / 8 + kCoopWarps - 1) / kCoopWarps;  // the last warps may hold fewer
static_assert(kKeysPerTile<64> / 8 % kCoopWarps == 0 && kKeysPerTile<256> / 8 % kCoopWarps == 0);

// Shared memory: K and V [kKeys][S], then Q [16][S] and the merged totals [D / 8 * 4][32] floats (sharing their
// place where Q's fragments are held in registers), then P [16][kKeys] and the warps' row maxima [kCoopWarps][16]
// floats. 47 KB at head dim 128: four CTAs (16 warps) to an SM.
template <int D>
constexpr size_t kCoopPBytes = size_t(16) * kKeysPerTile<D> * sizeof(float);
// Q's and the totals' bytes (after K and V; head dims up to 128 hold Q in registers once loaded, so the totals take
// Q's place).
template <int D>
constexpr size_t kDecodeQTotalBytes = kQInRegisters<D> ? std::max(kDecodeQBytes<D>, kDecodeTotalBytes<D>)
                                                       : kDecodeQBytes<D> + kDecodeTotalBytes<D>;
template <int D>
constexpr size_t kCoopSmemBytes = kDecodeKvBytes<D> + kDecodeQTotalBytes<D> + kCoopPBytes<D> +
                                  size_t(kCoopWarps) * 16 * sizeof(float);

template <class T, int D, bool kUpperRows, bool kPlainScores>
__global__ void __launch_bounds__(kCoopWarps * 32) paged_decode_attention_coop_kernel(const AttentionLaunch p) {
    // With p.early_prologue the wait comes after the prologue's reads of what earlier steps wrote (below).
    if (!p.early_prologue) grid_dependency_wait();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // the bulk copy engine; other GPUs run the general kernel
    constexpr int kKeys = kKeysPerTile<D>;
    constexpr int S = kRowStride<D>;
    constexpr int kDimBlocks = D / 8;
    constexpr int kVecs = D / 8;
    constexpr int kNb = kCoopKeyBlocks<D>, kNd = kCoopDimBlocks<D>;
    constexpr int kRowHalves = kUpperRows ? 2 : 1;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* k_s = reinterpret_cast<T*>(smem_raw);
    T* v_s = k_s + kKeys * S;
    T* q_s = v_s + kKeys * S;
    unsigned char* after_kv = smem_raw + kDecodeKvBytes<D>;
    float* total_s = reinterpret_cast<float*>(after_kv + (kQInRegisters<D> ? 0 : kDecodeQBytes<D>));
    float* p_s = reinterpret_cast<float*>(after_kv + kDecodeQTotalBytes<D>);
    float* max_s = p_s + 16 * kKeys;
    __shared__ __align__(8) uint64_t landed[2];  // K's and V's barriers: each completes once per tile

    const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int token = int(blockIdx.x);
    const int kv_head = int(blockIdx.y) / p.head_chunks, chunk = int(blockIdx.y) % p.head_chunks;
    const bool split = p.partials != nullptr;
    // O's dim blocks of this warp: nd0 .. nd0 + nd_count - 1.
    const int nd0 = warp * kNd, nd_count = max(0, min(kNd, kDimBlocks - nd0));
    const RowInfo info = row_info(p, token, kv_head * p.group + chunk * p.heads_per_cta);
    RowInfo row[2];
    bool mine[2];
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
        const int in_group = chunk * p.heads_per_cta + g + 8 * rr;
        row[rr] = info;
        row[rr].head = kv_head * p.group + in_group;
        if (g + 8 * rr >= p.heads_per_cta || in_group >= p.group) row[rr].state = kRowNone;
        mine[rr] = row[rr].state == kRowOk;
    }
    const int key_begin = info.first, key_end = info.pos + 1;
    const int z_hi = (key_end - 1) / kPartitionKeys, z_step = int(gridDim.z);
    int z = key_begin / kPartitionKeys + int(blockIdx.z);
    // Whether this CTA walks keys: not for padding, a bad row, or (split) a CTA past the row's partitions.
    const bool walks = info.state == kRowOk && z <= z_hi;  // CTA-uniform

    const T* k_cache = static_cast<const T*>(p.k_cache);
    const T* v_cache = static_cast<const T*>(p.v_cache);
    const int32_t* table = p.block_tables + int64_t(info.seq) * p.max_blocks;
    const auto first_tile = [&](int zz) { return max(key_begin, zz * kPartitionKeys) / kKeys * kKeys; };
    const auto keys_end_of = [&](int zz) { return min(key_end, (zz + 1) * kPartitionKeys); };
    const auto offsets_of = [&](int at, int zz, int64_t& off0, int64_t& off1) {
        off0 = key_row_offset(p, table, at + lane, keys_end_of(zz), kv_head, D);
        off1 = kKeys > 32 ? key_row_offset(p, table, at + lane + 32, keys_end_of(zz), kv_head, D) : kNoKey;
    };
    const auto bad_keys_of = [&](int64_t off0, int64_t off1) {
        return uint64_t(__ballot_sync(kFullWarp, off0 == kBadBlock)) |
               uint64_t(__ballot_sync(kFullWarp, off1 == kBadBlock)) << 32;
    };
    // Every warp stages its share of K's (which 0) or V's (1) rows.
    const auto stage = [&](int which, int64_t off0, int64_t off1) {
        bulk_stage_rows_of_warp<T, D, kCoopWarps>(which == 0 ? k_s : v_s, which == 0 ? k_cache : v_cache, off0, off1,
                                                  &landed[which], warp, lane);
    };

    // The first tile's block-table reads, and with p.early_prologue its copies too where every key they stage was
    // written by an earlier step (before the row's own position, whose key the kernel before this one writes).
    int tile = first_tile(z);
    uint64_t bad_mask = 0;
    int64_t first_off0 = kNoKey, first_off1 = kNoKey;
    bool staged = false;
    if (walks) {
        if (tid == 0) {
            mbarrier_init(&landed[0], kCoopWarps);  // each warp stages a quarter of the rows
            mbarrier_init(&landed[1], kCoopWarps);
            mbarrier_init_fence();
        }
        __syncthreads();
        offsets_of(tile, z, first_off0, first_off1);
        bad_mask = bad_keys_of(first_off0, first_off1);
        if (p.early_prologue && min(tile + kKeys, keys_end_of(z)) <= info.pos) {
            stage(0, first_off0, first_off1);
            stage(1, first_off0, first_off1);
            staged = true;
        }
    }
    // The metadata, the block table and the cache's earlier keys were written before the kernel this one follows
    // started (which waited for them), so they are read above; Q, this step's key and value, and every write wait.
    if (p.early_prologue) grid_dependency_wait();
    if (info.state == kRowNone) return;  // padding (CTA-uniform)
    T* out = static_cast<T*>(p.out);
    if (info.state == kRowBad) {
        if (split) return;  // the merge kernel writes the NaN rows
        for (int e = tid; e < kRows * D; e += kCoopWarps * 32) {
            const int r = e / D, in_group = chunk * p.heads_per_cta + r;
            if (r < p.heads_per_cta && in_group < p.group)
                out[(int64_t(token) * p.num_heads + kv_head * p.group + in_group) * D + e % D] = from_f32<T>(NAN);
        }
        return;
    }
    if (z > z_hi) return;  // split: more CTAs than this row has partitions (CTA-uniform)

    const T* q = static_cast<const T*>(p.q);
    for (int e = tid; e < kRows * kVecs; e += kCoopWarps * 32) {
        const int r = e / kVecs, c = e % kVecs * 8, in_group = chunk * p.heads_per_cta + r;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r < p.heads_per_cta && in_group < p.group)
            v = *reinterpret_cast<const uint4*>(q + (int64_t(token) * p.num_heads + kv_head * p.group + in_group) * D +
                                                c);
        *reinterpret_cast<uint4*>(q_s + r * S + c) = v;
    }
    __syncthreads();
    const T* q_lane = q_lane_of<T, D>(q_s, lane);
    uint32_t q_frag[kQFrags<D>][4];
    load_q_fragments<T, D>(q_frag, q_lane);
    if (!staged) {
        stage(0, first_off0, first_off1);
        stage(1, first_off0, first_off1);
    }
    uint32_t parity = 0;
    float total_m[2] = {-INFINITY, -INFINITY}, total_l[2] = {0, 0};
    bool poisoned[2] = {false, false};
    float* my_total = total_s + lane;  // element i at my_total[32 i]; this warp's dim blocks only
    if (!split) {
        __syncthreads();  // every warp's Q fragments are loaded (the totals may take Q's place)
#pragma unroll
        for (int i = 0; i < kNd * 4; ++i)
            if (i < nd_count * 4) my_total[32 * (nd0 * 4 + i)] = 0;
    }
    for (; z <= z_hi; z += z_step) {
        float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
        float o[kNd][4];
#pragma unroll
        for (int i = 0; i < kNd; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0;
        bool bad[2] = {false, false};
        for (;;) {
            int next_z = z, next_tile = tile + kKeys;
            if (next_tile >= keys_end_of(z)) {
                next_z = z + z_step;
                next_tile = next_z <= z_hi ? first_tile(next_z) : 0;
            }
            const bool has_next = next_z <= z_hi;
            int64_t off0 = kNoKey, off1 = kNoKey;
            if (has_next) offsets_of(next_tile, next_z, off0, off1);

            mbarrier_wait(&landed[0], parity);  // this tile's K
            float s[kNb][4];
#pragma unroll
            for (int i = 0; i < kNb; ++i) score_block<T, D>(s[i], warp * kNb + i, k_s, q_lane, q_frag, lane);
            float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int i = 0; i < kNb; ++i) {
#pragma unroll
                for (int e = 0; e < 2 * kRowHalves; ++e) {
                    const int rr = e / 2, j = tile + (warp * kNb + i) * 8 + 2 * t + e % 2;
                    const bool visible = mine[rr] && j >= row[rr].first && j <= row[rr].pos;
                    const float dot = s[i][e];
                    s[i][e] = !visible       ? -INFINITY
                              : kPlainScores ? __fmul_rn(dot, p.scale)
                                             : score_of(p, dot, row[rr].head, j, row[rr].pos);
                    tile_max[rr] = fmaxf(tile_max[rr], s[i][e]);
                }
            }
            // A key the row sees whose block is outside the cache: the same flag in every warp (the whole tile).
#pragma unroll
            for (int rr = 0; rr < kRowHalves; ++rr) {
                const int lo = max(row[rr].first - tile, 0), hi = min(row[rr].pos - tile, kKeys - 1);
                if (mine[rr] && lo <= hi) {
                    const uint64_t span = hi - lo == 63 ? ~uint64_t(0) : ((uint64_t(1) << (hi - lo + 1)) - 1) << lo;
                    bad[rr] = bad[rr] || (bad_mask & span) != 0;
                }
                const float q_max = quad_max(tile_max[rr]);
                if (t == 0) max_s[warp * 16 + rr * 8 + g] = q_max;
            }
            __syncthreads();  // (A) the maxima; every warp is done with K
            if (has_next) {
                bad_mask = bad_keys_of(off0, off1);
                stage(0, off0, off1);
            }
            float m_new[2] = {m[0], m[1]}, alpha[2] = {1.0f, 1.0f};
#pragma unroll
            for (int rr = 0; rr < kRowHalves; ++rr) {
                float tile_m = max_s[rr * 8 + g];
#pragma unroll
                for (int w = 1; w < kCoopWarps; ++w) tile_m = fmaxf(tile_m, max_s[w * 16 + rr * 8 + g]);
                m_new[rr] = fmaxf(m[rr], tile_m);
                alpha[rr] = m_new[rr] == -INFINITY ? 1.0f : expf(m[rr] - m_new[rr]);
            }
#pragma unroll
            for (int i = 0; i < kNb; ++i) {
#pragma unroll
                for (int e = 0; e < 2 * kRowHalves; ++e) {
                    const int rr = e / 2, jt = (warp * kNb + i) * 8 + 2 * t + e % 2;
                    p_s[(rr * 8 + g) * kKeys + jt] = s[i][e] == -INFINITY ? 0.0f : expf(s[i][e] - m_new[rr]);
                }
            }
            __syncthreads();  // (B) P whole
#pragma unroll
            for (int rr = 0; rr < kRowHalves; ++rr) {
                // tile_scores' order: blocks nb in order, a lane's two columns of each, then the quad.
                float tile_sum = 0;
#pragma unroll
                for (int nb = 0; nb < kKeys / 8; ++nb) {
                    tile_sum = __fadd_rn(tile_sum, p_s[(rr * 8 + g) * kKeys + nb * 8 + 2 * t]);
                    tile_sum = __fadd_rn(tile_sum, p_s[(rr * 8 + g) * kKeys + nb * 8 + 2 * t + 1]);
                }
                l[rr] = __fadd_rn(__fmul_rn(l[rr], alpha[rr]), quad_sum(tile_sum));
                m[rr] = m_new[rr];
            }
#pragma unroll
            for (int i = 0; i < kNd; ++i) {
                o[i][0] = __fmul_rn(o[i][0], alpha[0]);
                o[i][1] = __fmul_rn(o[i][1], alpha[0]);
                if constexpr (kUpperRows) {
                    o[i][2] = __fmul_rn(o[i][2], alpha[1]);
                    o[i][3] = __fmul_rn(o[i][3], alpha[1]);
                }
            }
            mbarrier_wait(&landed[1], parity);  // this tile's V
#pragma unroll
            for (int kk = 0; kk < kKeys / 16; ++kk) {
                const float* p0 = p_s + g * kKeys + kk * 16 + 2 * t;  // row g; row g + 8 at + 8 kKeys
                const uint32_t a[4] = {
                    pack_pair<T>(p0[0], p0[1]), kUpperRows ? pack_pair<T>(p0[8 * kKeys], p0[8 * kKeys + 1]) : 0u,
                    pack_pair<T>(p0[8], p0[9]), kUpperRows ? pack_pair<T>(p0[8 * kKeys + 8], p0[8 * kKeys + 9]) : 0u};
                const T* v_lane = v_s + (kk * 16 + lane % 8 + (lane / 8) % 2 * 8) * S;
#pragma unroll
                for (int i = 0; i < kNd; ++i) {
                    if (i >= nd_count) break;
                    uint32_t b0, b1;
                    ldmatrix_x2_trans(b0, b1, smem_addr(v_lane + (nd0 + i) * 8));
                    mma_m16n8k16<T>(o[i], a, b0, b1);
                }
            }
            __syncthreads();  // (C) every warp is done with V and P
            if (has_next) stage(1, off0, off1);
            parity ^= 1;
            tile = next_tile;
            if (next_z != z) break;
        }
#pragma unroll
        for (int rr = 0; rr < 2; ++rr) {
            const bool row_bad = quad_any(bad[rr]);
            if (!mine[rr]) continue;
            if (split) {
                float* part =
                    p.partials + ((int64_t(token) * p.num_heads + row[rr].head) * p.num_partitions + z) * (D + 2);
                write_partition_state(part, t == 0 && warp == 0, row_bad, m[rr], l[rr], o, nd0, nd_count, rr, t);
                continue;
            }
            poisoned[rr] = poisoned[rr] || row_bad;
            if (m[rr] == -INFINITY) continue;
            float a, b;
            merge_scales(total_m[rr], total_l[rr], m[rr], l[rr], a, b);
            merge_partition_state(my_total, a, b, o, nd0, nd_count, rr);
        }
    }
    if (split) return;
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
        if (mine[rr])
            write_merged_row(out + (int64_t(token) * p.num_heads + row[rr].head) * D, my_total, total_l[rr],
                             poisoned[rr], nd0, nd_count, rr, t);
    }
#else
    if (p.early_prologue) grid_dependency_wait();  // never launched here (decode_attention_supports), but waits
#endif
}

// The kernel of (T, D, flags) with its shared memory opted in (once per device), and how many of its CTAs an SM
// holds.
template <class T, int D, bool kUpperRows, bool kPlainScores>
int prepared_ctas_per_sm() {
    return once_per_device([](int) {
        auto kernel = paged_decode_attention_coop_kernel<T, D, kUpperRows, kPlainScores>;
        constexpr size_t smem = kCoopSmemBytes<D>;
        int ctas_per_sm = 0;
        TACO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        TACO_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas_per_sm, kernel, kCoopWarps * 32, smem));
        TACO_CHECK_MSG(ctas_per_sm >= 1, "paged_attention (decode): no CTA of head dim {} fits an SM", D);
        return ctas_per_sm;
    });
}

template <class T, int D, bool kUpperRows, bool kPlainScores>
void launch_decode(const AttentionLaunch& p, cudaStream_t stream) {
    prepared_ctas_per_sm<T, D, kUpperRows, kPlainScores>();
    launch_kernel("paged_decode_attention_coop_kernel",
                  paged_decode_attention_coop_kernel<T, D, kUpperRows, kPlainScores>,
                  dim3(p.grid_x, p.grid_y, p.grid_z), kCoopWarps * 32, kCoopSmemBytes<D>, stream, p);
}

// Without a launch: how many CTAs of the (T, D) kernels an SM holds at the least (the split choice). With one: queues
// the kernel of (T, D) and the launch's flags on the stream (rows 8-15 only with more than 8 heads per CTA; the plain
// score without ALiBi or soft-capping), and returns 0.
template <class T, int D>
int run_decode(const AttentionLaunch* p, cudaStream_t stream) {
    if (p == nullptr)
        return std::min(std::min(prepared_ctas_per_sm<T, D, false, false>(), prepared_ctas_per_sm<T, D, false, true>()),
                        std::min(prepared_ctas_per_sm<T, D, true, false>(), prepared_ctas_per_sm<T, D, true, true>()));
    const bool upper = p->heads_per_cta > 8, plain = p->alibi_slopes == nullptr && !(p->softcap > 0);
    if (upper) {
        plain ? launch_decode<T, D, true, true>(*p, stream) : launch_decode<T, D, true, false>(*p, stream);
    } else {
        plain ? launch_decode<T, D, false, true>(*p, stream) : launch_decode<T, D, false, false>(*p, stream);
    }
    return 0;
}

// run_decode for the dtype and head dim (decode_attention_supports's cases: the head dims of served models; the
// general kernel takes the others with the same bits).
template <class T>
int run_decode_for_dims(int head_dim, const AttentionLaunch* p, cudaStream_t stream) {
    switch (head_dim) {
        case 64: return run_decode<T, 64>(p, stream);
        case 80: return run_decode<T, 80>(p, stream);
        case 96: return run_decode<T, 96>(p, stream);
        case 128: return run_decode<T, 128>(p, stream);
        case 256: return run_decode<T, 256>(p, stream);
        default: TACO_CHECK_MSG(false, "paged_attention (decode): head dim {}", head_dim);
    }
    return 0;
}

int run_decode_for(DType act, int head_dim, const AttentionLaunch* p, cudaStream_t stream) {
    if (act == DType::kBF16) return run_decode_for_dims<__nv_bfloat16>(head_dim, p, stream);
    TACO_CHECK_MSG(act == DType::kF16, "paged_attention (decode): {} activations", dtype_name(act));
    return run_decode_for_dims<__half>(head_dim, p, stream);
}

}  // namespace

bool decode_attention_supports(DType act, DType cache, int head_dim) {
    const bool dims = head_dim == 64 || head_dim == 80 || head_dim == 96 || head_dim == 128 || head_dim == 256;
    return (act == DType::kBF16 || act == DType::kF16) && cache == act && dims && hopper_code_runs();
}

int decode_attention_ctas_per_sm(DType act, int head_dim) { return run_decode_for(act, head_dim, nullptr, nullptr); }

void launch_paged_decode_attention(const AttentionLaunch& p, void* stream) {
    TACO_CHECK_MSG(p.tokens_per_cta == 1 && p.heads_per_cta <= kRows,
                   "paged_attention (decode): {} tokens of {} heads per CTA", p.tokens_per_cta, p.heads_per_cta);
    run_decode_for(p.act, p.head_dim, &p, as_stream(stream));
}

}  // namespace taco::cuda
