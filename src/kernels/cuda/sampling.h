// The CUDA side of DeviceBatchSampler (exec/device_batch_sampler.h): the per-draw records the host packs, the
// device buffers they and the kernels' scratch live in, and one call that runs a whole step's sampling on a stream.
// Plain C++17 with no CUDA type, so the host side includes it without nvcc; the layouts are shared bit for bit
// between the host packing and the kernels (sampling.cu).
//
// A step (sample_on_device):
//   1. one copy of the packed upload (DrawParams[num_draws], then EditEntry[num_edits], then the grammar masks
//      uint32[num_masks, mask_words]) from pinned memory;
//   1b. with masks: mask kernel, one block per draw with a mask: the draw's row with its disallowed tokens at -inf
//      (BatchSampler's apply_token_mask: a mask that allows nothing is no mask) into the masked scratch, which is the
//      draw's raw row from there on (its logprobs read it, as on the host);
//   2. prepare kernel, one block per draw: raw log-softmax stats and top logprobs when asked for; the processed
//      logits (a copy of the raw row with the draw's edits: suppressed ids, logit_bias, penalties) when it has edits;
//      greedy argmax, or the allowed set of TokenFilter (top-k threshold by radix select, min_p, temperature) and a
//      Gumbel-max draw among it. Top-p finds the bins of a mass histogram its cut lies in (sampling_nucleus.cuh)
//      and sorts only their candidates: in shared memory when they fit (and draws right there), else it writes them
//      to the draw's segment of the device-wide sort;
//   3. only when some draw has top_p < 1: cub::DeviceSegmentedRadixSort of those segments (empty for the others);
//   4. finish kernel, one block per draw: the top-p cut and draw of the segments sorted in step 3; the sampled
//      token's logprob and rank; the tokens;
//   5. one copy of the used prefix of the results (tokens, then the logprob records) into pinned memory, and one
//      stream synchronize.
#pragma once

#include <cstddef>
#include <cstdint>

