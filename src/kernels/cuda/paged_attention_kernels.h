// The kernels of paged attention (paged_attention.cu) behind one plain launch description, so that the .cu file
// needs no C++20 header; paged_attention.cc fills it from the op's views. paged_attention.h describes the method.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace taco::cuda {

constexpr int kAttentionTileKeys = 32;  // keys per shared-memory tile: one per lane
// Keys per partition: the unit of split-KV (a decode row at 1k keys spreads over 8 CTAs per kv head) and of the
// merges (two tensor-core tiles, four of the CUDA cores').
constexpr int kAttentionPartitionKeys = 128;
constexpr int kAttentionRowsPerCta = 8;  // (token, head) rows per CTA, one warp each
constexpr int kMaxAttentionHeadDim = 256;
constexpr int kMmaAttentionRowsPerCta = 64;     // the tensor-core kernel: 4 warps of 16 rows
constexpr int kDecodeAttentionRowsPerCta = 16;  // the decode kernel: one token's heads of a GQA group

// Which form of split-KV's merge runs (paged_attention_merge.cu): every form folds a row's partitions with the same
// operations in the same order, so they give the same bits.
enum class MergeForm : uint8_t {
    kByLength,     // the default: a row of one chunk (<= 32 partitions) kChunked, a longer one kScalesFirst
    kChunked,      // chunks of 32 partitions, the next one's loads in flight (TACO_CUDA_MERGE_SCALES_FIRST=0)
    kScalesFirst,  // a block of 256 partitions' scales first, then the fold (TACO_CUDA_MERGE_SCALES_FIRST=1)
};

struct AttentionLaunch {
    const void* q;        // [T, H, D] act
    const void* k_cache;  // [num_blocks, block_size, KVH, D] cache dtype
    const void* v_cache;
    void* out;                    // [T, H, D] act
    const int32_t* query_start;   // [S + 1]
    const int32_t* seq_lens;      // [S]
    const int32_t* positions;     // [T]
    const int32_t* block_tables;  // [S, max_blocks]
    const float* alibi_slopes;    // [H] or nullptr
    float* partials;              // split-KV: [T, H, num_partitions, D + 2] (m, l, o[D]); nullptr: no split
    int num_tokens, num_seqs, num_heads, num_kv_heads, head_dim;
    int block_size, max_blocks, num_blocks, max_seq_len;
    int group;           // heads per kv head
    int heads_per_cta;   // heads of one group chunk in a CTA
    int head_chunks;     // chunks per group
    int tokens_per_cta;  // query tokens in a CTA (rows: tokens_per_cta * heads_per_cta <= kAttentionRowsPerCta)
    int num_partitions;  // partitions of max_seq_len keys (the partials' third dim; grid_z when split)
    float scale, softcap;
    int window;
    bool alibi_bf16;
    DType act, cache;      // q and out; the caches (act or f32)
    bool tensor_cores;     // paged_attention_mma.cu's kernel (mma_attention_supports), else the CUDA cores'
    bool decode;           // with tensor_cores: paged_attention_decode.cu's kernel, one token per CTA
    MergeForm merge_form;  // with partials: the merge's form (paged_attention.h's TACO_CUDA_MERGE_SCALES_FIRST)
    // The decode and merge kernels read what was written before the kernel they follow started (the metadata, the
    // block tables, the decode kernel's keys before each row's position) before their grid_dependency_wait
    // (attention_early_prologue_enabled).
    bool early_prologue;
    unsigned grid_x, grid_y, grid_z;  // token tiles, kv heads x head chunks, partitions (1 without split)
    int threads;                      // the CUDA cores' kernel: 32 per row
    size_t smem_bytes;                // the CUDA cores' kernel: its dynamic shared memory
};

// The tensor-core kernel (paged_attention_mma.cu) takes f16/bf16 queries with a cache of the same dtype and head dims
// 16, 32, 64, 80, 96, 128 and 256; rows_per_cta kMmaAttentionRowsPerCta, 128 threads, its own shared memory.
bool mma_attention_supports(DType act, DType cache, int head_dim);
void launch_paged_attention_mma(const AttentionLaunch& launch, void* stream);

// The decode kernel (paged_attention_decode.cu): f16/bf16 queries with a cache of the same dtype at head dims 64, 80,
// 96, 128 and 256, on GPUs that run the binary's sm_90 code (the bulk copy engine); one query token per CTA
// (tokens_per_cta 1, heads_per_cta <= kDecodeAttentionRowsPerCta), four warps; with partials,
// CTA z of a row takes its partitions z, z + grid_z, ... How many of its CTAs an SM holds (the split choice fills the
// GPU with them):
bool decode_attention_supports(DType act, DType cache, int head_dim);
int decode_attention_ctas_per_sm(DType act, int head_dim);
void launch_paged_decode_attention(const AttentionLaunch& launch, void* stream);

// Queues the attention kernel (any of the three) and, with partials, the merge kernel on the stream (a cudaStream_t).
void launch_paged_attention(const AttentionLaunch& launch, void* stream);
// With partials, queues the merge of each row's partitions into its output (paged_attention_merge.cu); without, none.
void launch_partition_merge(const AttentionLaunch& launch, void* stream);

}  // namespace taco::cuda
