// ops::paged_attention on CUDA: flash-decoding style attention over the paged KV cache on the CUDA cores, fp32
// throughout (paged_attention.h says how partitions make the result independent of the batch and of split-KV).
//
// A CTA takes up to kRowsPerCta rows, one warp each: the heads of one GQA group chunk (they share a kv head) for
// tokens_per_cta consecutive query tokens. Rows of several sequences in one CTA (short decode rows) are handled
// one sequence after another. For each tile of kTileKeys keys of a sequence the CTA stages K and V (converted to
// f32) in shared memory; each warp scores the tile's keys for its row (lane j: key j, a sequential fma dot product
// over the head dim), updates its online softmax and accumulates the values (lane: dims lane + 32 i). Tiles are
// aligned to absolute key positions, and a tile with no key visible to a row leaves that row's state exactly as it
// was (its weights are exactly 0 and its scale exactly 1), so extra tiles that other rows of the CTA need do not
// change a row's bits.
//
// Invalid metadata (a position past its sequence's keys, its block table or max_seq_len; a block id outside the
// cache for a key the row sees) cannot abort from the device: those rows come out NaN, which every comparison
// catches. Block ids of keys a row does not see (before its window) are never its concern, as on the CPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "core/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_once.h"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/paged_attention_common.cuh"
#include "kernels/cuda/paged_attention_kernels.h"

