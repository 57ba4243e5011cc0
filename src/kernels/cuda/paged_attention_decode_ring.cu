// The decode kernel with a ring of K/V stages (TACO_CUDA_DECODE_RING=1 until the GPU suite has run it; the
// default is paged_attention_decode.cu's four-warp kernel, whose launch shape, split-KV and metadata handling this
// kernel shares): a CTA takes one query token's rows of one kv head (the heads of a GQA group chunk, up to 16: the
// mma's M) over a stride of its partitions.
//
// - Four warps share a CTA's tiles. Each scores all of a tile's keys (the general kernel's tile_weights, so nothing
//   passes between warps per tile) and accumulates a quarter of O's dims. K and V stream through a ring of two stages
//   each, refilled by the bulk copy engine as soon as every warp is done with a stage, so two tiles are asked for
//   ahead of the arithmetic (68 KB of shared memory at head dim 128: three CTAs, 12 warps, per SM). The four-warp
//   kernel has one tile of K and V in flight and its warps meet at three barriers per tile, which were 42% of its
//   stalls at bs=64 with DRAM at 67% of peak (bench/results/h100-2026-12-07b).
// - Each key's row of K or V is one bulk copy (paged_attention_decode_stage.cuh), so the kernel is Hopper's (its sm_80
//   build is empty).
// - Each warp runs paged_attention_tile.cuh's tile_weights and its share of tile_accumulate: the same instructions in
//   the same order as the general kernel, and partitions are merged with paged_attention_common.cuh's merge in
//   increasing order: a row has the same bits in every kernel, split or not (paged_attention.h's contract).
// - Invalid metadata makes NaN rows as in the other kernels.
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

// The decode kernel. kDecodeWarps warps share one (token, head chunk)'s tiles: each scores every key of a tile (the
// general kernel's tile_weights: no maxima or weights pass between warps) and accumulates its share of O's dim blocks
// (warp w: blocks w kDecodeDims..). K and V pass through a ring of kDecodeStages stages each: stage i % kDecodeStages
// holds tile i. A stage's full barrier completes when its rows have landed (warp 0 stages K, with the tile's mask of
// bad keys, warp 1 V), its empty barrier when every warp is done with it; the staging warp then refills it with tile
// i + kDecodeStages. So two tiles' K and V are asked for ahead of the arithmetic and no warp waits for the others at a
// CTA barrier (the four-warp build before it had one tile in flight and three __syncthreads per tile: 42% of its
// stalls, DRAM at 67% of peak at bs=64; bench/results/h100-2026-12-07b).
constexpr int kDecodeWarps = 4;
constexpr int kDecodeStages = 2;
template <int D>
constexpr int kDecodeDims = (D / 8 + kDecodeWarps - 1) / kDecodeWarps;  // the last warps may hold fewer
// One stage of K or V: [kKeys][S] 2-byte elements.
template <int D>
constexpr size_t kDecodeStageElems = size_t(kKeysPerTile<D>) * kRowStride<D>;
// Shared memory: the K ring, the V ring, then (head dim 256, whose Q fragments are read from shared memory at each use)
// Q [16][S]. 68 KB at head dim 128: three CTAs (12 warps) to an SM.
template <int D>
constexpr size_t kDecodeSmemBytes = 2 * kDecodeStages* kDecodeStageElems<D> * 2 +
                                    (kQInRegisters<D> ? 0 : size_t(kRows) * kRowStride<D> * 2);
template <int D>
constexpr int kDecodeMinCtas = D <= 128 ? 3 : 2;

