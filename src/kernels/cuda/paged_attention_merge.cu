// Split-KV's second step (paged_attention_kernels.h's launch_partition_merge): each (token, head) row's partitions,
// written by whichever attention kernel split it, merged into its output in increasing order exactly as the kernels
// that walk their own partitions merge them (merge_scales and merged_value, paged_attention_common.cuh), so a row has
// the same bits split or not.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/check.h"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/paged_attention_common.cuh"
#include "kernels/cuda/paged_attention_kernels.h"

namespace taco::cuda {
namespace {

constexpr int kPartitionKeys = kAttentionPartitionKeys;

// The merge kernel (merge_partitions_kernel below): one CTA per (token, head), one thread per dim, merging the row's
// partitions in increasing order exactly as paged_attention_kernel does when it walks them itself, in one of two
// forms (MergeForm). The chunked form, which rows of up to one chunk of partitions take by default: at 32k keys a row
// has 256 partitions, and a fold that waited on a load or an exponential per partition took tens of microseconds, so
// the work is taken apart where that keeps the bits: per chunk of 32 partitions, every thread asks for its dim of all
// 32 at once; each warp's lane i reads partition i's (m, l) and the running maxima come from a prefix maximum over the
// lanes (fmaxf is exact in any order, so they are merge_scales' M before and after each partition), and so do the
// scales (merge_scales_between); what is left in order is two multiply-adds per partition, L's and O's.
// The next chunk's loads are in flight while a chunk is folded, and a partition that adds nothing keeps the running
// values by a select rather than a branch, so the fold's shuffles can be issued ahead of its multiply-adds: at 32k
// keys on an H100 the merge went 14.96 -> 11.09 us a call and the 32k decode 118.7 -> 125.8 tok/s
// (bench/results/h100-2026-12-07f/merge_prefetch; a row of 8 partitions, 3.95 -> 4.70 us, within bs=1's spread).
constexpr int kMergeChunk = 32;

// One chunk of a row's partitions as a thread holds it: its dim of each (o), and lane i's partition's m and l.
struct MergeChunk {
    float o[kMergeChunk];
    float m, l;
    int n;  // partitions in the chunk
};

// The thread's dim of partitions first .. first + count - 1 (zeros past them, and for a thread past the head's dims).
__device__ __forceinline__ void load_merge_values(float (&o)[kMergeChunk], const float* parts, int64_t stride,
                                                  int first, int count, int d, bool has_dim) {
#pragma unroll
    for (int i = 0; i < kMergeChunk; ++i)
        o[i] = i < count && has_dim ? parts[int64_t(first + i) * stride + 2 + d] : 0.0f;
}

__device__ __forceinline__ void load_merge_chunk(MergeChunk& c, const float* parts, int64_t stride, int chunk, int z_hi,
                                                 int d, bool has_dim, int lane) {
    c.n = min(kMergeChunk, z_hi - chunk + 1);
    load_merge_values(c.o, parts, stride, chunk, c.n, d, has_dim);
    const float* first = parts + int64_t(chunk) * stride;
    c.m = lane < c.n ? first[int64_t(lane) * stride] : -INFINITY;
    c.l = lane < c.n ? first[int64_t(lane) * stride + 1] : 0.0f;
}

// Folds a chunk's first n partitions into the running L and O of the thread's dim, in increasing order (lane i holds
// partition i's scales a, b, its l and whether it is skipped). A whole chunk (kWhole) is folded without a branch, so
// the shuffles of later partitions are issued under the multiply-adds of earlier ones.
template <bool kWhole>
__device__ __forceinline__ void fold_merge_chunk(float& L, float& O, float a, float b, float l, bool skip,
                                                 const float (&o)[kMergeChunk], int n) {
#pragma unroll
    for (int i = 0; i < kMergeChunk; ++i) {
        if (!kWhole && i >= n) break;
        const float ai = __shfl_sync(kFullWarp, a, i), bi = __shfl_sync(kFullWarp, b, i);
        const float li = __shfl_sync(kFullWarp, l, i);
        const bool skip_i = __shfl_sync(kFullWarp, skip, i);
        const float merged_l = merged_value(L, ai, li, bi), merged_o = merged_value(O, ai, o[i], bi);
        L = skip_i ? L : merged_l;
        O = skip_i ? O : merged_o;
    }
}

// Where a merge CTA's row stands, from the prologue both merge kernels share (merge_row_of).
template <class QT>
struct MergeRow {
    QT* out;             // the thread's dim of the row's output
    const float* parts;  // the row's partitions: [num_partitions][stride] (m, l, o[head_dim])
    int64_t stride;
    int z_lo, z_hi;  // the partitions of the keys the row sees
    bool has_dim;    // the thread's dim is one of the head's (threads come in warps)
};

// The CTA's row (thread 0 reads its metadata into shared memory; merge_partitions_kernel's grid_dependency_wait is here
// with p.early_prologue). false: nothing more to do, for padding, or for a row whose metadata is bad, whose NaN output
// is written here.
template <class QT>
__device__ __forceinline__ bool merge_row_of(const AttentionLaunch& p, MergeRow<QT>& r) {
    __shared__ RowInfo info;
    const int token = int(blockIdx.x), head = int(blockIdx.y), d = int(threadIdx.x);
    if (threadIdx.x == 0) info = row_info(p, token, head);
    __syncthreads();
    // With p.early_prologue the kernel has not waited yet: the metadata was written before the attention kernel this
    // one follows started, the partials and the output wait.
    if (p.early_prologue) grid_dependency_wait();
    if (info.state == kRowNone) return false;  // CTA-uniform
    r.out = static_cast<QT*>(p.out) + (int64_t(token) * p.num_heads + head) * p.head_dim + d;
    r.has_dim = d < p.head_dim;
    if (info.state == kRowBad) {
        if (r.has_dim) *r.out = from_f32<QT>(NAN);
        return false;
    }
    r.stride = p.head_dim + 2;
    r.parts = p.partials + (int64_t(token) * p.num_heads + head) * p.num_partitions * r.stride;
    r.z_lo = info.first / kPartitionKeys;
    r.z_hi = info.pos / kPartitionKeys;
    return true;
}

// Folds one chunk of the row's partitions (as load_merge_chunk left it) into the running M, L and O of the thread's
// dim: the running maxima after and before each partition from a prefix maximum over the lanes, their scales, then
// the fold in order.
__device__ __forceinline__ void fold_loaded_chunk(const MergeChunk& c, float& M, float& L, float& O, int lane) {
    const int n = c.n;
    const float m = c.m, l = c.l;
    // The running maximum after partition `lane` (inclusive) and before it.
    float after = m;
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
        const float other = __shfl_up_sync(kFullWarp, after, offset);
        if (lane >= offset) after = fmaxf(after, other);
    }
    after = fmaxf(M, after);
    const float before_up = __shfl_up_sync(kFullWarp, after, 1);
    const float before = lane == 0 ? M : before_up;
    float a, b;
    merge_scales_between(before, after, m, a, b);
    // A partition whose keys all scored -inf (or NaN) adds nothing, as the walks that merge their own
    // partitions skip it (a bad row's partials carry m = 0, so its NaN still comes through).
    const bool skip = m == -INFINITY;
    if (n == kMergeChunk) {
        fold_merge_chunk<true>(L, O, a, b, l, skip, c.o, n);
    } else {  // the row's last chunk, folded as far as its n partitions
        fold_merge_chunk<false>(L, O, a, b, l, skip, c.o, n);
    }
    M = __shfl_sync(kFullWarp, after, n - 1);
}

// The chunked form: chunk by chunk in order, the next chunk's loads in flight while one is folded.
template <class QT>
__device__ __forceinline__ void merge_chunked(const MergeRow<QT>& row) {
    const int d = int(threadIdx.x), lane = d % 32;
    const float* parts = row.parts;
    const int64_t stride = row.stride;
    const int z_lo = row.z_lo, z_hi = row.z_hi;
    const bool has_dim = row.has_dim;
    float M = -INFINITY, L = 0, O = 0;
    MergeChunk cur, next;
    load_merge_chunk(cur, parts, stride, z_lo, z_hi, d, has_dim, lane);
    for (int chunk = z_lo; chunk <= z_hi; chunk += kMergeChunk) {
        if (chunk + kMergeChunk <= z_hi)
            load_merge_chunk(next, parts, stride, chunk + kMergeChunk, z_hi, d, has_dim, lane);
        fold_loaded_chunk(cur, M, L, O, lane);
        cur = next;
    }
    if (has_dim) *row.out = from_f32<QT>(__fdiv_rn(O, L));
}

// The scales-first form, which rows of more than one chunk of partitions (over 4,096 keys without a window) take by
// default: the same
// merge in two phases per block of up to 256 partitions. The
// scales come first for the whole block at once: each warp scans its chunks' maxima, the chunks' carries come from
// the chunk maxima before them (fmaxf is exact in any order, so every partition gets the M before and after it that
// merge_scales would), and each partition's a, b, l and whether it is skipped go to shared memory; then every thread
// folds its dim over the block's partitions in order, reading the scales with one broadcast load a partition, with
// its values' loads a chunk ahead. What is left in order is the fold's two multiply-adds a partition, as before, with
// the same operations on the same values. It was built on the reading that the chunked form spends about
// 1.4 us a chunk on the chunk's prefix maximum, exponentials and 128 shuffles before its fold can start. Measured on
// an H100, it is slower alone under Nsight Compute (32k keys 11.5 -> 12.2 us, 1k 4.3 -> 5.0:
// bench/results/h100-2026-12-07g) but the 32k decode in the engine went 125.1-125.5 -> 130.5-130.9 tok/s (three
// iterations each, bench/results/h100-2026-12-08); hence rows of one chunk (bs=32 at 1k keys ran 1.5% slower with it)
// keep the chunked form. A deeper prefetch of the chunked form (three chunks in flight, 188 registers) gave 129.1 and
// 17.2 us alone, and was removed.
constexpr int kMergeBlock = 256;
constexpr int kMergeBlockChunks = kMergeBlock / kMergeChunk;

template <class QT>
__device__ __forceinline__ void merge_scales_first(const MergeRow<QT>& row) {
    __shared__ float4 scales[kMergeBlock];               // a, b, l of each partition of the block
    __shared__ float local_max[kMergeBlock];             // the prefix maximum within the partition's chunk
    __shared__ float chunk_max[kMergeBlockChunks];       // each chunk's maximum
    __shared__ uint32_t chunk_skips[kMergeBlockChunks];  // bit i: partition i of the chunk adds nothing
    const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32, warps = int(blockDim.x) / 32, d = tid;
    const float* parts = row.parts;
    const int64_t stride = row.stride;
    const int z_lo = row.z_lo, z_hi = row.z_hi;
    const bool has_dim = row.has_dim;
    float M = -INFINITY, L = 0, O = 0;
    for (int z0 = z_lo; z0 <= z_hi; z0 += kMergeBlock) {
        const int n = min(kMergeBlock, z_hi - z0 + 1), chunks = (n + kMergeChunk - 1) / kMergeChunk;
        float cur[kMergeChunk], next[kMergeChunk];
        load_merge_values(cur, parts, stride, z0, min(kMergeChunk, n), d, has_dim);  // in flight under the scales
        // Scales, pass 1: each chunk's prefix maxima (lanes past n are partitions that add nothing).
        for (int c = warp; c < chunks; c += warps) {
            const int i = c * kMergeChunk + lane;
            const float m = i < n ? parts[int64_t(z0 + i) * stride] : -INFINITY;
            const float l = i < n ? parts[int64_t(z0 + i) * stride + 1] : 0.0f;
            float after = m;
#pragma unroll
            for (int offset = 1; offset < 32; offset *= 2) {
                const float other = __shfl_up_sync(kFullWarp, after, offset);
                if (lane >= offset) after = fmaxf(after, other);
            }
            local_max[i] = after;
            scales[i] = make_float4(m, 0.0f, l, 0.0f);  // m for now; pass 2 writes a and b
            if (lane == 31) chunk_max[c] = after;
            const uint32_t skips = __ballot_sync(kFullWarp, m == -INFINITY);
            if (lane == 0) chunk_skips[c] = skips;
        }
        __syncthreads();
        // Pass 2: the running maximum before each chunk (M and the chunks before it), then each partition's scales.
        for (int c = warp; c < chunks; c += warps) {
            float carry = M;
            for (int cc = 0; cc < c; ++cc) carry = fmaxf(carry, chunk_max[cc]);
            const int i = c * kMergeChunk + lane;
            const float m = scales[i].x, after = fmaxf(carry, local_max[i]);
            const float before_up = __shfl_up_sync(kFullWarp, after, 1);
            const float before = lane == 0 ? carry : before_up;
            float a, b;
            merge_scales_between(before, after, m, a, b);
            scales[i].x = a;
            scales[i].y = b;
        }
        float block_max = M;
        for (int c = 0; c < chunks; ++c) block_max = fmaxf(block_max, chunk_max[c]);
        __syncthreads();
        // The fold, chunk by chunk in order, the next chunk's values in flight.
        for (int c = 0; c < chunks; ++c) {
            const int first = c * kMergeChunk;
            if (c + 1 < chunks)
                load_merge_values(next, parts, stride, z0 + first + kMergeChunk,
                                  min(kMergeChunk, n - first - kMergeChunk), d, has_dim);
            const uint32_t skips = chunk_skips[c];
#pragma unroll
            for (int k = 0; k < kMergeChunk; ++k) {
                const float4 s = scales[first + k];
                const bool skip = (skips >> k) & 1u;
                const float merged_l = merged_value(L, s.x, s.z, s.y), merged_o = merged_value(O, s.x, cur[k], s.y);
                L = skip ? L : merged_l;
                O = skip ? O : merged_o;
            }
#pragma unroll
            for (int k = 0; k < kMergeChunk; ++k) cur[k] = next[k];
        }
        M = block_max;
        __syncthreads();  // the block's scales are read by every warp before the next block writes them
    }
    if (has_dim) *row.out = from_f32<QT>(__fdiv_rn(O, L));
}

// The merge kernel: the prologue, then the row's form (MergeForm; a CTA-uniform choice: the row's partitions come from
// its metadata in shared memory). Where the scales-first form is compiled in, registers are capped at 128 (256
// threads, the largest head dim's, two CTAs an SM): 4 CTAs of 128 threads an SM, without the cap it took 134 (3).
template <class QT, MergeForm kForm>
__global__ void __launch_bounds__(kMaxAttentionHeadDim, kForm == MergeForm::kChunked ? 1 : 2)
    merge_partitions_kernel(const AttentionLaunch p) {
    if (!p.early_prologue) grid_dependency_wait();
    MergeRow<QT> row;
    if (!merge_row_of(p, row)) return;
    if constexpr (kForm == MergeForm::kScalesFirst) {
        merge_scales_first(row);
    } else if constexpr (kForm == MergeForm::kChunked) {
        merge_chunked(row);
    } else if (row.z_hi - row.z_lo >= kMergeChunk) {  // kByLength: more than one chunk of partitions
        merge_scales_first(row);
    } else {
        merge_chunked(row);
    }
}

template <class QT>
void launch_merge(const AttentionLaunch& p, cudaStream_t stream) {
    const int threads = (p.head_dim + 31) / 32 * 32;
    const dim3 grid(unsigned(p.num_tokens), unsigned(p.num_heads));
    switch (p.merge_form) {
        case MergeForm::kByLength:
            launch_kernel("merge_partitions_kernel", merge_partitions_kernel<QT, MergeForm::kByLength>, grid, threads,
                          0, stream, p);
            return;
        case MergeForm::kChunked:
            launch_kernel("merge_partitions_kernel", merge_partitions_kernel<QT, MergeForm::kChunked>, grid, threads, 0,
                          stream, p);
            return;
        case MergeForm::kScalesFirst:
            launch_kernel("merge_partitions_kernel", merge_partitions_kernel<QT, MergeForm::kScalesFirst>, grid,
                          threads, 0, stream, p);
            return;
    }
}

}  // namespace

void launch_partition_merge(const AttentionLaunch& p, void* stream) {
    if (p.partials == nullptr) return;
    const cudaStream_t s = as_stream(stream);
    switch (p.act) {
        case DType::kF32: launch_merge<float>(p, s); return;
        case DType::kF16: launch_merge<__half>(p, s); return;
        case DType::kBF16: launch_merge<__nv_bfloat16>(p, s); return;
        default: TACO_CHECK_MSG(false, "paged_attention's merge on CUDA: {} activations", dtype_name(p.act));
    }
}

}  // namespace taco::cuda