namespace taco::cuda {
namespace {

constexpr int kTileKeys = kAttentionTileKeys;      // one key per lane
constexpr int kRowsPerCta = kAttentionRowsPerCta;  // one row per warp
constexpr int kPartitionKeys = kAttentionPartitionKeys;
static_assert(kPartitionKeys % kTileKeys == 0, "partitions are whole tiles");

template <class QT, class KVT, int kDimsPerLane>
__global__ void __launch_bounds__(kRowsPerCta * 32) paged_attention_kernel(const AttentionLaunch p) {
    grid_dependency_wait();
    extern __shared__ float smem[];
    const int D = p.head_dim, stride = D + 1;  // the odd stride keeps lanes reading one key each off one bank
    float* k_tile = smem;                      // [kTileKeys][stride]
    float* v_tile = k_tile + kTileKeys * stride;
    float* q_rows = v_tile + kTileKeys * stride;  // [rows][D]
    __shared__ RowInfo rows[kRowsPerCta];
    __shared__ int64_t key_offset[kTileKeys];  // element offset of each tile key's (slot, kv head) row

    const int num_rows = p.tokens_per_cta * p.heads_per_cta;  // == blockDim.x / 32
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    const int kv_head = int(blockIdx.y) / p.head_chunks, chunk = int(blockIdx.y) % p.head_chunks;
    const bool split = p.partials != nullptr;
    if (int(threadIdx.x) < num_rows) {
        const int r = int(threadIdx.x);
        const int token = int(blockIdx.x) * p.tokens_per_cta + r / p.heads_per_cta;
        const int in_group = chunk * p.heads_per_cta + r % p.heads_per_cta;
        RowInfo info{kRowNone, token, 0, 0, 0, 0};
        if (in_group < p.group && token < p.num_tokens) info = row_info(p, token, kv_head * p.group + in_group);
        rows[r] = info;
    }
    __syncthreads();
    const QT* q = static_cast<const QT*>(p.q);
    for (int e = int(threadIdx.x); e < num_rows * D; e += int(blockDim.x)) {
        const RowInfo& info = rows[e / D];
        q_rows[e] = info.state == kRowOk ? to_f32(q[(int64_t(info.token) * p.num_heads + info.head) * D + e % D]) : 0;
    }
    const RowInfo me = rows[warp];
    const KVT* k_cache = static_cast<const KVT*>(p.k_cache);
    const KVT* v_cache = static_cast<const KVT*>(p.v_cache);
    QT* out = static_cast<QT*>(p.out);

    // The sequences of the CTA's rows, in increasing order (the rows' tokens are consecutive).
    int prev_seq = -1;
    for (;;) {
        int seq = INT_MAX;
        for (int r = 0; r < num_rows; ++r)
            if (rows[r].state == kRowOk && rows[r].seq > prev_seq) seq = min(seq, rows[r].seq);
        if (seq == INT_MAX) break;
        prev_seq = seq;
        int key_begin = INT_MAX, key_end = 0;  // the keys any row of this sequence sees
        for (int r = 0; r < num_rows; ++r) {
            if (rows[r].state != kRowOk || rows[r].seq != seq) continue;
            key_begin = min(key_begin, rows[r].first);
            key_end = max(key_end, rows[r].pos + 1);
        }
        const bool mine = me.state == kRowOk && me.seq == seq;
        int z_lo = key_begin / kPartitionKeys, z_step = 1;
        const int z_hi = (key_end - 1) / kPartitionKeys;
        if (split) z_lo = first_partition_of_cta(z_lo, z_step);
        const int32_t* table = p.block_tables + int64_t(seq) * p.max_blocks;

        float total_m = -INFINITY, total_l = 0, total_o[kDimsPerLane];
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i) total_o[i] = 0;
        bool poisoned = false;
        for (int z = z_lo; z <= z_hi; z += z_step) {
            float m = -INFINITY, l = 0, o[kDimsPerLane];
#pragma unroll
            for (int i = 0; i < kDimsPerLane; ++i) o[i] = 0;
            const int keys_begin = max(key_begin, z * kPartitionKeys);
            const int keys_end = min(key_end, (z + 1) * kPartitionKeys);
            for (int tile = keys_begin / kTileKeys * kTileKeys; tile < keys_end; tile += kTileKeys) {
                __syncthreads();  // the previous tile is read by every warp
                if (threadIdx.x < kTileKeys)
                    key_offset[threadIdx.x] = key_row_offset(p, table, tile + int(threadIdx.x), keys_end, kv_head, D);
                __syncthreads();
                for (int e = int(threadIdx.x); e < kTileKeys * D; e += int(blockDim.x)) {
                    const int i = e / D, d = e % D;
                    const int64_t offset = key_offset[i];
                    k_tile[i * stride + d] = offset >= 0 ? to_f32(k_cache[offset + d]) : 0.0f;
                    v_tile[i * stride + d] = offset >= 0 ? to_f32(v_cache[offset + d]) : 0.0f;
                }
                __syncthreads();
                if (!mine) continue;  // warp-uniform
                const int j = tile + lane;
                const bool visible = j >= me.first && j <= me.pos;
                // A bad block id poisons this row only for a key it sees: the row's result must not depend on keys
                // other rows of the CTA need or on the tile's keys before the window.
                if (__any_sync(kFullWarp, visible && key_offset[lane] == kBadBlock)) poisoned = true;
                float s = -INFINITY;
                if (visible) {
                    const float* qr = q_rows + warp * D;
                    const float* kr = k_tile + lane * stride;
                    float dot = 0;
                    for (int d = 0; d < D; ++d) dot = fmaf(qr[d], kr[d], dot);
                    s = score_of(p, dot, me.head, j, me.pos);
                }
                const float m_new = fmaxf(m, warp_max(s));
                if (m_new == -INFINITY) continue;  // nothing visible yet (warp-uniform)
                const float alpha = expf(m - m_new);
                const float weight = visible ? expf(s - m_new) : 0.0f;
                l = __fadd_rn(__fmul_rn(l, alpha), warp_sum(weight));
#pragma unroll
                for (int i = 0; i < kDimsPerLane; ++i) o[i] = __fmul_rn(o[i], alpha);
                for (int key = 0; key < kTileKeys; ++key) {
                    const float w = __shfl_sync(kFullWarp, weight, key);
                    const float* vr = v_tile + key * stride;
#pragma unroll
                    for (int i = 0; i < kDimsPerLane; ++i) {
                        const int d = lane + 32 * i;
                        if (d < D) o[i] = fmaf(w, vr[d], o[i]);
                    }
                }
                m = m_new;
            }
            if (!mine) continue;
            if (split) {
                // This partition's state, for the rows that have keys in it (those the merge kernel reads).
                if (z < me.first / kPartitionKeys || z > me.pos / kPartitionKeys) continue;
                float* part =
                    p.partials + ((int64_t(me.token) * p.num_heads + me.head) * p.num_partitions + z) * (D + 2);
                if (lane == 0) {
                    part[0] = poisoned ? 0.0f : m;
                    part[1] = poisoned ? NAN : l;
                }
#pragma unroll
                for (int i = 0; i < kDimsPerLane; ++i) {
                    const int d = lane + 32 * i;
                    if (d < D) part[2 + d] = poisoned ? NAN : o[i];
                }
            } else if (m != -INFINITY) {
                float a, b;
                merge_scales(total_m, total_l, m, l, a, b);
#pragma unroll
                for (int i = 0; i < kDimsPerLane; ++i) total_o[i] = merged_value(total_o[i], a, o[i], b);
            }
        }
        if (mine && !split) {
            QT* row = out + (int64_t(me.token) * p.num_heads + me.head) * D;
#pragma unroll
            for (int i = 0; i < kDimsPerLane; ++i) {
                const int d = lane + 32 * i;
                if (d < D) row[d] = from_f32<QT>(poisoned ? NAN : __fdiv_rn(total_o[i], total_l));
            }
        }
    }
    if (me.state == kRowBad && !split) {
        QT* row = out + (int64_t(me.token) * p.num_heads + me.head) * D;
        for (int d = lane; d < D; d += 32) row[d] = from_f32<QT>(NAN);
    }
}

// The dynamic shared memory of the largest launch (head_dim 256, a full CTA of rows): paged_attention.cc's smem_bytes
// at most.
constexpr size_t kMaxSmemBytes =
    size_t(2 * kTileKeys * (kMaxAttentionHeadDim + 1) + kRowsPerCta * kMaxAttentionHeadDim) * sizeof(float);

template <class QT, class KVT, int kDimsPerLane>
void launch_attention(const AttentionLaunch& p, dim3 grid, int threads, size_t smem_bytes, cudaStream_t stream) {
    auto kernel = paged_attention_kernel<QT, KVT, kDimsPerLane>;
    TACO_CHECK_MSG(smem_bytes <= kMaxSmemBytes, "paged_attention: {} bytes of shared memory (at most {})", smem_bytes,
                   kMaxSmemBytes);
    // Without the opt-in a kernel's dynamic shared memory is limited to 48 KiB minus its static shared memory
    // (rows and key_offset), so head dims whose tiles come just under 48 KiB (169 in a prefill CTA of 8 rows, 184 in
    // a decode CTA of 2) failed to launch when the opt-in was asked only above 48 KiB. The limit is set to the
    // largest launch's size, the same value every call, so launches of other sizes (other layers, other threads)
    // never race on the attribute.
    once_per_device([&](int) {  // once per instantiation and device (the attribute is the device's)
        TACO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxSmemBytes)));
        return true;
    });
    launch_kernel("paged_attention_kernel", kernel, grid, threads, smem_bytes, stream, p);
}

