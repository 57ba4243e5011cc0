// Paged attention on CUDA (paged_attention.cc, kernels in paged_attention.cu): the launcher behind
// cuda::paged_attention, with the split-KV choice open to tests. Plain C++ header.
//
// Keys are taken in fixed partitions of kAttentionPartitionKeys absolute key positions. Each (query token, head) row
// computes a partial softmax state (running max, sum of exponentials, weighted sum of values, all fp32) per
// partition, then merges the partitions in increasing order. One CTA either walks all partitions of its rows itself
// or (split-KV) handles one partition and writes its state to `partials`, which a second kernel merges in the same
// order with the same arithmetic: the two give the same bits, so whether a step splits (a launch choice made from
// the batch's shape) never changes a result, and a row's result depends on its own query, position and keys only:
// not on the other rows of the CTA or the batch, not on chunking, not on prefill versus decode.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/ops.h"

namespace taco::cuda {

// The most scratch paged_attention takes for split-KV partials.
// (Under CUDA graphs a decode bucket's max_seq_len is the whole capacity: a row of 32 heads over 128k keys takes
// 17 MiB, and a step whose partials do not fit does not split, leaving most of the GPU idle at small batches. 1 GiB
// splits the 8B shape's decode buckets up to 60 sequences at 128k (512 MiB stopped at 30: a batch of 32 ran
// unsplit); past that the rows alone fill the GPU.)
constexpr size_t kMaxAttentionScratchBytes = size_t(1) << 30;

enum class SplitKv {
    kAuto,    // split when the rows alone give too few CTAs to fill the GPU and the partials fit in the scratch
    kNever,   // one CTA walks all partitions of its rows
    kAlways,  // one CTA per partition and the merge kernel (aborts when the partials do not fit)
};

// paged_attention_scratch_bytes (cuda_ops.h): the partials a step of this shape can use, [num_tokens, num_heads,
// partitions of max_seq_len keys] states of head_dim + 2 floats, at most kMaxAttentionScratchBytes. Monotone in every
// argument, so the dry run at the largest step reserves enough for every step.

// Under kAuto every decode step the decode kernel supports runs on it. With its earlier one-warp build, steps of fewer
// than 32 (token, head chunk) CTAs ran faster on the general kernel (latency-bound: bench/results/h100-2026-12-06);
// the four-warp build is as fast there and much faster on long contexts (the 8B shape on an H100, per layer: bs=1 at
// 1k keys 16.6 us against the general kernel's 15.9, bs=2 17.9 against 18.4, bs=1 at 32k keys 119 us against 184;
// bench/results/h100-2026-12-07). Either kernel gives a row the same bits.

enum class AttentionKernel {
    kAuto,    // the tensor cores where they apply (paged_attention_kernels.h; decode steps on the decode kernel), else
              // the CUDA cores
    kTiled,   // the tensor cores' general kernel for decode steps too (benchmarks and the cross-check of the two)
    kDecode,  // the decode kernel for every decode step it supports (benchmarks and the cross-check of the two)
    kCudaCores,  // the CUDA cores' kernel always (benchmarks and the cross-check of the two)
    kCudnn,      // cuDNN's fused attention (cudnn_attention.h) for every step; aborts with the reason where it
                 // cannot run (benchmarks and the cross-check)
};

// Unless TACO_CUDA_CUDNN_ATTENTION=0, kAuto runs steps whose longest query chunk has at least this many tokens on
// cuDNN's fused attention (cudnn_attention.h) where it is loaded and has an engine for the shape, the rest (and every
// step where it has none) on our kernels. It is 3.5-4.4x our prefill kernel at 1k-32k tokens on an H100
// (bench/results/h100-2026-12-07b). cuDNN sums in its own order, so such a step's rows (a decode row beside a long
// chunk included) differ from our kernels' in their last bits; ours do not depend on the batch or chunking, so with
// TACO_CUDA_CUDNN_ATTENTION=0 a row's bits do not depend on the step it is in.
constexpr int32_t kCudnnAttentionMinQueryLen = 256;

// TACO_CUDA_DECODE_ATTENTION (env_switch.h), read once: unset or 1, kAuto runs decode steps on the decode kernel
// (paged_attention_decode.cu); 0, every decode step on the general
// tensor-core kernel (the decode kernel's before/after in one run; a row has the same bits either way).
bool decode_attention_enabled();
// TACO_CUDA_CUDNN_ATTENTION, read once (env_switch): unset or 1, kAuto runs long prefill steps on cuDNN
// (kCudnnAttentionMinQueryLen) where it runs; 0, never.
bool cudnn_attention_enabled();
// TACO_CUDA_CUDNN_WARMUP, read once (env_opt_in): 1, ModelRunner::create builds cuDNN's plans for every bucket at
// start-up (cudnn_attention_build_buckets) after one prefill step on the real cache; unset or 0, on first use.
bool cudnn_attention_warmup_enabled();
// TACO_CUDA_MERGE_SCALES_FIRST, read once (env_override) by the first launch of our kernels: unset, split-KV's merge
// takes each row's form by its length (paged_attention_kernels.h's MergeForm::kByLength); 1, every row scales-first; 0,
// every row chunk by chunk. The same bits every way.
// TACO_CUDA_ATTENTION_EARLY_PROLOGUE, read once (env_switch): unset or 1, the decode kernel and the merge read the
// metadata, the first tile's block table and (where every key of it is older than the row's position) stage the
// first tile of K and V before their grid_dependency_wait, under the tail of the kernel they follow (programmatic
// launch: what was written before that kernel started is complete then); 0, they wait first. The same bits. On an
// H100 (bench/results/h100-2026-12-07g) a decode attention call at bs=1 over 1k keys went 11.5 -> 10.2 us, bs=8
// 20.8 -> 17.1, bs=64 98.6 -> 93.9, bs=1 over 32k keys 64.4 -> 59.9, and bench batch bs=1 / 8 170.5 -> 172.5 / 1,204
// -> 1,222 tok/s.
bool attention_early_prologue_enabled();

// ops::paged_attention's operands (checked by ops.cc) plus the partials scratch (device memory, or undefined: no
// split), the split choice and the kernel choice.
void paged_attention_with(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache,
                          const TensorView& v_cache, const ops::AttentionMetadata& batch,
                          const ops::AttentionParams& params, const TensorView& partials, SplitKv split,
                          const TensorView& out, AttentionKernel kernel = AttentionKernel::kAuto);

}  // namespace taco::cuda