template <class T, int D, bool kUpperRows, bool kPlainScores>
__global__ void __launch_bounds__(kDecodeWarps * 32, kDecodeMinCtas<D>)
    paged_decode_attention_kernel(const AttentionLaunch p) {
    grid_dependency_wait();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // the bulk copy engine; other GPUs run the general kernel
    constexpr int kKeys = kKeysPerTile<D>;
    constexpr int S = kRowStride<D>;
    constexpr int kDimBlocks = D / 8;
    constexpr int kN = kDecodeDims<D>;
    constexpr int kStages = kDecodeStages;
    constexpr int kRowHalves = kUpperRows ? 2 : 1;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* k_ring = reinterpret_cast<T*>(smem_raw);
    T* v_ring = k_ring + kStages * kDecodeStageElems<D>;
    T* q_s = v_ring + kStages * kDecodeStageElems<D>;
    __shared__ __align__(8) uint64_t full_k[kStages], full_v[kStages], empty_k[kStages], empty_v[kStages];
    __shared__ uint64_t bad_s[kStages];  // stage i's mask of keys whose block is outside the cache

    const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int token = int(blockIdx.x);
    const int kv_head = int(blockIdx.y) / p.head_chunks, chunk = int(blockIdx.y) % p.head_chunks;
    const bool split = p.partials != nullptr;
    // O's dim blocks of this warp: nd0 .. nd0 + nd_count - 1.
    const int nd0 = warp * kN, nd_count = max(0, min(kN, kDimBlocks - nd0));
    const RowInfo info = row_info(p, token, kv_head * p.group + chunk * p.heads_per_cta);
    if (info.state == kRowNone) return;  // padding (CTA-uniform)
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
    T* out = static_cast<T*>(p.out);
    if (info.state == kRowBad) {
        if (split) return;  // the merge kernel writes the NaN rows
        for (int e = tid; e < kRows * D; e += kDecodeWarps * 32) {
            const int r = e / D, in_group = chunk * p.heads_per_cta + r;
            if (r < p.heads_per_cta && in_group < p.group)
                out[(int64_t(token) * p.num_heads + kv_head * p.group + in_group) * D + e % D] = from_f32<T>(NAN);
        }
        return;
    }
    const int key_begin = info.first, key_end = info.pos + 1;
    const int z_hi = (key_end - 1) / kPartitionKeys, z_step = int(gridDim.z);
    const int z_first = key_begin / kPartitionKeys + int(blockIdx.z);
    if (z_first > z_hi) return;  // split: more CTAs than this row has partitions (CTA-uniform)

    // Q's rows: row r of the CTA is head chunk * heads_per_cta + r of the group (zeros past the group).
    const T* q = static_cast<const T*>(p.q);
    const auto q_row = [&](int r) -> const T* {
        const int in_group = chunk * p.heads_per_cta + r;
        return r < p.heads_per_cta && in_group < p.group
                   ? q + (int64_t(token) * p.num_heads + kv_head * p.group + in_group) * D
                   : nullptr;
    };
    if (tid == 0) {
#pragma unroll
        for (int st = 0; st < kStages; ++st) {
            mbarrier_init(&full_k[st], 1);
            mbarrier_init(&full_v[st], 1);
            mbarrier_init(&empty_k[st], kDecodeWarps);
            mbarrier_init(&empty_v[st], kDecodeWarps);
        }
        mbarrier_init_fence();
    }
    if constexpr (!kQInRegisters<D>) {
        for (int e = tid; e < kRows * (D / 8); e += kDecodeWarps * 32) {
            const int r = e / (D / 8), c = e % (D / 8) * 8;
            const T* src = q_row(r);
            *reinterpret_cast<uint4*>(q_s + r * S + c) =
                src != nullptr ? *reinterpret_cast<const uint4*>(src + c) : make_uint4(0, 0, 0, 0);
        }
    }
    __syncthreads();

    const T* k_cache = static_cast<const T*>(p.k_cache);
    const T* v_cache = static_cast<const T*>(p.v_cache);
    const int32_t* table = p.block_tables + int64_t(info.seq) * p.max_blocks;
    const auto first_tile = [&](int zz) { return max(key_begin, zz * kPartitionKeys) / kKeys * kKeys; };
    const auto keys_end_of = [&](int zz) { return min(key_end, (zz + 1) * kPartitionKeys); };
    // The CTA's tiles in order: partitions z_first, z_first + z_step, ..., each from its first tile.
    struct Cursor {
        int z, tile;
    };
    const auto advance = [&](Cursor& c) {
        const int next = c.tile + kKeys;
        if (next >= keys_end_of(c.z)) {
            c.z += z_step;
            c.tile = c.z <= z_hi ? first_tile(c.z) : 0;
        } else {
            c.tile = next;
        }
    };
    // Warp `which` (0: K, 1: V) stages tile c in stage st; K's warp writes the tile's bad keys first (its arrival on
    // the full barrier releases them).
    const auto issue = [&](int which, int st, const Cursor& c) {
        const int64_t off0 = key_row_offset(p, table, c.tile + lane, keys_end_of(c.z), kv_head, D);
        const int64_t off1 =
            kKeys > 32 ? key_row_offset(p, table, c.tile + lane + 32, keys_end_of(c.z), kv_head, D) : kNoKey;
        if (which == 0) {
            const uint64_t mask = uint64_t(__ballot_sync(kFullWarp, off0 == kBadBlock)) |
                                  uint64_t(__ballot_sync(kFullWarp, off1 == kBadBlock)) << 32;
            if (lane == 0) bad_s[st] = mask;
            bulk_stage_rows_for_ctas<T, D>(k_ring + st * kDecodeStageElems<D>, k_cache, off0, off1, &full_k[st], lane);
        } else {
            bulk_stage_rows_for_ctas<T, D>(v_ring + st * kDecodeStageElems<D>, v_cache, off0, off1, &full_v[st], lane);
        }
    };
    Cursor produce{z_first, first_tile(z_first)};  // the next tile warps 0 and 1 stage (each keeps its own)
    if (warp < 2) {
#pragma unroll
        for (int st = 0; st < kStages; ++st) {
            if (produce.z <= z_hi) {
                issue(warp, st, produce);
                advance(produce);
            }
        }
    }

    // Q's A fragments: for head dims up to 128 straight from global memory into registers (lane (g, t) holds rows g
    // and g + 8, columns 2 t, 2 t + 1 and 8 + 2 t, 9 + 2 t of each k16 step: what ldmatrix_x4 of Q's rows gives).
    uint32_t q_frag[kQFrags<D>][4];
    const T* q_lane = nullptr;
    if constexpr (kQInRegisters<D>) {
        const T* q0 = q_row(g);
        const T* q8 = q_row(g + 8);
        const auto pair = [](const T* r, int c) {
            return r != nullptr ? *reinterpret_cast<const uint32_t*>(r + c) : 0u;
        };
#pragma unroll
        for (int kc = 0; kc < D / 16; ++kc) {
            q_frag[kc][0] = pair(q0, kc * 16 + 2 * t);
            q_frag[kc][1] = pair(q8, kc * 16 + 2 * t);
            q_frag[kc][2] = pair(q0, kc * 16 + 8 + 2 * t);
            q_frag[kc][3] = pair(q8, kc * 16 + 8 + 2 * t);
        }
    } else {
        q_lane = q_lane_of<T, D>(q_s, lane);
    }

    float total_m[2] = {-INFINITY, -INFINITY}, total_l[2] = {0, 0};
    float total_o[kN][4];
#pragma unroll
    for (int i = 0; i < kN; ++i) total_o[i][0] = total_o[i][1] = total_o[i][2] = total_o[i][3] = 0;
    bool poisoned[2] = {false, false};
    Cursor c{z_first, first_tile(z_first)};
    int i = 0;  // tiles consumed: tile i is in stage i % kStages, in its (i / kStages)-th use
    while (c.z <= z_hi) {
        const int z = c.z;
        float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
        float o[kN][4];
#pragma unroll
        for (int j = 0; j < kN; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0;
        bool bad[2] = {false, false};
        while (c.z == z) {
            const int st = i % kStages;
            const uint32_t parity = uint32_t(i / kStages) & 1;
            mbarrier_wait(&full_k[st], parity);
            const uint64_t bad_keys = bad_s[st];
            float s[kKeys / 8][4], alpha[2];
            tile_weights<T, D, kUpperRows, kPlainScores>(p, c.tile, k_ring + st * kDecodeStageElems<D>, q_lane, q_frag,
                                                         lane, mine, row, bad_keys, s, m, l, bad, alpha);
            __syncwarp();
            if (lane == 0) mbarrier_arrive(&empty_k[st]);
            if (warp == 0) {  // every warp is done with this K: tile i + kStages's K takes its place
                mbarrier_wait(&empty_k[st], parity);
                if (produce.z <= z_hi) {
                    issue(0, st, produce);
                    advance(produce);
                }
            }
            scale_output<kUpperRows>(o, alpha);
            mbarrier_wait(&full_v[st], parity);
            tile_accumulate_dims<T, D>(v_ring + st * kDecodeStageElems<D>, lane, s, o, nd0, nd_count);
            __syncwarp();
            if (lane == 0) mbarrier_arrive(&empty_v[st]);
            if (warp == 1) {  // the same for V
                mbarrier_wait(&empty_v[st], parity);
                if (produce.z <= z_hi) {
                    issue(1, st, produce);
                    advance(produce);
                }
            }
            ++i;
            advance(c);
        }
        // Partition z is done: its state to the partials (split) or merged into the totals in increasing z.
#pragma unroll
        for (int rr = 0; rr < kRowHalves; ++rr) {
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
#pragma unroll
            for (int j = 0; j < kN; ++j) {
                total_o[j][2 * rr] = merged_value(total_o[j][2 * rr], a, o[j][2 * rr], b);
                total_o[j][2 * rr + 1] = merged_value(total_o[j][2 * rr + 1], a, o[j][2 * rr + 1], b);
            }
        }
    }
    if (split) return;
        // The merged rows over their sums, rounded to T (NaN for a poisoned row): write_merged_row's operations.
#pragma unroll
    for (int rr = 0; rr < kRowHalves; ++rr) {
        if (!mine[rr]) continue;
        T* out_row = out + (int64_t(token) * p.num_heads + row[rr].head) * D;
#pragma unroll
        for (int j = 0; j < kN; ++j) {
            if (j >= nd_count) break;
            const int d = (nd0 + j) * 8 + 2 * t;
            out_row[d] = from_f32<T>(poisoned[rr] ? NAN : __fdiv_rn(total_o[j][2 * rr], total_l[rr]));
            out_row[d + 1] = from_f32<T>(poisoned[rr] ? NAN : __fdiv_rn(total_o[j][2 * rr + 1], total_l[rr]));
        }
    }
#endif
}

// The kernel of (T, D, flags) with its shared memory opted in (once per device), and how many of its CTAs an SM
// holds.
template <class T, int D, bool kUpperRows, bool kPlainScores>
int prepared_ctas_per_sm() {
    return once_per_device([](int) {
        auto kernel = paged_decode_attention_kernel<T, D, kUpperRows, kPlainScores>;
        constexpr size_t smem = kDecodeSmemBytes<D>;
        int ctas_per_sm = 0;
        TACO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        TACO_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas_per_sm, kernel, kDecodeWarps * 32, smem));
        TACO_CHECK_MSG(ctas_per_sm >= 1, "paged_attention (decode): no CTA of head dim {} fits an SM", D);
        return ctas_per_sm;
    });
}

template <class T, int D, bool kUpperRows, bool kPlainScores>
void launch_decode(const AttentionLaunch& p, cudaStream_t stream) {
    prepared_ctas_per_sm<T, D, kUpperRows, kPlainScores>();
    launch_kernel("paged_decode_attention_kernel", paged_decode_attention_kernel<T, D, kUpperRows, kPlainScores>,
                  dim3(p.grid_x, p.grid_y, p.grid_z), kDecodeWarps * 32, kDecodeSmemBytes<D>, stream, p);
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

int ring_decode_attention_ctas_per_sm(DType act, int head_dim) {
    return run_decode_for(act, head_dim, nullptr, nullptr);
}

void launch_ring_decode_attention(const AttentionLaunch& p, void* stream) {
    TACO_CHECK_MSG(p.tokens_per_cta == 1 && p.heads_per_cta <= kRows,
                   "paged_attention (decode): {} tokens of {} heads per CTA", p.tokens_per_cta, p.heads_per_cta);
    run_decode_for(p.act, p.head_dim, &p, as_stream(stream));
}

}  // namespace taco::cuda
