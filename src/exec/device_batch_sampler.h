// BatchSampler on the GPU: the same draws from logits that stay in device memory. For the same f32 logits and
// rows it returns BatchSampler's tokens (the Gumbel noise and keys are bit-identical, philox.h) and its logprobs
// (to the last bit or two of a float: CUDA's exp / log and glibc's may differ in the last bit of a double, and sums
// run in another order). The allowed set of a filtered draw is TokenFilter's, computed with the same double
// arithmetic; only a token within a rounding (about 1e-16 relative) of a min_p or top-p edge could fall the other
// way. A row's grammar mask (SamplingRow::allowed_tokens) is applied on the device as BatchSampler applies it.
//
// One call per step: the rows' parameters, token lists and masks are packed on the host into one pinned buffer and sent
// with one copy; kernels sample every row (kernels/cuda/sampling.h); one copy brings back the tokens and the
// logprobs asked for, and the call waits once for it. Device scratch (processed logits, the top-p sort) is sized
// for the largest step seen and only grows, so a steady state allocates nothing. Not thread-safe: one per stream.
//
// Plain C++; only the CUDA build (TACO_WITH_CUDA) has it.
#pragma once

#if !defined(TACO_WITH_CUDA)
#error "exec/device_batch_sampler.h is part of the CUDA build only (TACO_WITH_CUDA)"
#endif

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "exec/batch_sampler.h"
#include "kernels/cuda/sampling.h"
#include "kernels/exec_context.h"

namespace taco {

class DeviceBatchSampler {
public:
    DeviceBatchSampler() = default;
    DeviceBatchSampler(const DeviceBatchSampler&) = delete;
    DeviceBatchSampler& operator=(const DeviceBatchSampler&) = delete;

    // BatchSampler::sample with logits [num_rows, vocab] f32 in device memory (rows contiguous; the row stride may
    // be larger than vocab), sampled on ctx's stream (a CUDA context: cuda::DeviceStream::context). Work queued
    // on that stream before the call (the forward pass that writes the logits) runs first. Returns once out holds
    // every draw.
    void sample(const ExecContext& ctx, const TensorView& logits, std::span<const SamplingRow> rows,
                std::span<SampledToken> out);

    // Allocates now the scratch of a step of up to max_draws draws over `vocab` tokens, whatever their params
    // (every draw with edits, top-p and 20 logprobs), so that memory is taken before the KV cache is sized rather
    // than at the first step. The upload buffers still grow with the token lists of a step.
    void reserve(int64_t max_draws, int64_t vocab);

    // Device bytes this sampler holds now (its scratch only grows): with reserve(), about
    // max_draws * vocab * 20 bytes (processed logits, the top-p sort's keys, ids and their alternates).
    size_t device_bytes() const;

private:
    // Packs one draw: its DrawParams and its edits (appended to edits_).
    void pack_draw(const SamplingRow& row, int32_t vocab);
    // Grows a buffer to at least `bytes` (never shrinks).
    static void grow(Tensor& buffer, size_t bytes, MemoryKind memory);
    // Grows every buffer but the uploads to a step of this shape.
    void grow_scratch(int64_t num_draws, int64_t num_edit_slots, int64_t num_sort_slots, int64_t num_masks,
                      int64_t vocab, size_t results_bytes);

    // The step being packed.
    std::vector<cuda::DrawParams> draws_;
    std::vector<cuda::EditEntry> edits_;
    std::vector<int32_t> edit_of_token_;  // [vocab] index into edits_ of a token of the draw being packed, or -1
    int32_t num_edit_slots_ = 0, num_sort_slots_ = 0;
    size_t results_bytes_ = 0;
    std::vector<uint32_t> masks_;  // [masked draws, ceil(vocab / 32)] their grammar masks
    int32_t num_masks_ = 0;

    // Buffers, each grown to the largest step seen.
    Tensor upload_host_, upload_device_;    // DrawParams[], EditEntry[], uint32 masks[]
    Tensor results_host_, results_device_;  // tokens, logprob records
    Tensor processed_;                      // f32 [edit slots, vocab]
    Tensor masked_;                         // f32 [masked draws, vocab]
    Tensor state_;
    Tensor sort_keys_[2], sort_ids_[2];  // [sort slots * vocab]
    Tensor segment_begin_, segment_end_;
    Tensor sort_temp_;
    int64_t sort_temp_slots_ = 0, sort_temp_vocab_ = 0;  // the shape sort_temp_ was last sized for
    size_t sort_temp_bytes_ = 0;
};

}  // namespace taco