namespace taco::cuda {

// DrawParams::flags
constexpr uint32_t kDrawGreedy = 1u << 0;     // temperature 0: argmax
constexpr uint32_t kDrawRestricts = 1u << 1;  // TokenFilter::restricts (min_p, top-k below vocab or top_p < 1)
constexpr uint32_t kDrawTopP = 1u << 2;       // top_p < 1 (and not greedy): needs the sort (sort_slot >= 0)
constexpr uint32_t kDrawUsePrompt = 1u << 3;  // repetition_penalty != 1: prompt ids are penalised too
constexpr uint32_t kDrawLogprobs = 1u << 4;   // a logprob record is returned (logprob_offset >= 0)

// One draw, as the kernels read it. Everything derived from SamplingParams in double is computed on the host
// exactly as TokenFilter / BatchSampler compute it (std::log for min_p), so the device only repeats the per-token
// arithmetic.
struct DrawParams {
    int64_t logits_row;  // row of the logits tensor
    uint64_t seed;
    int64_t draw_index;
    double repetition_penalty, frequency_penalty, presence_penalty;
    double filter_temperature;  // max(temperature, 0.01): TokenFilter's weights
    double min_p;
    double min_scaled;  // log(min_p) - 1e-6 with min_p > 0, else -746: TokenFilter's early skip
    double top_p;
    double one_minus_top_p;    // 1 - top_p
    float gumbel_temperature;  // float(clamp(temperature, 0.01, FLT_MAX)): BatchSampler's Gumbel keys
    uint32_t flags;            // kDraw*
    int32_t edit_begin;        // edits of this draw: EditEntry[edit_begin, edit_begin + num_edits)
    int32_t num_edits;
    int32_t edit_slot;         // row of the processed-logits scratch when num_edits > 0, else -1
    int32_t sort_slot;         // segment of the top-p sort when kDrawTopP, else -1
    int32_t top_k;             // 0 < top_k < vocab when top-k restricts, else 0
    int32_t num_top_logprobs;  // top logprobs returned, in [0, min(20, vocab)]
    int32_t logprob_offset;    // byte offset of this draw's LogprobRecord in the results, -1 if none
    int32_t mask_slot;  // row of the uploaded masks and of the masked scratch when it has a grammar mask, else -1
};
static_assert(sizeof(DrawParams) == 128, "DrawParams layout");

// EditEntry::flags
constexpr uint32_t kEditSuppress = 1u << 0;  // logit to -inf (min_tokens: EOS / stop ids)
constexpr uint32_t kEditBias = 1u << 1;      // + bias (already clamped to [-100, 100])
constexpr uint32_t kEditPenalise = 1u << 2;  // repetition / frequency / presence with `count`

// One token's edits of a draw, merged on the host in BatchSampler's order (suppress, then bias, then penalties),
// one entry per distinct valid token, so no two threads write one logit.
struct EditEntry {
    int32_t token;
    uint32_t flags;  // kEdit*
    float bias;
    int32_t count;  // occurrences in the output ids (frequency / presence penalties)
};
static_assert(sizeof(EditEntry) == 16, "EditEntry layout");

struct TopLogprob {
    int32_t token;
    float logprob;
};

// A draw's logprobs in the results, at DrawParams::logprob_offset (8-byte aligned), followed by num_top
// TopLogprob entries, highest first (ties: lower id first).
struct LogprobRecord {
    int64_t sampled_rank;
    float sampled_logprob;
    int32_t num_top;
};
static_assert(sizeof(LogprobRecord) == 16, "LogprobRecord layout");

// The largest num_top_logprobs (SamplingParams::kMaxLogprobs).
constexpr int kMaxTopLogprobs = 20;

// What the device sampler hands a step: device buffers (preallocated by the host, sizes as commented) and the
// pinned staging buffers of the two copies.
struct SamplingStep {
    const float* logits = nullptr;  // [num_logits_rows, vocab] f32 on the device, row stride logits_row_stride
    int64_t num_logits_rows = 0;
    int64_t logits_row_stride = 0;  // elements
    int32_t vocab = 0;
    int32_t num_draws = 0;
    int32_t num_edits = 0;
    int32_t num_sort_slots = 0;  // draws with kDrawTopP

    int32_t num_masks = 0;   // draws with a grammar mask
    int32_t mask_words = 0;  // ceil(vocab / 32)

    const void* upload_host = nullptr;  // pinned: DrawParams[num_draws], EditEntry[num_edits], uint32 masks
    void* upload_device = nullptr;      // the same bytes on the device
    size_t upload_bytes = 0;

    float* masked = nullptr;  // [num_masks, vocab]: masked draws' rows

    float* processed = nullptr;  // [edit slots, vocab]
    void* state = nullptr;       // [num_draws] per-draw state between the kernels (sampling_state_bytes)
    // Top-p sort, [num_sort_slots * vocab] each: keys (ordered logit bits) and token ids, and their alternates.
    uint32_t* sort_keys[2] = {nullptr, nullptr};
    int32_t* sort_ids[2] = {nullptr, nullptr};
    int32_t* segment_begin = nullptr;  // [num_sort_slots]
    int32_t* segment_end = nullptr;    // [num_sort_slots]
    void* sort_temp = nullptr;         // sort_temp_bytes(num_sort_slots, vocab) bytes
    size_t sort_temp_bytes = 0;

    void* results_device = nullptr;  // int32 tokens[num_draws] (padded to 8 bytes), then the logprob records
    void* results_host = nullptr;    // pinned, results_bytes
    size_t results_bytes = 0;
};

// Bytes of per-draw state (SamplingStep::state) for num_draws draws.
size_t sampling_state_bytes(int64_t num_draws);
// Temporary bytes cub's segmented sort needs for num_sort_slots segments of up to vocab candidates each.
size_t sort_temp_bytes(int64_t num_sort_slots, int64_t vocab);
// Runs the step on `stream` (a cudaStream_t) and waits for it: on return results_host holds the results. Aborts
// naming the kernel or call that failed.
void sample_on_device(const SamplingStep& step, void* stream);

}  // namespace taco::cuda