template <class QT, class KVT>
void launch_attention_for_dims(const AttentionLaunch& p, dim3 grid, int threads, size_t smem_bytes,
                               cudaStream_t stream) {
    // Registers per lane for the output dims: head_dim rounded up to 32, 64, 128 or 256.
    if (p.head_dim <= 32) {
        launch_attention<QT, KVT, 1>(p, grid, threads, smem_bytes, stream);
    } else if (p.head_dim <= 64) {
        launch_attention<QT, KVT, 2>(p, grid, threads, smem_bytes, stream);
    } else if (p.head_dim <= 128) {
        launch_attention<QT, KVT, 4>(p, grid, threads, smem_bytes, stream);
    } else {
        launch_attention<QT, KVT, 8>(p, grid, threads, smem_bytes, stream);
    }
}

template <class QT>
void launch_for_cache(const AttentionLaunch& p, DType cache_dtype, dim3 grid, int threads, size_t smem_bytes,
                      cudaStream_t stream) {
    if (cache_dtype == DType::kF32) {
        launch_attention_for_dims<QT, float>(p, grid, threads, smem_bytes, stream);
    } else {
        launch_attention_for_dims<QT, QT>(p, grid, threads, smem_bytes, stream);
    }
}

// f16 / bf16 queries: any of the three kernels, then the merge of split partitions.
template <class QT>
void launch_half(const AttentionLaunch& p, dim3 grid, cudaStream_t stream) {
    if (p.decode) {
        launch_paged_decode_attention(p, stream);
    } else if (p.tensor_cores) {
        launch_paged_attention_mma(p, stream);
    } else {
        launch_for_cache<QT>(p, p.cache, grid, p.threads, p.smem_bytes, stream);
    }
    launch_partition_merge(p, stream);
}

}  // namespace

void launch_paged_attention(const AttentionLaunch& p, void* stream) {
    const dim3 grid(p.grid_x, p.grid_y, p.grid_z);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (p.act) {
        case DType::kF32:
            TACO_CHECK_MSG(p.cache == DType::kF32 && !p.tensor_cores,
                           "paged_attention on CUDA: f32 queries need an f32 cache and the CUDA cores");
            launch_for_cache<float>(p, p.cache, grid, p.threads, p.smem_bytes, s);
            launch_partition_merge(p, s);
            return;
        case DType::kF16: launch_half<__half>(p, grid, s); return;
        case DType::kBF16: launch_half<__nv_bfloat16>(p, grid, s); return;
        default: TACO_CHECK_MSG(false, "paged_attention on CUDA: {} activations", dtype_name(p.act));
    }
}

}  // namespace taco::cuda
